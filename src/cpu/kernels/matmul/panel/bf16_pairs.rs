//! BF16 weights on panels of bfloat16 pairs, multiplied with `vdpbf16ps`, on processors with
//! AVX512-BF16.
//!
//! Register `p` of a panel holds values `2p` and `2p + 1` of the 16 rows, one 32-bit lane per
//! row (`[k / 2][16][2]`, bfloat16). The activations are rounded to bfloat16, as ggml rounds
//! them to BF16's `vec_dot_type`, and kept as pairs too: one broadcast pair against a panel
//! register adds both products of each row into that row's lane. That is half the
//! instructions of widening the weights to `f32` ([`super::floats`]), and the same arithmetic
//! as ggml's tiles on these processors (the products of bfloat16 values are exact in `f32`;
//! `vdpbf16ps` reads denormal inputs as zero).
//!
//! The pairs need rows of even length ([`applies`]); BF16 rows of odd length take the
//! widening kind.

use std::arch::x86_64::*;

use super::{Avx512, FromGroups, Kind, PANEL_ROWS, transpose};
use crate::cpu::features::features;
use crate::cpu::kernels::simd;
use crate::quants::half::Bf16;

/// Activation columns per tile, interleaved pair by pair (`[k / 2][12]`) for the reason
/// [`super::floats`] gives.
const TILE_COLS: usize = 12;

/// Whether BF16 weights with rows of `n` values take this kind: the processor has AVX512-BF16
/// (the panels' AVX-512 is checked by the route) and is not Intel's, and the rows split into
/// pairs.
///
/// On Intel cores `vdpbf16ps` runs at about half the rate of the FMAs on widened values, so
/// the widening kind is faster there: Emerald Rapids, BF16 2816×1024 by 512, one thread,
/// 36.6 ms on pairs, 23.4 widened (ggml 38.7); two threads 19.4 and 13.8. On Zen 4 the pairs
/// were the faster.
pub(super) fn applies(n: i64) -> bool {
    let f = features();
    n % 2 == 0 && f.avx512bf16 && !f.intel
}

/// The [`Kind`] of BF16 weights multiplied as bfloat16 pairs.
pub(super) struct Bf16Pairs;

impl Kind for Bf16Pairs {
    type Isa = Avx512;
    const TILE_COLS: usize = TILE_COLS;
    const UNIT: usize = 2;
    const SPAN: usize = 2048;

    fn activations_size(n: usize, cols: usize) -> usize {
        2 * n * cols.next_multiple_of(TILE_COLS)
    }

    fn activation(acts: *mut u8, n: usize, col: usize, start: usize) -> *mut u8 {
        let (group, lane) = (col / TILE_COLS, col % TILE_COLS);
        acts.wrapping_add(4 * ((group * n / 2 + start / 2) * TILE_COLS + lane))
    }

    fn panel_size(n: usize) -> usize {
        // 16 pairs of every row per transpose
        n.next_multiple_of(32) * 32
    }

    unsafe fn convert(x: &[f32], _n: usize, first: usize, at: *mut u8) {
        let mut halves = [Bf16::default(); 256];
        for (part, x) in x.chunks(256).enumerate() {
            let halves = &mut halves[..x.len()];
            simd::f32_to_bf16_row(x, halves);
            let first = first + 128 * part;
            // (x holds whole pairs: it is a run of units)
            for (p, pair) in halves.chunks_exact(2).enumerate() {
                let word = u32::from(pair[0].bits) | u32::from(pair[1].bits) << 16;
                // SAFETY: pair first + p of the column (the caller's contract).
                unsafe { at.cast::<u32>().add((first + p) * TILE_COLS).write(word) };
            }
        }
    }

    unsafe fn decode(rows: &[*const u8], n: usize, panel: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { decode_rows(rows, n, panel.cast()) }
    }

    unsafe fn tile<const C: usize>(panel: *const u8, n: usize, acts: &[*const u8; C]) -> [__m512; C] {
        // SAFETY: the caller's contract; the kind is only chosen where `applies` found
        // AVX512-BF16.
        unsafe { pair_tile(panel.cast(), n, &acts.map(|a| a.cast::<u32>())) }
    }
}

impl FromGroups for Bf16Pairs {
    unsafe fn decode_group(group: *const u8, n: usize, panel: *mut u8) {
        // the group's layout is the panel's: a pair of values of each row per chunk
        // SAFETY: n / 2 pairs of 16 rows on each side (the caller's contract), apart.
        unsafe { std::ptr::copy_nonoverlapping(group, panel, n / 2 * 4 * PANEL_ROWS) }
    }
}

/// # Safety
/// As for [`Kind::decode`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn decode_rows(rows: &[*const u8], n: usize, panel: *mut u32) {
    for k in (0..n).step_by(32) {
        let mask = if n - k >= 32 { u32::MAX } else { (1u32 << (n - k)) - 1 };
        let mut words = [_mm512_setzero_si512(); PANEL_ROWS];
        for (w, &row) in words.iter_mut().zip(rows) {
            // SAFETY: values k..min(k + 32, n) of a row of n bfloat16 values; masked-off
            // lanes are not read.
            *w = unsafe { _mm512_maskz_loadu_epi16(mask, row.cast::<u16>().add(k).cast()) };
        }
        for (j, w) in transpose(words).into_iter().enumerate() {
            // SAFETY: pair k / 2 + j < n.next_multiple_of(32) / 2 of the panel, on a cache line.
            unsafe { _mm512_store_si512(panel.add((k / 2 + j) * PANEL_ROWS).cast(), w) };
        }
    }
}

/// The tile's columns are consecutive lanes of one interleaved group, read from the first
/// column's place (see `floats::float_tile`).
///
/// # Safety
/// As for [`Kind::tile`], `acts[c]` is `acts[0]` advanced by `c` pairs, and the processor has
/// AVX512-BF16.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")]
unsafe fn pair_tile<const C: usize>(panel: *const u32, n: usize, acts: &[*const u32; C]) -> [__m512; C] {
    debug_assert!((0..C).all(|c| acts[c] == acts[0].wrapping_add(c)));
    let mut acc = [_mm512_setzero_ps(); C];
    let (mut w, mut a) = (panel, acts[0]);
    for _ in 0..n / 2 {
        // SAFETY: on pass p < n / 2, `w` is pair p of the panel, on a cache line, and `a` pair
        // p of the group's first column (the caller's contract). The vector types differ only
        // in name.
        unsafe {
            let weights = std::mem::transmute::<__m512i, __m512bh>(_mm512_load_si512(w.cast()));
            for (c, acc) in acc.iter_mut().enumerate() {
                let pair = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(*a.add(c) as i32));
                *acc = _mm512_dpbf16_ps(*acc, weights, pair);
            }
            (w, a) = (w.add(PANEL_ROWS), a.add(TILE_COLS));
        }
    }
    acc
}
