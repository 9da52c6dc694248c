//! TQ1_0 and TQ2_0 by Q8_K: ternary weights, one scale per block of 256.
//!
//! | weight | activations   | per block |
//! |--------|---------------|-----------|
//! | TQ1_0  | Q8_K          | `dx·dy·Σ t·qy`, trits t in -1..1 packed five to a byte |
//! | TQ2_0  | Q8_K          | `dx·dy·Σ (q-1)·qy`, 2-bit q |
//!
//! The scalar references are [`whole_dot`] over the trits, as ggml's generic
//! `ggml_vec_dot_tq*` sums them. The AVX2 tiles decode 32 weights at a time and use the
//! tiles of [`byte_tiles`](crate::cpu::kernels::x86::byte_tiles); they keep the unsigned
//! codes (value + 1) in the byte products and take the activations' block sums off once per
//! block, as ggml does.

use super::VecDot;
use super::whole::{Whole, whole_dot};
use crate::core::types::Type;
use crate::quants::k_quants::{BlockQ8K, QK_K};
use crate::quants::ternary::{BlockTq1_0, BlockTq2_0};

/// 3^k for the trits of a `tq1_0` byte.
const POW3: [u8; 5] = [1, 3, 9, 27, 81];

/// Trit `k` (0 the most significant) of a `tq1_0` byte, as -1, 0 or 1: the byte is a base-3
/// number scaled onto 0..256, so multiplying by 3^k (mod 256) brings trit k to the top.
#[inline]
fn trit(byte: u8, k: usize) -> i32 {
    ((u16::from(byte.wrapping_mul(POW3[k])) * 3) >> 8) as i32 - 1
}

/// The 2-bit code `p` (0..4) of a byte, less one.
#[inline]
pub(super) fn crumb(byte: u8, p: usize) -> i32 {
    i32::from((byte >> (2 * p)) & 3) - 1
}

/// The ternary formats as whole values: the trits themselves, one multiplier for the block.
impl Whole for BlockTq1_0 {
    const SUB: usize = 256;
    const MAX: i8 = 1;

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        // bytes 0..32 of `qs` hold values m + 32k (trit k), bytes 32..48 values 160 + m + 16k,
        // `qh` values 240 + j + 4k
        let (head, tail) = self.qs.split_at(32);
        for (packed, first, trits) in [(head, 0, 5), (tail, 160, 5), (&self.qh[..], 240, 4)] {
            for k in 0..trits {
                for (m, &byte) in packed.iter().enumerate() {
                    bytes[first + k * packed.len() + m] = trit(byte, k) as i8;
                }
            }
        }
        multipliers[0] = 1;
    }
}

impl Whole for BlockTq2_0 {
    const SUB: usize = 256;
    const MAX: i8 = 1;

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }

    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]) {
        // in each half of 128 values, byte m holds values m + 32p (code p)
        for (i, b) in bytes.iter_mut().enumerate() {
            let (h, p, m) = (i / 128, i % 128 / 32, i % 32);
            *b = crumb(self.qs[32 * h + m], p) as i8;
        }
        multipliers[0] = 1;
    }
}

// SAFETY: the blocks are repr(C) byte arrays and Halfs.
unsafe impl VecDot for BlockTq1_0 {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::TQ1_0;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::tq1_0(x, y) }
    }

    const AVX512_COLS: usize = super::MAX_WIDE_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 (with VNNI) and so AVX2, FMA and F16C.
        unsafe { avx2::tq1_0_vnni(x, y) }
    }
}

// SAFETY: as for BlockTq1_0.
unsafe impl VecDot for BlockTq2_0 {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::TQ2_0;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        whole_dot(x, y)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::tq2_0(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::x86::avx512::BLOCK_COLS;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 (and so AVX2, FMA and F16C).
        unsafe { avx512::tq2_0(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{half, load16, load32, q8k_offset_tile, q8k_offset_vnni_tile};

    /// Each byte times 3 (mod 256), as two byte additions. (Hidden from the optimizer behind
    /// an empty `asm!`: it otherwise folds the chains of these into multiplications by 9, 27
    /// and 81, which x86 has only for 16-bit lanes, at several instructions each.)
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn triple(v: __m256i) -> __m256i {
        let mut t = _mm256_add_epi8(v, _mm256_add_epi8(v, v));
        // SAFETY: an empty template; it only claims to change `t`.
        unsafe { std::arch::asm!("/* {t} */", t = inout(ymm_reg) t, options(pure, nomem, nostack, preserves_flags)) };
        t
    }

    /// The top trit of each byte as a code 0..=2 (the trit plus one): (3·byte) >> 8, which is
    /// the number of thresholds 86 and 171 the byte reaches (compared as signed bytes, less 128).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn top_trit(bytes: __m256i) -> __m256i {
        let s = _mm256_xor_si256(bytes, _mm256_set1_epi8(-128));
        let first = _mm256_cmpgt_epi8(s, _mm256_set1_epi8((85 - 128) as i8));
        let second = _mm256_cmpgt_epi8(s, _mm256_set1_epi8((170 - 128) as i8));
        _mm256_sub_epi8(_mm256_sub_epi8(_mm256_setzero_si256(), first), second)
    }

    /// The 256 values of a `tq1_0` block as codes 0..=2, in value order: trit k of byte m of
    /// the first 32 bytes is value 32k + m, of byte m of the next 16 value 160 + 16k + m, of
    /// `qh[m]` value 240 + 4k + m. Multiplying a byte by 3^k (mod 256) brings trit k to the top.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn tq1_codes(b: &BlockTq1_0) -> [__m256i; QK_K / 32] {
        // each power from the one before: a chain of byte additions, the 16 tail bytes and
        // the 4 `qh` bytes (repeated) sharing one
        let head = load32(&b.qs, 0);
        let h3 = triple(head);
        let h9 = triple(h3);
        let h27 = triple(h9);
        let h81 = triple(h27);
        let rest = _mm256_set_m128i(_mm_set1_epi32(i32::from_le_bytes(b.qh)), load16(&b.qs, 32));
        let r3 = triple(rest);
        let r9 = triple(r3);
        let r27 = triple(r9);
        let r81 = triple(r27);
        // upper half, bytes 4k..4k+4: qh·3^k
        let qh = _mm256_unpacklo_epi64(_mm256_unpacklo_epi32(rest, r3), _mm256_unpacklo_epi32(r9, r27));
        [
            top_trit(head),
            top_trit(h3),
            top_trit(h9),
            top_trit(h27),
            top_trit(h81),
            top_trit(_mm256_permute2x128_si256::<0x20>(rest, r3)),
            top_trit(_mm256_permute2x128_si256::<0x20>(r9, r27)),
            top_trit(_mm256_blend_epi32::<0xf0>(r81, qh)),
        ]
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn tq1_0<const R: usize, const C: usize>(x: &[&[BlockTq1_0]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        q8k_offset_tile(x, y, |b| (half(b.d), tq1_codes(b)))
    }

    /// The same codes summed with `vpdpbusd` ([`q8k_offset_vnni_tile`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    pub fn tq1_0_vnni<const R: usize, const C: usize>(x: &[&[BlockTq1_0]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        q8k_offset_vnni_tile(x, y, |b| (half(b.d), tq1_codes(b)))
    }

    /// The 2-bit codes at bit `2p` of 32 bytes.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn crumbs(bytes: __m256i, p: usize) -> __m256i {
        // shifts by an immediate: `p` is a constant once the loops over it are unrolled
        let shifted = match p {
            0 => bytes,
            1 => _mm256_srli_epi16::<2>(bytes),
            2 => _mm256_srli_epi16::<4>(bytes),
            _ => _mm256_srli_epi16::<6>(bytes),
        };
        _mm256_and_si256(shifted, _mm256_set1_epi8(3))
    }

    /// The 256 2-bit codes of a `tq2_0` block in value order: in each half of 128 values,
    /// byte m holds values m + 32p (bits 2p).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn tq2_codes(b: &BlockTq2_0) -> [__m256i; QK_K / 32] {
        let (low, high) = (load32(&b.qs, 0), load32(&b.qs, 32));
        [
            crumbs(low, 0),
            crumbs(low, 1),
            crumbs(low, 2),
            crumbs(low, 3),
            crumbs(high, 0),
            crumbs(high, 1),
            crumbs(high, 2),
            crumbs(high, 3),
        ]
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn tq2_0<const R: usize, const C: usize>(x: &[&[BlockTq2_0]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        q8k_offset_tile(x, y, |b| (half(b.d), tq2_codes(b)))
    }
}

/// TQ2_0 with AVX-512: `vpdpbusd` takes the weights' codes as unsigned bytes, 64 at a time,
/// and each column's sums start from −Σy, which takes the codes' offset back.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::prefetch;
    use crate::cpu::kernels::x86::avx512::sums as lane_sums;
    use crate::cpu::kernels::x86::byte_tiles::half;

    /// The codes of values 64k..64k+64 of a block: 32 bytes `half` (values 128h on, bits 2p
    /// of byte m for value 128h + 32p + m), p = 2(k % 2) in the low 256 bits, p + 1 above.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    fn codes(half: __m256i, k: usize) -> __m512i {
        let p = 2 * (k % 2) as i64;
        let shifts = _mm512_set_epi64(2 * p + 2, 2 * p + 2, 2 * p + 2, 2 * p + 2, 2 * p, 2 * p, 2 * p, 2 * p);
        _mm512_and_si512(_mm512_srlv_epi64(_mm512_broadcast_i64x4(half), shifts), _mm512_set1_epi8(3))
    }

    /// TQ2_0: the 2-bit codes q as they are; sums started from −Σy (the block sums) give
    /// Σ(q−1)·y.
    // Rows and columns index the accumulator grid together.
    #[allow(clippy::needless_range_loop)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    pub fn tq2_0<const R: usize, const C: usize>(x: &[&[BlockTq2_0]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        let mut acc = [[_mm512_setzero_ps(); C]; R];
        for b in 0..x[0].len() {
            prefetch::next_tile(x, b, 1);
            let ys: [&BlockQ8K; C] = std::array::from_fn(|c| &y[c][b]);
            let mut seed = [_mm512_setzero_si512(); C];
            for c in 0..C {
                let sums = ys[c].bsums.as_flattened();
                // SAFETY: the 16 block sums are 32 bytes.
                let sums = unsafe { _mm256_loadu_si256(sums.as_ptr().cast()) };
                seed[c] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_cvtepi16_epi32(sums));
            }
            for r in 0..R {
                let blk = &x[r][b];
                let qs = &blk.qs;
                // SAFETY: a block's codes are 64 bytes.
                let halves =
                    unsafe { [_mm256_loadu_si256(qs.as_ptr().cast()), _mm256_loadu_si256(qs.as_ptr().add(32).cast())] };
                let codes: [__m512i; 4] =
                    [codes(halves[0], 0), codes(halves[0], 1), codes(halves[1], 2), codes(halves[1], 3)];
                let dx = half(blk.d);
                for c in 0..C {
                    let mut sums = seed[c];
                    for (k, &q) in codes.iter().enumerate() {
                        let act = &ys[c].qs[64 * k..64 * k + 64];
                        // SAFETY: `act` holds the 64 bytes read.
                        sums = _mm512_dpbusd_epi32(sums, q, unsafe { _mm512_loadu_si512(act.as_ptr().cast()) });
                    }
                    let d = _mm512_set1_ps(dx * ys[c].scale());
                    acc[r][c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sums), acc[r][c]);
                }
            }
        }
        lane_sums(&acc)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_k, quantized, random, values};
    use super::*;
    use crate::quants::half::Half;

    #[test]
    fn ternary_formats_match_f64() {
        for n in [256, 768] {
            check_rows::<BlockTq1_0>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            check_rows::<BlockTq1_0>(
                n,
                "random",
                |s| random(n, s, |b: &mut BlockTq1_0| b.d = Half::from_f32(0.01)),
                q8_k,
            );
            check_rows::<BlockTq2_0>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            check_rows::<BlockTq2_0>(
                n,
                "random",
                |s| random(n, s, |b: &mut BlockTq2_0| b.d = Half::from_f32(0.01)),
                q8_k,
            );
        }
    }

    #[test]
    fn trits_decode_like_the_scalar_reference() {
        for byte in 0..=255u8 {
            for k in 0..5 {
                let t = trit(byte, k);
                assert!((-1..=1).contains(&t));
            }
        }
        // 5 trits of 2·3^4 + 1·3^3 + 0 + 2·3 + 1 = 196, scaled by 256/243 and rounded up
        let byte = ((196u16 * 256).div_ceil(243)) as u8;
        assert_eq!((0..5).map(|k| trit(byte, k)).collect::<Vec<_>>(), [1, 0, -1, 1, 0]);
    }
}
