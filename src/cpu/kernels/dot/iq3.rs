//! `iq3_xxs` · `q8_K` and `iq3_s` · `q8_K`: groups of 4 values as points of a 3-bit grid.

use super::grids::grids;
use super::whole::{Whole, put_signed, whole_dot};
use crate::core::types::Type;
use crate::cpu::kernels::dot::VecDot;
use crate::quants::iq_grids::SEVEN_BIT_SIGNS;
use crate::quants::iq3::{BlockIq3S, BlockIq3Xxs};
use crate::quants::k_quants::{BlockQ8K, QK_K};

/// Two 4-value grid points as the 8 value bytes of a group.
fn pair(first: u32, second: u32) -> u64 {
    u64::from(first) | u64::from(second) << 32
}

/// The sign and scale word of group `i` of an `iq3_xxs` block: 4×7 sign bits, the 4-bit scale
/// on top.
fn xxs_word(b: &BlockIq3Xxs, i: usize) -> u32 {
    let at = 64 + 4 * i;
    u32::from_le_bytes([b.qs[at], b.qs[at + 1], b.qs[at + 2], b.qs[at + 3]])
}

/// The grid index of point `k` (0..8) of group `i` of an `iq3_s` block: 8 bits from `qs`, the
/// ninth from `qh`.
fn s_index(b: &BlockIq3S, i: usize, k: usize) -> usize {
    usize::from(b.qs[8 * i + k]) | usize::from((b.qh[i] >> k) & 1) << 8
}

/// The odd multiplier 2s+1 of group `i` of an `iq3_s` block.
fn s_scale(b: &BlockIq3S, i: usize) -> i32 {
    2 * i32::from((b.scales[i / 2] >> (4 * (i % 2))) & 0x0f) + 1
}

/// Whole values of the 3-bit grids: odd multipliers 2s+1, the fixed factor 1/4 for IQ3_XXS.
impl Whole for BlockIq3Xxs {
    const SUB: usize = 32;
    const MAX: i8 = 62;

    fn scale(&self) -> f32 {
        0.25 * self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        let grid = &grids().iq3_xxs;
        for (i, (out, m)) in bytes.chunks_exact_mut(32).zip(multipliers).enumerate() {
            let w = xxs_word(self, i);
            for (l, out) in out.chunks_exact_mut(8).enumerate() {
                let at = 8 * i + 2 * l;
                let g = pair(grid[usize::from(self.qs[at])], grid[usize::from(self.qs[at + 1])]);
                put_signed(out, g, SEVEN_BIT_SIGNS[(w >> (7 * l)) as usize & 127]);
            }
            *m = 2 * (w >> 28) as i32 + 1;
        }
    }
}

impl Whole for BlockIq3S {
    const SUB: usize = 32;
    const MAX: i8 = 15;

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        let grid = &grids().iq3_s;
        for (i, (out, m)) in bytes.chunks_exact_mut(32).zip(multipliers).enumerate() {
            for (l, out) in out.chunks_exact_mut(8).enumerate() {
                let g = pair(grid[s_index(self, i, 2 * l)], grid[s_index(self, i, 2 * l + 1)]);
                put_signed(out, g, self.signs[4 * i + l]);
            }
            *m = s_scale(self, i);
        }
    }
}

// SAFETY: the blocks are repr(C) byte arrays and Halfs.
unsafe impl VecDot for BlockIq3Xxs {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ3_XXS;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq3_xxs(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_COLS;
    const AVX512_VBMI: bool = true;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 with VBMI (and so AVX2, FMA and F16C).
        unsafe { avx512::iq3_xxs(x, y) }
    }
}

// SAFETY: as for BlockIq3Xxs.
unsafe impl VecDot for BlockIq3S {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ3_S;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq3_s(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_COLS;
    const AVX512_VBMI: bool = true;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 with VBMI (and so AVX2, FMA and F16C).
        unsafe { avx512::iq3_s(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{Sub32, Weights32, half, q8k_tile, seven_bit_signs, signs_from_bits};

    /// Eight 4-value grid points, point k giving values 4k..4k+4. (A fixed-size table lets the
    /// bounds checks go for indices whose bits cannot exceed it.)
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn points<const N: usize>(grid: &[u32; N], index: impl Fn(usize) -> usize) -> __m256i {
        let p = |k: usize| grid[index(k)] as i32;
        _mm256_set_epi32(p(7), p(6), p(5), p(4), p(3), p(2), p(1), p(0))
    }

    /// The eight grid points of group `i` of an `iq3_s` block, gathered: indices from the
    /// low bytes in `qs` and the ninth bits in `qh[i]` (bit k for point k).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn s_points(grid: &[u32; 512], b: &BlockIq3S, i: usize) -> __m256i {
        let low = &b.qs[8 * i..8 * i + 8];
        // SAFETY: `low` holds the 8 bytes read.
        let low = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(low.as_ptr().cast()) });
        let ninth = _mm256_sllv_epi32(_mm256_set1_epi32(i32::from(b.qh[i])), _mm256_set_epi32(1, 2, 3, 4, 5, 6, 7, 8));
        let index = _mm256_or_si256(low, _mm256_and_si256(ninth, _mm256_set1_epi32(256)));
        // SAFETY: every index is below 512, the grid's length.
        unsafe { _mm256_i32gather_epi32::<4>(grid.as_ptr().cast(), index) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq3_xxs<const R: usize, const C: usize>(x: &[&[BlockIq3Xxs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u32; 256] = &grids().iq3_xxs;
        q8k_tile(
            x,
            y,
            |b| (0.25 * half(b.d), ()),
            |b, _, i| {
                let w = xxs_word(b, i);
                let mag = points(grid, |k| usize::from(b.qs[8 * i + k]));
                Sub32 {
                    weights: Weights32::with_signs(mag, seven_bit_signs(|l| (w >> (7 * l)) as usize)),
                    scales: _mm256_set1_epi16(2 * (w >> 28) as i16 + 1),
                }
            },
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq3_s<const R: usize, const C: usize>(x: &[&[BlockIq3S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u32; 512] = &grids().iq3_s;
        q8k_tile(
            x,
            y,
            |b| (half(b.d), ()),
            |b, _, i| {
                let mag = s_points(grid, b, i);
                let s = &b.signs[4 * i..4 * i + 4];
                let signs = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                Sub32 {
                    weights: Weights32::with_signs(mag, signs_from_bits(signs)),
                    scales: _mm256_set1_epi16(s_scale(b, i) as i16),
                }
            },
        )
    }
}

/// The tiles on AVX512-VBMI processors ([`vbmi_grids`](crate::cpu::kernels::x86::vbmi_grids)).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{half, load32};
    use crate::cpu::kernels::x86::vbmi_grids::{
        Chunk, Codes, chunk_multipliers, grid_codes, index_high_bits, level_table, level_values, levels4, load64,
        odd_multipliers, q8k_tile, sign_mask, stored_sign_mask, xxs_signs_and_multipliers,
    };
    use crate::quants::iq3::XXS_VALUES;

    static XXS_LEVELS: [u8; 64] = level_table(&XXS_VALUES, 8);
    /// IQ3_S's levels: the odd numbers 1..15.
    static S_LEVELS: [u8; 64] = level_table(&[1, 3, 5, 7, 9, 11, 13, 15], 8);

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn iq3_xxs<const R: usize, const C: usize>(x: &[&[BlockIq3Xxs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let codes = Codes::load(&grid_codes().iq3_xxs);
        let values = level_values(&XXS_LEVELS);
        q8k_tile(
            x,
            y,
            |b| {
                // 64 index bytes, then a sign and scale word per 32 values
                let q = load64(&b.qs, 0);
                let low = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(q));
                let high = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64::<1>(q));
                let (signs, multipliers) = xxs_signs_and_multipliers(load32(&b.qs, 64));
                (0.25 * half(b.d), ([codes.lookup(low), codes.lookup(high)], signs, multipliers))
            },
            |_, (codes, signs, multipliers), k| Chunk {
                magnitudes: levels4(codes, k, values),
                negative: sign_mask(*signs, k),
                multipliers: chunk_multipliers(*multipliers, k, 32),
            },
        )
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn iq3_s<const R: usize, const C: usize>(x: &[&[BlockIq3S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let codes = Codes::load(&grid_codes().iq3_s);
        let values = level_values(&S_LEVELS);
        q8k_tile(
            x,
            y,
            |b| {
                let index = |h: usize| {
                    let low = _mm512_cvtepu8_epi16(load32(&b.qs, 32 * h));
                    codes.lookup(_mm512_or_si512(low, index_high_bits(&b.qh, 4 * h, 1)))
                };
                (half(b.d), ([index(0), index(1)], odd_multipliers(&b.scales)))
            },
            |b, (codes, multipliers), k| Chunk {
                magnitudes: levels4(codes, k, values),
                negative: stored_sign_mask(&b.signs, k),
                multipliers: chunk_multipliers(*multipliers, k, 32),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_k, quantized, random, values};
    use super::*;
    use crate::quants::half::Half;

    #[test]
    fn iq3_xxs_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq3Xxs>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            let fix = |b: &mut BlockIq3Xxs| b.d = Half::from_f32(0.001);
            check_rows::<BlockIq3Xxs>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }

    #[test]
    fn iq3_s_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq3S>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            let fix = |b: &mut BlockIq3S| b.d = Half::from_f32(0.001);
            check_rows::<BlockIq3S>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }
}
