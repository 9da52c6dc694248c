//! Q4_K and Q5_K in the repacked layout, against Q8_K activations.
//!
//! A super-block holds eight 32-value sub-blocks, each with a 6-bit scale and minimum packed
//! in 12 bytes; nibble byte `32j + l` holds value `64j + l` in its low nibble and `64j + 32 + l`
//! in its high one, and for Q5_K bits `2j` and `2j + 1` of high-bits byte `l` are those values'
//! fifth bits. The layout keeps each row's 12 scale bytes as three registers (four bytes per
//! row each), unpacked once per block for sixteen rows; the high bits (eight registers) and the
//! nibbles follow in chunks, read in order. A row's block is
//! `d·Σ scale·Σ q·a − dmin·Σ min·Σ a`: the first sums from `vpdpbusd` (the levels are
//! unsigned), the second from the activations' sums of each 16 levels.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{Column, Parts, Scheme, parts_of};
use crate::core::types::Type;
use crate::cpu::repack::layout::GROUP_ROWS;
use crate::quants::half::Half;
use crate::quants::k_quants::scale_min;

/// Values per super-block.
const QK: usize = 256;
/// Where the fields common to both start in a group block.
const D: usize = 0;
const DMIN: usize = 32;
const SCALES: usize = 64;

/// Q4_K (`FIVE` false) or Q5_K.
pub(super) struct NibbleK<const FIVE: bool>;

impl<const FIVE: bool> NibbleK<FIVE> {
    const PARTS: Parts = parts_of(if FIVE { Type::Q5_K } else { Type::Q4_K });
    /// Bytes of a group block.
    const GROUP_BLOCK: usize = GROUP_ROWS * Self::PARTS.block();
    /// Where the high bits (Q5_K) and the nibbles start in a group block.
    const QH: usize = Self::PARTS.packed(3);
    const QS: usize = Self::PARTS.packed(Self::PARTS.runs.len() - 1);
}

impl<const FIVE: bool> Scheme for NibbleK<FIVE> {
    const QK: usize = QK;
    const SUMS: usize = QK / 16;
    const TILE_COLS: usize = 4;

    unsafe fn tile_scalar(group: *const u8, nb: usize, cols: &[Column]) {
        let (parts, group_block) = (Self::PARTS, Self::GROUP_BLOCK);
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(group, nb * group_block) };
        for &(act, out) in cols {
            let mut sums = [0f32; GROUP_ROWS];
            for (b, blk) in bytes.chunks_exact(group_block).enumerate() {
                // SAFETY: block b < nb of the column.
                let (a, bsums, da) = unsafe {
                    (
                        std::slice::from_raw_parts(act.levels.add(b * QK), QK),
                        std::slice::from_raw_parts(act.sums.add(b * 16), 16),
                        *act.scales.add(b),
                    )
                };
                for (r, sum) in sums.iter_mut().enumerate() {
                    let byte = |t: usize| blk[parts.position(t, r)];
                    let half = |t: usize| Half::from_bits(u16::from_le_bytes([byte(t), byte(t + 1)])).to_f32();
                    let packed: [u8; 12] = std::array::from_fn(|k| byte(4 + k));
                    let (mut dot, mut mins) = (0i32, 0i32);
                    for s in 0..8 {
                        let (sc, m) = scale_min(&packed, s);
                        let level = |i: usize| {
                            let (j, high) = (i / 64, i % 64 >= 32);
                            let q = byte(parts.runs[parts.runs.len() - 1].at + 32 * j + i % 32);
                            let fifth = if FIVE { (byte(16 + i % 32) >> (2 * j + usize::from(high))) & 1 } else { 0 };
                            i32::from(if high { q >> 4 } else { q & 15 } | fifth << 4)
                        };
                        let sub: i32 = (32 * s..32 * s + 32).map(|i| level(i) * i32::from(a[i])).sum();
                        dot += i32::from(sc) * sub;
                        mins += i32::from(m) * (bsums[2 * s] + bsums[2 * s + 1]);
                    }
                    *sum += da * (half(0) * dot as f32 - half(2) * mins as f32);
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
        run_tile!(cols, |acts| unsafe { group_sums::<FIVE, _>(group, nb, acts) }, 1 2 3 4);
    }

    /// Q4_K only: Q5_K's fifth bits take masked adds, which AVX2 lacks.
    const AVX2: bool = !FIVE;

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tile_avx2(group: *const u8, nb: usize, cols: &[Column]) {
        if FIVE {
            // SAFETY: the caller's contract.
            return unsafe { Self::tile_scalar(group, nb, cols) };
        }
        // SAFETY: the caller's contract.
        run_tile_avx2!(cols, |acts| unsafe { group_sums_avx2(group, nb, acts) }, 1 2 3 4);
    }
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
unsafe fn group_sums<const FIVE: bool, const C: usize>(
    group: *const u8,
    nb: usize,
    acts: [super::ActRow; C],
) -> [__m512; C] {
    let (group_block, qh, qs) = (NibbleK::<FIVE>::GROUP_BLOCK, NibbleK::<FIVE>::QH, NibbleK::<FIVE>::QS);
    let low = _mm512_set1_epi8(0x0f);
    let (six, top) = (_mm512_set1_epi8(0x3f), _mm512_set1_epi8(0x30));
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract).
        unsafe {
            let base = group.add(b * group_block);
            // the scales and minimums of sub-blocks 0-3 and 4-7, a byte each per lane
            let packed = [0, 1, 2].map(|k| _mm512_loadu_si512(base.add(SCALES + 64 * k).cast()));
            let scales = [
                _mm512_and_si512(packed[0], six),
                _mm512_or_si512(
                    _mm512_and_si512(packed[2], low),
                    _mm512_and_si512(_mm512_srli_epi32::<2>(packed[0]), top),
                ),
            ];
            let mins = [
                _mm512_and_si512(packed[1], six),
                _mm512_or_si512(
                    _mm512_and_si512(_mm512_srli_epi32::<4>(packed[2]), low),
                    _mm512_and_si512(_mm512_srli_epi32::<2>(packed[1]), top),
                ),
            ];
            let mut total = [_mm512_setzero_si512(); C];
            let mut min_total = [_mm512_setzero_si512(); C];
            for j in 0..4 {
                let mut lo = [_mm512_setzero_si512(); C];
                let mut hi = [_mm512_setzero_si512(); C];
                for cc in 0..8 {
                    let w = _mm512_loadu_si512(base.add(qs + 64 * (8 * j + cc)).cast());
                    let (mut u_lo, mut u_hi) =
                        (_mm512_and_si512(w, low), _mm512_and_si512(_mm512_srli_epi16::<4>(w), low));
                    if FIVE {
                        // the fifth bits: bits 2j and 2j + 1 of the high-bits chunk cc
                        let h = _mm512_loadu_si512(base.add(qh + 64 * cc).cast());
                        let sixteen = _mm512_set1_epi8(16);
                        u_lo = _mm512_mask_add_epi8(
                            u_lo,
                            _mm512_test_epi8_mask(h, _mm512_set1_epi8((1u8 << (2 * j)) as i8)),
                            u_lo,
                            sixteen,
                        );
                        u_hi = _mm512_mask_add_epi8(
                            u_hi,
                            _mm512_test_epi8_mask(h, _mm512_set1_epi8((2u8 << (2 * j)) as i8)),
                            u_hi,
                            sixteen,
                        );
                    }
                    for c in 0..C {
                        let a = acts[c].levels.add(b * QK + 64 * j + 4 * cc);
                        lo[c] = _mm512_dpbusd_epi32(lo[c], u_lo, _mm512_set1_epi32(a.cast::<i32>().read_unaligned()));
                        hi[c] = _mm512_dpbusd_epi32(
                            hi[c],
                            u_hi,
                            _mm512_set1_epi32(a.add(32).cast::<i32>().read_unaligned()),
                        );
                    }
                }
                // sub-blocks 2j (low nibbles) and 2j + 1 (high)
                let (s_lo, s_hi) = (2 * j, 2 * j + 1);
                let sc_lo = super::lane_byte(scales[s_lo / 4], s_lo % 4);
                let sc_hi = super::lane_byte(scales[s_hi / 4], s_hi % 4);
                for c in 0..C {
                    total[c] = _mm512_add_epi32(total[c], _mm512_mullo_epi32(lo[c], sc_lo));
                    total[c] = _mm512_add_epi32(total[c], _mm512_mullo_epi32(hi[c], sc_hi));
                }
            }
            for s in 0..8 {
                let m = super::lane_byte(mins[s / 4], s % 4);
                for c in 0..C {
                    let bsums = acts[c].sums.add(b * 16 + 2 * s);
                    let sum = _mm512_set1_epi32(*bsums + *bsums.add(1));
                    min_total[c] = _mm512_add_epi32(min_total[c], _mm512_mullo_epi32(m, sum));
                }
            }
            let d = super::f16x16(base.add(D));
            let dmin = super::f16x16(base.add(DMIN));
            for c in 0..C {
                let da = _mm512_set1_ps(*acts[c].scales.add(b));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[c]), _mm512_mul_ps(d, da), acc[c]);
                acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(min_total[c]), _mm512_mul_ps(dmin, da), acc[c]);
            }
        }
    }
    acc
}

/// Q4_K's sixteen rows' products with `C` columns on AVX2, as two halves of eight rows: the
/// AVX-512 tile's sums in the same order, so the same bits. Each 64-byte register of a group
/// block is two here, rows 0..8 and 8..16; the nibbles' byte products (at most 2·15·127 a
/// lane) are summed in 16 bits over the eight chunks of a sub-block (30480 at most) and
/// widened once, where `vpdpbusd` widens each.
///
/// # Safety
/// AVX2, FMA and F16C; `group` holds `nb` group blocks of Q4_K; each column's activations
/// hold `nb` blocks.
// Columns and halves index the sums and activation rows together.
#[allow(clippy::needless_range_loop)]
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn group_sums_avx2<const C: usize>(group: *const u8, nb: usize, acts: [super::ActRow; C]) -> [[__m256; 2]; C] {
    let (group_block, qs) = (NibbleK::<false>::GROUP_BLOCK, NibbleK::<false>::QS);
    let low = _mm256_set1_epi8(0x0f);
    let (six, top) = (_mm256_set1_epi8(0x3f), _mm256_set1_epi8(0x30));
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; C];
    for b in 0..nb {
        for h in 0..2 {
            // SAFETY: block b < nb of the group and of each column (the caller's contract):
            // half h (32 bytes) of each of the block's 64-byte registers.
            unsafe {
                let base = group.add(b * group_block);
                let packed = [0, 1, 2].map(|k| _mm256_loadu_si256(base.add(SCALES + 64 * k + 32 * h).cast()));
                let scales = [
                    _mm256_and_si256(packed[0], six),
                    _mm256_or_si256(
                        _mm256_and_si256(packed[2], low),
                        _mm256_and_si256(_mm256_srli_epi32::<2>(packed[0]), top),
                    ),
                ];
                let mins = [
                    _mm256_and_si256(packed[1], six),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi32::<4>(packed[2]), low),
                        _mm256_and_si256(_mm256_srli_epi32::<2>(packed[1]), top),
                    ),
                ];
                let mut total = [_mm256_setzero_si256(); C];
                let mut min_total = [_mm256_setzero_si256(); C];
                for j in 0..4 {
                    let mut lo = [_mm256_setzero_si256(); C];
                    let mut hi = [_mm256_setzero_si256(); C];
                    for cc in 0..8 {
                        let w = _mm256_loadu_si256(base.add(qs + 64 * (8 * j + cc) + 32 * h).cast());
                        let (u_lo, u_hi) = (_mm256_and_si256(w, low), _mm256_and_si256(_mm256_srli_epi16::<4>(w), low));
                        for c in 0..C {
                            let a = acts[c].levels.add(b * QK + 64 * j + 4 * cc);
                            let a_lo = _mm256_set1_epi32(a.cast::<i32>().read_unaligned());
                            let a_hi = _mm256_set1_epi32(a.add(32).cast::<i32>().read_unaligned());
                            lo[c] = _mm256_add_epi16(lo[c], _mm256_maddubs_epi16(u_lo, a_lo));
                            hi[c] = _mm256_add_epi16(hi[c], _mm256_maddubs_epi16(u_hi, a_hi));
                        }
                    }
                    // sub-blocks 2j (low nibbles) and 2j + 1 (high)
                    let (s_lo, s_hi) = (2 * j, 2 * j + 1);
                    let sc_lo = super::lane_byte_avx2(scales[s_lo / 4], s_lo % 4);
                    let sc_hi = super::lane_byte_avx2(scales[s_hi / 4], s_hi % 4);
                    for c in 0..C {
                        let (lo, hi) = (_mm256_madd_epi16(lo[c], ones), _mm256_madd_epi16(hi[c], ones));
                        total[c] = _mm256_add_epi32(total[c], _mm256_mullo_epi32(lo, sc_lo));
                        total[c] = _mm256_add_epi32(total[c], _mm256_mullo_epi32(hi, sc_hi));
                    }
                }
                for s in 0..8 {
                    let m = super::lane_byte_avx2(mins[s / 4], s % 4);
                    for c in 0..C {
                        let bsums = acts[c].sums.add(b * 16 + 2 * s);
                        let sum = _mm256_set1_epi32(*bsums + *bsums.add(1));
                        min_total[c] = _mm256_add_epi32(min_total[c], _mm256_mullo_epi32(m, sum));
                    }
                }
                let d = _mm256_cvtph_ps(_mm_loadu_si128(base.add(D + 16 * h).cast()));
                let dmin = _mm256_cvtph_ps(_mm_loadu_si128(base.add(DMIN + 16 * h).cast()));
                for c in 0..C {
                    let da = _mm256_set1_ps(*acts[c].scales.add(b));
                    acc[c][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[c]), _mm256_mul_ps(d, da), acc[c][h]);
                    acc[c][h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(min_total[c]), _mm256_mul_ps(dmin, da), acc[c][h]);
                }
            }
        }
    }
    acc
}

#[cfg(test)]
#[test]
fn the_common_fields_lie_where_the_kernel_reads_them() {
    for parts in [NibbleK::<false>::PARTS, NibbleK::<true>::PARTS] {
        assert_eq!([parts.packed(0), parts.packed(1), parts.packed(2)], [D, DMIN, SCALES]);
    }
    assert_eq!(NibbleK::<true>::QS, NibbleK::<true>::QH + GROUP_ROWS * 32);
}
