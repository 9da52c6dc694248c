//! MXFP4 by Q8_0 and NVFP4 by pairs of Q8_0: 4-bit E2M1 values with a shared scale.
//!
//! | weight | activations   | per block |
//! |--------|---------------|-----------|
//! | MXFP4  | Q8_0          | `e·dy·Σ 2v·qy`, E2M1 values v, a power-of-two scale e |
//! | NVFP4  | 2 × Q8_0      | `Σ s·dy·Σ 2v·qy`, an 8-bit float scale s per 16 |
//!
//! An NVFP4 block spans two Q8_0 blocks: its activation unit is the two in a row. The scalar
//! references follow ggml's generic `ggml_vec_dot_*` arithmetic; the AVX2 tiles look the
//! doubled E2M1 values up as signed bytes and use the tiles of
//! [`byte_tiles`](crate::cpu::kernels::x86::byte_tiles).

use super::VecDot;
use super::whole::q8;
use crate::core::types::Type;
use crate::quants::fp4::{BlockMxfp4, BlockNvfp4, E2M1_DOUBLED, e8m0_to_f32_half, ue4m3_to_f32_half};
use crate::quants::q8::BlockQ8_0;

/// Σ 2v·y over 32 values with E2M1 codes: byte j of `qs` holds values j (low nibble) and
/// j + len (high nibble), `y` values in that order.
fn e2m1_sum(qs: &[u8], y: &[u8]) -> i32 {
    let half = qs.len();
    qs.iter()
        .enumerate()
        .map(|(j, &b)| {
            i32::from(E2M1_DOUBLED[usize::from(b & 0x0f)]) * q8(y, j)
                + i32::from(E2M1_DOUBLED[usize::from(b >> 4)]) * q8(y, j + half)
        })
        .sum()
}

// SAFETY: the blocks are repr(C) byte arrays (see `BlockFormat`).
unsafe impl VecDot for BlockMxfp4 {
    type Rhs = BlockQ8_0;
    const TYPE: Type = Type::MXFP4;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_0]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            sum += (by.d.to_f32() * e8m0_to_f32_half(bx.e)) * e2m1_sum(&bx.qs, &by.qs) as f32;
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::mxfp4(x, y) }
    }
}

// SAFETY: as for BlockMxfp4; an array of q8_0 blocks is plain data too.
unsafe impl VecDot for BlockNvfp4 {
    type Rhs = [BlockQ8_0; 2];
    const TYPE: Type = Type::NVFP4;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 64;

    fn dot_scalar(x: &[Self], y: &[[BlockQ8_0; 2]]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            // group s of 16 values meets half s % 2 of q8_0 block s / 2
            for s in 0..4 {
                let yb = &by[s / 2];
                let sumi = e2m1_sum(&bx.qs[8 * s..8 * s + 8], &yb.qs[16 * (s % 2)..]);
                sum += yb.d.to_f32() * ue4m3_to_f32_half(bx.d[s]) * sumi as f32;
            }
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[[BlockQ8_0; 2]]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::nvfp4(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{load16, lookup16, nibbles, q8_0_tile, raised16};

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn mxfp4<const R: usize, const C: usize>(x: &[&[BlockMxfp4]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        q8_0_tile(
            x,
            y,
            E2M1_RAISE,
            |b| _mm256_set1_ps(e8m0_to_f32_half(b.e)),
            |b, _| (lookup16(&E2M1_RAISED, nibbles(load16(&b.qs, 0))), _mm256_set1_ps(1.0)),
        )
    }

    /// What the doubled E2M1 values are raised by for `vpdpbusd`: the largest magnitude.
    const E2M1_RAISE: u8 = 12;
    /// The doubled E2M1 values raised by [`E2M1_RAISE`], 0..=24.
    const E2M1_RAISED: [i8; 16] = raised16(&E2M1_DOUBLED, E2M1_RAISE);

    /// [`ue4m3_to_f32_half`] of every byte: a load instead of a conversion with branches.
    fn ue4m3_halves() -> &'static [f32; 256] {
        static TABLE: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();
        TABLE.get_or_init(|| std::array::from_fn(|x| ue4m3_to_f32_half(x as u8)))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn nvfp4<const R: usize, const C: usize>(x: &[&[BlockNvfp4]; R], y: &[&[[BlockQ8_0; 2]]; C]) -> [[f32; C]; R] {
        let ue4m3 = ue4m3_halves();
        q8_0_tile(
            x,
            y,
            E2M1_RAISE,
            |_| _mm256_set1_ps(1.0),
            |b, k| {
                // bytes 16k..16k+16 hold groups 2k and 2k+1, each as 8 low nibbles then 8 high
                let packed = load16(&b.qs, 16 * k);
                let m4 = _mm_set1_epi8(0x0f);
                let (lo, hi) = (_mm_and_si128(packed, m4), _mm_and_si128(_mm_srli_epi16::<4>(packed), m4));
                let codes = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
                let scale = |s: usize| _mm_set1_ps(ue4m3[usize::from(b.d[s])]);
                let scales = _mm256_set_m128(scale(2 * k + 1), scale(2 * k));
                (lookup16(&E2M1_RAISED, codes), scales)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_0, q8_0_groups, quantized, random, values};
    use super::*;

    #[test]
    fn fp4_formats_match_f64() {
        for n in [64, 192, 512] {
            check_rows::<BlockMxfp4>(n, "quantized", |s| quantized(&values(n, s), false), q8_0);
            let fix = |b: &mut BlockMxfp4| b.e = 118 + (b.e & 7);
            check_rows::<BlockMxfp4>(n, "random", |s| random(n, s, fix), q8_0);
            check_rows::<BlockNvfp4>(n, "quantized", |s| quantized(&values(n, s), false), q8_0_groups::<2>);
            check_rows::<BlockNvfp4>(n, "random", |s| random(n, s, |_: &mut BlockNvfp4| {}), q8_0_groups::<2>);
        }
    }
}
