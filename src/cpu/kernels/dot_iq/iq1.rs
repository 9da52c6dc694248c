//! `iq1_s` and `iq1_m` · `q8_K`: groups of 8 values as points of a ternary grid, shifted by
//! ±1/8. The sums are taken over 8·(g ± 1/8) = 8g ± 1, whole numbers in -9..=9, and the
//! product scaled by 1/8 at the end (ggml adds the shifts as a separate sum with the
//! activations' block sums: the same integers).

use super::grids::grids;
use super::{Whole, whole_dot};
use crate::core::types::Type;
use crate::cpu::kernels::dot::VecDot;
use crate::quants::half::Half;
use crate::quants::iq1::{BlockIq1M, BlockIq1S};
use crate::quants::k_quants::{BlockQ8K, QK_K};

/// Writes the 8 values 8g + shift of a point (`grid` its bytes 8g).
fn put_shifted(out: &mut [i8], grid: u64, shift: i8) {
    for (o, g) in out.iter_mut().zip(grid.to_le_bytes()) {
        *o = g as i8 + shift;
    }
}

/// The shift of a group: -1 (for -1/8) when its sign bit is set, else +1.
fn shift(negative: bool) -> i8 {
    if negative { -1 } else { 1 }
}

/// The `qh` word of group `i` of an `iq1_s` block: 4×3 high index bits, the 3-bit scale, the
/// shift sign on top.
fn s_word(b: &BlockIq1S, i: usize) -> u16 {
    u16::from_le_bytes([b.qh[2 * i], b.qh[2 * i + 1]])
}

/// The grid index of point `l` (0..4) of group `i` of an `iq1_s` block.
fn s_index(b: &BlockIq1S, i: usize, l: usize) -> usize {
    usize::from(b.qs[4 * i + l]) | usize::from((s_word(b, i) >> (3 * l)) & 7) << 8
}

/// The odd multiplier 2s+1 of group `i` of an `iq1_s` block.
fn s_scale(b: &BlockIq1S, i: usize) -> i32 {
    2 * i32::from((s_word(b, i) >> 12) & 7) + 1
}

/// The four little-endian scale words of an `iq1_m` block.
fn m_words(b: &BlockIq1M) -> [u16; 4] {
    std::array::from_fn(|k| u16::from_le_bytes([b.scales[2 * k], b.scales[2 * k + 1]]))
}

/// The binary16 super-block scale of an `iq1_m` block, spread over the top nibbles of its
/// scale words.
fn m_super_scale(sc: &[u16; 4]) -> Half {
    Half::from_bits(sc[0] >> 12 | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000))
}

/// The odd multiplier 2s+1 of values 16j..16j+16 of an `iq1_m` block: the scale words hold
/// four 3-bit scales each.
fn m_multiplier(sc: &[u16; 4], j: usize) -> i32 {
    2 * i32::from((sc[j / 4] >> (3 * (j % 4))) & 7) + 1
}

/// The nibble of `qh` of point `l` (0..4) of group `i` of an `iq1_m` block: 3 high index bits
/// and the shift sign.
fn m_nibble(b: &BlockIq1M, i: usize, l: usize) -> u8 {
    b.qh[2 * i + l / 2] >> (4 * (l % 2))
}

/// The grid index of point `l` (0..4) of group `i` of an `iq1_m` block.
fn m_index(b: &BlockIq1M, i: usize, l: usize) -> usize {
    usize::from(b.qs[4 * i + l]) | usize::from(m_nibble(b, i, l) & 7) << 8
}

/// Whole values of the ternary grids: 8g ± 1, multipliers 2s+1, the fixed factor 1/8.
impl Whole for BlockIq1S {
    const SUB: usize = 32;
    const MAX: i8 = 9;

    fn scale(&self) -> f32 {
        0.125 * self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        let grid = &grids().iq1_s;
        for (i, (out, m)) in bytes.chunks_exact_mut(32).zip(multipliers).enumerate() {
            let delta = shift(s_word(self, i) & 0x8000 != 0);
            for (l, out) in out.chunks_exact_mut(8).enumerate() {
                put_shifted(out, grid[s_index(self, i, l)], delta);
            }
            *m = s_scale(self, i);
        }
    }
}

impl Whole for BlockIq1M {
    const SUB: usize = 16;
    const MAX: i8 = 9;

    fn scale(&self) -> f32 {
        0.125 * m_super_scale(&m_words(self)).to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        let grid = &grids().iq1_s;
        let sc = m_words(self);
        for (i, (out, m)) in bytes.chunks_exact_mut(32).zip(multipliers.chunks_exact_mut(2)).enumerate() {
            for (l, out) in out.chunks_exact_mut(8).enumerate() {
                put_shifted(out, grid[m_index(self, i, l)], shift(m_nibble(self, i, l) & 8 != 0));
            }
            (m[0], m[1]) = (m_multiplier(&sc, 2 * i), m_multiplier(&sc, 2 * i + 1));
        }
    }
}

// SAFETY: the blocks are repr(C) byte arrays and Halfs.
unsafe impl VecDot for BlockIq1S {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ1_S;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq1_s(x, y) }
    }
}

// SAFETY: as for BlockIq1S.
unsafe impl VecDot for BlockIq1M {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ1_M;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq1_m(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::engine::{Sub32, Weights32, entries4, half, load16, multipliers16, q8k_tile, scales16};
    use super::*;

    /// The ±1 shifts of the 4 groups of a 32-value group of `iq1_m`, 8 bytes each, from its
    /// `qh` bits 3, 7, 11 and 15 (set: -1).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn m_shifts(qh: u16) -> __m256i {
        let bits = _mm256_set_epi64x(0x8000, 0x800, 0x80, 0x8);
        let negative = _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(i64::from(qh)), bits), bits);
        _mm256_or_si256(negative, _mm256_set1_epi8(1))
    }

    /// What the 8 groups of an `iq1_s` block take from their `qh` words besides index bits,
    /// each as 4 bytes to broadcast (a broadcast load is a single load; decoding them one
    /// group at a time cost some 9 instructions a group).
    struct Groups {
        /// The multiplier 2s+1 in both 16-bit halves.
        multipliers: [u32; 8],
        /// The shift ±1 in all 4 bytes.
        shifts: [u32; 8],
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn s_groups(b: &BlockIq1S) -> Groups {
        let words = _mm256_cvtepu16_epi32(load16(&b.qh, 0));
        let multiplier = _mm256_or_si256(
            _mm256_and_si256(_mm256_srli_epi32::<11>(words), _mm256_set1_epi32(0xe)),
            _mm256_set1_epi32(1),
        );
        let negative = _mm256_srai_epi32::<31>(_mm256_slli_epi32::<16>(words));
        let mut groups = Groups { multipliers: [0; 8], shifts: [0; 8] };
        // SAFETY: each array holds the 32 bytes stored.
        unsafe {
            _mm256_storeu_si256(
                groups.multipliers.as_mut_ptr().cast(),
                _mm256_or_si256(multiplier, _mm256_slli_epi32::<16>(multiplier)),
            );
            _mm256_storeu_si256(groups.shifts.as_mut_ptr().cast(), _mm256_or_si256(negative, _mm256_set1_epi8(1)));
        }
        groups
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq1_s<const R: usize, const C: usize>(x: &[&[BlockIq1S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 2048] = &grids().iq1_s;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(b.d), s_groups(b)),
            |b, groups, i| {
                let g = entries4(grid, |l| s_index(b, i, l));
                Sub32 {
                    weights: Weights32::signed(_mm256_add_epi8(g, _mm256_set1_epi32(groups.shifts[i] as i32))),
                    scales: _mm256_set1_epi32(groups.multipliers[i] as i32),
                }
            },
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq1_m<const R: usize, const C: usize>(x: &[&[BlockIq1M]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 2048] = &grids().iq1_s;
        q8k_tile(
            x,
            y,
            |b| {
                let sc = m_words(b);
                let multipliers = multipliers16(|j| m_multiplier(&sc, j));
                (0.125 * half(m_super_scale(&sc)), multipliers)
            },
            |b, multipliers, i| {
                let qh = u16::from_le_bytes([b.qh[2 * i], b.qh[2 * i + 1]]);
                let g = entries4(grid, |l| m_index(b, i, l));
                Sub32 { weights: Weights32::signed(_mm256_add_epi8(g, m_shifts(qh))), scales: scales16(multipliers, i) }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_k, quantized, random, values};
    use super::*;

    #[test]
    fn iq1_s_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq1S>(n, "quantized", |s| quantized(&values(n, s), true), q8_k);
            let fix = |b: &mut BlockIq1S| b.d = Half::from_f32(0.001);
            check_rows::<BlockIq1S>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }

    #[test]
    fn iq1_m_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq1M>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            // the super-block scale 0x1400 (≈0.001) in the top nibbles of the scale words
            let fix = |b: &mut BlockIq1M| {
                for (k, nibble) in [0u8, 0, 4, 1].into_iter().enumerate() {
                    b.scales[2 * k + 1] = (b.scales[2 * k + 1] & 0x0f) | nibble << 4;
                }
            };
            check_rows::<BlockIq1M>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }
}
