//! 2-bit lattice blocks of 256 values: each group of 8 magnitudes is one point of an
//! 8-dimensional grid whose coordinates take the values 8, 25 or 43 (levels 0..2), and the
//! signs are stored beside it.
//!
//! * `iq2_xxs` (2.06 bits a value): per 32 values, four 8-bit grid indices (256-point grid),
//!   four 7-bit sign groups (the eighth sign restores an even count of negatives) and a 4-bit
//!   scale, packed in two little-endian 32-bit words.
//! * `iq2_xs` (2.31 bits): per 8 values a 16-bit word, a 9-bit index into the 512-point grid
//!   under 7 sign bits; a 4-bit scale for each 16 values.
//! * `iq2_s` (2.56 bits): 10-bit indices into the 1024-point grid (low 8 bits in `qs`, high 2
//!   in `qh`), all 8 signs stored, a 4-bit scale for each 16 values.
//!
//! A value is `d * (0.5 + scale) / 4 * grid value * sign`. The quantizers need an importance
//! matrix for `iq2_xxs` and `iq2_xs`; `iq2_s` falls back to weights from the values.

use super::BlockCheck;
use super::BlockFormat;
use super::half::Half;
use super::iq_grids::{
    self, Grid, GridSearch, Neighbours, Refit, check_scale, fold_signs, index_on_grid, points8, scale_code,
    signs_from_seven,
};
use super::k_quants::search::positive_scale;
use super::k_quants::{QK_K, sum_squares};
use super::search::GROUP_MAX_EPS;
use super::{block_weights, c_max};
use crate::core::types::Type;
use std::mem::offset_of;

/// The value of each coordinate level of the 2-bit grids.
pub(crate) const GRID_VALUES: [u8; 3] = [0x08, 0x19, 0x2b];
/// Groups of 16 with a largest magnitude below this are zero in `iq2_s`.
const GROUP_MAX_EPS_IQ2_S: f32 = 1e-8;

/// `block_iq2_xxs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq2Xxs {
    pub d: Half,
    /// Per 32 values two little-endian words: four grid indices, then 4×7 sign bits and the
    /// 4-bit scale in the top nibble.
    pub qs: [u8; QK_K / 4],
}

/// `block_iq2_xs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq2Xs {
    pub d: Half,
    /// Per 8 values a little-endian word: grid index in the low 9 bits, 7 sign bits above.
    pub qs: [u8; QK_K / 4],
    /// 4-bit scales, the first 16 values of each 32 in the low nibble.
    pub scales: [u8; QK_K / 32],
}

/// `block_iq2_s`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq2S {
    pub d: Half,
    /// Low 8 bits of the 32 grid indices, then the 32 sign bytes.
    pub qs: [u8; QK_K / 4],
    /// High 2 bits of the grid indices, four to a byte.
    pub qh: [u8; QK_K / 32],
    pub scales: [u8; QK_K / 32],
}

impl Default for BlockIq2Xxs {
    fn default() -> Self {
        BlockIq2Xxs { d: Half::default(), qs: [0; QK_K / 4] }
    }
}

impl Default for BlockIq2Xs {
    fn default() -> Self {
        BlockIq2Xs { d: Half::default(), qs: [0; QK_K / 4], scales: [0; QK_K / 32] }
    }
}

impl Default for BlockIq2S {
    fn default() -> Self {
        BlockIq2S { d: Half::default(), qs: [0; QK_K / 4], qh: [0; QK_K / 32], scales: [0; QK_K / 32] }
    }
}

const _: () = assert!(std::mem::size_of::<BlockIq2Xxs>() == 66);
const _: () = assert!(std::mem::size_of::<BlockIq2Xs>() == 74);
const _: () = assert!(std::mem::size_of::<BlockIq2S>() == 82);
const _: () = assert!(
    std::mem::align_of::<BlockIq2Xxs>() == 1
        && std::mem::align_of::<BlockIq2Xs>() == 1
        && std::mem::align_of::<BlockIq2S>() == 1
);

/// Writes the 8 values of grid point `index` scaled by `db`, negated where `signs` has a bit.
fn expand(y: &mut [f32], grid: Grid, index: usize, signs: u8, db: f32) {
    for (j, (out, &level)) in y.iter_mut().zip(&points8(grid)[index]).enumerate() {
        let v = db * f32::from(GRID_VALUES[level as usize]);
        // A negation, not a product with -1: ggml's compiled code flips the sign bit, which
        // shows in the sign of a NaN.
        *out = if signs >> j & 1 != 0 { -v } else { v };
    }
}

/// Scale of a group from the super-block scale and its 4-bit code.
fn group_scale(d: f32, code: u8) -> f32 {
    d * (0.5 + f32::from(code)) * 0.25
}

/// Per-value weights of a sub-block: from the importance matrix, or `fallback` without one.
fn sub_block_weights<const N: usize>(
    xb: &[f32],
    qw: Option<&[f32]>,
    sigma2: f32,
    fallback: impl Fn(f32) -> f32,
) -> [f32; N] {
    match qw {
        Some(qw) => block_weights(xb, qw, sigma2),
        None => std::array::from_fn(|i| fallback(xb[i])),
    }
}

/// What ggml does when a format that needs an importance matrix is quantized without one.
pub(crate) fn missing_imatrix(ty: Type) -> ! {
    crate::ggml_abort!("{}: missing quantization weights", ty.name())
}

impl BlockIq2Xxs {
    /// Quantizes one super-block with the importance weights `qw` (one per value).
    pub fn quantize_weighted(x: &[f32], qw: &[f32], map: &Neighbours) -> Self {
        const GRID: Grid = Grid::Iq2Xxs;
        let search = GridSearch { grid: GRID, steps: 6, delta: 0.1, refit: Refit::All };
        let sigma2 = sum_squares(&x[..QK_K]) / QK_K as f32;
        let mut words = [0u32; QK_K / 16];
        let mut scales = [0.0f32; QK_K / 32];
        let mut max_scale = 0.0f32;
        for ib in 0..QK_K / 32 {
            let xb = &x[32 * ib..32 * ib + 32];
            let weight: [f32; 32] = block_weights(xb, &qw[32 * ib..], sigma2);
            let waux = weight.map(f32::sqrt);
            let mut xval = [0.0f32; 32];
            let mut signs = [0u8; 4];
            for (k, s) in signs.iter_mut().enumerate() {
                let span = 8 * k..8 * k + 8;
                *s = fold_signs(&xb[span.clone()], &weight[span.clone()], &mut xval[span], true);
            }
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max < GROUP_MAX_EPS {
                continue;
            }
            let mut scratch = [0u8; 32];
            let first = positive_scale(&xval, 4, &mut scratch, &weight);
            let eff_max = first * 3.0;
            if eff_max <= 0.0 {
                continue;
            }
            let mut levels = [0i8; 32];
            let mut scale = search.run(map, &xval, &weight, &waux, first, eff_max, &mut levels);
            if scale < 0.0 {
                scale = -scale;
                signs = signs.map(|s| !s);
            }
            for (k, &s) in signs.iter().enumerate() {
                let index = index_on_grid(map, GRID, &levels[8 * k..8 * k + 8]);
                words[2 * ib] |= (index as u32) << (8 * k);
                words[2 * ib + 1] |= u32::from(s & 0x7f) << (7 * k);
            }
            check_scale(scale);
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            return BlockIq2Xxs::default();
        }
        let d = max_scale / 31.0;
        let id = 1.0 / d;
        for (ib, &scale) in scales.iter().enumerate() {
            words[2 * ib + 1] |= u32::from(scale_code(id, scale)) << 28;
        }
        let mut qs = [0u8; QK_K / 4];
        for (out, w) in qs.chunks_exact_mut(4).zip(words) {
            out.copy_from_slice(&w.to_le_bytes());
        }
        BlockIq2Xxs { d: Half::from_f32(d), qs }
    }
}

// SAFETY: repr(C) of a Half and byte arrays: 66 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq2Xxs {
    const TYPE: Type = Type::IQ2_XXS;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq2Xxs, d)]);
    const NEEDS_IMATRIX: bool = true;

    /// ggml has no quantizer for this format without an importance matrix.
    fn quantize(x: &[f32]) -> Self {
        let _ = x;
        missing_imatrix(Self::TYPE)
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (y, words) in y.chunks_exact_mut(32).zip(self.qs.chunks_exact(8)) {
            let high = u32::from_le_bytes([words[4], words[5], words[6], words[7]]);
            let db = group_scale(d, (high >> 28) as u8);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = signs_from_seven((high >> (7 * l)) as u8);
                expand(y, Grid::Iq2Xxs, words[l].into(), signs, db);
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let map = iq_grids::neighbours(Grid::Iq2Xxs);
        for (i, block) in y.iter_mut().enumerate() {
            let span = i * QK_K..(i + 1) * QK_K;
            *block = BlockIq2Xxs::quantize_weighted(&x[span.clone()], &weights[span], &map);
        }
    }
}

/// The search shared by `iq2_xs` and `iq2_s` over sub-blocks of 16: returns the scale and
/// fills `levels`, or `None` for a sub-block stored as zero.
fn search_16(
    grid: Grid,
    map: &Neighbours,
    xval: &[f32; 16],
    weight: &[f32; 16],
    zero_below: f32,
    levels: &mut [i8; 16],
) -> Option<f32> {
    let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
    if max < zero_below {
        return None;
    }
    let search = GridSearch { grid, steps: 9, delta: 0.1, refit: Refit::OffGrid };
    let waux = weight.map(f32::sqrt);
    Some(search.run(map, xval, weight, &waux, max / 5.0, max, levels))
}

impl BlockIq2Xs {
    /// Quantizes one super-block with the importance weights `qw` (one per value).
    pub fn quantize_weighted(x: &[f32], qw: &[f32], map: &Neighbours) -> Self {
        const GRID: Grid = Grid::Iq2Xs;
        let sigma2 = sum_squares(&x[..QK_K]) / QK_K as f32;
        let mut words = [0u16; QK_K / 8];
        let mut scales = [0.0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        for ib in 0..QK_K / 16 {
            let xb = &x[16 * ib..16 * ib + 16];
            let weight: [f32; 16] = block_weights(xb, &qw[16 * ib..], sigma2);
            let mut xval = [0.0f32; 16];
            let mut signs = [0u8; 2];
            for (k, s) in signs.iter_mut().enumerate() {
                let span = 8 * k..8 * k + 8;
                *s = fold_signs(&xb[span.clone()], &weight[span.clone()], &mut xval[span], true);
            }
            let mut levels = [0i8; 16];
            let Some(mut scale) = search_16(GRID, map, &xval, &weight, GROUP_MAX_EPS, &mut levels) else {
                continue;
            };
            if scale < 0.0 {
                scale = -scale;
                signs = signs.map(|s| !s);
            }
            for (k, &s) in signs.iter().enumerate() {
                let index = index_on_grid(map, GRID, &levels[8 * k..8 * k + 8]);
                words[2 * ib + k] = index as u16 | u16::from(s & 0x7f) << 9;
            }
            check_scale(scale);
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            return BlockIq2Xs::default();
        }
        let d = max_scale / 31.0;
        let id = 1.0 / d;
        let mut block = BlockIq2Xs { d: Half::from_f32(d), ..BlockIq2Xs::default() };
        for (ib, &scale) in scales.iter().enumerate() {
            block.scales[ib / 2] |= scale_code(id, scale) << (4 * (ib % 2));
        }
        for (out, w) in block.qs.chunks_exact_mut(2).zip(words) {
            out.copy_from_slice(&w.to_le_bytes());
        }
        block
    }
}

// SAFETY: repr(C) of a Half and byte arrays: 74 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq2Xs {
    const TYPE: Type = Type::IQ2_XS;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq2Xs, d)]);
    const NEEDS_IMATRIX: bool = true;

    /// ggml has no quantizer for this format without an importance matrix.
    fn quantize(x: &[f32]) -> Self {
        let _ = x;
        missing_imatrix(Self::TYPE)
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (l, (y, word)) in y.chunks_exact_mut(8).zip(self.qs.chunks_exact(2)).enumerate() {
            let word = u16::from_le_bytes([word[0], word[1]]);
            let code = self.scales[l / 4] >> (4 * (l / 2 % 2)) & 0xf;
            let signs = signs_from_seven((word >> 9) as u8);
            expand(y, Grid::Iq2Xs, usize::from(word & 511), signs, group_scale(d, code));
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let map = iq_grids::neighbours(Grid::Iq2Xs);
        for (i, block) in y.iter_mut().enumerate() {
            let span = i * QK_K..(i + 1) * QK_K;
            *block = BlockIq2Xs::quantize_weighted(&x[span.clone()], &weights[span], &map);
        }
    }
}

impl BlockIq2S {
    /// Quantizes one super-block, with importance weights `qw` (one per value) if given.
    pub fn quantize_with(x: &[f32], qw: Option<&[f32]>, map: &Neighbours) -> Self {
        const GRID: Grid = Grid::Iq2S;
        let mut block = BlockIq2S::default();
        let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
        let mut scales = [0.0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        for ib in 0..QK_K / 16 {
            let xb = &x[16 * ib..16 * ib + 16];
            let weight: [f32; 16] = sub_block_weights(xb, qw.map(|w| &w[16 * ib..]), sigma2, |v| 0.25 * sigma2 + v * v);
            let mut xval = [0.0f32; 16];
            let mut signs = [0u8; 2];
            for (k, s) in signs.iter_mut().enumerate() {
                let span = 8 * k..8 * k + 8;
                *s = fold_signs(&xb[span.clone()], &weight[span.clone()], &mut xval[span], false);
            }
            let mut levels = [0i8; 16];
            let Some(mut scale) = search_16(GRID, map, &xval, &weight, GROUP_MAX_EPS_IQ2_S, &mut levels) else {
                continue;
            };
            if scale < 0.0 {
                scale = -scale;
                signs = signs.map(|s| !s);
            }
            for (k, &s) in signs.iter().enumerate() {
                let index = index_on_grid(map, GRID, &levels[8 * k..8 * k + 8]);
                let i8 = 2 * ib + k;
                block.qs[i8] = index as u8;
                block.qh[i8 / 4] |= ((index >> 8) as u8) << (2 * (i8 % 4));
                block.qs[QK_K / 8 + i8] = s;
            }
            check_scale(scale);
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            return block;
        }
        let d = max_scale / 31.0;
        block.d = Half::from_f32(d * 0.9875);
        let id = 1.0 / d;
        for (ib, &scale) in scales.iter().enumerate() {
            block.scales[ib / 2] |= scale_code(id, scale) << (4 * (ib % 2));
        }
        block
    }
}

// SAFETY: repr(C) of a Half and byte arrays: 82 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq2S {
    const TYPE: Type = Type::IQ2_S;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq2S, d)]);

    fn quantize(x: &[f32]) -> Self {
        BlockIq2S::quantize_with(x, None, &iq_grids::neighbours(Grid::Iq2S))
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (l, y) in y.chunks_exact_mut(8).enumerate() {
            let code = self.scales[l / 4] >> (4 * (l / 2 % 2)) & 0xf;
            let high = usize::from(self.qh[l / 4] >> (2 * (l % 4)) & 3);
            let index = usize::from(self.qs[l]) | high << 8;
            expand(y, Grid::Iq2S, index, self.qs[QK_K / 8 + l], group_scale(d, code));
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let map = iq_grids::neighbours(Grid::Iq2S);
        for (i, block) in y.iter_mut().enumerate() {
            let span = i * QK_K..(i + 1) * QK_K;
            *block = BlockIq2S::quantize_with(&x[span.clone()], Some(&weights[span]), &map);
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
        assert!(relative_error::<BlockIq2Xxs>(Some(&w)) < 0.5);
        assert!(relative_error::<BlockIq2Xs>(Some(&w)) < 0.45);
        assert!(relative_error::<BlockIq2S>(Some(&w)) < 0.4);
        assert!(relative_error::<BlockIq2S>(None) < 0.4);
    }

    #[test]
    fn zero_blocks_stay_zero() {
        let x = [0.0f32; QK_K];
        let w = [1.0f32; QK_K];
        let map = iq_grids::neighbours(Grid::Iq2Xxs);
        assert_eq!(BlockIq2Xxs::quantize_weighted(&x, &w, &map), BlockIq2Xxs::default());
        assert_eq!(BlockIq2S::quantize(&x), BlockIq2S::default());
    }

    #[test]
    fn dequantize_reads_grid_signs_and_scale() {
        let mut b = BlockIq2Xs { d: Half::from_f32(4.0), ..BlockIq2Xs::default() };
        // group 0: grid point 1 (levels 2,0,0,...: values 43, 8, ...), sign bit 0 set
        b.qs[0] = 1;
        b.qs[1] = 1 << 1;
        b.scales[0] = 1; // (0.5 + 1) / 4 * 4 = 1.5
        let mut y = [0.0f32; QK_K];
        b.dequantize(&mut y);
        assert_eq!(&y[..3], &[-43.0 * 1.5, 8.0 * 1.5, 8.0 * 1.5]);
        // sign parity: one set bit means the eighth value is negative too
        assert_eq!(y[7], -8.0 * 1.5);
    }
}
