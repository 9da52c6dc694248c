//! Q2_K and TQ2_0 in the repacked layout, against Q8_K activations.
//!
//! Both keep a super-block's 256 values as 2-bit fields of 64 bytes: byte `32h + l` holds
//! values `128h + 32k + l` (k = 0..3) in its bits `2k, 2k + 1`. The layout keeps those bytes in
//! chunks of four per row, so chunk `cc` shifted right by `2k` and masked gives sixteen rows'
//! values `128h + 32k + 4(cc % 8)..` (four each) as unsigned bytes for `vpdpbusd`.
//!
//! Q2_K's levels are the fields themselves, in sixteen 16-value sub-blocks, each with a 4-bit
//! scale and minimum in one byte (its four bytes per row, one register, for four sub-blocks):
//! a row's block is `d·Σ scale·Σ q·a − dmin·Σ min·Σ a`. TQ2_0's levels are the fields minus
//! one, with one scale: `d·(Σ q·a − Σ a)`.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{Column, Parts, Scheme, parts_of};
use crate::core::types::Type;
use crate::cpu::repack::layout::GROUP_ROWS;
use crate::quants::half::Half;

/// Values per super-block.
const QK: usize = 256;

/// Q2_K (`SCALED`) or TQ2_0.
pub(super) struct TwoBit<const SCALED: bool>;

impl<const SCALED: bool> TwoBit<SCALED> {
    const PARTS: Parts = parts_of(if SCALED { Type::Q2_K } else { Type::TQ2_0 });
    /// Bytes of a group block.
    const GROUP_BLOCK: usize = GROUP_ROWS * Self::PARTS.block();
    /// Where the fields start in a group block: `d`, then for Q2_K `dmin` and the scales,
    /// then the 2-bit fields.
    const D: usize = 0;
    const DMIN: usize = Self::PARTS.packed(1);
    const SCALES: usize = Self::PARTS.packed(2);
    const QS: usize = Self::PARTS.packed(Self::PARTS.runs.len() - 1);
    /// Where the 2-bit fields and (Q2_K) the scales start in a plain block.
    const PLAIN_QS: usize = Self::PARTS.runs[Self::PARTS.runs.len() - 1].at;
    const PLAIN_D: usize = Self::PARTS.runs[0].at;
}

impl<const SCALED: bool> Scheme for TwoBit<SCALED> {
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
                    let field = |i: usize| {
                        let q = byte(Self::PLAIN_QS + 32 * (i / 128) + i % 32);
                        i32::from((q >> (2 * (i % 128 / 32))) & 3)
                    };
                    let sub = |s: usize| (16 * s..16 * s + 16).map(|i| field(i) * i32::from(a[i])).sum::<i32>();
                    let d = half(Self::PLAIN_D);
                    *sum += if SCALED {
                        let (mut dot, mut mins) = (0, 0);
                        for (s, &bsum) in bsums.iter().enumerate() {
                            dot += i32::from(byte(s) & 15) * sub(s);
                            mins += i32::from(byte(s) >> 4) * bsum;
                        }
                        da * (d * dot as f32 - half(Self::PLAIN_D + 2) * mins as f32)
                    } else {
                        let dot: i32 = (0..16).map(|s| sub(s) - bsums[s]).sum();
                        da * d * dot as f32
                    };
                }
            }
            // SAFETY: the destination holds 16 floats (the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(sums.as_ptr(), out, GROUP_ROWS) };
        }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512(group: *const u8, nb: usize, cols: &[Column]) {
        // SAFETY: the caller's contract.
        run_tile!(cols, |acts| unsafe { group_sums::<SCALED, _>(group, nb, acts) }, 1 2 3 4);
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
unsafe fn group_sums<const SCALED: bool, const C: usize>(
    group: *const u8,
    nb: usize,
    acts: [super::ActRow; C],
) -> [__m512; C] {
    type S<const X: bool> = TwoBit<X>;
    let three = _mm512_set1_epi8(3);
    let nibble = _mm512_set1_epi8(0x0f);
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract).
        unsafe {
            let base = group.add(b * S::<SCALED>::GROUP_BLOCK);
            let qs = base.add(S::<SCALED>::QS);
            let mut total = [_mm512_setzero_si512(); C];
            if !SCALED {
                // the levels are the fields minus one: start from −Σa
                for c in 0..C {
                    let bsums = acts[c].sums.add(b * 16);
                    total[c] = _mm512_set1_epi32(-(0..16).map(|s| *bsums.add(s)).sum::<i32>());
                }
            }
            for h in 0..2 {
                for k in 0..4 {
                    // sub-blocks 8h + 2k (chunks 8h..8h + 4) and 8h + 2k + 1 (the next four)
                    let mut sums = [[_mm512_setzero_si512(); 2]; C];
                    for cc in 0..8 {
                        let w = _mm512_loadu_si512(qs.add(64 * (8 * h + cc)).cast());
                        let u = _mm512_and_si512(_mm512_srl_epi16(w, _mm_cvtsi32_si128(2 * k as i32)), three);
                        for c in 0..C {
                            let a = acts[c].levels.add(b * QK + 128 * h + 32 * k + 4 * cc);
                            let y = _mm512_set1_epi32(a.cast::<i32>().read_unaligned());
                            if SCALED {
                                sums[c][cc / 4] = _mm512_dpbusd_epi32(sums[c][cc / 4], u, y);
                            } else {
                                total[c] = _mm512_dpbusd_epi32(total[c], u, y);
                            }
                        }
                    }
                    if SCALED {
                        for (o, s) in [8 * h + 2 * k, 8 * h + 2 * k + 1].into_iter().enumerate() {
                            let bytes = _mm512_loadu_si512(base.add(S::<SCALED>::SCALES + 64 * (s / 4)).cast());
                            let scale = super::lane_byte(_mm512_and_si512(bytes, nibble), s % 4);
                            for c in 0..C {
                                total[c] = _mm512_add_epi32(total[c], _mm512_mullo_epi32(sums[c][o], scale));
                            }
                        }
                    }
                }
            }
            let d = super::f16x16(base.add(S::<SCALED>::D));
            if SCALED {
                let mut min_total = [_mm512_setzero_si512(); C];
                for s in 0..16 {
                    let bytes = _mm512_loadu_si512(base.add(S::<SCALED>::SCALES + 64 * (s / 4)).cast());
                    let min = super::lane_byte(_mm512_srli_epi32::<4>(bytes), s % 4);
                    let min = _mm512_and_si512(min, _mm512_set1_epi32(0x0f));
                    for c in 0..C {
                        let bsum = _mm512_set1_epi32(*acts[c].sums.add(b * 16 + s));
                        min_total[c] = _mm512_add_epi32(min_total[c], _mm512_mullo_epi32(min, bsum));
                    }
                }
                let dmin = super::f16x16(base.add(S::<SCALED>::DMIN));
                for c in 0..C {
                    let da = _mm512_set1_ps(*acts[c].scales.add(b));
                    acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[c]), _mm512_mul_ps(d, da), acc[c]);
                    acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(min_total[c]), _mm512_mul_ps(dmin, da), acc[c]);
                }
            } else {
                for c in 0..C {
                    let da = _mm512_set1_ps(*acts[c].scales.add(b));
                    acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[c]), _mm512_mul_ps(d, da), acc[c]);
                }
            }
        }
    }
    acc
}

#[cfg(test)]
#[test]
fn the_fields_lie_where_the_kernel_reads_them() {
    assert_eq!([TwoBit::<true>::DMIN, TwoBit::<true>::SCALES, TwoBit::<true>::QS], [32, 64, 64 + 4 * 64]);
    assert_eq!(TwoBit::<false>::QS, 32);
    assert_eq!([TwoBit::<true>::PLAIN_D, TwoBit::<true>::PLAIN_QS], [80, 16]);
    assert_eq!([TwoBit::<false>::PLAIN_D, TwoBit::<false>::PLAIN_QS], [64, 0]);
}
