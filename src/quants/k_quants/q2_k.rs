//! `q2_K`: 2-bit affine levels, x = d·sc·q - dmin·m, in 16 sub-blocks of 16 values whose
//! scale `sc` and minimum `m` are 4-bit levels packed into one byte (scale low, minimum high).

use super::search::positive_scale;
use super::{QK_K, WEIGHTED_SWEEP, pack_2bit, sum, sum_squares, unpack_2bit};
use crate::core::types::Type;
use crate::quants::BlockCheck;
use crate::quants::half::Half;
use crate::quants::search::{Sweep, affine_scale, nearest_int};
use crate::quants::{BlockFormat, block_weights};
use std::mem::offset_of;

/// Values per sub-block.
const SUB: usize = 16;
const NSUB: usize = QK_K / SUB;

/// `block_q2_K`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ2K {
    /// Per sub-block: scale level in the low nibble, minimum level in the high one.
    pub scales: [u8; NSUB],
    pub qs: [u8; QK_K / 4],
    /// Scale of the sub-block scales.
    pub d: Half,
    /// Scale of the sub-block minimums.
    pub dmin: Half,
}

const _: () = assert!(std::mem::size_of::<BlockQ2K>() == 84 && std::mem::align_of::<BlockQ2K>() == 1);

impl Default for BlockQ2K {
    fn default() -> Self {
        BlockQ2K { scales: [0; NSUB], qs: [0; QK_K / 4], d: Half::default(), dmin: Half::default() }
    }
}

/// The sweep of the reference quantizer: judged by absolute error, weights |x|.
const REF_SWEEP: Sweep = Sweep { rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: true };

impl BlockQ2K {
    /// Final levels against the stored scales, then the packed block. Sub-blocks whose scale
    /// level came out zero keep the levels of the search.
    fn finish(x: &[f32], scales: [u8; NSUB], d: Half, dmin: Half, levels: &mut [u8; QK_K]) -> Self {
        let (d_all, dmin_all) = (d.to_f32(), dmin.to_f32());
        for (j, xs) in x.chunks_exact(SUB).enumerate() {
            let d = d_all * f32::from(scales[j] & 0x0f);
            if d == 0.0 {
                continue;
            }
            let m = dmin_all * f32::from(scales[j] >> 4);
            for (l, &v) in levels[j * SUB..].iter_mut().zip(xs) {
                *l = nearest_int((v + m) / d).clamp(0, 3) as u8;
            }
        }
        BlockQ2K { scales, qs: pack_2bit(levels), d, dmin }
    }
}

// SAFETY: repr(C) of byte arrays and two Halfs: 84 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ2K {
    const TYPE: Type = Type::Q2_K;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ2K, d), offset_of!(BlockQ2K, dmin)]);

    fn quantize(x: &[f32]) -> Self {
        let mut levels = [0u8; QK_K];
        let mut scratch = [0u8; SUB];
        let mut scales = [0.0f32; NSUB];
        let mut mins = [0.0f32; NSUB];
        let mut max_scale = 0.0f32;
        let mut max_min = 0.0f32;
        for (j, xs) in x.chunks_exact(SUB).enumerate() {
            let weights: [f32; SUB] = std::array::from_fn(|l| xs[l].abs());
            let out = &mut levels[j * SUB..(j + 1) * SUB];
            let (scale, min) = affine_scale(xs, 3, Some(&weights), out, &mut scratch, REF_SWEEP);
            scales[j] = scale;
            mins[j] = min;
            if scale > max_scale {
                max_scale = scale;
            }
            if min > max_min {
                max_min = min;
            }
        }

        let mut packed = [0u8; NSUB];
        let mut d = 0.0f32;
        if max_scale > 0.0 {
            let iscale = 15.0 / max_scale;
            for (p, &s) in packed.iter_mut().zip(&scales) {
                *p = nearest_int(iscale * s) as u8;
            }
            d = max_scale / 15.0;
        }
        let mut dmin = 0.0f32;
        if max_min > 0.0 {
            let iscale = 15.0 / max_min;
            for (p, &m) in packed.iter_mut().zip(&mins) {
                *p |= (nearest_int(iscale * m) as u8) << 4;
            }
            dmin = max_min / 15.0;
        }
        Self::finish(x, packed, Half::from_f32(d), Half::from_f32(dmin), &mut levels)
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        let dmin = self.dmin.to_f32();
        for (half, (q, out)) in self.qs.chunks_exact(32).zip(y.chunks_exact_mut(128)).enumerate() {
            for (part, out) in out.chunks_exact_mut(SUB).enumerate() {
                // Sub-blocks alternate between the first and second 16 bytes of the half,
                // moving up one 2-bit field every two sub-blocks.
                let (k, offset) = (part / 2, part % 2 * SUB);
                let sc = self.scales[half * 8 + part];
                let dl = d * f32::from(sc & 0x0f);
                let ml = dmin * f32::from(sc >> 4);
                for (l, v) in out.iter_mut().enumerate() {
                    *v = dl * f32::from(unpack_2bit(q, offset + l, k)) - ml;
                }
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let mut levels = [0u8; QK_K];
        let mut scratch = [0u8; SUB];
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK_K)).zip(weights.chunks_exact(QK_K)) {
            let sigma2 = sum_squares(xb) / QK_K as f32;
            let mut scales = [0.0f32; NSUB];
            let mut mins = [0.0f32; NSUB];
            let mut sw = [0.0f32; NSUB];
            for (j, (xs, qws)) in xb.chunks_exact(SUB).zip(qw.chunks_exact(SUB)).enumerate() {
                let w: [f32; SUB] = block_weights(xs, qws, sigma2);
                sw[j] = sum(&w);
                let out = &mut levels[j * SUB..(j + 1) * SUB];
                let (scale, min) = affine_scale(xs, 3, Some(&w), out, &mut scratch, WEIGHTED_SWEEP);
                scales[j] = scale;
                mins[j] = min;
            }
            let (mut ls, mut lm) = ([0u8; NSUB], [0u8; NSUB]);
            let d = positive_scale(&scales, 15, &mut ls, &sw);
            let dmin = positive_scale(&mins, 15, &mut lm, &sw);
            let packed: [u8; NSUB] = std::array::from_fn(|j| ls[j] | (lm[j] << 4));
            *block = Self::finish(xb, packed, Half::from_f32(d), Half::from_f32(dmin), &mut levels);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::k_quants::tests::check_round_trip;

    #[test]
    fn round_trip_error_is_bounded() {
        check_round_trip::<BlockQ2K>(0.5);
    }

    #[test]
    fn zero_block_is_all_zero() {
        let b = BlockQ2K::quantize(&[0.0; QK_K]);
        assert_eq!(b, BlockQ2K::default());
        let mut y = [1.0f32; QK_K];
        b.dequantize(&mut y);
        assert!(y.iter().all(|&v| v == 0.0));
    }
}
