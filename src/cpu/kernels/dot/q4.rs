//! Q4_0 and Q4_1 by Q8_0 and Q8_1: 4-bit levels, two to a byte (values j and j+16 of a block
//! share byte j). The AVX2 tiles spread the nibbles to bytes and use the integer tiles of
//! [`x86::int8`]; the AVX-512 lane tiles are in `x86::avx512`.

use super::VecDot;
use super::q8::block_sum;
use crate::core::types::Type;
#[cfg(target_arch = "x86_64")]
use crate::cpu::kernels::{simd, x86};
use crate::quants::q4::{BlockQ4_0, BlockQ4_1};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

/// The 4-bit levels of values j and j+16 of a nibble-packed block.
#[inline]
pub(super) fn nibbles(qs: &[u8; 16], j: usize) -> (i32, i32) {
    (i32::from(qs[j] & 0x0f), i32::from(qs[j] >> 4))
}

// SAFETY: the quantized blocks are repr(C) byte arrays and Halfs (see `BlockFormat`).
unsafe impl VecDot for BlockQ4_0 {
    type Rhs = BlockQ8_0;
    const TYPE: Type = Type::Q4_0;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_0]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi = block_sum(
                |j| {
                    let (a, b) = nibbles(&bx.qs, j);
                    (a - 8, b - 8)
                },
                &by.qs,
            );
            sum += sumi as f32 * (bx.d.to_f32() * by.d.to_f32());
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = crate::cpu::kernels::x86::avx512::BLOCK_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { crate::cpu::kernels::x86::avx512::q4_0_lanes(x, y) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2; block indices stay below the common length.
        unsafe {
            x86::int8::offset_tile::<_, R, C>(
                x,
                8,
                |r, b| {
                    let blk = x[r].get_unchecked(b);
                    (avx2::nibbles(&blk.qs), blk.d)
                },
                |c, b| {
                    let blk = y[c].get_unchecked(b);
                    (simd::avx2::load32(&blk.qs), blk.d)
                },
            )
        }
    }
}

// SAFETY: as for BlockQ4_0.
unsafe impl VecDot for BlockQ4_1 {
    type Rhs = BlockQ8_1;
    const TYPE: Type = Type::Q4_1;
    const VEC_DOT_TYPE: Type = Type::Q8_1;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_1]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi = block_sum(|j| nibbles(&bx.qs, j), &by.qs);
            sum += (bx.d.to_f32() * by.d.to_f32()) * sumi as f32 + bx.m.to_f32() * by.s.to_f32();
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = crate::cpu::kernels::x86::avx512::BLOCK_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_1]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { crate::cpu::kernels::x86::avx512::q4_1_lanes(x, y) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_1]; C]) -> [[f32; C]; R] {
        // SAFETY: as for BlockQ4_0.
        unsafe {
            x86::int8::affine_tile::<_, R, C>(
                x,
                |r, b| {
                    let blk = x[r].get_unchecked(b);
                    (avx2::nibbles(&blk.qs), blk.d, blk.m)
                },
                |c, b| {
                    let blk = y[c].get_unchecked(b);
                    (simd::avx2::load32(&blk.qs), blk.d, blk.s)
                },
            )
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    /// The 32 nibbles of a block as bytes 0..15, in value order (low nibbles first).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn nibbles(qs: &[u8; 16]) -> __m256i {
        // SAFETY: the array holds the 16 bytes read.
        let lo = unsafe { _mm_loadu_si128(qs.as_ptr().cast()) };
        let hi = _mm_srli_epi16::<4>(lo);
        _mm256_and_si256(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(0x0f))
    }
}
