//! Q3_K by Q8_K: 3-bit levels in −4..3 (two bits and a high bit) with a signed 6-bit scale per
//! 16 values (see [`super`] for the sums).

use super::*;

/// The signed 6-bit scale (−32..31) of sub-block `s` of a Q3_K super-block: its low nibble in
/// byte `s % 8` (high half from s = 8 on), its top two bits in byte `8 + s % 4` at bit
/// `2·(s / 4)`.
#[inline]
fn q3_scale(packed: &[u8; 12], s: usize) -> i32 {
    let low = (packed[s % 8] >> (4 * (s / 8))) & 0x0f;
    let high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
    i32::from(low | (high << 4)) - 32
}

// SAFETY: the K-quant blocks are repr(C) byte arrays and Halfs, any bits valid.
unsafe impl VecDot for BlockQ3K {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::Q3_K;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = QK_K;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            // A clear high bit stands for −4.
            let level = |i| two_bit(&bx.qs, i) - 4 * (1 - high_bit(&bx.hmask, i));
            let isum = scaled_sum(by, |s| q3_scale(&bx.scales, s), level);
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

    use super::super::avx2::{KBlock, Prepared, byte_field, chunk, factors, load, scale_words};
    use crate::quants::half::Half;
    use crate::quants::k_quants::BlockQ3K;

    impl KBlock for BlockQ3K {
        const MINS: bool = false;

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn prepare(&self) -> Prepared {
            let v = scale_words(&self.scales);
            // Scale s: low nibble from byte s % 8 of w0, w1 (high nibbles from s = 8), top two
            // bits from byte s % 4 of w2, at bit 2·(s / 4).
            let low = _mm_srlv_epi32(_mm_shuffle_epi32::<0b01_00_01_00>(v), _mm_setr_epi32(0, 0, 4, 4));
            let low = _mm_and_si128(low, _mm_set1_epi8(0x0f));
            let high = _mm_srlv_epi32(_mm_shuffle_epi32::<0b10_10_10_10>(v), _mm_setr_epi32(0, 2, 4, 6));
            let high = _mm_slli_epi32::<4>(_mm_and_si128(high, _mm_set1_epi8(3)));
            let levels = _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
            let scales = _mm256_cvtepi8_epi16(levels);
            // Levels are stored +4.
            Prepared { scales, bias: _mm256_slli_epi16::<2>(scales), factors: factors(self.d, Half::default()) }
        }

        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn levels<const J: usize>(&self) -> __m256i {
            let low = byte_field(load(chunk(&self.qs, J / 4)), 2 * (J as u32 % 4), 0, 2);
            _mm256_or_si256(low, byte_field(load(&self.hmask), J as u32, 2, 1))
        }
    }
}
