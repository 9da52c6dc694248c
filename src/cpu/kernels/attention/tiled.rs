//! The tiled way, for batches of at least [`TILE_Q`] queries per head with F32 or F16 keys
//! and values: everything in `f32`, as ggml's tiled kernel computes it.
//!
//! Up to [`TILE_Q`] query rows of one head are taken together over tiles of [`TILE_KV`]
//! keys. A key tile that every row's mask hides is skipped. Otherwise each score is the
//! `f32` multiply-add chain `Σ_d q_d k_d` in order of `d` (keys widened to `f32`), scaled,
//! soft-capped and masked; each row's running maximum and sum of weights take the tile at
//! once (the weights are `e^(s - M)` for the tile's new maximum `M`, summed in `f64`), and
//! the row's accumulator takes `Σ_j w_j v_j` as a multiply-add chain in key order. The chains
//! are computed the same whether a row is alone or in a tile, so the result of a row does not
//! depend on which rows share its tile.

use std::ops::Range;

use super::{Attention, TILE_KV, TILE_Q, scale_f32, view};
use crate::core::types::Type;
use crate::cpu::features::features;
use crate::cpu::kernels::simd;
use crate::cpu::kernels::softmax::{exp_row, max_of};

/// Query rows per micro-tile (the tile's rows are padded to a multiple of it).
const ROWS: usize = 4;
/// Keys per vector (and the keys of a tile are padded to a multiple of it).
const KEYS: usize = 8;

/// One thread's scratch for the tiled way (ggml's layout): the query tile, scores, mask
/// values, accumulators, the value tile as floats and the key tile transposed.
pub(super) struct TileScratch<'a> {
    q: &'a mut [f32],
    scores: &'a mut [f32],
    mask: &'a mut [f32],
    acc: &'a mut [f32],
    values: &'a mut [f32],
    keys_t: &'a mut [f32],
}

impl<'a> TileScratch<'a> {
    fn of(floats: &'a mut [f32], dk: usize, dv: usize) -> TileScratch<'a> {
        let (q, rest) = floats.split_at_mut(TILE_Q * dk);
        let (scores, rest) = rest.split_at_mut(TILE_Q * TILE_KV);
        let (mask, rest) = rest.split_at_mut(TILE_Q * TILE_KV);
        let (acc, rest) = rest.split_at_mut(TILE_Q * dv);
        let (values, rest) = rest.split_at_mut(TILE_KV * dv);
        let keys_t = &mut rest[..TILE_KV * dk];
        TileScratch { q, scores, mask, acc, values, keys_t }
    }
}

impl Attention<'_> {
    /// Query rows `rows`, in tiles of at most [`TILE_Q`] rows of one head.
    pub(super) fn tiled_rows(&self, rows: Range<usize>, scratch: &mut [f32]) {
        let mut t = TileScratch::of(scratch, self.dk, self.dv);
        let n_batch = self.q.ne[1] as usize;
        let mut r = rows.start;
        while r < rows.end {
            let iq1 = self.query_index(r).0;
            let n = TILE_Q.min(rows.end - r).min(n_batch - iq1);
            self.tile(r, n, &mut t);
            r += n;
        }
    }

    /// Rows `first..first + n` (one head) over all keys, written to the result.
    fn tile(&self, first: usize, n: usize, t: &mut TileScratch) {
        let (dk, dv) = (self.dk, self.dv);
        let (iq1, iq2, iq3) = self.query_index(first);
        let slope = self.alibi.slope(iq2 as u32);
        let (k_head, v_head) = (self.kv_head(self.k, iq2, iq3), self.kv_head(self.v, iq2, iq3));
        let padded = n.next_multiple_of(ROWS);
        for i in 0..n {
            t.q[i * dk..][..dk].copy_from_slice(self.query_row((iq1 + i, iq2, iq3)));
        }
        t.q[n * dk..padded * dk].fill(0.0);
        t.acc[..padded * dv].fill(0.0);
        let masks: Vec<Option<&[u16]>> = (0..n).map(|i| self.mask_row((iq1 + i, iq2, iq3))).collect();
        if self.mask.is_none() {
            t.mask[..n * TILE_KV].fill(0.0);
        }
        let mut max = [f32::NEG_INFINITY; TILE_Q];
        let mut sum = [0.0f32; TILE_Q];

        for start in (0..self.n_kv).step_by(TILE_KV) {
            let nk = TILE_KV.min(self.n_kv - start);
            let nk_padded = nk.next_multiple_of(KEYS);
            if self.mask.is_some() {
                let mut live = false;
                for (i, m) in masks.iter().enumerate() {
                    // widened a row at a time (a call per value was 2% of an F32 prompt)
                    let row = &mut t.mask[i * TILE_KV..][..nk];
                    simd::fp16_to_f32_row(&m.unwrap_or_default()[start..start + nk], row);
                    if slope != 1.0 {
                        row.iter_mut().for_each(|x| *x *= slope);
                    }
                    // a fold, not `any`: the compiler vectorizes it
                    live |= row.iter().fold(false, |live, &x| live | (x != f32::NEG_INFINITY));
                }
                if !live {
                    continue;
                }
            }

            self.transpose_keys(start, nk, k_head, t.keys_t);
            for d in 0..dk {
                t.keys_t[d * TILE_KV + nk..d * TILE_KV + nk_padded].fill(0.0);
            }
            scores(t.q, t.keys_t, dk, padded, nk_padded, t.scores, self.simd);

            for i in 0..padded {
                let row = &mut t.scores[i * TILE_KV..][..nk];
                if i >= n {
                    row.fill(0.0);
                    continue;
                }
                self.finish_scores(row, &t.mask[i * TILE_KV..][..nk]);
                let tile_max = max_of(row, self.simd);
                if tile_max == f32::NEG_INFINITY {
                    row.fill(0.0);
                    continue;
                }
                let new_max = max[i].max(tile_max);
                if new_max > max[i] {
                    let shrink = (max[i] - new_max).exp();
                    scale_f32(&mut t.acc[i * dv..][..dv], shrink);
                    sum[i] *= shrink;
                }
                max[i] = new_max;
                sum[i] = (f64::from(sum[i]) + exp_row(row, new_max, self.simd)) as f32;
            }

            for j in 0..nk {
                let value = self.value_row(start + j, v_head);
                widen(self.v.type_, value, 0, &mut t.values[j * dv..][..dv]);
            }
            accumulate(t.scores, t.values, dv, padded, nk, t.acc, self.simd);
        }

        for i in 0..n {
            let acc = &mut t.acc[i * dv..][..dv];
            if let Some(sink) = self.sinks.map(|s| s[iq2]) {
                if sink > max[i] {
                    let shrink = (max[i] - sink).exp();
                    scale_f32(acc, shrink);
                    sum[i] = sum[i] * shrink + 1.0;
                } else {
                    sum[i] += (sink - max[i]).exp();
                }
            }
            let inv = if sum[i] == 0.0 { 0.0 } else { 1.0 / sum[i] };
            scale_f32(acc, inv);
            self.write(first + i, acc);
        }
    }

    /// [`Attention::finish_score`] over a row of a tile's scores and their masked slopes,
    /// as a loop the compiler vectorizes when there is no soft cap (one score at a time it
    /// was half of the kernel's own time in a prompt).
    fn finish_scores(&self, row: &mut [f32], masked: &[f32]) {
        if self.softcap == 0.0 {
            let scale = self.scale;
            row.iter_mut().zip(masked).for_each(|(s, &m)| *s = *s * scale + m);
        } else {
            row.iter_mut().zip(masked).for_each(|(s, &m)| *s = self.finish_score(*s, m));
        }
    }

    /// The key tile from key `start`, transposed and widened: `keys_t[d][j] = k_{start + j}[d]`
    /// for `j < nk`. Whole 8-by-8 blocks go through registers (scattering one value at a time
    /// was most of the kernel's own time in a prompt); the rest a piece of a row at a time.
    fn transpose_keys(&self, start: usize, nk: usize, head: (usize, usize), keys_t: &mut [f32]) {
        let dk = self.dk;
        // keys 0..blocked_keys, values 0..blocked_dims are done in blocks
        let (mut blocked_keys, mut blocked_dims) = (0, 0);
        #[cfg(target_arch = "x86_64")]
        if self.simd && crate::cpu::features::features().has_avx2_fma() {
            (blocked_keys, blocked_dims) = (nk - nk % KEYS, dk - dk % KEYS);
            let f16 = self.k.type_ == Type::F16;
            for j0 in (0..blocked_keys).step_by(KEYS) {
                let rows: [&[u8]; KEYS] = std::array::from_fn(|c| self.key_row(start + j0 + c, head));
                // SAFETY: AVX2 and F16C are present (checked above).
                unsafe { avx2::transpose_keys(f16, &rows, blocked_dims, j0, keys_t) };
            }
        }
        let mut piece = [0.0f32; TILE_KV];
        // the blocks covered whole rows where dk is a multiple of 8: only the last keys remain
        let first = if blocked_dims == dk { blocked_keys } else { 0 };
        for j in first..nk {
            let key = self.key_row(start + j, head);
            let from = if j < blocked_keys { blocked_dims } else { 0 };
            for d0 in (from..dk).step_by(TILE_KV) {
                let piece = &mut piece[..TILE_KV.min(dk - d0)];
                widen(self.k.type_, key, d0, piece);
                for (d, &x) in piece.iter().enumerate() {
                    keys_t[(d0 + d) * TILE_KV + j] = x;
                }
            }
        }
    }
}

/// Values `from..from + out.len()` of an F32 or F16 row (given as bytes) as floats.
fn widen(ty: Type, row: &[u8], from: usize, out: &mut [f32]) {
    let to = from + out.len();
    match ty {
        Type::F16 => simd::fp16_to_f32_row(&view::<u16>(row, to)[from..], out),
        _ => out.copy_from_slice(&view::<f32>(row, to)[from..]),
    }
}

/// `out[i][j] = Σ_d q[i][d] · keys_t[d][j]` as a fused multiply-add chain in order of `d`, for
/// `rows` query rows (a multiple of [`ROWS`]) and `keys` keys (a multiple of [`KEYS`]); rows
/// of `out` are [`TILE_KV`] apart.
fn scores(q: &[f32], keys_t: &[f32], dk: usize, rows: usize, keys: usize, out: &mut [f32], simd: bool) {
    crate::ggml_assert!(
        q.len() >= rows * dk && keys_t.len() >= dk * TILE_KV && out.len() >= rows * TILE_KV && keys <= TILE_KV,
        "flash_attn_ext: score tile out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    if simd && features().has_avx512() {
        // SAFETY: AVX-512 is present; the bounds are asserted above.
        return unsafe { avx512::scores(q, keys_t, dk, rows, keys, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if simd && crate::cpu::features::features().has_avx2_fma() {
        // SAFETY: AVX2, FMA and F16C are present; the bounds are asserted above.
        return unsafe { avx2::scores(q, keys_t, dk, rows, keys, out) };
    }
    let _ = simd;
    for i in 0..rows {
        for j in 0..keys {
            out[i * TILE_KV + j] = (0..dk).fold(0.0f32, |s, d| q[i * dk + d].mul_add(keys_t[d * TILE_KV + j], s));
        }
    }
}

/// `acc[i] += Σ_j p[i][j] · values[j]` as a fused multiply-add chain in key order, for `rows`
/// rows (a multiple of [`ROWS`]) and `keys` keys; rows of `p` are [`TILE_KV`] apart, rows of
/// `values` and `acc` `dv`.
fn accumulate(p: &[f32], values: &[f32], dv: usize, rows: usize, keys: usize, acc: &mut [f32], simd: bool) {
    crate::ggml_assert!(
        p.len() >= rows * TILE_KV && values.len() >= keys * dv && acc.len() >= rows * dv && keys <= TILE_KV,
        "flash_attn_ext: value tile out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    if simd && features().has_avx512() {
        // SAFETY: AVX-512 is present; the bounds are asserted above.
        return unsafe { avx512::accumulate(p, values, dv, rows, keys, acc) };
    }
    #[cfg(target_arch = "x86_64")]
    if simd && crate::cpu::features::features().has_avx2_fma() && dv.is_multiple_of(KEYS) {
        // SAFETY: AVX2, FMA and F16C are present; the bounds are asserted above.
        return unsafe { avx2::accumulate(p, values, dv, rows, keys, acc) };
    }
    let _ = simd;
    for i in 0..rows {
        for j in 0..keys {
            let w = p[i * TILE_KV + j];
            if w != 0.0 {
                for (a, &v) in acc[i * dv..][..dv].iter_mut().zip(&values[j * dv..][..dv]) {
                    *a = w.mul_add(v, *a);
                }
            }
        }
    }
}

/// The keys among the first `keys` that weigh something in one of rows `i..i + ROWS` of `p`
/// (rows [`TILE_KV`] apart), written to `live`; returns how many.
fn live_keys(p: &[f32], i: usize, keys: usize, live: &mut [usize; TILE_KV]) -> usize {
    let mut n = 0;
    for j in 0..keys {
        if (0..ROWS).any(|r| p[(i + r) * TILE_KV + j] != 0.0) {
            live[n] = j;
            n += 1;
        }
    }
    n
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{ROWS, TILE_KV, live_keys};

    /// Lanes `0..n.min(16)` of a 512-bit register, and the next sixteen.
    fn lanes(n: usize) -> [__mmask16; 2] {
        let mask = |n: usize| ((1u32 << n.min(16)) - 1) as __mmask16;
        [mask(n), mask(n.saturating_sub(16))]
    }

    /// The lanes under `m` of the two registers at `at` and `at + 16` (the others zero).
    ///
    /// # Safety
    /// The processor supports AVX-512F; the lanes under the masks are readable.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load_pair(m: [__mmask16; 2], at: *const f32) -> [__m512; 2] {
        // SAFETY: the caller's contract; lanes outside the masks are not read.
        unsafe { [_mm512_maskz_loadu_ps(m[0], at), _mm512_maskz_loadu_ps(m[1], at.wrapping_add(16))] }
    }

    /// Stores the lanes under `m` of `v` at `at` and `at + 16`.
    ///
    /// # Safety
    /// The processor supports AVX-512F; the lanes under the masks are writable.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store_pair(m: [__mmask16; 2], at: *mut f32, v: [__m512; 2]) {
        // SAFETY: the caller's contract; lanes outside the masks are not written.
        unsafe {
            _mm512_mask_storeu_ps(at, m[0], v[0]);
            _mm512_mask_storeu_ps(at.wrapping_add(16), m[1], v[1]);
        }
    }

    /// `acc[r] += x(r) · b` for each of the [`ROWS`] rows, one fused multiply-add per lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fma_rows(acc: &mut [[__m512; 2]; ROWS], b: [__m512; 2], x: impl Fn(usize) -> f32) {
        for (r, a) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(x(r));
            a[0] = _mm512_fmadd_ps(x, b[0], a[0]);
            a[1] = _mm512_fmadd_ps(x, b[1], a[1]);
        }
    }

    /// [`super::scores`]: four rows by two registers of keys at a time, the last keys (a
    /// multiple of 8) under a mask.
    ///
    /// # Safety
    /// The processor supports AVX-512F; the bounds of [`super::scores`] hold.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn scores(q: &[f32], keys_t: &[f32], dk: usize, rows: usize, keys: usize, out: &mut [f32]) {
        let (pq, pk, po) = (q.as_ptr(), keys_t.as_ptr(), out.as_mut_ptr());
        for i in (0..rows).step_by(ROWS) {
            for j in (0..keys).step_by(32) {
                let m = lanes(keys - j);
                let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
                for d in 0..dk {
                    // SAFETY: d < dk and the lanes under the masks are keys below keys <=
                    // TILE_KV: inside keys_t (lanes outside are not read); rows i..i + 4 <=
                    // rows, inside q.
                    unsafe {
                        let b = load_pair(m, pk.add(d * TILE_KV + j));
                        fma_rows(&mut acc, b, |r| *pq.add((i + r) * dk + d));
                    }
                }
                for (r, a) in acc.iter().enumerate() {
                    // SAFETY: row i + r < rows; the lanes under the masks are columns below
                    // keys <= TILE_KV.
                    unsafe { store_pair(m, po.add((i + r) * TILE_KV + j), *a) };
                }
            }
        }
    }

    /// [`super::accumulate`]: four rows by two registers of values at a time, the last
    /// values under a mask, skipping keys that weigh nothing in all four rows.
    ///
    /// # Safety
    /// The processor supports AVX-512F; the bounds of [`super::accumulate`] hold.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn accumulate(p: &[f32], values: &[f32], dv: usize, rows: usize, keys: usize, acc: &mut [f32]) {
        let (pp, pv, pa) = (p.as_ptr(), values.as_ptr(), acc.as_mut_ptr());
        for i in (0..rows).step_by(ROWS) {
            let mut live = [0usize; TILE_KV];
            let n_live = live_keys(p, i, keys, &mut live);
            for c in (0..dv).step_by(32) {
                let m = lanes(dv - c);
                // SAFETY: rows i..i + 4 <= rows; the lanes under the masks are columns below
                // dv: inside acc.
                let mut a: [[__m512; 2]; ROWS] =
                    std::array::from_fn(|r| unsafe { load_pair(m, pa.add((i + r) * dv + c)) });
                for &j in &live[..n_live] {
                    // SAFETY: j < keys: inside p, and values' row j holds dv values, of which
                    // the masks take columns below dv.
                    unsafe {
                        let b = load_pair(m, pv.add(j * dv + c));
                        fma_rows(&mut a, b, |r| *pp.add((i + r) * TILE_KV + j));
                    }
                }
                for (r, x) in a.iter().enumerate() {
                    // SAFETY: as for the loads.
                    unsafe { store_pair(m, pa.add((i + r) * dv + c), *x) };
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{KEYS, ROWS, TILE_KV, live_keys};

    /// [`super::scores`]: four rows by two vectors of keys at a time.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C; the bounds of [`super::scores`] hold.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn scores(q: &[f32], keys_t: &[f32], dk: usize, rows: usize, keys: usize, out: &mut [f32]) {
        let (pq, pk, po) = (q.as_ptr(), keys_t.as_ptr(), out.as_mut_ptr());
        for i in (0..rows).step_by(ROWS) {
            let mut j = 0;
            while j < keys {
                let wide = j + 2 * KEYS <= keys;
                let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
                for d in 0..dk {
                    // SAFETY: d < dk and j + 16 <= keys <= TILE_KV (or j + 8 when not wide):
                    // inside keys_t; rows i..i + 4 <= rows, inside q.
                    unsafe {
                        let b0 = _mm256_loadu_ps(pk.add(d * TILE_KV + j));
                        let b1 = if wide { _mm256_loadu_ps(pk.add(d * TILE_KV + j + KEYS)) } else { b0 };
                        for (r, a) in acc.iter_mut().enumerate() {
                            let x = _mm256_broadcast_ss(&*pq.add((i + r) * dk + d));
                            a[0] = _mm256_fmadd_ps(x, b0, a[0]);
                            a[1] = _mm256_fmadd_ps(x, b1, a[1]);
                        }
                    }
                }
                for (r, a) in acc.iter().enumerate() {
                    // SAFETY: row i + r < rows, columns j..j + 16 (or 8) <= keys <= TILE_KV.
                    unsafe {
                        _mm256_storeu_ps(po.add((i + r) * TILE_KV + j), a[0]);
                        if wide {
                            _mm256_storeu_ps(po.add((i + r) * TILE_KV + j + KEYS), a[1]);
                        }
                    }
                }
                j += if wide { 2 * KEYS } else { KEYS };
            }
        }
    }

    /// [`super::Attention::transpose_keys`] for keys `j0..j0 + 8` (`rows`, F16 or F32) and
    /// values `0..dims` (a multiple of 8): each 8-by-8 block is loaded a key at a time,
    /// widened, transposed in registers and stored a value at a time.
    ///
    /// # Safety
    /// The processor supports AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn transpose_keys(f16: bool, rows: &[&[u8]; KEYS], dims: usize, j0: usize, keys_t: &mut [f32]) {
        let size = if f16 { 2 } else { 4 };
        crate::ggml_assert!(
            dims.is_multiple_of(KEYS)
                && j0 + KEYS <= TILE_KV
                && (dims == 0 || keys_t.len() >= (dims - 1) * TILE_KV + j0 + KEYS)
                && rows.iter().all(|r| r.len() >= dims * size),
            "flash_attn_ext: key block out of bounds"
        );
        for d0 in (0..dims).step_by(KEYS) {
            // SAFETY: d0 + 8 <= dims values of each row (asserted); unaligned loads.
            let r: [__m256; KEYS] = std::array::from_fn(|c| unsafe {
                let at = rows[c].as_ptr();
                if f16 {
                    _mm256_cvtph_ps(_mm_loadu_si128(at.add(d0 * 2).cast()))
                } else {
                    _mm256_loadu_ps(at.add(d0 * 4).cast())
                }
            });
            // pairs, then quads within each 128-bit lane, then the lanes: value d0 + c of
            // the eight keys ends in one register, stored as row d0 + c of keys_t
            let lo = |a, b| _mm256_unpacklo_ps(a, b);
            let hi = |a, b| _mm256_unpackhi_ps(a, b);
            let (t0, t1, t2, t3) = (lo(r[0], r[1]), hi(r[0], r[1]), lo(r[2], r[3]), hi(r[2], r[3]));
            let (t4, t5, t6, t7) = (lo(r[4], r[5]), hi(r[4], r[5]), lo(r[6], r[7]), hi(r[6], r[7]));
            let even = |a, b| _mm256_shuffle_ps::<0x44>(a, b);
            let odd = |a, b| _mm256_shuffle_ps::<0xEE>(a, b);
            // [c]: value d0 + c (low lane) and d0 + c + 4 (high lane) of keys 0..4, of keys 4..8
            let first_keys = [even(t0, t2), odd(t0, t2), even(t1, t3), odd(t1, t3)];
            let last_keys = [even(t4, t6), odd(t4, t6), even(t5, t7), odd(t5, t7)];
            for c in 0..4 {
                let (a, b) = (first_keys[c], last_keys[c]);
                // SAFETY: rows d0 + c and d0 + c + 4 < dims of keys_t, columns j0..j0 + 8
                // <= TILE_KV (asserted).
                unsafe {
                    let at = keys_t.as_mut_ptr().add((d0 + c) * TILE_KV + j0);
                    _mm256_storeu_ps(at, _mm256_permute2f128_ps::<0x20>(a, b));
                    _mm256_storeu_ps(at.add(4 * TILE_KV), _mm256_permute2f128_ps::<0x31>(a, b));
                }
            }
        }
    }

    /// [`super::accumulate`]: four rows by two vectors of values at a time, skipping keys
    /// that weigh nothing in all four rows.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C; the bounds of [`super::accumulate`] hold
    /// and `dv` is a multiple of 8.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn accumulate(p: &[f32], values: &[f32], dv: usize, rows: usize, keys: usize, acc: &mut [f32]) {
        let (pp, pv, pa) = (p.as_ptr(), values.as_ptr(), acc.as_mut_ptr());
        for i in (0..rows).step_by(ROWS) {
            let mut live = [0usize; TILE_KV];
            let n_live = live_keys(p, i, keys, &mut live);
            let mut c = 0;
            while c < dv {
                let wide = c + 2 * KEYS <= dv;
                // SAFETY: rows i..i + 4 <= rows and columns c..c + 16 (or 8) <= dv: inside acc.
                let mut a: [[__m256; 2]; ROWS] = std::array::from_fn(|r| unsafe {
                    let at = pa.add((i + r) * dv + c);
                    [_mm256_loadu_ps(at), if wide { _mm256_loadu_ps(at.add(KEYS)) } else { _mm256_setzero_ps() }]
                });
                for &j in &live[..n_live] {
                    // SAFETY: j < keys: inside values and p.
                    unsafe {
                        let b0 = _mm256_loadu_ps(pv.add(j * dv + c));
                        let b1 = if wide { _mm256_loadu_ps(pv.add(j * dv + c + KEYS)) } else { b0 };
                        for (r, x) in a.iter_mut().enumerate() {
                            let w = _mm256_broadcast_ss(&*pp.add((i + r) * TILE_KV + j));
                            x[0] = _mm256_fmadd_ps(w, b0, x[0]);
                            x[1] = _mm256_fmadd_ps(w, b1, x[1]);
                        }
                    }
                }
                for (r, x) in a.iter().enumerate() {
                    // SAFETY: as for the loads.
                    unsafe {
                        let at = pa.add((i + r) * dv + c);
                        _mm256_storeu_ps(at, x[0]);
                        if wide {
                            _mm256_storeu_ps(at.add(KEYS), x[1]);
                        }
                    }
                }
                c += if wide { 2 * KEYS } else { KEYS };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::testing::Rng;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn key_blocks_land_transposed() {
        if !crate::cpu::features::features().has_avx2_fma() {
            return;
        }
        let mut rng = Rng::new(4);
        let dims = 24;
        let keys: Vec<Vec<f32>> = (0..KEYS).map(|_| (0..dims).map(|_| rng.uniform(-2.0, 2.0)).collect()).collect();
        let j0 = 16;
        for f16 in [false, true] {
            let widened = |x: f32| if f16 { half::f16::from_f32(x).to_f32() } else { x };
            let bytes: Vec<Vec<u8>> = keys
                .iter()
                .map(|k| {
                    k.iter()
                        .flat_map(|&x| {
                            if f16 { half::f16::from_f32(x).to_le_bytes().to_vec() } else { x.to_le_bytes().to_vec() }
                        })
                        .collect()
                })
                .collect();
            let rows: [&[u8]; KEYS] = std::array::from_fn(|c| &bytes[c][..]);
            let mut keys_t = vec![f32::NAN; dims * TILE_KV];
            // SAFETY: AVX2 checked above (F16C comes with it on every x86 processor that has it)
            unsafe { avx2::transpose_keys(f16, &rows, dims, j0, &mut keys_t) };
            for d in 0..dims {
                for c in 0..KEYS {
                    let want = widened(keys[c][d]);
                    assert_eq!(keys_t[d * TILE_KV + j0 + c].to_bits(), want.to_bits(), "value {d} of key {c}");
                }
                assert!(keys_t[d * TILE_KV..][..j0].iter().all(|x| x.is_nan()), "outside the block");
            }
        }
    }

    #[test]
    fn simd_tiles_are_the_scalar_chains_bit_for_bit() {
        let mut rng = Rng::new(9);
        let (dk, dv, rows) = (72, 40, 8);
        let q: Vec<f32> = (0..rows * dk).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let keys_t: Vec<f32> = (0..dk * TILE_KV).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let values: Vec<f32> = (0..TILE_KV * dv).map(|_| rng.uniform(-1.0, 1.0)).collect();
        // weights with zeros, as masked keys leave them
        let p: Vec<f32> =
            (0..rows * TILE_KV).map(|i| if i.is_multiple_of(5) { 0.0 } else { rng.uniform(0.0, 1.0) }).collect();
        // the ways this processor has, each called directly (the dispatch takes the widest)
        type Tile = unsafe fn(&[f32], &[f32], usize, usize, usize, &mut [f32]);
        #[cfg(target_arch = "x86_64")]
        let ways: Vec<(&str, Tile, Tile)> = [
            (features().has_avx512(), "AVX-512", avx512::scores as Tile, avx512::accumulate as Tile),
            (crate::cpu::features::features().has_avx2_fma(), "AVX2", avx2::scores, avx2::accumulate),
        ]
        .into_iter()
        .filter_map(|(has, name, scores, accumulate)| has.then_some((name, scores, accumulate)))
        .collect();
        #[cfg(not(target_arch = "x86_64"))]
        let ways: Vec<(&str, Tile, Tile)> = Vec::new();
        // 40 keys or values: a full register and a masked half on AVX-512
        for keys in [8, 24, 40, 64] {
            let mut want = vec![0.0f32; rows * TILE_KV];
            scores(&q, &keys_t, dk, rows, keys, &mut want, false);
            let start: Vec<f32> = (0..rows * dv).map(|_| rng.uniform(-1.0, 1.0)).collect();
            let mut want_acc = start.clone();
            accumulate(&p, &values, dv, rows, keys, &mut want_acc, false);
            for &(name, scores, accumulate) in &ways {
                let mut got = vec![0.0f32; rows * TILE_KV];
                let mut got_acc = start.clone();
                // SAFETY: each way is kept only when the processor has it; the shapes are
                // those the scalar chains above took.
                unsafe {
                    scores(&q, &keys_t, dk, rows, keys, &mut got);
                    accumulate(&p, &values, dv, rows, keys, &mut got_acc);
                }
                assert_eq!(got, want, "{name} scores of {keys} keys");
                assert_eq!(got_acc, want_acc, "{name} values of {keys} keys");
            }
        }
    }
}
