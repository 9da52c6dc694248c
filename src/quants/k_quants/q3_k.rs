//! `q3_K`: 3-bit symmetric levels, x = d·(sc-32)·(q-4), in 16 sub-blocks of 16 values with
//! 6-bit scales. The low two bits of each level are packed as in q2_K; the third bit of value
//! `j` is bit `j / 32` of `hmask[j % 32]`.

use super::search::symmetric_scale_refined;
use super::{QK_K, pack_2bit, sum, sum_squares, unpack_2bit};
use crate::core::types::Type;
use crate::quants::BlockCheck;
use crate::quants::half::Half;
use crate::quants::search::{Search, Weighting, nearest_int, symmetric_scale};
use crate::quants::{BlockFormat, block_weights};
use std::mem::offset_of;

const SUB: usize = 16;
const NSUB: usize = QK_K / SUB;

/// `block_q3_K`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ3K {
    /// Third bit of every level.
    pub hmask: [u8; QK_K / 8],
    /// Low two bits of every level.
    pub qs: [u8; QK_K / 4],
    /// Sixteen 6-bit scale levels: low nibbles in bytes 0..8, top bits in bytes 8..12.
    pub scales: [u8; 12],
    pub d: Half,
}

const _: () = assert!(std::mem::size_of::<BlockQ3K>() == 110 && std::mem::align_of::<BlockQ3K>() == 1);

impl Default for BlockQ3K {
    fn default() -> Self {
        BlockQ3K { hmask: [0; QK_K / 8], qs: [0; QK_K / 4], scales: [0; 12], d: Half::default() }
    }
}

/// Stores the 6-bit level `l` (0..63) of sub-block `j` into zeroed-then-filled scale bytes:
/// its low nibble in byte `j % 8` (low half for j < 8, high half after), its top two bits in
/// byte `8 + j % 4` at bit `2 * (j / 4)`.
fn pack_scale(packed: &mut [u8; 12], j: usize, l: u8) {
    if j < 8 {
        packed[j] |= l & 0x0f;
    } else {
        packed[j - 8] |= (l & 0x0f) << 4;
    }
    packed[8 + j % 4] |= (l >> 4) << (2 * (j / 4));
}

/// The signed scale level (-32..31) of sub-block `j`.
pub(crate) fn scale(packed: &[u8; 12], j: usize) -> i32 {
    let low = if j < 8 { packed[j] & 0x0f } else { packed[j - 8] >> 4 };
    let high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    i32::from(low | (high << 4)) - 32
}

impl BlockQ3K {
    /// The signed levels (-4..3) in value order: value 128h + 32k + l has bits 2k of byte
    /// 32h + l of `qs`, less 4 where bit 4h + k of `hmask[l]` is clear.
    pub(crate) fn levels(&self) -> [i8; QK_K] {
        std::array::from_fn(|i| {
            let (h, k, l) = (i / 128, i % 128 / 32, i % 32);
            let low = unpack_2bit(&self.qs[32 * h..], l, k) as i8;
            if self.hmask[l] >> (4 * h + k) & 1 == 0 { low - 4 } else { low }
        })
    }

    /// The signed scale level (-32..31) of the 16 values of sub-block `j`.
    pub(crate) fn sub_scale(&self, j: usize) -> i32 {
        scale(&self.scales, j)
    }

    /// Final levels against the stored scales, then the packed block. `levels` hold 0..7
    /// (level + 4); sub-blocks whose scale came out zero keep the levels of the search.
    fn finish(x: &[f32], scales: [u8; 12], d: Half, levels: &mut [i8; QK_K]) -> Self {
        let d_all = d.to_f32();
        for (j, xs) in x.chunks_exact(SUB).enumerate() {
            let d = d_all * scale(&scales, j) as f32;
            if d == 0.0 {
                continue;
            }
            for (l, &v) in levels[j * SUB..].iter_mut().zip(xs) {
                *l = (nearest_int(v / d).clamp(-4, 3) + 4) as i8;
            }
        }
        let mut hmask = [0u8; QK_K / 8];
        let mut low = [0u8; QK_K];
        for (j, (&l, out)) in levels.iter().zip(low.iter_mut()).enumerate() {
            if l > 3 {
                hmask[j % 32] |= 1 << (j / 32);
                *out = (l - 4) as u8;
            } else {
                *out = l as u8;
            }
        }
        BlockQ3K { hmask, qs: pack_2bit(&low), scales, d }
    }
}

// SAFETY: repr(C) of byte arrays and a Half: 110 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ3K {
    const TYPE: Type = Type::Q3_K;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ3K, d)]);

    fn quantize(x: &[f32]) -> Self {
        let mut levels = [0i8; QK_K];
        let mut scales = [0.0f32; NSUB];
        let mut max_scale = 0.0f32;
        let mut amax = 0.0f32;
        for (j, xs) in x.chunks_exact(SUB).enumerate() {
            scales[j] = symmetric_scale_refined(xs, 4, &mut levels[j * SUB..(j + 1) * SUB]);
            if scales[j].abs() > amax {
                amax = scales[j].abs();
                max_scale = scales[j];
            }
        }

        let mut packed = [0u8; 12];
        let mut d = 0.0f32;
        if max_scale != 0.0 {
            let iscale = -32.0 / max_scale;
            for (j, &s) in scales.iter().enumerate() {
                // ggml narrows to a signed byte before clamping.
                let l = (nearest_int(iscale * s) as i8).clamp(-32, 31) + 32;
                pack_scale(&mut packed, j, l as u8);
            }
            d = 1.0 / iscale;
        }
        Self::finish(x, packed, Half::from_f32(d), &mut levels)
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d_all = self.d.to_f32();
        for (j, (out, levels)) in y.chunks_exact_mut(SUB).zip(self.levels().chunks_exact(SUB)).enumerate() {
            let dl = d_all * self.sub_scale(j) as f32;
            for (v, &q) in out.iter_mut().zip(levels) {
                *v = dl * f32::from(q);
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let mut levels = [0i8; QK_K];
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK_K)).zip(weights.chunks_exact(QK_K)) {
            let sigma2 = 2.0 * sum_squares(xb) / QK_K as f32;
            let mut scales = [0.0f32; NSUB];
            let mut sw = [0.0f32; NSUB];
            for (j, (xs, qws)) in xb.chunks_exact(SUB).zip(qw.chunks_exact(SUB)).enumerate() {
                let w: [f32; SUB] = block_weights(xs, qws, sigma2);
                sw[j] = sum(&w);
                let out = &mut levels[j * SUB..(j + 1) * SUB];
                scales[j] = symmetric_scale(xs, 4, out, Search::Full, Weighting::Given(&w));
            }
            let mut ls = [0i8; NSUB];
            let d = symmetric_scale(&scales, 32, &mut ls, Search::Full, Weighting::Given(&sw));
            let mut packed = [0u8; 12];
            for (j, &l) in ls.iter().enumerate() {
                pack_scale(&mut packed, j, l as u8);
            }
            *block = Self::finish(xb, packed, Half::from_f32(d), &mut levels);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::k_quants::tests::check_round_trip;

    #[test]
    fn round_trip_error_is_bounded() {
        check_round_trip::<BlockQ3K>(0.3);
    }

    #[test]
    fn scale_levels_round_trip() {
        let mut packed = [0u8; 12];
        for j in 0..NSUB {
            pack_scale(&mut packed, j, (j * 4 + 1) as u8);
        }
        for j in 0..NSUB {
            assert_eq!(scale(&packed, j), (j * 4 + 1) as i32 - 32);
        }
    }

    #[test]
    fn zero_block_is_all_zero() {
        assert_eq!(BlockQ3K::quantize(&[0.0; QK_K]), BlockQ3K::default());
    }
}
