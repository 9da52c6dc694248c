//! F32 and F16 weights on panels in AVX2 registers, for processors without AVX-512.
//!
//! The layouts are [`floats`](super::floats)'s: a panel holds the 16 rows' values as `f32`,
//! sixteen per position along the rows (`[k][16]`, two registers here), and the activations
//! are rounded as the weights' `vec_dot_type` and interleaved by groups of columns. Each
//! activation value, broadcast, is multiplied into both halves of a position: per position a
//! tile of six columns loads two registers of weights and six values for twelve FMAs, where the
//! dot-product tiles (four rows by two columns, each loading and widening both operands) load
//! six registers for eight, and ggml's tinyBLAS (four by three) seven, four of them widened.

use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::floats::{Float, Interleaved};
use super::{Column, Isa, Kind, PANEL_ROWS, each_tile};

/// AVX2, FMA and F16C: a panel's 16 rows in two registers.
pub(super) struct Avx2;

impl Isa for Avx2 {
    type Sums = [__m256; 2];

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn run_tile<K: Kind<Isa = Self>>(
        panel: *const u8,
        n: usize,
        nrows: usize,
        cols: &[Column],
        accumulate: bool,
    ) {
        // SAFETY: the caller's contract; each destination holds nrows floats.
        unsafe { each_tile::<K>(panel, n, nrows, cols, |out, s| store(out, s, nrows, accumulate)) }
    }
}

/// Stores the first `nrows` of the 16 sums at `out`, or adds them to what is there.
///
/// # Safety
/// AVX2; `out` holds `nrows` floats.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn store(out: *mut f32, sums: [__m256; 2], nrows: usize, accumulate: bool) {
    let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (half, v) in sums.into_iter().enumerate() {
        let at = out.wrapping_add(8 * half);
        let left = nrows.saturating_sub(8 * half).min(8);
        // SAFETY: the first `left` floats at `at` are the destination's (the caller's
        // contract); masked-off lanes are neither read nor written.
        unsafe {
            if left == 8 {
                let v = if accumulate { _mm256_add_ps(_mm256_loadu_ps(at), v) } else { v };
                _mm256_storeu_ps(at, v);
            } else if left > 0 {
                let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(left as i32), lane);
                let v = if accumulate { _mm256_add_ps(_mm256_maskload_ps(at, mask), v) } else { v };
                _mm256_maskstore_ps(at, mask, v);
            }
        }
    }
}

/// A float weight format's values, eight at a time, widened.
pub(super) trait Widen: Float + Default {
    /// The 8 values at `at`, as `f32`.
    ///
    /// # Safety
    /// AVX2, F16C; `at` starts 8 readable values.
    unsafe fn load8(at: *const Self) -> __m256;
}

impl Widen for f32 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load8(at: *const f32) -> __m256 {
        // SAFETY: the caller's contract.
        unsafe { _mm256_loadu_ps(at) }
    }
}

impl Widen for u16 {
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load8(at: *const u16) -> __m256 {
        // SAFETY: the caller's contract.
        _mm256_cvtph_ps(unsafe { _mm_loadu_si128(at.cast()) })
    }
}

/// Activation columns per tile, and per interleaved group: twelve accumulators and two
/// registers of weights leave two of the sixteen registers for the broadcasts.
const TILE_COLS: usize = 6;

/// The AVX2 float formats' [`Kind`]: `T` weights, `f32` activations.
pub(super) struct Floats<T>(PhantomData<T>);

impl<T: Widen> Kind for Floats<T> {
    type Isa = Avx2;
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
        n.next_multiple_of(8) * 4 * PANEL_ROWS
    }

    unsafe fn convert(x: &[f32], _n: usize, first: usize, at: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { Interleaved::<TILE_COLS>::convert::<T>(x, first, at) }
    }

    unsafe fn decode(rows: &[*const u8], n: usize, panel: *mut u8) {
        // SAFETY: the caller's contract.
        unsafe { decode_rows::<T>(rows, n, panel.cast()) }
    }

    unsafe fn tile<const C: usize>(panel: *const u8, n: usize, acts: &[*const u8; C]) -> [[__m256; 2]; C] {
        // SAFETY: the caller's contract: the columns are consecutive lanes of one group.
        unsafe { float_tile(panel.cast(), n, acts[0].cast()) }
    }
}

/// Widens and transposes up to 16 rows of `n` values into the panel, eight rows by eight
/// values at a time; rows past the last and values past `n` read as zero.
///
/// # Safety
/// AVX2, F16C; as for [`Kind::decode`].
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn decode_rows<T: Widen>(rows: &[*const u8], n: usize, panel: *mut f32) {
    for k in (0..n).step_by(8) {
        for (half, rows) in rows.chunks(8).enumerate() {
            let mut values = [_mm256_setzero_ps(); 8];
            for (v, &row) in values.iter_mut().zip(rows) {
                let at = row.cast::<T>().wrapping_add(k);
                *v = if n - k >= 8 {
                    // SAFETY: values k..k + 8 of a row of n values.
                    unsafe { T::load8(at) }
                } else {
                    let mut tail = [T::default(); 8];
                    // SAFETY: values k..n of a row of n values, into a buffer of 8.
                    unsafe { std::ptr::copy_nonoverlapping(at, tail.as_mut_ptr(), n - k) };
                    // SAFETY: 8 values of the buffer.
                    unsafe { T::load8(tail.as_ptr()) }
                };
            }
            for (j, v) in transpose8(values).into_iter().enumerate() {
                // SAFETY: half `half` of position k + j < n.next_multiple_of(8) of the panel
                // (panel_size), on a 32-byte boundary as the panel's cache line is.
                unsafe { _mm256_store_ps(panel.add((k + j) * PANEL_ROWS + 8 * half), v) };
            }
        }
        if rows.len() <= 8 {
            for j in 0..8 {
                // SAFETY: as above: the second half of the position, with no rows.
                unsafe { _mm256_store_ps(panel.add((k + j) * PANEL_ROWS + 8), _mm256_setzero_ps()) };
            }
        }
    }
}

/// The 8×8 transpose: value `j` of row `r` becomes value `r` of row `j`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    // pairs of rows interleaved: value j of rows 2i, 2i + 1 side by side (within 128-bit halves)
    let p: [__m256; 8] = std::array::from_fn(|i| {
        let (a, b) = (r[i / 2 * 2], r[i / 2 * 2 + 1]);
        if i % 2 == 0 { _mm256_unpacklo_ps(a, b) } else { _mm256_unpackhi_ps(a, b) }
    });
    // quads: half h of q[4g + c] holds value c + 4h of rows 4g..4g + 3
    let q: [__m256; 8] = std::array::from_fn(|i| {
        let (g, c) = (i / 4, i % 4);
        let (a, b) = (p[4 * g + c / 2], p[4 * g + 2 + c / 2]);
        if c % 2 == 0 { _mm256_shuffle_ps::<0b01_00_01_00>(a, b) } else { _mm256_shuffle_ps::<0b11_10_11_10>(a, b) }
    });
    // halves: value j of rows 0..3 and of rows 4..7 together
    std::array::from_fn(|j| {
        let (a, b) = (q[j % 4], q[4 + j % 4]);
        if j < 4 { _mm256_permute2f128_ps::<0x20>(a, b) } else { _mm256_permute2f128_ps::<0x31>(a, b) }
    })
}

/// Sixteen rows against `C` consecutive columns of an interleaved group, the first column's
/// values at `acts`: per position, both halves of the panel times each column's value.
///
/// # Safety
/// AVX2, FMA; the panel holds `n` positions; `acts` starts the `C` columns' `n` interleaved
/// values.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn float_tile<const C: usize>(panel: *const f32, n: usize, acts: *const f32) -> [[__m256; 2]; C] {
    let mut acc = [[_mm256_setzero_ps(); 2]; C];
    let (mut w, mut a) = (panel, acts);
    for _ in 0..n {
        // SAFETY: on pass k < n, `w` is position k of the panel, on a cache line, and `a`
        // value k of the group's first column (the caller's contract).
        unsafe {
            let (lo, hi) = (_mm256_load_ps(w), _mm256_load_ps(w.add(8)));
            for (c, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_broadcast_ss(&*a.add(c));
                acc[0] = _mm256_fmadd_ps(lo, x, acc[0]);
                acc[1] = _mm256_fmadd_ps(hi, x, acc[1]);
            }
            (w, a) = (w.add(PANEL_ROWS), a.add(TILE_COLS));
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::super::tests::Line;
    use super::*;
    use crate::cpu::features::features;

    #[test]
    fn transpose8_moves_value_j_of_row_r_to_value_r_of_row_j() {
        if !features().has_avx2_fma() {
            return;
        }
        let rows: [[f32; 8]; 8] = std::array::from_fn(|r| std::array::from_fn(|j| (r * 10 + j) as f32));
        // SAFETY: AVX2 was checked; each array holds 8 floats.
        let out: [[f32; 8]; 8] = unsafe {
            transpose8(rows.map(|r| _mm256_loadu_ps(r.as_ptr()))).map(|v| std::mem::transmute::<__m256, [f32; 8]>(v))
        };
        for (r, row) in rows.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                assert_eq!(out[j][r], v);
            }
        }
    }

    /// The sums of `rows` F32 rows (at most 16) of `n` values against `C` columns, each
    /// against the plain dot product in `f64`.
    fn check<const C: usize>(nrows: usize, n: usize) {
        let value = |i: usize| (((i * 7919) % 263) as f32 - 131.0) / 64.0;
        let weights: Vec<f32> = (0..nrows * n).map(value).collect();
        let columns: [Vec<f32>; C] = std::array::from_fn(|c| (0..n).map(|i| value(3 * i + 77 * c)).collect());
        type K = Floats<f32>;
        let mut panel = vec![Line([0; 64]); K::panel_size(n).div_ceil(64)];
        let mut acts = vec![Line([0; 64]); K::activations_size(n, C).div_ceil(64)];
        let base = acts.as_mut_ptr().cast::<u8>();
        let rows: Vec<*const u8> = (0..nrows).map(|r| weights[r * n..].as_ptr().cast()).collect();
        // SAFETY: AVX2 (checked by the caller); `nrows` rows of n values; a panel and
        // activations of their kind's sizes on cache lines; the columns are the first group's.
        let sums = unsafe {
            K::decode(&rows, n, panel.as_mut_ptr().cast());
            for (c, x) in columns.iter().enumerate() {
                K::convert(x, n, 0, K::activation(base, n, c, 0));
            }
            K::tile::<C>(panel.as_ptr().cast(), n, &std::array::from_fn(|c| K::activation(base, n, c, 0).cast_const()))
                .map(|v| std::mem::transmute::<[__m256; 2], [f32; 16]>(v))
        };
        for (c, column) in columns.iter().enumerate() {
            for r in 0..16 {
                let want: f64 = if r < nrows {
                    (0..n).map(|i| f64::from(weights[r * n + i]) * f64::from(column[i])).sum()
                } else {
                    0.0
                };
                let got = f64::from(sums[c][r]);
                assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "row {r} column {c}: {got} against {want}");
            }
        }
    }

    #[test]
    fn tiles_sum_every_row_against_every_column() {
        if !features().has_avx2_fma() {
            return;
        }
        check::<6>(16, 64);
        check::<5>(15, 37);
        check::<1>(8, 9);
        check::<3>(3, 7);
    }
}
