//! Q1_0 by four Q8_0 and Q2_0 by two Q8_0: 1- and 2-bit weights with one scale per block.
//!
//! | weight | activations   | per block |
//! |--------|---------------|-----------|
//! | Q1_0   | 4 × Q8_0      | `dx·Σ dy·Σ ±qy` |
//! | Q2_0   | 2 × Q8_0      | `dx·Σ dy·Σ (q-1)·qy`, 2-bit q |
//!
//! A block spans several Q8_0 blocks: its activation unit is that many in a row. The scalar
//! references follow ggml's generic `ggml_vec_dot_*` arithmetic; the AVX2 tiles decode 32
//! weights at a time to raised bytes and use the tiles of
//! [`byte_tiles`](crate::cpu::kernels::x86::byte_tiles).

use super::VecDot;
use super::ternary::crumb;
use super::whole::q8;
use crate::core::types::Type;
use crate::quants::low_bit::{BlockQ1_0, BlockQ2_0};
use crate::quants::q8::BlockQ8_0;

// SAFETY: the blocks are repr(C) byte arrays and Halfs; an array of q8_0 blocks is plain data too.
unsafe impl VecDot for BlockQ1_0 {
    type Rhs = [BlockQ8_0; 4];
    const TYPE: Type = Type::Q1_0;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 128;

    fn dot_scalar(x: &[Self], y: &[[BlockQ8_0; 4]]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let mut sumi = 0.0f32;
            for (k, yb) in by.iter().enumerate() {
                let signed: i32 = (0..32)
                    .map(|j| if bx.qs[4 * k + j / 8] >> (j % 8) & 1 != 0 { q8(&yb.qs, j) } else { -q8(&yb.qs, j) })
                    .sum();
                sumi += yb.d.to_f32() * signed as f32;
            }
            sum += bx.d.to_f32() * sumi;
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[[BlockQ8_0; 4]]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::q1_0(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::x86::avx512::BLOCK_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(
        x: &[&[Self]; R],
        y: &[&[[BlockQ8_0; 4]]; C],
    ) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 (and so AVX2, FMA and F16C).
        unsafe { avx512::q1_0(x, y) }
    }
}

// SAFETY: as for BlockQ1_0.
unsafe impl VecDot for BlockQ2_0 {
    type Rhs = [BlockQ8_0; 2];
    const TYPE: Type = Type::Q2_0;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 64;

    fn dot_scalar(x: &[Self], y: &[[BlockQ8_0; 2]]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let mut sumi = 0.0f32;
            for (k, yb) in by.iter().enumerate() {
                let s: i32 = (0..32).map(|j| crumb(bx.qs[8 * k + j / 4], j % 4) * q8(&yb.qs, j)).sum();
                sumi += yb.d.to_f32() * s as f32;
            }
            sum += bx.d.to_f32() * sumi;
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[[BlockQ8_0; 2]]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::q2_0(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{half8, q8_0_tile, signs_from_bits};

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn q1_0<const R: usize, const C: usize>(x: &[&[BlockQ1_0]; R], y: &[&[[BlockQ8_0; 4]]; C]) -> [[f32; C]; R] {
        q8_0_tile(
            x,
            y,
            1,
            |b| half8(b.d),
            |b, k| {
                // A set bit is +1, raised 2; a clear one −1, raised 0. `signs_from_bits` makes
                // set bits −1 and clear ones +1: 1 − sign is the raised weight.
                let q = &b.qs[4 * k..4 * k + 4];
                let signs = signs_from_bits(u32::from_le_bytes([q[0], q[1], q[2], q[3]]));
                (_mm256_sub_epi8(_mm256_set1_epi8(1), signs), _mm256_set1_ps(1.0))
            },
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn q2_0<const R: usize, const C: usize>(x: &[&[BlockQ2_0]; R], y: &[&[[BlockQ8_0; 2]]; C]) -> [[f32; C]; R] {
        q8_0_tile(
            x,
            y,
            // codes q stand for q − 1
            1,
            |b| half8(b.d),
            |b, k| {
                // byte j of the 8 goes to 32-bit lane j, copied four times 6 bits apart so that
                // code p lands at the bottom of byte p
                let q = &b.qs[8 * k..8 * k + 8];
                let q = i64::from_le_bytes([q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]]);
                let wide = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(q));
                let spread = _mm256_or_si256(
                    _mm256_or_si256(wide, _mm256_slli_epi32::<6>(wide)),
                    _mm256_or_si256(_mm256_slli_epi32::<12>(wide), _mm256_slli_epi32::<18>(wide)),
                );
                (_mm256_and_si256(spread, _mm256_set1_epi8(3)), _mm256_set1_ps(1.0))
            },
        )
    }
}

/// Q1_0 with AVX-512: `vpdpbusd` takes the weights' codes as unsigned bytes, 64 at a time,
/// and each column's sums start from −Σy, which takes the codes' offset back.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::prefetch;
    use crate::cpu::kernels::x86::avx512::{bytes_pair, pair_scales, sums as lane_sums};
    use crate::cpu::kernels::x86::byte_tiles::half;

    /// A Q1_0 block's bits become bytes 2 (set, +1) or 0 (clear, −1); with sums started from
    /// −Σy they give Σ(2b−1)·y. The four Q8_0 blocks of a column's unit go two to a register,
    /// each pair with its two scales in lanes 0..7 and 8..15.
    // Rows and columns index the accumulator grid together.
    #[allow(clippy::needless_range_loop)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    pub fn q1_0<const R: usize, const C: usize>(x: &[&[BlockQ1_0]; R], y: &[&[[BlockQ8_0; 4]]; C]) -> [[f32; C]; R] {
        struct Half64 {
            q: __m512i,
            d: __m512,
            seed: __m512i,
        }
        let mut acc = [[_mm512_setzero_ps(); C]; R];
        for b in 0..x[0].len() {
            prefetch::next_tile(x, b, 1);
            let ys: [[Half64; 2]; C] = std::array::from_fn(|c| {
                let unit = &y[c][b];
                std::array::from_fn(|h| {
                    let (lo, hi) = (&unit[2 * h], &unit[2 * h + 1]);
                    let q = bytes_pair(&lo.qs, Some(&hi.qs));
                    let sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), q);
                    Half64 { q, d: pair_scales(lo.d, hi.d), seed: _mm512_sub_epi32(_mm512_setzero_si512(), sum) }
                })
            });
            for r in 0..R {
                let blk = &x[r][b];
                let (lo, hi) = blk.qs.split_at(8);
                let bits = [lo, hi].map(|q| u64::from_le_bytes(q.try_into().expect("8 bytes")));
                let w = bits.map(|m| _mm512_maskz_mov_epi8(m, _mm512_set1_epi8(2)));
                let dx = _mm512_set1_ps(half(blk.d));
                for c in 0..C {
                    let [first, second] = &ys[c];
                    let s0 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(first.seed, w[0], first.q));
                    let s1 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(second.seed, w[1], second.q));
                    let t = _mm512_fmadd_ps(s1, second.d, _mm512_mul_ps(s0, first.d));
                    acc[r][c] = _mm512_fmadd_ps(t, dx, acc[r][c]);
                }
            }
        }
        lane_sums(&acc)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_0_groups, quantized, random, values};
    use super::*;
    use crate::quants::half::Half;

    #[test]
    fn low_bit_formats_match_f64() {
        for n in [128, 384] {
            check_rows::<BlockQ1_0>(n, "quantized", |s| quantized(&values(n, s), false), q8_0_groups::<4>);
            let fix = |b: &mut BlockQ1_0| b.d = Half::from_f32(0.01);
            check_rows::<BlockQ1_0>(n, "random", |s| random(n, s, fix), q8_0_groups::<4>);
            check_rows::<BlockQ2_0>(n, "quantized", |s| quantized(&values(n, s), false), q8_0_groups::<2>);
            let fix = |b: &mut BlockQ2_0| b.d = Half::from_f32(0.01);
            check_rows::<BlockQ2_0>(n, "random", |s| random(n, s, fix), q8_0_groups::<2>);
        }
    }
}
