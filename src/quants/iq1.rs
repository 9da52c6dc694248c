//! 1-bit lattice blocks of 256 values: each group of 8 values is one point of a grid of 2048
//! ternary points (coordinates -1, 0, 1), shifted by ±1/8 and scaled.
//!
//! * `iq1_s` (1.56 bits a value): 11-bit grid indices (low 8 bits in `qs`, high 3 in `qh`);
//!   per 32 values a little-endian 16-bit `qh` word holding the four high parts, a 3-bit scale
//!   in bits 12..14 and the shift's sign in bit 15. A value is
//!   `d * (2*scale + 1) * (grid value ± 1/8)`.
//! * `iq1_m` (1.75 bits): per 16 values a 3-bit scale and per 8 values a shift sign; the
//!   super-block scale is a binary16 spread over the top nibbles of the four 16-bit scale
//!   words. No separate `d` field.
//!
//! The quantizers split each sub-block's values into the three levels by an exhaustive search
//! over the two boundaries of the sorted values, then round each group of 8 onto the grid.
//! `iq1_s` needs an importance matrix; `iq1_m` falls back to x² weights.

use std::cmp::Ordering;

use super::BlockCheck;
use super::BlockFormat;
use super::c_max;
use super::half::Half;
use super::iq_grids::{self, Grid, Lookup, Neighbours, check_scale, points8};
use super::iq2::missing_imatrix;
use super::k_quants::{QK_K, sum_squares};
use super::search::nearest_int;
use crate::core::types::Type;
use std::mem::offset_of;

/// The shift applied to grid values.
const DELTA: f32 = 0.125;
/// Level values with a positive shift, and with a negative one.
const SHIFTED_UP: [f32; 3] = [-1.0 + DELTA, DELTA, 1.0 + DELTA];
const SHIFTED_DOWN: [f32; 3] = [-1.0 - DELTA, -DELTA, 1.0 - DELTA];
/// Sub-blocks with a largest magnitude below these are zero.
const GROUP_MAX_EPS_IQ1_S: f32 = 1e-12;
const GROUP_MAX_EPS_IQ1_M: f32 = 1e-7;

/// `block_iq1_s`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq1S {
    pub d: Half,
    /// Low 8 bits of the 32 grid indices.
    pub qs: [u8; QK_K / 8],
    /// Eight little-endian words, one per 32 values: 4×3 high index bits, the 3-bit scale and
    /// the shift sign.
    pub qh: [u8; QK_K / 16],
}

/// `block_iq1_m`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq1M {
    /// Low 8 bits of the 32 grid indices.
    pub qs: [u8; QK_K / 8],
    /// Per 16 values: for each group of 8, 3 high index bits and the shift sign in a nibble.
    pub qh: [u8; QK_K / 16],
    /// Four little-endian words: four 3-bit scales each, and one nibble of the binary16
    /// super-block scale on top.
    pub scales: [u8; QK_K / 32],
}

impl Default for BlockIq1S {
    fn default() -> Self {
        BlockIq1S { d: Half::default(), qs: [0; QK_K / 8], qh: [0; QK_K / 16] }
    }
}

impl Default for BlockIq1M {
    fn default() -> Self {
        BlockIq1M { qs: [0; QK_K / 8], qh: [0; QK_K / 16], scales: [0; QK_K / 32] }
    }
}

const _: () = assert!(std::mem::size_of::<BlockIq1S>() == 50);
const _: () = assert!(std::mem::size_of::<BlockIq1M>() == 56);
const _: () = assert!(std::mem::align_of::<BlockIq1S>() == 1 && std::mem::align_of::<BlockIq1M>() == 1);

/// Writes the 8 values of grid point `index`, shifted by `delta` and scaled by `dl`.
fn expand(y: &mut [f32], index: usize, delta: f32, dl: f32) {
    for (out, &level) in y.iter_mut().zip(&points8(Grid::Iq1S)[index]) {
        *out = dl * ((i32::from(level) - 1) as f32 + delta);
    }
}

/// The shift of a group: +1/8 unless its sign bit is set.
fn delta(negative: bool) -> f32 {
    if negative { -DELTA } else { DELTA }
}

/// Importance of each value of a sub-block: from the imatrix, or x² without one.
fn sub_block_weights<const N: usize>(xb: &[f32], qw: Option<&[f32]>, sigma2: f32) -> [f32; N] {
    match qw {
        Some(qw) => std::array::from_fn(|i| qw[i] * (sigma2 + xb[i] * xb[i]).sqrt()),
        None => std::array::from_fn(|i| xb[i] * xb[i]),
    }
}

/// Sorts values with their positions the way glibc's `qsort` orders arrays this small (the
/// reference's build): a top-down merge sort that keeps the left element unless it compares
/// greater, so equal values keep their order and NaNs land where they do in ggml.
fn sort_with_positions<const N: usize>(x: &[f32]) -> [(f32, usize); N] {
    fn merge_sort(items: &mut [(f32, usize)]) {
        let n = items.len();
        if n <= 1 {
            return;
        }
        let (left, right) = items.split_at_mut(n / 2);
        merge_sort(left);
        merge_sort(right);
        let mut merged = [(0.0f32, 0usize); 32];
        let (mut i, mut j) = (0, 0);
        for slot in merged.iter_mut().take(n) {
            let take_left =
                j == right.len() || (i < left.len() && left[i].0.partial_cmp(&right[j].0) != Some(Ordering::Greater));
            if take_left {
                *slot = left[i];
                i += 1;
            } else {
                *slot = right[j];
                j += 1;
            }
        }
        items.copy_from_slice(&merged[..n]);
    }
    let mut items: [(f32, usize); N] = std::array::from_fn(|i| (x[i], i));
    merge_sort(&mut items);
    items
}

/// The grid point whose shifted values best fit the group `x` at `scale`: among the
/// neighbours of the rounded point, or (if none gives an error below `f32::MAX`, which takes
/// NaN or infinite inputs) the whole grid. ggml's whole-grid pass reads values past the group
/// there; this one judges the group itself.
fn best_neighbour(list: &[u16], x: &[f32], w: &[f32], scale: f32, values: &[f32; 3]) -> usize {
    let points = points8(Grid::Iq1S);
    let error = |index: usize| {
        let mut d2 = 0.0f32;
        for ((&level, &v), &wi) in points[index].iter().zip(x).zip(w) {
            let diff = scale * values[level as usize] - v;
            d2 += wi * diff * diff;
        }
        d2
    };
    let pick = |candidates: &mut dyn Iterator<Item = usize>| {
        let mut best_d2 = f32::MAX;
        let mut best = None;
        for index in candidates {
            let d2 = error(index);
            if d2 < best_d2 {
                best_d2 = d2;
                best = Some(index);
            }
        }
        best
    };
    pick(&mut list.iter().map(|&j| usize::from(j)))
        .or_else(|| pick(&mut (0..points.len())))
        .unwrap_or_else(|| crate::ggml_abort!("iq1: did not find a grid point"))
}

/// The 3-bit sub-block scale code: `scale ≈ d * (2*code + 1)`.
fn scale_code(id: f32, scale: f32) -> u16 {
    nearest_int(0.5 * (id * scale - 1.0)).clamp(0, 7) as u16
}

/// Grid indices of a sub-block's groups of 8 for the levels `levels` (0..2); groups off the
/// grid take their best neighbour at `scale` under the values `values_of(group)`. The second
/// value says whether every group was on the grid.
fn grid_indices<const G: usize>(
    map: &Neighbours,
    xb: &[f32],
    weight: &[f32],
    levels: &[i8],
    scale: f32,
    values_of: impl Fn(usize) -> &'static [f32; 3],
) -> ([usize; G], bool) {
    let mut all_on_grid = true;
    let indices = std::array::from_fn(|k| {
        let span = 8 * k..8 * k + 8;
        match map.lookup(Grid::Iq1S.number(&levels[span.clone()])) {
            Lookup::OnGrid(index) => index,
            Lookup::Near(list) => {
                all_on_grid = false;
                best_neighbour(list, &xb[span.clone()], &weight[span], scale, values_of(k))
            }
        }
    });
    (indices, all_on_grid)
}

/// The least-squares scale of a sub-block's chosen grid points, if it is positive.
fn refit(xb: &[f32], weight: &[f32], indices: &[usize], values_of: impl Fn(usize) -> &'static [f32; 3]) -> Option<f32> {
    let points = points8(Grid::Iq1S);
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for (k, &index) in indices.iter().enumerate() {
        for (j, &level) in points[index].iter().enumerate() {
            let w = weight[8 * k + j];
            let q = values_of(k)[level as usize];
            sumqx += w * q * xb[8 * k + j];
            sumq2 += w * q * q;
        }
    }
    (sumqx > 0.0 && sumq2 > 0.0).then(|| sumqx / sumq2)
}

/// Levels 0..2 of a sub-block from the two boundaries in sorted order.
fn split_levels<const N: usize>(sorted: &[(f32, usize); N], i1: usize, i2: usize) -> [i8; N] {
    let mut levels = [0i8; N];
    for (j, &(_, i)) in sorted.iter().enumerate() {
        levels[i] = if j < i1 {
            0
        } else if j < i2 {
            1
        } else {
            2
        };
    }
    levels
}

fn largest_magnitude(xb: &[f32]) -> f32 {
    xb[1..].iter().fold(xb[0].abs(), |m, &v| c_max(m, v.abs()))
}

impl BlockIq1S {
    /// Quantizes one super-block with the importance weights `qw` (one per value).
    pub fn quantize_weighted(x: &[f32], qw: &[f32], map: &Neighbours) -> Self {
        const SUB: usize = 32;
        let mut block = BlockIq1S::default();
        let mut qh = [0u16; QK_K / SUB];
        let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
        let mut scales = [0.0f32; QK_K / SUB];
        let mut negative_shift = [false; QK_K / SUB];
        let mut max_scale = 0.0f32;
        for ib in 0..QK_K / SUB {
            let xb = &x[SUB * ib..SUB * (ib + 1)];
            let weight: [f32; SUB] = sub_block_weights(xb, Some(&qw[SUB * ib..]), sigma2);
            let max = largest_magnitude(xb);
            if max < GROUP_MAX_EPS_IQ1_S {
                continue;
            }
            let sorted = sort_with_positions::<SUB>(xb);
            let mut sumx = [0.0f32; SUB + 1];
            let mut sumw = [0.0f32; SUB + 1];
            for (j, &(_, i)) in sorted.iter().enumerate() {
                sumx[j + 1] = sumx[j] + weight[i] * xb[i];
                sumw[j + 1] = sumw[j] + weight[i];
            }
            let mut best_score = -f32::MAX;
            let mut scale = max;
            let mut best: Option<(usize, usize, bool)> = None;
            for i1 in 0..=SUB {
                for i2 in i1..=SUB {
                    for (values, negative) in [(&SHIFTED_UP, false), (&SHIFTED_DOWN, true)] {
                        let sumqx = (sumx[i1] - sumx[0]) * values[0]
                            + (sumx[i2] - sumx[i1]) * values[1]
                            + (sumx[SUB] - sumx[i2]) * values[2];
                        let sumq2 = (sumw[i1] - sumw[0]) * values[0] * values[0]
                            + (sumw[i2] - sumw[i1]) * values[1] * values[1]
                            + (sumw[SUB] - sumw[i2]) * values[2] * values[2];
                        if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                            scale = sumqx / sumq2;
                            best_score = scale * sumqx;
                            best = Some((i1, i2, negative));
                        }
                    }
                }
            }
            let Some((i1, i2, mut negative)) = best else {
                continue;
            };
            let mut levels = split_levels(&sorted, i1, i2);
            if scale < 0.0 {
                levels = levels.map(|l| 2 - l);
                scale = -scale;
                negative = !negative;
            }
            let values = if negative { &SHIFTED_DOWN } else { &SHIFTED_UP };
            let (indices, all_on_grid) = grid_indices::<4>(map, xb, &weight, &levels, scale, |_| values);
            if !all_on_grid && let Some(fitted) = refit(xb, &weight, &indices, |_| values) {
                scale = fitted;
            }
            for (k, &index) in indices.iter().enumerate() {
                block.qs[4 * ib + k] = index as u8;
                qh[ib] |= ((index >> 8) as u16) << (3 * k);
            }
            check_scale(scale);
            scales[ib] = scale;
            negative_shift[ib] = negative;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale != 0.0 {
            let d = max_scale / 15.0;
            block.d = Half::from_f32(d * 1.125);
            let id = 1.0 / d;
            for ib in 0..QK_K / SUB {
                let code = scale_code(id, scales[ib]) | u16::from(negative_shift[ib]) << 3;
                qh[ib] |= code << 12;
            }
        }
        for (out, word) in block.qh.chunks_exact_mut(2).zip(qh) {
            out.copy_from_slice(&word.to_le_bytes());
        }
        block
    }
}

// SAFETY: repr(C) of a Half and byte arrays: 50 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq1S {
    const TYPE: Type = Type::IQ1_S;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq1S, d)]);
    const NEEDS_IMATRIX: bool = true;

    /// ggml has no quantizer for this format without an importance matrix.
    fn quantize(x: &[f32]) -> Self {
        let _ = x;
        missing_imatrix(Self::TYPE)
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let qh = u16::from_le_bytes([self.qh[2 * ib], self.qh[2 * ib + 1]]);
            let dl = d * (2 * i32::from(qh >> 12 & 7) + 1) as f32;
            let shift = delta(qh & 0x8000 != 0);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let index = usize::from(self.qs[4 * ib + l]) | usize::from(qh >> (3 * l) & 7) << 8;
                expand(y, index, shift, dl);
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let map = iq_grids::neighbours(Grid::Iq1S);
        for (i, block) in y.iter_mut().enumerate() {
            let span = i * QK_K..(i + 1) * QK_K;
            *block = BlockIq1S::quantize_weighted(&x[span.clone()], &weights[span], &map);
        }
    }
}

/// Shift choices of an `iq1_m` sub-block: bit 1 for its first group of 8, bit 0 for the
/// second; a set bit is a negative shift.
fn shifted_values(shifts: usize, k: usize) -> &'static [f32; 3] {
    let negative = if k == 0 { shifts >= 2 } else { shifts % 2 == 1 };
    if negative { &SHIFTED_DOWN } else { &SHIFTED_UP }
}

impl BlockIq1M {
    /// Quantizes one super-block, with importance weights `qw` (one per value) if given.
    pub fn quantize_with(x: &[f32], qw: Option<&[f32]>, map: &Neighbours) -> Self {
        const SUB: usize = 16;
        let mut block = BlockIq1M::default();
        let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
        let mut scales = [0.0f32; QK_K / SUB];
        let mut shifts = [0usize; QK_K / SUB];
        let mut max_scale = 0.0f32;
        let up = SHIFTED_UP;
        let down = SHIFTED_DOWN;
        let (cp1, cp2) = (up[0] * up[0] - up[1] * up[1], up[1] * up[1] - up[2] * up[2]);
        let (cm1, cm2) = (down[0] * down[0] - down[1] * down[1], down[1] * down[1] - down[2] * down[2]);
        for ib in 0..QK_K / SUB {
            let xb = &x[SUB * ib..SUB * (ib + 1)];
            let weight: [f32; SUB] = sub_block_weights(xb, qw.map(|w| &w[SUB * ib..]), sigma2);
            let max = largest_magnitude(xb);
            if max < GROUP_MAX_EPS_IQ1_M {
                continue;
            }
            let sorted = sort_with_positions::<SUB>(xb);
            // Prefix sums of w·x and w kept apart for each half of the sub-block, since the
            // halves may shift in different directions.
            let mut px = [[0.0f32; SUB + 1]; 2];
            let mut pw = [[0.0f32; SUB + 1]; 2];
            for (j, &(_, i)) in sorted.iter().enumerate() {
                let h = usize::from(i >= SUB / 2);
                px[h][j + 1] = px[h][j] + weight[i] * xb[i];
                px[1 - h][j + 1] = px[1 - h][j];
                pw[h][j + 1] = pw[h][j] + weight[i];
                pw[1 - h][j + 1] = pw[1 - h][j];
            }
            let txs = [px[0][SUB], px[1][SUB]];
            let tws = [pw[0][SUB], pw[1][SUB]];
            let mut best_score = -f32::MAX;
            let mut scale = max;
            let mut best: Option<(usize, usize, usize)> = None;
            for i1 in 0..=SUB {
                for i2 in i1..=SUB {
                    let mut qx_p = [0.0f32; 2];
                    let mut qx_m = [0.0f32; 2];
                    let mut q2_p = [0.0f32; 2];
                    let mut q2_m = [0.0f32; 2];
                    for h in 0..2 {
                        let sx = px[h][i1] + px[h][i2];
                        qx_p[h] = txs[h] * up[2] - sx;
                        qx_m[h] = txs[h] * down[2] - sx;
                        q2_p[h] = tws[h] * up[2] * up[2] + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                        q2_m[h] = tws[h] * down[2] * down[2] + pw[h][i1] * cm1 + pw[h][i2] * cm2;
                    }
                    let sumqx = [qx_p[0] + qx_p[1], qx_p[0] + qx_m[1], qx_m[0] + qx_p[1], qx_m[0] + qx_m[1]];
                    let sumq2 = [q2_p[0] + q2_p[1], q2_p[0] + q2_m[1], q2_m[0] + q2_p[1], q2_m[0] + q2_m[1]];
                    for k in 0..4 {
                        if sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best_score * sumq2[k] {
                            scale = sumqx[k] / sumq2[k];
                            best_score = scale * sumqx[k];
                            best = Some((i1, i2, k));
                        }
                    }
                }
            }
            let Some((i1, i2, mut choice)) = best else {
                continue;
            };
            let mut levels = split_levels(&sorted, i1, i2);
            if scale < 0.0 {
                levels = levels.map(|l| 2 - l);
                scale = -scale;
                choice = 3 - choice;
            }
            let values_of = |k: usize| shifted_values(choice, k);
            let (indices, all_on_grid) = grid_indices::<2>(map, xb, &weight, &levels, scale, values_of);
            if !all_on_grid && let Some(fitted) = refit(xb, &weight, &indices, values_of) {
                scale = fitted;
            }
            block.qs[2 * ib] = indices[0] as u8;
            block.qs[2 * ib + 1] = indices[1] as u8;
            block.qh[ib] = (indices[0] >> 8) as u8 | ((indices[1] >> 8) as u8) << 4;
            check_scale(scale);
            scales[ib] = scale;
            shifts[ib] = choice;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            return block;
        }

        // The super-block scale is refitted to the stored sub-block scales and grid points.
        const SHIFT_BITS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];
        let mut sc = [0u16; 4];
        let mut d = max_scale / 15.0;
        let id = 1.0 / d;
        let points = points8(Grid::Iq1S);
        let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
        for ib in 0..QK_K / SUB {
            let l = scale_code(id, scales[ib]);
            sc[ib / 4] |= l << (3 * (ib % 4));
            block.qh[ib] |= SHIFT_BITS[shifts[ib]];
            let xb = &x[SUB * ib..SUB * (ib + 1)];
            let weight: [f32; SUB] = sub_block_weights(xb, qw.map(|w| &w[SUB * ib..]), sigma2);
            let multiple = (2 * l + 1) as f32;
            for k in 0..2 {
                let values = shifted_values(shifts[ib], k);
                let high = usize::from(block.qh[ib] >> (4 * k) & 7) << 8;
                let index = usize::from(block.qs[2 * ib + k]) + high;
                for (j, &level) in points[index].iter().enumerate() {
                    let w = weight[8 * k + j];
                    let q = values[level as usize] * multiple;
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
        }
        if sumq2 > 0.0 {
            d = sumqx / sumq2;
        }
        let bits = Half::from_f32(d * 1.1125).bits();
        sc[0] |= (bits & 0x000f) << 12;
        sc[1] |= (bits & 0x00f0) << 8;
        sc[2] |= (bits & 0x0f00) << 4;
        sc[3] |= bits & 0xf000;
        for (out, word) in block.scales.chunks_exact_mut(2).zip(sc) {
            out.copy_from_slice(&word.to_le_bytes());
        }
        block
    }

    /// The binary16 super-block scale spread over the scale words.
    fn super_scale(sc: &[u16; 4]) -> f32 {
        let bits = sc[0] >> 12 | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000);
        Half::from_bits(bits).to_f32()
    }
}

// SAFETY: repr(C) of byte arrays: 56 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq1M {
    const TYPE: Type = Type::IQ1_M;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::Iq1mScale;
    // (ggml lists none for iq1_m, though it quantizes without an importance matrix)
    const REF_QUANTIZER: bool = false;

    /// ggml's `quantize_iq1_m` without an importance matrix (x² weights); ggml itself lists no
    /// reference row quantizer for this type.
    fn quantize(x: &[f32]) -> Self {
        BlockIq1M::quantize_with(x, None, &iq_grids::neighbours(Grid::Iq1S))
    }

    fn dequantize(&self, y: &mut [f32]) {
        let sc: [u16; 4] = std::array::from_fn(|i| u16::from_le_bytes([self.scales[2 * i], self.scales[2 * i + 1]]));
        let d = BlockIq1M::super_scale(&sc);
        for (g, y) in y.chunks_exact_mut(8).enumerate() {
            let s = g / 2;
            let nibble = self.qh[s] >> (4 * (g % 2));
            let dl = d * (2 * i32::from(sc[s / 4] >> (3 * (s % 4)) & 7) + 1) as f32;
            let index = usize::from(self.qs[g]) | usize::from(nibble & 7) << 8;
            expand(y, index, delta(nibble & 8 != 0), dl);
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let map = iq_grids::neighbours(Grid::Iq1S);
        for (i, block) in y.iter_mut().enumerate() {
            let span = i * QK_K..(i + 1) * QK_K;
            *block = BlockIq1M::quantize_with(&x[span.clone()], Some(&weights[span]), &map);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::iq_test_support::relative_error;

    #[test]
    fn round_trips_are_close() {
        let w = vec![1.0f32; QK_K];
        assert!(relative_error::<BlockIq1S>(Some(&w)) < 0.7);
        assert!(relative_error::<BlockIq1M>(Some(&w)) < 0.6);
        assert!(relative_error::<BlockIq1M>(None) < 0.6);
    }

    #[test]
    fn sort_is_stable_like_glibc() {
        let x = [1.0f32, -0.0, 0.0, -1.0, 0.0];
        let sorted = sort_with_positions::<5>(&x);
        let order: Vec<usize> = sorted.iter().map(|&(_, i)| i).collect();
        assert_eq!(order, [3, 1, 2, 4, 0]);
    }

    #[test]
    fn iq1_m_scale_is_spread_over_the_words() {
        let mut b = BlockIq1M::default();
        let bits = Half::from_f32(0.5).bits();
        for i in 0..4 {
            let nibble = (bits >> (4 * i)) & 0xf;
            b.scales[2 * i + 1] = (nibble << 4) as u8;
        }
        let mut y = [0.0f32; QK_K];
        b.dequantize(&mut y);
        // grid point 0 is all -1, shifted by +1/8, sub-scale code 0 → 0.5 * (-0.875)
        assert_eq!(y[0], -0.4375);
    }
}
