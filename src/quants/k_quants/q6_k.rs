//! `q6_K`: 6-bit symmetric levels, x = d·sc·(q-32), in 16 sub-blocks of 16 values with signed
//! 8-bit scales. In each half of 128 values, value `l + 32k` (l < 32) keeps its low nibble in
//! `ql[l + 32 (k % 2)]` (low half for k < 2, high half after) and its top two bits in `qh[l]` at
//! bit `2k`.

use super::QK_K;
use crate::core::types::Type;
use crate::quants::BlockCheck;
use crate::quants::BlockFormat;
use crate::quants::half::Half;
use crate::quants::search::{GROUP_MAX_EPS, Search, Weighting, nearest_int, symmetric_scale};
use std::mem::offset_of;

const SUB: usize = 16;
const NSUB: usize = QK_K / SUB;

/// `block_q6_K`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ6K {
    /// Low four bits of the levels.
    pub ql: [u8; QK_K / 2],
    /// Top two bits of the levels.
    pub qh: [u8; QK_K / 4],
    /// Per sub-block scales, signed bytes.
    pub scales: [u8; NSUB],
    pub d: Half,
}

const _: () = assert!(std::mem::size_of::<BlockQ6K>() == 210 && std::mem::align_of::<BlockQ6K>() == 1);

impl Default for BlockQ6K {
    fn default() -> Self {
        BlockQ6K { ql: [0; QK_K / 2], qh: [0; QK_K / 4], scales: [0; NSUB], d: Half::default() }
    }
}

impl BlockQ6K {
    /// ggml's q6_K quantizer: each sub-block searched with `weighting(j)` for sub-block `j`,
    /// the scales mapped onto -128..127 against the one of largest magnitude, and the levels
    /// recomputed against the stored scales. A super-block whose scales are all (near) zero is
    /// stored as zeros.
    fn quantize_with<'w>(x: &[f32], weighting: impl Fn(usize) -> Weighting<'w>) -> Self {
        let mut levels = [0i8; QK_K];
        let mut scales = [0.0f32; NSUB];
        let mut max_scale = 0.0f32;
        let mut max_abs_scale = 0.0f32;
        for (j, xs) in x.chunks_exact(SUB).enumerate() {
            let out = &mut levels[j * SUB..(j + 1) * SUB];
            let scale = symmetric_scale(xs, 32, out, Search::Full, weighting(j));
            scales[j] = scale;
            if scale.abs() > max_abs_scale {
                max_abs_scale = scale.abs();
                max_scale = scale;
            }
        }
        if max_abs_scale < GROUP_MAX_EPS {
            return BlockQ6K::default();
        }

        let iscale = -128.0 / max_scale;
        let d = Half::from_f32(1.0 / iscale);
        let packed: [u8; NSUB] = std::array::from_fn(|j| nearest_int(iscale * scales[j]).min(127) as i8 as u8);
        let d_all = d.to_f32();
        for (j, xs) in x.chunks_exact(SUB).enumerate() {
            let d = d_all * f32::from(packed[j] as i8);
            if d == 0.0 {
                continue;
            }
            for (l, &v) in levels[j * SUB..].iter_mut().zip(xs) {
                *l = (nearest_int(v / d).clamp(-32, 31) + 32) as i8;
            }
        }

        let mut ql = [0u8; QK_K / 2];
        let mut qh = [0u8; QK_K / 4];
        for (half, levels) in levels.chunks_exact(128).enumerate() {
            for l in 0..32 {
                let q: [u8; 4] = std::array::from_fn(|k| levels[l + 32 * k] as u8);
                ql[64 * half + l] = (q[0] & 0x0f) | ((q[2] & 0x0f) << 4);
                ql[64 * half + l + 32] = (q[1] & 0x0f) | ((q[3] & 0x0f) << 4);
                qh[32 * half + l] = (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6);
            }
        }
        BlockQ6K { ql, qh, scales: packed, d }
    }
}

// SAFETY: repr(C) of byte arrays and a Half: 210 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ6K {
    const TYPE: Type = Type::Q6_K;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ6K, d)]);

    fn quantize(x: &[f32]) -> Self {
        Self::quantize_with(x, |_| Weighting::Square)
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (half, out) in y.chunks_exact_mut(128).enumerate() {
            let ql = &self.ql[64 * half..64 * (half + 1)];
            let qh = &self.qh[32 * half..32 * (half + 1)];
            let sc = &self.scales[8 * half..8 * (half + 1)];
            for l in 0..32 {
                let is = l / 16;
                let level = |k: usize| {
                    let low = if k < 2 { ql[l + 32 * k] & 0x0f } else { ql[l + 32 * (k - 2)] >> 4 };
                    i32::from(low | (((qh[l] >> (2 * k)) & 3) << 4)) - 32
                };
                for k in 0..4 {
                    out[l + 32 * k] = d * f32::from(sc[is + 2 * k] as i8) * level(k) as f32;
                }
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK_K)).zip(weights.chunks_exact(QK_K)) {
            *block = Self::quantize_with(xb, |j| Weighting::Given(&qw[j * SUB..(j + 1) * SUB]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::k_quants::tests::check_round_trip;

    #[test]
    fn round_trip_error_is_bounded() {
        check_round_trip::<BlockQ6K>(0.03);
    }

    #[test]
    fn zero_block_is_all_zero() {
        assert_eq!(BlockQ6K::quantize(&[0.0; QK_K]), BlockQ6K::default());
    }
}
