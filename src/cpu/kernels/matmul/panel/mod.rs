//! Batched products over decoded weight panels, on AVX-512 VNNI processors, and for float
//! weights on AVX2 processors.
//!
//! The dot-product tiles of `x86::avx512` hold several values of one weight row per register:
//! every register of products ends in a horizontal sum (floats) or in a conversion and an FMA
//! per block pair (blocks), and every tile decodes its weights again. Here each thread first
//! decodes a panel of 16 weight rows into a layout where one register (two AVX2 registers)
//! holds the same values of all sixteen rows (a transpose); activation values broadcast
//! against it give sixteen rows' sums at once, in the lanes where they are stored. A panel is
//! decoded once and then serves every column of its chunk, so the decoding is paid back over a
//! batch; ggml reaches the same shape by repacking weights when they are loaded.
//!
//! [`blocks`] holds the formats with a scale per 32 values (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL,
//! MXFP4) or per block of such units (Q1_0, Q2_0),
//! [`kquants`] the super-block formats with Q8_K activations (Q2_K to Q6_K, IQ4_XS,
//! the grid I-quants and the ternary formats),
//! [`floats`] the F32, F16 and BF16 weights, [`bf16_pairs`] BF16 weights on processors
//! with AVX512-BF16, [`avx2_floats`] F32 and F16 weights in AVX2 registers; `with_kind!` is the
//! one list of them. This module shares the work out: chunks of one panel by a range of
//! columns, taken from the team's counter, each thread decoding into its own part of the
//! scratch after the activations (converted into the kind's layout first).

mod avx2_floats;
mod bf16_pairs;
mod blocks;
mod floats;
mod kquants;

use std::arch::x86_64::*;

use super::{ColumnIndex, ComputeParams, Tensor, ceil_div, share_rows, span};
use crate::core::types::Type;
use crate::cpu::features::features;
use crate::cpu::plan::CACHE_LINE_SIZE;
use crate::cpu::repack::is_repacked;
use crate::cpu::repack::layout::GROUP_ROWS;

/// Weight rows per panel: the lanes of one register.
const PANEL_ROWS: usize = 16;
/// Fewer columns than this are left to the dot-product tiles: decoding a panel costs about as
/// much as running it against a few columns.
const MIN_COLS: i64 = 8;
/// Fewer columns than this of repacked float weights are left to the repacked tiles, which
/// read the groups as they are. The float layouts of CPU_REPACK hold what a panel holds, so a
/// panel is a copy or a widening of a group, which the panels' tiles pay back from 128 columns
/// on Zen 4 (F16 1024×2816, one thread, by 128: 7.8 ms repacked, 7.6 on panels; by 512: 35.3
/// and 28.6; by 64, two threads: 2.0 and 2.2) and from 64 on Intel cores, where the repacked
/// tiles' broadcasts cost more (Emerald Rapids, 2816×1024 by 64, ms, repacked against panels:
/// F32 3.8/3.2 at one thread, 2.8/2.0 at two; F16 3.3/3.0, 2.5/1.8; BF16 4.6/2.9, 2.7/1.7;
/// by 32 they were even).
fn min_group_cols() -> i64 {
    if crate::cpu::features::features().intel { 64 } else { 128 }
}
/// A chunk of a panel's columns, when panels alone are too few to share out, has at least
/// this many columns, to keep the decoding paid back. (At 32, an F32 product of 256 rows of
/// 1024 by 64 columns split its columns in two and decoded every panel twice: 433 µs at one
/// thread against 381 µs at 64, ggml's 383.)
const MIN_CHUNK_COLS: i64 = 64;

/// The registers a kind's tiles sum in, and the instruction set its functions need.
trait Isa {
    /// The sums of a panel's 16 rows against one column.
    type Sums: Copy;

    /// Runs the decoded panel against up to [`Kind::TILE_COLS`] columns and stores its first
    /// `nrows` results at each column's destination (adding them to what is there when
    /// `accumulate`).
    ///
    /// # Safety
    /// This processor has the instruction set; as for [`Kind::tile`]; each destination holds
    /// `nrows` floats no other thread writes.
    unsafe fn run_tile<K: Kind<Isa = Self>>(
        panel: *const u8,
        n: usize,
        nrows: usize,
        cols: &[Column],
        accumulate: bool,
    );
}

/// A family of weight formats and the layouts its panels and activations take.
trait Kind {
    /// The instruction set of its functions: the safety contract of each `unsafe` one below
    /// includes that this processor has it.
    type Isa: Isa;
    /// Activation columns per pass over a panel (at most [`MAX_TILE_COLS`]).
    const TILE_COLS: usize;
    /// Values of an activation row converted as one unit.
    const UNIT: usize;
    /// Values of the rows one pass covers when activations are taken a span at a time (see
    /// [`span_len`]), a multiple of `UNIT` (and of 16); `usize::MAX` for kinds that never are.
    const SPAN: usize;

    /// Bytes of the converted activations of `cols` columns of `n` values.
    fn activations_size(n: usize, cols: usize) -> usize;

    /// Where values `start..` of column `col` (of `n` values) begin in the activations at
    /// `acts`; `start` is 0 or a multiple of [`Kind::SPAN`].
    fn activation(acts: *mut u8, n: usize, col: usize, start: usize) -> *mut u8;

    /// Bytes of one decoded panel for weight rows of `n` values.
    fn panel_size(n: usize) -> usize;

    /// Converts `x`, units `first..` of a column of `n` values, into the column's activations
    /// at `at` (its [`Kind::activation`] from 0).
    ///
    /// # Safety
    /// `at` is a column's place in activations of [`Kind::activations_size`] bytes, whose
    /// units `first..` covered by `x` no other thread touches meanwhile.
    unsafe fn convert(x: &[f32], n: usize, first: usize, at: *mut u8);

    /// Decodes `rows` (at most [`PANEL_ROWS`], of `n` values each, starting at their
    /// pointers) into `panel`; rows past the last read as zero.
    ///
    /// # Safety
    /// Each pointer starts a row of `n` values of the weights' type; `panel` holds
    /// [`Kind::panel_size`] bytes on a cache line.
    unsafe fn decode(rows: &[*const u8], n: usize, panel: *mut u8);

    /// Sums the panel against each column's activation row; returns the 16 rows' results
    /// per column.
    ///
    /// # Safety
    /// The panel holds a decoded panel of rows of `n` values; each activation row
    /// holds `n` values in the kind's layout; the columns are consecutive columns of one group
    /// of [`Kind::TILE_COLS`] (kinds that interleave a group's activations read them all from
    /// the first column's place).
    unsafe fn tile<const C: usize>(panel: *const u8, n: usize, acts: &[*const u8; C]) -> [<Self::Isa as Isa>::Sums; C];
}

/// A [`Kind`] whose panels can also be made from weights in the CPU_REPACK layout, where a
/// group of 16 rows keeps each value (or pair of values) of its rows together
/// ([`crate::cpu::repack::layout`]): the AVX-512 float kinds.
trait FromGroups: Kind {
    /// Decodes `n` values of a group's rows, from its chunk at `group`, into `panel`.
    ///
    /// # Safety
    /// `group` starts the chunks of `n` values of a group of the weights' type;
    /// `panel` holds [`Kind::panel_size`] bytes on a cache line.
    unsafe fn decode_group(group: *const u8, n: usize, panel: *mut u8);
}

/// How a thread makes the panel of `nrows` rows of `src0` from `first`, the first row's
/// place, over `span` of the rows: from plain rows ([`from_rows`]) or from a repacked group
/// ([`from_group`]).
///
/// # Safety
/// The kind's instruction set; the rows exist in `src0` (whole groups where repacked); `panel` is this thread's
/// panel, of [`Kind::panel_size`] bytes for the span on a cache line.
type Decode = unsafe fn(src0: &Tensor, first: *const u8, nrows: usize, span: Span, panel: *mut u8);

/// [`Decode`] of plain rows, each from its own place.
///
/// # Safety
/// As for [`Decode`].
unsafe fn from_rows<K: Kind>(src0: &Tensor, first: *const u8, nrows: usize, span: Span, panel: *mut u8) {
    let skip = src0.type_.row_size(span.start as i64);
    let starts: [*const u8; PANEL_ROWS] = std::array::from_fn(|k| first.wrapping_add(k * src0.nb[1] + skip));
    // SAFETY: the caller's contract.
    unsafe { K::decode(&starts[..nrows], span.len, panel) }
}

/// [`Decode`] of a repacked group, which holds its rows' bytes value (or pair) by value across
/// the rows.
///
/// # Safety
/// As for [`Decode`].
unsafe fn from_group<K: FromGroups>(src0: &Tensor, first: *const u8, _nrows: usize, span: Span, panel: *mut u8) {
    let skip = src0.type_.row_size(span.start as i64);
    // SAFETY: the caller's contract.
    unsafe { K::decode_group(first.wrapping_add(GROUP_ROWS * skip), span.len, panel) }
}

/// Panels per task when rows are taken a span at a time: each span of the activations is read
/// by so many panels in turn.
const PANELS_PER_TASK: i64 = 32;

/// Converted activations above this size are taken a span at a time: a part of a
/// last-level cache.
const SPAN_ACTIVATIONS: usize = 8 << 20;

/// Values of the rows that one pass over the panels covers, for `cols` activation rows of `n`.
///
/// A tile streams its columns' activations and its panel from memory in long runs, which the
/// hardware prefetchers follow well; cutting the rows shortens the runs and adds a pass per
/// span. That pays only when the activations do not stay in the last-level cache across the
/// panels: for F16 weights of 4096 rows by 512 columns, one thread, spans of 512 values cost
/// 10% at rows of 4096 and 16% at 2816 against whole rows, while at 14336 (29 MB of
/// activations) spans of 2048 over 32 panels took 1.11× less time than whole rows.
fn span_len<K: Kind>(n: usize, cols: usize) -> usize {
    if n > K::SPAN && K::activations_size(n, cols) > SPAN_ACTIVATIONS { K::SPAN } else { n }
}

/// The most columns of any kind's tile.
const MAX_TILE_COLS: usize = 12;

/// `with_avx512_kind!` for the float weights, whose kinds also read repacked groups
/// ([`FromGroups`]); `None` for other weights.
macro_rules! with_float_kind {
    ($src0:expr, $f:ident($($args:expr),*)) => {
        match $src0.type_ {
            Type::BF16 if bf16_pairs::applies($src0.ne[0]) => Some($f::<bf16_pairs::Bf16Pairs>($($args),*)),
            Type::F32 => Some($f::<floats::Floats<f32>>($($args),*)),
            Type::F16 => Some($f::<floats::Floats<u16>>($($args),*)),
            Type::BF16 => Some($f::<floats::Floats<crate::quants::half::Bf16>>($($args),*)),
            _ => None,
        }
    };
}

/// `Some($f::<Kind>($args))` with the AVX-512 kind of the weights `src0`, `None` for weights
/// without one: the one list of the types the panels take from plain rows. (Written out rather than
/// generated from `quants::formats`: a panel kind is an optimisation, NVFP4 has none, and the
/// weights without one are multiplied through their dot products' tiles.)
///
/// Plain BF16 rows are left to the dot-product tiles, which sum in ggml's order (tinyBLAS's):
/// their activations are rounded to BF16, 8 bits, so a product summed in another order turns
/// into another rounding of the next layer's activations now and then, and over a model into
/// a visibly different result (mean KL divergence 1.3e-4 from the reference over
/// scripts/llama-quality's text, against 0 in ggml's order). Repacked BF16 weights, which have
/// no counterpart in ggml's x86 build, keep the panels.
macro_rules! with_avx512_kind {
    ($src0:expr, $f:ident($($args:expr),*)) => {
        match $src0.type_ {
            Type::F32 | Type::F16 => with_float_kind!($src0, $f($($args),*)),
            Type::Q4_0 => Some($f::<blocks::Blocks<crate::quants::q4::BlockQ4_0>>($($args),*)),
            Type::Q4_1 => Some($f::<blocks::Blocks<crate::quants::q4::BlockQ4_1>>($($args),*)),
            Type::Q5_0 => Some($f::<blocks::Blocks<crate::quants::q5::BlockQ5_0>>($($args),*)),
            Type::Q5_1 => Some($f::<blocks::Blocks<crate::quants::q5::BlockQ5_1>>($($args),*)),
            Type::Q8_0 => Some($f::<blocks::Blocks<crate::quants::q8::BlockQ8_0>>($($args),*)),
            Type::IQ4_NL => Some($f::<blocks::Blocks<crate::quants::iq4::BlockIq4Nl>>($($args),*)),
            Type::MXFP4 => Some($f::<blocks::Blocks<crate::quants::fp4::BlockMxfp4>>($($args),*)),
            Type::Q1_0 => Some($f::<blocks::Blocks<crate::quants::low_bit::BlockQ1_0>>($($args),*)),
            Type::Q2_0 => Some($f::<blocks::Blocks<crate::quants::low_bit::BlockQ2_0>>($($args),*)),
            Type::Q2_K => Some($f::<kquants::KQuants<crate::quants::k_quants::BlockQ2K>>($($args),*)),
            Type::IQ4_XS => Some($f::<kquants::KQuants<crate::quants::iq4::BlockIq4Xs>>($($args),*)),
            Type::Q3_K => Some($f::<kquants::KQuants<crate::quants::k_quants::BlockQ3K>>($($args),*)),
            Type::Q4_K => Some($f::<kquants::KQuants<crate::quants::k_quants::BlockQ4K>>($($args),*)),
            Type::Q5_K => Some($f::<kquants::KQuants<crate::quants::k_quants::BlockQ5K>>($($args),*)),
            Type::Q6_K => Some($f::<kquants::KQuants<crate::quants::k_quants::BlockQ6K>>($($args),*)),
            Type::IQ1_S => Some($f::<kquants::KQuants<crate::quants::iq1::BlockIq1S>>($($args),*)),
            Type::IQ1_M => Some($f::<kquants::KQuants<crate::quants::iq1::BlockIq1M>>($($args),*)),
            Type::IQ2_XXS => Some($f::<kquants::KQuants<crate::quants::iq2::BlockIq2Xxs>>($($args),*)),
            Type::IQ2_XS => Some($f::<kquants::KQuants<crate::quants::iq2::BlockIq2Xs>>($($args),*)),
            Type::IQ2_S => Some($f::<kquants::KQuants<crate::quants::iq2::BlockIq2S>>($($args),*)),
            Type::IQ3_XXS => Some($f::<kquants::KQuants<crate::quants::iq3::BlockIq3Xxs>>($($args),*)),
            Type::IQ3_S => Some($f::<kquants::KQuants<crate::quants::iq3::BlockIq3S>>($($args),*)),
            Type::TQ1_0 => Some($f::<kquants::KQuants<crate::quants::ternary::BlockTq1_0>>($($args),*)),
            Type::TQ2_0 => Some($f::<kquants::KQuants<crate::quants::ternary::BlockTq2_0>>($($args),*)),
            _ => None,
        }
    };
}

/// `Some($f::<Kind>($args))` with the kind of the weights `src0` on this processor, `None` for
/// weights without one: `with_avx512_kind!` where AVX-512 VNNI is, else the AVX2 kinds of the
/// F32 and F16 weights. (The block formats' AVX2 dot-product tiles sum whole blocks in
/// integers, as ggml's do, which a panel in AVX2 registers would not beat by as much as their
/// AVX-512 panels do.)
macro_rules! with_kind {
    ($src0:expr, $f:ident($($args:expr),*)) => {
        if features().has_avx512() {
            with_avx512_kind!($src0, $f($($args),*))
        } else if features().has_avx2_fma() {
            match $src0.type_ {
                Type::F32 => Some($f::<avx2_floats::Floats<f32>>($($args),*)),
                Type::F16 => Some($f::<avx2_floats::Floats<u16>>($($args),*)),
                _ => None,
            }
        } else {
            None
        }
    };
}

/// `with_kind!` for weights [`applies`] has accepted.
macro_rules! of_kind {
    ($src0:expr, $f:ident($($args:expr),*)) => {
        with_kind!($src0, $f($($args),*))
            .unwrap_or_else(|| crate::ggml_abort!("mul_mat: no panels for {} weights", $src0.type_.name()))
    };
}

/// Whether the panel route takes a MUL_MAT of `src0` by `src1` (before the scratch is known):
/// weights of a kind on this processor (repacked ones of a kind that reads groups), F32
/// activations and enough columns per weight matrix.
///
/// A panel serves the columns of its own matrix only, so what pays its decoding back is the
/// columns each matrix meets, not all of them: generation's attention (one token, the query
/// heads broadcast over fewer K and V heads) has 16 columns in all but 4 per matrix.
pub(super) fn applies(src0: &Tensor, src1: &Tensor) -> bool {
    fn any<K: Kind>() {}
    let (kind, min_cols) = if is_repacked(src0) {
        // (weights are repacked only where AVX-512 is)
        (features().has_avx512().then(|| with_float_kind!(src0, any())).flatten(), min_group_cols())
    } else {
        (with_kind!(src0, any()), MIN_COLS)
    };
    let per_matrix = src1.ne[1] * (src1.ne[2] / src0.ne[2]) * (src1.ne[3] / src0.ne[3]);
    kind.is_some() && src1.type_ == Type::F32 && per_matrix >= min_cols
}

/// Scratch bytes for the panel route with `n_threads` threads: the converted activations, then
/// a decoded panel per thread, on cache lines.
pub(super) fn work_size(src0: &Tensor, src1: &Tensor, n_threads: usize) -> usize {
    fn size<K: Kind>(n: usize, cols: usize, n_threads: usize) -> usize {
        K::activations_size(n, cols).next_multiple_of(CACHE_LINE_SIZE)
            + n_threads * K::panel_size(span_len::<K>(n, cols))
    }
    let cols = (src1.ne[1] * src1.ne[2] * src1.ne[3]) as usize;
    let n = src0.ne[0] as usize;
    if is_repacked(src0) {
        return with_float_kind!(src0, size(n, cols, n_threads)).unwrap_or(0);
    }
    of_kind!(src0, size(n, cols, n_threads))
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
    fn rows<K: Kind>(params: &ComputeParams, dst: &Tensor, src0: &Tensor, src1: &Tensor, wdata: *mut u8) {
        run::<K>(params, dst, src0, src1, wdata, from_rows::<K>);
    }
    fn groups<K: FromGroups>(params: &ComputeParams, dst: &Tensor, src0: &Tensor, src1: &Tensor, wdata: *mut u8) {
        run::<K>(params, dst, src0, src1, wdata, from_group::<K>);
    }
    if is_repacked(src0) {
        with_float_kind!(src0, groups(params, dst, src0, src1, wdata))
            .unwrap_or_else(|| crate::ggml_abort!("mul_mat: no panels for repacked {} weights", src0.type_.name()));
    } else {
        of_kind!(src0, rows(params, dst, src0, src1, wdata));
    }
    true
}

/// Values of a column converted before the next column of its group: a stretch of the
/// interleaved activations small enough to stay in the first-level cache over the group.
const CONVERT_STRETCH: usize = 256;

/// Converts thread `ith`'s share of `src1` into the kind's activation rows at `wdata`.
///
/// Threads take whole groups of [`Kind::TILE_COLS`] columns, which the float kinds interleave
/// value by value: column by column, two threads would write the same cache lines by turns
/// (F32 2816×1024 by 512 at two threads: the conversion took 11% of the products' time in
/// llama, 7% at one). Within a group, a stretch of each column is converted before the next
/// stretch, so the lines a stretch fills are written by all the group's columns while cached.
fn convert<K: Kind>(params: &ComputeParams, src1: &Tensor, wdata: *mut u8) {
    let ne = src1.ne;
    let n = ne[0] as usize;
    let cols = ne[1] * ne[2] * ne[3];
    let group = K::TILE_COLS as i64;
    let stretch = (CONVERT_STRETCH / K::UNIT).max(1);
    share_rows(params, ceil_div(cols, group), (n / K::UNIT) as i64, |g, first, last| {
        let (first, last) = (first as usize, last as usize);
        let mut buf = Vec::new();
        for part in (first..last).step_by(stretch) {
            let end = (part + stretch).min(last);
            for r in g * group..((g + 1) * group).min(cols) {
                let idx = (r % ne[1], (r / ne[1]) % ne[2], r / (ne[1] * ne[2]));
                let x = span::<f32>(src1, idx, part * K::UNIT, (end - part) * K::UNIT, &mut buf);
                // SAFETY: column r lies inside the activations' part of the scratch
                // (work_size), and this thread alone writes units first..last of its group's
                // columns (shares are disjoint) until the barrier after the conversion.
                unsafe { K::convert(x, n, part, K::activation(wdata, n, r as usize, 0)) };
            }
        }
    });
}

/// A column of a tile: its activation row and the first of its panel's results in `dst`.
type Column = (*const u8, *mut f32);

/// Values `start..start + len` of the rows: the part of them one pass over the panels covers.
#[derive(Clone, Copy, PartialEq)]
struct Span {
    start: usize,
    len: usize,
}

fn run<K: Kind>(params: &ComputeParams, dst: &Tensor, src0: &Tensor, src1: &Tensor, wdata: *mut u8, decode: Decode) {
    convert::<K>(params, src1, wdata);
    params.barrier();

    let n = src0.ne[0] as usize;
    let nr1 = src1.ne[1] * src1.ne[2] * src1.ne[3];
    let panels = ceil_div(src0.ne[1], PANEL_ROWS as i64);
    // Rows longer than a span are taken a span at a time, a task running several panels
    // against each span of its columns in turn: the span of the activations stays in cache
    // over those panels.
    let span_len = span_len::<K>(n, nr1 as usize);
    let per_task = if span_len < n { PANELS_PER_TASK } else { 1 };
    let blocks = ceil_div(panels, per_task);
    let nth = params.nth as i64;
    let groups = ceil_div(4 * nth, blocks).clamp(1, (nr1 / MIN_CHUNK_COLS).max(1));
    // whole tiles per group, tiles never straddling a multiple of TILE_COLS (see `chunk`)
    let group_cols = (ceil_div(nr1, groups) as usize).next_multiple_of(K::TILE_COLS) as i64;
    let groups = ceil_div(nr1, group_cols);
    let acts_size = K::activations_size(n, nr1 as usize).next_multiple_of(CACHE_LINE_SIZE);
    let pass = Pass {
        decode,
        dst,
        src0,
        src1,
        acts: wdata,
        // SAFETY: work_size put one panel per thread after the activations, on a cache line.
        panel: unsafe { wdata.add(acts_size + params.ith * K::panel_size(span_len)) },
        group_cols,
    };
    let tasks = (blocks * groups) as usize;

    // tasks handed out as threads come for them
    let mut decoded = None;
    let mut task = params.ith;
    while task < tasks {
        let (b, g) = (task as i64 / groups, task as i64 % groups);
        for start in (0..n).step_by(span_len) {
            let span = Span { start, len: span_len.min(n - start) };
            for p in b * per_task..((b + 1) * per_task).min(panels) {
                pass.chunk::<K>(p, g, span, &mut decoded);
            }
        }
        if params.nth >= tasks {
            break;
        }
        task = params.next_chunk();
    }
}

/// What every chunk of a product shares.
struct Pass<'a> {
    decode: Decode,
    dst: &'a Tensor,
    src0: &'a Tensor,
    src1: &'a Tensor,
    /// The converted activation rows.
    acts: *mut u8,
    /// This thread's panel.
    panel: *mut u8,
    /// Columns per group.
    group_cols: i64,
}

/// The panel a thread's scratch holds: the matrix's byte offset, the panel's index, the span.
type Decoded = Option<(usize, i64, Span)>;

impl Pass<'_> {
    /// Runs panel `p` against column group `g` over `span` of the rows, adding to the results
    /// of the earlier spans.
    fn chunk<K: Kind>(&self, p: i64, g: i64, span: Span, decoded: &mut Decoded) {
        let (src0, src1, dst) = (self.src0, self.src1, self.dst);
        let (ne1, ne2) = (src1.ne[1], src1.ne[2]);
        let (r2, r3) = (src1.ne[2] / src0.ne[2], src1.ne[3] / src0.ne[3]);
        let nr1 = ne1 * ne2 * src1.ne[3];
        let n = src0.ne[0] as usize;
        let accumulate = span.start > 0;

        let first_row = p * PANEL_ROWS as i64;
        let nrows = (src0.ne[1] - first_row).min(PANEL_ROWS as i64) as usize;
        let mut tile: [Column; MAX_TILE_COLS] = [(std::ptr::null(), std::ptr::null_mut()); MAX_TILE_COLS];
        let mut count = 0;
        let mut tile_matrix = None;
        let cols = g * self.group_cols..((g + 1) * self.group_cols).min(nr1);
        let mut at = ColumnIndex::at(cols.start, ne1, ne2);
        let mut of = (-1, -1, 0);
        for ir1 in cols {
            // (the weights' matrix changes with the column's matrix only: no divisions per column)
            if (at.i12, at.i13) != (of.0, of.1) {
                of = (at.i12, at.i13, (at.i12 / r2) as usize * src0.nb[2] + (at.i13 / r3) as usize * src0.nb[3]);
            }
            let matrix = of.2;
            // a tile's columns lie within one multiple of TILE_COLS, as kinds that interleave
            // the activations of so many columns want
            if (ir1 as usize).is_multiple_of(K::TILE_COLS) || tile_matrix.is_some_and(|m| m != matrix) {
                // SAFETY: the panel holds the tile's matrix's rows; the destinations are this
                // chunk's own.
                unsafe { <K::Isa as Isa>::run_tile::<K>(self.panel, span.len, nrows, &tile[..count], accumulate) };
                count = 0;
            }
            if *decoded != Some((matrix, p, span)) {
                let first = src0.data.cast::<u8>().wrapping_add(matrix + first_row as usize * src0.nb[1]).cast_const();
                // SAFETY: the kind's instruction set was checked by `applies`; the rows exist in src0 (packed
                // rows, checked by mul_mat; whole groups where repacked); the panel's scratch
                // is this thread's alone.
                unsafe { (self.decode)(src0, first, nrows, span, self.panel) };
                *decoded = Some((matrix, p, span));
            }
            tile_matrix = Some(matrix);
            let out = dst.data.cast::<u8>().wrapping_add(at.offset(dst)).cast::<f32>().wrapping_add(first_row as usize);
            tile[count] = (K::activation(self.acts, n, ir1 as usize, span.start).cast_const(), out);
            count += 1;
            at.advance();
        }
        // SAFETY: as above.
        unsafe { <K::Isa as Isa>::run_tile::<K>(self.panel, span.len, nrows, &tile[..count], accumulate) };
    }
}

/// Fetches each column's destination for writing, before a tile stores its results there: a
/// chunk writes one cache line per column, each in another page, a pattern no prefetcher
/// follows, and waiting for each line at the store cost as much as the products (measured: 22 %
/// of a Q4_0 prompt's time).
#[inline(always)]
fn prefetch_destinations(cols: &[Column], nrows: usize) {
    for col in cols {
        let last = col.1.wrapping_add(nrows.saturating_sub(1));
        // SAFETY: prefetching reads nothing and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_ET0>(col.1.cast()) };
        if (last as usize) / CACHE_LINE_SIZE != (col.1 as usize) / CACHE_LINE_SIZE {
            // SAFETY: as above.
            unsafe { _mm_prefetch::<_MM_HINT_ET0>(last.cast()) };
        }
    }
}

/// Fetches the columns' destinations, runs `K`'s tile of as many columns as `cols` holds and
/// hands each column's destination its sums: the body of every instruction set's
/// [`Isa::run_tile`], inlined there, whose features the tiles and `store` need.
///
/// # Safety
/// As for [`Isa::run_tile`].
#[inline(always)]
unsafe fn each_tile<K: Kind>(
    panel: *const u8,
    n: usize,
    nrows: usize,
    cols: &[Column],
    mut store: impl FnMut(*mut f32, <K::Isa as Isa>::Sums),
) {
    prefetch_destinations(cols, nrows);
    macro_rules! arms {
        ($($c:literal)*) => {
            match cols.len() {
                0 => {}
                $($c => {
                    let acts: [*const u8; $c] = std::array::from_fn(|k| cols[k].0);
                    // SAFETY: the caller's contract.
                    let sums = unsafe { K::tile::<$c>(panel, n, &acts) };
                    for (s, col) in sums.into_iter().zip(cols) {
                        store(col.1, s);
                    }
                })*
                other => crate::ggml_abort!("mul_mat: {} columns in a panel tile", other),
            }
        };
    }
    arms!(1 2 3 4 5 6 7 8 9 10 11 12);
}

/// AVX-512 VNNI (with AVX2, FMA, F16C): a panel's 16 rows in one register.
struct Avx512;

impl Isa for Avx512 {
    type Sums = __m512;

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn run_tile<K: Kind<Isa = Self>>(
        panel: *const u8,
        n: usize,
        nrows: usize,
        cols: &[Column],
        accumulate: bool,
    ) {
        // SAFETY: the caller's contract; each destination holds nrows floats.
        unsafe { each_tile::<K>(panel, n, nrows, cols, |out, s| store(out, s, nrows, accumulate)) }
    }
}

/// Stores the first `nrows` lanes of `v` at `out`, or adds them to what is there.
///
/// # Safety
/// AVX-512; `out` holds `nrows` floats.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn store(out: *mut f32, v: __m512, nrows: usize, accumulate: bool) {
    let mask = lanes(nrows);
    // SAFETY: the caller's contract; masked-off lanes are neither read nor written.
    unsafe {
        let v = if accumulate { _mm512_add_ps(_mm512_maskz_loadu_ps(mask, out), v) } else { v };
        _mm512_mask_storeu_ps(out, mask, v)
    };
}

/// The mask of the lanes below `len` (all 16 from 16 on).
fn lanes(len: usize) -> u16 {
    if len >= PANEL_ROWS { u16::MAX } else { (1u16 << len) - 1 }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::repack::layout;

    /// A cache line of a panel.
    #[derive(Clone, Copy)]
    #[repr(align(64))]
    pub(super) struct Line(pub(super) [u8; 64]);

    /// `K`'s panel of 16 rows of `n` values of `ty`, decoded from the plain rows and from the
    /// same rows repacked: the same bytes.
    fn same_panels<K: FromGroups>(ty: Type, n: usize) {
        let row_size = ty.row_size(n as i64);
        // any bytes: both ways widen them with the same instructions, NaNs included
        let plain: Vec<u8> = (0..PANEL_ROWS * row_size).map(|i| (i * 131 + i / 7) as u8).collect();
        let mut packed = vec![0u8; plain.len()];
        layout::pack(ty, row_size, &plain, &mut packed);
        let lines = K::panel_size(n) / 64;
        let (mut from_rows, mut from_group) = (vec![Line([0; 64]); lines], vec![Line([0; 64]); lines]);
        let rows: [*const u8; PANEL_ROWS] = std::array::from_fn(|r| plain[r * row_size..].as_ptr());
        // SAFETY: AVX-512 was checked; 16 rows of n values, plain and as one group; panels of
        // panel_size(n) bytes on cache lines.
        unsafe {
            K::decode(&rows, n, from_rows.as_mut_ptr().cast());
            K::decode_group(packed.as_ptr(), n, from_group.as_mut_ptr().cast());
        }
        let bytes = |v: &[Line]| v.iter().flat_map(|l| l.0).collect::<Vec<u8>>();
        assert!(bytes(&from_rows) == bytes(&from_group), "{}: panels differ", ty.name());
    }

    #[test]
    fn panels_count_the_columns_of_each_weight_matrix() {
        if !features().has_avx2_fma() {
            return;
        }
        let mut c = crate::cpu::kernels::testing::ctx();
        // attention's K: 4 heads of 256 rows; the queries: 16 heads, broadcast 4 to a K head
        let k = c.new_tensor(Type::F16, &[64, 256, 4]);
        let (one, two) = (c.new_tensor(Type::F32, &[64, 1, 16]), c.new_tensor(Type::F32, &[64, 2, 16]));
        assert!(!applies(&k, &one), "one token: 16 columns, but 4 per K head");
        assert!(applies(&k, &two), "two tokens: 8 columns per K head");
    }

    #[test]
    fn repacked_groups_decode_to_the_panels_of_their_rows() {
        if !features().has_avx512() {
            return;
        }
        for n in [32, 96] {
            same_panels::<floats::Floats<f32>>(Type::F32, n);
            same_panels::<floats::Floats<u16>>(Type::F16, n);
            same_panels::<floats::Floats<crate::quants::half::Bf16>>(Type::BF16, n);
            same_panels::<bf16_pairs::Bf16Pairs>(Type::BF16, n);
        }
    }

    /// `K`'s sums of 16 rows of `n` BF16 values against `C` columns (one group), on its own
    /// panel and activations.
    fn sums<K: Kind<Isa = Avx512>, const C: usize>(
        rows: &[*const u8],
        n: usize,
        columns: &[Vec<f32>; C],
    ) -> [[f32; 16]; C] {
        let mut panel = vec![Line([0; 64]); K::panel_size(n) / 64];
        let mut acts = vec![Line([0; 64]); K::activations_size(n, C).div_ceil(64)];
        let base = acts.as_mut_ptr().cast::<u8>();
        let at: [*const u8; C] = std::array::from_fn(|c| K::activation(base, n, c, 0).cast_const());
        // SAFETY: AVX-512 (checked by the caller); 16 rows of n values; a panel of
        // panel_size(n) and activations of activations_size(n, C) bytes on cache lines; the
        // columns are the first group's consecutive columns; a vector holds 16 plain floats.
        unsafe {
            K::decode(rows, n, panel.as_mut_ptr().cast());
            for (c, x) in columns.iter().enumerate() {
                K::convert(x, n, 0, K::activation(base, n, c, 0));
            }
            K::tile::<C>(panel.as_ptr().cast(), n, &at).map(|v| std::mem::transmute::<__m512, [f32; 16]>(v))
        }
    }

    /// The BF16 pairs' tile against the widening kind's on the same rows and columns: the
    /// same sums but for the order of the additions. (Intel processors take the widening
    /// kind, so this is where the pairs are checked there.)
    #[test]
    fn bf16_pairs_sum_as_the_widened_values() {
        use crate::quants::half::{Bf16, fp32_to_bf16};
        if !features().has_avx512() || !crate::cpu::features::features().avx512bf16 {
            return;
        }
        let n = 96;
        let value = |i: usize| (((i * 37) % 29) as f32 - 14.0) / 8.0;
        let weights: Vec<Bf16> = (0..PANEL_ROWS * n).map(|i| fp32_to_bf16(value(i))).collect();
        let rows: Vec<*const u8> = (0..PANEL_ROWS).map(|r| weights[r * n..].as_ptr().cast()).collect();
        let columns: [Vec<f32>; 12] = std::array::from_fn(|c| (0..n).map(|i| value(i * 5 + c)).collect());
        let pairs = sums::<bf16_pairs::Bf16Pairs, 12>(&rows, n, &columns);
        let widened = sums::<floats::Floats<Bf16>, 12>(&rows, n, &columns);
        for (p, w) in pairs.iter().zip(&widened) {
            for (a, b) in p.iter().zip(w) {
                assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{a} against {b}");
            }
        }
    }

    /// The block formats that sum in ggml's lane chains: each panel sum against the dot
    /// product tiles' (which follow ggml's arithmetic, see `dot`'s tests), bit for bit, over
    /// 15 rows (a panel's last rows read as zero), 7 columns (pairs of columns, then one) and
    /// 9 blocks.
    #[test]
    fn lane_chain_panels_sum_as_the_dot_products() {
        use crate::cpu::kernels::dot::{self, DotKernel};
        use crate::quants::q8::{BlockQ8_0, BlockQ8_1};
        use crate::quants::{BlockFormat, quantize_row};
        fn plain_bytes<T>(v: &[T]) -> &[u8] {
            // SAFETY: the block formats are plain bytes; the view covers the same memory.
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        }
        fn check<F: blocks::Format + BlockFormat>(ty: Type) {
            let n = 9 * 32;
            let value = |i: usize| (((i * 7919) % 263) as f32 - 131.0) / 37.0;
            let rows: Vec<Vec<F>> = (0..15)
                .map(|r| {
                    let x: Vec<f32> = (0..n).map(|i| value(i + 1000 * r)).collect();
                    let mut q = vec![F::default(); n / 32];
                    quantize_row(&x, &mut q);
                    q
                })
                .collect();
            let starts: Vec<*const u8> = rows.iter().map(|r| r.as_ptr().cast()).collect();
            let columns: [Vec<f32>; 7] = std::array::from_fn(|c| (0..n).map(|i| value(3 * i + 77 * c)).collect());
            let got = sums::<blocks::Blocks<F>, 7>(&starts, n, &columns);
            let kernel = DotKernel::for_type(ty).expect("a kernel");
            for (c, column) in columns.iter().enumerate() {
                // the activations as the dot products take them
                let y: Vec<u8> = if F::AFFINE {
                    let mut b = vec![BlockQ8_1::default(); n / 32];
                    dot::quantize_row_q8_1(column, &mut b);
                    plain_bytes(&b).to_vec()
                } else {
                    let mut b = vec![BlockQ8_0::default(); n / 32];
                    dot::quantize_row_q8_0(column, &mut b);
                    plain_bytes(&b).to_vec()
                };
                for (r, row) in rows.iter().enumerate() {
                    let want = kernel.dot(n, plain_bytes(row), &y, true);
                    assert_eq!(
                        got[c][r].to_bits(),
                        want.to_bits(),
                        "{} row {r} column {c}: {} vs {want}",
                        ty.name(),
                        got[c][r]
                    );
                }
            }
        }
        if !features().has_avx512() {
            return;
        }
        check::<crate::quants::q4::BlockQ4_0>(Type::Q4_0);
        check::<crate::quants::q4::BlockQ4_1>(Type::Q4_1);
        check::<crate::quants::q5::BlockQ5_0>(Type::Q5_0);
        check::<crate::quants::q5::BlockQ5_1>(Type::Q5_1);
        check::<crate::quants::q8::BlockQ8_0>(Type::Q8_0);
    }

    #[test]
    fn transpose_moves_word_j_of_row_r_to_word_r_of_row_j() {
        if !features().has_avx512() {
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
