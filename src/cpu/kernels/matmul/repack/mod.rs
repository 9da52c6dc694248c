//! MUL_MAT of weights in the CPU_REPACK layout ([`layout`]) by F32 activations.
//!
//! The activations are quantized as for plain weights (Q8_0 for the 32-value formats, Q8_K for
//! the super-blocks) and stored per column as their signed levels, then the blocks' scales as
//! `f32`, then the level sums the formats need as `i32` (of each block, or of each 16 levels).
//! The weights take part as unsigned bytes `u = level + BIAS`, which `vpdpbusd` multiplies by
//! the signed activation levels; the sums of each group of levels start from `−BIAS·Σa`, which
//! leaves `Σ level·a` exactly ([`blocks`], [`q4_k`], [`q6_k`]). Float weights ([`floats`]) take
//! the activations as floats.
//!
//! A thread's task is a range of groups by a range of columns; it runs each group against its
//! columns a tile at a time, so that a group's weights are read from memory once and the rest
//! of its columns find them in cache.

/// For a tile of `$cols` (as many as one of the widths `$c`): binds `$acts` to the columns'
/// activations, an array of the tile's width, runs `$sums` (the sixteen rows' results per
/// column) and stores each column's results. (Defined before the modules that use it.)
#[cfg(target_arch = "x86_64")]
macro_rules! run_tile {
    ($cols:expr, |$acts:ident| $sums:expr, $($c:literal)*) => {
        match $cols.len() {
            $($c => {
                let $acts: [super::ActRow; $c] = std::array::from_fn(|k| $cols[k].0);
                let sums: [std::arch::x86_64::__m512; $c] = $sums;
                for (s, &(_, out)) in sums.iter().zip($cols) {
                    // SAFETY: a tile's destinations hold 16 floats (`Scheme::tile_avx512`).
                    unsafe { std::arch::x86_64::_mm512_storeu_ps(out, *s) };
                }
            })*
            other => crate::ggml_abort!("mul_mat: {} columns in a repacked tile", other),
        }
    };
}

/// As `run_tile!` for the AVX2 tiles, whose sixteen rows' results per column are two halves
/// of eight.
#[cfg(target_arch = "x86_64")]
macro_rules! run_tile_avx2 {
    ($cols:expr, |$acts:ident| $sums:expr, $($c:literal)*) => {
        match $cols.len() {
            $($c => {
                let $acts: [super::ActRow; $c] = std::array::from_fn(|k| $cols[k].0);
                let sums: [[std::arch::x86_64::__m256; 2]; $c] = $sums;
                for (s, &(_, out)) in sums.iter().zip($cols) {
                    // SAFETY: a tile's destinations hold 16 floats (`Scheme::tile_avx2`).
                    unsafe {
                        std::arch::x86_64::_mm256_storeu_ps(out, s[0]);
                        std::arch::x86_64::_mm256_storeu_ps(out.add(8), s[1]);
                    }
                }
            })*
            other => crate::ggml_abort!("mul_mat: {} columns in a repacked tile", other),
        }
    };
}

mod blocks;
mod floats;
mod iq4_xs;
mod q2_k;
mod q4_k;
mod q6_k;

use super::{ColumnIndex, ComputeParams, Tensor, ceil_div, most_tasks, share_rows, span, use_simd};
use crate::core::types::Type;
use crate::cpu::features::Isa;
use crate::cpu::plan::CACHE_LINE_SIZE;
use crate::cpu::repack::layout::{self, GROUP_ROWS, Parts};
use crate::quants::k_quants::{BlockQ8K, quantize_row_q8_k};
use crate::quants::q8::BlockQ8_0;

/// Columns per task: a task's activations stay in the core's cache while its groups run.
const TASK_COLS: i64 = 64;
/// The most columns of any scheme's tile.
const MAX_TILE_COLS: usize = 8;
/// Bytes of a task's activations that stay in the core's second-level cache while its groups
/// pass (half of a 1 MiB L2, the rest for the weights going through).
const SPAN_CACHE: usize = 512 << 10;

/// How the product runs on one weight format's groups.
trait Scheme {
    /// Values per block, of the weights and of the activations (32: Q8_0, 256: Q8_K).
    const QK: usize;
    /// Level sums per activation block.
    const SUMS: usize;
    /// Columns per pass over a group (at most [`MAX_TILE_COLS`]).
    const TILE_COLS: usize;
    /// Blocks of a group per pass over a task's groups where the task's columns' whole rows
    /// would not stay in the core's second-level cache (all of them by default).
    const SPAN: usize = usize::MAX;
    /// Bytes of an activation level (or value).
    const LEVEL_SIZE: usize = 1;

    /// Bytes of one column's activations of `n` values: by default levels, scales, sums.
    fn column_size(n: usize) -> usize {
        n / Self::QK * (Self::QK + 4 + 4 * Self::SUMS)
    }

    /// Converts blocks `first..` of a column of F32 values `x` (those blocks' values) into the
    /// column's activations `acts`: by default quantized to Q8_0 (32-value blocks) or Q8_K.
    ///
    /// # Safety
    /// `acts` is a column of [`Scheme::column_size`] bytes, whose blocks covered by `x` no
    /// other thread touches meanwhile.
    unsafe fn convert(x: &[f32], first: usize, acts: ActRow, simd: bool) {
        // SAFETY: the caller's contract.
        unsafe { quantize::<Self>(x, first, acts, simd) }
    }

    /// Each column's 16 results for the group at `group` (of `nb` blocks), on the scalar path.
    ///
    /// # Safety
    /// `group` holds a group of `nb` blocks of the format's layout; each column's activations
    /// hold `nb` blocks and its destination 16 floats.
    unsafe fn tile_scalar(group: *const u8, nb: usize, cols: &[Column]);

    /// As [`Scheme::tile_scalar`], with AVX-512 VNNI.
    ///
    /// # Safety
    /// AVX-512 (F, BW, VL, DQ, VNNI); as for [`Scheme::tile_scalar`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512(group: *const u8, nb: usize, cols: &[Column]);

    /// Whether the scheme has an AVX2 tile ([`Scheme::tile_avx2`]): the formats of
    /// `repack::AVX2_TYPES`, which AVX2 processors store packed.
    const AVX2: bool = false;

    /// As [`Scheme::tile_scalar`], with AVX2, FMA and F16C; the scalar tile itself for the
    /// schemes without one ([`Scheme::AVX2`] false).
    ///
    /// # Safety
    /// AVX2, FMA and F16C; as for [`Scheme::tile_scalar`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2(group: *const u8, nb: usize, cols: &[Column]) {
        // SAFETY: the caller's contract.
        unsafe { Self::tile_scalar(group, nb, cols) }
    }
}

/// Which of a scheme's tiles a product runs. Made only by [`Path::of`], which checks the
/// processor (so holding an `Avx512` or `Avx2` path is what makes running those tiles sound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Path(Isa);

impl Path {
    /// The fastest tile of `S` this processor runs; the scalar one where `simd` is off.
    fn of<S: Scheme>(simd: bool) -> Path {
        #[cfg(target_arch = "x86_64")]
        {
            let f = crate::cpu::features::features();
            if simd && f.has_avx512() {
                return Path(Isa::Avx512);
            }
            if simd && S::AVX2 && f.has_avx2_fma() {
                return Path(Isa::Avx2);
            }
        }
        let _ = simd;
        Path(Isa::Scalar)
    }
}

/// The layout's parts of `ty`, at compile time.
const fn parts_of(ty: Type) -> Parts {
    match layout::parts(ty) {
        Some(parts) => parts,
        None => panic!("a format without a repacked layout"),
    }
}

/// Sixteen F16 values at `at` (a field of the 16 rows of a group block), widened.
///
/// # Safety
/// AVX-512; `at` holds sixteen F16 values.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn f16x16(at: *const u8) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    // SAFETY: the caller's contract.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(at.cast()) })
}

/// How far ahead of its reads a group product asks for the weights: 8 KiB, two of the 4 KiB
/// pages at whose edges the hardware prefetcher stops. (Tried on F16 2816×1024 by one column,
/// one thread: 2 KiB ahead was slower than none, 8 and 12 KiB best, 32 KiB slower again;
/// addresses far past the weights cost page walks.)
const STREAM_AHEAD: usize = 8 << 10;

/// Byte `k` (0..4) of each 32-bit lane.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn lane_byte(v: std::arch::x86_64::__m512i, k: usize) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    _mm512_and_si512(_mm512_srlv_epi32(v, _mm512_set1_epi32(8 * k as i32)), _mm512_set1_epi32(0xff))
}

/// [`lane_byte`] on AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn lane_byte_avx2(v: std::arch::x86_64::__m256i, k: usize) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_set1_epi32(8 * k as i32)), _mm256_set1_epi32(0xff))
}

/// `$f::<Scheme>($args)` for the weights' type: the formats [`layout`] takes, each with the
/// scheme that multiplies it (not all the block formats of `quants::formats`, so not generated
/// from that list).
macro_rules! with_scheme {
    ($ty:expr, $f:ident($($args:expr),*)) => {
        match $ty {
            Type::F32 => $f::<floats::Floats<floats::F32>>($($args),*),
            Type::F16 => $f::<floats::Floats<floats::F16>>($($args),*),
            Type::BF16 => $f::<floats::Floats<floats::Bf16>>($($args),*),
            Type::Q4_0 => $f::<blocks::Blocks<blocks::Q4_0>>($($args),*),
            Type::Q4_1 => $f::<blocks::Blocks<blocks::Q4_1>>($($args),*),
            Type::Q5_0 => $f::<blocks::Blocks<blocks::Q5_0>>($($args),*),
            Type::Q5_1 => $f::<blocks::Blocks<blocks::Q5_1>>($($args),*),
            Type::IQ4_NL => $f::<blocks::Blocks<blocks::Iq4Nl>>($($args),*),
            Type::MXFP4 => $f::<blocks::Blocks<blocks::Mxfp4>>($($args),*),
            Type::Q8_0 => $f::<blocks::Blocks<blocks::Q8_0>>($($args),*),
            Type::IQ4_XS => $f::<iq4_xs::Iq4Xs>($($args),*),
            Type::Q2_K => $f::<q2_k::TwoBit<q2_k::Q2K>>($($args),*),
            Type::Q3_K => $f::<q2_k::TwoBit<q2_k::Q3K>>($($args),*),
            Type::TQ2_0 => $f::<q2_k::TwoBit<q2_k::Tq2_0>>($($args),*),
            Type::Q4_K => $f::<q4_k::NibbleK<false>>($($args),*),
            Type::Q5_K => $f::<q4_k::NibbleK<true>>($($args),*),
            Type::Q6_K => $f::<q6_k::Q6K>($($args),*),
            other => crate::ggml_abort!("mul_mat: {} weights have no repacked layout", other.name()),
        }
    };
}

/// Scratch bytes for a product of repacked `src0` by `src1`: the converted activations.
pub(super) fn work_size(src0: &Tensor, src1: &Tensor) -> usize {
    fn size<S: Scheme>(n: usize, cols: usize) -> usize {
        column_stride::<S>(n) * cols + CACHE_LINE_SIZE
    }
    with_scheme!(src0.type_, size(src1.ne[0] as usize, (src1.ne[1] * src1.ne[2] * src1.ne[3]) as usize))
}

/// Bytes from one column's activations to the next: whole cache lines, and not a multiple of
/// 1 KiB, where the columns of a tile (their values at the same index, read together) would
/// fall in the same few sets of the first-level cache and evict each other (F16 2816×1024 by
/// 512: 65 ms with columns 4 KiB apart, 28 ms without).
fn column_stride<S: Scheme>(n: usize) -> usize {
    let size = S::column_size(n).next_multiple_of(CACHE_LINE_SIZE);
    if size.is_multiple_of(1024) { size + CACHE_LINE_SIZE } else { size }
}

/// One column's activations.
#[derive(Clone, Copy)]
struct ActRow {
    /// The levels (the values of the float schemes, whose other pointers are unused).
    levels: *const i8,
    scales: *const f32,
    sums: *const i32,
}

impl ActRow {
    /// Column `col` of the activations at `acts`, of `n` values.
    fn at<S: Scheme>(acts: *const u8, n: usize, col: usize) -> ActRow {
        let nb = n / S::QK;
        let levels = acts.wrapping_add(col * column_stride::<S>(n));
        let scales = levels.wrapping_add(nb * S::QK).cast::<f32>();
        ActRow { levels: levels.cast(), scales, sums: scales.wrapping_add(nb).cast() }
    }

    /// The column from its block `blocks` on.
    fn skip<S: Scheme>(self, blocks: usize) -> ActRow {
        ActRow {
            levels: self.levels.wrapping_add(blocks * S::QK * S::LEVEL_SIZE),
            scales: self.scales.wrapping_add(blocks),
            sums: self.sums.wrapping_add(blocks * S::SUMS),
        }
    }
}

/// A column of a tile: its activations and where its group's 16 results go.
type Column = (ActRow, *mut f32);

/// [`Scheme::convert`] for the quantized schemes.
///
/// # Safety
/// As for [`Scheme::convert`].
unsafe fn quantize<S: Scheme + ?Sized>(x: &[f32], first: usize, acts: ActRow, simd: bool) {
    // SAFETY: (for each write below) block b of the column, the caller's contract.
    let store = |b: usize, qs: &[u8], d: f32, sums: &mut dyn Iterator<Item = i32>| unsafe {
        std::ptr::copy_nonoverlapping(qs.as_ptr(), acts.levels.add(b * S::QK).cast_mut().cast::<u8>(), S::QK);
        acts.scales.add(b).cast_mut().write(d);
        for (k, sum) in sums.take(S::SUMS).enumerate() {
            acts.sums.add(b * S::SUMS + k).cast_mut().write(sum);
        }
    };
    if S::QK == 32 {
        let mut blocks = vec![BlockQ8_0::default(); x.len() / 32];
        if simd {
            super::dot::quantize_row_q8_0(x, &mut blocks);
        } else {
            super::dot::scalar::quantize_row_q8_0(x, &mut blocks);
        }
        for (b, blk) in (first..).zip(&blocks) {
            store(b, &blk.qs, blk.d.to_f32(), &mut std::iter::once(blk.qs.iter().map(|&q| i32::from(q as i8)).sum()));
        }
    } else {
        // ggml's CPU backend uses the reference quantizer for Q8_K on every path
        let mut blocks = vec![BlockQ8K::default(); x.len() / 256];
        quantize_row_q8_k(x, &mut blocks);
        for (b, blk) in (first..).zip(&blocks) {
            let mut sums = blk.bsums.iter().map(|s| i32::from(i16::from_le_bytes(*s)));
            store(b, &blk.qs, f32::from_le_bytes(blk.d), &mut sums);
        }
    }
}

/// `dst = src0 · src1ᵀ` for repacked 2-D `src0` and F32 `src1`, with `wsize` bytes of scratch
/// at `wdata` (a cache line start).
pub(super) fn mul_mat(
    params: &ComputeParams,
    dst: &Tensor,
    src0: &Tensor,
    src1: &Tensor,
    wdata: *mut u8,
    wsize: usize,
) {
    crate::ggml_assert!(
        src1.type_ == Type::F32 && src0.ne[2] == 1 && src0.ne[3] == 1,
        "mul_mat: repacked {} weights take 2-D weights and F32 activations, not {}",
        src0.type_.name(),
        src1.type_.name()
    );
    with_scheme!(src0.type_, run(params, dst, src0, src1, wdata, wsize));
}

fn run<S: Scheme>(params: &ComputeParams, dst: &Tensor, src0: &Tensor, src1: &Tensor, wdata: *mut u8, wsize: usize) {
    let n = src0.ne[0] as usize;
    let ne = src1.ne;
    let cols = ne[1] * ne[2] * ne[3];
    let needed = column_stride::<S>(n) * cols as usize;
    crate::ggml_assert!(wsize >= needed, "mul_mat: scratch of {} bytes for repacked weights, {} needed", wsize, needed);
    let simd = use_simd(params);
    share_rows(params, cols, (n / S::QK) as i64, |r, first, last| {
        let idx = (r % ne[1], (r / ne[1]) % ne[2], r / (ne[1] * ne[2]));
        let (first, last) = (first as usize, last as usize);
        let mut buf = Vec::new();
        let x = span::<f32>(src1, idx, first * S::QK, (last - first) * S::QK, &mut buf);
        // SAFETY: column r lies in the scratch (checked above); shares are disjoint until the
        // barrier.
        unsafe { S::convert(x, first, ActRow::at::<S>(wdata, n, r as usize), simd) };
    });
    params.barrier();

    let acts = wdata.cast_const();
    let groups = src0.ne[1] / GROUP_ROWS as i64;
    let task_cols = if cols <= TASK_COLS { cols } else { TASK_COLS };
    let col_tasks = ceil_div(cols, task_cols);
    let task_groups = task_groups(groups, (GROUP_ROWS * src0.nb[1]) as i64, task_cols, col_tasks, params.nth as i64);
    let group_tasks = ceil_div(groups, task_groups);
    let tasks = (group_tasks * col_tasks) as usize;
    let path = Path::of::<S>(simd);

    // a task runs its groups a span of blocks at a time: the span's activations of the task's
    // columns stay in the core's cache while the groups pass. Where the whole rows fit, one
    // span: each group's weights are then one run through memory, which the prefetchers
    // follow (F16 1024×2816 by one column from memory: 7.0 ms in spans of 64 blocks, 5.1 whole)
    let nb = n / S::QK;
    let span = if task_cols as usize * column_stride::<S>(n) <= SPAN_CACHE { nb } else { S::SPAN.min(nb) };
    let group_block = GROUP_ROWS * src0.nb[1] / nb;
    // a tile's columns, set afresh for each group; after the first span, each column's results
    // go to `partial` (which the tile overwrites) and are added. Made once, not per group: a
    // group's weights sweep the stack out of L1, and clearing these for each group stalled on
    // the stores (4% of F16 generation at 2 threads, in perf)
    let mut partial = [[0f32; GROUP_ROWS]; MAX_TILE_COLS];
    let mut columns = [(ActRow::at::<S>(acts, n, 0), std::ptr::null_mut()); MAX_TILE_COLS];
    let mut outs = [std::ptr::null_mut::<f32>(); MAX_TILE_COLS];
    let mut task = params.ith;
    while task < tasks {
        let (g, c) = (task as i64 % group_tasks, task as i64 / group_tasks);
        let task_cols = c * task_cols..((c + 1) * task_cols).min(cols);
        for first in (0..nb).step_by(span) {
            let blocks = span.min(nb - first);
            for group in g * task_groups..((g + 1) * task_groups).min(groups) {
                let weights = src0
                    .data
                    .cast::<u8>()
                    .wrapping_add(group as usize * GROUP_ROWS * src0.nb[1] + first * group_block)
                    .cast_const();
                let mut at = ColumnIndex::at(task_cols.start, src1.ne[1], src1.ne[2]);
                for tile in (task_cols.start..task_cols.end).step_by(S::TILE_COLS) {
                    let width = (task_cols.end - tile).min(S::TILE_COLS as i64) as usize;
                    for (k, col) in columns[..width].iter_mut().enumerate() {
                        let out = dst.data.cast::<u8>().wrapping_add(at.offset(dst)).cast::<f32>();
                        outs[k] = out.wrapping_add(group as usize * GROUP_ROWS);
                        let to = if first == 0 { outs[k] } else { partial[k].as_mut_ptr() };
                        *col = (ActRow::at::<S>(acts, n, tile as usize + k).skip::<S>(first), to);
                        at.advance();
                    }
                    // SAFETY: the group's span holds `blocks` blocks of 16 rows of the format's
                    // layout; the activations were converted before the barrier; each
                    // destination holds 16 results, written by this task alone.
                    unsafe { tile_of::<S>(path, weights, blocks, &columns[..width]) };
                    if first > 0 {
                        for (out, sums) in outs.iter().zip(&partial).take(width) {
                            for (r, s) in sums.iter().enumerate() {
                                // SAFETY: as above: this group's 16 results of the column.
                                unsafe { *out.add(r) += s };
                            }
                        }
                    }
                }
            }
        }
        if params.nth >= tasks {
            break;
        }
        task = params.next_chunk();
    }
}

/// Groups per task, for `groups` groups of `group_bytes` bytes of weights by `col_tasks` tasks
/// of `task_cols` columns, on a team of `nth`.
///
/// Several column tasks: enough tasks to balance the team, eight a thread, of at most 16
/// groups. One column task (generation's products): as many, where each still has
/// [`super::MIN_TASK_WORK`]; else fewer, down to one a thread ([`most_tasks`]). A task is a new
/// run through memory, whose first lines the prefetchers have not yet learned to fetch, and a
/// claim on the shared counter. By one column from memory on two threads (mul-mat-bench, copies past the last-level
/// cache), eight tasks a thread against this split: F16 256×1024 20.2 µs against 14.1 (ggml
/// 16.7), 1024×1024 55 against 49 (ggml 61); Q4_0 256×1024 7.7 against 4.2 (ggml 8.1),
/// 1024×1024 19.9 against 16.1 (ggml 36.6).
fn task_groups(groups: i64, group_bytes: i64, task_cols: i64, col_tasks: i64, nth: i64) -> i64 {
    if col_tasks > 1 {
        return (groups * col_tasks / (8 * nth)).clamp(1, 16);
    }
    let (most, min_groups) = most_tasks(groups, group_bytes * task_cols, nth);
    let per_thread = (most / nth).min(8);
    // (rounded down where rounding up would leave a thread without a task)
    let task_groups = ceil_div(groups, per_thread * nth).min((groups / nth).max(1));
    // with work enough for eight tasks a thread, tasks of at most 16 groups (more of them,
    // for a team whose threads the machine delays unevenly), unless that is below the least
    if per_thread == 8 { task_groups.min(16.max(min_groups)) } else { task_groups }
}

/// The tile of `S` on `path`.
///
/// # Safety
/// As for [`Scheme::tile_scalar`]; `path` one the processor runs ([`Path::of`]).
unsafe fn tile_of<S: Scheme>(path: Path, group: *const u8, nb: usize, cols: &[Column]) {
    // SAFETY: the caller's contract, for whichever tile `path` names.
    unsafe {
        match path.0 {
            Isa::Scalar => S::tile_scalar(group, nb, cols),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => S::tile_avx2(group, nb, cols),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => S::tile_avx512(group, nb, cols),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, at, fill, run};
    use super::*;
    use crate::core::ops::matmul as ops;
    use crate::core::tensor::TensorPtr;
    use crate::cpu::kernels::testing::{Rng, ctx, nmse};
    use crate::cpu::repack;

    /// The product of `ty` weights [k, m] by F32 activations [k, n, 2], plain and repacked, on
    /// `threads` threads; returns both.
    fn products(ty: Type, k: i64, m: i64, n: i64, threads: i32, use_ref: bool) -> (Vec<f64>, Vec<f64>) {
        let mut c = ctx();
        let mut rng = Rng::new(0x5eed + (k * m * n) as u64);
        let a = c.new_tensor(ty, &[k, m, 1, 1]);
        fill(a, &mut rng);
        let b = c.new_tensor(Type::F32, &[k, n, 2, 1]);
        fill(b, &mut rng);
        let d = ops::mul_mat(&mut c, a, b);
        let values = |d: TensorPtr| all(&d).into_iter().map(|i| at(&d, i)).collect::<Vec<f64>>();
        run(&mut c, d, threads, use_ref);
        let plain = values(d);

        // the same weights packed in place, in a (placeholder) CPU_REPACK buffer
        let placeholder = repack::buffer_type().alloc_buffer(0).expect("a placeholder buffer");
        a.get_mut().buffer = placeholder.as_ptr().cast();
        assert!(repack::is_repacked(&a), "{} weights are packed on this processor", ty.name());
        let row_size = ty.row_size(k);
        // SAFETY: the weights' data, m rows of row_size bytes, which nothing else reads meanwhile.
        let bytes = unsafe { std::slice::from_raw_parts_mut(a.data.cast::<u8>(), m as usize * row_size) };
        let plain_bytes = bytes.to_vec();
        layout::pack(ty, row_size, &plain_bytes, bytes);
        run(&mut c, d, threads, use_ref);
        a.get_mut().buffer = std::ptr::null_mut();
        placeholder.free();
        (plain, values(d))
    }

    #[test]
    fn generation_tasks_hold_enough_work() {
        let f16_group = 16 * 2 * 1024; // 16 rows of 1024 F16 values
        let tasks = |groups, group_bytes, cols, nth| ceil_div(groups, task_groups(groups, group_bytes, cols, 1, nth));
        // F16 by one column on two threads: 256×1024 in one task a thread, 1024×1024 in four,
        // 2816×1024 in eight, 32000×1024 in tasks of 16 groups
        assert_eq!(tasks(16, f16_group, 1, 2), 2);
        assert_eq!(tasks(64, f16_group, 1, 2), 8);
        assert_eq!(tasks(176, f16_group, 1, 2), 16);
        assert_eq!(task_groups(2000, f16_group, 1, 1, 2), 16);
        // Q4_0 groups are smaller: more of them to a task
        assert_eq!(tasks(64, 16 * 32 * 18, 1, 2), 2);
        // 64 columns make the least work a group: tasks as for batches
        assert_eq!(task_groups(64, f16_group, 64, 1, 2), 4);
        assert_eq!(task_groups(64, f16_group, 64, 3, 2), 12);
        // never fewer tasks than threads where each thread can have a group
        for groups in 1..300 {
            for nth in 1..=8 {
                let t = tasks(groups, f16_group, 1, nth);
                assert!(
                    t >= nth.min(groups) && t <= (8 * nth).max(ceil_div(groups, 16)),
                    "{groups} groups, {nth} threads: {t} tasks"
                );
            }
        }
    }

    #[test]
    fn repacked_products_equal_the_plain_ones() {
        for ty in layout::TYPES.into_iter().filter(|&ty| repack::packs(ty)) {
            // The plain Q4_1 and Q5_1 products take the activations' sums from Q8_1 blocks, where
            // they are rounded to F16; here they are exact.
            let tolerance = if matches!(ty, Type::Q4_1 | Type::Q5_1) { 1e-6 } else { 1e-10 };
            // one and several groups; one column, a partial tile, several tiles and tasks; rows
            // longer than the float schemes' span, in one pass (few columns) and in spans (a
            // task's 64 columns of 4352 values overflow SPAN_CACHE, even as BF16). On AVX-512
            // processors the float weights' batches of 128 columns and more (n = 70: 140) take
            // the panels instead, decoded from the groups.
            let shapes = [
                (256, 16, 1),
                (512, 32, 3),
                (256, 48, 9),
                (256, 16, 70),
                (2304, 16, 2),
                (4352, 16, 60),
                (4352, 16, 70),
            ];
            for (k, m, n) in shapes {
                for (threads, use_ref) in [(1, false), (3, false), (2, true)] {
                    let (plain, repacked) = products(ty, k, m, n, threads, use_ref);
                    let e = nmse(&repacked, &plain);
                    assert!(e < tolerance, "{} k={k} m={m} n={n} threads={threads} ref={use_ref}: nmse {e}", ty.name());
                }
            }
        }
    }

    /// Each column's 16 results of one group of `ty` (k values a row) on `path`, for tiles of
    /// 1 to the scheme's tile width.
    #[cfg(target_arch = "x86_64")]
    fn group_results<S: Scheme>(ty: Type, k: usize, path: Path) -> Vec<f32> {
        let mut c = ctx();
        let mut rng = Rng::new(0xa5 + k as u64);
        let a = c.new_tensor(ty, &[k as i64, GROUP_ROWS as i64, 1, 1]);
        fill(a, &mut rng);
        let row_size = ty.row_size(k as i64);
        // SAFETY: the tensor's data: 16 rows of row_size bytes.
        let plain = unsafe { std::slice::from_raw_parts(a.data.cast::<u8>(), GROUP_ROWS * row_size) };
        let mut packed = vec![0u8; plain.len()];
        layout::pack(ty, row_size, plain, &mut packed);

        let stride = column_stride::<S>(k);
        let mut acts = vec![0u64; (MAX_TILE_COLS * stride).div_ceil(8)];
        let base = acts.as_mut_ptr().cast::<u8>();
        for col in 0..MAX_TILE_COLS {
            let x: Vec<f32> = (0..k).map(|_| rng.uniform(-1.0, 1.0)).collect();
            // SAFETY: column col of the buffer, which holds MAX_TILE_COLS columns.
            unsafe { S::convert(&x, 0, ActRow::at::<S>(base, k, col), true) };
        }
        let mut out = Vec::new();
        for width in 1..=S::TILE_COLS {
            let mut results = vec![0f32; width * GROUP_ROWS];
            let columns: Vec<Column> = (0..width)
                .map(|col| (ActRow::at::<S>(base, k, col), results[col * GROUP_ROWS..].as_mut_ptr()))
                .collect();
            // SAFETY: one packed group of k / QK blocks; each column converted above, each
            // destination 16 floats; `path` is one this processor runs (the callers check).
            unsafe { tile_of::<S>(path, packed.as_ptr(), k / S::QK, &columns) };
            out.extend(results);
        }
        out
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_tiles_equal_the_others() {
        use crate::cpu::features::features;
        if !features().has_avx2_fma() {
            eprintln!("skipped: this processor has no AVX2");
            return;
        }
        fn check<S: Scheme>(ty: Type) {
            assert!(S::AVX2, "{} is one of repack::AVX2_TYPES but its scheme has no AVX2 tile", ty.name());
            for k in [S::QK, 8 * S::QK, 4096] {
                let avx2 = group_results::<S>(ty, k, Path(Isa::Avx2));
                let scalar = group_results::<S>(ty, k, Path(Isa::Scalar));
                let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
                let e = nmse(&wide(&avx2), &wide(&scalar));
                assert!(e < 1e-10, "{} k={k}: AVX2 against scalar, nmse {e}", ty.name());
                // the AVX-512 tile sums and scales in the same order: the same bits
                if features().has_avx512() {
                    let avx512 = group_results::<S>(ty, k, Path(Isa::Avx512));
                    assert!(
                        avx2.iter().zip(&avx512).all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{} k={k}: AVX2 and AVX-512 differ",
                        ty.name()
                    );
                }
            }
        }
        for ty in repack::AVX2_TYPES {
            with_scheme!(ty, check(ty));
        }
    }
}
