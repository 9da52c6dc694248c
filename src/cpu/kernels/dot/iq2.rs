//! `iq2_xxs`, `iq2_xs` and `iq2_s` · `q8_K`: groups of 8 values as points of a 2-bit grid.

use super::grids::grids;
use super::whole::{Whole, put_signed, whole_dot};
use crate::core::types::Type;
use crate::cpu::kernels::dot::VecDot;
use crate::quants::iq_grids::SEVEN_BIT_SIGNS;
use crate::quants::iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
use crate::quants::k_quants::{BlockQ8K, QK_K};

/// The sign and scale word of group `i` of an `iq2_xxs` block (after its four grid indices):
/// 4×7 sign bits, the 4-bit scale on top.
fn xxs_word(b: &BlockIq2Xxs, i: usize) -> u32 {
    let at = 8 * i + 4;
    u32::from_le_bytes([b.qs[at], b.qs[at + 1], b.qs[at + 2], b.qs[at + 3]])
}

/// The word of point `l` (0..32) of an `iq2_xs` block: 9-bit grid index, 7 sign bits above.
fn xs_word(b: &BlockIq2Xs, l: usize) -> u16 {
    u16::from_le_bytes([b.qs[2 * l], b.qs[2 * l + 1]])
}

/// The grid index of point `l` (0..32) of an `iq2_s` block: 8 bits from `qs`, 2 from `qh`.
fn s_index(b: &BlockIq2S, l: usize) -> usize {
    usize::from(b.qs[l]) | usize::from((b.qh[l / 4] >> (2 * (l % 4))) & 3) << 8
}

/// The odd multiplier 2s+1 of values 16j..16j+16, from the block's bytes of two 4-bit scales.
fn half_multiplier(scales: &[u8; QK_K / 32], j: usize) -> i32 {
    2 * i32::from((scales[j / 2] >> (4 * (j % 2))) & 0x0f) + 1
}

/// Whole values of the 2-bit grids: grid bytes 8, 25 or 43 with signs, multipliers 2s+1, the
/// fixed factor 1/8.
impl Whole for BlockIq2Xxs {
    const SUB: usize = 32;
    const MAX: i8 = 43;

    fn scale(&self) -> f32 {
        0.125 * self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        let grid = &grids().iq2_xxs;
        for (i, (out, m)) in bytes.chunks_exact_mut(32).zip(multipliers).enumerate() {
            let w = xxs_word(self, i);
            for (l, out) in out.chunks_exact_mut(8).enumerate() {
                put_signed(out, grid[usize::from(self.qs[8 * i + l])], SEVEN_BIT_SIGNS[(w >> (7 * l)) as usize & 127]);
            }
            *m = 2 * (w >> 28) as i32 + 1;
        }
    }
}

impl Whole for BlockIq2Xs {
    const SUB: usize = 16;
    const MAX: i8 = 43;

    fn scale(&self) -> f32 {
        0.125 * self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        let grid = &grids().iq2_xs;
        for (l, out) in bytes.chunks_exact_mut(8).enumerate() {
            let w = xs_word(self, l);
            put_signed(out, grid[usize::from(w & 511)], SEVEN_BIT_SIGNS[usize::from(w >> 9)]);
        }
        half_multipliers(&self.scales, multipliers);
    }
}

impl Whole for BlockIq2S {
    const SUB: usize = 16;
    const MAX: i8 = 43;

    fn scale(&self) -> f32 {
        0.125 * self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        let grid = &grids().iq2_s;
        for (l, out) in bytes.chunks_exact_mut(8).enumerate() {
            put_signed(out, grid[s_index(self, l)], self.qs[32 + l]);
        }
        half_multipliers(&self.scales, multipliers);
    }
}

/// The multipliers of each 16 values from the bytes of two 4-bit scales.
fn half_multipliers(scales: &[u8; QK_K / 32], multipliers: &mut [i32]) {
    for (j, m) in multipliers.iter_mut().enumerate() {
        *m = half_multiplier(scales, j);
    }
}

// SAFETY: the blocks are repr(C) byte arrays and Halfs.
unsafe impl VecDot for BlockIq2Xxs {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ2_XXS;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq2_xxs(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_COLS;
    const AVX512_VBMI: bool = true;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 with VBMI (and so AVX2, FMA and F16C).
        unsafe { avx512::iq2_xxs(x, y) }
    }
}

// SAFETY: as for BlockIq2Xxs.
unsafe impl VecDot for BlockIq2Xs {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ2_XS;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq2_xs(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_COLS;
    const AVX512_VBMI: bool = true;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 with VBMI (and so AVX2, FMA and F16C).
        unsafe { avx512::iq2_xs(x, y) }
    }
}

// SAFETY: as for BlockIq2Xxs.
unsafe impl VecDot for BlockIq2S {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ2_S;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq2_s(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_COLS;
    const AVX512_VBMI: bool = true;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 with VBMI (and so AVX2, FMA, F16C and BMI2,
        // which `has_avx512` includes).
        unsafe { avx512::iq2_s(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{
        Sub32, Weights32, entries4, half, load16, load32, multipliers16, q8k_tile, scales16, seven_bit_signs,
        signs_from_bits,
    };

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq2_xxs<const R: usize, const C: usize>(x: &[&[BlockIq2Xxs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 256] = &grids().iq2_xxs;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(b.d), ()),
            |b, _, i| {
                let w = xxs_word(b, i);
                let mag = entries4(grid, |l| usize::from(b.qs[8 * i + l]));
                Sub32 {
                    weights: Weights32::with_signs(mag, seven_bit_signs(|l| (w >> (7 * l)) as usize)),
                    scales: _mm256_set1_epi16(2 * (w >> 28) as i16 + 1),
                }
            },
        )
    }

    /// The 8 sign bits of each of an `iq2_xs` block's 32 groups, group l in byte l (so the
    /// 32 bits of values 32i..32i+32 in word i): the 7 stored above the grid index, and the
    /// eighth that makes their count even. All at once: table lookups per group cost more.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn xs_signs(b: &BlockIq2Xs) -> [u32; 8] {
        // 0x80 where a nibble has an odd count of set bits
        const ODD: [u8; 16] = [0, 0x80, 0x80, 0, 0x80, 0, 0, 0x80, 0x80, 0, 0, 0x80, 0, 0x80, 0x80, 0];
        let odd = _mm256_broadcastsi128_si256(load16(&ODD, 0));
        let full = |words: __m256i| {
            let stored = _mm256_srli_epi16::<9>(words);
            // bits 0..4 of stored ^ stored >> 4 have the parity of all 7 (`shuffle` reads
            // only those 4 bits of the low byte; the high byte is 0 and finds 0)
            let folded = _mm256_xor_si256(stored, _mm256_srli_epi16::<13>(words));
            _mm256_or_si256(stored, _mm256_shuffle_epi8(odd, folded))
        };
        let packed = _mm256_packus_epi16(full(load32(&b.qs, 0)), full(load32(&b.qs, 32)));
        let bytes = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
        // SAFETY: 32 bytes either way.
        unsafe { std::mem::transmute::<__m256i, [u32; 8]>(bytes) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq2_xs<const R: usize, const C: usize>(x: &[&[BlockIq2Xs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 512] = &grids().iq2_xs;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(b.d), (multipliers16(|j| half_multiplier(&b.scales, j)), xs_signs(b))),
            |b, (multipliers, signs), i| {
                let mag = entries4(grid, |l| usize::from(xs_word(b, 4 * i + l) & 511));
                Sub32 {
                    weights: Weights32::with_signs(mag, signs_from_bits(signs[i])),
                    scales: scales16(multipliers, i),
                }
            },
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq2_s<const R: usize, const C: usize>(x: &[&[BlockIq2S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 1024] = &grids().iq2_s;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(b.d), multipliers16(|j| half_multiplier(&b.scales, j))),
            |b, multipliers, i| {
                let mag = entries4(grid, |l| s_index(b, 4 * i + l));
                let s = &b.qs[32 + 4 * i..36 + 4 * i];
                let signs = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                Sub32 { weights: Weights32::with_signs(mag, signs_from_bits(signs)), scales: scales16(multipliers, i) }
            },
        )
    }
}

/// The tiles on AVX512-VBMI processors ([`vbmi_grids`](crate::cpu::kernels::x86::vbmi_grids)).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{deposited_indices, half, index_word};
    use crate::cpu::kernels::x86::vbmi_grids::{
        Chunk, Codes, chunk_multipliers, grid_codes, level_table, level_values, levels8, load64, odd_multipliers,
        q8k_tile, seven_bit_signs, sign_mask, stored_sign_mask, xxs_signs_and_multipliers,
    };
    use crate::quants::iq2::GRID_VALUES;

    /// The grid's three levels.
    static LEVELS: [u8; 64] = level_table(&GRID_VALUES, 4);

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn iq2_xxs<const R: usize, const C: usize>(x: &[&[BlockIq2Xxs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let codes = Codes::load(&grid_codes().iq2_xxs);
        let values = level_values(&LEVELS);
        q8k_tile(
            x,
            y,
            |b| {
                // per 32 values, a 64-bit lane: 4 index bytes, then the sign and scale word
                let q = load64(&b.qs, 0);
                let index = _mm512_cvtepu8_epi16(_mm512_cvtepi64_epi32(q));
                let (signs, multipliers) = xxs_signs_and_multipliers(_mm512_cvtepi64_epi32(_mm512_srli_epi64::<32>(q)));
                (0.125 * half(b.d), (codes.lookup(index), signs, multipliers))
            },
            |_, &(codes, signs, multipliers), k| Chunk {
                magnitudes: levels8(codes, k, values),
                negative: sign_mask(signs, k),
                multipliers: chunk_multipliers(multipliers, k, 32),
            },
        )
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn iq2_xs<const R: usize, const C: usize>(x: &[&[BlockIq2Xs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let codes = Codes::load(&grid_codes().iq2_xs);
        let values = level_values(&LEVELS);
        q8k_tile(
            x,
            y,
            |b| {
                // per 8 values, a 16-bit word: the 9-bit grid index, 7 sign bits above
                let words = load64(&b.qs, 0);
                let index = _mm512_and_si512(words, _mm512_set1_epi16(511));
                let signs = seven_bit_signs(_mm512_cvtepi16_epi8(_mm512_srli_epi16::<9>(words)));
                let signs = _mm512_castsi256_si512(signs);
                (0.125 * half(b.d), (codes.lookup(index), signs, odd_multipliers(&b.scales)))
            },
            |_, &(codes, signs, multipliers), k| Chunk {
                magnitudes: levels8(codes, k, values),
                negative: sign_mask(signs, k),
                multipliers: chunk_multipliers(multipliers, k, 16),
            },
        )
    }

    /// IQ2_S's 1024 points are too many for registers: each is loaded by its index. The
    /// indices of 4 points come from two bit deposits into the words of a `u64` (8 bits from
    /// `qs`, 2 from `qh`), which kept the scalar work small: on Zen 4 a hardware gather of 8
    /// points took ~19 cycles, and taking the indices out of a vector 32 `vpextrw`s a block
    /// (4096×14336 by 1, 1 thread: 4.8 ms gathered, 4.6 extracted, 3.2–4.0 deposited).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c,bmi2")]
    pub fn iq2_s<const R: usize, const C: usize>(x: &[&[BlockIq2S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid = &grids().iq2_s;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(b.d), odd_multipliers(&b.scales)),
            |b, &multipliers, k| {
                // points 4i..4i + 4: 2 high index bits each in `qh[i]`
                let words = |i: usize| deposited_indices(&b.qs, i, u64::from(b.qh[i]), 0x0300_0300_0300_0300);
                let (low, high) = (words(2 * k), words(2 * k + 1));
                let e = |w: u64, l: usize| grid[index_word::<1024>(w, l)] as i64;
                Chunk {
                    magnitudes: _mm512_set_epi64(
                        e(high, 3),
                        e(high, 2),
                        e(high, 1),
                        e(high, 0),
                        e(low, 3),
                        e(low, 2),
                        e(low, 1),
                        e(low, 0),
                    ),
                    negative: stored_sign_mask(&b.qs[32..], k),
                    multipliers: chunk_multipliers(multipliers, k, 16),
                }
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
    fn iq2_xxs_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq2Xxs>(n, "quantized", |s| quantized(&values(n, s), true), q8_k);
            let fix = |b: &mut BlockIq2Xxs| b.d = Half::from_f32(0.001);
            check_rows::<BlockIq2Xxs>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }

    #[test]
    fn iq2_xs_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq2Xs>(n, "quantized", |s| quantized(&values(n, s), true), q8_k);
            let fix = |b: &mut BlockIq2Xs| b.d = Half::from_f32(0.001);
            check_rows::<BlockIq2Xs>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }

    #[test]
    fn iq2_s_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq2S>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            let fix = |b: &mut BlockIq2S| b.d = Half::from_f32(0.001);
            check_rows::<BlockIq2S>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }
}
