//! 3-bit lattice blocks of 256 values: each group of 4 magnitudes is one point of a
//! 4-dimensional grid with eight levels per coordinate, and the signs are stored beside it.
//!
//! * `iq3_xxs` (3.06 bits a value): 8-bit indices into a 256-point grid whose levels stand for
//!   4, 12, ..., 52, 62; per 32 values a little-endian word of four 7-bit sign groups (the
//!   eighth sign restores an even count of negatives) under a 4-bit scale.
//!   A value is `d * (0.5 + scale) / 2 * grid value * sign`.
//! * `iq3_s` (3.44 bits): 9-bit indices into a 512-point grid of odd levels 1..15 (low 8 bits
//!   in `qs`, the ninth in `qh`), all signs stored, a 4-bit scale for each 32 values.
//!   A value is `d * (1 + 2*scale) * grid value * sign`.
//!
//! Both quantizers work with or without an importance matrix (without one, x² weighs each
//! value).

use super::BlockCheck;
use super::BlockFormat;
use super::c_max;
use super::half::Half;
use super::iq_grids::{
    self, Grid, GridSearch, Neighbours, Refit, check_scale, fold_signs, index_on_grid, points4, scale_code,
    signs_from_seven,
};
use super::k_quants::{QK_K, sum_squares};
use crate::core::types::Type;
use std::mem::offset_of;

/// What each coordinate level of the `iq3_xxs` grid stands for.
pub(crate) const XXS_VALUES: [u8; 8] = [4, 12, 20, 28, 36, 44, 52, 62];
/// Sub-blocks with a largest magnitude below this are zero in `iq3_xxs`.
const GROUP_MAX_EPS_IQ3_XXS: f32 = 1e-8;
/// Values per sub-block scale.
const SUB: usize = 32;

/// `block_iq3_xxs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq3Xxs {
    pub d: Half,
    /// 64 grid indices, then per 32 values a little-endian word: 4×7 sign bits and the 4-bit
    /// scale in the top nibble.
    pub qs: [u8; 3 * QK_K / 8],
}

/// `block_iq3_s`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq3S {
    pub d: Half,
    /// Low 8 bits of the 64 grid indices.
    pub qs: [u8; QK_K / 4],
    /// Ninth bits of the grid indices, eight to a byte.
    pub qh: [u8; QK_K / 32],
    /// One sign bit per value.
    pub signs: [u8; QK_K / 8],
    /// 4-bit scales, the first 32 values of each 64 in the low nibble.
    pub scales: [u8; QK_K / 64],
}

impl Default for BlockIq3Xxs {
    fn default() -> Self {
        BlockIq3Xxs { d: Half::default(), qs: [0; 3 * QK_K / 8] }
    }
}

impl Default for BlockIq3S {
    fn default() -> Self {
        BlockIq3S {
            d: Half::default(),
            qs: [0; QK_K / 4],
            qh: [0; QK_K / 32],
            signs: [0; QK_K / 8],
            scales: [0; QK_K / 64],
        }
    }
}

const _: () = assert!(std::mem::size_of::<BlockIq3Xxs>() == 98);
const _: () = assert!(std::mem::size_of::<BlockIq3S>() == 110);
const _: () = assert!(std::mem::align_of::<BlockIq3Xxs>() == 1 && std::mem::align_of::<BlockIq3S>() == 1);

/// Writes the 4 values of grid point `index` scaled by `db`, negated where `signs` (shifted
/// to these values) has a bit.
fn expand(y: &mut [f32], grid: Grid, index: usize, signs: u8, db: f32, value: impl Fn(u8) -> u8) {
    for (j, (out, &level)) in y.iter_mut().zip(&points4(grid)[index]).enumerate() {
        let v = db * f32::from(value(level));
        // A negation, not a product with -1, as in ggml's compiled code (NaN signs show it).
        *out = if signs >> j & 1 != 0 { -v } else { v };
    }
}

/// Importance of each value of a sub-block: from the imatrix, or x² without one.
fn sub_block_weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32) -> [f32; SUB] {
    match qw {
        Some(qw) => std::array::from_fn(|i| qw[i] * (sigma2 + xb[i] * xb[i]).sqrt()),
        None => std::array::from_fn(|i| xb[i] * xb[i]),
    }
}

/// Folds a sub-block to magnitudes and returns its four sign bytes.
fn fold(xb: &[f32], weight: &[f32; SUB], xval: &mut [f32; SUB], even: bool) -> [u8; 4] {
    std::array::from_fn(|k| {
        let span = 8 * k..8 * k + 8;
        fold_signs(&xb[span.clone()], &weight[span.clone()], &mut xval[span], even)
    })
}

impl BlockIq3Xxs {
    /// Quantizes one super-block, with importance weights `qw` (one per value) if given.
    pub fn quantize_with(x: &[f32], qw: Option<&[f32]>, map: &Neighbours) -> Self {
        const GRID: Grid = Grid::Iq3Xxs;
        let search = GridSearch { grid: GRID, steps: 15, delta: 0.2, refit: Refit::OffGrid };
        let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
        let mut qs = [0u8; 3 * QK_K / 8];
        let mut words = [0u32; QK_K / SUB];
        let mut scales = [0.0f32; QK_K / SUB];
        let mut max_scale = 0.0f32;
        for ib in 0..QK_K / SUB {
            let xb = &x[SUB * ib..SUB * (ib + 1)];
            let weight = sub_block_weights(xb, qw.map(|w| &w[SUB * ib..]), sigma2);
            let waux = weight.map(f32::sqrt);
            let mut xval = [0.0f32; SUB];
            let mut signs = fold(xb, &weight, &mut xval, true);
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max < GROUP_MAX_EPS_IQ3_XXS {
                continue;
            }
            let mut levels = [0i8; SUB];
            let mut scale = search.run(map, &xval, &weight, &waux, max / 15.0, max, &mut levels);
            if scale < 0.0 {
                scale = -scale;
                signs = signs.map(|s| !s);
            }
            for (k, group) in levels.chunks_exact(4).enumerate() {
                qs[8 * ib + k] = index_on_grid(map, GRID, group) as u8;
            }
            words[ib] = signs.iter().enumerate().fold(0, |w, (k, &s)| w | u32::from(s & 0x7f) << (7 * k));
            check_scale(scale);
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            return BlockIq3Xxs::default();
        }
        let d = max_scale / 31.0;
        let id = 1.0 / d;
        for (ib, &scale) in scales.iter().enumerate() {
            let word = words[ib] | u32::from(scale_code(id, scale)) << 28;
            qs[QK_K / 4 + 4 * ib..QK_K / 4 + 4 * ib + 4].copy_from_slice(&word.to_le_bytes());
        }
        BlockIq3Xxs { d: Half::from_f32(d * 1.0125), qs }
    }
}

// SAFETY: repr(C) of a Half and a byte array: 98 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq3Xxs {
    const TYPE: Type = Type::IQ3_XXS;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq3Xxs, d)]);

    fn quantize(x: &[f32]) -> Self {
        BlockIq3Xxs::quantize_with(x, None, &iq_grids::neighbours(Grid::Iq3Xxs))
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        let (indices, words) = self.qs.split_at(QK_K / 4);
        for (ib, y) in y.chunks_exact_mut(SUB).enumerate() {
            let word = u32::from_le_bytes(words[4 * ib..4 * ib + 4].try_into().unwrap_or([0; 4]));
            let db = d * (0.5 + (word >> 28) as f32) * 0.5;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = signs_from_seven((word >> (7 * l)) as u8);
                let at = 8 * ib + 2 * l;
                let value = |level: u8| XXS_VALUES[level as usize];
                expand(&mut y[..4], Grid::Iq3Xxs, indices[at].into(), signs, db, value);
                expand(&mut y[4..], Grid::Iq3Xxs, indices[at + 1].into(), signs >> 4, db, value);
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let map = iq_grids::neighbours(Grid::Iq3Xxs);
        for (i, block) in y.iter_mut().enumerate() {
            let span = i * QK_K..(i + 1) * QK_K;
            *block = BlockIq3Xxs::quantize_with(&x[span.clone()], Some(&weights[span]), &map);
        }
    }
}

impl BlockIq3S {
    /// Quantizes one super-block, with importance weights `qw` (one per value) if given.
    ///
    /// As in ggml, an all-zero sub-block leaves no trace in `qs` and `signs`: the sub-blocks
    /// after it are written one place earlier, and the last places stay zero.
    pub fn quantize_with(x: &[f32], qw: Option<&[f32]>, map: &Neighbours) -> Self {
        const GRID: Grid = Grid::Iq3S;
        let search = GridSearch { grid: GRID, steps: 9, delta: 0.2, refit: Refit::AllIfAnyOffGrid };
        let mut block = BlockIq3S::default();
        let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
        let mut scales = [0.0f32; QK_K / SUB];
        let mut max_scale = 0.0f32;
        let mut written = 0;
        for ib in 0..QK_K / SUB {
            let xb = &x[SUB * ib..SUB * (ib + 1)];
            let weight = sub_block_weights(xb, qw.map(|w| &w[SUB * ib..]), sigma2);
            let waux = weight.map(f32::sqrt);
            let mut xval = [0.0f32; SUB];
            let mut signs = fold(xb, &weight, &mut xval, false);
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max == 0.0 {
                continue;
            }
            let mut levels = [0i8; SUB];
            let mut scale = search.run(map, &xval, &weight, &waux, max / 15.0, max, &mut levels);
            if scale < 0.0 {
                scale = -scale;
                signs = signs.map(|s| !s);
            }
            for (k, group) in levels.chunks_exact(4).enumerate() {
                let index = index_on_grid(map, GRID, group);
                block.qs[8 * written + k] = index as u8;
                block.qh[ib] |= ((index >> 8) as u8) << k;
            }
            block.signs[4 * written..4 * written + 4].copy_from_slice(&signs);
            written += 1;
            check_scale(scale);
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            return block;
        }
        let d = max_scale / 31.0;
        block.d = Half::from_f32(d * 1.033);
        let id = 1.0 / d;
        for (ib, &scale) in scales.iter().enumerate() {
            block.scales[ib / 2] |= scale_code(id, scale) << (4 * (ib % 2));
        }
        block
    }
}

// SAFETY: repr(C) of a Half and byte arrays: 110 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq3S {
    const TYPE: Type = Type::IQ3_S;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq3S, d)]);

    fn quantize(x: &[f32]) -> Self {
        BlockIq3S::quantize_with(x, None, &iq_grids::neighbours(Grid::Iq3S))
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        let value = |level: u8| 2 * level + 1;
        for (ib, y) in y.chunks_exact_mut(SUB).enumerate() {
            let code = self.scales[ib / 2] >> (4 * (ib % 2)) & 0xf;
            let db = d * (1 + 2 * i32::from(code)) as f32;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = self.signs[4 * ib + l];
                let at = 8 * ib + 2 * l;
                let high = |k: usize| usize::from(self.qh[ib] >> k & 1) << 8;
                let first = usize::from(self.qs[at]) | high(2 * l);
                let second = usize::from(self.qs[at + 1]) | high(2 * l + 1);
                expand(&mut y[..4], Grid::Iq3S, first, signs, db, value);
                expand(&mut y[4..], Grid::Iq3S, second, signs >> 4, db, value);
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let map = iq_grids::neighbours(Grid::Iq3S);
        for (i, block) in y.iter_mut().enumerate() {
            let span = i * QK_K..(i + 1) * QK_K;
            *block = BlockIq3S::quantize_with(&x[span.clone()], Some(&weights[span]), &map);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::iq_test_support::{relative_error, sample};
    use crate::quants::quantize_row;

    #[test]
    fn round_trips_are_close() {
        let w = vec![1.0f32; QK_K];
        for imatrix in [None, Some(&w[..])] {
            assert!(relative_error::<BlockIq3Xxs>(imatrix) < 0.25);
            assert!(relative_error::<BlockIq3S>(imatrix) < 0.2);
        }
    }

    #[test]
    fn zero_sub_blocks_shift_the_iq3_s_payload() {
        let mut x = sample(QK_K);
        x[..SUB].fill(0.0);
        let mut q = [BlockIq3S::default()];
        quantize_row(&x, &mut q);
        let b = q[0];
        assert_eq!(b.qh[0], 0);
        assert_eq!(&b.qs[QK_K / 4 - 8..], &[0; 8]);
        assert_eq!(&b.signs[QK_K / 8 - 4..], &[0; 4]);
        assert_eq!(b.scales[0] & 0xf, 0);
    }

    #[test]
    fn zero_blocks_stay_zero() {
        let x = [0.0f32; QK_K];
        assert_eq!(BlockIq3Xxs::quantize(&x), BlockIq3Xxs::default());
        assert_eq!(BlockIq3S::quantize(&x), BlockIq3S::default());
    }
}
