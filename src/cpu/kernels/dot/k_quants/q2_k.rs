//! Q2_K by Q8_K: 2-bit levels in 0..3 with a 4-bit scale and a 4-bit minimum per 16 values (see
//! [`super`] for the sums).

use super::*;

// SAFETY: the K-quant blocks are repr(C) byte arrays and Halfs, any bits valid.
unsafe impl VecDot for BlockQ2K {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::Q2_K;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = QK_K;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let isum = scaled_sum(by, |s| i32::from(bx.scales[s] & 0x0f), |i| two_bit(&bx.qs, i));
            let msum = min_sum(by, |s| i32::from(bx.scales[s] >> 4));
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

    use super::super::avx2::{KBlock, Prepared, byte_field, chunk, factors, load};
    use crate::quants::k_quants::BlockQ2K;

    impl KBlock for BlockQ2K {
        const MINS: bool = true;

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn prepare(&self) -> Prepared {
            // SAFETY: `scales` holds the 16 bytes read.
            let packed = unsafe { _mm_loadu_si128(self.scales.as_ptr().cast()) };
            let nibbles = _mm_set1_epi8(0x0f);
            Prepared {
                scales: _mm256_cvtepu8_epi16(_mm_and_si128(packed, nibbles)),
                bias: _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16::<4>(packed), nibbles)),
                factors: factors(self.d, self.dmin),
            }
        }

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn levels<const J: usize>(&self) -> __m256i {
            byte_field(load(chunk(&self.qs, J / 4)), 2 * (J as u32 % 4), 0, 2)
        }
    }
}
