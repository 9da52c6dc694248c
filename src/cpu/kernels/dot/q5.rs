//! Q5_0 and Q5_1 by Q8_0 and Q8_1: Q4's nibbles with a fifth bit per value, the 32 fifth
//! bits of a block in one word. The AVX2 tiles build the 5-bit levels as bytes and use the
//! integer tiles of [`x86::int8`].

use super::VecDot;
use super::q4::nibbles;
use super::q8::block_sum;
use crate::core::types::Type;
#[cfg(target_arch = "x86_64")]
use crate::cpu::kernels::{simd, x86};
use crate::quants::q5::{BlockQ5_0, BlockQ5_1};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

/// The fifth bits of values j and j+16 of a 5-bit block, as 0 or 16.
#[inline]
pub(super) fn high_bits(qh: [u8; 4], j: usize) -> (i32, i32) {
    let qh = u32::from_le_bytes(qh);
    ((((qh >> j) & 1) << 4) as i32, (((qh >> (j + 16)) & 1) << 4) as i32)
}

// SAFETY: as for BlockQ4_0.
unsafe impl VecDot for BlockQ5_0 {
    type Rhs = BlockQ8_0;
    const TYPE: Type = Type::Q5_0;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_0]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let level = |j| {
                let ((a, b), (ha, hb)) = (nibbles(&bx.qs, j), high_bits(bx.qh, j));
                ((a | ha) - 16, (b | hb) - 16)
            };
            sum += block_sum(level, &by.qs) as f32 * (bx.d.to_f32() * by.d.to_f32());
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = crate::cpu::kernels::x86::avx512::BLOCK_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { crate::cpu::kernels::x86::avx512::q5_0_lanes(x, y) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: as for BlockQ4_0.
        unsafe {
            x86::int8::offset_tile::<_, R, C>(
                x,
                16,
                |r, b| {
                    let blk = x[r].get_unchecked(b);
                    (avx2::five_bit_unsigned(&blk.qs, blk.qh), blk.d)
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
unsafe impl VecDot for BlockQ5_1 {
    type Rhs = BlockQ8_1;
    const TYPE: Type = Type::Q5_1;
    const VEC_DOT_TYPE: Type = Type::Q8_1;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_1]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let level = |j| {
                let ((a, b), (ha, hb)) = (nibbles(&bx.qs, j), high_bits(bx.qh, j));
                (a | ha, b | hb)
            };
            let sumi = block_sum(level, &by.qs);
            sum += (bx.d.to_f32() * by.d.to_f32()) * sumi as f32 + bx.m.to_f32() * by.s.to_f32();
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = crate::cpu::kernels::x86::avx512::BLOCK_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_1]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { crate::cpu::kernels::x86::avx512::q5_1_lanes(x, y) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_1]; C]) -> [[f32; C]; R] {
        // SAFETY: as for BlockQ4_0.
        unsafe {
            x86::int8::affine_tile::<_, R, C>(
                x,
                |r, b| {
                    let blk = x[r].get_unchecked(b);
                    (avx2::five_bit_unsigned(&blk.qs, blk.qh), blk.d, blk.m)
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

    /// Byte j is 0xff where bit j of `qh` (little-endian) is set, 0 elsewhere.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn bit_bytes(qh: [u8; 4]) -> __m256i {
        let word = _mm256_set1_epi32(i32::from_le_bytes(qh));
        // Byte j takes byte j/8 of the word, then tests bit j%8.
        let spread = _mm256_shuffle_epi8(
            word,
            _mm256_set_epi64x(0x0303_0303_0303_0303, 0x0202_0202_0202_0202, 0x0101_0101_0101_0101, 0),
        );
        let bits = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        _mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits)
    }

    /// The levels `nibble | bit·16` of a Q5_0 or Q5_1 block (0..31).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn five_bit_unsigned(qs: &[u8; 16], qh: [u8; 4]) -> __m256i {
        let high = _mm256_and_si256(bit_bytes(qh), _mm256_set1_epi8(0x10));
        _mm256_or_si256(super::super::q4::avx2::nibbles(qs), high)
    }
}
