//! The activations of `gemm`: four rows quantized together into `block_q8_0x4` (for the
//! 32-value formats) or `block_q8_Kx4` (for the K-quants), their quant bytes dealt `B` at a
//! time as the weights' are, so that a chunk of weights meets the four rows' matching chunks
//! side by side.
//!
//! `block_q8_Kx4` is four `f32` scales, the 1024 quants, then the 64 sums of 16 quants
//! grouped by 64 values: the sums of values `64g..64g + 64` of row 0 (four of them), then
//! of row 1, and so on, before those of values `64(g+1)..`.
//!
//! The quantizers come in two flavours, because the reference's x86 build exports both: the
//! generic (`*_generic`, and `4x4`, which x86 has no SIMD version of) and its AVX2 `4x8`, which
//! rounds and chooses the scale slightly differently (see [`Flavour`]).

use super::{u16_at, unweave, weave};
use crate::cpu::kernels::dot::quantize_row_q8_0;
use crate::quants::half::Half;
use crate::quants::k_quants::QK_K;
use crate::quants::k_quants::q8_k::BlockQ8K;
use crate::quants::q8::BlockQ8_0;
use crate::quants::search::nearest_int;

/// How a quantizer chooses scales and rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// ggml's generic C: `q8_0` scales by `1/(amax/127)` and rounds half away from zero;
    /// `q8_K` takes the sign of the first value of largest magnitude.
    Generic,
    /// ggml's x86 AVX2: `q8_0` scales by `127/amax` and rounds half to even (as its
    /// `quantize_row_q8_0`); `q8_K` takes a positive largest value over a negative one.
    X86,
}

/// A unit of `gemv` activations that `gemm` keeps four rows of together.
pub trait Activation: Copy + Default {
    /// Bytes of four rows of the unit.
    const X4_BYTES: usize;

    /// Row `m`'s unit out of `x4`, whose quants are dealt `chunk` bytes at a time.
    fn row_of(x4: &[u8], m: usize, chunk: usize) -> Self;
}

const ROWS: usize = 4;
/// Bytes of `block_q8_0x4`.
pub const Q8_0X4_BYTES: usize = ROWS * 34;
/// Bytes of `block_q8_Kx4`.
pub const Q8_KX4_BYTES: usize = ROWS * 4 + ROWS * QK_K + ROWS * QK_K / 16 * 2;

/// Where the sum of quants `16g..16g + 16` of row `m` lies among `block_q8_Kx4`'s sums.
fn bsum_slot(m: usize, g: usize) -> usize {
    g / 4 * 16 + m * 4 + g % 4
}

impl Activation for BlockQ8_0 {
    const X4_BYTES: usize = Q8_0X4_BYTES;

    fn row_of(x4: &[u8], m: usize, chunk: usize) -> Self {
        let mut qs = [0; 32];
        unweave(&x4[2 * ROWS..], m, ROWS, chunk, &mut qs);
        BlockQ8_0 { d: Half::from_bits(u16_at(x4, 2 * m)), qs }
    }
}

/// `q1_0`'s 128 values meet four `q8_0` blocks, `block_q8_0x4`s one after the other.
impl Activation for [BlockQ8_0; 4] {
    const X4_BYTES: usize = 4 * Q8_0X4_BYTES;

    fn row_of(x4: &[u8], m: usize, chunk: usize) -> Self {
        std::array::from_fn(|i| BlockQ8_0::row_of(&x4[i * Q8_0X4_BYTES..], m, chunk))
    }
}

impl Activation for BlockQ8K {
    const X4_BYTES: usize = Q8_KX4_BYTES;

    fn row_of(x4: &[u8], m: usize, chunk: usize) -> Self {
        let mut b = BlockQ8K::default();
        b.d.copy_from_slice(&x4[4 * m..4 * m + 4]);
        let (qs, sums) = x4[4 * ROWS..].split_at(ROWS * QK_K);
        unweave(qs, m, ROWS, chunk, &mut b.qs);
        for (g, sum) in b.bsums.iter_mut().enumerate() {
            let at = 2 * bsum_slot(m, g);
            *sum = [sums[at], sums[at + 1]];
        }
        b
    }
}

/// Quantizes four rows of `k` values (`x`, row after row) into `k / 32` `block_q8_0x4`s
/// (`y`), quants dealt `chunk` bytes at a time.
pub fn quantize_mat_q8_0(x: &[f32], y: &mut [u8], k: usize, chunk: usize, flavour: Flavour) {
    let nb = k / 32;
    let mut row = vec![BlockQ8_0::default(); nb];
    for m in 0..ROWS {
        let values = &x[m * k..(m + 1) * k];
        match flavour {
            Flavour::X86 => quantize_row_q8_0(values, &mut row),
            Flavour::Generic => {
                for (block, v) in row.iter_mut().zip(values.chunks_exact(32)) {
                    *block = quantize_block_q8_0_generic(v);
                }
            }
        }
        for (block, out) in row.iter().zip(y.chunks_exact_mut(Q8_0X4_BYTES)) {
            out[2 * m..2 * m + 2].copy_from_slice(&block.d.bits().to_le_bytes());
            weave(&mut out[2 * ROWS..], &block.qs, m, ROWS, chunk);
        }
    }
}

/// One block as ggml's generic `quantize_mat_q8_0` does it.
fn quantize_block_q8_0_generic(v: &[f32]) -> BlockQ8_0 {
    let amax = v.iter().fold(0.0f32, |a, x| a.max(x.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    BlockQ8_0 { d: Half::from_f32(d), qs: std::array::from_fn(|j| (v[j] * id).round() as i8 as u8) }
}

/// Quantizes four rows of `k` values (`x`, row after row) into `k / 256` `block_q8_Kx4`s
/// (`y`), quants dealt `chunk` bytes at a time. Unlike `quantize_row_q8_K`, a block of zeros
/// gets zero sums too.
pub fn quantize_mat_q8_k(x: &[f32], y: &mut [u8], k: usize, chunk: usize, flavour: Flavour) {
    for m in 0..ROWS {
        let values = &x[m * k..(m + 1) * k];
        for (v, out) in values.chunks_exact(QK_K).zip(y.chunks_exact_mut(Q8_KX4_BYTES)) {
            let (iscale, d) = q8_k_scale(v, flavour);
            let qs: [u8; QK_K] = std::array::from_fn(|j| nearest_int(v[j] * iscale) as i8 as u8);
            out[4 * m..4 * m + 4].copy_from_slice(&d.to_le_bytes());
            let (packed, sums) = out[4 * ROWS..].split_at_mut(ROWS * QK_K);
            weave(packed, &qs, m, ROWS, chunk);
            for (g, group) in qs.chunks_exact(16).enumerate() {
                let sum: i32 = group.iter().map(|&q| i32::from(q as i8)).sum();
                let at = 2 * bsum_slot(m, g);
                sums[at..at + 2].copy_from_slice(&(sum as i16).to_le_bytes());
            }
        }
    }
}

/// The multiplier that takes a block's values to quants, and the scale that takes quants
/// back: the value of largest magnitude becomes -127.
fn q8_k_scale(v: &[f32], flavour: Flavour) -> (f32, f32) {
    let mut amax = 0.0f32;
    let mut max = 0.0f32;
    for &x in v {
        // the generic keeps the first of equal magnitudes, the x86 build a positive one
        let wins = x.abs() > amax || (flavour == Flavour::X86 && x.abs() == amax && x > 0.0);
        if wins {
            amax = x.abs();
            max = x;
        }
    }
    if amax == 0.0 {
        return (0.0, 0.0);
    }
    let iscale = -127.0 / max;
    (iscale, 1.0 / iscale)
}
