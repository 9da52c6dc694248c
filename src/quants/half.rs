//! 16-bit floats: IEEE binary16 (`ggml_fp16_t`) and bfloat16 (`ggml_bf16_t`), one value at a
//! time and whole rows.
//!
//! The `half` crate does the arithmetic wherever its bits agree with ggml's. The one place they
//! differ is a NaN going to binary16: `half` keeps the payload, ggml always writes the canonical
//! quiet NaN `0x7e00` (with the sign), so that case is handled here.

use half::{bf16, f16};

/// `ggml_bf16_t`: a struct holding the raw bits, passed by value like a `uint16_t`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Bf16 {
    pub bits: u16,
}

/// binary16 bits to `f32` (exact; NaNs come out quiet with their payload).
#[inline]
pub fn fp16_to_fp32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}

/// `f32` to binary16 bits, rounding to nearest even; overflow gives infinity and every NaN the
/// canonical quiet NaN.
#[inline]
pub fn fp32_to_fp16(x: f32) -> u16 {
    if x.is_nan() {
        let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
        return sign | 0x7e00;
    }
    f16::from_f32(x).to_bits()
}

/// bfloat16 to `f32`: the bits are the top half of the `f32`.
#[inline]
pub fn bf16_to_fp32(h: Bf16) -> f32 {
    f32::from_bits(u32::from(h.bits) << 16)
}

/// `f32` to bfloat16, rounding to nearest even; NaNs are kept and made quiet. Subnormals are
/// kept as well.
#[inline]
pub fn fp32_to_bf16(x: f32) -> Bf16 {
    Bf16 { bits: bf16::from_f32(x).to_bits() }
}

pub fn fp16_to_fp32_row(x: &[u16], y: &mut [f32]) {
    for (dst, &src) in y.iter_mut().zip(x) {
        *dst = fp16_to_fp32(src);
    }
}

pub fn fp32_to_fp16_row(x: &[f32], y: &mut [u16]) {
    for (dst, &src) in y.iter_mut().zip(x) {
        *dst = fp32_to_fp16(src);
    }
}

pub fn bf16_to_fp32_row(x: &[Bf16], y: &mut [f32]) {
    for (dst, &src) in y.iter_mut().zip(x) {
        *dst = bf16_to_fp32(src);
    }
}

/// The reference conversion of a row to bfloat16. ggml's optimised variant differs only on
/// CPUs with AVX512-BF16, where it flushes subnormals; ours is the reference everywhere.
pub fn fp32_to_bf16_row(x: &[f32], y: &mut [Bf16]) {
    for (dst, &src) in y.iter_mut().zip(x) {
        *dst = fp32_to_bf16(src);
    }
}

/// A binary16 value stored inside a quantized block: two little-endian bytes, so that blocks
/// have alignment 1 and can be laid over any byte buffer.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Half([u8; 2]);

impl Half {
    pub fn from_f32(x: f32) -> Self {
        Half(fp32_to_fp16(x).to_le_bytes())
    }

    pub fn from_bits(bits: u16) -> Self {
        Half(bits.to_le_bytes())
    }

    pub fn to_f32(self) -> f32 {
        fp16_to_fp32(self.bits())
    }

    pub fn bits(self) -> u16 {
        u16::from_le_bytes(self.0)
    }

    pub fn is_inf(self) -> bool {
        self.bits() & 0x7fff == 0x7c00
    }

    pub fn is_nan(self) -> bool {
        self.bits() & 0x7c00 == 0x7c00 && self.bits() & 0x03ff != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp16_known_values() {
        assert_eq!(fp32_to_fp16(1.0), 0x3c00);
        assert_eq!(fp32_to_fp16(-2.0), 0xc000);
        assert_eq!(fp32_to_fp16(65504.0), 0x7bff);
        assert_eq!(fp32_to_fp16(65520.0), 0x7c00); // rounds up to infinity
        assert_eq!(fp32_to_fp16(f32::NEG_INFINITY), 0xfc00);
        assert_eq!(fp32_to_fp16(f32::from_bits(0x7f80_0001)), 0x7e00);
        assert_eq!(fp32_to_fp16(f32::from_bits(0xffc1_2345)), 0xfe00);
        assert_eq!(fp32_to_fp16(2f32.powi(-24)), 0x0001); // smallest subnormal
        assert_eq!(fp32_to_fp16(2f32.powi(-25)), 0x0000); // half of it: ties to even (zero)
        assert_eq!(fp32_to_fp16(3.0 * 2f32.powi(-25)), 0x0002); // 1.5 ulp: ties to even (two)
        assert_eq!(fp32_to_fp16(1.0 + 1.0 / 2048.0), 0x3c00); // tie goes to even
        assert_eq!(fp32_to_fp16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(fp16_to_fp32(0x0001), 2f32.powi(-24));
        assert_eq!(fp16_to_fp32(0x7bff), 65504.0);
        assert!(fp16_to_fp32(0x7e00).is_nan());
    }

    #[test]
    fn fp16_round_trips_every_finite_value() {
        for bits in 0..=u16::MAX {
            let x = fp16_to_fp32(bits);
            if x.is_nan() {
                assert_eq!(fp32_to_fp16(x) & 0x7fff, 0x7e00);
            } else {
                assert_eq!(fp32_to_fp16(x), bits);
            }
        }
    }

    #[test]
    fn bf16_rounds_to_nearest_even_and_quiets_nans() {
        assert_eq!(fp32_to_bf16(1.0).bits, 0x3f80);
        assert_eq!(fp32_to_bf16(f32::from_bits(0x3f80_8000)).bits, 0x3f80); // tie, even
        assert_eq!(fp32_to_bf16(f32::from_bits(0x3f81_8000)).bits, 0x3f82); // tie, odd
        assert_eq!(fp32_to_bf16(f32::from_bits(0x3f80_8001)).bits, 0x3f81);
        assert_eq!(fp32_to_bf16(f32::from_bits(0x7f80_0001)).bits, 0x7fc0);
        assert_eq!(fp32_to_bf16(f32::from_bits(0x7f7f_ffff)).bits, 0x7f80); // overflow
        assert_eq!(fp32_to_bf16(f32::from_bits(0x0000_0001)).bits, 0x0000);
        assert_eq!(bf16_to_fp32(Bf16 { bits: 0xc040 }), -3.0);
    }

    #[test]
    fn rows_convert_elementwise() {
        let x = [0.5f32, -1.25, 3.0e-6, 1.0e6];
        let mut h = [0u16; 4];
        let mut b = [Bf16::default(); 4];
        let mut y = [0f32; 4];
        fp32_to_fp16_row(&x, &mut h);
        fp16_to_fp32_row(&h, &mut y);
        assert_eq!(y[0], 0.5);
        assert_eq!(y[1], -1.25);
        assert_eq!(y[3], f32::INFINITY);
        fp32_to_bf16_row(&x, &mut b);
        bf16_to_fp32_row(&b, &mut y);
        assert_eq!(y[1], -1.25);
        assert!((y[3] - 1.0e6).abs() < 1.0e4);
    }
}
