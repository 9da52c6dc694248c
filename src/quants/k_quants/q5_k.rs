//! `q5_K`: 5-bit affine levels, x = d·sc·q - dmin·m, laid out as q4_K's plus one high bit per
//! value: value `l` of 64-value group `g` (l < 32) has its fifth bit at bit `2g` of `qh[l]`,
//! value `l + 32` at bit `2g + 1`.

use super::{AffineSuperBlock, K_SCALE_SIZE, QK_K, affine_factors};
use crate::core::types::Type;
use crate::quants::BlockCheck;
use crate::quants::BlockFormat;
use crate::quants::half::Half;
use crate::quants::search::Sweep;
use std::mem::offset_of;

/// `block_q5_K`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ5K {
    /// Scale of the sub-block scales.
    pub d: Half,
    /// Scale of the sub-block minimums.
    pub dmin: Half,
    pub scales: [u8; K_SCALE_SIZE],
    /// Fifth bits.
    pub qh: [u8; QK_K / 8],
    /// Low four bits.
    pub qs: [u8; QK_K / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ5K>() == 176 && std::mem::align_of::<BlockQ5K>() == 1);

impl Default for BlockQ5K {
    fn default() -> Self {
        BlockQ5K {
            d: Half::default(),
            dmin: Half::default(),
            scales: [0; K_SCALE_SIZE],
            qh: [0; QK_K / 8],
            qs: [0; QK_K / 2],
        }
    }
}

const NMAX: i32 = 31;

/// The sweep of the reference quantizer.
const REF_SWEEP: Sweep = Sweep { rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: false };

impl From<AffineSuperBlock> for BlockQ5K {
    fn from(b: AffineSuperBlock) -> Self {
        let mut qh = [0u8; QK_K / 8];
        let mut qs = [0u8; QK_K / 2];
        for (g, (levels, ql)) in b.levels.chunks_exact(64).zip(qs.chunks_exact_mut(32)).enumerate() {
            for (j, byte) in ql.iter_mut().enumerate() {
                let (mut l1, mut l2) = (levels[j], levels[j + 32]);
                if l1 > 15 {
                    l1 -= 16;
                    qh[j] |= 1 << (2 * g);
                }
                if l2 > 15 {
                    l2 -= 16;
                    qh[j] |= 2 << (2 * g);
                }
                *byte = l1 | (l2 << 4);
            }
        }
        BlockQ5K { d: b.d, dmin: b.dmin, scales: b.scales, qh, qs }
    }
}

// SAFETY: repr(C) of two Halfs and byte arrays: 176 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ5K {
    const TYPE: Type = Type::Q5_K;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ5K, d), offset_of!(BlockQ5K, dmin)]);

    fn quantize(x: &[f32]) -> Self {
        AffineSuperBlock::quantize(x, NMAX, REF_SWEEP).into()
    }

    fn dequantize(&self, y: &mut [f32]) {
        let factors = affine_factors(self.d, self.dmin, &self.scales);
        for (g, (q, out)) in self.qs.chunks_exact(32).zip(y.chunks_exact_mut(64)).enumerate() {
            let (d1, m1) = factors[2 * g];
            let (d2, m2) = factors[2 * g + 1];
            let (lo, hi) = out.split_at_mut(32);
            for (l, (a, b)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let h = self.qh[l] >> (2 * g);
                let q1 = (q[l] & 0x0f) + if h & 1 != 0 { 16 } else { 0 };
                let q2 = (q[l] >> 4) + if h & 2 != 0 { 16 } else { 0 };
                *a = d1 * f32::from(q1) - m1;
                *b = d2 * f32::from(q2) - m2;
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK_K)).zip(weights.chunks_exact(QK_K)) {
            *block = AffineSuperBlock::quantize_weighted(xb, qw, NMAX, true).into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::k_quants::tests::check_round_trip;

    #[test]
    fn round_trip_error_is_bounded() {
        check_round_trip::<BlockQ5K>(0.05);
    }

    #[test]
    fn zero_block_is_all_zero() {
        assert_eq!(BlockQ5K::quantize(&[0.0; QK_K]), BlockQ5K::default());
    }
}
