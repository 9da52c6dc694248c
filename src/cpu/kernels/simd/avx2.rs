//! The AVX2/FMA/F16C versions of [`simd`](crate::cpu::kernels::simd)'s row helpers, plus the
//! register-level pieces other kernels build on (loads of 8 values of each float format,
//! horizontal sums).
//!
//! Every function here requires AVX2, FMA and F16C: call them only after
//! [`Features::has_avx2_fma`](crate::cpu::features::Features::has_avx2_fma) said
//! yes (calling them is `unsafe` outside functions with the same target features).

use std::arch::x86_64::*;

use super::scalar;
use crate::quants::half::{Bf16, Half};

/// Sum of the 8 lanes.
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn hsum(v: __m256) -> f32 {
    let lo = _mm256_castps256_ps128(v);
    let hi = _mm256_extractf128_ps::<1>(v);
    let s = _mm_add_ps(lo, hi);
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// Sum of the 8 `i32` lanes.
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn hsum_i32(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

/// 8 `f32` from `p`.
///
/// # Safety
/// `p` is valid for reading 8 `f32` (no alignment needed); the processor supports AVX2,
/// FMA and F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn load_f32(p: *const f32) -> __m256 {
    // SAFETY: the caller's contract.
    unsafe { _mm256_loadu_ps(p) }
}

/// 8 binary16 values from `p`, widened to `f32`.
///
/// # Safety
/// `p` is valid for reading 8 `u16` (no alignment needed); the processor supports AVX2,
/// FMA and F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn load_f16(p: *const u16) -> __m256 {
    // SAFETY: the caller's contract; 8 u16 are 16 bytes.
    _mm256_cvtph_ps(unsafe { _mm_loadu_si128(p.cast()) })
}

/// 8 bfloat16 values from `p`, widened to `f32`.
///
/// # Safety
/// `p` is valid for reading 8 `Bf16` (no alignment needed); the processor supports AVX2,
/// FMA and F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn load_bf16(p: *const Bf16) -> __m256 {
    // SAFETY: the caller's contract; Bf16 is a transparent u16, 8 of them are 16 bytes.
    let raw = unsafe { _mm_loadu_si128(p.cast()) };
    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(raw)))
}

/// Generic dot product over rows of 8-value vectors: `load(i)` reads values `i..i + 8` of
/// both rows (it is asked only for `i + 8 <= n`), `tail(i)` sums the products from `i` on.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn dot_with(n: usize, load: impl Fn(usize) -> (__m256, __m256), tail: impl Fn(usize) -> f32) -> f32 {
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (k, a) in acc.iter_mut().enumerate() {
            let (x, y) = load(i + 8 * k);
            *a = _mm256_fmadd_ps(x, y, *a);
        }
        i += 32;
    }
    while i + 8 <= n {
        let (x, y) = load(i);
        acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
        i += 8;
    }
    let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    hsum(sum) + tail(i)
}

/// The AVX2 version of [`dot_f32`](crate::cpu::kernels::simd::dot_f32).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn dot_f32(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let (px, py) = (x.as_ptr(), y.as_ptr());
    dot_with(
        n,
        // SAFETY: `dot_with` asks only for indices i with i + 8 <= n, inside both rows.
        |i| unsafe { (load_f32(px.add(i)), load_f32(py.add(i))) },
        |i| scalar::dot_f32(&x[i..n], &y[i..n]),
    )
}

/// The AVX2 version of [`dot_f16`](crate::cpu::kernels::simd::dot_f16).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn dot_f16(x: &[u16], y: &[u16]) -> f32 {
    let n = x.len().min(y.len());
    let (px, py) = (x.as_ptr(), y.as_ptr());
    dot_with(
        n,
        // SAFETY: `dot_with` asks only for indices i with i + 8 <= n, inside both rows.
        |i| unsafe { (load_f16(px.add(i)), load_f16(py.add(i))) },
        |i| scalar::dot_f16(&x[i..n], &y[i..n]),
    )
}

/// The AVX2 version of [`dot_bf16`](crate::cpu::kernels::simd::dot_bf16).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn dot_bf16(x: &[Bf16], y: &[Bf16]) -> f32 {
    let n = x.len().min(y.len());
    let (px, py) = (x.as_ptr(), y.as_ptr());
    dot_with(
        n,
        // SAFETY: `dot_with` asks only for indices i with i + 8 <= n, inside both rows.
        |i| unsafe { (load_bf16(px.add(i)), load_bf16(py.add(i))) },
        |i| scalar::dot_bf16(&x[i..n], &y[i..n]),
    )
}

/// The AVX2 version of [`axpy_f32`](crate::cpu::kernels::simd::axpy_f32).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn axpy_f32(y: &mut [f32], x: &[f32], a: f32) {
    let n = x.len().min(y.len());
    let va = _mm256_set1_ps(a);
    let (px, py) = (x.as_ptr(), y.as_mut_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, inside both rows; `y` is borrowed mutably and does not
        // overlap `x` (Rust's borrow rules).
        unsafe {
            let v = _mm256_fmadd_ps(load_f32(px.add(i)), va, load_f32(py.add(i)));
            _mm256_storeu_ps(py.add(i), v);
        }
        i += 8;
    }
    scalar::axpy_f32(&mut y[i..n], &x[i..n], a);
}

/// The AVX2 version of [`scale_f32`](crate::cpu::kernels::simd::scale_f32).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn scale_f32(y: &mut [f32], a: f32) {
    let n = y.len();
    let va = _mm256_set1_ps(a);
    let py = y.as_mut_ptr();
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, inside the row.
        unsafe { _mm256_storeu_ps(py.add(i), _mm256_mul_ps(load_f32(py.add(i)), va)) };
        i += 8;
    }
    scalar::scale_f32(&mut y[i..], a);
}

/// The AVX2 version of [`sum_f32`](crate::cpu::kernels::simd::sum_f32).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn sum_f32(x: &[f32]) -> f32 {
    let n = x.len();
    let px = x.as_ptr();
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: i + 8k + 8 <= i + 32 <= n, inside the row.
            *a = _mm256_add_ps(*a, unsafe { load_f32(px.add(i + 8 * k)) });
        }
        i += 32;
    }
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, inside the row.
        acc[0] = _mm256_add_ps(acc[0], unsafe { load_f32(px.add(i)) });
        i += 8;
    }
    let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    hsum(sum) + scalar::sum_f32(&x[i..])
}

/// The AVX2 version of [`fp16_to_f32_row`](crate::cpu::kernels::simd::fp16_to_f32_row).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn fp16_to_f32_row(x: &[u16], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let (px, py) = (x.as_ptr(), y.as_mut_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, inside both rows.
        unsafe { _mm256_storeu_ps(py.add(i), load_f16(px.add(i))) };
        i += 8;
    }
    scalar::fp16_to_f32_row(&x[i..n], &mut y[i..n]);
}

/// The AVX2 version of [`f32_to_fp16_row`](crate::cpu::kernels::simd::f32_to_fp16_row).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn f32_to_fp16_row(x: &[f32], y: &mut [u16]) {
    let n = x.len().min(y.len());
    let (px, py) = (x.as_ptr(), y.as_mut_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, inside both rows; 8 u16 are the 16 bytes stored.
        unsafe {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(load_f32(px.add(i)));
            _mm_storeu_si128(py.add(i).cast(), h);
        }
        i += 8;
    }
    scalar::f32_to_fp16_row(&x[i..n], &mut y[i..n]);
}

/// The AVX2 version of [`bf16_to_f32_row`](crate::cpu::kernels::simd::bf16_to_f32_row).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn bf16_to_f32_row(x: &[Bf16], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let (px, py) = (x.as_ptr(), y.as_mut_ptr());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, inside both rows.
        unsafe { _mm256_storeu_ps(py.add(i), load_bf16(px.add(i))) };
        i += 8;
    }
    scalar::bf16_to_f32_row(&x[i..n], &mut y[i..n]);
}

/// The AVX2 version of [`f32_to_bf16_row`](crate::cpu::kernels::simd::f32_to_bf16_row).
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn f32_to_bf16_row(x: &[f32], y: &mut [Bf16]) {
    let n = x.len().min(y.len());
    let (px, py) = (x.as_ptr(), y.as_mut_ptr());
    let abs_mask = _mm256_set1_epi32(0x7fff_ffff);
    let inf = _mm256_set1_epi32(0x7f80_0000);
    let bias = _mm256_set1_epi32(0x7fff);
    let one = _mm256_set1_epi32(1);
    let quiet = _mm256_set1_epi32(0x40);
    let mut i = 0;
    while i + 16 <= n {
        let round = |v: __m256i| {
            // Round to nearest even on the dropped half; NaNs keep their top bits, quieted.
            let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(v), one);
            let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(v, _mm256_add_epi32(bias, lsb)));
            let nan_bits = _mm256_or_si256(_mm256_srli_epi32::<16>(v), quiet);
            let is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(v, abs_mask), inf);
            _mm256_blendv_epi8(rounded, nan_bits, is_nan)
        };
        // SAFETY: i + 16 <= n, inside both rows; 16 Bf16 are the 32 bytes stored.
        unsafe {
            let a = round(_mm256_castps_si256(load_f32(px.add(i))));
            let b = round(_mm256_castps_si256(load_f32(px.add(i + 8))));
            // packus works within 128-bit lanes: put the quarters back in order.
            let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(a, b));
            _mm256_storeu_si256(py.add(i).cast(), packed);
        }
        i += 16;
    }
    scalar::f32_to_bf16_row(&x[i..n], &mut y[i..n]);
}

/// A binary16 scale as `f32`.
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn scale(h: Half) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(h.bits()))))
}

/// The 32 bytes of a block's levels.
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn load32(qs: &[u8; 32]) -> __m256i {
    // SAFETY: the array holds the 32 bytes read.
    unsafe { _mm256_loadu_si256(qs.as_ptr().cast()) }
}
