//! The integer tiles of the 32-value block formats (Q4_0 to Q8_0): R weight rows by C
//! activation rows of 32 byte levels and a binary16 scale per block, built three times, for
//! AVX2 (byte products summed with `maddubs` and `madd`) and for each `vpdpbusd` encoding
//! (AVX-VNNI, AVX512-VNNI with VL). The level ranges keep `maddubs` from saturating, so all
//! give the same integer sums and the same results; [`signed_tile`], [`offset_tile`] and
//! [`affine_tile`] run the ones this processor has.

/// The tiles of one instruction set: `$dot` sums four byte products per 32-bit lane.
macro_rules! int8_tiles {
    ($module:ident, $features:literal, |$a:ident, $b:ident| $dot:expr) => {
        pub(crate) mod $module {
            use std::arch::x86_64::*;

            use crate::cpu::kernels::simd::avx2::hsum;
            use crate::cpu::kernels::simd::avx2::scale;
            use crate::quants::half::Half;

            /// Sums of four products of unsigned bytes of `a` with signed bytes of `b`, per
            /// 32-bit lane.
            #[inline]
            #[target_feature(enable = $features)]
            fn dot4($a: __m256i, $b: __m256i) -> __m256i {
                $dot
            }

            /// R×C products of the weight `rows` (as many blocks of 32 signed levels with scales
            /// as the first has), the next tile's rows prefetched as it goes: `x(r, b)` and
            /// `y(c, b)` give block b of a row.
            // Rows and columns index the accumulator grid together.
            #[allow(clippy::needless_range_loop)]
            #[inline]
            #[target_feature(enable = $features)]
            pub fn signed_tile<T, const R: usize, const C: usize>(
                rows: &[&[T]; R],
                x: impl Fn(usize, usize) -> (__m256i, Half),
                y: impl Fn(usize, usize) -> (__m256i, Half),
            ) -> [[f32; C]; R] {
                let mut acc = [[_mm256_setzero_ps(); C]; R];
                let mut qx = [_mm256_setzero_si256(); R];
                let mut ax = [_mm256_setzero_si256(); R];
                let mut dx = [0.0f32; R];
                for b in 0..rows[0].len() {
                    crate::cpu::kernels::prefetch::next_tile(rows, b, 1);
                    for r in 0..R {
                        let (q, d) = x(r, b);
                        qx[r] = q;
                        // |x| as unsigned bytes; the sign moves onto y below.
                        ax[r] = _mm256_sign_epi8(q, q);
                        dx[r] = scale(d);
                    }
                    for c in 0..C {
                        let (qy, d) = y(c, b);
                        let dy = scale(d);
                        for r in 0..R {
                            let sy = _mm256_sign_epi8(qy, qx[r]);
                            let sums = dot4(ax[r], sy);
                            acc[r][c] =
                                _mm256_fmadd_ps(_mm256_set1_ps(dx[r] * dy), _mm256_cvtepi32_ps(sums), acc[r][c]);
                        }
                    }
                }
                let mut out = [[0.0f32; C]; R];
                for r in 0..R {
                    for c in 0..C {
                        out[r][c] = hsum(acc[r][c]);
                    }
                }
                out
            }

            /// As [`signed_tile`] for weights stored with an offset: `x(r, b)` gives unsigned levels
            /// `q` standing for `q - offset`. The unsigned levels go straight into the byte products;
            /// `offset·Σqy` is taken off once per column and block.
            // Rows and columns index the accumulator grid together.
            #[allow(clippy::needless_range_loop)]
            #[inline]
            #[target_feature(enable = $features)]
            pub fn offset_tile<T, const R: usize, const C: usize>(
                rows: &[&[T]; R],
                offset: i8,
                x: impl Fn(usize, usize) -> (__m256i, Half),
                y: impl Fn(usize, usize) -> (__m256i, Half),
            ) -> [[f32; C]; R] {
                let offsets = _mm256_set1_epi8(offset);
                let mut acc = [[_mm256_setzero_ps(); C]; R];
                let mut qx = [_mm256_setzero_si256(); R];
                let mut dx = [0.0f32; R];
                for b in 0..rows[0].len() {
                    crate::cpu::kernels::prefetch::next_tile(rows, b, 1);
                    for r in 0..R {
                        let (q, d) = x(r, b);
                        qx[r] = q;
                        dx[r] = scale(d);
                    }
                    for c in 0..C {
                        let (qy, d) = y(c, b);
                        let dy = scale(d);
                        let correction = dot4(offsets, qy);
                        for r in 0..R {
                            let sums = dot4(qx[r], qy);
                            let sums = _mm256_sub_epi32(sums, correction);
                            acc[r][c] =
                                _mm256_fmadd_ps(_mm256_set1_ps(dx[r] * dy), _mm256_cvtepi32_ps(sums), acc[r][c]);
                        }
                    }
                }
                let mut out = [[0.0f32; C]; R];
                for r in 0..R {
                    for c in 0..C {
                        out[r][c] = hsum(acc[r][c]);
                    }
                }
                out
            }

            /// As [`signed_tile`] for affine weights: `x(r, b)` gives unsigned levels, scale and
            /// minimum, `y(c, b)` signed levels, scale and `d·Σq`.
            // Rows and columns index the accumulator grid together.
            #[allow(clippy::needless_range_loop)]
            #[inline]
            #[target_feature(enable = $features)]
            pub fn affine_tile<T, const R: usize, const C: usize>(
                rows: &[&[T]; R],
                x: impl Fn(usize, usize) -> (__m256i, Half, Half),
                y: impl Fn(usize, usize) -> (__m256i, Half, Half),
            ) -> [[f32; C]; R] {
                let mut acc = [[_mm256_setzero_ps(); C]; R];
                let mut mins = [[0.0f32; C]; R];
                let mut qx = [_mm256_setzero_si256(); R];
                let mut dx = [0.0f32; R];
                let mut mx = [0.0f32; R];
                for b in 0..rows[0].len() {
                    crate::cpu::kernels::prefetch::next_tile(rows, b, 1);
                    for r in 0..R {
                        let (q, d, m) = x(r, b);
                        qx[r] = q;
                        dx[r] = scale(d);
                        mx[r] = scale(m);
                    }
                    for c in 0..C {
                        let (qy, d, s) = y(c, b);
                        let (dy, sy) = (scale(d), scale(s));
                        for r in 0..R {
                            let sums = dot4(qx[r], qy);
                            acc[r][c] =
                                _mm256_fmadd_ps(_mm256_set1_ps(dx[r] * dy), _mm256_cvtepi32_ps(sums), acc[r][c]);
                            // (m·s of two binary16 values is exact, so this is ggml's
                            // fused `summs += m·s` to the bit)
                            mins[r][c] += mx[r] * sy;
                        }
                    }
                }
                let mut out = [[0.0f32; C]; R];
                for r in 0..R {
                    for c in 0..C {
                        out[r][c] = hsum(acc[r][c]) + mins[r][c];
                    }
                }
                out
            }
        }
    };
}

int8_tiles!(tiles_avx2, "avx2,fma,f16c", |a, b| _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
int8_tiles!(tiles_vnni, "avx2,fma,f16c,avxvnni", |a, b| _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), a, b));
int8_tiles!(tiles_vnni512, "avx2,fma,f16c,avx512vnni,avx512vl", |a, b| _mm256_dpbusd_epi32(
    _mm256_setzero_si256(),
    a,
    b
));

use std::arch::x86_64::__m256i;

use crate::quants::half::Half;

/// `$tile($args)` of the tiles for this processor's `vpdpbusd` encoding, or of the AVX2
/// ones where it has none.
macro_rules! by_vnni {
    ($tile:ident($($args:expr),*)) => {
        match crate::cpu::features::features().vnni() {
            crate::cpu::features::Vnni::Vex => tiles_vnni::$tile($($args),*),
            crate::cpu::features::Vnni::Evex => tiles_vnni512::$tile($($args),*),
            crate::cpu::features::Vnni::None => tiles_avx2::$tile($($args),*),
        }
    };
}

/// # Safety
/// The processor supports AVX2, FMA and F16C.
pub unsafe fn signed_tile<T, const R: usize, const C: usize>(
    rows: &[&[T]; R],
    x: impl Fn(usize, usize) -> (__m256i, Half),
    y: impl Fn(usize, usize) -> (__m256i, Half),
) -> [[f32; C]; R] {
    // SAFETY: the caller vouches for AVX2, FMA and F16C; the VNNI encoding is checked.
    unsafe { by_vnni!(signed_tile(rows, x, y)) }
}

/// # Safety
/// The processor supports AVX2, FMA and F16C.
pub unsafe fn offset_tile<T, const R: usize, const C: usize>(
    rows: &[&[T]; R],
    offset: i8,
    x: impl Fn(usize, usize) -> (__m256i, Half),
    y: impl Fn(usize, usize) -> (__m256i, Half),
) -> [[f32; C]; R] {
    // SAFETY: as above.
    unsafe { by_vnni!(offset_tile(rows, offset, x, y)) }
}

/// # Safety
/// The processor supports AVX2, FMA and F16C.
pub unsafe fn affine_tile<T, const R: usize, const C: usize>(
    rows: &[&[T]; R],
    x: impl Fn(usize, usize) -> (__m256i, Half, Half),
    y: impl Fn(usize, usize) -> (__m256i, Half, Half),
) -> [[f32; C]; R] {
    // SAFETY: as above.
    unsafe { by_vnni!(affine_tile(rows, x, y)) }
}
