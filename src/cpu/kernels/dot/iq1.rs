//! `iq1_s` and `iq1_m` · `q8_K`: groups of 8 values as points of a ternary grid, shifted by
//! ±1/8. The sums are taken over 8·(g ± 1/8) = 8g ± 1, whole numbers in -9..=9, and the
//! product scaled by 1/8 at the end (ggml adds the shifts as a separate sum with the
//! activations' block sums: the same integers). On AVX-512 VNNI processors the values go
//! in raised by 9, unsigned, to `vpdpbusd` (4096² by 1, one thread: IQ1_M 949 µs against
//! 1017 on the AVX2 tile, ggml 1011; IQ1_S 820 against 960, ggml 1083; by 4: IQ1_M 1714
//! against 2556, ggml 4060).

use super::grids::grids;
use super::whole::{Whole, whole_dot};
use crate::core::types::Type;
#[cfg(target_arch = "x86_64")]
use crate::cpu::features::features;
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
        // SAFETY: the caller vouches for AVX2, FMA and F16C; BMI2 is checked.
        unsafe { if features().bmi2 { avx2::iq1_s_bmi2(x, y) } else { avx2::iq1_s(x, y) } }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_WIDE_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 (with VNNI and BMI2, which `has_avx512`
        // includes) and so AVX2, FMA and F16C.
        unsafe { vnni::iq1_s(x, y) }
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
        // SAFETY: the caller vouches for AVX2, FMA and F16C; BMI2 is checked.
        unsafe { if features().bmi2 { avx2::iq1_m_bmi2(x, y) } else { avx2::iq1_m(x, y) } }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_WIDE_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 (with VNNI and BMI2, which `has_avx512`
        // includes) and so AVX2, FMA and F16C.
        unsafe { vnni::iq1_m(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{
        Sub32, Weights32, deposited_indices, entries4, half, index_word, load16, load32, q8k_tile,
    };

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

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn iq1_s_with<const R: usize, const C: usize>(
        x: &[&[BlockIq1S]; R],
        y: &[&[BlockQ8K]; C],
        indices: impl Fn(&BlockIq1S, usize) -> u64,
    ) -> [[f32; C]; R] {
        let grid: &[u64; 2048] = &grids().iq1_s;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(b.d), s_groups(b)),
            |b, groups, i| {
                let points = indices(b, i);
                let g = entries4(grid, |l| index_word::<2048>(points, l));
                Sub32 {
                    weights: Weights32::signed(_mm256_add_epi8(g, _mm256_set1_epi32(groups.shifts[i] as i32))),
                    scales: _mm256_set1_epi32(groups.multipliers[i] as i32),
                }
            },
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq1_s<const R: usize, const C: usize>(x: &[&[BlockIq1S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        iq1_s_with(x, y, |b, i| words(|l| s_index(b, i, l)))
    }

    #[target_feature(enable = "avx2,fma,f16c,bmi2")]
    pub fn iq1_s_bmi2<const R: usize, const C: usize>(x: &[&[BlockIq1S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        iq1_s_with(x, y, |b, i| deposited_indices(&b.qs, i, u64::from(s_word(b, i) & 0x0fff), 0x0700_0700_0700_0700))
    }

    /// Four grid indices in the 16-bit words of a `u64`, index `l` from `index(l)` (as
    /// [`deposited_indices`] gives them without BMI2).
    #[inline]
    fn words(index: impl Fn(usize) -> usize) -> u64 {
        (0..4).fold(0, |words, l| words | (index(l) as u64) << (16 * l))
    }

    /// Byte-shuffle controls: control `i` fills the first 8 bytes of each 128-bit half with
    /// that half's byte `2i` and the last 8 with its byte `2i + 1`.
    pub(super) const PAIR_SPREAD: [[u8; 32]; 8] = {
        let mut controls = [[0u8; 32]; 8];
        let mut i = 0;
        while i < 8 {
            let mut k = 0;
            while k < 32 {
                controls[i][k] = (2 * i + k % 16 / 8) as u8;
                k += 1;
            }
            i += 1;
        }
        controls
    };

    /// Byte-shuffle controls: control `i` repeats the 16-bit word 4·(i % 2) + i/2 of each
    /// 128-bit half over that half, the word where [`m_multipliers`] puts sub-block `i`'s.
    const WORD_SPREAD: [[u8; 32]; 8] = {
        let mut controls = [[0u8; 32]; 8];
        let mut i = 0;
        while i < 8 {
            let word = 4 * (i % 2) + i / 2;
            let mut k = 0;
            while k < 32 {
                controls[i][k] = (2 * word + k % 2) as u8;
                k += 1;
            }
            i += 1;
        }
        controls
    };

    /// The byte-shuffle control `controls[i]` as a vector.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn control(controls: &[[u8; 32]; 8], i: usize) -> __m256i {
        load32(&controls[i], 0)
    }

    /// The 16 multipliers 2s+1 of an `iq1_m` block as 16-bit words, placed so that sub-block
    /// `i` finds its pair with one in-lane shuffle ([`WORD_SPREAD`]): the scales of values
    /// 32i..32i+16 in the low half, those of 32i+16..32i+32 at the same place in the high
    /// half. Quadword q is the scale words shifted by 0, 6, 3, 9 bits: word w of quadword q
    /// then starts with scale 4w + `(0, 2, 1, 3)[q]`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn m_multipliers(b: &BlockIq1M) -> __m256i {
        let words = _mm256_set1_epi64x(u64::from_le_bytes(b.scales) as i64);
        let scales = _mm256_and_si256(_mm256_srlv_epi64(words, _mm256_set_epi64x(9, 3, 6, 0)), _mm256_set1_epi16(7));
        _mm256_or_si256(_mm256_add_epi16(scales, scales), _mm256_set1_epi16(1))
    }

    /// The ±1 shifts of the 32 groups of an `iq1_m` block as bytes, placed so that sub-block
    /// `i` finds its four with one in-lane shuffle ([`PAIR_SPREAD`]): groups 0 and 1 of it at
    /// bytes 2i and 2i+1 of the low half, groups 2 and 3 at the same bytes of the high half.
    /// Their sign bits are bits 3 and 7 of `qh` byte 2i (groups 0, 1) and 2i+1 (groups 2, 3).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn m_shifts(b: &BlockIq1M) -> __m256i {
        let qh = load16(&b.qh, 0);
        let sources = _mm256_set_epi64x(
            0x0f0f_0d0d_0b0b_0909,
            0x0707_0505_0303_0101,
            0x0e0e_0c0c_0a0a_0808,
            0x0606_0404_0202_0000,
        );
        let bits = _mm256_set1_epi16(0x8008u16 as i16);
        let spread = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set_m128i(qh, qh), sources), bits);
        _mm256_or_si256(_mm256_cmpeq_epi8(spread, bits), _mm256_set1_epi8(1))
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn iq1_m_with<const R: usize, const C: usize>(
        x: &[&[BlockIq1M]; R],
        y: &[&[BlockQ8K]; C],
        indices: impl Fn(&BlockIq1M, usize) -> u64,
    ) -> [[f32; C]; R] {
        let grid: &[u64; 2048] = &grids().iq1_s;
        q8k_tile(
            x,
            y,
            |b| (0.125 * half(m_super_scale(&m_words(b))), (m_multipliers(b), m_shifts(b))),
            |b, &(multipliers, shifts), i| {
                let points = indices(b, i);
                let g = entries4(grid, |l| index_word::<2048>(points, l));
                let shifts = _mm256_shuffle_epi8(shifts, control(&PAIR_SPREAD, i));
                Sub32 {
                    weights: Weights32::signed(_mm256_add_epi8(g, shifts)),
                    scales: _mm256_shuffle_epi8(multipliers, control(&WORD_SPREAD, i)),
                }
            },
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq1_m<const R: usize, const C: usize>(x: &[&[BlockIq1M]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        iq1_m_with(x, y, |b, i| words(|l| m_index(b, i, l)))
    }

    #[target_feature(enable = "avx2,fma,f16c,bmi2")]
    pub fn iq1_m_bmi2<const R: usize, const C: usize>(x: &[&[BlockIq1M]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // the 3 index bits of each `qh` nibble, without the shift sign above them
        iq1_m_with(x, y, |b, i| {
            let qh = u16::from_le_bytes([b.qh[2 * i], b.qh[2 * i + 1]]);
            deposited_indices(&b.qs, i, u64::from(qh & 0x7777), 0x0f00_0f00_0f00_0f00)
        })
    }
}

/// The tiles on AVX512-VNNI ([`q8k_vnni_tile`](crate::cpu::kernels::x86::byte_tiles::q8k_vnni_tile)): the values 8g ± 1 raised by 9 to 0..=18, the
/// shifts' bytes carrying the raise, so decoding costs what the AVX2 tiles' does; the offset
/// comes off through the activations' block sums.
#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::*;

    use super::avx2::{PAIR_SPREAD, m_shifts};
    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{
        RaisedPair, deposited_indices, entries4, half, index_word, load16, load32, q8k_vnni_tile,
    };

    /// What every value is raised by: the largest |8g ± 1|.
    const RAISE: i16 = 9;

    /// Byte-shuffle controls: control `k` fills each 128-bit half with its word `2k` four
    /// times, then its word `2k + 1` four times ([`RaisedPair::scales`] from multipliers
    /// whose halves hold one 16-bit multiplier per sub-block).
    const PAIR_WORDS: [[u8; 32]; 4] = {
        let mut controls = [[0u8; 32]; 4];
        let mut k = 0;
        while k < 4 {
            let mut p = 0;
            while p < 32 {
                let word = 2 * k + p % 16 / 8;
                controls[k][p] = (2 * word + p % 2) as u8;
                p += 1;
            }
            k += 1;
        }
        controls
    };

    /// The scales of pair `k` from per-sub-block multipliers (see [`PAIR_WORDS`]).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn pair_scales(multipliers: __m256i, k: usize) -> __m256i {
        _mm256_shuffle_epi8(multipliers, load32(&PAIR_WORDS[k], 0))
    }

    /// An `iq1_s` block's shifts, raised: per group, 4 bytes of 9 ± 1 (a broadcast load each).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn s_shifts(qh: __m128i) -> [u32; 8] {
        let words = _mm256_cvtepu16_epi32(qh);
        let negative = _mm256_srai_epi32::<31>(_mm256_slli_epi32::<16>(words));
        let raised = _mm256_add_epi8(_mm256_set1_epi8(RAISE as i8 + 1), _mm256_add_epi8(negative, negative));
        let mut shifts = [0u32; 8];
        // SAFETY: the array holds the 32 bytes stored.
        unsafe { _mm256_storeu_si256(shifts.as_mut_ptr().cast(), raised) };
        shifts
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c,bmi2")]
    pub fn iq1_s<const R: usize, const C: usize>(x: &[&[BlockIq1S]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 2048] = &grids().iq1_s;
        q8k_vnni_tile(
            x,
            y,
            |b| {
                let qh = load16(&b.qh, 0);
                // 2s+1 from the scale s in bits 12..15 of each group's word
                let m = _mm_or_si128(_mm_and_si128(_mm_srli_epi16::<11>(qh), _mm_set1_epi16(0xe)), _mm_set1_epi16(1));
                // one multiplier per 16 values, in the order of the bsums
                let per16 = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
                let offsets = _mm256_mullo_epi16(per16, _mm256_set1_epi16(RAISE));
                (0.125 * half(b.d), (s_shifts(qh), _mm256_set_m128i(m, m)), offsets)
            },
            |b, (shifts, multipliers), k| {
                let sub = |i: usize| {
                    let points = deposited_indices(&b.qs, i, u64::from(s_word(b, i) & 0x0fff), 0x0700_0700_0700_0700);
                    let g = entries4(grid, |l| index_word::<2048>(points, l));
                    _mm256_add_epi8(g, _mm256_set1_epi32(shifts[i] as i32))
                };
                RaisedPair { first: sub(2 * k), second: sub(2 * k + 1), scales: pair_scales(*multipliers, k) }
            },
        )
    }

    /// The 16 multipliers 2s+1 of an `iq1_m` block as 16-bit words: word i of the low half
    /// the multiplier of values 32i..32i+16, of the high half that of 32i+16..32i+32. Scale j
    /// (of values 16j..16j+16) is bits 3(j % 4).. of scale word j / 4.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    fn m_multipliers(b: &BlockIq1M) -> __m256i {
        let words = _mm256_set1_epi64x(u64::from_le_bytes(b.scales) as i64);
        // word i of each half: scale word i / 2
        let spread = _mm256_shuffle_epi8(
            words,
            _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7)),
        );
        let shifts = _mm256_setr_epi16(0, 6, 0, 6, 0, 6, 0, 6, 3, 9, 3, 9, 3, 9, 3, 9);
        let scales = _mm256_and_si256(_mm256_srlv_epi16(spread, shifts), _mm256_set1_epi16(7));
        _mm256_or_si256(_mm256_add_epi16(scales, scales), _mm256_set1_epi16(1))
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c,bmi2")]
    pub fn iq1_m<const R: usize, const C: usize>(x: &[&[BlockIq1M]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let grid: &[u64; 2048] = &grids().iq1_s;
        q8k_vnni_tile(
            x,
            y,
            |b| {
                let multipliers = m_multipliers(b);
                // the multipliers in the order of the bsums: the halves' words interleaved
                let quads = _mm256_permute4x64_epi64::<0b11_01_10_00>(multipliers);
                let interleave = _mm_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
                let per16 = _mm256_shuffle_epi8(quads, _mm256_broadcastsi128_si256(interleave));
                let offsets = _mm256_mullo_epi16(per16, _mm256_set1_epi16(RAISE));
                let shifts = _mm256_add_epi8(m_shifts(b), _mm256_set1_epi8(RAISE as i8));
                (0.125 * half(m_super_scale(&m_words(b))), (shifts, multipliers), offsets)
            },
            |b, &(shifts, multipliers), k| {
                let sub = |i: usize| {
                    // the 3 index bits of each `qh` nibble, without the shift sign above them
                    let qh = u16::from_le_bytes([b.qh[2 * i], b.qh[2 * i + 1]]);
                    let points = deposited_indices(&b.qs, i, u64::from(qh & 0x7777), 0x0f00_0f00_0f00_0f00);
                    let g = entries4(grid, |l| index_word::<2048>(points, l));
                    _mm256_add_epi8(g, _mm256_shuffle_epi8(shifts, load32(&PAIR_SPREAD[i], 0)))
                };
                RaisedPair { first: sub(2 * k), second: sub(2 * k + 1), scales: pair_scales(multipliers, k) }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_k, quantized, random, values};
    use super::*;

    /// A random block's scale made a finite 0.001.
    fn s_scale_fix(b: &mut BlockIq1S) {
        b.d = Half::from_f32(0.001);
    }

    /// A random block's super-block scale made 0x1400 (≈0.001), in the top nibbles of the
    /// scale words.
    fn m_scale_fix(b: &mut BlockIq1M) {
        for (k, nibble) in [0u8, 0, 4, 1].into_iter().enumerate() {
            b.scales[2 * k + 1] = (b.scales[2 * k + 1] & 0x0f) | nibble << 4;
        }
    }

    #[test]
    fn iq1_s_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq1S>(n, "quantized", |s| quantized(&values(n, s), true), q8_k);
            check_rows::<BlockIq1S>(n, "random", |s| random(n, s, s_scale_fix), q8_k);
        }
    }

    #[test]
    fn iq1_m_matches_f64() {
        for n in [256, 512] {
            check_rows::<BlockIq1M>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            check_rows::<BlockIq1M>(n, "random", |s| random(n, s, m_scale_fix), q8_k);
        }
    }

    /// The tiles without BMI2, which this machine's dispatch may never pick, against those
    /// with it: the same integer sums, so the same floats.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn bit_deposits_and_plain_indices_agree() {
        if !crate::cpu::features::features().has_avx2_fma() || !features().bmi2 {
            return;
        }
        let n = 1024;
        let ys: Vec<Vec<BlockQ8K>> = (0..2).map(|c| q8_k(&values(n, 40 + c)).0).collect();
        let y: [&[BlockQ8K]; 2] = std::array::from_fn(|c| ys[c].as_slice());
        let s_rows: Vec<Vec<BlockIq1S>> = (0..4).map(|r| random(n, r, s_scale_fix).0).collect();
        let m_rows: Vec<Vec<BlockIq1M>> = (0..4).map(|r| random(n, r, m_scale_fix).0).collect();
        let xs: [&[BlockIq1S]; 4] = std::array::from_fn(|r| s_rows[r].as_slice());
        let xm: [&[BlockIq1M]; 4] = std::array::from_fn(|r| m_rows[r].as_slice());
        // SAFETY: AVX2, FMA, F16C (`has_avx2`) and BMI2 were checked above.
        unsafe {
            assert_eq!(avx2::iq1_s::<4, 2>(&xs, &y), avx2::iq1_s_bmi2::<4, 2>(&xs, &y));
            assert_eq!(avx2::iq1_m::<4, 2>(&xm, &y), avx2::iq1_m_bmi2::<4, 2>(&xm, &y));
        }
    }
}
