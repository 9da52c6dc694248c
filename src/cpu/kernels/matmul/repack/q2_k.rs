//! Q2_K, Q3_K and TQ2_0 in the repacked layout, against Q8_K activations.
//!
//! All three keep a super-block's 256 values as 2-bit fields of 64 bytes: byte `32h + l` holds
//! values `128h + 32k + l` (k = 0..3) in its bits `2k, 2k + 1`. The layout keeps those bytes in
//! chunks of four per row, so chunk `cc` shifted right by `2k` and masked gives sixteen rows'
//! values `128h + 32k + 4(cc % 8)..` (four each) as unsigned bytes for `vpdpbusd`.
//!
//! - Q2_K's levels are the fields, in sixteen 16-value sub-blocks, each with a 4-bit scale and
//!   minimum in one byte (four bytes per row make a register): a row's block is
//!   `d·Σ scale·Σ q·a − dmin·Σ min·Σ a`.
//! - Q3_K adds a third bit (bit `4h + k` of `hmask[l]`; chunk `cc % 8` of the 32 `hmask`
//!   bytes), and its levels are the three bits minus 4, scaled per sub-block by a 6-bit scale
//!   minus 32 (packed in 12 bytes: three registers, unpacked once per block for sixteen rows).
//! - TQ2_0's levels are the fields minus one, with one scale for the block.
//!
//! The sums of each sub-block (of the block, for TQ2_0) start from `−BIAS·Σa`.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::{Column, Parts, Scheme, parts_of};
use crate::core::types::Type;
use crate::cpu::repack::layout::GROUP_ROWS;
use crate::quants::half::Half;

/// Values per super-block.
const QK: usize = 256;

/// One of the 2-bit formats, as the product reads it.
pub(super) trait Crumbs {
    const TYPE: Type;
    /// What the stored bits exceed the level by.
    const BIAS: i32;
    /// Whether each 16-value sub-block has a scale (Q2_K, Q3_K), and a minimum (Q2_K).
    const SCALED: bool;
    const MINS: bool = false;
    /// Whether a third bit comes from `hmask` (Q3_K).
    const HIGH: bool = false;

    /// The scale (Q2_K also the minimum) of sub-block `s` from a row's plain scale bytes.
    fn scale_min(scales: &[u8], s: usize) -> (i32, i32);

    /// The scales of the sixteen rows of a group block whose scale registers start at `at`:
    /// sub-block `s`'s in byte `s % 4` of register `s / 4`, as `u8`, and what to subtract.
    ///
    /// # Safety
    /// AVX-512; `at` holds the format's scale registers.
    #[cfg(target_arch = "x86_64")]
    unsafe fn scales(at: *const u8) -> ([__m512i; 4], i32);
}

pub(super) struct Q2K;
pub(super) struct Q3K;
pub(super) struct Tq2_0;

impl Crumbs for Q2K {
    const TYPE: Type = Type::Q2_K;
    const BIAS: i32 = 0;
    const SCALED: bool = true;
    const MINS: bool = true;

    fn scale_min(scales: &[u8], s: usize) -> (i32, i32) {
        (i32::from(scales[s] & 15), i32::from(scales[s] >> 4))
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn scales(at: *const u8) -> ([__m512i; 4], i32) {
        // SAFETY: the caller's contract: four registers.
        let regs = [0, 1, 2, 3].map(|k| unsafe { _mm512_loadu_si512(at.add(64 * k).cast()) });
        (regs.map(|r| _mm512_and_si512(r, _mm512_set1_epi8(0x0f))), 0)
    }
}

impl Crumbs for Q3K {
    const TYPE: Type = Type::Q3_K;
    const BIAS: i32 = 4;
    const SCALED: bool = true;
    const HIGH: bool = true;

    /// The block format's own decoding of its 12 scale bytes.
    fn scale_min(scales: &[u8], s: usize) -> (i32, i32) {
        let packed: &[u8; 12] = scales.try_into().unwrap_or_else(|_| crate::ggml_abort!("Q3_K: 12 scale bytes"));
        (crate::quants::k_quants::q3_k::scale(packed, s), 0)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn scales(at: *const u8) -> ([__m512i; 4], i32) {
        // SAFETY: the caller's contract: three registers (bytes 0-3, 4-7 and 8-11 of each row).
        let [r0, r1, top] = [0, 1, 2].map(|k| unsafe { _mm512_loadu_si512(at.add(64 * k).cast()) });
        let low = [r0, r1, _mm512_srli_epi32::<4>(r0), _mm512_srli_epi32::<4>(r1)];
        let tops = [top, _mm512_srli_epi32::<2>(top), _mm512_srli_epi32::<4>(top), _mm512_srli_epi32::<6>(top)];
        let regs = [0, 1, 2, 3].map(|q| {
            _mm512_or_si512(
                _mm512_and_si512(low[q], _mm512_set1_epi8(0x0f)),
                _mm512_slli_epi32::<4>(_mm512_and_si512(tops[q], _mm512_set1_epi8(3))),
            )
        });
        (regs, 32)
    }
}

impl Crumbs for Tq2_0 {
    const TYPE: Type = Type::TQ2_0;
    const BIAS: i32 = 1;
    const SCALED: bool = false;

    fn scale_min(_: &[u8], _: usize) -> (i32, i32) {
        (1, 0)
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn scales(_: *const u8) -> ([__m512i; 4], i32) {
        crate::ggml_abort!("TQ2_0 has no sub-block scales")
    }
}

/// The scheme of a 2-bit format `F`.
pub(super) struct TwoBit<F>(PhantomData<F>);

impl<F: Crumbs> TwoBit<F> {
    const PARTS: Parts = parts_of(F::TYPE);
    /// Bytes of a group block.
    const GROUP_BLOCK: usize = GROUP_ROWS * Self::PARTS.block();
    /// The runs: `d`, then Q2_K's `dmin`, the scales, Q3_K's `hmask`, the 2-bit fields.
    const RUNS: usize = Self::PARTS.runs.len();
    const DMIN: usize = Self::PARTS.packed(1);
    const SCALES: usize = Self::PARTS.packed(Self::RUNS - 2 - F::HIGH as usize);
    const HMASK: usize = Self::PARTS.packed(Self::RUNS - 2);
    const QS: usize = Self::PARTS.packed(Self::RUNS - 1);
    /// The plain bytes of the fields (a run's start in the plain block).
    const fn plain(run: usize) -> usize {
        Self::PARTS.runs[run].at
    }
}

impl<F: Crumbs> Scheme for TwoBit<F> {
    const QK: usize = QK;
    const SUMS: usize = QK / 16;
    const TILE_COLS: usize = 4;

    unsafe fn tile_scalar(group: *const u8, nb: usize, cols: &[Column]) {
        let (parts, group_block, runs) = (Self::PARTS, Self::GROUP_BLOCK, Self::RUNS);
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
                    let level = |i: usize| {
                        let (h, k, l) = (i / 128, i % 128 / 32, i % 32);
                        let q = (byte(Self::plain(runs - 1) + 32 * h + l) >> (2 * k)) & 3;
                        let third = if F::HIGH { (byte(Self::plain(runs - 2) + l) >> (4 * h + k)) & 1 } else { 0 };
                        i32::from(q | third << 2) - F::BIAS
                    };
                    let scales: Vec<u8> = if F::SCALED {
                        let run = parts.runs[Self::RUNS - 2 - F::HIGH as usize];
                        (run.at..run.at + run.size).map(byte).collect()
                    } else {
                        Vec::new()
                    };
                    let (mut dot, mut mins) = (0, 0);
                    for (s, &bsum) in bsums.iter().enumerate() {
                        let (scale, min) = F::scale_min(&scales, s);
                        dot += scale * (16 * s..16 * s + 16).map(|i| level(i) * i32::from(a[i])).sum::<i32>();
                        mins += min * bsum;
                    }
                    let d = half(Self::plain(0));
                    *sum += da * (d * dot as f32);
                    if F::MINS {
                        *sum -= da * (half(Self::plain(1)) * mins as f32);
                    }
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
        run_tile!(cols, |acts| unsafe { group_sums::<F, _>(group, nb, acts) }, 1 2 3 4);
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
unsafe fn group_sums<F: Crumbs, const C: usize>(group: *const u8, nb: usize, acts: [super::ActRow; C]) -> [__m512; C] {
    type S<F> = TwoBit<F>;
    let three = _mm512_set1_epi8(3);
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract).
        unsafe {
            let base = group.add(b * S::<F>::GROUP_BLOCK);
            let (qs, hmask) = (base.add(S::<F>::QS), base.add(S::<F>::HMASK));
            let bsums = |c: usize, s: usize| *acts[c].sums.add(b * 16 + s);
            let mut total = [_mm512_setzero_si512(); C];
            let (scales, scale_bias) = if F::SCALED {
                F::scales(base.add(S::<F>::SCALES))
            } else {
                // one sum for the block, from −BIAS·Σa
                for c in 0..C {
                    total[c] = _mm512_set1_epi32(-F::BIAS * (0..16).map(|s| bsums(c, s)).sum::<i32>());
                }
                ([_mm512_setzero_si512(); 4], 0)
            };
            for h in 0..2 {
                for k in 0..4 {
                    // sub-blocks 8h + 2k (chunks 8h..8h + 4) and 8h + 2k + 1 (the next four),
                    // two chains of sums per column
                    let subs = [8 * h + 2 * k, 8 * h + 2 * k + 1];
                    let mut sums = [[_mm512_setzero_si512(); 2]; C];
                    if F::SCALED {
                        for c in 0..C {
                            sums[c] = subs.map(|s| _mm512_set1_epi32(-F::BIAS * bsums(c, s)));
                        }
                    }
                    for cc in 0..8 {
                        let w = _mm512_loadu_si512(qs.add(64 * (8 * h + cc)).cast());
                        let mut u = _mm512_and_si512(_mm512_srl_epi16(w, _mm_cvtsi32_si128(2 * k as i32)), three);
                        if F::HIGH {
                            let bits = _mm512_loadu_si512(hmask.add(64 * cc).cast());
                            let set = _mm512_test_epi8_mask(bits, _mm512_set1_epi8((1u8 << (4 * h + k)) as i8));
                            u = _mm512_mask_add_epi8(u, set, u, _mm512_set1_epi8(4));
                        }
                        for c in 0..C {
                            let a = acts[c].levels.add(b * QK + 128 * h + 32 * k + 4 * cc);
                            let y = _mm512_set1_epi32(a.cast::<i32>().read_unaligned());
                            sums[c][cc / 4] = _mm512_dpbusd_epi32(sums[c][cc / 4], u, y);
                        }
                    }
                    for (o, s) in subs.into_iter().enumerate() {
                        let scale = if F::SCALED {
                            _mm512_sub_epi32(super::lane_byte(scales[s / 4], s % 4), _mm512_set1_epi32(scale_bias))
                        } else {
                            _mm512_set1_epi32(1)
                        };
                        for c in 0..C {
                            let scaled = if F::SCALED { _mm512_mullo_epi32(sums[c][o], scale) } else { sums[c][o] };
                            total[c] = _mm512_add_epi32(total[c], scaled);
                        }
                    }
                }
            }
            let d = super::f16x16(base);
            for c in 0..C {
                let da = _mm512_set1_ps(*acts[c].scales.add(b));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[c]), _mm512_mul_ps(d, da), acc[c]);
            }
            if F::MINS {
                // the minimums, each the high nibble of its scale byte (sixteen times too
                // large), by the sub-blocks' level sums a byte at a time: a sum (at most
                // 16·128 in size) is 128·hi + lo with hi in −16..=16 and lo in 0..128, so
                // `vpdpbusd` takes four sub-blocks' minimums by their `hi`, and by their `lo`
                let high = _mm512_set1_epi8(0xf0u8 as i8);
                let mins = [0, 1, 2, 3]
                    .map(|r| _mm512_and_si512(_mm512_loadu_si512(base.add(S::<F>::SCALES + 64 * r).cast()), high));
                let mut min_total = [_mm512_setzero_si512(); C];
                for c in 0..C {
                    let level_sums = _mm512_loadu_si512(acts[c].sums.add(b * 16).cast());
                    let parts =
                        [_mm512_srai_epi32::<7>(level_sums), _mm512_and_si512(level_sums, _mm512_set1_epi32(127))]
                            .map(|part| _mm512_castsi128_si512(_mm512_cvtepi32_epi8(part)));
                    let [hi, lo] = parts.map(|bytes| {
                        mins.iter().enumerate().fold(_mm512_setzero_si512(), |sum, (r, &m)| {
                            // sub-blocks 4r..4r + 4's bytes, in every lane
                            let y = _mm512_permutexvar_epi32(_mm512_set1_epi32(r as i32), bytes);
                            _mm512_dpbusd_epi32(sum, m, y)
                        })
                    });
                    min_total[c] = _mm512_add_epi32(_mm512_slli_epi32::<7>(hi), lo);
                }
                let dmin = _mm512_mul_ps(super::f16x16(base.add(S::<F>::DMIN)), _mm512_set1_ps(1.0 / 16.0));
                for c in 0..C {
                    let da = _mm512_set1_ps(*acts[c].scales.add(b));
                    acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(min_total[c]), _mm512_mul_ps(dmin, da), acc[c]);
                }
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_lie_where_the_kernel_reads_them() {
        type Q2 = TwoBit<Q2K>;
        type Q3 = TwoBit<Q3K>;
        assert_eq!([Q2::DMIN, Q2::SCALES, Q2::QS], [32, 64, 64 + 4 * 64]);
        assert_eq!([Q3::SCALES, Q3::HMASK, Q3::QS], [32, 32 + 3 * 64, 32 + 11 * 64]);
        assert_eq!(TwoBit::<Tq2_0>::QS, 32);
        assert_eq!([Q2::plain(0), Q2::plain(Q2::RUNS - 1)], [80, 16]);
        assert_eq!([Q3::plain(0), Q3::plain(Q3::RUNS - 2), Q3::plain(Q3::RUNS - 1)], [108, 0, 32]);
    }

    #[test]
    fn q3_k_scales_unpack_as_the_block_format_packs_them() {
        let block = crate::quants::k_quants::q3_k::BlockQ3K {
            scales: std::array::from_fn(|i| (37 * i + 11) as u8),
            ..Default::default()
        };
        for s in 0..16 {
            assert_eq!(Q3K::scale_min(&block.scales, s).0, block.sub_scale(s), "sub-block {s}");
        }
    }
}
