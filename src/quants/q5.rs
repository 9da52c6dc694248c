//! 5-bit blocks of 32: `q5_0` (symmetric, x = d·(q-16)) and `q5_1` (affine, x = d·q + m).
//! The low four bits are packed as in the 4-bit formats; bit 4 of value j is bit j of the
//! little-endian 32-bit word `qh`.

use super::BlockCheck;
use super::half::Half;
use super::q4::AFFINE_SWEEP;
use super::search::{self, Search, Weighting};
use super::{BlockFormat, block_weights, inverse, mean_square, min_max, signed_absmax};
use crate::core::types::Type;
use std::mem::offset_of;

const QK: usize = 32;

/// `block_q5_0`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ5_0 {
    pub d: Half,
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

/// `block_q5_1`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ5_1 {
    pub d: Half,
    pub m: Half,
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ5_0>() == 22 && std::mem::align_of::<BlockQ5_0>() == 1);
const _: () = assert!(std::mem::size_of::<BlockQ5_1>() == 24 && std::mem::align_of::<BlockQ5_1>() == 1);

/// Splits 32 five-bit levels into the nibble bytes and the high-bit word.
fn pack(levels: impl Fn(usize) -> u8) -> ([u8; 4], [u8; QK / 2]) {
    let mut qh = 0u32;
    let mut qs = [0u8; QK / 2];
    for (j, byte) in qs.iter_mut().enumerate() {
        let (lo, hi) = (levels(j), levels(j + QK / 2));
        *byte = (lo & 0x0f) | ((hi & 0x0f) << 4);
        qh |= u32::from((lo & 0x10) >> 4) << j;
        qh |= u32::from((hi & 0x10) >> 4) << (j + QK / 2);
    }
    (qh.to_le_bytes(), qs)
}

/// The 5-bit levels of values j and j+16 of a block.
fn unpack(qh: [u8; 4], qs: &[u8; QK / 2], j: usize) -> (i32, i32) {
    let qh = u32::from_le_bytes(qh);
    let hi0 = ((qh >> j) << 4) & 0x10;
    let hi1 = (qh >> (j + 12)) & 0x10;
    (((qs[j] & 0x0f) as u32 | hi0) as i32, ((qs[j] >> 4) as u32 | hi1) as i32)
}

// SAFETY: repr(C) of a Half and byte arrays: 22 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ5_0 {
    const TYPE: Type = Type::Q5_0;
    const QK: usize = QK;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ5_0, d)]);

    fn quantize(x: &[f32]) -> Self {
        let d = signed_absmax(x) / -16.0;
        let id = inverse(d);
        let level = |j: usize| (search::truncate_to_byte(x[j] * id + 16.5) as i8).min(31) as u8;
        let (qh, qs) = pack(level);
        BlockQ5_0 { d: Half::from_f32(d), qh, qs }
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for j in 0..QK / 2 {
            let (q0, q1) = unpack(self.qh, &self.qs, j);
            y[j] = (q0 - 16) as f32 * d;
            y[j + QK / 2] = (q1 - 16) as f32 * d;
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let sigma2 = mean_square(x);
        let mut levels = [0i8; QK];
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK)).zip(weights.chunks_exact(QK)) {
            let w: [f32; QK] = block_weights(xb, qw, sigma2);
            let d = search::symmetric_scale(xb, 16, &mut levels, Search::Full, Weighting::Given(&w));
            let (qh, qs) = pack(|j| levels[j] as u8);
            *block = BlockQ5_0 { d: Half::from_f32(d), qh, qs };
        }
    }
}

// SAFETY: repr(C) of two Halfs and byte arrays: 24 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ5_1 {
    const TYPE: Type = Type::Q5_1;
    const QK: usize = QK;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ5_1, d), offset_of!(BlockQ5_1, m)]);

    fn quantize(x: &[f32]) -> Self {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = inverse(d);
        // No clamp to 31 here: ggml has none for this format.
        let (qh, qs) = pack(|j| search::truncate_to_byte((x[j] - min) * id + 0.5));
        BlockQ5_1 { d: Half::from_f32(d), m: Half::from_f32(min), qh, qs }
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        let m = self.m.to_f32();
        for j in 0..QK / 2 {
            let (q0, q1) = unpack(self.qh, &self.qs, j);
            y[j] = q0 as f32 * d + m;
            y[j + QK / 2] = q1 as f32 * d + m;
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let sigma2 = mean_square(x);
        let (mut levels, mut scratch) = ([0u8; QK], [0u8; QK]);
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK)).zip(weights.chunks_exact(QK)) {
            let w: [f32; QK] = block_weights(xb, qw, sigma2);
            let (d, offset) = search::affine_scale(xb, 31, Some(&w), &mut levels, &mut scratch, AFFINE_SWEEP);
            let (qh, qs) = pack(|j| levels[j]);
            *block = BlockQ5_1 { d: Half::from_f32(d), m: Half::from_f32(-offset), qh, qs };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::{dequantize_row, quantize_row, quantize_rows};

    #[test]
    fn q5_0_known_block() {
        let mut x = [0.0f32; 32];
        x[0] = -16.0;
        x[20] = 15.0;
        let b = BlockQ5_0::quantize(&x);
        assert_eq!(b.d.to_f32(), 1.0);
        assert_eq!(b.qs[0], 0x00); // level 0 and level 16 (low nibble 0)
        assert_eq!(b.qs[4], 0xf0); // level 16 (low nibble 0) and level 31
        // values 1..31 except 0 and 20 sit at level 16 (bit 4 set), value 0 at level 0
        assert_eq!(u32::from_le_bytes(b.qh), 0xffff_fffe);
        let mut y = [0.0f32; 32];
        b.dequantize(&mut y);
        assert_eq!(y, x);
    }

    #[test]
    fn round_trips_stay_within_a_step() {
        let x: Vec<f32> = (0..128).map(|i| ((i * 29 % 97) as f32 - 48.0) / 10.0).collect();
        let mut y = vec![0.0f32; 128];
        let mut q0 = vec![BlockQ5_0::default(); 4];
        quantize_row(&x, &mut q0);
        dequantize_row(&q0, &mut y);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= 4.8 / 16.0 + 1e-2));
        let mut q1 = vec![BlockQ5_1::default(); 4];
        quantize_row(&x, &mut q1);
        dequantize_row(&q1, &mut y);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= 9.6 / 31.0 * 0.51 + 1e-2));
        let w = vec![2.0f32; 128];
        quantize_rows(&x, &mut q1, 64, Some(&w));
        dequantize_row(&q1, &mut y);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.3));
    }
}
