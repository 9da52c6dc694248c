//! `q4_K`: 4-bit affine levels, x = d·sc·q - dmin·m, in 8 sub-blocks of 32 values with 6-bit
//! scales and minimums. Each 64 values share 32 bytes: the first 32 values in the low nibbles,
//! the next 32 in the high ones.

use super::{AffineSuperBlock, K_SCALE_SIZE, QK_K, affine_factors};
use crate::core::types::Type;
use crate::quants::BlockCheck;
use crate::quants::BlockFormat;
use crate::quants::half::Half;
use crate::quants::search::Sweep;
use std::mem::offset_of;

/// `block_q4_K`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockQ4K {
    /// Scale of the sub-block scales.
    pub d: Half,
    /// Scale of the sub-block minimums.
    pub dmin: Half,
    pub scales: [u8; K_SCALE_SIZE],
    pub qs: [u8; QK_K / 2],
}

const _: () = assert!(std::mem::size_of::<BlockQ4K>() == 144 && std::mem::align_of::<BlockQ4K>() == 1);

impl Default for BlockQ4K {
    fn default() -> Self {
        BlockQ4K { d: Half::default(), dmin: Half::default(), scales: [0; K_SCALE_SIZE], qs: [0; QK_K / 2] }
    }
}

const NMAX: i32 = 15;

/// The sweep of the reference quantizer.
const REF_SWEEP: Sweep = Sweep { rmin: -1.0, rdelta: 0.1, nstep: 20, use_mad: false };

impl From<AffineSuperBlock> for BlockQ4K {
    fn from(b: AffineSuperBlock) -> Self {
        BlockQ4K {
            d: b.d,
            dmin: b.dmin,
            scales: b.scales,
            qs: std::array::from_fn(|i| {
                let base = i / 32 * 64 + i % 32;
                b.levels[base] | (b.levels[base + 32] << 4)
            }),
        }
    }
}

// SAFETY: repr(C) of two Halfs and byte arrays: 144 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockQ4K {
    const TYPE: Type = Type::Q4_K;
    const QK: usize = QK_K;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockQ4K, d), offset_of!(BlockQ4K, dmin)]);

    fn quantize(x: &[f32]) -> Self {
        AffineSuperBlock::quantize(x, NMAX, REF_SWEEP).into()
    }

    fn dequantize(&self, y: &mut [f32]) {
        let factors = affine_factors(self.d, self.dmin, &self.scales);
        for (pair, (q, out)) in self.qs.chunks_exact(32).zip(y.chunks_exact_mut(64)).enumerate() {
            let (d1, m1) = factors[2 * pair];
            let (d2, m2) = factors[2 * pair + 1];
            let (lo, hi) = out.split_at_mut(32);
            for ((a, b), &byte) in lo.iter_mut().zip(hi.iter_mut()).zip(q) {
                *a = d1 * f32::from(byte & 0x0f) - m1;
                *b = d2 * f32::from(byte >> 4) - m2;
            }
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK_K)).zip(weights.chunks_exact(QK_K)) {
            *block = AffineSuperBlock::quantize_weighted(xb, qw, NMAX, false).into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::k_quants::tests::check_round_trip;

    #[test]
    fn round_trip_error_is_bounded() {
        check_round_trip::<BlockQ4K>(0.1);
    }

    #[test]
    fn zero_block_is_all_zero() {
        assert_eq!(BlockQ4K::quantize(&[0.0; QK_K]), BlockQ4K::default());
    }
}
