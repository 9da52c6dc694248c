//! F32, F16 and BF16 rows: products summed in `f32` vector lanes (the scalar references in
//! `simd::scalar` sum in `f64`, as ggml's scalar code does). The AVX2 tiles are
//! [`avx2::float_tile`] over each format's 8-value loads; the AVX-512 tiles are in [`avx512`].

#[cfg(target_arch = "x86_64")]
mod avx512;

use super::VecDot;
use crate::core::types::Type;
use crate::cpu::kernels::simd;
use crate::quants::half::Bf16;

// SAFETY: f32 is plain data.
unsafe impl VecDot for f32 {
    type Rhs = f32;
    const TYPE: Type = Type::F32;
    const VEC_DOT_TYPE: Type = Type::F32;
    const QK: usize = 1;

    fn dot_scalar(x: &[f32], y: &[f32]) -> f32 {
        simd::scalar::dot_f32(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = avx512::FLOAT_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[f32]; R], y: &[&[f32]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { avx512::f32_tile(x, y) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[f32]; R], y: &[&[f32]; C]) -> [[f32; C]; R] {
        if R * C == 1 {
            // SAFETY: the caller vouches for AVX2.
            return [[unsafe { crate::cpu::kernels::simd::avx2::dot_f32(x[0], y[0]) }; C]; R];
        }
        // SAFETY: the caller vouches for AVX2; the loads stay below n (see `float_tile`), the
        // length of every row.
        unsafe {
            avx2::float_tile::<_, R, C>(
                x,
                |r, i| crate::cpu::kernels::simd::avx2::load_f32(x[r].as_ptr().add(i)),
                |c, i| crate::cpu::kernels::simd::avx2::load_f32(y[c].as_ptr().add(i)),
                |r, c, i| simd::scalar::dot_f32(&x[r][i..], &y[c][i..]),
            )
        }
    }
}

/// Binary16 rows are `u16` bit patterns (`ggml_fp16_t`).
// SAFETY: u16 is plain data.
unsafe impl VecDot for u16 {
    type Rhs = u16;
    const TYPE: Type = Type::F16;
    const VEC_DOT_TYPE: Type = Type::F16;
    const QK: usize = 1;

    fn dot_scalar(x: &[u16], y: &[u16]) -> f32 {
        simd::scalar::dot_f16(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = avx512::FLOAT_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[u16]; R], y: &[&[u16]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { avx512::f16_tile(x, y) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[u16]; R], y: &[&[u16]; C]) -> [[f32; C]; R] {
        if R * C == 1 {
            // SAFETY: the caller vouches for AVX2.
            return [[unsafe { crate::cpu::kernels::simd::avx2::dot_f16(x[0], y[0]) }; C]; R];
        }
        // SAFETY: as for f32.
        unsafe {
            avx2::float_tile::<_, R, C>(
                x,
                |r, i| crate::cpu::kernels::simd::avx2::load_f16(x[r].as_ptr().add(i)),
                |c, i| crate::cpu::kernels::simd::avx2::load_f16(y[c].as_ptr().add(i)),
                |r, c, i| simd::scalar::dot_f16(&x[r][i..], &y[c][i..]),
            )
        }
    }
}

// SAFETY: Bf16 is a repr(C) u16.
unsafe impl VecDot for Bf16 {
    type Rhs = Bf16;
    const TYPE: Type = Type::BF16;
    const VEC_DOT_TYPE: Type = Type::BF16;
    const QK: usize = 1;

    fn dot_scalar(x: &[Bf16], y: &[Bf16]) -> f32 {
        simd::scalar::dot_bf16(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = avx512::FLOAT_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { avx512::bf16_tile(x, y) }
    }

    /// As ggml's `ggml_vec_dot_bf16` sums them where ggml takes it: for one column, and for
    /// rows that are not whole steps of tinyBLAS's 32 values.
    fn by_columns(n: usize, cols: usize) -> bool {
        cols == 1 || !n.is_multiple_of(32)
    }

    /// One column, as ggml's `ggml_vec_dot_bf16` sums it, where the processor has
    /// AVX512-BF16; the tiles otherwise.
    #[cfg(target_arch = "x86_64")]
    unsafe fn column_avx512(x: &[&[Bf16]], y: &[Bf16], out: &mut [f32]) {
        let pairs = crate::cpu::features::features().avx512bf16;
        for (row, out) in x.iter().zip(out) {
            // SAFETY: the caller vouches for AVX-512, AVX512-BF16 was checked; rows and
            // column have the same length (`column_on` checked).
            *out = unsafe {
                if pairs { avx512::bf16_vec_dot(row, y) } else { Self::tile_avx512::<1, 1>(&[row], &[y])[0][0] }
            };
        }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
        if R * C == 1 {
            // SAFETY: the caller vouches for AVX2.
            return [[unsafe { crate::cpu::kernels::simd::avx2::dot_bf16(x[0], y[0]) }; C]; R];
        }
        // SAFETY: as for f32.
        unsafe {
            avx2::float_tile::<_, R, C>(
                x,
                |r, i| crate::cpu::kernels::simd::avx2::load_bf16(x[r].as_ptr().add(i)),
                |c, i| crate::cpu::kernels::simd::avx2::load_bf16(y[c].as_ptr().add(i)),
                |r, c, i| simd::scalar::dot_bf16(&x[r][i..], &y[c][i..]),
            )
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    use crate::cpu::kernels::simd::avx2::hsum;

    /// R×C products of the weight `rows` (of `n` values, the first row's length), the next
    /// tile's rows prefetched as it goes: `load_x(r, i)` and `load_y(c, i)` read 8 values at
    /// `i` (asked only for `i + 8 <= n`), `tail(r, c, i)` adds the products from `i`.
    // Rows and columns index the accumulator grid together.
    #[allow(clippy::needless_range_loop)]
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn float_tile<T, const R: usize, const C: usize>(
        rows: &[&[T]; R],
        load_x: impl Fn(usize, usize) -> __m256,
        load_y: impl Fn(usize, usize) -> __m256,
        tail: impl Fn(usize, usize, usize) -> f32,
    ) -> [[f32; C]; R] {
        let n = rows[0].len();
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let mut xv = [_mm256_setzero_ps(); R];
        let mut i = 0;
        while i + 8 <= n {
            crate::cpu::kernels::prefetch::next_tile(rows, i, 8);
            for (r, v) in xv.iter_mut().enumerate() {
                *v = load_x(r, i);
            }
            for c in 0..C {
                let yv = load_y(c, i);
                for r in 0..R {
                    acc[r][c] = _mm256_fmadd_ps(xv[r], yv, acc[r][c]);
                }
            }
            i += 8;
        }
        let mut out = [[0.0f32; C]; R];
        for r in 0..R {
            for c in 0..C {
                out[r][c] = hsum(acc[r][c]) + if i < n { tail(r, c, i) } else { 0.0 };
            }
        }
        out
    }
}
