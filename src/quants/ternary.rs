//! Ternary blocks of 256 (BitNet b1.58 and TriLM weights): every value is -d, 0 or +d, with d
//! the block's largest magnitude stored as binary16 after the packed values.
//!
//! * `tq1_0` (1.6875 bits per value) packs five trits per byte as a base-3 number, scaled
//!   from 0..243 onto 0..256 so that a trit is read back with one multiply and a shift: the
//!   first 160 values fill 32 bytes (byte m holds values m, m+32, .. m+128, first value most
//!   significant), the next 80 fill 16 bytes the same way with a stride of 16, and the last 16
//!   fill 4 bytes four trits each (stride 4, lowest trit left at zero).
//! * `tq2_0` (2.0625 bits per value) stores each trit plus one in two bits: in each 128-value
//!   half, byte m holds values m, m+32, m+64 and m+96 from the low bits up.
//!
//! Neither format has an importance-aware search: with an imatrix they quantize as without.

use super::BlockCheck;
use super::half::Half;
use super::{BlockFormat, c_max};
use crate::core::types::Type;
use std::mem::offset_of;

const QK: usize = 256;

/// Bytes of five-trit groups in `tq1_0` (the rest of the values go four to a byte).
const TQ1_QS: usize = (QK - 4 * QK / 64) / 5;
/// Bytes of four-trit groups in `tq1_0`.
const TQ1_QH: usize = QK / 64;

/// `block_tq1_0`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockTq1_0 {
    pub qs: [u8; TQ1_QS],
    pub qh: [u8; TQ1_QH],
    pub d: Half,
}

/// `block_tq2_0`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockTq2_0 {
    pub qs: [u8; QK / 4],
    pub d: Half,
}

impl Default for BlockTq1_0 {
    fn default() -> Self {
        BlockTq1_0 { qs: [0; TQ1_QS], qh: [0; TQ1_QH], d: Half::default() }
    }
}

impl Default for BlockTq2_0 {
    fn default() -> Self {
        BlockTq2_0 { qs: [0; QK / 4], d: Half::default() }
    }
}

const _: () = assert!(std::mem::size_of::<BlockTq1_0>() == 54 && std::mem::align_of::<BlockTq1_0>() == 1);
const _: () = assert!(std::mem::size_of::<BlockTq2_0>() == 66 && std::mem::align_of::<BlockTq2_0>() == 1);

/// glibc's `lroundf` on x86-64: half away from zero, with NaN, infinities and values beyond
/// the `long` range giving `LONG_MIN`.
#[inline]
fn lround(x: f32) -> i64 {
    let r = x.round();
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) { r as i64 } else { i64::MIN }
}

/// The block's largest magnitude (C's `MAX` fold, so a NaN is carried only until the next
/// value) and its inverse.
fn scale_of(x: &[f32]) -> (f32, f32) {
    let d = x.iter().fold(0.0f32, |acc, v| c_max(acc, v.abs()));
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    (d, id)
}

/// A value's trit plus one (0, 1, 2 for -1, 0, +1), as the C `int` it is computed in.
/// Degenerate inputs wrap exactly as ggml's narrowing from `long` does.
#[inline]
fn trit(v: f32, id: f32) -> i32 {
    lround(v * id).wrapping_add(1) as i32
}

/// Fills `out` with five-trit numbers: byte m holds the values `m + k·stride` of `x` for the
/// first `trits` k (most significant first, the remaining low trits zero), where `stride` is
/// `out.len()`, then rescaled from 0..243 to 0..256 rounding up. Byte arithmetic wraps as in C.
fn pack_trits(x: &[f32], id: f32, trits: usize, out: &mut [u8]) {
    let stride = out.len();
    for (m, byte) in out.iter_mut().enumerate() {
        let mut q = 0u8;
        for k in 0..5 {
            q = q.wrapping_mul(3);
            if k < trits {
                q = (i32::from(q) + trit(x[m + k * stride], id)) as u8;
            }
        }
        *byte = (u32::from(q) * 256).div_ceil(243) as u8;
    }
}

/// Trit `k` (0 = most significant) of a rescaled five-trit byte, as -1, 0 or 1.
#[inline]
fn unpack_trit(byte: u8, k: usize) -> i32 {
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    let shifted = byte.wrapping_mul(POW3[k]);
    ((u16::from(shifted) * 3) >> 8) as i32 - 1
}

/// Expands bytes written by [`pack_trits`] (`trits` per byte) into `y`, value `m + k·stride`.
fn unpack_trits(bytes: &[u8], trits: usize, d: f32, y: &mut [f32]) {
    let stride = bytes.len();
    for k in 0..trits {
        for (m, &byte) in bytes.iter().enumerate() {
            y[k * stride + m] = unpack_trit(byte, k) as f32 * d;
        }
    }
}

// SAFETY: repr(C) of byte arrays and a Half: 54 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockTq1_0 {
    const TYPE: Type = Type::TQ1_0;
    const QK: usize = QK;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockTq1_0, d)]);

    fn quantize(x: &[f32]) -> Self {
        let (d, id) = scale_of(x);
        let mut b = BlockTq1_0 { d: Half::from_f32(d), ..Default::default() };
        pack_trits(&x[..160], id, 5, &mut b.qs[..32]);
        pack_trits(&x[160..240], id, 5, &mut b.qs[32..]);
        pack_trits(&x[240..], id, 4, &mut b.qh);
        b
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        unpack_trits(&self.qs[..32], 5, d, &mut y[..160]);
        unpack_trits(&self.qs[32..], 5, d, &mut y[160..240]);
        unpack_trits(&self.qh, 4, d, &mut y[240..QK]);
    }
}

// SAFETY: repr(C) of a byte array and a Half: 66 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockTq2_0 {
    const TYPE: Type = Type::TQ2_0;
    const QK: usize = QK;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockTq2_0, d)]);

    fn quantize(x: &[f32]) -> Self {
        let (d, id) = scale_of(x);
        let mut qs = [0u8; QK / 4];
        for (bytes, xh) in qs.chunks_exact_mut(32).zip(x.chunks_exact(128)) {
            for (m, byte) in bytes.iter_mut().enumerate() {
                for k in 0..4 {
                    let bits = (trit(xh[m + 32 * k], id) & 3) as u8;
                    *byte = byte.wrapping_add(bits << (2 * k));
                }
            }
        }
        BlockTq2_0 { qs, d: Half::from_f32(d) }
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (bytes, yh) in self.qs.chunks_exact(32).zip(y.chunks_exact_mut(128)) {
            for k in 0..4 {
                for (m, &byte) in bytes.iter().enumerate() {
                    let q = i32::from((byte >> (2 * k)) & 3);
                    yh[32 * k + m] = (q - 1) as f32 * d;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::{dequantize_row, quantize_row, quantize_rows};

    /// Values that are exactly -a, 0 or +a, in a pattern that differs at every position.
    fn ternary(n: usize, a: f32) -> Vec<f32> {
        (0..n)
            .map(|i| match (i * 7 + i / 5) % 3 {
                0 => -a,
                1 => 0.0,
                _ => a,
            })
            .collect()
    }

    #[test]
    fn block_sizes_match_type_facts() {
        assert_eq!(std::mem::size_of::<BlockTq1_0>(), Type::TQ1_0.type_size());
        assert_eq!(std::mem::size_of::<BlockTq2_0>(), Type::TQ2_0.type_size());
        assert_eq!(QK as i64, Type::TQ1_0.blck_size());
        assert_eq!(QK as i64, Type::TQ2_0.blck_size());
    }

    #[test]
    fn ternary_values_round_trip_exactly() {
        let x = ternary(512, 1.5);
        let mut y = vec![0.0f32; 512];
        let mut q1 = vec![BlockTq1_0::default(); 2];
        quantize_row(&x, &mut q1);
        dequantize_row(&q1, &mut y);
        assert_eq!(x, y);
        let mut q2 = vec![BlockTq2_0::default(); 2];
        quantize_rows(&x, &mut q2, 256, Some(&[1.0; 256]));
        dequantize_row(&q2, &mut y);
        assert_eq!(x, y);
    }

    #[test]
    fn every_five_trit_number_decodes() {
        for n in 0..243u32 {
            let trits: Vec<i32> = (0..5).map(|k| (n / 3u32.pow(4 - k) % 3) as i32).collect();
            let byte = (n * 256).div_ceil(243) as u8;
            for (k, &t) in trits.iter().enumerate() {
                assert_eq!(unpack_trit(byte, k), t - 1, "{n} trit {k}");
            }
        }
    }

    #[test]
    fn other_values_go_to_the_nearest_trit() {
        let x: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut y = vec![0.0f32; 256];
        let mut q = vec![BlockTq1_0::default(); 1];
        quantize_row(&x, &mut q);
        dequantize_row(&q, &mut y);
        let d = q[0].d.to_f32();
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= d * 0.5 + 1e-3));
        assert_eq!(lround(2.5), 3);
        assert_eq!(lround(f32::NAN), i64::MIN);
        assert_eq!(trit(f32::INFINITY, 1.0), 1);
    }
}
