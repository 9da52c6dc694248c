//! F32, F16 and BF16 weights on panels.
//!
//! A panel holds the 16 rows' values as `f32`, one register per position along the rows
//! (`[k][16]`). Each activation value, broadcast, is multiplied into it with one FMA: sixteen
//! rows' sums grow in the lanes where they are stored, with no horizontal sums at the end and
//! no alignment to keep (the dot-product tiles reduce every accumulator and read across cache
//! lines unless weights and activations share their offset in the line).
//!
//! F16 and BF16 weights take activations rounded to their format first, as ggml converts them
//! to its `vec_dot_type`: the products of two such values are exact in `f32`, so only the
//! order of the sums differs from the dot-product tiles (and ggml's `vdpbf16ps`, which also
//! reads denormal bfloat16 as zero).

use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::{Avx512, FromGroups, Kind, PANEL_ROWS, lanes, transpose};
use crate::cpu::kernels::simd;
use crate::quants::half::Bf16;

/// A float weight format: its element and how sixteen of them widen to `f32`.
pub(super) trait Float: Copy {
    /// Activations rounded as they are before the products (to the weights' `vec_dot_type`).
    fn round(x: &[f32], out: &mut [f32]);

    /// The first `len` (at most 16) values at `at`, widened; zeros past them.
    ///
    /// # Safety
    /// AVX-512; `at` starts `len` readable values.
    unsafe fn load(at: *const Self, len: usize) -> __m512;

    /// Widens `n` values of a CPU_REPACK group's 16 rows, from its chunk at `group`, into a
    /// panel (`[k][16]`).
    ///
    /// # Safety
    /// As for [`FromGroups::decode_group`].
    unsafe fn widen_group(group: *const u8, n: usize, panel: *mut f32);
}

/// `x` rounded into `out` through a 16-bit format: `narrow`, then `widen`, a stack buffer at a
/// time.
fn round_through<H: Copy + Default>(
    x: &[f32],
    out: &mut [f32],
    narrow: fn(&[f32], &mut [H]),
    widen: fn(&[H], &mut [f32]),
) {
    let mut halves = [H::default(); 256];
    for (x, out) in x.chunks(256).zip(out.chunks_mut(256)) {
        let halves = &mut halves[..x.len()];
        narrow(x, halves);
        widen(halves, out);
    }
}

impl Float for f32 {
    fn round(x: &[f32], out: &mut [f32]) {
        out.copy_from_slice(x);
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn load(at: *const f32, len: usize) -> __m512 {
        // SAFETY: the caller's contract; masked-off lanes are not read.
        unsafe { _mm512_maskz_loadu_ps(lanes(len), at) }
    }

    unsafe fn widen_group(group: *const u8, n: usize, panel: *mut f32) {
        // the group's layout is the panel's
        // SAFETY: n values of 16 rows on each side (the caller's contract), apart.
        unsafe { std::ptr::copy_nonoverlapping(group.cast::<f32>(), panel, n * PANEL_ROWS) }
    }
}

impl Float for u16 {
    fn round(x: &[f32], out: &mut [f32]) {
        round_through(x, out, simd::f32_to_fp16_row, simd::fp16_to_f32_row);
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn load(at: *const u16, len: usize) -> __m512 {
        // SAFETY: the caller's contract; masked-off lanes are not read.
        _mm512_cvtph_ps(unsafe { _mm256_maskz_loadu_epi16(lanes(len), at.cast()) })
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn widen_group(group: *const u8, n: usize, panel: *mut f32) {
        for k in 0..n {
            // SAFETY: value k < n of the 16 rows on each side (the caller's contract); the
            // panel on a cache line.
            unsafe {
                let v = _mm512_cvtph_ps(_mm256_loadu_si256(group.add(32 * k).cast()));
                _mm512_store_ps(panel.add(k * PANEL_ROWS), v);
            }
        }
    }
}

impl Float for Bf16 {
    fn round(x: &[f32], out: &mut [f32]) {
        round_through(x, out, simd::f32_to_bf16_row, simd::bf16_to_f32_row);
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn load(at: *const Bf16, len: usize) -> __m512 {
        // SAFETY: the caller's contract; masked-off lanes are not read.
        let bits = unsafe { _mm256_maskz_loadu_epi16(lanes(len), at.cast()) };
        // bfloat16 is the high half of an f32
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(bits)))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn widen_group(group: *const u8, n: usize, panel: *mut f32) {
        // a chunk holds a pair of values of each row, the first in the low half of its word
        for p in 0..n / 2 {
            // SAFETY: pair p < n / 2 of the 16 rows on each side (the caller's contract); the
            // panel on a cache line.
            unsafe {
                let pairs = _mm512_loadu_si512(group.add(64 * p).cast());
                let first = _mm512_slli_epi32::<16>(pairs);
                let second = _mm512_and_si512(pairs, _mm512_set1_epi32(0xffff_0000_u32 as i32));
                _mm512_store_ps(panel.add(2 * p * PANEL_ROWS), _mm512_castsi512_ps(first));
                _mm512_store_ps(panel.add((2 * p + 1) * PANEL_ROWS), _mm512_castsi512_ps(second));
            }
        }
    }
}

/// Activation columns per tile; the activations of so many columns are interleaved value by
/// value (`[k][12]`), so that a tile's broadcasts read one stream of consecutive addresses.
/// (Twelve rows read side by side, 64-byte lines each, are twelve short streams per span, on
/// which the tiles waited for the cache: about a third of the FMA rate.)
const TILE_COLS: usize = 12;

/// Activation rows rounded as `T` weights take them and interleaved value by value in groups
/// of `COLS` columns (`[k][COLS]`), the float kinds' layout.
pub(super) struct Interleaved<const COLS: usize>;

impl<const COLS: usize> Interleaved<COLS> {
    /// Bytes of `cols` columns of `n` values.
    pub(super) fn size(n: usize, cols: usize) -> usize {
        4 * n * cols.next_multiple_of(COLS)
    }

    /// Where values `start..` of column `col` begin.
    pub(super) fn at(acts: *mut u8, n: usize, col: usize, start: usize) -> *mut u8 {
        let (group, lane) = (col / COLS, col % COLS);
        acts.wrapping_add(4 * ((group * n + start) * COLS + lane))
    }

    /// Writes `x`, values `first..` of a column, rounded, from the column's place `at`.
    ///
    /// # Safety
    /// As for [`Kind::convert`].
    pub(super) unsafe fn convert<T: Float>(x: &[f32], first: usize, at: *mut u8) {
        let mut rounded = [0f32; 256];
        for (part, x) in x.chunks(256).enumerate() {
            let rounded = &mut rounded[..x.len()];
            T::round(x, rounded);
            let first = first + 256 * part;
            for (k, &v) in rounded.iter().enumerate() {
                // SAFETY: value first + k of the column (the caller's contract).
                unsafe { at.cast::<f32>().add((first + k) * COLS).write(v) };
            }
        }
    }
}

/// The float formats' [`Kind`]: `T` weights, `f32` activations.
pub(super) struct Floats<T>(PhantomData<T>);

impl<T: Float> Kind for Floats<T> {
    type Isa = Avx512;
    const TILE_COLS: usize = TILE_COLS;
    const UNIT: usize = 1;
    const SPAN: usize = 2048;

    fn activations_size(n: usize, cols: usize) -> usize {
        Interleaved::<TILE_COLS>::size(n, cols)
    }

    fn activation(acts: *mut u8, n: usize, col: usize, start: usize) -> *mut u8 {
        Interleaved::<TILE_COLS>::at(acts, n, col, start)
    }

    fn panel_size(n: usize) -> usize {
        n.next_multiple_of(16) * 64
    }

    unsafe fn convert(x: &[f32], _n: usize, first: usize, at: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { Interleaved::<TILE_COLS>::convert::<T>(x, first, at) }
    }

    unsafe fn decode(rows: &[*const u8], n: usize, panel: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { decode_rows::<T>(rows, n, panel.cast()) }
    }

    unsafe fn tile<const C: usize>(panel: *const u8, n: usize, acts: &[*const u8; C]) -> [__m512; C] {
        // SAFETY: the caller's contract.
        unsafe { float_tile(panel.cast(), n, &acts.map(|a| a.cast::<f32>())) }
    }
}

impl<T: Float> FromGroups for Floats<T> {
    unsafe fn decode_group(group: *const u8, n: usize, panel: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { T::widen_group(group, n, panel.cast()) }
    }
}

/// # Safety
/// As for [`Kind::decode`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn decode_rows<T: Float>(rows: &[*const u8], n: usize, panel: *mut f32) {
    for k in (0..n).step_by(16) {
        let mut words = [_mm512_setzero_si512(); PANEL_ROWS];
        for (w, &row) in words.iter_mut().zip(rows) {
            // SAFETY: values k..min(k + 16, n) of a row of n values.
            *w = _mm512_castps_si512(unsafe { T::load(row.cast::<T>().add(k), n - k) });
        }
        for (j, w) in transpose(words).into_iter().enumerate() {
            // SAFETY: position k + j < n.next_multiple_of(16) of the panel, on a cache line.
            unsafe { _mm512_store_si512(panel.add((k + j) * 16).cast(), w) };
        }
    }
}

/// The tile's columns are consecutive lanes of one interleaved group (as `Pass::chunk` makes
/// them), so their values are read from the first column's place: one address register
/// instead of one a column, and no indexed operands, which Intel cores split into two
/// micro-operations where an FMA takes one from memory.
///
/// # Safety
/// As for [`Kind::tile`], and `acts[c]` is `acts[0]` advanced by `c` values.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn float_tile<const C: usize>(panel: *const f32, n: usize, acts: &[*const f32; C]) -> [__m512; C] {
    debug_assert!((0..C).all(|c| acts[c] == acts[0].wrapping_add(c)));
    let mut acc = [_mm512_setzero_ps(); C];
    let (mut w, mut a) = (panel, acts[0]);
    for _ in 0..n {
        // SAFETY: on pass k < n, `w` is position k of the panel, on a cache line, and `a`
        // value k of the group's first column (the caller's contract).
        unsafe {
            let weights = _mm512_load_ps(w);
            for (c, acc) in acc.iter_mut().enumerate() {
                *acc = _mm512_fmadd_ps(weights, _mm512_set1_ps(*a.add(c)), *acc);
            }
            (w, a) = (w.add(16), a.add(TILE_COLS));
        }
    }
    acc
}
