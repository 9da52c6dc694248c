//! 4-bit blocks of 32: `q4_0` (symmetric, x = d·(q-8)) and `q4_1` (affine, x = d·q + m).
//! Value j of a block sits in the low nibble of byte j, value j+16 in its high nibble.

use super::BlockCheck;
use super::half::Half;
use super::search::{self, Search, Sweep, Weighting};
use super::{BlockFormat, block_weights, inverse, mean_square, min_max, signed_absmax};
use crate::core::types::Type;
use std::mem::offset_of;

const QK: usize = 32;

/// `block_q4_0`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ4_0 {
    pub d: Half,
    pub qs: [u8; QK / 2],
}

/// `block_q4_1`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ4_1 {
    pub d: Half,
    pub m: Half,
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ4_0>() == 18 && std::mem::align_of::<BlockQ4_0>() == 1);
const _: () = assert!(std::mem::size_of::<BlockQ4_1>() == 20 && std::mem::align_of::<BlockQ4_1>() == 1);

/// Packs 32 levels (each 0..15) two to a byte.
fn pack_nibbles(levels: impl Fn(usize) -> u8) -> [u8; QK / 2] {
    std::array::from_fn(|j| levels(j) | (levels(j + QK / 2) << 4))
}

/// A 4-bit level from a scaled value, as ggml computes it: `MIN(15, (int8_t)(v + bias))`.
fn level(v: f32, bias: f32) -> u8 {
    (search::truncate_to_byte(v + bias) as i8).min(15) as u8
}

// SAFETY: repr(C) of a Half and a byte array: 18 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ4_0 {
    const TYPE: Type = Type::Q4_0;
    const QK: usize = QK;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ4_0, d)]);

    fn quantize(x: &[f32]) -> Self {
        let d = signed_absmax(x) / -8.0;
        let id = inverse(d);
        BlockQ4_0 { d: Half::from_f32(d), qs: pack_nibbles(|j| level(x[j] * id, 8.5)) }
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (j, &q) in self.qs.iter().enumerate() {
            y[j] = ((q & 0x0f) as i32 - 8) as f32 * d;
            y[j + QK / 2] = ((q >> 4) as i32 - 8) as f32 * d;
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let sigma2 = mean_square(x);
        let mut levels = [0i8; QK];
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK)).zip(weights.chunks_exact(QK)) {
            let w: [f32; QK] = block_weights(xb, qw, sigma2);
            let d = search::symmetric_scale(xb, 8, &mut levels, Search::Full, Weighting::Given(&w));
            *block = BlockQ4_0 { d: Half::from_f32(d), qs: pack_nibbles(|j| levels[j] as u8) };
        }
    }
}

/// The sweep ggml uses for the importance-aware affine 4- and 5-bit formats.
pub(crate) const AFFINE_SWEEP: Sweep = Sweep { rmin: -0.9, rdelta: 0.05, nstep: 36, use_mad: false };

// SAFETY: repr(C) of two Halfs and a byte array: 20 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ4_1 {
    const TYPE: Type = Type::Q4_1;
    const QK: usize = QK;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ4_1, d), offset_of!(BlockQ4_1, m)]);

    fn quantize(x: &[f32]) -> Self {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = inverse(d);
        BlockQ4_1 { d: Half::from_f32(d), m: Half::from_f32(min), qs: pack_nibbles(|j| level((x[j] - min) * id, 0.5)) }
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        let m = self.m.to_f32();
        for (j, &q) in self.qs.iter().enumerate() {
            y[j] = (q & 0x0f) as f32 * d + m;
            y[j + QK / 2] = (q >> 4) as f32 * d + m;
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let sigma2 = mean_square(x);
        let (mut levels, mut scratch) = ([0u8; QK], [0u8; QK]);
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK)).zip(weights.chunks_exact(QK)) {
            let w: [f32; QK] = block_weights(xb, qw, sigma2);
            let (d, offset) = search::affine_scale(xb, 15, Some(&w), &mut levels, &mut scratch, AFFINE_SWEEP);
            *block = BlockQ4_1 { d: Half::from_f32(d), m: Half::from_f32(-offset), qs: pack_nibbles(|j| levels[j]) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::{dequantize_row, quantize_row, quantize_rows};

    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 37 % 64) as f32 - 31.5) / 8.0).collect()
    }

    #[test]
    fn q4_0_known_block() {
        let mut x = [0.0f32; 32];
        x[0] = -8.0;
        x[1] = 4.0;
        x[17] = 1.0;
        let b = BlockQ4_0::quantize(&x);
        assert_eq!(b.d.to_f32(), 1.0); // -8 / -8
        assert_eq!(b.qs[0], 0x80); // value 0 → level 0, value 16 → level 8
        assert_eq!(b.qs[1], 0x9c); // value 1 → 4+8, value 17 → 1+8
        let mut y = [0.0f32; 32];
        b.dequantize(&mut y);
        assert_eq!(y[..2], [-8.0, 4.0]);
        assert_eq!(y[17], 1.0);
    }

    #[test]
    fn round_trips_stay_within_a_step() {
        let x = ramp(256);
        let mut q0 = vec![BlockQ4_0::default(); 8];
        let mut q1 = vec![BlockQ4_1::default(); 8];
        let mut y = vec![0.0f32; 256];
        quantize_row(&x, &mut q0);
        dequantize_row(&q0, &mut y);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= 4.0 / 8.0 + 1e-3));
        quantize_row(&x, &mut q1);
        dequantize_row(&q1, &mut y);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= 8.0 / 15.0 * 0.51 + 1e-2));
    }

    #[test]
    fn importance_weights_do_not_hurt_much() {
        let x = ramp(64);
        let w = vec![1.0f32; 64];
        let mut q = vec![BlockQ4_1::default(); 2];
        quantize_rows(&x, &mut q, 64, Some(&w));
        let mut y = vec![0.0f32; 64];
        dequantize_row(&q, &mut y);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.5));
        let mut q = vec![BlockQ4_0::default(); 2];
        quantize_rows(&x, &mut q, 64, Some(&w));
        dequantize_row(&q, &mut y);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.6));
    }
}
