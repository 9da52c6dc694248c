//! Row conversions (`ggml_cpu_fp32_to_fp16` and friends), on the lengths of the shorter side.

use crate::cpu::kernels::simd;
use crate::quants::half::Bf16;

/// Rounds to binary16, to nearest even.
pub fn fp32_to_fp16(x: &[f32], y: &mut [u16]) {
    simd::f32_to_fp16_row(x, y);
}

/// Expands binary16 values (exact).
pub fn fp16_to_fp32(x: &[u16], y: &mut [f32]) {
    simd::fp16_to_f32_row(x, y);
}

/// Rounds to bfloat16, to nearest even.
pub fn fp32_to_bf16(x: &[f32], y: &mut [Bf16]) {
    simd::f32_to_bf16_row(x, y);
}

/// Expands bfloat16 values (exact).
pub fn bf16_to_fp32(x: &[Bf16], y: &mut [f32]) {
    simd::bf16_to_f32_row(x, y);
}

/// Truncates toward zero (saturating where C's conversion would be undefined).
pub fn fp32_to_i32(x: &[f32], y: &mut [i32]) {
    for (d, &s) in y.iter_mut().zip(x) {
        *d = s as i32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::half::Bf16;

    #[test]
    fn row_conversions() {
        let x = [1.5f32, -2.25, 65504.0, 0.1];
        let mut h = [0u16; 4];
        fp32_to_fp16(&x, &mut h);
        let mut back = [0f32; 4];
        fp16_to_fp32(&h, &mut back);
        assert_eq!(&back[..3], &x[..3]);
        let mut b = [Bf16::default(); 4];
        fp32_to_bf16(&x, &mut b);
        bf16_to_fp32(&b, &mut back);
        assert_eq!(&back[..2], &x[..2]);
        let mut i = [0i32; 4];
        fp32_to_i32(&[1.9, -1.9, 3.0, 0.0], &mut i);
        assert_eq!(i, [1, -1, 3, 0]);
    }
}
