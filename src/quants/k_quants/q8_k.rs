//! `q8_K`: the 8-bit format activations are converted to for the K-quant dot products,
//! x = d·q with an `f32` scale, plus the sum of every 16 quants (`bsums`) that the dot products
//! of the affine formats use to apply their minimums.

use super::QK_K;
use crate::core::types::Type;
use crate::quants::BlockCheck;
use crate::quants::BlockFormat;
use crate::quants::search::nearest_int;

/// `block_q8_K`. The C struct is 4-byte aligned (its first field is a `float`); this one is
/// byte-aligned like every block here and reads its fields through accessors.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ8K {
    /// The scale, a little-endian `f32`.
    pub d: [u8; 4],
    /// The quants, signed bytes.
    pub qs: [u8; QK_K],
    /// Σ of each 16 quants, little-endian `i16`s.
    pub bsums: [[u8; 2]; QK_K / 16],
}

const _: () = assert!(std::mem::size_of::<BlockQ8K>() == 292 && std::mem::align_of::<BlockQ8K>() == 1);

impl Default for BlockQ8K {
    fn default() -> Self {
        BlockQ8K { d: [0; 4], qs: [0; QK_K], bsums: [[0; 2]; QK_K / 16] }
    }
}

impl BlockQ8K {
    pub fn scale(&self) -> f32 {
        f32::from_le_bytes(self.d)
    }

    pub fn quant(&self, i: usize) -> i8 {
        self.qs[i] as i8
    }

    /// Σ of quants `16 * j .. 16 * j + 16`.
    pub fn bsum(&self, j: usize) -> i16 {
        i16::from_le_bytes(self.bsums[j])
    }

    /// Quantizes 256 values into this block in place. As in ggml, a block of zeros gets a zero
    /// scale and zero quants but keeps whatever `bsums` it had.
    pub fn quantize_into(&mut self, x: &[f32]) {
        let mut amax = 0.0f32;
        let mut max = 0.0f32;
        for &v in &x[..QK_K] {
            if v.abs() > amax {
                amax = v.abs();
                max = v;
            }
        }
        if amax == 0.0 {
            self.d = 0.0f32.to_le_bytes();
            self.qs = [0; QK_K];
            return;
        }
        // -127 rather than -128, so that negating a quant never overflows.
        let iscale = -127.0 / max;
        for (q, &v) in self.qs.iter_mut().zip(x) {
            *q = nearest_int(iscale * v).min(127) as i8 as u8;
        }
        for (j, sum) in self.bsums.iter_mut().enumerate() {
            let total: i32 = self.qs[16 * j..16 * (j + 1)].iter().map(|&q| i32::from(q as i8)).sum();
            *sum = (total as i16).to_le_bytes();
        }
        self.d = (1.0 / iscale).to_le_bytes();
    }
}

/// Quantizes `x` into the blocks of `y` in place (`quantize_row_q8_K_ref`): unlike the
/// generic row quantizer, blocks of zeros keep their previous `bsums`, as in ggml.
pub fn quantize_row_q8_k(x: &[f32], y: &mut [BlockQ8K]) {
    crate::ggml_assert!(x.len() == y.len() * QK_K, "{} values do not fill {} q8_K blocks", x.len(), y.len());
    for (block, xs) in y.iter_mut().zip(x.chunks_exact(QK_K)) {
        block.quantize_into(xs);
    }
}

// SAFETY: repr(C) of byte arrays: 292 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ8K {
    const TYPE: Type = Type::Q8_K;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::F32Scale;
    // (ggml's type traits list none for q8_K)
    const REF_QUANTIZER: bool = false;

    fn quantize(x: &[f32]) -> Self {
        let mut block = BlockQ8K::default();
        block.quantize_into(x);
        block
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.scale();
        for (i, v) in y[..QK_K].iter_mut().enumerate() {
            *v = d * f32::from(self.quant(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::k_quants::tests::check_round_trip;

    #[test]
    fn round_trip_error_is_bounded() {
        check_round_trip::<BlockQ8K>(0.005);
    }

    #[test]
    fn known_block_and_sums() {
        let mut x = [0.0f32; QK_K];
        x[0] = -127.0;
        x[1] = 63.5; // a tie: rounds to the even 64
        x[17] = 2.0;
        let b = BlockQ8K::quantize(&x);
        assert_eq!(b.scale(), 1.0);
        assert_eq!(b.quant(0), -127);
        assert_eq!(b.quant(1), 64);
        assert_eq!(b.quant(17), 2);
        assert_eq!(b.bsum(0), -127 + 64);
        assert_eq!(b.bsum(1), 2);
    }

    #[test]
    fn zero_blocks_keep_their_sums() {
        let mut y = [BlockQ8K::default(); 2];
        y[1].bsums = [[0xa5; 2]; QK_K / 16];
        let mut x = vec![0.0f32; 2 * QK_K];
        x[3] = 1.0;
        quantize_row_q8_k(&x, &mut y);
        // The largest value is positive, so the scale is negative: x = -1/127 · -127.
        assert_eq!(y[0].bsum(0), -127);
        assert_eq!(y[1].bsums, [[0xa5; 2]; QK_K / 16]);
        assert_eq!(y[1].scale(), 0.0);
    }
}
