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

/// The odd multipliers 2s+1 of the two halves of group `i` of an `iq1_m` block.
fn m_scales(sc: &[u16; 4], i: usize) -> (i32, i32) {
    let s = sc[i / 2] >> (6 * (i % 2));
    (2 * i32::from(s & 7) + 1, 2 * i32::from((s >> 3) & 7) + 1)
}

/// The grid index and shift of point `l` (0..4) of group `i` of an `iq1_m` block, from its
/// nibble of `qh`: 3 high index bits and the shift sign.
fn m_point(b: &BlockIq1M, i: usize, l: usize) -> (usize, i8) {
    let nibble = b.qh[2 * i + l / 2] >> (4 * (l % 2));
    (usize::from(b.qs[4 * i + l]) | usize::from(nibble & 7) << 8, shift(nibble & 8 != 0))
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
                let (index, delta) = m_point(self, i, l);
                put_shifted(out, grid[index], delta);
            }
            (m[0], m[1]) = m_scales(&sc, i);
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

    use super::super::engine::{Sub32, Weights32, half, q8k_tile, scales16};
    use super::*;

    /// Four grid points, point l giving values 8l..8l+8. (The fixed-size table lets the bounds
    /// checks go: indices have 11 bits.)
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn points(grid: &[u64; 2048], index: impl Fn(usize) -> usize) -> __m256i {
        let p = |l: usize| grid[index(l)] as i64;
        _mm256_set_epi64x(p(3), p(2), p(1), p(0))
    }

    /// A shift of ±1 in each of the 8 bytes of a group.
    fn shift_bytes(shift: i8) -> i64 {
        (shift as u8 as u64 * 0x0101_0101_0101_0101) as i64
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq1_s<const R: usize, const C: usize>(x: &[&[BlockIq1S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 2048] = &grids().iq1_s;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(b.d), ()),
            |b, _, i| {
                let g = points(grid, |l| s_index(b, i, l));
                let delta = shift(s_word(b, i) & 0x8000 != 0);
                Sub32 {
                    weights: Weights32::signed(_mm256_add_epi8(g, _mm256_set1_epi8(delta))),
                    scales: _mm256_set1_epi16(s_scale(b, i) as i16),
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
                (0.125 * half(m_super_scale(&sc)), sc)
            },
            |b, sc, i| {
                let p = [m_point(b, i, 0), m_point(b, i, 1), m_point(b, i, 2), m_point(b, i, 3)];
                let g = points(grid, |l| p[l].0);
                let d = |l: usize| shift_bytes(p[l].1);
                let (ls1, ls2) = m_scales(sc, i);
                Sub32 {
                    weights: Weights32::signed(_mm256_add_epi8(g, _mm256_set_epi64x(d(3), d(2), d(1), d(0)))),
                    scales: scales16(ls1 as i16, ls2 as i16),
                }
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
