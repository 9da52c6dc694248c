//! The K-quant formats: super-blocks of 256 values split into sub-blocks of 16 or 32, each
//! sub-block with its own scale (and, for the affine formats, minimum), and those scales
//! themselves quantized against one or two `f16` super-block scales.
//!
//! `q2_k` .. `q6_k` are the storage formats, `q8_k` the 8-bit format activations are converted
//! to for dot products. `search` holds the scale searches only these formats use; the pieces
//! shared by several formats (level packing, 6-bit scale packing, the affine super-block
//! search of q4_K and q5_K) are here.

pub mod q2_k;
pub mod q3_k;
pub mod q4_k;
pub mod q5_k;
pub mod q6_k;
pub mod q8_k;
pub mod search;

pub use q2_k::BlockQ2K;
pub use q3_k::BlockQ3K;
pub use q4_k::BlockQ4K;
pub use q5_k::BlockQ5K;
pub use q6_k::BlockQ6K;
pub use q8_k::{BlockQ8K, quantize_row_q8_k};

use super::block_weights;
use super::half::Half;
use super::search::{Sweep, affine_scale, nearest_int};
use search::positive_scale;

/// Values per super-block (`QK_K`).
pub const QK_K: usize = 256;

/// Bytes of packed 6-bit scales and minimums in q4_K and q5_K (`K_SCALE_SIZE`).
pub const K_SCALE_SIZE: usize = 12;

/// Σx² over a group, summed in order.
pub(crate) fn sum_squares(x: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for &v in x {
        sum += v * v;
    }
    sum
}

/// Σw over a group, summed in order.
pub(crate) fn sum(w: &[f32]) -> f32 {
    let mut total = 0.0f32;
    for &v in w {
        total += v;
    }
    total
}

/// Packs 256 two-bit levels (each 0..3) four to a byte: in each half of the super-block, byte
/// `l` holds values `l`, `l+32`, `l+64` and `l+96` from the low bits up. Levels above 3 spill
/// their high bits into the next field, exactly as ggml's shifts and ORs would.
pub(crate) fn pack_2bit(levels: &[u8; QK_K]) -> [u8; QK_K / 4] {
    std::array::from_fn(|i| {
        let (half, l) = (i / 32 * 128, i % 32);
        let at = |k: usize| u32::from(levels[half + l + 32 * k]) << (2 * k);
        (at(0) | at(1) | at(2) | at(3)) as u8
    })
}

/// The two-bit field of value `l + 32*k` within a 128-value half whose bytes are `q`.
#[inline]
pub(crate) fn unpack_2bit(q: &[u8], l: usize, k: usize) -> u8 {
    (q[l] >> (2 * k)) & 3
}

/// Stores the 6-bit scale and minimum of sub-block `j` (0..8) of a q4_K / q5_K super-block.
/// Sub-blocks 0..3 keep theirs in the low six bits of bytes `j` and `j+4`; sub-blocks 4..7 keep
/// their low nibbles in byte `j+4` and their top two bits in the high bits of bytes `j-4` and
/// `j`. Must be called for `j` in increasing order, starting from zeroed bytes: the first four
/// calls assign whole bytes that the last four then OR into (which is what ggml does, and what
/// decides the bytes when a level is out of range).
pub(crate) fn pack_scale_min(packed: &mut [u8; K_SCALE_SIZE], j: usize, ls: u8, lm: u8) {
    if j < 4 {
        packed[j] = ls;
        packed[j + 4] = lm;
    } else {
        packed[j + 4] = (ls & 0x0f) | ((lm & 0x0f) << 4);
        packed[j - 4] |= (ls >> 4) << 6;
        packed[j] |= (lm >> 4) << 6;
    }
}

/// The 6-bit scale and minimum of sub-block `j` (0..8), as [`pack_scale_min`] stores them.
/// (ggml's `get_scale_min_k4`.)
#[inline]
pub(crate) fn scale_min(packed: &[u8; K_SCALE_SIZE], j: usize) -> (u8, u8) {
    if j < 4 {
        (packed[j] & 63, packed[j + 4] & 63)
    } else {
        ((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4), (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4))
    }
}

/// One q4_K / q5_K super-block before its levels are bit-packed: the two super-block scales,
/// the packed sub-block scales and minimums, and one level (0..`nmax`) per value.
pub(crate) struct AffineSuperBlock {
    pub d: Half,
    pub dmin: Half,
    pub scales: [u8; K_SCALE_SIZE],
    pub levels: [u8; QK_K],
}

/// Sub-blocks of 32 in the affine formats.
const AFFINE_SUB: usize = 32;

/// The sweep the importance-aware q2_K, q4_K and q5_K searches use.
pub(crate) const WEIGHTED_SWEEP: Sweep = Sweep { rmin: -0.9, rdelta: 0.05, nstep: 36, use_mad: false };

impl AffineSuperBlock {
    /// ggml's reference quantizer for q4_K (`nmax` 15) and q5_K (`nmax` 31): each sub-block
    /// searched with weights |x| plus its RMS, the scales and minimums mapped linearly onto
    /// 0..63 against the largest of each.
    pub fn quantize(x: &[f32], nmax: i32, sweep: Sweep) -> Self {
        let mut levels = [0u8; QK_K];
        let mut scratch = [0u8; AFFINE_SUB];
        let mut scales = [0.0f32; QK_K / AFFINE_SUB];
        let mut mins = [0.0f32; QK_K / AFFINE_SUB];
        let mut max_scale = 0.0f32;
        let mut max_min = 0.0f32;
        for (j, xs) in x.chunks_exact(AFFINE_SUB).enumerate() {
            let av_x = (sum_squares(xs) / AFFINE_SUB as f32).sqrt();
            let weights: [f32; AFFINE_SUB] = std::array::from_fn(|l| av_x + xs[l].abs());
            let out = &mut levels[j * AFFINE_SUB..(j + 1) * AFFINE_SUB];
            let (scale, min) = affine_scale(xs, nmax, Some(&weights), out, &mut scratch, sweep);
            scales[j] = scale;
            mins[j] = min;
            if scale > max_scale {
                max_scale = scale;
            }
            if min > max_min {
                max_min = min;
            }
        }

        let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
        let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
        let mut packed = [0u8; K_SCALE_SIZE];
        for j in 0..QK_K / AFFINE_SUB {
            let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
            let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
            pack_scale_min(&mut packed, j, ls, lm);
        }
        let mut block = AffineSuperBlock {
            d: Half::from_f32(max_scale / 63.0),
            dmin: Half::from_f32(max_min / 63.0),
            scales: packed,
            levels,
        };
        block.requantize(x, nmax);
        block
    }

    /// ggml's importance-aware search for q4_K and q5_K: sub-block weights from the imatrix
    /// entries `qw` (one per value of the super-block), the scales and minimums quantized by a
    /// weighted search of their own. `clamp_levels` caps the 6-bit scale levels at 63, which
    /// ggml does for q5_K but not for q4_K.
    pub fn quantize_weighted(x: &[f32], qw: &[f32], nmax: i32, clamp_levels: bool) -> Self {
        let mut levels = [0u8; QK_K];
        let mut scratch = [0u8; AFFINE_SUB];
        let mut scales = [0.0f32; QK_K / AFFINE_SUB];
        let mut mins = [0.0f32; QK_K / AFFINE_SUB];
        let mut sw = [0.0f32; QK_K / AFFINE_SUB];
        let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
        for (j, (xs, qws)) in x.chunks_exact(AFFINE_SUB).zip(qw.chunks_exact(AFFINE_SUB)).enumerate() {
            let weights: [f32; AFFINE_SUB] = block_weights(xs, qws, sigma2);
            sw[j] = sum(&weights);
            let out = &mut levels[j * AFFINE_SUB..(j + 1) * AFFINE_SUB];
            let (scale, min) = affine_scale(xs, nmax, Some(&weights), out, &mut scratch, WEIGHTED_SWEEP);
            scales[j] = scale;
            mins[j] = min;
        }

        let (mut ls, mut lm) = ([0u8; QK_K / AFFINE_SUB], [0u8; QK_K / AFFINE_SUB]);
        let d_block = positive_scale(&scales, 63, &mut ls, &sw);
        let m_block = positive_scale(&mins, 63, &mut lm, &sw);
        let mut packed = [0u8; K_SCALE_SIZE];
        for j in 0..QK_K / AFFINE_SUB {
            let (s, m) = if clamp_levels { (ls[j].min(63), lm[j].min(63)) } else { (ls[j], lm[j]) };
            pack_scale_min(&mut packed, j, s, m);
        }
        let mut block =
            AffineSuperBlock { d: Half::from_f32(d_block), dmin: Half::from_f32(m_block), scales: packed, levels };
        block.requantize(x, nmax);
        block
    }

    /// Recomputes each value's level against the stored (rounded) scales, so that the levels
    /// fit what dequantization will use. Sub-blocks whose scale came out zero keep the levels
    /// of the search.
    fn requantize(&mut self, x: &[f32], nmax: i32) {
        let d_all = self.d.to_f32();
        let dmin_all = self.dmin.to_f32();
        for (j, xs) in x.chunks_exact(AFFINE_SUB).enumerate() {
            let (sc, m) = scale_min(&self.scales, j);
            let d = d_all * f32::from(sc);
            if d == 0.0 {
                continue;
            }
            let dm = dmin_all * f32::from(m);
            for (l, &v) in self.levels[j * AFFINE_SUB..].iter_mut().zip(xs) {
                *l = nearest_int((v + dm) / d).clamp(0, nmax) as u8;
            }
        }
    }
}

/// The per-sub-block `(d, m)` pairs of a q4_K / q5_K super-block, for dequantization.
pub(crate) fn affine_factors(d: Half, dmin: Half, scales: &[u8; K_SCALE_SIZE]) -> [(f32, f32); 8] {
    let (d, dmin) = (d.to_f32(), dmin.to_f32());
    std::array::from_fn(|j| {
        let (sc, m) = scale_min(scales, j);
        (d * f32::from(sc), dmin * f32::from(m))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::quants::{BlockFormat, dequantize_row, quantize_row, quantize_rows};

    /// A deterministic row of roughly normal values whose scale changes every 64 values.
    pub fn sample_row(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut unit = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n)
            .map(|i| {
                let v: f32 = (0..4).map(|_| unit()).sum::<f32>() - 2.0;
                v * [1.0, 0.01, 30.0, 0.5][i / 64 % 4]
            })
            .collect()
    }

    /// Quantizes sample rows with the reference quantizer and with importance weights, and
    /// checks that every value comes back within `tolerance` times the largest magnitude of
    /// its super-block; also that the block has the size ggml gives the type.
    pub fn check_round_trip<B: BlockFormat>(tolerance: f32) {
        assert_eq!(std::mem::size_of::<B>(), B::TYPE.type_size());
        assert_eq!(B::QK as i64, B::TYPE.blck_size());
        let n = 2 * QK_K;
        for seed in 1..4 {
            let x = sample_row(n, seed);
            let weights: Vec<f32> = (0..n).map(|i| 0.5 + (i % 7) as f32 * 0.25).collect();
            let mut q = vec![B::default(); n / QK_K];
            let mut y = vec![0.0f32; n];
            for weighted in [false, true] {
                if weighted {
                    quantize_rows(&x, &mut q, n, Some(&weights));
                } else {
                    quantize_row(&x, &mut q);
                }
                dequantize_row(&q, &mut y);
                for (xs, ys) in x.chunks(QK_K).zip(y.chunks(QK_K)) {
                    let amax = xs.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                    for (a, b) in xs.iter().zip(ys) {
                        assert!(
                            (a - b).abs() <= tolerance * amax,
                            "{} weighted {weighted}: {a} came back as {b} (block max {amax})",
                            B::TYPE.name()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn scale_min_unpacks_what_was_packed() {
        let pairs: [(u8, u8); 8] = std::array::from_fn(|j| (63 - 7 * j as u8, 5 * j as u8 + 1));
        let mut packed = [0u8; K_SCALE_SIZE];
        for (j, &(s, m)) in pairs.iter().enumerate() {
            pack_scale_min(&mut packed, j, s, m);
        }
        for (j, &pair) in pairs.iter().enumerate() {
            assert_eq!(scale_min(&packed, j), pair);
        }
    }

    #[test]
    fn two_bit_packing_interleaves_quarters() {
        let levels: [u8; QK_K] = std::array::from_fn(|i| ((i / 32) % 4) as u8);
        let packed = pack_2bit(&levels);
        assert!(packed.iter().all(|&b| b == 0b11_10_01_00));
        for half in 0..2 {
            let q = &packed[half * 32..];
            for k in 0..4 {
                assert_eq!(unpack_2bit(q, 5, k), k as u8);
            }
        }
    }
}
