//! The formats with a scale per 32 values (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4) or per
//! block of several 32-value units (Q1_0, Q2_0), on panels.
//!
//! A panel block (one 32-value unit) holds the 16 rows' signed byte levels, interleaved four at a time: one
//! register holds the same four levels of all sixteen rows. Four levels of one activation row,
//! broadcast against it, give sixteen rows' partial sums. For Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0
//! each of a block's eight `vpdpbusd` is scaled into its own running sum, which is ggml's
//! arithmetic for them ([`lane_tile`]); for the other formats the eight sum the whole block in
//! integers, and only then is it scaled, once per 16 rows and block ([`block_tile`]).
//!
//! `vpdpbusd` multiplies unsigned by signed bytes. The weights are the signed side here; the
//! activations are quantized to Q8_0 (Q8_1 for the affine formats) exactly as for the other
//! kernels and stored with 128 added, and the panel seeds each block's sums with `−128·Σw`,
//! which takes the offset back (per register of levels for the lane sums). The integer sums are
//! exact, so only the `f32` arithmetic decides how results round.
//!
//! An activation row is its levels (32 bytes per block), then the blocks' scales as `f32`,
//! then (Q8_1) the blocks' sums `d·Σq` as `f32`: a Q1_0 or Q2_0 block meets several Q8_0 blocks,
//! one per unit, as in its dot product.

use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::{Avx512, Kind, PANEL_ROWS, transpose};
use crate::cpu::kernels::dot;
use crate::cpu::kernels::x86::avx512::{bytes_pair, five_bit_pair, nibbles_pair};
use crate::quants::fp4::{BlockMxfp4, E2M1_DOUBLED, e8m0_to_f32_half};
use crate::quants::half::Half;
use crate::quants::iq4::{BlockIq4Nl, LEVELS as IQ4_NL_LEVELS};
use crate::quants::low_bit::{BlockQ1_0, BlockQ2_0};
use crate::quants::q4::{BlockQ4_0, BlockQ4_1};
use crate::quants::q5::{BlockQ5_0, BlockQ5_1};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

/// One unit of a decoded panel: 8 registers of levels (four levels of each of the 16 rows
/// per register), then the rows' scales, the seeds `−128·Σw`, the rows' minimums, and, for
/// the formats summed in lane chains, the seeds of each register of levels.
const LEVELS: usize = 0;
const SCALES: usize = 8 * 64;
const SEEDS: usize = SCALES + 64;
const MINIMUMS: usize = SEEDS + 64;
const GROUP_SEEDS: usize = MINIMUMS + 64;
const PANEL_BLOCK_BYTES: usize = GROUP_SEEDS + 8 * 64;

/// A weight format the panels decode.
pub(super) trait Format: Copy {
    /// Whether each block adds `m·Σy` (Q4_1, Q5_1: activations in Q8_1).
    const AFFINE: bool;
    /// Whether products are summed in ggml's lane chains (see [`lane_tile`]): the formats
    /// whose ggml dot products on x86 (and tinyBLAS's, for batches) all sum that way.
    const LANE_CHAINS: bool = false;
    /// 32-value units per block, all under the block's scale.
    const UNITS: usize = 1;

    /// The signed levels of unit `u` of `row` and, when `two`, of unit `u + 1` (in the high
    /// half of the register, which is not read without it).
    ///
    /// # Safety
    /// AVX-512 (F, BW, VNNI) is available; `u` is even when `UNITS` is above 1; `u` (and
    /// `u + 1` when `two`) is below `UNITS · row.len()`.
    unsafe fn levels(row: &[Self], u: usize, two: bool) -> __m512i;

    /// The block's scale (of its levels as [`Format::levels`] gives them).
    fn scale(&self) -> f32;

    fn minimum(&self) -> f32 {
        0.0
    }
}

/// Blocks `b` and, when `two`, `b + 1` of `row` without bounds checks.
///
/// # Safety
/// `b < row.len()`, and `b + 1 < row.len()` when `two`.
unsafe fn pair<T>(row: &[T], b: usize, two: bool) -> (&T, Option<&T>) {
    debug_assert!(b + usize::from(two) < row.len());
    // SAFETY: the caller's contract.
    unsafe { (row.get_unchecked(b), two.then(|| row.get_unchecked(b + 1))) }
}

/// `levels` with `offset` taken from every byte.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn centred(levels: __m512i, offset: i8) -> __m512i {
    _mm512_sub_epi8(levels, _mm512_set1_epi8(offset))
}

impl Format for BlockQ4_0 {
    const AFFINE: bool = false;
    const LANE_CHAINS: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        centred(nibbles_pair(&lo.qs, hi.map(|h| &h.qs)), 8)
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }
}

impl Format for BlockQ4_1 {
    const AFFINE: bool = true;
    const LANE_CHAINS: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        nibbles_pair(&lo.qs, hi.map(|h| &h.qs))
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }

    fn minimum(&self) -> f32 {
        self.m.to_f32()
    }
}

impl Format for BlockQ5_0 {
    const AFFINE: bool = false;
    const LANE_CHAINS: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        centred(five_bit_pair((&lo.qs, lo.qh), hi.map(|h| (&h.qs, h.qh))), 16)
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }
}

impl Format for BlockQ5_1 {
    const AFFINE: bool = true;
    const LANE_CHAINS: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        five_bit_pair((&lo.qs, lo.qh), hi.map(|h| (&h.qs, h.qh)))
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }

    fn minimum(&self) -> f32 {
        self.m.to_f32()
    }
}

impl Format for BlockQ8_0 {
    const AFFINE: bool = false;
    const LANE_CHAINS: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        bytes_pair(&lo.qs, hi.map(|h| &h.qs))
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }
}

/// The levels of the non-linear 4-bit formats: `table` looked up by the nibbles of a block
/// pair's bytes (in [`nibbles_pair`]'s value order), with the table in every 128-bit lane.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn looked_up(table: &[i8; 16], lo: &[u8; 16], hi: Option<&[u8; 16]>) -> __m512i {
    // SAFETY: the table holds the 16 bytes read.
    let table = _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(table.as_ptr().cast()) });
    _mm512_shuffle_epi8(table, nibbles_pair(lo, hi))
}

impl Format for BlockIq4Nl {
    const AFFINE: bool = false;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        looked_up(&IQ4_NL_LEVELS, &lo.qs, hi.map(|h| &h.qs))
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }
}

impl Format for BlockMxfp4 {
    const AFFINE: bool = false;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        // the E2M1 values doubled: integers
        looked_up(&E2M1_DOUBLED, &lo.qs, hi.map(|h| &h.qs))
    }

    fn scale(&self) -> f32 {
        // half the E8M0 scale, for the doubled levels
        e8m0_to_f32_half(self.e)
    }
}

impl Format for BlockQ1_0 {
    const AFFINE: bool = false;
    const UNITS: usize = 4;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], u: usize, _two: bool) -> __m512i {
        // SAFETY: unit u is in block u / 4 (the caller's contract), and so is u + 1, u being even.
        let block = unsafe { row.get_unchecked(u / 4) };
        // bit j of the word is value j of the two units: a set bit is +1, a clear one −1
        let at = 4 * (u % 4);
        let bits = u64::from_le_bytes(block.qs[at..at + 8].try_into().expect("8 bytes"));
        _mm512_mask_mov_epi8(_mm512_set1_epi8(-1), bits, _mm512_set1_epi8(1))
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }
}

impl Format for BlockQ2_0 {
    const AFFINE: bool = false;
    const UNITS: usize = 2;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], u: usize, _two: bool) -> __m512i {
        // SAFETY: unit u is in block u / 2 (the caller's contract), and so is u + 1, u being even.
        let block = unsafe { row.get_unchecked(u / 2) };
        // SAFETY: a block's codes are 16 bytes.
        let qs = unsafe { _mm_loadu_si128(block.qs.as_ptr().cast()) };
        // byte m to 32-bit lane m, copied four times 6 bits apart so that code p of the byte
        // (value 4m + p) lands at the bottom of byte p
        let wide = _mm512_cvtepu8_epi32(qs);
        let spread = _mm512_or_si512(
            _mm512_or_si512(wide, _mm512_slli_epi32::<6>(wide)),
            _mm512_or_si512(_mm512_slli_epi32::<12>(wide), _mm512_slli_epi32::<18>(wide)),
        );
        let codes = _mm512_and_si512(spread, _mm512_set1_epi8(3));
        _mm512_sub_epi8(codes, _mm512_set1_epi8(1))
    }

    fn scale(&self) -> f32 {
        self.d.to_f32()
    }
}

/// The block formats' [`Kind`]: `F` weights, activations in `F`'s Q8 format.
pub(super) struct Blocks<F>(PhantomData<F>);

impl<F: Format> Blocks<F> {
    /// Bytes of an activation row of `n` values: the levels, the scales, the sums if affine.
    fn row_size(n: usize) -> usize {
        n / 32 * (32 + 4 + if F::AFFINE { 4 } else { 0 })
    }
}

impl<F: Format> Kind for Blocks<F> {
    type Isa = Avx512;
    const TILE_COLS: usize = 8;
    const UNIT: usize = 32;
    const SPAN: usize = usize::MAX;

    fn activations_size(n: usize, cols: usize) -> usize {
        Self::row_size(n) * cols
    }

    fn activation(acts: *mut u8, n: usize, col: usize, start: usize) -> *mut u8 {
        // the levels of a row, then its scales: a row is not taken a span at a time
        debug_assert_eq!(start, 0);
        acts.wrapping_add(col * Self::row_size(n))
    }

    fn panel_size(n: usize) -> usize {
        n / 32 * PANEL_BLOCK_BYTES
    }

    unsafe fn convert(x: &[f32], n: usize, first: usize, at: *mut u8) {
        // SAFETY: the column's row (the caller's contract).
        let row = unsafe { std::slice::from_raw_parts_mut(at, Self::row_size(n)) };
        let nb = n / 32;
        let (levels, rest) = row.split_at_mut(nb * 32);
        let (scales, sums) = rest.split_at_mut(nb * 4);
        let mut store = |b: usize, qs: &[u8; 32], d: Half, s: Option<Half>| {
            for (l, q) in levels[b * 32..b * 32 + 32].iter_mut().zip(qs) {
                *l = q ^ 0x80;
            }
            scales[b * 4..b * 4 + 4].copy_from_slice(&d.to_f32().to_ne_bytes());
            if let Some(s) = s {
                sums[b * 4..b * 4 + 4].copy_from_slice(&s.to_f32().to_ne_bytes());
            }
        };
        if F::AFFINE {
            let mut blocks = vec![BlockQ8_1::default(); x.len() / 32];
            dot::quantize_row_q8_1(x, &mut blocks);
            for (b, blk) in (first..).zip(&blocks) {
                store(b, &blk.qs, blk.d, Some(blk.s));
            }
        } else {
            let mut blocks = vec![BlockQ8_0::default(); x.len() / 32];
            dot::quantize_row_q8_0(x, &mut blocks);
            for (b, blk) in (first..).zip(&blocks) {
                store(b, &blk.qs, blk.d, None);
            }
        }
    }

    unsafe fn decode(rows: &[*const u8], n: usize, panel: *mut u8) {
        let mut blocks: [&[F]; PANEL_ROWS] = [&[]; PANEL_ROWS];
        for (b, &row) in blocks.iter_mut().zip(rows) {
            // SAFETY: a row of n values of F (the caller's contract), read only.
            *b = unsafe { std::slice::from_raw_parts(row.cast::<F>(), n / (32 * F::UNITS)) };
        }
        // SAFETY: the caller's contract.
        unsafe { decode_rows(&blocks[..rows.len()], n / 32, panel) }
    }

    unsafe fn tile<const C: usize>(panel: *const u8, n: usize, acts: &[*const u8; C]) -> [__m512; C] {
        let rows = acts.map(|a| ActRow::at(a, n));
        // SAFETY: the caller's contract.
        unsafe {
            match (F::LANE_CHAINS, F::AFFINE) {
                (true, true) => lane_tile::<C, true>(panel, n / 32, &rows),
                (true, false) => lane_tile::<C, false>(panel, n / 32, &rows),
                (false, true) => block_tile::<C, true>(panel, n / 32, &rows),
                (false, false) => block_tile::<C, false>(panel, n / 32, &rows),
            }
        }
    }
}

/// One activation row in the blocks' layout.
#[derive(Clone, Copy)]
struct ActRow {
    levels: *const u8,
    scales: *const f32,
    sums: *const f32,
}

impl ActRow {
    /// The activation row at `levels`, of `n` values.
    fn at(levels: *const u8, n: usize) -> ActRow {
        let nb = n / 32;
        let scales = levels.wrapping_add(nb * 32).cast::<f32>();
        ActRow { levels, scales, sums: scales.wrapping_add(nb) }
    }
}

/// # Safety
/// AVX-512; every row holds `nb` units; `panel` holds `nb` panel blocks on a cache line.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn decode_rows<F: Format>(rows: &[&[F]], nb: usize, panel: *mut u8) {
    let ones = _mm512_set1_epi8(1);
    let mut b = 0;
    while b < nb {
        let two = b + 1 < nb;
        let mut words = [_mm512_setzero_si512(); PANEL_ROWS];
        for (w, row) in words.iter_mut().zip(rows) {
            // SAFETY: b (and b + 1 when two) < nb, the rows' length.
            *w = unsafe { F::levels(row, b, two) };
        }
        let words = transpose(words);
        for half in 0..1 + usize::from(two) {
            let blk = b + half;
            // SAFETY: block blk < nb of the panel.
            let base = unsafe { panel.add(blk * PANEL_BLOCK_BYTES) };
            // −128·Σw: per register of levels (the lane chains' seeds), and over the block
            let seeds_of = |sums: __m512i| _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32::<7>(sums));
            let mut sums = _mm512_setzero_si512();
            for (g, &w) in words[half * 8..half * 8 + 8].iter().enumerate() {
                // SAFETY: inside the panel block, on a cache line.
                unsafe { _mm512_store_si512(base.add(LEVELS + g * 64).cast(), w) };
                let group = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, w);
                if F::LANE_CHAINS {
                    // SAFETY: inside the panel block, on a cache line.
                    unsafe { _mm512_store_si512(base.add(GROUP_SEEDS + g * 64).cast(), seeds_of(group)) };
                }
                sums = _mm512_add_epi32(sums, group);
            }
            let seeds = seeds_of(sums);
            let (mut d, mut m) = ([0f32; PANEL_ROWS], [0f32; PANEL_ROWS]);
            for (r, row) in rows.iter().enumerate() {
                // SAFETY: unit blk < nb is in block blk / UNITS.
                let block = unsafe { row.get_unchecked(blk / F::UNITS) };
                (d[r], m[r]) = (block.scale(), block.minimum());
            }
            // SAFETY: inside the panel block, on cache lines; the arrays hold 16 floats.
            unsafe {
                _mm512_store_si512(base.add(SEEDS).cast(), seeds);
                _mm512_store_ps(base.add(SCALES).cast(), _mm512_loadu_ps(d.as_ptr()));
                _mm512_store_ps(base.add(MINIMUMS).cast(), _mm512_loadu_ps(m.as_ptr()));
            }
        }
        b += 2;
    }
}

/// The panel's 16 rows by `C` activation rows.
///
/// # Safety
/// As for [`Kind::tile`].
// Columns index the accumulators and activation rows together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn block_tile<const C: usize, const AFFINE: bool>(
    panel: *const u8,
    nb: usize,
    acts: &[ActRow; C],
) -> [__m512; C] {
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the panel, on a cache line; the activations' block b
        // (the caller's contract).
        unsafe {
            let base = panel.add(b * PANEL_BLOCK_BYTES);
            let seeds = _mm512_load_si512(base.add(SEEDS).cast());
            let mut sums = [seeds; C];
            for g in 0..8 {
                let w = _mm512_load_si512(base.add(LEVELS + g * 64).cast());
                for c in 0..C {
                    let y = acts[c].levels.add(b * 32 + g * 4).cast::<i32>().read_unaligned();
                    sums[c] = _mm512_dpbusd_epi32(sums[c], _mm512_set1_epi32(y), w);
                }
            }
            let d = _mm512_load_ps(base.add(SCALES).cast());
            let m = _mm512_load_ps(base.add(MINIMUMS).cast());
            for c in 0..C {
                let scale = _mm512_mul_ps(d, _mm512_set1_ps(*acts[c].scales.add(b)));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[c]), scale, acc[c]);
                if AFFINE {
                    acc[c] = _mm512_fmadd_ps(m, _mm512_set1_ps(*acts[c].sums.add(b)), acc[c]);
                }
            }
        }
    }
    acc
}

/// The panel's 16 rows by `C` activation rows, summed as ggml's x86 dot products and
/// tinyBLAS's block tiles sum them, so that the results are theirs to the last bit.
///
/// There, a block's 32 byte products are summed in integers four at a time (one 32-bit lane
/// each), the eight lane sums converted to `f32` and each multiplied by the block's two
/// scales and added into its own running sum with one FMA; after the last block the eight
/// running sums are added as `((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7))`, and the
/// affine formats add the chain of `m·s` FMAs last. Here each of the eight lanes is a
/// register of levels (one per 16 rows), so a block takes eight conversions and FMAs per
/// column instead of one: about twice the arithmetic of [`block_tile`], paid for results that
/// do not depend on which library computed them.
///
/// # Safety
/// As for [`Kind::tile`].
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn lane_tile<const C: usize, const AFFINE: bool>(
    panel: *const u8,
    nb: usize,
    acts: &[ActRow; C],
) -> [__m512; C] {
    let mut out = [_mm512_setzero_ps(); C];
    // two columns a pass: 16 chains and 2 minimum sums in registers
    for c in (0..C).step_by(2) {
        // SAFETY: the caller's contract.
        unsafe {
            if c + 1 < C {
                [out[c], out[c + 1]] = lane_chains::<2, AFFINE>(panel, nb, [acts[c], acts[c + 1]]);
            } else {
                [out[c]] = lane_chains::<1, AFFINE>(panel, nb, [acts[c]]);
            }
        }
    }
    out
}

/// [`lane_tile`] for `K` columns.
///
/// # Safety
/// As for [`Kind::tile`].
// Columns index the chains and activation rows together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn lane_chains<const K: usize, const AFFINE: bool>(
    panel: *const u8,
    nb: usize,
    acts: [ActRow; K],
) -> [__m512; K] {
    let mut chains = [[_mm512_setzero_ps(); 8]; K];
    let mut minimums = [_mm512_setzero_ps(); K];
    for b in 0..nb {
        // SAFETY: block b < nb of the panel, on a cache line; the activations' block b
        // (the caller's contract).
        unsafe {
            let base = panel.add(b * PANEL_BLOCK_BYTES);
            let d = _mm512_load_ps(base.add(SCALES).cast());
            let scales: [__m512; K] = std::array::from_fn(|k| _mm512_mul_ps(d, _mm512_set1_ps(*acts[k].scales.add(b))));
            for g in 0..8 {
                let w = _mm512_load_si512(base.add(LEVELS + g * 64).cast());
                let seeds = _mm512_load_si512(base.add(GROUP_SEEDS + g * 64).cast());
                for k in 0..K {
                    let y = acts[k].levels.add(b * 32 + g * 4).cast::<i32>().read_unaligned();
                    let sums = _mm512_dpbusd_epi32(seeds, _mm512_set1_epi32(y), w);
                    chains[k][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scales[k], chains[k][g]);
                }
            }
            if AFFINE {
                let m = _mm512_load_ps(base.add(MINIMUMS).cast());
                for k in 0..K {
                    minimums[k] = _mm512_fmadd_ps(m, _mm512_set1_ps(*acts[k].sums.add(b)), minimums[k]);
                }
            }
        }
    }
    std::array::from_fn(|k| {
        let s = &chains[k];
        let (s0, s1, s2, s3) = (
            _mm512_add_ps(s[0], s[4]),
            _mm512_add_ps(s[1], s[5]),
            _mm512_add_ps(s[2], s[6]),
            _mm512_add_ps(s[3], s[7]),
        );
        let total = _mm512_add_ps(_mm512_add_ps(s0, s2), _mm512_add_ps(s1, s3));
        if AFFINE { _mm512_add_ps(total, minimums[k]) } else { total }
    })
}
