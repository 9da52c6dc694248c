//! The AVX-512 building blocks the dot products share: the lane sums of a grid of
//! accumulators ([`sums`]), and the lane tiles of the 32-value block formats (Q4_0, Q4_1,
//! Q5_0, Q5_1, Q8_0), with the pieces the other block formats' AVX-512 tiles and the panels
//! take from them. (The float formats' AVX-512 tiles are in `dot::float::avx512`.)
//!
//! The lane tiles sum as ggml does on x86, in eight lane chains per product (see `dot`), with
//! the chains of two weight rows in one register: lanes 0..7 for one row, 8..15 for the next.
//! Their byte products are summed with `vpdpbusd`, which multiplies unsigned by signed bytes,
//! so the weights' levels are kept unsigned: Q4_0 and Q5_0 store `level + 8` and `level + 16`
//! already, Q8_0 levels get 128 added (a sign-bit flip); `offset·Σy` per four bytes seeds the
//! sums, which takes it back. The AVX2 tiles sum the same way a row at a time; these build two
//! rows' levels with 512-bit operations and were faster for generation's products (4096×4096
//! by one column, 8 copies streamed from memory, one thread, µs, AVX2 → these: Q4_0 9347 →
//! 6295, Q4_1 11581 → 7678, Q5_0 13208 → 7748, Q8_0 10643 → 9469; ggml 13104–19816).
//!
//! Every function here needs
//! [`has_avx512`](crate::cpu::features::Features::has_avx512) (and AVX2, FMA, F16C,
//! which such processors have); the callers check it.

use std::arch::x86_64::*;

use crate::cpu::kernels::prefetch;
use crate::quants::half::Half;
use crate::quants::q4::{BlockQ4_0, BlockQ4_1};
use crate::quants::q5::{BlockQ5_0, BlockQ5_1};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

/// Activation rows per block tile (the lane tiles here, those of `dot::ternary` and
/// `dot::low_bit`): the accumulators, the weights' levels and scales, and one activation
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

// ---------------------------------------------------------------------------------------------
// Blocks of 32 values in 512-bit registers, for the panels and the ternary and low-bit
// formats' tiles

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
        prefetch::next_tile(rows, b, 1);
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
/// The processor has the features of `has_avx512`; every row holds as many blocks as `x[0]`.
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
/// The processor has the features of `has_avx512`; every row holds as many blocks as `x[0]`.
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
/// The processor has the features of `has_avx512`; every row holds as many blocks as `x[0]`.
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
/// The processor has the features of `has_avx512`; every row holds as many blocks as `x[0]`.
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
/// The processor has the features of `has_avx512`; every row holds as many blocks as `x[0]`.
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
    use crate::cpu::features::features;
    use crate::cpu::kernels::dot::test_support::values;
    use crate::cpu::kernels::dot::{self, DotKernel};

    #[test]
    fn sums_of_four_are_the_lane_sums() {
        if !features().has_avx512() {
            return;
        }
        let rows: Vec<Vec<f32>> = (0..4).map(|i| values(16, 5 + i)).collect();
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
    fn kernels_without_avx512_tiles_keep_the_narrow_shape() {
        let k = DotKernel::for_type(Type::Q4_K).expect("a kernel");
        assert_eq!(k.cols(), dot::MAX_COLS);
    }
}
