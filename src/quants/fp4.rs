//! 4-bit floating-point blocks: each value is an E2M1 number (±0, 0.5, 1, 1.5, 2, 3, 4, 6)
//! times a shared power-of-two or 8-bit-float scale.
//!
//! * `mxfp4` (OCP microscaling): 32 values and one E8M0 exponent (a bare power of two).
//! * `nvfp4`: 64 values in four groups of 16, each group with a UE4M3 scale (unsigned, 4
//!   exponent bits with bias 7, 3 mantissa bits).
//!
//! In both, value j of a group sits in the low nibble of byte j, value j + n/2 in its high
//! nibble. ggml keeps the E2M1 levels doubled so that they are integers; the scale
//! conversions here return half the scale to make up for it. Neither format has an
//! importance-aware search: with an imatrix they quantize as without.

use super::BlockCheck;
use super::BlockFormat;
use super::search::truncate_to_byte;
use crate::core::types::Type;

const QK_MX: usize = 32;
const QK_NV: usize = 64;
/// Values sharing one nvfp4 scale.
const QK_NV_SUB: usize = 16;

/// The sixteen E2M1 codes as twice their value: sign bit 3, then exponent and mantissa.
pub const E2M1_DOUBLED: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// `block_mxfp4`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockMxfp4 {
    /// E8M0 exponent: the block scale is 2^(e-127).
    pub e: u8,
    pub qs: [u8; QK_MX / 2],
}

/// `block_nvfp4`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockNvfp4 {
    /// UE4M3 scales, one per group of 16 values.
    pub d: [u8; QK_NV / QK_NV_SUB],
    pub qs: [u8; QK_NV / 2],
}

const _: () = assert!(std::mem::size_of::<BlockMxfp4>() == 17 && std::mem::align_of::<BlockMxfp4>() == 1);
const _: () = assert!(std::mem::size_of::<BlockNvfp4>() == 36 && std::mem::align_of::<BlockNvfp4>() == 1);

/// 2^n for the exponents of normal floats (-126..=127).
#[inline]
fn pow2(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// An E8M0 exponent as the power of two 2^(e-127). 0 gives the subnormal 2^-127; 0xff (NaN in
/// the OCP format) is not special-cased, as in ggml, and reads as infinity.
#[inline]
pub fn e8m0_to_f32(e: u8) -> f32 {
    if e == 0 { f32::from_bits(0x0040_0000) } else { f32::from_bits(u32::from(e) << 23) }
}

/// Half of [`e8m0_to_f32`]: the factor for the doubled E2M1 levels.
#[inline]
pub fn e8m0_to_f32_half(e: u8) -> f32 {
    if e < 2 { f32::from_bits(0x0020_0000 << e) } else { f32::from_bits(u32::from(e - 1) << 23) }
}

/// Half the value of a UE4M3 scale (the factor for the doubled E2M1 levels). The sign bit is
/// ignored; 0x7f (NaN) reads as zero.
#[inline]
pub fn ue4m3_to_f32_half(x: u8) -> f32 {
    if x == 0 || x == 0x7f {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0x0f);
    let man = f32::from(x & 0x07);
    let value = if exp == 0 { man * pow2(-9) } else { (1.0 + man / 8.0) * pow2(exp - 7) };
    value * 0.5
}

/// A positive scale as UE4M3, as ggml rounds it: the mantissa is cut to three bits and
/// rounded half up, tiny values become subnormals (rounded to nearest, at most 7·2^-9),
/// anything from 256 up (and anything above the largest value, 448) saturates to 448 (0x7e),
/// and zero, negatives and NaN give 0.
pub fn f32_to_ue4m3(x: f32) -> u8 {
    // Zero, negatives and NaN.
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let x = if x > 448.0 { 448.0 } else { x };
    let bits = x.to_bits();
    let mut exp = ((bits >> 23) & 0xff) as i32 - 127 + 7;
    if exp <= 0 {
        // In range: x < 2^-6 here, so the product stays below 8.5.
        let man = ((x * 512.0 + 0.5) as i32).min(7);
        return if man < 1 { 0 } else { man as u8 };
    }
    if exp >= 15 {
        return 0x7e;
    }
    let mut man = ((bits >> 20) & 0x07) + ((bits >> 19) & 1);
    if man > 7 {
        man = 0;
        exp += 1;
        if exp >= 15 {
            return 0x7e;
        }
    }
    ((exp as u32) << 3 | man) as u8
}

/// The E2M1 code whose doubled level times `scale` is closest to `x` (the first on ties;
/// NaN gives code 0).
#[inline]
fn nearest_code(x: f32, scale: f32) -> u8 {
    let error = |code: usize| (f32::from(E2M1_DOUBLED[code]) * scale - x).abs();
    let mut best = 0;
    let mut best_err = error(0);
    for code in 1..16 {
        let err = error(code);
        if err < best_err {
            best = code;
            best_err = err;
        }
    }
    best as u8
}

/// Largest magnitude in `x` (NaNs skipped).
fn absmax(x: &[f32]) -> f32 {
    let mut amax = 0.0f32;
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
        }
    }
    amax
}

/// Codes of a group at `scale`, value j in the low nibble of byte j and value j + n/2 in the
/// high nibble.
fn pack_codes(x: &[f32], scale: f32, out: &mut [u8]) {
    let half = x.len() / 2;
    for (j, byte) in out.iter_mut().enumerate() {
        *byte = nearest_code(x[j], scale) | (nearest_code(x[j + half], scale) << 4);
    }
}

fn unpack_codes(bytes: &[u8], scale: f32, y: &mut [f32]) {
    let half = bytes.len();
    for (j, &byte) in bytes.iter().enumerate() {
        y[j] = f32::from(E2M1_DOUBLED[usize::from(byte & 0x0f)]) * scale;
        y[j + half] = f32::from(E2M1_DOUBLED[usize::from(byte >> 4)]) * scale;
    }
}

// SAFETY: repr(C) of a byte and a byte array: 17 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockMxfp4 {
    const TYPE: Type = Type::MXFP4;
    const QK: usize = QK_MX;
    const CHECK: BlockCheck = BlockCheck::E8m0Scale;

    fn quantize(x: &[f32]) -> Self {
        let amax = absmax(x);
        // The exponent puts the largest magnitude in the top E2M1 binade: 2^(e-127) is
        // 2^floor(log2 amax) / 4, so amax / scale lands in [4, 8) (and rounds to at most 6).
        // log2 comes from the C library, as in ggml, so that values just below a power of
        // two get the same exponent; out-of-range results wrap as C's conversion does.
        let e = if amax > 0.0 { truncate_to_byte(amax.log2().floor() - 2.0 + 127.0) } else { 0 };
        let mut b = BlockMxfp4 { e, ..Default::default() };
        pack_codes(&x[..QK_MX], e8m0_to_f32_half(e), &mut b.qs);
        b
    }

    fn dequantize(&self, y: &mut [f32]) {
        unpack_codes(&self.qs, e8m0_to_f32_half(self.e), &mut y[..QK_MX]);
    }
}

// SAFETY: repr(C) of two byte arrays: 36 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockNvfp4 {
    const TYPE: Type = Type::NVFP4;
    const QK: usize = QK_NV;
    // (ggml checks nothing in its blocks)
    const CHECK: BlockCheck = BlockCheck::Nothing;

    fn quantize(x: &[f32]) -> Self {
        let mut b = BlockNvfp4::default();
        for ((d, qs), xs) in b.d.iter_mut().zip(b.qs.chunks_exact_mut(QK_NV_SUB / 2)).zip(x.chunks_exact(QK_NV_SUB)) {
            // The largest E2M1 value, 6, is mapped onto the group's largest magnitude.
            *d = f32_to_ue4m3(absmax(xs) / 6.0);
            pack_codes(xs, ue4m3_to_f32_half(*d), qs);
        }
        b
    }

    fn dequantize(&self, y: &mut [f32]) {
        for ((&d, qs), ys) in self.d.iter().zip(self.qs.chunks_exact(QK_NV_SUB / 2)).zip(y.chunks_exact_mut(QK_NV_SUB))
        {
            unpack_codes(qs, ue4m3_to_f32_half(d), ys);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::{dequantize_row, quantize_row, quantize_rows};

    fn wave(n: usize) -> Vec<f32> {
        (0..n).map(|i| (i as f32 * 0.53).sin() * (1.0 + (i / 16) as f32)).collect()
    }

    #[test]
    fn block_sizes_match_type_facts() {
        assert_eq!(std::mem::size_of::<BlockMxfp4>(), Type::MXFP4.type_size());
        assert_eq!(std::mem::size_of::<BlockNvfp4>(), Type::NVFP4.type_size());
        assert_eq!(QK_MX as i64, Type::MXFP4.blck_size());
        assert_eq!(QK_NV as i64, Type::NVFP4.blck_size());
    }

    #[test]
    fn e8m0_scales() {
        assert_eq!(e8m0_to_f32(127), 1.0);
        assert_eq!(e8m0_to_f32(0), 2f32.powi(-127));
        assert_eq!(e8m0_to_f32(254), 2f32.powi(127));
        for e in 0..=254u8 {
            assert_eq!(e8m0_to_f32_half(e), e8m0_to_f32(e) / 2.0, "{e}");
        }
    }

    #[test]
    fn ue4m3_scales() {
        assert_eq!(ue4m3_to_f32_half(0x38), 0.5); // 1.0
        assert_eq!(ue4m3_to_f32_half(0x7e), 224.0); // 448
        assert_eq!(ue4m3_to_f32_half(0x01), 2f32.powi(-10)); // smallest subnormal
        assert_eq!(ue4m3_to_f32_half(0x7f), 0.0);
        assert_eq!(f32_to_ue4m3(1.0), 0x38);
        assert_eq!(f32_to_ue4m3(1.0625), 0x39); // half a step rounds up
        assert_eq!(f32_to_ue4m3(1.9375), 0x40); // mantissa carry into the exponent
        assert_eq!(f32_to_ue4m3(1000.0), 0x7e);
        assert_eq!(f32_to_ue4m3(2f32.powi(-9)), 0x01);
        assert_eq!(f32_to_ue4m3(2f32.powi(-11)), 0x00);
        assert_eq!(f32_to_ue4m3(-1.0), 0);
        assert_eq!(f32_to_ue4m3(f32::NAN), 0);
        // Every finite code below the saturation binade converts back to itself.
        for code in 1..0x78u8 {
            assert_eq!(f32_to_ue4m3(ue4m3_to_f32_half(code) * 2.0), code, "{code:#x}");
        }
    }

    #[test]
    fn mxfp4_known_block() {
        let mut x = [0.0f32; 32];
        x[0] = 6.0;
        x[1] = -1.5;
        x[16] = 0.25; // halfway between 0 and 0.5: the first (0) wins
        x[17] = 3.2;
        let b = BlockMxfp4::quantize(&x);
        assert_eq!(b.e, 127); // floor(log2 6) - 2 = 0: scale 1
        assert_eq!(b.qs[0], 0x07); // 6 → code 7; 0.25 → code 0
        assert_eq!(b.qs[1], 0x5b); // -1.5 → code 11; 3.2 → 3 (code 5)
        let mut y = [0.0f32; 32];
        b.dequantize(&mut y);
        assert_eq!((y[0], y[1], y[16], y[17]), (6.0, -1.5, 0.0, 3.0));
    }

    #[test]
    fn round_trips_stay_within_the_e2m1_grid() {
        let x = wave(128);
        let mut y = vec![0.0f32; 128];
        let mut mx = vec![BlockMxfp4::default(); 4];
        quantize_row(&x, &mut mx);
        dequantize_row(&mx, &mut y);
        for (b, (xb, yb)) in x.chunks_exact(32).zip(y.chunks_exact(32)).enumerate() {
            // The widest gap between levels is 2 units of 2·scale (4 to 6).
            let step = 2.0 * e8m0_to_f32(mx[b].e);
            assert!(xb.iter().zip(yb).all(|(a, c)| (a - c).abs() <= step));
        }
        let mut nv = vec![BlockNvfp4::default(); 2];
        quantize_rows(&x, &mut nv, 128, Some(&[1.0; 128]));
        dequantize_row(&nv, &mut y);
        for (xs, ys) in x.chunks_exact(16).zip(y.chunks_exact(16)) {
            let amax = xs.iter().fold(0.0f32, |a, v| a.max(v.abs()));
            assert!(xs.iter().zip(ys).all(|(a, c)| (a - c).abs() <= amax / 6.0 + 0.07 * amax));
        }
    }
}
