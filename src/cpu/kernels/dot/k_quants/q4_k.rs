//! Q4_K by Q8_K: 4-bit levels with a 6-bit scale and minimum per 32 values (see [`super`] for
//! the sums).

use super::*;

// SAFETY: the K-quant blocks are repr(C) byte arrays and Halfs, any bits valid.
unsafe impl VecDot for BlockQ4K {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::Q4_K;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = QK_K;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let (isum, msum) = affine_sums(&bx.scales, by, |i| nibble(&bx.qs, i));
            let dy = by.scale();
            sum += dy * bx.d.to_f32() * isum as f32 - dy * bx.dmin.to_f32() * msum as f32;
        }
        sum
    }

    avx2_tiles_from_kblock!();
}

/// The super-block as the AVX2 tiles read it.
#[cfg(target_arch = "x86_64")]
mod kblock {
    use std::arch::x86_64::*;

    use super::super::avx2::{KBlock, Prepared, affine_prepare, byte_field, chunk, load};
    use crate::quants::k_quants::BlockQ4K;

    impl KBlock for BlockQ4K {
        const MINS: bool = true;

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn prepare(&self) -> Prepared {
            affine_prepare(self.d, self.dmin, &self.scales)
        }

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn levels<const J: usize>(&self) -> __m256i {
            byte_field(load(chunk(&self.qs, J / 2)), 4 * (J as u32 % 2), 0, 4)
        }
    }
}
