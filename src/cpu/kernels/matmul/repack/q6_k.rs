//! Q6_K in the repacked layout, against Q8_K activations.
//!
//! A super-block of 256 values is two halves of 128; in a half, low-bits byte `t` (of 64)
//! holds value `t` in its low nibble and value `t + 64` in its high one, and high-bits byte
//! `t % 32` gives each its top two bits (bits 0-1 and 4-5 for `t < 32`, 2-3 and 6-7 above).
//! The layout puts low-bits chunks `q` and `q + 8` of a half next to the high-bits chunk `q`
//! they share: the three registers give sixteen rows' values `4q..`, `32+4q..`, `64+4q..` and
//! `96+4q..` (four each) as unsigned 6-bit bytes (level + 32), and the weights are read in the
//! order they lie. Four `q` fill four 16-value sub-blocks: their sums start from `−32·Σa` (the
//! activations' sums of each 16 levels) and are multiplied by the sixteen rows' 8-bit scales
//! of their sub-block, one byte per row in the layout; the block's integer sum is then scaled
//! by both `d` once.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{Column, Parts, Scheme, parts_of};
use crate::core::types::Type;
use crate::cpu::repack::layout::GROUP_ROWS;
use crate::quants::half::Half;

/// Values per super-block.
const QK: usize = 256;
const PARTS: Parts = parts_of(Type::Q6_K);
/// Where the scales and `d` start in a group block (the runs before them are the bits, three
/// registers per `q` of a half).
const SCALES: usize = PARTS.packed(48);
const D: usize = PARTS.packed(49);
/// Bytes of a group block.
const GROUP_BLOCK: usize = GROUP_ROWS * PARTS.block();
/// Bytes of the three registers of one `q` of a half.
const BITS: usize = 3 * 64;
/// What is added to a level to make it unsigned.
const BIAS: i32 = 32;

pub(super) struct Q6K;

impl Scheme for Q6K {
    const QK: usize = QK;
    const SUMS: usize = QK / 16;
    const TILE_COLS: usize = 4;

    unsafe fn tile_scalar(group: *const u8, nb: usize, cols: &[Column]) {
        let block = GROUP_BLOCK;
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(group, nb * block) };
        for &(act, out) in cols {
            let mut sums = [0f32; GROUP_ROWS];
            for (b, blk) in bytes.chunks_exact(block).enumerate() {
                // SAFETY: block b < nb of the column.
                let (a, da) = unsafe { (std::slice::from_raw_parts(act.levels.add(b * QK), QK), *act.scales.add(b)) };
                for (r, sum) in sums.iter_mut().enumerate() {
                    let levels = row_levels(blk, r);
                    let dot: i32 = (0..QK / 16)
                        .map(|s| {
                            let scale = i32::from(blk[PARTS.position(192 + s, r)] as i8);
                            let sub: i32 = (16 * s..16 * s + 16).map(|i| levels[i] * i32::from(a[i])).sum();
                            scale * sub
                        })
                        .sum();
                    let d = Half::from_bits(u16::from_le_bytes([blk[D + 2 * r], blk[D + 2 * r + 1]])).to_f32();
                    debug_assert_eq!(PARTS.position(208, r), D + 2 * r);
                    *sum += d * da * dot as f32;
                }
            }
            // SAFETY: the destination holds 16 floats (the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(sums.as_ptr(), out, GROUP_ROWS) };
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn tile_avx512(group: *const u8, nb: usize, cols: &[Column]) {
        // SAFETY: the caller's contract.
        run_tile!(cols, |acts| unsafe { group_sums::<_>(group, nb, acts) }, 1 2 3 4);
    }

    const AVX2: bool = true;

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tile_avx2(group: *const u8, nb: usize, cols: &[Column]) {
        // SAFETY: the caller's contract.
        run_tile_avx2!(cols, |acts| unsafe { group_sums_avx2(group, nb, acts) }, 1 2 3 4);
    }
}

#[cfg(test)]
#[test]
fn the_bits_of_each_q_lie_three_registers_apart() {
    for i in 0..16 {
        assert_eq!(PARTS.packed(3 * i), BITS * i);
    }
    assert_eq!(SCALES, BITS * 16);
}

/// The signed levels of row `r` of a group block.
fn row_levels(blk: &[u8], r: usize) -> [i32; QK] {
    let byte = |t: usize| blk[PARTS.position(t, r)];
    let mut levels = [0; QK];
    for half in 0..2 {
        for t in 0..64 {
            let (ql, qh) = (byte(64 * half + t), byte(128 + 32 * half + t % 32));
            let shift = 2 * (t / 32);
            let low = (ql & 15) | ((qh >> shift) & 3) << 4;
            let high = (ql >> 4) | ((qh >> (4 + shift)) & 3) << 4;
            levels[128 * half + t] = i32::from(low) - BIAS;
            levels[128 * half + 64 + t] = i32::from(high) - BIAS;
        }
    }
    levels
}

/// The sixteen rows' products with `C` columns.
///
/// # Safety
/// AVX-512 (F, BW, VL, DQ, VNNI); `group` holds `nb` group blocks; each column's activations
/// hold `nb` blocks.
// Columns index the sums and activation rows together.
#[allow(clippy::needless_range_loop)]
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn group_sums<const C: usize>(group: *const u8, nb: usize, acts: [super::ActRow; C]) -> [__m512; C] {
    let block = GROUP_BLOCK;
    let (low, top_bits) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(0x30));
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract).
        unsafe {
            let base = group.add(b * block);
            let mut total = [_mm512_setzero_si512(); C];
            for half in 0..2 {
                for k in 0..2 {
                    // sub-blocks 8·half + k + {0, 2, 4, 6}: values 4q.., 32+4q.., 64+4q.., 96+4q..
                    let subs = [0, 2, 4, 6].map(|o| 8 * half + k + o);
                    let mut sums = [[_mm512_setzero_si512(); 4]; C];
                    for c in 0..C {
                        let bsums = acts[c].sums.add(b * 16);
                        for (sum, &s) in sums[c].iter_mut().zip(&subs) {
                            *sum = _mm512_set1_epi32(-BIAS * *bsums.add(s));
                        }
                    }
                    for q in 4 * k..4 * k + 4 {
                        let bits = base.add(BITS * (8 * half + q));
                        let ql_a = _mm512_loadu_si512(bits.cast());
                        let ql_b = _mm512_loadu_si512(bits.add(64).cast());
                        let qh = _mm512_loadu_si512(bits.add(128).cast());
                        // each value's low four bits, with its top two moved to bits 4-5
                        let with_top = |nibbles: __m512i, top: __m512i| {
                            _mm512_or_si512(_mm512_and_si512(nibbles, low), _mm512_and_si512(top, top_bits))
                        };
                        let u = [
                            with_top(ql_a, _mm512_slli_epi16::<4>(qh)),
                            with_top(ql_b, _mm512_slli_epi16::<2>(qh)),
                            with_top(_mm512_srli_epi16::<4>(ql_a), qh),
                            with_top(_mm512_srli_epi16::<4>(ql_b), _mm512_srli_epi16::<2>(qh)),
                        ];
                        for c in 0..C {
                            let a = acts[c].levels.add(b * QK + 128 * half + 4 * q);
                            for (o, (sum, &w)) in sums[c].iter_mut().zip(&u).enumerate() {
                                let y = _mm512_set1_epi32(a.add(32 * o).cast::<i32>().read_unaligned());
                                *sum = _mm512_dpbusd_epi32(*sum, w, y);
                            }
                        }
                    }
                    for (o, &s) in subs.iter().enumerate() {
                        let scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(base.add(SCALES + s * GROUP_ROWS).cast()));
                        for c in 0..C {
                            total[c] = _mm512_add_epi32(total[c], _mm512_mullo_epi32(sums[c][o], scale));
                        }
                    }
                }
            }
            let d = super::f16x16(base.add(D));
            for c in 0..C {
                let scale = _mm512_mul_ps(d, _mm512_set1_ps(*acts[c].scales.add(b)));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[c]), scale, acc[c]);
            }
        }
    }
    acc
}

/// The sixteen rows' products with `C` columns on AVX2, as two halves of eight rows: the
/// AVX-512 tile's sums in the same order, so the same bits. Each 64-byte register of a group
/// block is two here, rows 0..8 and 8..16. A 6-bit byte product pair is at most 2·63·127 =
/// 16002 a lane, too much to add four in 16 bits: each is widened by itself.
///
/// # Safety
/// AVX2, FMA and F16C; `group` holds `nb` group blocks; each column's activations hold `nb`
/// blocks.
// Columns and halves index the sums and activation rows together.
#[allow(clippy::needless_range_loop)]
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn group_sums_avx2<const C: usize>(group: *const u8, nb: usize, acts: [super::ActRow; C]) -> [[__m256; 2]; C] {
    let block = GROUP_BLOCK;
    let (low, top_bits) = (_mm256_set1_epi8(0x0f), _mm256_set1_epi8(0x30));
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; C];
    for b in 0..nb {
        for h in 0..2 {
            // SAFETY: block b < nb of the group and of each column (the caller's contract):
            // half h (32 bytes) of each of the block's 64-byte registers, 8 of each 16 scales.
            unsafe {
                let base = group.add(b * block);
                let mut total = [_mm256_setzero_si256(); C];
                for half in 0..2 {
                    for k in 0..2 {
                        // sub-blocks 8·half + k + {0, 2, 4, 6}: values 4q.., 32+4q.., 64+4q.., 96+4q..
                        let subs = [0, 2, 4, 6].map(|o| 8 * half + k + o);
                        let mut sums = [[_mm256_setzero_si256(); 4]; C];
                        for c in 0..C {
                            let bsums = acts[c].sums.add(b * 16);
                            for (sum, &s) in sums[c].iter_mut().zip(&subs) {
                                *sum = _mm256_set1_epi32(-BIAS * *bsums.add(s));
                            }
                        }
                        for q in 4 * k..4 * k + 4 {
                            let bits = base.add(BITS * (8 * half + q) + 32 * h);
                            let ql_a = _mm256_loadu_si256(bits.cast());
                            let ql_b = _mm256_loadu_si256(bits.add(64).cast());
                            let qh = _mm256_loadu_si256(bits.add(128).cast());
                            // each value's low four bits, with its top two moved to bits 4-5
                            let with_top = |nibbles: __m256i, top: __m256i| {
                                _mm256_or_si256(_mm256_and_si256(nibbles, low), _mm256_and_si256(top, top_bits))
                            };
                            let u = [
                                with_top(ql_a, _mm256_slli_epi16::<4>(qh)),
                                with_top(ql_b, _mm256_slli_epi16::<2>(qh)),
                                with_top(_mm256_srli_epi16::<4>(ql_a), qh),
                                with_top(_mm256_srli_epi16::<4>(ql_b), _mm256_srli_epi16::<2>(qh)),
                            ];
                            for c in 0..C {
                                let a = acts[c].levels.add(b * QK + 128 * half + 4 * q);
                                for (o, (sum, &w)) in sums[c].iter_mut().zip(&u).enumerate() {
                                    let y = _mm256_set1_epi32(a.add(32 * o).cast::<i32>().read_unaligned());
                                    *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(_mm256_maddubs_epi16(w, y), ones));
                                }
                            }
                        }
                        for (o, &s) in subs.iter().enumerate() {
                            let scale =
                                _mm256_cvtepi8_epi32(_mm_loadl_epi64(base.add(SCALES + s * GROUP_ROWS + 8 * h).cast()));
                            for c in 0..C {
                                total[c] = _mm256_add_epi32(total[c], _mm256_mullo_epi32(sums[c][o], scale));
                            }
                        }
                    }
                }
                let d = _mm256_cvtph_ps(_mm_loadu_si128(base.add(D + 16 * h).cast()));
                for c in 0..C {
                    let scale = _mm256_mul_ps(d, _mm256_set1_ps(*acts[c].scales.add(b)));
                    acc[c][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[c]), scale, acc[c][h]);
                }
            }
        }
    }
    acc
}
