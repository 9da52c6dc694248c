//! Batched products of the 32-value block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) on AVX-512
//! VNNI processors, over decoded weight panels.
//!
//! The block tiles of `dot_avx512` hold two blocks of one weight row per register, so every
//! `vpdpbusd` there is followed by a conversion and an FMA for its block pair, and every tile
//! decodes its weight blocks again. Here each thread first decodes a panel of 16 weight rows
//! into signed byte levels, interleaved four levels at a time: one register holds the same
//! four levels of all sixteen rows (a 16×16 transpose of 32-bit words per block pair). Four
//! levels of one activation row, broadcast against it, give sixteen rows' partial sums; a
//! block's eight `vpdpbusd` sum the whole block in integers, and only then is it scaled, once
//! per 16 rows and block. The panel is decoded once and then serves every column of its chunk
//! (ggml reaches the same shape by repacking the weights when they are loaded).
//!
//! `vpdpbusd` multiplies unsigned by signed bytes. The weights are the signed side here; the
//! activations are quantized to Q8_0 (Q8_1 for the affine formats) exactly as for the other
//! kernels and stored with 128 added, and the panel seeds each block's sums with `−128·Σw`,
//! which takes the offset back. The integer sums are exact, so results differ from the block
//! tiles' only in the order of the `f32` sums.
//!
//! An activation row here is its levels (32 bytes per block), then the blocks' scales as
//! `f32`, then (Q8_1) the blocks' sums `d·Σq` as `f32`.

use std::arch::x86_64::*;

use super::{ComputeParams, Tensor, ceil_div, span};
use crate::core::types::Type;
use crate::cpu::kernels::dot;
use crate::cpu::kernels::dot_avx512::{bytes_pair, five_bit_pair, nibbles_pair};
use crate::cpu::kernels::features::has_avx512;
use crate::cpu::plan::CACHE_LINE_SIZE;
use crate::quants::half::Half;
use crate::quants::q4::{BlockQ4_0, BlockQ4_1};
use crate::quants::q5::{BlockQ5_0, BlockQ5_1};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

/// Weight rows per panel: the lanes of one register of 32-bit sums.
const PANEL_ROWS: usize = 16;
/// Activation columns per pass over a panel: 8 integer and 8 float accumulators, with the
/// weight, scale and seed vectors, in 32 registers.
const TILE_COLS: usize = 8;
/// Fewer columns than this are left to the block tiles: decoding a panel costs about as much
/// as running it against a few columns.
const MIN_COLS: i64 = 8;
/// A chunk of a panel's columns, when panels alone are too few to share out, has at least
/// this many columns, to keep the decoding paid back.
const MIN_CHUNK_COLS: i64 = 32;

/// One block of a decoded panel: 8 registers of levels (four levels of each of the 16 rows
/// per register), then the rows' scales, the seeds `−128·Σw`, and the rows' minimums.
const LEVELS: usize = 0;
const SCALES: usize = 8 * 64;
const SEEDS: usize = SCALES + 64;
const MINIMUMS: usize = SEEDS + 64;
const PANEL_BLOCK_BYTES: usize = MINIMUMS + 64;

/// A weight format the panels decode.
trait Format: Copy {
    /// Whether each block adds `m·Σy` (Q4_1, Q5_1: activations in Q8_1).
    const AFFINE: bool;

    /// The signed levels of block `b` of `row` and, when `two`, of block `b + 1` (in the high
    /// half of the register; zero without it).
    ///
    /// # Safety
    /// AVX-512 (F, BW, VNNI) is available; `b < row.len()`, and `b + 1 < row.len()` when `two`.
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i;

    fn scale(&self) -> Half;

    fn minimum(&self) -> Half {
        Half::default()
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

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        centred(nibbles_pair(&lo.qs, hi.map(|h| &h.qs)), 8)
    }

    fn scale(&self) -> Half {
        self.d
    }
}

impl Format for BlockQ4_1 {
    const AFFINE: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        nibbles_pair(&lo.qs, hi.map(|h| &h.qs))
    }

    fn scale(&self) -> Half {
        self.d
    }

    fn minimum(&self) -> Half {
        self.m
    }
}

impl Format for BlockQ5_0 {
    const AFFINE: bool = false;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        centred(five_bit_pair((&lo.qs, lo.qh), hi.map(|h| (&h.qs, h.qh))), 16)
    }

    fn scale(&self) -> Half {
        self.d
    }
}

impl Format for BlockQ5_1 {
    const AFFINE: bool = true;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        five_bit_pair((&lo.qs, lo.qh), hi.map(|h| (&h.qs, h.qh)))
    }

    fn scale(&self) -> Half {
        self.d
    }

    fn minimum(&self) -> Half {
        self.m
    }
}

impl Format for BlockQ8_0 {
    const AFFINE: bool = false;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn levels(row: &[Self], b: usize, two: bool) -> __m512i {
        // SAFETY: the caller's contract.
        let (lo, hi) = unsafe { pair(row, b, two) };
        bytes_pair(&lo.qs, hi.map(|h| &h.qs))
    }

    fn scale(&self) -> Half {
        self.d
    }
}

/// Whether the panel path takes a MUL_MAT of `src0` by `src1` (before the scratch is known):
/// a format above, F32 activations, enough columns, and a processor with AVX-512 VNNI.
pub(super) fn applies(src0: &Tensor, src1: &Tensor) -> bool {
    let format = matches!(src0.type_, Type::Q4_0 | Type::Q4_1 | Type::Q5_0 | Type::Q5_1 | Type::Q8_0);
    format && src1.type_ == Type::F32 && src1.ne[1] * src1.ne[2] * src1.ne[3] >= MIN_COLS && has_avx512()
}

fn affine(ty: Type) -> bool {
    matches!(ty, Type::Q4_1 | Type::Q5_1)
}

/// Bytes of one activation row of `n` values (see the module's notes).
fn activation_row_size(n: i64, affine: bool) -> usize {
    let nb = n as usize / 32;
    nb * (32 + 4 + if affine { 4 } else { 0 })
}

/// Bytes of one thread's decoded panel for rows of `n` values.
fn panel_size(n: i64) -> usize {
    n as usize / 32 * PANEL_BLOCK_BYTES
}

/// Scratch bytes for the panel path with `n_threads` threads: the converted activations, then
/// a decoded panel per thread, on cache lines.
pub(super) fn work_size(src0: &Tensor, src1: &Tensor, n_threads: usize) -> usize {
    let acts = activation_row_size(src1.ne[0], affine(src0.type_)) * (src1.ne[1] * src1.ne[2] * src1.ne[3]) as usize;
    acts.next_multiple_of(CACHE_LINE_SIZE) + n_threads * panel_size(src0.ne[0])
}

/// `dst = src0 · src1ᵀ` on panels, with `wsize` bytes of scratch at `wdata` (a cache line
/// start); returns false, having done nothing, when the scratch is too small.
pub(super) fn mul_mat(
    params: &ComputeParams,
    dst: &Tensor,
    src0: &Tensor,
    src1: &Tensor,
    wdata: *mut u8,
    wsize: usize,
) -> bool {
    if wsize < work_size(src0, src1, params.nth) {
        return false;
    }
    match src0.type_ {
        Type::Q4_0 => run::<BlockQ4_0>(params, dst, src0, src1, wdata),
        Type::Q4_1 => run::<BlockQ4_1>(params, dst, src0, src1, wdata),
        Type::Q5_0 => run::<BlockQ5_0>(params, dst, src0, src1, wdata),
        Type::Q5_1 => run::<BlockQ5_1>(params, dst, src0, src1, wdata),
        Type::Q8_0 => run::<BlockQ8_0>(params, dst, src0, src1, wdata),
        other => crate::ggml_abort!("mul_mat: no panels for {} weights", other.name()),
    }
    true
}

/// One activation row in the panel layout.
#[derive(Clone, Copy)]
struct ActRow {
    levels: *const u8,
    scales: *const f32,
    sums: *const f32,
}

impl ActRow {
    /// Row `r` of the converted activations at `base`, rows of `n` values.
    fn at(base: *const u8, r: usize, n: i64, affine: bool) -> ActRow {
        let nb = n as usize / 32;
        let levels = base.wrapping_add(r * activation_row_size(n, affine));
        let scales = levels.wrapping_add(nb * 32).cast::<f32>();
        ActRow { levels, scales, sums: scales.wrapping_add(nb) }
    }
}

/// Converts thread `ith`'s share of `src1` into the panel layout at `wdata`: Q8_0 (Q8_1 when
/// `affine`) levels plus 128, and the scales (and sums) as `f32`.
fn convert(params: &ComputeParams, src1: &Tensor, wdata: *mut u8, affine: bool) {
    let ne = src1.ne;
    let n = ne[0];
    let nb = n as usize / 32;
    let row_size = activation_row_size(n, affine);
    super::share_rows(params, ne[1] * ne[2] * ne[3], nb as i64, |r, first, last| {
        let idx = (r % ne[1], (r / ne[1]) % ne[2], r / (ne[1] * ne[2]));
        let (first, last) = (first as usize, last as usize);
        let mut buf = Vec::new();
        let x = span::<f32>(src1, idx, first * 32, (last - first) * 32, &mut buf);
        // SAFETY: row r lies inside the activations' part of the scratch (work_size), and
        // this thread alone writes blocks first..last of it (shares are disjoint) until the
        // barrier after the conversion.
        let row = unsafe { std::slice::from_raw_parts_mut(wdata.add(r as usize * row_size), row_size) };
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
        if affine {
            let mut blocks = vec![BlockQ8_1::default(); last - first];
            dot::quantize_row_q8_1(x, &mut blocks);
            for (b, blk) in (first..).zip(&blocks) {
                store(b, &blk.qs, blk.d, Some(blk.s));
            }
        } else {
            let mut blocks = vec![BlockQ8_0::default(); last - first];
            dot::quantize_row_q8_0(x, &mut blocks);
            for (b, blk) in (first..).zip(&blocks) {
                store(b, &blk.qs, blk.d, None);
            }
        }
    });
}

/// Which panel a thread's scratch holds: the matrix's byte offset and the panel's index.
type PanelKey = (usize, i64);

fn run<F: Format>(params: &ComputeParams, dst: &Tensor, src0: &Tensor, src1: &Tensor, wdata: *mut u8) {
    let n = src0.ne[0];
    convert(params, src1, wdata, F::AFFINE);
    params.barrier();

    let nb = n as usize / 32;
    let (ne1, ne2) = (src1.ne[1], src1.ne[2]);
    let (r2, r3) = (src1.ne[2] / src0.ne[2], src1.ne[3] / src0.ne[3]);
    let nr1 = ne1 * ne2 * src1.ne[3];
    let acts_size = activation_row_size(n, F::AFFINE) * nr1 as usize;
    // SAFETY: work_size put one panel per thread after the activations, on a cache line.
    let panel = unsafe { wdata.add(acts_size.next_multiple_of(CACHE_LINE_SIZE) + params.ith * panel_size(n)) };

    let rows = src0.ne[1];
    let panels = ceil_div(rows, PANEL_ROWS as i64);
    let nth = params.nth as i64;
    let groups = ceil_div(4 * nth, panels).clamp(1, (nr1 / MIN_CHUNK_COLS).max(1));
    let group_cols = ceil_div(nr1, groups);
    let total = (panels * groups) as usize;

    let mut decoded: Option<PanelKey> = None;
    let mut chunk = params.ith;
    while chunk < total {
        let (p, g) = (chunk as i64 / groups, chunk as i64 % groups);
        let first_row = p * PANEL_ROWS as i64;
        let nrows = (rows - first_row).min(PANEL_ROWS as i64) as usize;
        let cols = g * group_cols..((g + 1) * group_cols).min(nr1);
        let mut tile: [Option<(ActRow, *mut f32)>; TILE_COLS] = [None; TILE_COLS];
        let mut count = 0;
        let mut tile_matrix = None;
        for ir1 in cols.clone() {
            let (i11, i12, i13) = (ir1 % ne1, (ir1 / ne1) % ne2, ir1 / (ne1 * ne2));
            let matrix = (i12 / r2) as usize * src0.nb[2] + (i13 / r3) as usize * src0.nb[3];
            if count == TILE_COLS || tile_matrix.is_some_and(|m| m != matrix) {
                // SAFETY: the panel holds `matrix`'s rows (decoded below before the columns
                // were collected); the destinations are this chunk's own.
                unsafe { run_tile(panel, nb, nrows, &tile[..count], F::AFFINE) };
                count = 0;
            }
            if decoded != Some((matrix, p)) {
                // SAFETY: the panel's scratch is this thread's alone; the rows exist in src0.
                unsafe { decode::<F>(src0, matrix, first_row, nrows, panel) };
                decoded = Some((matrix, p));
            }
            tile_matrix = Some(matrix);
            let dst_off = i11 as usize * dst.nb[1] + i12 as usize * dst.nb[2] + i13 as usize * dst.nb[3];
            let out = dst.data.cast::<u8>().wrapping_add(dst_off).cast::<f32>().wrapping_add(first_row as usize);
            tile[count] = Some((ActRow::at(wdata, ir1 as usize, n, F::AFFINE), out));
            count += 1;
        }
        // SAFETY: as above.
        unsafe { run_tile(panel, nb, nrows, &tile[..count], F::AFFINE) };
        if params.nth >= total {
            break;
        }
        chunk = params.next_chunk();
    }
}

/// Decodes rows `first..first + nrows` of the matrix at byte `matrix` of `src0` into `panel`
/// (rows past `nrows` read as zero).
///
/// # Safety
/// `panel` holds [`panel_size`] bytes on a cache line, written by nobody else; the rows exist.
unsafe fn decode<F: Format>(src0: &Tensor, matrix: usize, first: i64, nrows: usize, panel: *mut u8) {
    let nb = src0.ne[0] as usize / 32;
    let mut rows: [&[F]; PANEL_ROWS] = [&[]; PANEL_ROWS];
    for (k, row) in rows[..nrows].iter_mut().enumerate() {
        let offset = matrix + (first as usize + k) * src0.nb[1];
        // SAFETY: an existing row of nb blocks of F (packed rows, checked by mul_mat), read only.
        *row = unsafe { std::slice::from_raw_parts(src0.data.cast::<u8>().add(offset).cast::<F>(), nb) };
    }
    // SAFETY: AVX-512 was checked by `applies`; the caller's contract.
    unsafe { decode_rows(&rows[..nrows], nb, panel) }
}

/// # Safety
/// AVX-512; every row holds `nb` blocks; `panel` holds `nb` panel blocks on a cache line.
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
            let mut sums = _mm512_setzero_si512();
            for (g, &w) in words[half * 8..half * 8 + 8].iter().enumerate() {
                // SAFETY: inside the panel block, on a cache line.
                unsafe { _mm512_store_si512(base.add(LEVELS + g * 64).cast(), w) };
                sums = _mm512_dpbusd_epi32(sums, ones, w);
            }
            let seeds = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32::<7>(sums));
            let (mut d, mut m) = ([0u16; PANEL_ROWS], [0u16; PANEL_ROWS]);
            for (r, row) in rows.iter().enumerate() {
                // SAFETY: blk < nb.
                let block = unsafe { row.get_unchecked(blk) };
                d[r] = block.scale().bits();
                m[r] = block.minimum().bits();
            }
            // SAFETY: inside the panel block, on cache lines; the arrays hold 16 halves.
            unsafe {
                _mm512_store_si512(base.add(SEEDS).cast(), seeds);
                _mm512_store_ps(base.add(SCALES).cast(), _mm512_cvtph_ps(_mm256_loadu_si256(d.as_ptr().cast())));
                _mm512_store_ps(base.add(MINIMUMS).cast(), _mm512_cvtph_ps(_mm256_loadu_si256(m.as_ptr().cast())));
            }
        }
        b += 2;
    }
}

/// The 16×16 transpose of 32-bit words: word `j` of row `r` becomes word `r` of row `j`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn transpose(r: [__m512i; 16]) -> [__m512i; 16] {
    // Within 128-bit lanes: pairs of rows interleaved, then quads, so that register 4q + c
    // holds, in lane L, word 4L + c of rows 4q..4q+3.
    let mut a = r;
    for i in 0..8 {
        a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    let mut q = a;
    for i in 0..4 {
        q[4 * i] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
        q[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
        q[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        q[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
    }
    // Across lanes: word 4L + c of all rows gathers lane L of q[c], q[4 + c], q[8 + c], q[12 + c].
    let mut t = q;
    for c in 0..4 {
        let e = _mm512_shuffle_i32x4::<0b01_00_01_00>(q[c], q[4 + c]);
        let f = _mm512_shuffle_i32x4::<0b11_10_11_10>(q[c], q[4 + c]);
        let g = _mm512_shuffle_i32x4::<0b01_00_01_00>(q[8 + c], q[12 + c]);
        let h = _mm512_shuffle_i32x4::<0b11_10_11_10>(q[8 + c], q[12 + c]);
        t[c] = _mm512_shuffle_i32x4::<0b10_00_10_00>(e, g);
        t[4 + c] = _mm512_shuffle_i32x4::<0b11_01_11_01>(e, g);
        t[8 + c] = _mm512_shuffle_i32x4::<0b10_00_10_00>(f, h);
        t[12 + c] = _mm512_shuffle_i32x4::<0b11_01_11_01>(f, h);
    }
    t
}

/// Runs the decoded panel against up to [`TILE_COLS`] columns and stores its first `nrows`
/// results at each column's destination.
///
/// # Safety
/// AVX-512; the panel holds `nb` decoded blocks; each column's activation row holds `nb`
/// blocks in the panel layout, and its destination `nrows` floats no other thread writes.
unsafe fn run_tile(panel: *const u8, nb: usize, nrows: usize, cols: &[Option<(ActRow, *mut f32)>], affine: bool) {
    macro_rules! arm {
        ($c:literal) => {{
            let acts: [ActRow; $c] = std::array::from_fn(|k| cols[k].expect("a column").0);
            // SAFETY: the caller's contract.
            let sums = unsafe {
                if affine { tile::<$c, true>(panel, nb, &acts) } else { tile::<$c, false>(panel, nb, &acts) }
            };
            for (k, s) in sums.iter().enumerate() {
                let out = cols[k].expect("a column").1;
                // SAFETY: nrows floats of this column's destination (the caller's contract).
                unsafe { store(out, *s, nrows) };
            }
        }};
    }
    match cols.len() {
        0 => {}
        1 => arm!(1),
        2 => arm!(2),
        3 => arm!(3),
        4 => arm!(4),
        5 => arm!(5),
        6 => arm!(6),
        7 => arm!(7),
        8 => arm!(8),
        n => crate::ggml_abort!("mul_mat: {} columns in a panel tile", n),
    }
}

/// Stores the first `nrows` lanes of `v` at `out`.
///
/// # Safety
/// AVX-512; `out` holds `nrows` floats.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn store(out: *mut f32, v: __m512, nrows: usize) {
    let mask = if nrows >= PANEL_ROWS { u16::MAX } else { (1u16 << nrows) - 1 };
    // SAFETY: the caller's contract; masked-off lanes are not written.
    unsafe { _mm512_mask_storeu_ps(out, mask, v) };
}

/// The panel's 16 rows by `C` activation rows.
///
/// # Safety
/// As for [`run_tile`].
// Columns index the accumulators and activation rows together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn tile<const C: usize, const AFFINE: bool>(panel: *const u8, nb: usize, acts: &[ActRow; C]) -> [__m512; C] {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_moves_word_j_of_row_r_to_word_r_of_row_j() {
        if !has_avx512() {
            return;
        }
        let rows: [[i32; 16]; 16] = std::array::from_fn(|r| std::array::from_fn(|j| (r * 100 + j) as i32));
        // SAFETY: AVX-512 was checked; each array holds 16 words.
        let out: [[i32; 16]; 16] = unsafe {
            let t = transpose(rows.map(|r| _mm512_loadu_si512(r.as_ptr().cast())));
            t.map(|v| std::mem::transmute::<__m512i, [i32; 16]>(v))
        };
        for r in 0..16 {
            for j in 0..16 {
                assert_eq!(out[j][r], rows[r][j]);
            }
        }
    }
}
