//! `iq4_nl` · `q8_0` and `iq4_xs` · `q8_K`: 4-bit codes into 16 fixed levels.

use super::whole::q8;
use crate::core::types::Type;
use crate::cpu::kernels::dot::VecDot;
use crate::quants::iq4::{BlockIq4Nl, BlockIq4Xs, LEVELS};
use crate::quants::k_quants::BlockQ8K;
use crate::quants::q8::BlockQ8_0;

/// Σ `L[code]`·y over a group of 32: byte j of `qs` holds the codes of values j (low nibble) and
/// j+16 (high nibble).
fn group_sum(qs: &[u8], y: &[u8]) -> i32 {
    (0..16)
        .map(|j| {
            let (lo, hi) = (usize::from(qs[j] & 0x0f), usize::from(qs[j] >> 4));
            i32::from(LEVELS[lo]) * q8(y, j) + i32::from(LEVELS[hi]) * q8(y, j + 16)
        })
        .sum()
}

/// The 6-bit scale of group `i` of an `iq4_xs` block, less its offset of 32.
fn xs_scale(b: &BlockIq4Xs, i: usize) -> i32 {
    let low = (b.scales_l[i / 2] >> (4 * (i % 2))) & 0x0f;
    let high = (u16::from_le_bytes(b.scales_h) >> (2 * i)) & 3;
    (i32::from(low) | i32::from(high << 4)) - 32
}

/// What the levels are raised by for `vpdpbusd`, which takes them as unsigned bytes (1..=241).
#[cfg(target_arch = "x86_64")]
const RAISE: u8 = 128;
/// The levels raised by [`RAISE`], for both formats' `vpdpbusd` tiles.
#[cfg(target_arch = "x86_64")]
const RAISED_LEVELS: [i8; 16] = crate::cpu::kernels::x86::byte_tiles::raised16(&LEVELS, RAISE);

// SAFETY: the blocks are repr(C) byte arrays and Halfs.
unsafe impl VecDot for BlockIq4Nl {
    type Rhs = BlockQ8_0;
    const TYPE: Type = Type::IQ4_NL;
    const VEC_DOT_TYPE: Type = Type::Q8_0;
    const QK: usize = 32;

    fn dot_scalar(x: &[Self], y: &[BlockQ8_0]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            sum += (by.d.to_f32() * bx.d.to_f32()) * group_sum(&bx.qs, &by.qs) as f32;
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq4_nl(x, y) }
    }
}

// SAFETY: as for BlockIq4Nl.
unsafe impl VecDot for BlockIq4Xs {
    type Rhs = BlockQ8K;
    const TYPE: Type = Type::IQ4_XS;
    const VEC_DOT_TYPE: Type = Type::Q8_K;
    const QK: usize = 256;

    fn dot_scalar(x: &[Self], y: &[BlockQ8K]) -> f32 {
        let mut sum = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let d = bx.d.to_f32() * by.scale();
            for i in 0..8 {
                let sumi = group_sum(&bx.qs[16 * i..], &by.qs[32 * i..]);
                sum += (d * xs_scale(bx, i) as f32) * sumi as f32;
            }
        }
        sum
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX2, FMA and F16C.
        unsafe { avx2::iq4_xs(x, y) }
    }

    const AVX512_COLS: usize = crate::cpu::kernels::dot::MAX_WIDE_COLS;
    const AVX512_VBMI: bool = true;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the caller vouches for AVX-512 with VBMI (and so AVX2, FMA and F16C).
        unsafe { vnni::iq4_xs(x, y) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{
        Sub32, Weights32, half, half8, load16, lookup16, nibbles, q8_0_tile, q8k_tile,
    };

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq4_nl<const R: usize, const C: usize>(x: &[&[BlockIq4Nl]; R], y: &[&[BlockQ8_0]; C]) -> [[f32; C]; R] {
        q8_0_tile(
            x,
            y,
            RAISE,
            |b| half8(b.d),
            |b, _| (lookup16(&RAISED_LEVELS, nibbles(load16(&b.qs, 0))), _mm256_set1_ps(1.0)),
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn iq4_xs<const R: usize, const C: usize>(x: &[&[BlockIq4Xs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        q8k_tile(
            x,
            y,
            |b| {
                let mut scales = [0i16; 8];
                for (i, s) in scales.iter_mut().enumerate() {
                    *s = xs_scale(b, i) as i16;
                }
                (half(b.d), scales)
            },
            |b, scales, i| Sub32 {
                weights: Weights32::signed(lookup16(&LEVELS, nibbles(load16(&b.qs, 16 * i)))),
                scales: _mm256_set1_epi16(scales[i]),
            },
        )
    }
}

/// IQ4_XS with `vpdpbusd`, which sums four products of unsigned by signed bytes into 32 bits.
/// The levels go in raised by 128 (1..=241), so that each group sums Σ(L+128)·y; 128·Σy comes
/// off once per block, from the activations' `bsums`. A group's 32 codes are one 16-byte load
/// into both halves of a register, the upper half shifted by 4 bits, looked up with `vpermb`
/// (a table of two copies, so the bits above the nibble select the same level); its 8 lanes
/// of sums take the group's scale with one `vpmulld`. Per 32 values that is two instructions
/// for the weights and three per column, where the AVX2 tile's sign-and-`maddubs` route
/// (ggml's too) takes five for the weights and five per column; so one tile also takes up to
/// six columns (4096² by 4, one thread: 1145 µs against 1786 on the earlier AVX-512 tile,
/// ggml 2709; by 1: 494 against 664 on the AVX2 tile, ggml 655). The integer sums are exact
/// (at most 8·4·241·128·32 per lane, below 2³¹), as in every other tile.
#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::*;

    use super::*;
    use crate::cpu::kernels::x86::byte_tiles::{half, load16, load32, q8k_frame};
    use crate::quants::k_quants::QK_K;

    /// [`RAISED_LEVELS`] twice: a `vpermb` table indexed by the low five bits.
    const TABLE: [[i8; 16]; 2] = [RAISED_LEVELS; 2];

    /// The 8 group scales of a block ([`xs_scale`]) in the lanes of a vector: group i's low
    /// four bits from bit 4i of `scales_l`, its top two from bit 2i of `scales_h` (the block's
    /// first word holds `d` and `scales_h`, its second `scales_l`).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn scales8(b: &BlockIq4Xs) -> __m256i {
        let high = _mm256_set1_epi32(i32::from(u16::from_le_bytes(b.scales_h)));
        let low = _mm256_set1_epi32(i32::from_le_bytes(b.scales_l));
        let low = _mm256_and_si256(
            _mm256_srlv_epi32(low, _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
            _mm256_set1_epi32(0x0f),
        );
        // bits 2i, 2i + 1 of scales_h to bits 4, 5
        let high = _mm256_srlv_epi32(_mm256_slli_epi32::<4>(high), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
        let high = _mm256_and_si256(high, _mm256_set1_epi32(0x30));
        _mm256_sub_epi32(_mm256_or_si256(low, high), _mm256_set1_epi32(32))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn iq4_xs<const R: usize, const C: usize>(x: &[&[BlockIq4Xs]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
        // SAFETY: the table holds the 32 bytes read.
        let table = unsafe { _mm256_loadu_si256(TABLE.as_ptr().cast()) };
        // the low nibbles (values 0..16 of a group) in the lower half, the high in the upper
        let shifts = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
        let ones = _mm256_set1_epi16(1);
        q8k_frame(x, y, |b, ys| {
            let scales = scales8(b);
            let mut sums = [_mm256_setzero_si256(); C];
            for i in 0..QK_K / 32 {
                let codes = _mm256_srlv_epi32(_mm256_broadcastsi128_si256(load16(&b.qs, 16 * i)), shifts);
                let raised = _mm256_permutexvar_epi8(codes, table);
                let scale = _mm256_permutevar8x32_epi32(scales, _mm256_set1_epi32(i as i32));
                for (s, yb) in sums.iter_mut().zip(ys) {
                    let group = _mm256_dpbusd_epi32(_mm256_setzero_si256(), raised, load32(&yb.qs, 32 * i));
                    *s = _mm256_add_epi32(*s, _mm256_mullo_epi32(group, scale));
                }
            }
            for (s, yb) in sums.iter_mut().zip(ys) {
                // lane i: the sum of group i's activations
                let group_sums = _mm256_madd_epi16(load32(yb.bsums.as_flattened(), 0), ones);
                *s = _mm256_sub_epi32(*s, _mm256_slli_epi32::<7>(_mm256_mullo_epi32(group_sums, scales)));
            }
            (half(b.d), sums)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check_rows, q8_0, q8_k, quantized, random, values};
    use super::*;
    use crate::quants::half::Half;

    #[test]
    fn iq4_nl_matches_f64() {
        for n in [32, 96, 512] {
            check_rows::<BlockIq4Nl>(n, "quantized", |s| quantized(&values(n, s), false), q8_0);
            let fix = |b: &mut BlockIq4Nl| b.d = Half::from_f32(0.01);
            check_rows::<BlockIq4Nl>(n, "random", |s| random(n, s, fix), q8_0);
        }
    }

    #[test]
    fn iq4_xs_matches_f64() {
        for n in [256, 768] {
            check_rows::<BlockIq4Xs>(n, "quantized", |s| quantized(&values(n, s), false), q8_k);
            let fix = |b: &mut BlockIq4Xs| b.d = Half::from_f32(0.002);
            check_rows::<BlockIq4Xs>(n, "random", |s| random(n, s, fix), q8_k);
        }
    }

    /// The ends of every range at once: the lowest level against -128 under the scale -32,
    /// the highest against 127 under 31, over three blocks. The sums are exact integers and
    /// every tile shape must give them to the bit: an overflow or a lost offset would show.
    ///
    /// Except in one place, on purpose: the AVX2 tile multiplies as ggml's AVX2 build does
    /// (`vpsignb` the activations by the weights, then `vpmaddubsw` the magnitudes), and
    /// `vpsignb` cannot negate -128, so against a negative weight an activation of -128 counts
    /// as -128, not 128. That tile (taken without AVX-512 and VBMI) gives ggml's sum, the exact
    /// one negated; the VBMI tile and the scalar form give the exact one.
    #[test]
    fn iq4_xs_extremes_sum_exactly() {
        use crate::cpu::kernels::dot::{DotKernel, MAX_ROWS, MAX_WIDE_COLS};
        use crate::quants::k_quants::{BlockQ8K, QK_K};
        /// Three copies of a block, as bytes.
        fn three<B: Copy>(b: B) -> Vec<u8> {
            let blocks = [b; 3];
            // SAFETY: the blocks are plain bytes; the view covers the array.
            unsafe { std::slice::from_raw_parts(blocks.as_ptr().cast::<u8>(), size_of_val(&blocks)) }.to_vec()
        }
        for (code, scale_bits, q, want) in
            [(0x00u8, 0x00u8, -128i8, -32 * -127 * -128), (0xff, 0xff, 127, 31 * 113 * 127)]
        {
            let x = BlockIq4Xs {
                d: Half::from_f32(1.0),
                scales_h: [scale_bits; 2],
                scales_l: [scale_bits; 4],
                qs: [code; 128],
            };
            let bsum = (16 * i16::from(q)).to_le_bytes();
            let y = BlockQ8K { d: 1.0f32.to_le_bytes(), qs: [q as u8; QK_K], bsums: [bsum; QK_K / 16] };
            let (xb, yb) = (three(x), three(y));
            let k = DotKernel::for_type(Type::IQ4_XS).expect("a kernel");
            let f = crate::cpu::features::features();
            let sign_tile = f.has_avx2_fma() && !(f.has_avx512() && f.avx512vbmi);
            let want = if sign_tile && q == -128 { -want } else { want };
            let xs = [xb.as_slice(); MAX_ROWS];
            let ys = [yb.as_slice(); MAX_WIDE_COLS];
            for nr in 1..=MAX_ROWS {
                for nc in 1..=k.cols() {
                    let mut out = [f32::NAN; MAX_ROWS * MAX_WIDE_COLS];
                    k.tile(3 * QK_K, &xs[..nr], &ys[..nc], &mut out, true);
                    let exact = (3 * QK_K as i32 * want) as f32;
                    assert!(
                        out[..nr * nc].iter().all(|&v| v == exact),
                        "{nr}x{nc}, codes {code:#x}: {:?}",
                        &out[..nr * nc]
                    );
                }
            }
        }
    }
}
