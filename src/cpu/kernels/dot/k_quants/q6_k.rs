//! Q6_K by Q8_K: 6-bit levels in −32..31 (a nibble and two high bits) with a signed 8-bit scale
//! per 16 values (see [`super`] for the sums).

use super::*;

// SAFETY: the K-quant blocks are repr(C) byte arrays and Halfs, any bits valid.
unsafe impl VecDot for BlockQ6K {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::Q6_K;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = QK_K;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            // Value l + 32k of half h: low nibble from ql (bytes 64h + 32(k % 2) + l, high
            // nibbles for k >= 2), top two bits from qh (byte 32h + l, bits 2k).
            let level = |i: usize| {
                let (h, k, l) = (i / 128, i % 128 / 32, i % 32);
                let low = field(&bx.ql[64 * h + 32 * (k % 2)..], l, k / 2, 4);
                let high = field(&bx.qh[32 * h..], l, k, 2);
                (low | (high << 4)) - 32
            };
            let isum = scaled_sum(by, |s| i32::from(bx.scales[s] as i8), level);
            sum += by.scale() * bx.d.to_f32() * isum as f32;
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
    use crate::quants::half::Half;
    use crate::quants::k_quants::BlockQ6K;

    impl KBlock for BlockQ6K {
        const MINS: bool = false;

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn prepare(&self) -> Prepared {
            // SAFETY: `scales` holds the 16 bytes read.
            let scales = _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(self.scales.as_ptr().cast()) });
            // Levels are stored +32.
            Prepared { scales, bias: _mm256_slli_epi16::<5>(scales), factors: factors(self.d, Half::default()) }
        }

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn levels<const J: usize>(&self) -> __m256i {
            // Chunk J = 4h + k: low nibbles from ql bytes 64h + 32(k % 2) (high nibbles for
            // k >= 2), top two bits from qh bytes 32h at bit 2k.
            let (h, k) = (J / 4, J as u32 % 4);
            let low = byte_field(load(chunk(&self.ql, 2 * h + k as usize % 2)), 4 * (k / 2), 0, 4);
            _mm256_or_si256(low, byte_field(load(chunk(&self.qh, h)), 2 * k, 4, 2))
        }
    }
}
