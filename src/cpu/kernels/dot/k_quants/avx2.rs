//! The AVX2 tiles of the K-quant dot products.
//!
//! Every format is brought to one shape: per super-block and weight row, unsigned levels
//! (at most 63, so that `maddubs` cannot saturate), a 16-bit scale per 16 values, and a 16-bit
//! bias per 16 values that multiplies the activations' `bsums`: the minimum (Q2_K, Q4_K,
//! Q5_K, scaled by `dmin`) or the level offset times the scale (Q3_K, Q6_K, in units of `d`,
//! taken off the integer sums before they become floats, so that the large unsigned sums
//! cancel exactly).
//!
//! The tile walks the super-block in chunks of 32 values: each weight row's chunk is decoded
//! once and multiplied with every activation row. The integer sums stay in registers for the
//! whole super-block; the float sums are only added up across lanes at the end of the row.

use std::arch::x86_64::*;

use crate::cpu::kernels::simd::avx2::hsum;
use crate::quants::half::Half;
use crate::quants::k_quants::{BlockQ8K, QK_K};

/// What the tile needs of one weight super-block besides its levels.
pub(super) struct Prepared {
    /// The scale of each 16 values, as `i16`.
    pub(super) scales: __m256i,
    /// What multiplies each `bsum`, as `i16`: a minimum or an offset (see [`KBlock::MINS`]).
    pub(super) bias: __m256i,
    /// The super-block scale `d` in lane 0 and the scale of the minimums `dmin` in lane 1
    /// (0 for formats without), converted together.
    pub(super) factors: __m128,
}

/// `d` and `dmin` of a super-block in lanes 0 and 1.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn factors(d: Half, dmin: Half) -> __m128 {
    _mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(d.bits()) | i32::from(dmin.bits()) << 16))
}

/// A K-quant super-block as the tile reads it.
pub(super) trait KBlock {
    /// Whether the bias is a minimum in units of `dmin` (subtracted as a float) rather than an
    /// offset in units of `d` (subtracted from the integer sums).
    const MINS: bool;

    /// The scales, biases and super-block scales.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    unsafe fn prepare(&self) -> Prepared;

    /// The unsigned levels of values `32·J .. 32·J + 32`.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    unsafe fn levels<const J: usize>(&self) -> __m256i;
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn load(bytes: &[u8; 32]) -> __m256i {
    // SAFETY: the array holds the 32 bytes read.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// Chunk `i` of 32 bytes of an array.
#[inline]
pub(super) fn chunk<const N: usize>(bytes: &[u8; N], i: usize) -> &[u8; 32] {
    &bytes.as_chunks::<32>().0[i]
}

/// The bit field `from .. from + width` of every byte moved to `to .. to + width`, the other
/// bits cleared. (The shifts are of 32-bit lanes; the field never leaves its byte.)
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn byte_field(v: __m256i, from: u32, to: u32, width: u32) -> __m256i {
    let moved = if from >= to {
        _mm256_srlv_epi32(v, _mm256_set1_epi32((from - to) as i32))
    } else {
        _mm256_sllv_epi32(v, _mm256_set1_epi32((to - from) as i32))
    };
    _mm256_and_si256(moved, _mm256_set1_epi8((((1u32 << width) - 1) << to) as u8 as i8))
}

/// The three little-endian words of 12 packed scale bytes, in lanes 0..3.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn scale_words(packed: &[u8; 12]) -> __m128i {
    let (words, _) = packed.as_chunks::<4>();
    let word = |i: usize| i32::from_le_bytes(words[i]);
    _mm_setr_epi32(word(0), word(1), word(2), 0)
}

/// The 6-bit scales and minimums of a Q4_K / Q5_K super-block (ggml's `get_scale_min_k4`
/// for all eight sub-blocks of 32 at once), each repeated for both of its halves of 16.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn affine_prepare(d: Half, dmin: Half, packed: &[u8; 12]) -> Prepared {
    let v = scale_words(packed);
    // Words w0, w1, w2: the scales of sub-blocks 0..3 are the low six bits of w0, their
    // minimums those of w1; for sub-blocks 4..7 the low (scales) and high (minimums) nibbles
    // of w2, with the top bits of w0 (scales) and w1 (minimums) above them.
    let t = _mm_shuffle_epi32::<0b10_01_10_00>(v); // w0, w2, w1, w2
    let low = _mm_srlv_epi32(t, _mm_setr_epi32(0, 0, 0, 4));
    let low = _mm_and_si128(low, _mm_setr_epi32(0x3f3f_3f3f, 0x0f0f_0f0f, 0x3f3f_3f3f, 0x0f0f_0f0f));
    let tops = _mm_shuffle_epi32::<0b01_01_00_00>(v); // w0, w0, w1, w1
    let tops = _mm_and_si128(_mm_srli_epi32::<2>(tops), _mm_setr_epi32(0, 0x3030_3030, 0, 0x3030_3030));
    let bytes = _mm_or_si128(low, tops); // 8 scales, then 8 minimums
    Prepared {
        scales: _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(bytes, bytes)),
        bias: _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(bytes, bytes)),
        factors: factors(d, dmin),
    }
}

/// A `vpshufb` pattern over the lane-duplicated 16-bit scales of one half super-block (see
/// [`scale_lanes`]). For one chunk (`pairs` false), `m` = the chunk's index in its half:
/// the scale of its first 16 values over the low 128 bits, of its last 16 over the high 128
/// bits. For two chunks narrowed together (`pairs` true), `m` = the pair's index in its half:
/// in each 128 bits, four lanes for the first chunk, then four for the second.
const fn scale_pattern(m: usize, pairs: bool) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        let (half, lane) = (i / 16, i % 16 / 2);
        let scale = if pairs { 4 * m + 2 * (lane / 4) + half } else { 2 * m + half };
        bytes[i] = (2 * scale + i % 2) as u8;
        i += 1;
    }
    bytes
}

static CHUNK_PATTERNS: [[u8; 32]; 4] =
    [scale_pattern(0, false), scale_pattern(1, false), scale_pattern(2, false), scale_pattern(3, false)];
static PAIR_PATTERNS: [[u8; 32]; 2] = [scale_pattern(0, true), scale_pattern(1, true)];

/// The 16-bit scales of a super-block as the chunks use them: those of values 0..128 in both
/// 128-bit halves, then those of values 128..256.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scale_lanes(scales: __m256i) -> [__m256i; 2] {
    [_mm256_permute2x128_si256::<0x00>(scales, scales), _mm256_permute2x128_si256::<0x11>(scales, scales)]
}

/// Chunk `J` of 32 activations.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn activations<const J: usize>(qs: &[u8; QK_K]) -> __m256i {
    load(chunk(qs, J))
}

/// The tile, over the `add_pair` of the module it is expanded in, which adds chunks `J0` and
/// `J1` of a weight row's super-block times each activation row's to their integer sums.
macro_rules! k_tile {
    ($features:literal) => {
        /// R×C products of rows of super-blocks (rows of different lengths are cut to the
        /// shortest). Super-block by super-block, each weight row in turn: the activation
        /// super-blocks stay in the first-level cache for all the rows, and one row's integer
        /// sums, levels and scales fit in the registers.
        // Rows and columns index the accumulator grid together.
        #[allow(clippy::needless_range_loop)]
        #[inline]
        #[target_feature(enable = $features)]
        pub fn tile<B: KBlock, const R: usize, const C: usize>(x: &[&[B]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
            let nb = x.iter().map(|row| row.len()).chain(y.iter().map(|row| row.len())).min().unwrap_or(0);
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            for b in 0..nb {
                crate::cpu::kernels::prefetch::next_tile(x, b, 1);
                let yb: [&BlockQ8K; C] = std::array::from_fn(|c| &y[c][b]);
                let qy: [&[u8; QK_K]; C] = std::array::from_fn(|c| &yb[c].qs);
                for r in 0..R {
                    let xb = &x[r][b];
                    // SAFETY: this function's features include AVX2, FMA and F16C.
                    let p: Prepared = unsafe { xb.prepare() };
                    let lanes = scale_lanes(p.scales);
                    let mut sums = [_mm256_setzero_si256(); C];
                    add_pair::<B, C, 0, 1>(xb, &lanes, &qy, &mut sums);
                    add_pair::<B, C, 2, 3>(xb, &lanes, &qy, &mut sums);
                    add_pair::<B, C, 4, 5>(xb, &lanes, &qy, &mut sums);
                    add_pair::<B, C, 6, 7>(xb, &lanes, &qy, &mut sums);
                    for c in 0..C {
                        // d·dy and dmin·dy in lanes 0 and 1
                        let f = _mm_mul_ps(p.factors, _mm_set1_ps(yb[c].scale()));
                        // SAFETY: `bsums` holds the 32 bytes read.
                        let bsums = unsafe { _mm256_loadu_si256(yb[c].bsums.as_ptr().cast()) };
                        let bias = _mm256_madd_epi16(p.bias, bsums);
                        let d = _mm256_broadcastss_ps(f);
                        acc[r][c] = if B::MINS {
                            let a = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums[c]), acc[r][c]);
                            let dmin = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(f), _mm256_set1_epi32(1));
                            _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(bias), a)
                        } else {
                            let exact = _mm256_sub_epi32(sums[c], bias);
                            _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(exact), acc[r][c])
                        };
                    }
                }
            }
            let mut out = [[0.0f32; C]; R];
            for r in 0..R {
                for c in 0..C {
                    out[r][c] = hsum(acc[r][c]);
                }
            }
            out
        }

        /// Each weight row times one activation row, a row at a time, the tile's constants
        /// loaded once.
        #[target_feature(enable = $features)]
        pub fn column<B: KBlock>(x: &[&[B]], y: &[BlockQ8K], out: &mut [f32]) {
            for (row, out) in x.iter().zip(out) {
                *out = tile::<B, 1, 1>(&[row], &[y])[0][0];
            }
        }
    };
}

/// AVX2: `maddubs` sums pairs of byte products into 16 bits, `madd` scales them into 32.
pub(super) mod tiles_avx2 {
    use super::*;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn add_chunk<B: KBlock, const C: usize, const J: usize>(
        x: &B,
        lanes: &[__m256i; 2],
        y: &[&[u8; QK_K]; C],
        sums: &mut [__m256i; C],
    ) {
        // SAFETY: this function's features include AVX2, FMA and F16C.
        let qx = unsafe { x.levels::<J>() };
        let scales = _mm256_shuffle_epi8(lanes[J / 4], load(&CHUNK_PATTERNS[J % 4]));
        for (sum, qy) in sums.iter_mut().zip(y) {
            let pairs = _mm256_maddubs_epi16(qx, activations::<J>(qy));
            *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(scales, pairs));
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn add_pair<B: KBlock, const C: usize, const J0: usize, const J1: usize>(
        x: &B,
        lanes: &[__m256i; 2],
        y: &[&[u8; QK_K]; C],
        sums: &mut [__m256i; C],
    ) {
        add_chunk::<B, C, J0>(x, lanes, y, sums);
        add_chunk::<B, C, J1>(x, lanes, y, sums);
    }

    k_tile!("avx2,fma,f16c");
}

/// VNNI: `vpdpbusd` sums four byte products into 32 bits in one instruction; the sums of two
/// chunks, narrowed together to 16 bits (at most 4·63·128 in size, so exactly), are scaled by
/// one `madd`. Three multiplications per 64 values and activation row where AVX2 needs four;
/// the same integer sums. Expanded for AVX-VNNI (VEX) and for AVX512-VNNI on 256-bit vectors
/// (EVEX, AVX512VL), the same instruction under two encodings.
macro_rules! vnni_tiles {
    ($name:ident, $features:literal, $dpbusd:ident) => {
        pub(super) mod $name {
            use super::*;

            #[inline]
            #[target_feature(enable = $features)]
            fn add_pair<B: KBlock, const C: usize, const J0: usize, const J1: usize>(
                x: &B,
                lanes: &[__m256i; 2],
                y: &[&[u8; QK_K]; C],
                sums: &mut [__m256i; C],
            ) {
                // The scale pattern is that of an even chunk and the next.
                const { assert!(J0.is_multiple_of(2) && J1 == J0 + 1) };
                // SAFETY: this function's features include AVX2, FMA and F16C.
                let (q0, q1) = unsafe { (x.levels::<J0>(), x.levels::<J1>()) };
                let scales = _mm256_shuffle_epi8(lanes[J0 / 4], load(&PAIR_PATTERNS[J0 / 2 % 2]));
                for (sum, qy) in sums.iter_mut().zip(y) {
                    let (chunks, _) = qy.as_chunks::<32>();
                    let zero = _mm256_setzero_si256();
                    let first = $dpbusd(zero, q0, load(&chunks[J0]));
                    let second = $dpbusd(zero, q1, load(&chunks[J1]));
                    *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(scales, _mm256_packs_epi32(first, second)));
                }
            }

            k_tile!($features);
        }
    };
}

vnni_tiles!(tiles_vnni, "avx2,fma,f16c,avxvnni", _mm256_dpbusd_avx_epi32);
vnni_tiles!(tiles_vnni512, "avx2,fma,f16c,avx512vnni,avx512vl", _mm256_dpbusd_epi32);

/// The one-column products on the best instruction set this processor has.
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
pub(super) unsafe fn column<B: KBlock>(x: &[&[B]], y: &[BlockQ8K], out: &mut [f32]) {
    use crate::cpu::features::{Vnni, features};
    // SAFETY: the caller vouches for AVX2, FMA and F16C; VNNI is checked.
    unsafe {
        match features().vnni() {
            Vnni::Vex => tiles_vnni::column(x, y, out),
            Vnni::Evex => tiles_vnni512::column(x, y, out),
            Vnni::None => tiles_avx2::column(x, y, out),
        }
    }
}

/// The tile on the best instruction set this processor has.
///
/// # Safety
/// The processor supports AVX2, FMA and F16C.
pub(super) unsafe fn tile<B: KBlock, const R: usize, const C: usize>(
    x: &[&[B]; R],
    y: &[&[BlockQ8K]; C],
) -> [[f32; C]; R] {
    use crate::cpu::features::{Vnni, features};
    // SAFETY: the caller vouches for AVX2, FMA and F16C; VNNI is checked.
    unsafe {
        match features().vnni() {
            Vnni::Vex => tiles_vnni::tile(x, y),
            Vnni::Evex => tiles_vnni512::tile(x, y),
            Vnni::None => tiles_avx2::tile(x, y),
        }
    }
}
