//! The row helpers of ggml-cpu's `vec.h` that the reference exports: SiLU and SwiGLU of a
//! row, the exponentials of a softmax and of a log-softmax with their sum, and a row's
//! centring with its variance. `ggml_float` is `double`. Each is the row kernel our graph
//! ops run (UNARY SILU, GLU SWIGLU, SOFT_MAX, NORM), on its SIMD path where the processor has
//! one. The output row may be the input row itself (in place), as in the reference.

use std::ffi::c_int;

use crate::cpu::features::features;
use crate::cpu::kernels::norm::RowMath;
use crate::cpu::kernels::softmax::exp_row;
use crate::cpu::kernels::unary::{fast, silu};

/// The row length, or 0 for a negative `n` (the reference's loops then do nothing).
fn len(n: c_int) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Copies `n` floats from `x` to `y` (which may be `x`) and returns `y` as a slice.
///
/// # Safety
/// `x` holds `n` floats and `y` room for them; the rows are the same or apart.
unsafe fn copied<'a>(n: usize, y: *mut f32, x: *const f32) -> &'a mut [f32] {
    if n == 0 {
        return &mut [];
    }
    crate::ggml_assert!(!x.is_null() && !y.is_null(), "NULL row of {} values", n);
    // SAFETY: the caller's contract; `copy` allows the rows to coincide.
    unsafe {
        std::ptr::copy(x, y, n);
        std::slice::from_raw_parts_mut(y, n)
    }
}

/// `y[i] = x[i] / (1 + e^-x[i])`.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_vec_silu_f32(n: c_int, y: *mut f32, x: *const f32) {
    let n = len(n);
    if features().has_avx2_fma() {
        // SAFETY: AVX2, FMA and F16C were detected just now; the C contract: `x` and `y`
        // hold `n` floats, the same row or apart.
        return unsafe { fast::silu(n, y, x) };
    }
    for i in 0..n {
        // SAFETY: i < n, inside both rows (the C contract); each value is read before its
        // slot is written.
        unsafe { *y.add(i) = silu(*x.add(i)) };
    }
}

/// `y[i] = silu(x[i]) · g[i]`.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_vec_swiglu_f32(n: c_int, y: *mut f32, x: *const f32, g: *const f32) {
    let n = len(n);
    if features().has_avx2_fma() {
        // SAFETY: AVX2, FMA and F16C were detected just now; the C contract: the three rows
        // hold `n` floats.
        return unsafe { fast::swiglu(n, y, x, g) };
    }
    for i in 0..n {
        // SAFETY: i < n, inside the three rows (the C contract).
        unsafe { *y.add(i) = silu(*x.add(i)) * *g.add(i) };
    }
}

/// `y[i] = e^(x[i] - max)`; returns their sum, accumulated in `double`.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_vec_soft_max_f32(n: c_int, y: *mut f32, x: *const f32, max: f32) -> f64 {
    // SAFETY: the C contract: `x` holds `n` floats and `y` room for them.
    let y = unsafe { copied(len(n), y, x) };
    exp_row(y, max, features().has_avx2_fma())
}

/// `y[i] = x[i] - max`; returns the logarithm of the sum of their exponentials (the sum
/// accumulated in `double`, its logarithm taken in `float` as the reference does).
#[unsafe(no_mangle)]
pub extern "C" fn ggml_vec_log_soft_max_f32(n: c_int, y: *mut f32, x: *const f32, max: f32) -> f64 {
    // SAFETY: the C contract: `x` holds `n` floats and `y` room for them.
    let y = unsafe { copied(len(n), y, x) };
    let mut sum = 0.0f64;
    for v in y {
        *v -= max;
        sum += f64::from(v.exp());
    }
    f64::from((sum as f32).ln())
}

/// `y[i] = x[i] - mean`; returns the mean of their squares (the variance when `mean` is the
/// row's mean), accumulated in `double`.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_vec_cvar_f32(n: c_int, y: *mut f32, x: *const f32, mean: f32) -> f64 {
    // SAFETY: the C contract: `x` holds `n` floats and `y` room for them.
    let y = unsafe { copied(len(n), y, x) };
    RowMath::native().center(y, mean) / f64::from(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 29 % 61) as f32 - 30.0) * 0.21).collect()
    }

    #[test]
    fn rows_follow_their_formulas() {
        let x = row(37);
        let mut y = vec![0.0f32; 37];
        ggml_vec_silu_f32(37, y.as_mut_ptr(), x.as_ptr());
        for (a, b) in x.iter().zip(&y) {
            assert!((a / (1.0 + (-a).exp()) - b).abs() <= 1e-6 * b.abs().max(1.0));
        }

        let max = x.iter().cloned().fold(f32::MIN, f32::max);
        let sum = ggml_vec_soft_max_f32(37, y.as_mut_ptr(), x.as_ptr(), max);
        let want: f64 = x.iter().map(|&v| f64::from((v - max).exp())).sum();
        assert!((sum - want).abs() < 1e-5 * want);
        assert!((y[3] - (x[3] - max).exp()).abs() < 1e-6);

        // in place, as the reference allows
        let mut z = x.clone();
        let log_sum = ggml_vec_log_soft_max_f32(37, z.as_mut_ptr(), z.as_ptr(), max);
        assert!((log_sum - want.ln()).abs() < 1e-5);
        assert_eq!(z[5], x[5] - max);

        let mean = x.iter().sum::<f32>() / 37.0;
        let var = ggml_vec_cvar_f32(37, y.as_mut_ptr(), x.as_ptr(), mean);
        let want: f64 = x.iter().map(|&v| f64::from((v - mean) * (v - mean))).sum::<f64>() / 37.0;
        assert!((var - want).abs() < 1e-5 * want);
        assert_eq!(y[7], x[7] - mean);
        assert!(ggml_vec_cvar_f32(0, y.as_mut_ptr(), x.as_ptr(), 0.0).is_nan());
    }
}
