//! Element formats: 16-bit floats and the block-quantized types, their conversions to and
//! from `f32`, and the per-type tables the C API exposes.
//!
//! Each block format is one type implementing [`BlockFormat`] (in `q4`, `q5`, `q8`, `low_bit`
//! for q1_0/q2_0, `fp4` for mxfp4/nvfp4, `iq4` for iq4_nl/iq4_xs, `ternary` for tq1_0/tq2_0,
//! and the super-block formats in `k_quants`); the row helpers here lay those blocks over byte buffers
//! and walk rows of them. `formats` lists them all, once, and generates the per-type matches
//! over them. `chunk` is `ggml_quantize_chunk`, `traits` the `struct ggml_type_traits` table,
//! `validate` the NaN/inf scan of `ggml_validate_row_data`.

pub mod chunk;
pub mod formats;
pub mod fp4;
pub mod half;
pub mod iq1;
pub mod iq2;
pub mod iq3;
pub mod iq4;
pub mod iq_grids;
#[cfg(test)]
mod iq_test_support;
pub mod k_quants;
pub mod low_bit;
pub mod q4;
pub mod q5;
pub mod q8;
pub mod rows;
pub mod search;
pub mod ternary;
pub mod traits;
pub mod validate;

use crate::core::types::Type;

/// What has to be checked in each block of a block format (its [`BlockFormat::CHECK`]).
#[derive(Clone, Copy)]
pub enum BlockCheck {
    /// Binary16 scales at these byte offsets.
    HalfScales(&'static [usize]),
    /// An f32 scale at the start.
    F32Scale,
    /// An E8M0 exponent at the start, where 0xff is invalid.
    E8m0Scale,
    /// IQ1_M's binary16 scale, spread over the top nibbles of four 16-bit words at byte 48.
    Iq1mScale,
    /// Nothing: any bytes are valid.
    Nothing,
    /// Not a format ggml validates: rows of it are rejected as of an invalid type.
    Rejected,
}

/// One block-quantized format: `QK` values stored together with their scale(s).
///
/// # Safety
/// Implementors must be `#[repr(C)]` structs built only from byte arrays (and [`half::Half`]),
/// so that they have alignment 1, no padding and no invalid bit patterns, and their size must
/// be the `type_size` of `TYPE`. [`blocks`] and [`blocks_mut`] rely on this to view raw
/// buffers as blocks.
pub unsafe trait BlockFormat: Copy + Default {
    const TYPE: Type;
    /// Values per block.
    const QK: usize;

    /// Quantizes exactly `QK` values (ggml's reference quantizer, used for model files).
    fn quantize(x: &[f32]) -> Self;

    /// Writes the block's `QK` values to `y`.
    fn dequantize(&self, y: &mut [f32]);

    /// Where `ggml_validate_row_data` looks for NaN and infinity in a block.
    const CHECK: BlockCheck;

    /// Whether quantizing needs an importance matrix (`ggml_quantize_requires_imatrix`).
    const NEEDS_IMATRIX: bool = false;

    /// Whether ggml's type traits offer [`BlockFormat::quantize`] as the format's reference
    /// row quantizer (`from_float_ref`): by default those of the formats that can quantize
    /// without an importance matrix.
    const REF_QUANTIZER: bool = !Self::NEEDS_IMATRIX;

    /// Quantizes one whole row, `weights` giving the importance of each column (an imatrix
    /// row). Formats without an importance-aware search ignore the weights.
    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let _ = weights;
        quantize_row(x, y);
    }

    /// Quantizes rows as `ggml_quantize_chunk` and ggml's `quantize_<t>` do, returning the
    /// bytes written: by default [`quantize_rows`].
    fn quantize_chunk(src: &[f32], dst: &mut [Self], n_per_row: usize, imatrix: Option<&[f32]>) -> usize {
        quantize_rows(src, dst, n_per_row, imatrix)
    }
}

/// Views a byte buffer as blocks. The length must be a whole number of blocks.
pub fn blocks<B: BlockFormat>(bytes: &[u8]) -> &[B] {
    let size = std::mem::size_of::<B>();
    crate::ggml_assert!(
        bytes.len().is_multiple_of(size),
        "{} bytes are not whole {} blocks",
        bytes.len(),
        B::TYPE.name()
    );
    // SAFETY: `BlockFormat` guarantees alignment 1, no padding and that any bytes are a valid
    // block; the length is a multiple of the block size and the lifetime is the input's.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<B>(), bytes.len() / size) }
}

/// Mutable counterpart of [`blocks`].
pub fn blocks_mut<B: BlockFormat>(bytes: &mut [u8]) -> &mut [B] {
    let size = std::mem::size_of::<B>();
    crate::ggml_assert!(
        bytes.len().is_multiple_of(size),
        "{} bytes are not whole {} blocks",
        bytes.len(),
        B::TYPE.name()
    );
    // SAFETY: as in `blocks`; the exclusive borrow of the bytes moves to the blocks.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<B>(), bytes.len() / size) }
}

/// Quantizes `x` (a whole number of blocks) into `y` with the reference quantizer.
pub fn quantize_row<B: BlockFormat>(x: &[f32], y: &mut [B]) {
    check_lengths::<B>(x.len(), y.len());
    for (block, values) in y.iter_mut().zip(x.chunks_exact(B::QK)) {
        *block = B::quantize(values);
    }
}

/// Expands the blocks of `x` into `y`.
pub fn dequantize_row<B: BlockFormat>(x: &[B], y: &mut [f32]) {
    check_lengths::<B>(y.len(), x.len());
    for (block, values) in x.iter().zip(y.chunks_exact_mut(B::QK)) {
        block.dequantize(values);
    }
}

/// Quantizes `src.len() / n_per_row` rows into `dst` and returns the bytes written. With an
/// importance matrix (one weight per column) each row goes through the format's
/// importance-aware search; without one, through the reference quantizer.
/// (ggml's `quantize_q4_0` and friends.)
pub fn quantize_rows<B: BlockFormat>(src: &[f32], dst: &mut [B], n_per_row: usize, imatrix: Option<&[f32]>) -> usize {
    crate::ggml_assert!(
        n_per_row > 0 && src.len().is_multiple_of(n_per_row),
        "{} values are not whole rows of {}",
        src.len(),
        n_per_row
    );
    check_lengths::<B>(src.len(), dst.len());
    match imatrix {
        None => quantize_row(src, dst),
        Some(weights) => {
            crate::ggml_assert!(weights.len() >= n_per_row, "importance matrix shorter than a row");
            let blocks_per_row = n_per_row / B::QK;
            for (row, out) in src.chunks_exact(n_per_row).zip(dst.chunks_exact_mut(blocks_per_row)) {
                B::quantize_row_weighted(row, out, &weights[..n_per_row]);
            }
        }
    }
    std::mem::size_of_val(dst)
}

fn check_lengths<B: BlockFormat>(values: usize, blocks: usize) {
    crate::ggml_assert!(
        values.is_multiple_of(B::QK) && values / B::QK == blocks,
        "{} values do not fill {} {} blocks of {}",
        values,
        blocks,
        B::TYPE.name(),
        B::QK
    );
}

/// Mean of x² over a row: the baseline that importance weights are scaled by.
pub(crate) fn mean_square(row: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for &v in row {
        sum += v * v;
    }
    sum / row.len() as f32
}

/// Per-value weights of one block from the imatrix entries `qw` and the row's mean square.
pub(crate) fn block_weights<const N: usize>(xb: &[f32], qw: &[f32], sigma2: f32) -> [f32; N] {
    std::array::from_fn(|j| qw[j] * (sigma2 + xb[j] * xb[j]).sqrt())
}

/// C's `MAX(a, b)` on floats: `a > b ? a : b` (so a NaN in `a` is dropped, one in `b` kept).
#[inline]
pub(crate) fn c_max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The largest magnitude of a block and the signed value that has it (first one wins).
pub(crate) fn signed_absmax(x: &[f32]) -> f32 {
    let mut amax = 0.0f32;
    let mut max = 0.0f32;
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    max
}

/// Smallest and largest value of a block (NaNs are skipped as C comparisons skip them).
pub(crate) fn min_max(x: &[f32]) -> (f32, f32) {
    let mut min = f32::MAX;
    let mut max = -f32::MAX;
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}

/// `1/d`, or 0 for a zero scale.
#[inline]
pub(crate) fn inverse(d: f32) -> f32 {
    if d != 0.0 { 1.0 / d } else { 0.0 }
}
