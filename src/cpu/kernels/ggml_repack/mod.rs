//! ggml's repacked ("interleaved") weight layouts and the products over them, as the
//! reference's ggml-cpu exports them (`ggml_gemv_*`, `ggml_gemm_*`, `ggml_quantize_mat_*`).
//! Our own matrix kernels use a different repacking ([`crate::cpu::repack`]); these exist so
//! that programs calling the reference's internal entry points get the same answers from us.
//!
//! A layout named `<type>_<N>x<B>` keeps `N` weight rows ("columns" of the product: each one
//! is an output column) side by side, one block of each per interleaved block: first the `N`
//! blocks' scales as arrays of `N`, then their quant bytes dealt out `B` bytes at a time,
//! `B` from row 0, `B` from row 1, ..., `B` from row `N-1`, then the next `B` of row 0 (see
//! [`weave`]). A matrix of `nc` rows and `n` values per row is `nc / N` such groups, each the
//! `n / QK` interleaved blocks of its `N` rows back to back. The formats differ only in what
//! they keep beside the quants ([`legacy`], [`low_bit`], [`k_quants`] describe each).
//!
//! The products: `gemv` takes one activation row in the weights' `vec_dot_type` (plain
//! `q8_0` or `q8_K` blocks) and writes `nc` floats; `gemm` takes activations quantized four
//! rows at a time into the interleaved `q8_0x4` / `q8_Kx4` layout ([`activations`], `B`
//! bytes at a time as the weights) and writes row `r` of the result at `s[r * bs ..]`.
//!
//! Each product unpacks one weight row's blocks and one activation row back to the ordinary
//! block formats and takes their dot product with our [`VecDot`] kernels: these entry points
//! are not on our hot path, so clarity wins over speed. Sums come out in our order, so they
//! agree with the reference's to rounding, not bit for bit.

pub mod activations;
pub mod k_quants;
pub mod kernel;
pub mod legacy;
pub mod low_bit;

use crate::cpu::kernels::dot::VecDot;

pub use activations::Activation;
pub use kernel::{gemm, gemv};

/// Puts `src`, the bytes of row `j`, into their places in `dst`, where `cols` rows take turns
/// `b` bytes at a time.
pub fn weave(dst: &mut [u8], src: &[u8], j: usize, cols: usize, b: usize) {
    for (t, &v) in src.iter().enumerate() {
        dst[t / b * cols * b + j * b + t % b] = v;
    }
}

/// The inverse of [`weave`]: fills `dst` with row `j`'s bytes out of `src`.
pub fn unweave(src: &[u8], j: usize, cols: usize, b: usize, dst: &mut [u8]) {
    for (t, v) in dst.iter_mut().enumerate() {
        *v = src[t / b * cols * b + j * b + t % b];
    }
}

/// An interleaved weight layout: `COLS` rows of `Block`s, one interleaved block of
/// `BYTES` bytes per block of each row.
pub trait Interleaved {
    /// The ordinary block the rows are made of.
    type Block: VecDot;
    /// Rows kept side by side (`N`).
    const COLS: usize;
    /// The `B` of the layout's name: how many bytes of each activation row `gemm`'s four-row
    /// units keep together, and (for all but `q1_0`, see [`low_bit`]) the chunks the weight
    /// rows take turns with.
    const CHUNK: usize;
    /// Bytes of one interleaved block.
    const BYTES: usize;

    /// Row `j`'s block out of the interleaved block `group` (`BYTES` long).
    fn unpack(group: &[u8], j: usize) -> Self::Block;

    /// Interleaves `COLS` blocks into `out` (`BYTES` long): what the reference's repacking
    /// does to a model's weights.
    fn pack(blocks: &[Self::Block], out: &mut [u8]);
}

/// The little-endian `u16` at `at`.
fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

#[cfg(test)]
mod tests;
