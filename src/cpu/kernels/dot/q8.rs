//! Q8_0 by Q8_0, and the activation quantizers: [`quantize_row_q8_0`] and
//! [`quantize_row_q8_1`] produce the bytes of ggml's CPU quantizers on x86 (scale `127/amax`,
//! rounding half to even), on both paths. The 32-value formats' scalar references all sum a
//! block with [`block_sum`].

use super::VecDot;
use crate::core::types::Type;
#[cfg(target_arch = "x86_64")]
use crate::cpu::kernels::{simd, x86};
use crate::quants::half::{Half, fp32_to_fp16};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

#[inline]
pub(super) fn q8(qs: &[u8; 32], j: usize) -> i32 {
    i32::from(qs[j] as i8)
}

/// `Σ level(j)·y(j)` over a block of 32, levels given for the pairs (j, j+16).
#[inline]
pub(super) fn block_sum(levels: impl Fn(usize) -> (i32, i32), y: &[u8; 32]) -> i32 {
    (0..16)
        .map(|j| {
            let (a, b) = levels(j);
            a * q8(y, j) + b * q8(y, j + 16)
        })
        .sum()
}

// SAFETY: as for BlockQ4_0.
unsafe impl VecDot for BlockQ8_0 {
    type Rhs = BlockQ8_0;
    const TYPE: Type = Type::Q8_0;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_0]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi: i32 = (0..32).map(|j| q8(&bx.qs, j) * q8(&by.qs, j)).sum();
            sum += sumi as f32 * (bx.d.to_f32() * by.d.to_f32());
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    const AVX512_COLS: usize = crate::cpu::kernels::x86::avx512::BLOCK_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512; `tile` checked the row lengths.
        unsafe { crate::cpu::kernels::x86::avx512::q8_0_lanes(x, y) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: as for BlockQ4_0.
        unsafe {
            x86::int8::signed_tile::<_, R, C>(
                x,
                |r, b| {
                    let blk = x[r].get_unchecked(b);
                    (simd::avx2::load32(&blk.qs), blk.d)
                },
                |c, b| {
                    let blk = y[c].get_unchecked(b);
                    (simd::avx2::load32(&blk.qs), blk.d)
                },
            )
        }
    }
}

/// The reference arithmetic of ggml's x86 CPU quantizer for one block of 32: the scale
/// `amax/127`, the quants `round_half_even(x·127/amax)`, and their sum.
fn quantize_block_q8(x: &[f32]) -> (f32, [u8; 32], i32) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let mut qs = [0u8; 32];
    let mut sum = 0;
    for (q, &v) in qs.iter_mut().zip(x) {
        let level = ((v * id).round_ties_even() as i32).clamp(-128, 127);
        sum += level;
        *q = level as i8 as u8;
    }
    (d, qs, sum)
}

/// Scalar versions of the activation quantizers (same bytes as the SIMD ones).
pub mod scalar {
    use super::*;

    pub fn quantize_row_q8_0(x: &[f32], y: &mut [BlockQ8_0]) {
        check_blocks(x.len(), y.len());
        for (blk, v) in y.iter_mut().zip(x.chunks_exact(32)) {
            let (d, qs, _) = quantize_block_q8(v);
            *blk = BlockQ8_0 { d: Half::from_bits(fp32_to_fp16(d)), qs };
        }
    }

    pub fn quantize_row_q8_1(x: &[f32], y: &mut [BlockQ8_1]) {
        check_blocks(x.len(), y.len());
        for (blk, v) in y.iter_mut().zip(x.chunks_exact(32)) {
            let (d, qs, sum) = quantize_block_q8(v);
            *blk =
                BlockQ8_1 { d: Half::from_bits(fp32_to_fp16(d)), s: Half::from_bits(fp32_to_fp16(d * sum as f32)), qs };
        }
    }
}

fn check_blocks(values: usize, blocks: usize) {
    crate::ggml_assert!(
        values.is_multiple_of(32) && values / 32 == blocks,
        "{} values do not fill {} blocks of 32",
        values,
        blocks
    );
}

/// Quantizes activations to Q8_0 as ggml's CPU backend does (`quantize_row_q8_0`).
pub fn quantize_row_q8_0(x: &[f32], y: &mut [BlockQ8_0]) {
    check_blocks(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::features::features().has_avx2_fma() {
            for (blk, v) in y.iter_mut().zip(x.chunks_exact(32)) {
                // SAFETY: AVX2 was checked; `v` holds 32 values.
                let (d, qs, _) = unsafe { avx2::quantize_block_q8(v) };
                *blk = BlockQ8_0 { d: Half::from_bits(d), qs };
            }
            return;
        }
    }
    scalar::quantize_row_q8_0(x, y)
}

/// Quantizes activations to Q8_1 as ggml's CPU backend does (`quantize_row_q8_1`), the sum
/// `s = d·Σq` included.
pub fn quantize_row_q8_1(x: &[f32], y: &mut [BlockQ8_1]) {
    check_blocks(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::features::features().has_avx2_fma() {
            for (blk, v) in y.iter_mut().zip(x.chunks_exact(32)) {
                // SAFETY: AVX2 was checked; `v` holds 32 values.
                let (d, qs, s) = unsafe { avx2::quantize_block_q8(v) };
                *blk = BlockQ8_1 { d: Half::from_bits(d), s: Half::from_bits(s), qs };
            }
            return;
        }
    }
    scalar::quantize_row_q8_1(x, y)
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    use crate::cpu::kernels::simd::avx2::hsum_i32;

    /// ggml's x86 activation quantizer for one block of 32 values: the binary16 bits of the
    /// scale, the quants, and the binary16 bits of `d·Σq`.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C. (`x` must hold 32 values; checked.)
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn quantize_block_q8(x: &[f32]) -> (u16, [u8; 32], u16) {
        crate::ggml_assert!(x.len() >= 32, "a q8 block needs 32 values");
        let p = x.as_ptr();
        // SAFETY: 32 values are there (checked above).
        let v = unsafe {
            [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)), _mm256_loadu_ps(p.add(16)), _mm256_loadu_ps(p.add(24))]
        };
        let sign = _mm256_set1_ps(-0.0);
        let mut amax = _mm256_andnot_ps(sign, v[0]);
        for &w in &v[1..] {
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, w));
        }
        let m4 = _mm_max_ps(_mm256_extractf128_ps::<1>(amax), _mm256_castps256_ps128(amax));
        let m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        let m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        let amax = _mm_cvtss_f32(m4);

        let d = amax / 127.0;
        let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
        let mul = _mm256_set1_ps(id);
        let q = v.map(|w| {
            _mm256_cvtps_epi32(_mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
                w, mul,
            )))
        });
        let sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
        // Narrow to bytes; the packs work per 128-bit lane, the permute restores the order.
        let packed = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        let ordered = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        let mut qs = [0u8; 32];
        // SAFETY: `qs` has room for the 32 bytes stored.
        unsafe { _mm256_storeu_si256(qs.as_mut_ptr().cast(), ordered) };
        let to_half = |f: f32| _mm_extract_epi16::<0>(_mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm_set_ss(f))) as u16;
        (to_half(d), qs, to_half(d * sum as f32))
    }
}
