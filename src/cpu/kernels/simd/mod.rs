//! Vector helpers that every kernel family shares: dot products, `y += a·x`, scaling and
//! sums over `f32` rows, and whole-row conversions between `f32` and the 16-bit float formats.
//!
//! Each helper exists twice: in [`scalar`], the plain loop that serves as the reference (and
//! the fallback on processors without AVX2), and in [`avx2`], the AVX2/FMA/F16C version. The
//! functions at the top level pick one at run time from the cached feature check, so a kernel
//! calls `simd::dot_f32(x, y)`, or `simd::scalar::dot_f32(x, y)` when the plan asks for the
//! reference kernels (`params.use_ref`).
//!
//! Results of the two paths agree up to float rounding: the vector sums add in a different
//! order (the scalar dot products accumulate in `f64`, as ggml's scalar code does). The
//! conversions agree bit for bit, except for the payload of a NaN going to binary16, where the
//! F16C instruction keeps the top payload bits and the scalar path writes the canonical NaN.
//!
//! Half-precision rows are `u16` bit patterns (`ggml_fp16_t`), bfloat16 rows are [`Bf16`],
//! as in [`crate::quants::half`]. Functions taking two slices work on the length of the
//! shorter one unless stated otherwise.

use crate::quants::half::Bf16;

#[cfg(target_arch = "x86_64")]
pub mod avx2;

/// Runs the AVX2 version of a helper when the processor has it, the scalar one otherwise.
macro_rules! dispatch {
    ($name:ident($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if crate::cpu::features::features().has_avx2_fma() {
                // SAFETY: the processor supports AVX2, FMA and F16C (checked just above).
                return unsafe { avx2::$name($($arg),*) };
            }
        }
        scalar::$name($($arg),*)
    }};
}

/// `Σ x[i]·y[i]`.
pub fn dot_f32(x: &[f32], y: &[f32]) -> f32 {
    dispatch!(dot_f32(x, y))
}

/// `Σ x[i]·y[i]` over binary16 rows, computed in `f32`.
pub fn dot_f16(x: &[u16], y: &[u16]) -> f32 {
    dispatch!(dot_f16(x, y))
}

/// `Σ x[i]·y[i]` over bfloat16 rows, computed in `f32`.
pub fn dot_bf16(x: &[Bf16], y: &[Bf16]) -> f32 {
    dispatch!(dot_bf16(x, y))
}

/// `y[i] += a·x[i]` (ggml's `vec_mad`).
pub fn axpy_f32(y: &mut [f32], x: &[f32], a: f32) {
    dispatch!(axpy_f32(y, x, a))
}

/// `y[i] *= a`.
pub fn scale_f32(y: &mut [f32], a: f32) {
    dispatch!(scale_f32(y, a))
}

/// `Σ x[i]`.
pub fn sum_f32(x: &[f32]) -> f32 {
    dispatch!(sum_f32(x))
}

/// Expands binary16 values to `f32` (exact).
pub fn fp16_to_f32_row(x: &[u16], y: &mut [f32]) {
    dispatch!(fp16_to_f32_row(x, y))
}

/// Rounds `f32` values to binary16, to nearest even.
pub fn f32_to_fp16_row(x: &[f32], y: &mut [u16]) {
    dispatch!(f32_to_fp16_row(x, y))
}

/// Expands bfloat16 values to `f32` (exact).
pub fn bf16_to_f32_row(x: &[Bf16], y: &mut [f32]) {
    dispatch!(bf16_to_f32_row(x, y))
}

/// Rounds `f32` values to bfloat16, to nearest even, NaNs kept and made quiet (ggml's
/// reference rounding).
pub fn f32_to_bf16_row(x: &[f32], y: &mut [Bf16]) {
    dispatch!(f32_to_bf16_row(x, y))
}

/// The reference loops.
pub mod scalar {
    use crate::quants::half::{Bf16, bf16_to_fp32, fp16_to_fp32, fp32_to_bf16, fp32_to_fp16};

    pub fn dot_f32(x: &[f32], y: &[f32]) -> f32 {
        x.iter().zip(y).map(|(&a, &b)| f64::from(a * b)).sum::<f64>() as f32
    }

    pub fn dot_f16(x: &[u16], y: &[u16]) -> f32 {
        x.iter().zip(y).map(|(&a, &b)| f64::from(fp16_to_fp32(a) * fp16_to_fp32(b))).sum::<f64>() as f32
    }

    pub fn dot_bf16(x: &[Bf16], y: &[Bf16]) -> f32 {
        x.iter().zip(y).map(|(&a, &b)| f64::from(bf16_to_fp32(a) * bf16_to_fp32(b))).sum::<f64>() as f32
    }

    pub fn axpy_f32(y: &mut [f32], x: &[f32], a: f32) {
        for (d, &s) in y.iter_mut().zip(x) {
            *d += s * a;
        }
    }

    pub fn scale_f32(y: &mut [f32], a: f32) {
        for d in y {
            *d *= a;
        }
    }

    pub fn sum_f32(x: &[f32]) -> f32 {
        x.iter().map(|&v| f64::from(v)).sum::<f64>() as f32
    }

    pub fn fp16_to_f32_row(x: &[u16], y: &mut [f32]) {
        for (d, &s) in y.iter_mut().zip(x) {
            *d = fp16_to_fp32(s);
        }
    }

    pub fn f32_to_fp16_row(x: &[f32], y: &mut [u16]) {
        for (d, &s) in y.iter_mut().zip(x) {
            *d = fp32_to_fp16(s);
        }
    }

    pub fn bf16_to_f32_row(x: &[Bf16], y: &mut [f32]) {
        for (d, &s) in y.iter_mut().zip(x) {
            *d = bf16_to_fp32(s);
        }
    }

    pub fn f32_to_bf16_row(x: &[f32], y: &mut [Bf16]) {
        for (d, &s) in y.iter_mut().zip(x) {
            *d = fp32_to_bf16(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::half::{fp16_to_fp32, fp32_to_fp16};

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 * 4.0 - 2.0
            })
            .collect()
    }

    fn close(a: f32, b: f32, tol: f32) -> bool {
        (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn dispatched_and_scalar_agree() {
        for n in [0usize, 1, 7, 8, 31, 32, 33, 100, 257] {
            let x = values(n, 1);
            let y = values(n, 2);
            assert!(close(dot_f32(&x, &y), scalar::dot_f32(&x, &y), 1e-5), "dot_f32 {n}");
            assert!(close(sum_f32(&x), scalar::sum_f32(&x), 1e-5), "sum {n}");

            let mut h = vec![0u16; n];
            let mut hs = vec![0u16; n];
            f32_to_fp16_row(&x, &mut h);
            scalar::f32_to_fp16_row(&x, &mut hs);
            assert_eq!(h, hs, "fp16 {n}");
            let mut back = vec![0f32; n];
            fp16_to_f32_row(&h, &mut back);
            assert!(back.iter().zip(&h).all(|(&v, &b)| v == fp16_to_fp32(b)));
            let mut hy = vec![0u16; n];
            f32_to_fp16_row(&y, &mut hy);
            assert!(close(dot_f16(&h, &hy), scalar::dot_f16(&h, &hy), 1e-5), "dot_f16 {n}");

            let mut b = vec![Bf16::default(); n];
            let mut bs = vec![Bf16::default(); n];
            f32_to_bf16_row(&x, &mut b);
            scalar::f32_to_bf16_row(&x, &mut bs);
            assert_eq!(b, bs, "bf16 {n}");
            let mut by = vec![Bf16::default(); n];
            f32_to_bf16_row(&y, &mut by);
            assert!(close(dot_bf16(&b, &by), scalar::dot_bf16(&b, &by), 1e-5), "dot_bf16 {n}");
            let mut fb = vec![0f32; n];
            let mut fbs = vec![0f32; n];
            bf16_to_f32_row(&b, &mut fb);
            scalar::bf16_to_f32_row(&b, &mut fbs);
            assert_eq!(fb, fbs);

            let mut z = y.clone();
            let mut zs = y.clone();
            axpy_f32(&mut z, &x, 0.75);
            scalar::axpy_f32(&mut zs, &x, 0.75);
            assert!(z.iter().zip(&zs).all(|(&a, &b)| close(a, b, 1e-6)));
            scale_f32(&mut z, -3.0);
            scalar::scale_f32(&mut zs, -3.0);
            assert!(z.iter().zip(&zs).all(|(&a, &b)| close(a, b, 1e-6)));
        }
    }

    #[test]
    fn bf16_rounding_edges_match_the_reference() {
        let bits = [0x3f80_8000u32, 0x3f81_8000, 0x3f80_8001, 0x7f80_0001, 0xffc1_2345, 0x7f7f_ffff, 0x0000_0001];
        let mut x: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        x.extend(values(25, 9));
        let mut y = vec![Bf16::default(); x.len()];
        let mut ys = vec![Bf16::default(); x.len()];
        f32_to_bf16_row(&x, &mut y);
        scalar::f32_to_bf16_row(&x, &mut ys);
        assert_eq!(y, ys);
        assert_eq!(y[0].bits, 0x3f80);
        assert_eq!(y[3].bits, 0x7fc0);
    }

    #[test]
    fn fp16_overflow_and_subnormals() {
        let x = [65520.0f32, -1.0e-7, 6.0e-8, 1.0, 0.1, -65504.0, 3.0e-5, 2.5];
        let mut h = [0u16; 8];
        f32_to_fp16_row(&x, &mut h);
        let expect: Vec<u16> = x.iter().map(|&v| fp32_to_fp16(v)).collect();
        assert_eq!(h.to_vec(), expect);
    }
}
