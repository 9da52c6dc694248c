//! `iq4_nl` · `q8_0` and `iq4_xs` · `q8_K`: 4-bit codes into 16 fixed levels.

use super::q8;
use crate::core::types::Type;
use crate::cpu::kernels::dot::VecDot;
use crate::quants::iq4::{BlockIq4Nl, BlockIq4Xs, LEVELS};
use crate::quants::k_quants::BlockQ8K;
use crate::quants::q8::BlockQ8_0;

/// Σ L[code]·y over a group of 32: byte j of `qs` holds the codes of values j (low nibble) and
/// j+16 (high nibble).
fn group_sum(qs: &[u8], y: &[u8]) -> i32 {
    (0..16)
        .map(|j| {
            let (lo, hi) = (usize::from(qs[j] & 0x0f), usize::from(qs[j] >> 4));
            i32::from(LEVELS[lo]) * q8(y, j) + i32::from(LEVELS[hi]) * q8(y, j + 16)
        })
        .sum()
}

/// The 6-bit scale of group `i` of an `iq4_xs` block, less its offset of 32.
fn xs_scale(b: &BlockIq4Xs, i: usize) -> i32 {
    let low = (b.scales_l[i / 2] >> (4 * (i % 2))) & 0x0f;
    let high = (u16::from_le_bytes(b.scales_h) >> (2 * i)) & 3;
    (i32::from(low) | i32::from(high << 4)) - 32
}

// SAFETY: the blocks are repr(C) byte arrays and Halfs.
unsafe impl VecDot for BlockIq4Nl {
    type Rhs = BlockQ8_0;
    const TYPE: Type = Type::IQ4_NL;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_0]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            sum += (by.d.to_f32() * bx.d.to_f32()) * group_sum(&bx.qs, &by.qs) as f32;
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq4_nl(x, y) }
    }
}

// SAFETY: as for BlockIq4Nl.
unsafe impl VecDot for BlockIq4Xs {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ4_XS;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let d = bx.d.to_f32() * by.scale();
            for i in 0..8 {
                let sumi = group_sum(&bx.qs[16 * i..], &by.qs[32 * i..]);
                sum += (d * xs_scale(bx, i) as f32) * sumi as f32;
            }
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq4_xs(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_COLS;
    const AVX512_VBMI: bool = true;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // One column stays on the AVX2 tile, which decodes 32 values at a time into fewer
        // instructions per column than it saves here (4096² by 1, 1 thread: 642 µs against
        // 703); from two columns the wider tile is ahead (by 4: 1806 µs against 2948).
        // SAFETY: the caller vouches for AVX-512 with VBMI (and so AVX2, FMA and F16C).
        unsafe { if C == 1 { avx2::iq4_xs(x, y) } else { avx512::iq4_xs(x, y) } }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::engine::{Sub32, Weights32, half, half8, load16, lookup16, nibbles, q8_0_tile, q8k_tile};
    use super::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq4_nl<const R: usize, const C: usize>(x: &[&[BlockIq4Nl]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        q8_0_tile(
            x,
            y,
            |b| half8(b.d),
            |b, _| (Weights32::signed(lookup16(&LEVELS, nibbles(load16(&b.qs, 0)))), _mm256_set1_ps(1.0)),
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq4_xs<const R: usize, const C: usize>(x: &[&[BlockIq4Xs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        q8k_tile(
            x,
            y,
            |b| {
                let mut scales = [0i16; 8];
                for (i, s) in scales.iter_mut().enumerate() {
                    *s = xs_scale(b, i) as i16;
                }
                (half(b.d), scales)
            },
            |b, scales, i| Sub32 {
                weights: Weights32::signed(lookup16(&LEVELS, nibbles(load16(&b.qs, 16 * i)))),
                scales: _mm256_set1_epi16(scales[i]),
            },
        )
    }
}

/// IQ4_XS on the AVX-512 tiles of the grid I-quants ([`super::permuted`]): a chunk of 64
/// values is two groups' codes looked up into levels, whose magnitudes (at most 127, so a pair
/// sum with activations stays within 16 bits) and signs are what those tiles take, with each
/// group's scale as the multiplier of its pair sums.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::engine::half;
    use super::super::permuted::{Chunk, chunk_multipliers, q8k_tile};
    use super::*;
    use crate::cpu::kernels::dot_avx512::nibbles_pair;

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn iq4_xs<const R: usize, const C: usize>(x: &[&[BlockIq4Xs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the table holds the 16 bytes read.
        let table = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(LEVELS.as_ptr().cast()) });
        q8k_tile(
            x,
            y,
            |b| {
                let scales: [i16; 8] = std::array::from_fn(|i| xs_scale(b, i) as i16);
                // SAFETY: the array holds the 16 bytes read.
                let scales = unsafe { _mm_loadu_si128(scales.as_ptr().cast()) };
                (half(b.d), _mm512_castsi128_si512(scales))
            },
            |b, &scales, k| {
                // groups 2k and 2k + 1, each 16 bytes of codes laid out as a Q4_0 block's
                let group = |g: usize| -> &[u8; 16] { b.qs[16 * g..16 * g + 16].try_into().expect("16 bytes") };
                let levels = _mm512_shuffle_epi8(table, nibbles_pair(group(2 * k), Some(group(2 * k + 1))));
                Chunk {
                    magnitudes: _mm512_abs_epi8(levels),
                    negative: _mm512_movepi8_mask(levels),
                    multipliers: chunk_multipliers(scales, k, 32),
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_0, q8_k, quantized, random, values};
    use super::*;
    use crate::quants::half::Half;

    #[test]
    fn iq4_nl_matches_f64() {
        for n in [32, 96, 512] {
            check_rows::<BlockIq4Nl>(n, "quantized", |s| quantized(&values(n, s), false), q8_0);
            let fix = |b: &mut BlockIq4Nl| b.d = Half::from_f32(0.01);
            check_rows::<BlockIq4Nl>(n, "random", |s| random(n, s, fix), q8_0);
        }
    }

    #[test]
    fn iq4_xs_matches_f64() {
        for n in [256, 768] {
            check_rows::<BlockIq4Xs>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            let fix = |b: &mut BlockIq4Xs| b.d = Half::from_f32(0.002);
            check_rows::<BlockIq4Xs>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }
}
