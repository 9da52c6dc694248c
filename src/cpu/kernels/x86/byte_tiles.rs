//! The AVX2 tiles the I-quant and small-format dot products are built from. A format only
//! says how to decode its weights into signed bytes, 32 at a time (with their scales); the
//! tiles here multiply them with the activation bytes, R weight rows by C activation rows at
//! once, so that each row's weights are decoded once for all columns and each column's
//! activations loaded once for all rows.
//!
//! Byte products use `maddubs`, which wants one unsigned operand: the weights' magnitudes go
//! there and their signs move onto the activations (`sign_epi8`). Magnitudes stay at or below
//! 127 and activations within ±127, so the pair sums never saturate.

use std::arch::x86_64::*;

use crate::cpu::kernels::prefetch;
use crate::cpu::kernels::simd::avx2::hsum;
use crate::quants::half::Half;
use crate::quants::iq_grids::SEVEN_BIT_SIGN_BYTES;
use crate::quants::k_quants::{BlockQ8K, QK_K};
use crate::quants::q8::BlockQ8_0;

/// 32 decoded weights.
#[derive(Clone, Copy)]
pub struct Weights32 {
    /// |w| as unsigned bytes.
    mag: __m256i,
    /// Bytes with the signs of the weights (any value where the weight is zero).
    sign: __m256i,
}

impl Weights32 {
    /// Weights given as signed bytes in -127..=127.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn signed(levels: __m256i) -> Weights32 {
        Weights32 { mag: _mm256_sign_epi8(levels, levels), sign: levels }
    }

    /// Weights given as magnitudes (0..=127) and bytes carrying their signs.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn with_signs(mag: __m256i, sign: __m256i) -> Weights32 {
        Weights32 { mag, sign }
    }

    /// Σ w·y over adjacent pairs of values, in 16 `i16` lanes (lane l: values 2l, 2l+1).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn pair_sums(self, y: __m256i) -> __m256i {
        _mm256_maddubs_epi16(self.mag, _mm256_sign_epi8(y, self.sign))
    }
}

/// A binary16 scale as `f32`. (Converted from a broadcast: from a single lane, LLVM takes the
/// other lanes from whatever register is at hand, such as an accumulator, and the false
/// dependency chains the loop iterations.)
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn half(h: Half) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(h.bits() as i16)))
}

/// A binary16 scale in all 8 lanes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn half8(h: Half) -> __m256 {
    _mm256_cvtph_ps(_mm_set1_epi16(h.bits() as i16))
}

/// The 32 bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn load32(bytes: &[u8], at: usize) -> __m256i {
    let span = &bytes[at..at + 32];
    // SAFETY: `span` holds the 32 bytes read.
    unsafe { _mm256_loadu_si256(span.as_ptr().cast()) }
}

/// The 16 bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn load16(bytes: &[u8], at: usize) -> __m128i {
    let span = &bytes[at..at + 16];
    // SAFETY: `span` holds the 16 bytes read.
    unsafe { _mm_loadu_si128(span.as_ptr().cast()) }
}

/// The nibbles of 16 bytes as 32 bytes 0..15: low nibbles first, then high nibbles (the order
/// of values in the 4-bit formats).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn nibbles(packed: __m128i) -> __m256i {
    let both = _mm256_set_m128i(_mm_srli_epi16::<4>(packed), packed);
    _mm256_and_si256(both, _mm256_set1_epi8(0x0f))
}

/// Each byte of `table` (16 entries, repeated in both halves) looked up by the codes 0..15 of
/// `codes`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn lookup16(table: &[i8; 16], codes: __m256i) -> __m256i {
    // SAFETY: the table holds the 16 bytes read.
    let t = unsafe { _mm_loadu_si128(table.as_ptr().cast()) };
    _mm256_shuffle_epi8(_mm256_set_m128i(t, t), codes)
}

/// ±1 bytes from 32 sign bits (`bits` little-endian, bit j for value j): -1 where a bit is set.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn signs_from_bits(bits: u32) -> __m256i {
    // byte j takes byte j/8 of the word, then tests bit j%8
    let spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(bits as i32),
        _mm256_set_epi64x(0x0303_0303_0303_0303, 0x0202_0202_0202_0202, 0x0101_0101_0101_0101, 0),
    );
    let select = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    let negative = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
    _mm256_or_si256(negative, _mm256_set1_epi8(1))
}

/// Four 8-byte table entries in one vector, entry `index(l)` in lane l: grid points of 8
/// values, or sign bytes. (A fixed-size table lets the bounds checks go for indices whose bits
/// cannot exceed it.)
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn entries4<const N: usize>(table: &[u64; N], index: impl Fn(usize) -> usize) -> __m256i {
    let e = |l: usize| table[index(l)] as i64;
    _mm256_set_epi64x(e(3), e(2), e(1), e(0))
}

/// The grid indices of 4 points in the 16-bit words of a `u64`, with BMI2's bit deposits: the
/// bytes `qs[4i..4i + 4]` in the low bytes of the words, the bits of `high`, lowest first, at
/// the set bits of `high_mask` (from bit 8 of each word up). Read back with [`index_word`].
#[inline]
#[target_feature(enable = "bmi2")]
pub fn deposited_indices(qs: &[u8], i: usize, high: u64, high_mask: u64) -> u64 {
    let low = u32::from_le_bytes([qs[4 * i], qs[4 * i + 1], qs[4 * i + 2], qs[4 * i + 3]]);
    _pdep_u64(u64::from(low), 0x00ff_00ff_00ff_00ff) | _pdep_u64(high, high_mask)
}

/// Word `l` of index words ([`deposited_indices`]) as an index into an N-point grid (N a power
/// of two; the mask lets the bounds check go).
#[inline]
pub fn index_word<const N: usize>(words: u64, l: usize) -> usize {
    const { assert!(N.is_power_of_two()) };
    (words >> (16 * l)) as usize & (N - 1)
}

/// ±1 bytes for 4 groups of 8 values from their 7-bit sign codes (`code(l)` for group l, any
/// bits above the seventh ignored).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn seven_bit_signs(code: impl Fn(usize) -> usize) -> __m256i {
    entries4(&SEVEN_BIT_SIGN_BYTES, |l| code(l) & 127)
}

/// A super-block's 16 multipliers (`m(j)` for values 16j..16j+16), each in both halves of a
/// `u32`, for [`scales16`]. Decoded all at once per block: LLVM vectorizes this, where one
/// sub-block's pair at a time took a dozen instructions.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn multipliers16(m: impl Fn(usize) -> i32) -> [u32; 16] {
    std::array::from_fn(|j| {
        let v = m(j) as u32 & 0xffff;
        v | v << 16
    })
}

/// 16-bit scales for the pair sums of values 32i..32i+32 (lanes 0..8 for the first 16
/// values, 8..16 for the second; see [`Weights32`]): one broadcast load of the two
/// multipliers and one permutation.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn scales16(multipliers: &[u32; 16], i: usize) -> __m256i {
    let pair = u64::from(multipliers[2 * i]) | u64::from(multipliers[2 * i + 1]) << 32;
    _mm256_permutevar8x32_epi32(_mm256_set1_epi64x(pair as i64), _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0))
}

/// 32 weights of a super-block and their 16-bit scales (per pair-sum lane, see [`scales16`]).
#[derive(Clone, Copy)]
pub struct Sub32 {
    pub weights: Weights32,
    pub scales: __m256i,
}

/// The frame of the q8_K tiles: R×C products of rows of 256-value super-blocks with q8_K
/// rows. For each super-block, row by row, `block(x, ys)` gives the factor of the row's
/// integer sums and those sums against each column's block (8 lanes of `i32`); they are scaled
/// by the factor and the column's scale and accumulated.
// Rows and columns index the accumulator grid together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8k_frame<X, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[BlockQ8K]; C],
    block: impl Fn(&X, &[&BlockQ8K; C]) -> (f32, [__m256i; C]),
) -> [[f32; C]; R] {
    let mut acc = [[_mm256_setzero_ps(); C]; R];
    for b in 0..x[0].len() {
        prefetch::next_tile(x, b, 1);
        let ys: [&BlockQ8K; C] = std::array::from_fn(|c| &y[c][b]);
        for r in 0..R {
            let (dx, sums) = block(&x[r][b], &ys);
            for c in 0..C {
                let d = _mm256_set1_ps(dx * ys[c].scale());
                acc[r][c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums[c]), acc[r][c]);
            }
        }
    }
    sums_of(&acc)
}

/// R×C products of rows of 256-value super-blocks with q8_K rows: `prep(block)` gives the
/// factor of a block's integer sums and whatever its sub-blocks share (decoded once per block),
/// `sub(block, shared, i)` decodes values 32i..32i+32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8k_tile<X, P, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[BlockQ8K]; C],
    prep: impl Fn(&X) -> (f32, P),
    sub: impl Fn(&X, &P, usize) -> Sub32,
) -> [[f32; C]; R] {
    q8k_frame(x, y, |xb, ys| {
        // A row's sub-blocks one after another, each used at once against every column: the
        // sums of one row stay in registers (all R rows' sums, indexed by row in the inner
        // loop, went through the stack), and the activations are loaded again per row instead.
        let (dx, shared) = prep(xb);
        let mut sums = [_mm256_setzero_si256(); C];
        for i in 0..QK_K / 32 {
            let w = sub(xb, &shared, i);
            for (s, yb) in sums.iter_mut().zip(ys) {
                let p = _mm256_madd_epi16(w.weights.pair_sums(load32(&yb.qs, 32 * i)), w.scales);
                *s = _mm256_add_epi32(*s, p);
            }
        }
        (dx, sums)
    })
}

/// Two sub-blocks' weights for [`q8k_vnni_tile`], raised to unsigned bytes, and their
/// 16-bit scales as `vpackssdw` interleaves the two sub-blocks' sums: in each 128-bit half,
/// four words for the first, then four for the second (the scales of values 0..16 of each in
/// the low half, of values 16..32 in the high half).
#[derive(Clone, Copy)]
pub struct RaisedPair {
    pub first: __m256i,
    pub second: __m256i,
    pub scales: __m256i,
}

/// R×C products of rows of 256-value super-blocks with q8_K rows on AVX512-VNNI, for weights
/// decoded as unsigned bytes (at most 63) that stand for themselves less a fixed offset.
/// `prep(block)` gives the factor of the block's integer sums, whatever its sub-blocks share,
/// and the 16-bit factors of the activations' 16 `bsums` that take the offset off (the offset
/// times the scale of those 16 values); `pair(block, shared, k)` decodes values 64k..64k+64.
///
/// `vpdpbusd` sums four byte products into 32 bits; the sums of two sub-blocks, narrowed
/// together to 16 bits (at most 4·63·128 in size, so exactly), take their scales with one
/// `vpdpwssd`. Per 32 values and column that is two instructions, where the sign-and-`maddubs`
/// route of [`q8k_tile`] takes five.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512vnni,avx512vl")]
pub fn q8k_vnni_tile<X, P, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[BlockQ8K]; C],
    prep: impl Fn(&X) -> (f32, P, __m256i),
    pair: impl Fn(&X, &P, usize) -> RaisedPair,
) -> [[f32; C]; R] {
    q8k_frame(x, y, |xb, ys| {
        let (dx, shared, offsets) = prep(xb);
        let mut sums = [_mm256_setzero_si256(); C];
        for k in 0..QK_K / 64 {
            let w = pair(xb, &shared, k);
            for (s, yb) in sums.iter_mut().zip(ys) {
                let first = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w.first, load32(&yb.qs, 64 * k));
                let second = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w.second, load32(&yb.qs, 64 * k + 32));
                *s = _mm256_dpwssd_epi32(*s, _mm256_packs_epi32(first, second), w.scales);
            }
        }
        for (s, yb) in sums.iter_mut().zip(ys) {
            *s = _mm256_sub_epi32(*s, _mm256_madd_epi16(load32(yb.bsums.as_flattened(), 0), offsets));
        }
        (dx, sums)
    })
}

/// R×C products of rows of 256-value super-blocks whose values are small unsigned codes q
/// standing for q − 1 (the ternary formats), with q8_K rows. `decode(block)` gives the block's
/// factor and its codes (0..=3), 32 values per vector in value order.
///
/// The codes go into `maddubs` as they are, which spares the sign handling of [`q8k_tile`]:
/// Σ(q−1)·y is Σq·y less the activations' block sums Σy. The 16-bit sums stay below
/// 8·2·3·127 + 16·127, so nothing saturates.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8k_offset_tile<X, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[BlockQ8K]; C],
    decode: impl Fn(&X) -> (f32, [__m256i; QK_K / 32]),
) -> [[f32; C]; R] {
    let ones = _mm256_set1_epi16(1);
    q8k_offset_frame(x, y, decode, |codes, yb| {
        let mut pairs = _mm256_sub_epi16(_mm256_setzero_si256(), load32(yb.bsums.as_flattened(), 0));
        for (i, &q) in codes.iter().enumerate() {
            pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(q, load32(&yb.qs, 32 * i)));
        }
        _mm256_madd_epi16(pairs, ones)
    })
}

/// [`q8k_offset_tile`] on AVX512-VNNI: `vpdpbusd` adds four products of the codes (as unsigned
/// bytes) with the activations into each 32-bit sum, which start from −Σy; one instruction per
/// 32 values and column where `maddubs` and an addition take two.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512vnni,avx512vl")]
pub fn q8k_offset_vnni_tile<X, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[BlockQ8K]; C],
    decode: impl Fn(&X) -> (f32, [__m256i; QK_K / 32]),
) -> [[f32; C]; R] {
    let ones = _mm256_set1_epi16(1);
    q8k_offset_frame(x, y, decode, |codes, yb| {
        let block_sums = _mm256_madd_epi16(load32(yb.bsums.as_flattened(), 0), ones);
        // two chains of sums, added at the end, for the latency of `vpdpbusd`
        let mut pair = [_mm256_sub_epi32(_mm256_setzero_si256(), block_sums), _mm256_setzero_si256()];
        for (i, &q) in codes.iter().enumerate() {
            pair[i % 2] = _mm256_dpbusd_epi32(pair[i % 2], q, load32(&yb.qs, 32 * i));
        }
        _mm256_add_epi32(pair[0], pair[1])
    })
}

/// The frame of the offset tiles: each row's block decoded once, then `column(codes, yb)`
/// gives its integer sums against each column's block.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q8k_offset_frame<X, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[BlockQ8K]; C],
    decode: impl Fn(&X) -> (f32, [__m256i; QK_K / 32]),
    column: impl Fn(&[__m256i; QK_K / 32], &BlockQ8K) -> __m256i,
) -> [[f32; C]; R] {
    q8k_frame(x, y, |xb, ys| {
        let (dx, codes) = decode(xb);
        let mut sums = [_mm256_setzero_si256(); C];
        for (s, yb) in sums.iter_mut().zip(ys) {
            *s = column(&codes, yb);
        }
        (dx, sums)
    })
}

/// The lane sums of a grid of accumulators. (Loops, not closures: a closure defined here
/// would carry the target features into `array::map`, which could then not inline it.)
// Rows and columns index the accumulator grid together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn sums_of<const R: usize, const C: usize>(acc: &[[__m256; C]; R]) -> [[f32; C]; R] {
    let mut out = [[0.0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            out[r][c] = hsum(acc[r][c]);
        }
    }
    out
}

/// The q8_0 blocks a weight block is multiplied with: one, or several in a row.
pub trait Q8_0Group: Copy {
    const BLOCKS: usize;
    fn block(&self, k: usize) -> &BlockQ8_0;
}

impl Q8_0Group for BlockQ8_0 {
    const BLOCKS: usize = 1;

    fn block(&self, _k: usize) -> &BlockQ8_0 {
        self
    }
}

impl<const N: usize> Q8_0Group for [BlockQ8_0; N] {
    const BLOCKS: usize = N;

    fn block(&self, k: usize) -> &BlockQ8_0 {
        &self[k]
    }
}

/// The q8_0 tile, built three times: for AVX2 and for `vpdpbusd` under each of its encodings
/// (see [`Vnni`]). The weights come raised to unsigned bytes; what differs is how each
/// column's sums start from its activations (`seed`, once for all rows), what a row's weights
/// become before the products (`prepare`, once for all columns) and the products themselves
/// (`dot`, four per 32-bit lane). `vpdpbusd` takes the raised bytes as they are, the sums
/// starting from −raise·Σy; AVX2 takes the raise off and moves the weights' signs onto the
/// activations for `maddubs` (whose 16-bit pair sums raised bytes could overflow). All give
/// the same integer sums.
///
/// [`Vnni`]: crate::cpu::features::Vnni
macro_rules! q8_0_tiles {
    (
        $module:ident, $features:literal, $prepared:ty,
        seed: |$seed_raise:ident, $seed_y:ident| $seed:expr,
        prepare: |$prepare_raise:ident, $prepare_w:ident| $prepare:expr,
        dot: |$dot_seed:ident, $dot_w:ident, $dot_y:ident| $dot:expr
    ) => {
        mod $module {
            use std::arch::x86_64::*;

            use super::{MAX_BLOCKS, Q8_0Group, half8, load32, prefetch, sums_of};

            // Rows and columns index the accumulator grid together.
            #[allow(clippy::needless_range_loop)]
            #[inline]
            #[target_feature(enable = $features)]
            pub fn q8_0_tile<X, Y: Q8_0Group, const R: usize, const C: usize>(
                x: &[&[X]; R],
                y: &[&[Y]; C],
                raise: u8,
                scale: impl Fn(&X) -> __m256,
                chunk: impl Fn(&X, usize) -> (__m256i, __m256),
            ) -> [[f32; C]; R] {
                const { assert!(Y::BLOCKS <= MAX_BLOCKS) };
                let raise = _mm256_set1_epi8(raise as i8);
                let mut acc = [[_mm256_setzero_ps(); C]; R];
                let mut dy = [[_mm256_setzero_ps(); C]; MAX_BLOCKS];
                let mut seed = [[_mm256_setzero_si256(); C]; MAX_BLOCKS];
                for b in 0..x[0].len() {
                    prefetch::next_tile(x, b, 1);
                    for k in 0..Y::BLOCKS {
                        for c in 0..C {
                            let block = y[c][b].block(k);
                            dy[k][c] = half8(block.d);
                            seed[k][c] = {
                                let ($seed_raise, $seed_y) = (raise, load32(&block.qs, 0));
                                $seed
                            };
                        }
                    }
                    // row by row, as in `q8k_tile`
                    for r in 0..R {
                        // The q8_0 blocks' sums are gathered before the weight block's scale
                        // is applied, once. They start from -0.0, the one start that lets LLVM
                        // turn the first fused multiply-add into a multiplication (x + -0.0 is
                        // x for every x), and factors of 1.0 fold away: for one q8_0 block per
                        // weight block this costs what scaling each product by dx·dy did.
                        let mut block = [_mm256_set1_ps(-0.0); C];
                        for k in 0..Y::BLOCKS {
                            let (w, dk) = chunk(&x[r][b], k);
                            let w: $prepared = {
                                let ($prepare_raise, $prepare_w) = (raise, w);
                                $prepare
                            };
                            for c in 0..C {
                                let sums = {
                                    let qy = load32(&y[c][b].block(k).qs, 0);
                                    let ($dot_seed, $dot_w, $dot_y) = (seed[k][c], w, qy);
                                    $dot
                                };
                                let d = _mm256_mul_ps(dk, dy[k][c]);
                                block[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums), block[c]);
                            }
                        }
                        let dx = scale(&x[r][b]);
                        for c in 0..C {
                            acc[r][c] = _mm256_fmadd_ps(dx, block[c], acc[r][c]);
                        }
                    }
                }
                sums_of(&acc)
            }
        }
    };
}

q8_0_tiles!(
    q8_0_avx2, "avx2,fma,f16c", super::Weights32,
    seed: |_raise, _y| _mm256_setzero_si256(),
    prepare: |raise, w| super::Weights32::signed(_mm256_sub_epi8(w, raise)),
    dot: |_seed, w, y| _mm256_madd_epi16(w.pair_sums(y), _mm256_set1_epi16(1))
);
q8_0_tiles!(
    q8_0_vnni, "avx2,fma,f16c,avxvnni", __m256i,
    seed: |raise, y| _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), raise, y)),
    prepare: |_raise, w| w,
    dot: |seed, w, y| _mm256_dpbusd_avx_epi32(seed, w, y)
);
q8_0_tiles!(
    q8_0_vnni512, "avx2,fma,f16c,avx512vnni,avx512vl", __m256i,
    seed: |raise, y| _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), raise, y)),
    prepare: |_raise, w| w,
    dot: |seed, w, y| _mm256_dpbusd_epi32(seed, w, y)
);

/// The most q8_0 blocks a weight block spans.
const MAX_BLOCKS: usize = 4;

/// R×C products of rows of weight blocks with rows of q8_0 groups: `chunk(block, k)` decodes
/// the 32 weights of a block that meet q8_0 block k as unsigned bytes `raise` above their
/// values (which lie within ±127), with their own factor in each 32-bit lane (lane l covers
/// values 4l..4l+4; 1.0 where a block has one scale), and `scale(block)` gives the factor of
/// the whole block. Takes `vpdpbusd` where the processor has VNNI, which spares the two sign
/// operations per 32 values and column that AVX2's `maddubs` needs.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8_0_tile<X, Y: Q8_0Group, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[Y]; C],
    raise: u8,
    scale: impl Fn(&X) -> __m256,
    chunk: impl Fn(&X, usize) -> (__m256i, __m256),
) -> [[f32; C]; R] {
    use crate::cpu::features::{Vnni, features};
    match features().vnni() {
        // SAFETY: AVX2, FMA and F16C are enabled here; the encoding was just checked.
        Vnni::Vex => unsafe { q8_0_vnni::q8_0_tile(x, y, raise, scale, chunk) },
        // SAFETY: as for the VEX encoding.
        Vnni::Evex => unsafe { q8_0_vnni512::q8_0_tile(x, y, raise, scale, chunk) },
        Vnni::None => q8_0_avx2::q8_0_tile(x, y, raise, scale, chunk),
    }
}

/// `table` raised by `raise`, as bytes for [`lookup16`] (a table of signed levels for
/// [`q8_0_tile`]).
pub const fn raised16(table: &[i8; 16], raise: u8) -> [i8; 16] {
    let mut out = [0i8; 16];
    let mut i = 0;
    while i < 16 {
        out[i] = (table[i] as u8).wrapping_add(raise) as i8;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::dot::test_support::{bytes, q8_0, values};

    /// This processor's VNNI tile gives the AVX2 tile's floats to the bit: the same integer
    /// sums, taken back from the raised products, for the largest raise too.
    #[test]
    fn vnni_and_avx2_q8_0_tiles_agree_exactly() {
        use crate::cpu::features::{Vnni, features};
        if features().vnni() == Vnni::None {
            return;
        }
        // weights: random bytes within 0..=2·raise, standing for −raise..=raise
        for raise in [12u8, 127] {
            let span = 2 * u16::from(raise) + 1;
            let xs: Vec<Vec<u8>> =
                (0..4).map(|r| bytes(4 * 32, 7 + r).iter().map(|&b| (u16::from(b) % span) as u8).collect()).collect();
            let x: [&[[u8; 32]]; 4] = std::array::from_fn(|r| xs[r].as_chunks::<32>().0);
            let ys: Vec<Vec<BlockQ8_0>> = (0..2).map(|c| q8_0(&values(4 * 32, 19 + c)).0).collect();
            let y: [&[BlockQ8_0]; 2] = std::array::from_fn(|c| ys[c].as_slice());
            // SAFETY: AVX2, FMA, F16C and the VNNI encoding taken were checked above.
            unsafe {
                let scale = |_: &[u8; 32]| _mm256_set1_ps(0.5);
                let chunk = |b: &[u8; 32], _| (load32(b, 0), _mm256_set1_ps(1.0));
                let a = q8_0_avx2::q8_0_tile(&x, &y, raise, scale, chunk);
                // (`q8_0_tile` takes this processor's VNNI tile)
                let v = q8_0_tile(&x, &y, raise, scale, chunk);
                assert_eq!(a, v, "raise {raise}");
                assert!(a.iter().flatten().all(|s| s.is_finite() && *s != 0.0));
            }
        }
    }
}
