//! IQ4_XS in the repacked layout, against Q8_K activations.
//!
//! A super-block is eight 32-value sub-blocks of IQ4_NL nibbles (byte `16s + l` holds value
//! `32s + l` in its low nibble and `32s + 16 + l` in its high one), each with a 6-bit scale:
//! its low four bits in the bytes `scales_l` (two per byte), its top two in the word
//! `scales_h`. The layout keeps `d`, the sixteen rows' `scales_h` (one word each) and
//! `scales_l` (one 32-bit lane each), then the nibbles in chunks of four bytes per row. The
//! nibbles are looked up as the format's levels plus 128 (unsigned bytes for `vpdpbusd`), each
//! sub-block's sum starts from `−128·Σa` and is multiplied by its scale minus 32, and the
//! block's integer sum is scaled by both `d` once.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{Column, Parts, Scheme, parts_of};
use crate::core::types::Type;
use crate::cpu::repack::layout::GROUP_ROWS;
use crate::quants::half::Half;
use crate::quants::iq4::LEVELS;

/// Values per super-block.
const QK: usize = 256;
const PARTS: Parts = parts_of(Type::IQ4_XS);
/// Bytes of a group block.
const GROUP_BLOCK: usize = GROUP_ROWS * PARTS.block();
/// Where the fields start in a group block.
const D: usize = PARTS.packed(0);
const SCALES_H: usize = PARTS.packed(1);
const SCALES_L: usize = PARTS.packed(2);
const QS: usize = PARTS.packed(3);
/// What is added to a level to make it unsigned.
const BIAS: i32 = 128;

pub(super) struct Iq4Xs;

/// The 6-bit scale of sub-block `s` from a row's `scales_h` word and `scales_l` bytes (as one
/// little-endian word): the multiplier of the sub-block is this minus 32.
fn scale(high: u32, low: u32, s: usize) -> i32 {
    (((low >> (4 * s)) & 15) | (((high >> (2 * s)) & 3) << 4)) as i32
}

impl Scheme for Iq4Xs {
    const QK: usize = QK;
    const SUMS: usize = QK / 16;
    const TILE_COLS: usize = 4;

    unsafe fn tile_scalar(group: *const u8, nb: usize, cols: &[Column]) {
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(group, nb * GROUP_BLOCK) };
        for &(act, out) in cols {
            let mut sums = [0f32; GROUP_ROWS];
            for (b, blk) in bytes.chunks_exact(GROUP_BLOCK).enumerate() {
                // SAFETY: block b < nb of the column.
                let (a, da) = unsafe { (std::slice::from_raw_parts(act.levels.add(b * QK), QK), *act.scales.add(b)) };
                for (r, sum) in sums.iter_mut().enumerate() {
                    let byte = |t: usize| blk[PARTS.position(t, r)];
                    let word = |t: usize, n: usize| (0..n).fold(0u32, |w, k| w | u32::from(byte(t + k)) << (8 * k));
                    let (high, low) = (word(2, 2), word(4, 4));
                    let level = |i: usize| {
                        let q = byte(8 + 16 * (i / 32) + i % 16);
                        i32::from(LEVELS[usize::from(if i % 32 < 16 { q & 15 } else { q >> 4 })])
                    };
                    let dot: i32 = (0..8)
                        .map(|s| {
                            let sub: i32 = (32 * s..32 * s + 32).map(|i| level(i) * i32::from(a[i])).sum();
                            (scale(high, low, s) - 32) * sub
                        })
                        .sum();
                    let d = Half::from_bits(word(0, 2) as u16).to_f32();
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
    let unsigned = LEVELS.map(|l| (l as u8).wrapping_add(BIAS as u8) as i8);
    // SAFETY: the table holds the 16 bytes read.
    let table = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(unsigned.as_ptr().cast()) });
    let low = _mm512_set1_epi8(0x0f);
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract).
        unsafe {
            let base = group.add(b * GROUP_BLOCK);
            let high = _mm512_cvtepu16_epi32(_mm256_loadu_si256(base.add(SCALES_H).cast()));
            let low_bits = _mm512_loadu_si512(base.add(SCALES_L).cast());
            let mut total = [_mm512_setzero_si512(); C];
            for s in 0..8 {
                let mut sums = [_mm512_setzero_si512(); C];
                for c in 0..C {
                    let bsums = acts[c].sums.add(b * 16 + 2 * s);
                    sums[c] = _mm512_set1_epi32(-BIAS * (*bsums + *bsums.add(1)));
                }
                for j in 0..4 {
                    let w = _mm512_loadu_si512(base.add(QS + 64 * (4 * s + j)).cast());
                    let u_lo = _mm512_shuffle_epi8(table, _mm512_and_si512(w, low));
                    let u_hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16::<4>(w), low));
                    for c in 0..C {
                        let a = acts[c].levels.add(b * QK + 32 * s + 4 * j);
                        sums[c] =
                            _mm512_dpbusd_epi32(sums[c], u_lo, _mm512_set1_epi32(a.cast::<i32>().read_unaligned()));
                        sums[c] = _mm512_dpbusd_epi32(
                            sums[c],
                            u_hi,
                            _mm512_set1_epi32(a.add(16).cast::<i32>().read_unaligned()),
                        );
                    }
                }
                let scale = _mm512_or_si512(
                    _mm512_and_si512(
                        _mm512_srl_epi32(low_bits, _mm_cvtsi32_si128(4 * s as i32)),
                        _mm512_set1_epi32(15),
                    ),
                    _mm512_slli_epi32::<4>(_mm512_and_si512(
                        _mm512_srl_epi32(high, _mm_cvtsi32_si128(2 * s as i32)),
                        _mm512_set1_epi32(3),
                    )),
                );
                let scale = _mm512_sub_epi32(scale, _mm512_set1_epi32(32));
                for c in 0..C {
                    total[c] = _mm512_add_epi32(total[c], _mm512_mullo_epi32(sums[c], scale));
                }
            }
            let d = super::f16x16(base.add(D));
            for c in 0..C {
                let da = _mm512_set1_ps(*acts[c].scales.add(b));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[c]), _mm512_mul_ps(d, da), acc[c]);
            }
        }
    }
    acc
}

#[cfg(test)]
#[test]
fn scales_take_their_high_bits_from_the_word() {
    // sub-block 3: low nibble 0xB of scales_l[1] (its high nibble), high bits 0b10 (bits 6-7)
    assert_eq!(scale(0b10 << 6, 0xB0 << 8, 3), 0b10_1011);
    assert_eq!([D, SCALES_H, SCALES_L, QS], [0, 32, 64, 128]);
}
