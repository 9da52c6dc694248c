//! AVX-512 tiles of the float formats: the [`VecDot`](crate::cpu::kernels::dot::VecDot) products of up to 4
//! weight rows by [`FLOAT_COLS`] activation rows, with 16-lane vectors and the 32 vector
//! registers that AVX-512 brings (the AVX2 tiles stop at 4×2).
//!
//! The float tiles follow the arithmetic of ggml's AVX-512 build (llamafile's tinyBLAS and
//! `ggml_vec_dot_*`): products summed with FMA in 16 `f32` lanes; binary16 widened with
//! `vcvtph2ps`; bfloat16 multiplied with `vdpbf16ps` where the processor has AVX512-BF16 (pairs
//! of exact products added in `f32`, denormal inputs read as zero, as ggml's tiles do there),
//! widened and FMA'd otherwise. Row tails shorter than a vector are read with masked loads.
//!
//! The lane tiles of the 32-value block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) sum as ggml
//! does on x86, in eight lane chains per product (see `dot`), with the chains of two weight
//! rows in one register: lanes 0..7 for one row, 8..15 for the next. Their byte products are
//! summed with `vpdpbusd`, which multiplies unsigned by signed bytes, so the weights' levels are
//! kept unsigned: Q4_0 and Q5_0 store `level + 8` and `level + 16` already, Q8_0 levels get 128
//! added (a sign-bit flip); `offset·Σy` per four bytes seeds the sums, which takes it back.
//! The AVX2 tiles sum the same way a row at a time; these build two rows' levels with 512-bit
//! operations and were faster for generation's products (4096×4096 by one column, 8 copies
//! streamed from memory, one thread, µs, AVX2 → these: Q4_0 9347 → 6295, Q4_1 11581 → 7678,
//! Q5_0 13208 → 7748, Q8_0 10643 → 9469; ggml 13104–19816).
//!
//! Every function here needs [`has_avx512`](crate::cpu::kernels::features::Features::has_avx512) (and AVX2,
//! FMA, F16C, which such processors have); the callers check it.

use std::arch::x86_64::*;

use crate::cpu::kernels::dot::prefetch_next_tile;
use crate::quants::half::{Bf16, Half, bf16_to_fp32};
use crate::quants::q4::{BlockQ4_0, BlockQ4_1};
use crate::quants::q5::{BlockQ5_0, BlockQ5_1};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

/// Activation rows per float tile: 4×6 accumulators, 4 weight vectors and one activation
/// vector fill 29 of the 32 registers (tinyBLAS's shape).
pub const FLOAT_COLS: usize = 6;
/// Activation rows per block tile (the lane tiles here, the small formats' in
/// `dot::small`): the accumulators, the weights' levels and scales, and one activation
/// block's levels, scale and offset correction.
pub const BLOCK_COLS: usize = 4;

// ---------------------------------------------------------------------------------------------
// Float formats

/// The lane sums of the accumulators. (Plain loops: through `array::from_fn` the
/// accumulators would escape to a call and live in memory during the whole tile.)
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) fn sums<const R: usize, const C: usize>(acc: &[[__m512; C]; R]) -> [[f32; C]; R] {
    let mut out = [[0.0f32; C]; R];
    if R == 4 && C <= 8 {
        // each column's four sums in a quarter, columns 0-3 in `low` and 4-7 in `high`, then
        // put in row order and stored in one or two vector stores, not a float at a time (the
        // caller reads each row with one load; 2% of a 64-value 4×4 tile)
        let mut quarters = [_mm_setzero_ps(); 8];
        for c in 0..C {
            quarters[c] = sums_of_four([acc[0][c], acc[1][c], acc[2][c], acc[3][c]]);
        }
        let join = |q: &[__m128]| {
            let lo = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(q[0]), q[1]);
            let hi = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(q[2]), q[3]);
            _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo), hi)
        };
        let (low, high) = (join(&quarters[..4]), join(&quarters[4..]));
        let dst = out.as_mut_ptr().cast::<f32>();
        for half in 0..(4 * C).div_ceil(16) {
            // output j = 16·half + k is (row j / C, column j % C), lane 4c + r of low:high
            let index: [i32; 16] = std::array::from_fn(|k| {
                let j = 16 * half + k;
                (4 * (j % C) + j / C) as i32 & 31
            });
            // SAFETY: `index` holds 16 lanes.
            let index = unsafe { _mm512_loadu_si512(index.as_ptr().cast()) };
            let rows = _mm512_permutex2var_ps(low, index, high);
            let left = (4 * C - 16 * half).min(16);
            // SAFETY: the lanes stored lie in `out`, R·C floats.
            unsafe { _mm512_mask_storeu_ps(dst.add(16 * half), ((1u32 << left) - 1) as __mmask16, rows) };
        }
        return out;
    }
    for c in 0..C {
        for r in 0..R {
            out[r][c] = _mm512_reduce_add_ps(acc[r][c]);
        }
    }
    out
}

/// The lane sums of four vectors, folded together: each halving step adds the halves of two
/// vectors with one instruction, so four sums cost about what two do one by one. The pairing
/// (256-bit halves, then 128-bit quarters, then lanes 2 apart, then neighbours) is that of
/// `_mm512_reduce_add_ps`, so each sum comes out the same.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn sums_of_four(v: [__m512; 4]) -> __m128 {
    // 128-bit lanes [v0.q0 + v0.q2, v0.q1 + v0.q3, v1.q0 + v1.q2, v1.q1 + v1.q3], likewise v2, v3
    let fold = |a: __m512, b: __m512| {
        _mm512_add_ps(_mm512_shuffle_f32x4::<0b01_00_01_00>(a, b), _mm512_shuffle_f32x4::<0b11_10_11_10>(a, b))
    };
    let (v01, v23) = (fold(v[0], v[1]), fold(v[2], v[3]));
    // 128-bit lane k: vector k's four quarter sums
    let q =
        _mm512_add_ps(_mm512_shuffle_f32x4::<0b10_00_10_00>(v01, v23), _mm512_shuffle_f32x4::<0b11_01_11_01>(v01, v23));
    let q = _mm512_add_ps(q, _mm512_shuffle_ps::<0b01_00_11_10>(q, q));
    let q = _mm512_add_ps(q, _mm512_shuffle_ps::<0b10_11_00_01>(q, q));
    _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), q))
}

/// `(1 << len) - 1`: the lanes below `len` (`len <= 32`).
#[inline]
fn low_lanes(len: usize) -> u32 {
    ((1u64 << len) - 1) as u32
}

/// The lanes `lo..hi` of a vector (`hi <= 32`).
#[inline]
fn lanes(lo: usize, hi: usize) -> u32 {
    low_lanes(hi) & !low_lanes(lo)
}

/// Values of `row` before its first address that is a multiple of `STEP` values, rounded down
/// to whole 32-bit lanes (`STEP / 16` values each) and at most the row's length: a first short
/// step of that many values makes the later vector loads of the row aligned. A load that
/// straddles two cache lines costs about twice one that does not, and the weights' rows (4 of
/// the 10 loads of a float tile's step) sit wherever the model file or the buffer put them,
/// often 32 bytes off a line.
fn head<T, const STEP: usize>(row: &[T]) -> usize {
    let (width, per_lane) = (STEP * size_of::<T>(), STEP / 16);
    let to_boundary = (width - row.as_ptr() as usize % width) % width;
    if to_boundary.is_multiple_of(size_of::<T>()) {
        (to_boundary / size_of::<T>()).min(row.len()) / per_lane * per_lane
    } else {
        0
    }
}

/// R×C products of the weight `rows` (of `n` values each, the length of the first), `STEP`
/// values per vector, the next tile's rows prefetched as it goes: `x(r, i, mask)` and
/// `y(c, i, mask)` read the values at `i + lane` into the lanes of `mask` (zeros elsewhere;
/// `i` may be negative), `madd(a, b, acc)` adds their products to 16 `f32` lanes.
///
/// The first step takes `head` values (a multiple of the values per lane), so that the steps
/// after it start at an aligned address of the rows. It reads them into the top lanes, so
/// value j always goes to lane `(j - head) mod STEP`: each lane adds the same values in the
/// same order as with no head, only in another lane, and the lanes are turned back before they
/// are summed. The products are then the same bits wherever the rows lie: a model loaded
/// from a mapped file computes what it computed when loaded into a buffer.
// Rows and columns index the accumulator grid together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn float_tile<T, const R: usize, const C: usize, const STEP: usize, V: Copy>(
    rows: &[&[T]; R],
    head: usize,
    x: impl Fn(usize, isize, u32) -> V,
    y: impl Fn(usize, isize, u32) -> V,
    madd: impl Fn(V, V, __m512) -> __m512,
) -> [[f32; C]; R] {
    let n = rows[0].len();
    let mut acc = [[_mm512_setzero_ps(); C]; R];
    // A macro and plain loops: a closure called twice (or through `array::from_fn`) is not
    // inlined, and would keep the accumulators or the loaded rows in memory.
    macro_rules! step {
        ($at:expr, $len:expr, $i:expr, $mask:expr) => {{
            prefetch_next_tile(rows, $at, $len);
            let mut xv = [x(0, $i, $mask); R];
            for r in 1..R {
                xv[r] = x(r, $i, $mask);
            }
            for c in 0..C {
                let yv = y(c, $i, $mask);
                for r in 0..R {
                    acc[r][c] = madd(xv[r], yv, acc[r][c]);
                }
            }
        }};
    }
    if head > 0 {
        step!(0, head, head as isize - STEP as isize, lanes(STEP - head, STEP));
    }
    let mut i = head;
    while i + STEP <= n {
        step!(i, STEP, i as isize, lanes(0, STEP));
        i += STEP;
    }
    if i < n {
        step!(i, n - i, i as isize, lanes(0, n - i));
    }
    if head > 0 {
        // lane k holds what lane k + head / (STEP / 16) holds with no head
        let turn = _mm512_set1_epi32((head / (STEP / 16)) as i32);
        let index = _mm512_and_si512(
            _mm512_sub_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), turn),
            _mm512_set1_epi32(15),
        );
        for row in acc.iter_mut() {
            for a in row.iter_mut() {
                *a = _mm512_permutexvar_ps(index, *a);
            }
        }
    }
    sums(&acc)
}

/// # Safety
/// The processor has the features of `has_avx512`; every row holds as many values as `x[0]`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn f32_tile<const R: usize, const C: usize>(x: &[&[f32]; R], y: &[&[f32]; C]) -> [[f32; C]; R] {
    // SAFETY (both loads): the values of the lanes read lie in the row (the tile reads them
    // below the common length); the other lanes are masked off, and not touched even where
    // their addresses lie outside the row.
    let load = |row: &[f32], i: isize, mask: u32| unsafe {
        _mm512_maskz_loadu_ps(mask as __mmask16, row.as_ptr().wrapping_offset(i))
    };
    float_tile::<_, R, C, 16, __m512>(
        x,
        head::<_, 16>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_fmadd_ps(a, b, acc),
    )
}

/// # Safety
/// As for [`f32_tile`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn f16_tile<const R: usize, const C: usize>(x: &[&[u16]; R], y: &[&[u16]; C]) -> [[f32; C]; R] {
    // SAFETY: as in `f32_tile`.
    let load = |row: &[u16], i: isize, mask: u32| unsafe {
        _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask as __mmask16, row.as_ptr().wrapping_offset(i).cast()))
    };
    float_tile::<_, R, C, 16, __m512>(
        x,
        head::<_, 16>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_fmadd_ps(a, b, acc),
    )
}

/// # Safety
/// As for [`f32_tile`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn bf16_tile<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
    if crate::cpu::kernels::features::features().avx512bf16 {
        // SAFETY: the base features are the caller's word, AVX512-BF16 was checked.
        unsafe { bf16_dot_pairs(x, y) }
    } else {
        // SAFETY: as for this function.
        unsafe { bf16_widened(x, y) }
    }
}

/// bfloat16 products with `vdpbf16ps`, 32 values per step.
///
/// # Safety
/// As for [`f32_tile`], and the processor has AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")]
unsafe fn bf16_dot_pairs<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
    // SAFETY: as in `f32_tile`; the transmute reads 512 bits of bfloat16 lanes as such.
    let load = |row: &[Bf16], i: isize, mask: u32| unsafe {
        std::mem::transmute::<__m512i, __m512bh>(_mm512_maskz_loadu_epi16(mask, row.as_ptr().wrapping_offset(i).cast()))
    };
    float_tile::<_, R, C, 32, __m512bh>(
        x,
        head::<_, 32>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_dpbf16_ps(acc, a, b),
    )
}

/// One bfloat16 product as ggml's `ggml_vec_dot_bf16` computes it with AVX512-BF16, which
/// ggml takes for one activation column: `vdpbf16ps` into two accumulators over steps of 64
/// values (32 each), each accumulator reduced and the two added in `f64`, the last values'
/// products (in `f32`) added in `f64` one at a time, the sum rounded to `f32` at the end.
///
/// # Safety
/// The processor has AVX-512 (as for [`f32_tile`]) and AVX512-BF16; the rows have the same
/// length.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")]
pub unsafe fn bf16_vec_dot(x: &[Bf16], y: &[Bf16]) -> f32 {
    debug_assert_eq!(x.len(), y.len());
    // SAFETY: 32 values from `at` lie in the row (the loop's bound); the transmute reads 512
    // bits of bfloat16 lanes as such.
    let load = |row: &[Bf16], at: usize| unsafe {
        std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(row.as_ptr().add(at).cast()))
    };
    let (mut c1, mut c2) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut i = 0;
    while i + 64 <= x.len() {
        c1 = _mm512_dpbf16_ps(c1, load(x, i), load(y, i));
        c2 = _mm512_dpbf16_ps(c2, load(x, i + 32), load(y, i + 32));
        i += 64;
    }
    let mut sum = f64::from(_mm512_reduce_add_ps(c1)) + f64::from(_mm512_reduce_add_ps(c2));
    for (a, b) in x[i..].iter().zip(&y[i..]) {
        sum += f64::from(bf16_to_fp32(*a) * bf16_to_fp32(*b));
    }
    sum as f32
}

/// bfloat16 products widened to `f32` (ggml's AVX512F path without BF16).
///
/// # Safety
/// As for [`f32_tile`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn bf16_widened<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
    // SAFETY: as in `f32_tile`.
    let load = |row: &[Bf16], i: isize, mask: u32| unsafe {
        let h = _mm256_maskz_loadu_epi16(mask as __mmask16, row.as_ptr().wrapping_offset(i).cast());
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
    };
    float_tile::<_, R, C, 16, __m512>(
        x,
        head::<_, 16>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_fmadd_ps(a, b, acc),
    )
}

// ---------------------------------------------------------------------------------------------
// Blocks of 32 values in 512-bit registers, for the panels and the small formats' tiles

/// Two binary16 values as `f32` in the low lanes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn two_halves(a: Half, b: Half) -> __m128 {
    _mm_cvtph_ps(_mm_cvtsi32_si128((u32::from(a.bits()) | (u32::from(b.bits()) << 16)) as i32))
}

/// Lanes 0..7 from `a`, lanes 8..15 from `b`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) fn pair_scales(a: Half, b: Half) -> __m512 {
    let index = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    _mm512_permutexvar_ps(index, _mm512_castps128_ps512(two_halves(a, b)))
}

/// The 32 byte levels of block b and (when there is one) b + 1.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) fn bytes_pair(a: &[u8; 32], b: Option<&[u8; 32]>) -> __m512i {
    // SAFETY: each array holds the 32 bytes read.
    let lo = unsafe { _mm256_loadu_si256(a.as_ptr().cast()) };
    // SAFETY: as above.
    let hi = b.map_or(_mm256_setzero_si256(), |b| unsafe { _mm256_loadu_si256(b.as_ptr().cast()) });
    _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
}

/// The 4-bit levels of block b and (when there is one) b + 1, in value order: per block the
/// low nibbles (values 0..15), then the high nibbles (values 16..31).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) fn nibbles_pair(a: &[u8; 16], b: Option<&[u8; 16]>) -> __m512i {
    // SAFETY: each array holds the 16 bytes read.
    let lo = unsafe { _mm_loadu_si128(a.as_ptr().cast()) };
    // SAFETY: as above.
    let hi = b.map_or(_mm_setzero_si128(), |b| unsafe { _mm_loadu_si128(b.as_ptr().cast()) });
    let both = _mm512_castsi256_si512(_mm256_set_m128i(hi, lo));
    // 128-bit lanes [a, a, b, b]; the high nibbles come down in lanes 1 and 3.
    let spread = _mm512_shuffle_i64x2::<0b01_01_00_00>(both, both);
    let shifted = _mm512_mask_srli_epi16::<4>(spread, 0xff00_ff00, spread);
    _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f))
}

/// The 5-bit levels `nibble | bit·16` of block b and (when there is one) b + 1.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) fn five_bit_pair(a: (&[u8; 16], [u8; 4]), b: Option<(&[u8; 16], [u8; 4])>) -> __m512i {
    // Bit j of qh is the fifth bit of value j: byte j of the pair, or byte 32 + j for b + 1.
    let high = u64::from(u32::from_le_bytes(a.1)) | (b.map_or(0, |b| u64::from(u32::from_le_bytes(b.1))) << 32);
    let sixteens = _mm512_maskz_mov_epi8(high, _mm512_set1_epi8(0x10));
    _mm512_or_si512(nibbles_pair(a.0, b.map(|b| b.0)), sixteens)
}

// ---------------------------------------------------------------------------------------------
// Lane tiles of the 32-value block formats

/// One block of two weight rows (the second's half zero past the last row): unsigned levels
/// standing for `level − offset`, the rows' scales (8 lanes each) and minimums (lanes 0, 1).
#[derive(Clone, Copy)]
struct RowPair {
    q: __m512i,
    d: __m512,
    m: __m128,
}

/// One activation block: signed levels in both halves; scale in every lane of `d`, and
/// (Q8_1) sum `d·Σq` in every lane of `s`.
struct Column {
    q: __m512i,
    d: __m512,
    s: __m128,
}

impl RowPair {
    /// Block b of rows `a` and `n` (the next, when there is one): levels `q` and the rows'
    /// scales.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    fn of<T>(a: &T, n: Option<&T>, q: __m512i, scale: impl Fn(&T) -> Half) -> RowPair {
        RowPair { q, d: pair_scales(scale(a), n.map_or(Half::default(), &scale)), m: _mm_setzero_ps() }
    }

    /// The same with the rows' minimums (the affine formats).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    fn with_minimums<T>(self, a: &T, n: Option<&T>, minimum: impl Fn(&T) -> Half) -> RowPair {
        RowPair { m: two_halves(minimum(a), n.map_or(Half::default(), &minimum)), ..self }
    }
}

/// Adds the eight chains of each half as ggml's `hsum_float_8` does:
/// `((c0 + c4) + (c2 + c6)) + ((c1 + c5) + (c3 + c7))`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn chain_sums(v: __m512) -> [f32; 2] {
    let halves = [_mm512_castps512_ps256(v), _mm512_extractf32x8_ps::<1>(v)];
    halves.map(|h| {
        let s = _mm_add_ps(_mm256_extractf128_ps::<1>(h), _mm256_castps256_ps128(h));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
    })
}

/// R×C products in ggml's lane chains, the next tile's rows prefetched as it goes: `x(r, b)`
/// gives block b of rows r and r + 1 (r even), `y(c, b)` block b of activation row c; with
/// `AFFINE` each block also adds `m·s`, in a chain of its own (one per lane of a pair's `m`)
/// added last.
// Pairs and columns index the accumulator grid together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn lane_tile<T, const R: usize, const C: usize, const OFFSET: u8, const AFFINE: bool>(
    rows: &[&[T]; R],
    x: impl Fn(usize, usize) -> RowPair,
    y: impl Fn(usize, usize) -> Column,
) -> [[f32; C]; R] {
    // the pairs of rows: R = 4 fills two, R = 3 leaves the second half of the last empty
    let pairs = R.div_ceil(2);
    let mut acc = [[_mm512_setzero_ps(); C]; 2];
    let mut minimums = [[_mm_setzero_ps(); C]; 2];
    let empty = RowPair { q: _mm512_setzero_si512(), d: _mm512_setzero_ps(), m: _mm_setzero_ps() };
    for b in 0..rows[0].len() {
        prefetch_next_tile(rows, b, 1);
        let mut xv = [empty; 2];
        for p in 0..pairs {
            xv[p] = x(2 * p, b);
        }
        for c in 0..C {
            let yv = y(c, b);
            // −offset·Σy per four bytes: where every row's sums start
            let zero = _mm512_setzero_si512();
            let seed = if OFFSET == 0 {
                zero
            } else {
                _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(OFFSET as i8), yv.q))
            };
            for p in 0..pairs {
                let sums = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(seed, xv[p].q, yv.q));
                acc[p][c] = _mm512_fmadd_ps(sums, _mm512_mul_ps(xv[p].d, yv.d), acc[p][c]);
                if AFFINE {
                    minimums[p][c] = _mm_fmadd_ps(xv[p].m, yv.s, minimums[p][c]);
                }
            }
        }
    }
    let mut out = [[0.0f32; C]; R];
    for p in 0..pairs {
        for c in 0..C {
            let m = minimums[p][c];
            let (two, m) = (chain_sums(acc[p][c]), [_mm_cvtss_f32(m), _mm_cvtss_f32(_mm_movehdup_ps(m))]);
            for h in 0..2 {
                if 2 * p + h < R {
                    out[2 * p + h][c] = two[h] + m[h];
                }
            }
        }
    }
    out
}

/// Block b of rows r and r + 1 (when there is one), without bounds checks.
///
/// # Safety
/// `b` is below the rows' length.
#[inline]
unsafe fn row_pair<'a, T, const R: usize>(x: &[&'a [T]; R], r: usize, b: usize) -> (&'a T, Option<&'a T>) {
    // SAFETY: the caller's contract; r + 1 is checked against R.
    unsafe { (x[r].get_unchecked(b), (r + 1 < R).then(|| x[r + 1].get_unchecked(b))) }
}

/// An activation block (Q8_0, or Q8_1 with its sum `s`) as the lane tiles take it.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn column(qs: &[u8; 32], d: Half, s: Half) -> Column {
    // SAFETY: the array holds the 32 bytes read.
    let q = _mm512_broadcast_i64x4(unsafe { _mm256_loadu_si256(qs.as_ptr().cast()) });
    let ds = two_halves(d, s);
    Column { q, d: _mm512_broadcastss_ps(ds), s: _mm_shuffle_ps::<0b01_01_01_01>(ds, ds) }
}

/// Block b of a Q8_0 activation row, as the lane tiles take it.
///
/// # Safety
/// `b` is below the row's length.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn q8_0_column(y: &[BlockQ8_0], b: usize) -> Column {
    // SAFETY: the caller's contract.
    let blk = unsafe { y.get_unchecked(b) };
    column(&blk.qs, blk.d, Half::default())
}

/// Block b of a Q8_1 activation row, with its sum.
///
/// # Safety
/// `b` is below the row's length.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn q8_1_column(y: &[BlockQ8_1], b: usize) -> Column {
    // SAFETY: the caller's contract.
    let blk = unsafe { y.get_unchecked(b) };
    column(&blk.qs, blk.d, blk.s)
}

/// Q4_0 by Q8_0: levels 0..15 standing for −8..7.
///
/// # Safety
/// As for [`f32_tile`] (rows of the same number of blocks).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q4_0_lanes<const R: usize, const C: usize>(
    x: &[&[BlockQ4_0]; R],
    y: &[&[BlockQ8_0]; C],
) -> [[f32; C]; R] {
    let weights = |r: usize, b: usize| {
        // SAFETY: the tile walks blocks below the rows' common length (its contract).
        let (a, n) = unsafe { row_pair(x, r, b) };
        RowPair::of(a, n, nibbles_pair(&a.qs, n.map(|n| &n.qs)), |b| b.d)
    };
    lane_tile::<_, R, C, 8, false>(x, weights, |c, b| {
        // SAFETY: as above.
        unsafe { q8_0_column(y[c], b) }
    })
}

/// Q5_0 by Q8_0: levels 0..31 standing for −16..15.
///
/// # Safety
/// As for [`f32_tile`] (rows of the same number of blocks).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q5_0_lanes<const R: usize, const C: usize>(
    x: &[&[BlockQ5_0]; R],
    y: &[&[BlockQ8_0]; C],
) -> [[f32; C]; R] {
    let weights = |r: usize, b: usize| {
        // SAFETY: the tile walks blocks below the rows' common length (its contract).
        let (a, n) = unsafe { row_pair(x, r, b) };
        RowPair::of(a, n, five_bit_pair((&a.qs, a.qh), n.map(|n| (&n.qs, n.qh))), |b| b.d)
    };
    lane_tile::<_, R, C, 16, false>(x, weights, |c, b| {
        // SAFETY: as above.
        unsafe { q8_0_column(y[c], b) }
    })
}

/// Q8_0 by Q8_0: signed levels, made unsigned by adding 128.
///
/// # Safety
/// As for [`f32_tile`] (rows of the same number of blocks).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q8_0_lanes<const R: usize, const C: usize>(
    x: &[&[BlockQ8_0]; R],
    y: &[&[BlockQ8_0]; C],
) -> [[f32; C]; R] {
    let weights = |r: usize, b: usize| {
        // SAFETY: the tile walks blocks below the rows' common length (its contract).
        let (a, n) = unsafe { row_pair(x, r, b) };
        // Flipping the sign bit adds 128 to a signed byte read as unsigned.
        let q = _mm512_xor_si512(bytes_pair(&a.qs, n.map(|n| &n.qs)), _mm512_set1_epi8(i8::MIN));
        RowPair::of(a, n, q, |b| b.d)
    };
    lane_tile::<_, R, C, 128, false>(x, weights, |c, b| {
        // SAFETY: as above.
        unsafe { q8_0_column(y[c], b) }
    })
}

/// Q4_1 by Q8_1: `d·level + m`.
///
/// # Safety
/// As for [`f32_tile`] (rows of the same number of blocks).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q4_1_lanes<const R: usize, const C: usize>(
    x: &[&[BlockQ4_1]; R],
    y: &[&[BlockQ8_1]; C],
) -> [[f32; C]; R] {
    let weights = |r: usize, b: usize| {
        // SAFETY: the tile walks blocks below the rows' common length (its contract).
        let (a, n) = unsafe { row_pair(x, r, b) };
        RowPair::of(a, n, nibbles_pair(&a.qs, n.map(|n| &n.qs)), |b| b.d).with_minimums(a, n, |b| b.m)
    };
    lane_tile::<_, R, C, 0, true>(x, weights, |c, b| {
        // SAFETY: as above.
        unsafe { q8_1_column(y[c], b) }
    })
}

/// Q5_1 by Q8_1: `d·level + m`, 5-bit levels.
///
/// # Safety
/// As for [`f32_tile`] (rows of the same number of blocks).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn q5_1_lanes<const R: usize, const C: usize>(
    x: &[&[BlockQ5_1]; R],
    y: &[&[BlockQ8_1]; C],
) -> [[f32; C]; R] {
    let weights = |r: usize, b: usize| {
        // SAFETY: the tile walks blocks below the rows' common length (its contract).
        let (a, n) = unsafe { row_pair(x, r, b) };
        let q = five_bit_pair((&a.qs, a.qh), n.map(|n| (&n.qs, n.qh)));
        RowPair::of(a, n, q, |b| b.d).with_minimums(a, n, |b| b.m)
    };
    lane_tile::<_, R, C, 0, true>(x, weights, |c, b| {
        // SAFETY: as above.
        unsafe { q8_1_column(y[c], b) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::types::Type;
    use crate::cpu::kernels::dot::{self, DotKernel, MAX_ROWS, MAX_WIDE_COLS, VecDot};
    use crate::cpu::kernels::features::features;
    use crate::quants::half::{bf16_to_fp32, fp32_to_bf16, fp32_to_fp16};

    use crate::cpu::kernels::dot::test_support::values;

    fn bytes<T>(v: &[T]) -> &[u8] {
        // SAFETY (test): the formats are plain data; the view covers the same memory.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
    }

    fn close(a: f32, b: f32, n: usize) -> bool {
        (a - b).abs() <= 2e-5 * (1.0 + n as f32).sqrt() * (1.0 + a.abs().max(b.abs()))
    }

    /// Every tile shape of `T`'s kernel on this processor (AVX-512 when it has it) against the
    /// scalar products, and the 4×2 AVX-512 tile against the AVX2 one.
    fn check<T: VecDot>(n: usize, xs: &[Vec<T>], ys: &[Vec<T::Rhs>]) {
        let k = DotKernel::for_type(T::TYPE).expect("a kernel");
        let xb: Vec<&[u8]> = xs.iter().map(|r| bytes(r)).collect();
        let yb: Vec<&[u8]> = ys.iter().map(|r| bytes(r)).collect();
        assert_eq!(k.cols(), T::AVX512_COLS, "{}: the kernel takes the AVX-512 shape", T::TYPE.name());
        for nr in 1..=MAX_ROWS {
            for nc in 1..=k.cols() {
                let mut fast = [f32::NAN; MAX_ROWS * MAX_WIDE_COLS];
                let mut scalar = [f32::NAN; MAX_ROWS * MAX_WIDE_COLS];
                k.tile(n, &xb[..nr], &yb[..nc], &mut fast, true);
                k.tile(n, &xb[..nr], &yb[..nc], &mut scalar, false);
                for i in 0..nr * nc {
                    assert!(
                        close(fast[i], scalar[i], n),
                        "{} n={n} {nr}x{nc} [{i}]: {} vs scalar {}",
                        T::TYPE.name(),
                        fast[i],
                        scalar[i]
                    );
                }
            }
        }
        let x: [&[T]; 4] = std::array::from_fn(|r| xs[r].as_slice());
        let y: [&[T::Rhs]; 2] = std::array::from_fn(|c| ys[c].as_slice());
        // SAFETY: the callers checked for AVX-512 (and so AVX2, FMA, F16C); the rows have the
        // same length.
        let (wide, narrow) = unsafe { (T::tile_avx512::<4, 2>(&x, &y), T::tile_avx2::<4, 2>(&x, &y)) };
        for r in 0..4 {
            for c in 0..2 {
                assert!(close(wide[r][c], narrow[r][c], n), "{} n={n}: AVX-512 vs AVX2 at {r},{c}", T::TYPE.name());
            }
        }
    }

    fn rows(n: usize, count: u32, seed: u32) -> Vec<Vec<f32>> {
        (0..count).map(|i| values(n, seed + i)).collect()
    }

    #[test]
    fn sums_of_four_are_the_lane_sums() {
        if !features().has_avx512() {
            return;
        }
        let rows = rows(16, 4, 5);
        // SAFETY: AVX-512 was detected; each row holds 16 floats; a register of four floats
        // is their bits.
        let (four, one) = unsafe {
            let v: [__m512; 4] = std::array::from_fn(|k| _mm512_loadu_ps(rows[k].as_ptr()));
            (std::mem::transmute::<__m128, [f32; 4]>(sums_of_four(v)), v.map(|v| _mm512_reduce_add_ps(v)))
        };
        assert_eq!(four, one);
        let exact: Vec<f32> = rows.iter().map(|r| r.iter().map(|&x| f64::from(x)).sum::<f64>() as f32).collect();
        for (s, e) in four.iter().zip(&exact) {
            assert!((s - e).abs() <= 1e-5 * (1.0 + e.abs()), "{s} vs {e}");
        }
    }

    #[test]
    fn float_tiles_match_scalar_and_avx2() {
        if !crate::cpu::kernels::features::features().has_avx512() {
            return;
        }
        for n in [1usize, 7, 16, 17, 31, 32, 33, 64, 100, 257] {
            let (xs, ys) = (rows(n, 4, 1), rows(n, MAX_WIDE_COLS as u32, 100));
            check::<f32>(n, &xs, &ys);
            let half = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_fp16(a)).collect::<Vec<u16>>();
            check::<u16>(n, &xs.iter().map(half).collect::<Vec<_>>(), &ys.iter().map(half).collect::<Vec<_>>());
            let bf = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_bf16(a)).collect::<Vec<Bf16>>();
            check::<Bf16>(n, &xs.iter().map(bf).collect::<Vec<_>>(), &ys.iter().map(bf).collect::<Vec<_>>());
        }
    }

    /// The rows' values at every offset from a 64-byte boundary: the first step differs (the
    /// head), the products must not, to the bit.
    #[test]
    fn float_products_do_not_depend_on_where_the_rows_lie() {
        if !crate::cpu::kernels::features::features().has_avx512() {
            return;
        }
        fn at_every_offset<T: Copy>(
            xs: &[Vec<T>],
            ys: &[Vec<T>],
            tile: impl Fn(&[&[T]; 2], &[&[T]; 3]) -> [[f32; 3]; 2],
        ) {
            let n = xs[0].len();
            let lanes = 64 / size_of::<T>();
            let mut first = None;
            for offset in 0..lanes {
                // room for the offset, then rows that keep it (whole 64-byte strides)
                let stride = (offset + n).next_multiple_of(lanes);
                let mut store = vec![[0u8; 64]; xs.len() * stride * size_of::<T>() / 64 + 1];
                // SAFETY: 64-byte units viewed as T (plain data, alignment at most 64).
                let all =
                    unsafe { std::slice::from_raw_parts_mut(store.as_mut_ptr().cast::<T>(), store.len() * lanes) };
                for (k, x) in xs.iter().enumerate() {
                    all[k * stride + offset..][..n].copy_from_slice(x);
                }
                let rows: [&[T]; 2] = std::array::from_fn(|k| &all[k * stride + offset..][..n]);
                let cols: [&[T]; 3] = std::array::from_fn(|c| ys[c].as_slice());
                let got = tile(&rows, &cols).map(|r| r.map(f32::to_bits));
                assert_eq!(*first.get_or_insert(got), got, "n={n} offset {offset}");
            }
        }
        for n in [5usize, 16, 31, 33, 100, 257] {
            let (xs, ys) = (rows(n, 2, 11), rows(n, 3, 300));
            // SAFETY (all four): AVX-512 was checked; the rows have the same length.
            at_every_offset(&xs, &ys, |x, y| unsafe { f32_tile::<2, 3>(x, y) });
            let half = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_fp16(a)).collect::<Vec<u16>>();
            let (hx, hy): (Vec<_>, Vec<_>) = (xs.iter().map(half).collect(), ys.iter().map(half).collect());
            at_every_offset(&hx, &hy, |x, y| unsafe { f16_tile::<2, 3>(x, y) });
            let bf = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_bf16(a)).collect::<Vec<Bf16>>();
            let (bx, by): (Vec<_>, Vec<_>) = (xs.iter().map(bf).collect(), ys.iter().map(bf).collect());
            at_every_offset(&bx, &by, |x, y| unsafe { bf16_widened::<2, 3>(x, y) });
            if features().avx512bf16 {
                at_every_offset(&bx, &by, |x, y| unsafe { bf16_dot_pairs::<2, 3>(x, y) });
            }
        }
    }

    /// `bf16_vec_dot` against a scalar model of ggml_vec_dot_bf16 with AVX512-BF16: per lane,
    /// `vdpbf16ps` adds the odd pair's exact product, then the even one's; 16 lanes in two
    /// accumulators over 64-value steps, each reduced as `_mm512_reduce_add_ps` pairs them,
    /// in `f64` with the tail. 64·50 + 37 values of mixed magnitudes: enough roundings that
    /// another order shows in the result.
    #[test]
    fn bf16_vec_dot_sums_as_ggml_does() {
        if !(crate::cpu::kernels::features::features().has_avx512() && features().avx512bf16) {
            return;
        }
        let n = 64 * 50 + 37;
        let spread = |v: Vec<f32>| -> Vec<Bf16> {
            v.into_iter().enumerate().map(|(i, x)| fp32_to_bf16(x * (1 << (i % 11)) as f32)).collect()
        };
        let (a, b) = (spread(values(n, 5)), spread(values(n, 6)));
        let f = |v: Bf16| bf16_to_fp32(v);
        let mut acc = [[0.0f32; 16]; 2];
        for step in 0..n / 64 {
            for (k, lanes) in acc.iter_mut().enumerate() {
                for (l, lane) in lanes.iter_mut().enumerate() {
                    let i = 64 * step + 32 * k + 2 * l;
                    *lane = (*lane + f(a[i + 1]) * f(b[i + 1])) + f(a[i]) * f(b[i]);
                }
            }
        }
        let reduce = |v: [f32; 16]| {
            let h: [f32; 8] = std::array::from_fn(|i| v[i] + v[i + 8]);
            let q: [f32; 4] = std::array::from_fn(|i| h[i] + h[i + 4]);
            (q[0] + q[2]) + (q[1] + q[3])
        };
        let mut want = f64::from(reduce(acc[0])) + f64::from(reduce(acc[1]));
        for i in n / 64 * 64..n {
            want += f64::from(f(a[i]) * f(b[i]));
        }
        // SAFETY: AVX-512 and AVX512-BF16 were checked; the rows have the same length.
        let got = unsafe { bf16_vec_dot(&a, &b) };
        assert_eq!(got.to_bits(), (want as f32).to_bits(), "{got} against {}", want as f32);
    }

    #[test]
    fn bf16_dot_pairs_and_widening_agree() {
        let f = features();
        if !(crate::cpu::kernels::features::features().has_avx512() && f.avx512bf16) {
            return;
        }
        let to_bf = |v: Vec<f32>| v.into_iter().map(fp32_to_bf16).collect::<Vec<_>>();
        let (a, b) = (to_bf(values(77, 3)), to_bf(values(77, 4)));
        // SAFETY: AVX-512 and AVX512-BF16 were checked; the rows have the same length.
        let (p, w) = unsafe { (bf16_dot_pairs::<1, 1>(&[&a], &[&b]), bf16_widened::<1, 1>(&[&a], &[&b])) };
        assert!(close(p[0][0], w[0][0], 77), "{} vs {}", p[0][0], w[0][0]);
    }

    #[test]
    fn kernels_without_avx512_tiles_keep_the_narrow_shape() {
        let k = DotKernel::for_type(Type::Q4_K).expect("a kernel");
        assert_eq!(k.cols(), dot::MAX_COLS);
    }
}
