//! 8-bit blocks of 32: `q8_0` (x = d·q) and `q8_1`, which also stores d·Σq for the dot
//! products that use it as their right-hand side.

use super::BlockCheck;
use super::half::Half;
use super::search::round_to_byte;
use super::{BlockFormat, c_max, inverse};
use crate::core::types::Type;
use std::mem::offset_of;

const QK: usize = 32;

/// `block_q8_0`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ8_0 {
    pub d: Half,
    pub qs: [u8; QK],
}

/// `block_q8_1`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ8_1 {
    pub d: Half,
    /// d times the sum of the quants.
    pub s: Half,
    pub qs: [u8; QK],
}

const _: () = assert!(std::mem::size_of::<BlockQ8_0>() == 34 && std::mem::align_of::<BlockQ8_0>() == 1);
const _: () = assert!(std::mem::size_of::<BlockQ8_1>() == 36 && std::mem::align_of::<BlockQ8_1>() == 1);

/// The scale `amax / 127` of a block and the signed quants of its values.
fn quantize_symmetric(x: &[f32]) -> (f32, [u8; QK]) {
    let amax = x.iter().fold(0.0f32, |acc, v| c_max(acc, v.abs()));
    let d = amax / 127.0;
    let id = inverse(d);
    (d, std::array::from_fn(|j| round_to_byte(x[j] * id)))
}

fn expand(d: Half, qs: &[u8; QK], y: &mut [f32]) {
    let d = d.to_f32();
    for (out, &q) in y.iter_mut().zip(qs) {
        *out = (q as i8) as f32 * d;
    }
}

// SAFETY: repr(C) of a Half and a byte array: 34 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ8_0 {
    const TYPE: Type = Type::Q8_0;
    const QK: usize = QK;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ8_0, d)]);

    fn quantize(x: &[f32]) -> Self {
        let (d, qs) = quantize_symmetric(x);
        BlockQ8_0 { d: Half::from_f32(d), qs }
    }

    fn dequantize(&self, y: &mut [f32]) {
        expand(self.d, &self.qs, y);
    }
}

// SAFETY: repr(C) of two Halfs and a byte array: 36 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ8_1 {
    const TYPE: Type = Type::Q8_1;
    const QK: usize = QK;
    // (ggml validates no q8_1 rows)
    const CHECK: BlockCheck = BlockCheck::Rejected;

    fn quantize(x: &[f32]) -> Self {
        let (d, qs) = quantize_symmetric(x);
        let sum: i32 = qs.iter().map(|&q| i32::from(q as i8)).sum();
        BlockQ8_1 { d: Half::from_f32(d), s: Half::from_f32(sum as f32 * d), qs }
    }

    fn dequantize(&self, y: &mut [f32]) {
        expand(self.d, &self.qs, y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_known_blocks() {
        let mut x = [0.0f32; 32];
        x[0] = 127.0;
        x[1] = -63.5; // rounds away from zero
        x[2] = 0.5;
        let b = BlockQ8_0::quantize(&x);
        assert_eq!(b.d.to_f32(), 1.0);
        assert_eq!(b.qs[..3], [127, (-64i8) as u8, 1]);
        let b1 = BlockQ8_1::quantize(&x);
        assert_eq!(b1.qs, b.qs);
        assert_eq!(b1.s.to_f32(), 64.0);
        let mut y = [0.0f32; 32];
        b1.dequantize(&mut y);
        assert_eq!(y[..3], [127.0, -64.0, 1.0]);
    }

    #[test]
    fn zero_block_has_zero_scale() {
        let b = BlockQ8_0::quantize(&[0.0; 32]);
        assert_eq!(b, BlockQ8_0::default());
    }
}
