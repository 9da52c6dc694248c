//! Sub-4-bit blocks with one binary16 scale: `q1_0` (128 values, one sign bit each:
//! x = ±d with d the block's mean magnitude) and `q2_0` (64 values, two bits each:
//! x = d·(q-1) for q in 0..3, with d the block's largest magnitude).
//! Value j of a block sits in byte j/8 (bit j%8) for q1_0, byte j/4 (bits 2·(j%4)) for q2_0.
//! Neither format has an importance-aware search: with an imatrix they quantize as without.

use super::BlockCheck;
use super::BlockFormat;
use super::half::Half;
use crate::core::types::Type;
use std::mem::offset_of;

const QK1: usize = 128;
const QK2: usize = 64;

/// `block_q1_0`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ1_0 {
    pub d: Half,
    pub qs: [u8; QK1 / 8],
}

/// `block_q2_0`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockQ2_0 {
    pub d: Half,
    pub qs: [u8; QK2 / 4],
}

const _: () = assert!(std::mem::size_of::<BlockQ1_0>() == 18 && std::mem::align_of::<BlockQ1_0>() == 1);
const _: () = assert!(std::mem::size_of::<BlockQ2_0>() == 18 && std::mem::align_of::<BlockQ2_0>() == 1);

/// C's `(int)` of a float as x86 compilers emit it: truncation toward zero, with NaN and
/// values outside the `int` range giving `INT_MIN`.
#[inline]
pub(crate) fn truncate_to_int(x: f32) -> i32 {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&x) { x as i32 } else { i32::MIN }
}

// SAFETY: repr(C) of a Half and a byte array: 18 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ1_0 {
    const TYPE: Type = Type::Q1_0;
    const QK: usize = QK1;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ1_0, d)]);

    fn quantize(x: &[f32]) -> Self {
        let mut sum_abs = 0.0f32;
        for &v in x {
            sum_abs += v.abs();
        }
        let mut qs = [0u8; QK1 / 8];
        for (j, &v) in x.iter().enumerate() {
            // -0.0 counts as non-negative; NaN as negative.
            if v >= 0.0 {
                qs[j / 8] |= 1 << (j % 8);
            }
        }
        BlockQ1_0 { d: Half::from_f32(sum_abs / QK1 as f32), qs }
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (j, out) in y[..QK1].iter_mut().enumerate() {
            *out = if (self.qs[j / 8] >> (j % 8)) & 1 != 0 { d } else { -d };
        }
    }
}

// SAFETY: repr(C) of a Half and a byte array: 18 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ2_0 {
    const TYPE: Type = Type::Q2_0;
    const QK: usize = QK2;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ2_0, d)]);

    fn quantize(x: &[f32]) -> Self {
        let mut amax = 0.0f32;
        for &v in x {
            if v.abs() > amax {
                amax = v.abs();
            }
        }
        let id = if amax > 0.0 { 1.0 / amax } else { 0.0 };
        let mut qs = [0u8; QK2 / 4];
        for (j, &v) in x.iter().enumerate() {
            // -1, 0, 1, 2 → 0..3; NaN and overflow (INT_MIN) land on 0 as in ggml.
            let q = truncate_to_int((v * id).round()).saturating_add(1).clamp(0, 3);
            qs[j / 4] |= (q as u8) << (2 * (j % 4));
        }
        BlockQ2_0 { d: Half::from_f32(amax), qs }
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (j, out) in y[..QK2].iter_mut().enumerate() {
            let q = (self.qs[j / 4] >> (2 * (j % 4))) & 3;
            *out = (i32::from(q) - 1) as f32 * d;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::{dequantize_row, quantize_row, quantize_rows};

    fn wave(n: usize) -> Vec<f32> {
        (0..n).map(|i| (i as f32 * 0.61).sin() * 3.0).collect()
    }

    #[test]
    fn block_sizes_match_type_facts() {
        assert_eq!(std::mem::size_of::<BlockQ1_0>(), Type::Q1_0.type_size());
        assert_eq!(std::mem::size_of::<BlockQ2_0>(), Type::Q2_0.type_size());
        assert_eq!(QK1 as i64, Type::Q1_0.blck_size());
        assert_eq!(QK2 as i64, Type::Q2_0.blck_size());
    }

    #[test]
    fn q1_0_keeps_signs_and_mean_magnitude() {
        let x = wave(256);
        let mut q = vec![BlockQ1_0::default(); 2];
        let mut y = vec![0.0f32; 256];
        quantize_row(&x, &mut q);
        dequantize_row(&q, &mut y);
        for (b, xb) in x.chunks_exact(QK1).enumerate() {
            let mean = xb.iter().map(|v| v.abs()).sum::<f32>() / QK1 as f32;
            for (j, &v) in xb.iter().enumerate() {
                let out = y[b * QK1 + j];
                assert!((out.abs() - mean).abs() < mean * 1e-3);
                assert_eq!(out >= 0.0, v >= 0.0);
            }
        }
    }

    #[test]
    fn q2_0_known_block() {
        let mut x = [0.0f32; QK2];
        x[0] = 2.0;
        x[1] = -1.0;
        x[2] = 1.2;
        x[5] = -2.0; // rounds to -1 (clamped)
        let b = BlockQ2_0::quantize(&x);
        assert_eq!(b.d.to_f32(), 2.0);
        // values 0..3: +1 (→2), -0.5 (→ round -1 → 0), 0.6 (→ 1 → 2), 0 (→ 1)
        assert_eq!(b.qs[0], 0b01_10_00_10);
        assert_eq!(b.qs[1], 0b01_01_00_01);
        let mut y = [0.0f32; QK2];
        b.dequantize(&mut y);
        assert_eq!(y[..6], [2.0, -2.0, 2.0, 0.0, 0.0, -2.0]);
    }

    #[test]
    fn q2_0_round_trip_stays_within_half_a_step() {
        let x = wave(128);
        let mut q = vec![BlockQ2_0::default(); 2];
        let mut y = vec![0.0f32; 128];
        quantize_rows(&x, &mut q, 128, Some(&[1.0; 128]));
        dequantize_row(&q, &mut y);
        for (xb, yb) in x.chunks_exact(QK2).zip(y.chunks_exact(QK2)) {
            let amax = xb.iter().fold(0.0f32, |a, v| a.max(v.abs()));
            for (a, b) in xb.iter().zip(yb) {
                // Levels -d, 0, d, 2d with d = amax: every value is within d/2 of one.
                assert!((a - b).abs() <= amax * 0.5 + 1e-2, "{a} {b}");
            }
        }
    }

    #[test]
    fn degenerate_inputs_follow_c_conversions() {
        assert_eq!(truncate_to_int(-1.5), -1);
        assert_eq!(truncate_to_int(f32::NAN), i32::MIN);
        assert_eq!(truncate_to_int(3.0e9), i32::MIN);
        let mut x = [0.0f32; QK2];
        x[0] = f32::INFINITY;
        x[1] = 1.0;
        let b = BlockQ2_0::quantize(&x);
        assert_eq!(b.d.bits(), 0x7c00);
        // id is 0: inf·0 is NaN (→ 0), the rest round to 0 (→ 1).
        assert_eq!(b.qs[0], 0b01_01_01_00);
    }
}
