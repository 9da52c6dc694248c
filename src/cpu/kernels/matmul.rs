//! Matrix products: `mul_mat` (`dst = src0 · src1ᵀ`, src0 broadcast over dimensions 2 and 3),
//! its expert-routed form `mul_mat_id`, and `out_prod`.
//!
//! `mul_mat` works in two phases, as ggml's CPU backend does. First the team converts `src1`
//! into the weight type's activation format (its `vec_dot_type`: F32 for F32, F16 for F16,
//! BF16 for BF16, Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1) in the scratch buffer, unless
//! it is already in that format with packed elements (strided elements, as in a transposed
//! view, are gathered on the way). After a barrier the result is cut into
//! chunks of about 16×16 (64 rows when one side is a single row or column, one chunk per
//! thread when there would be fewer than four chunks per thread); each thread starts with
//! chunk `ith` and takes the next free one from the team's counter. Inside a chunk, the
//! [`DotKernel`] tiles cover up to [`dot::MAX_ROWS`] weight rows times [`dot::MAX_COLS`] activation
//! columns per pass (more on AVX-512), so a batch decodes each weight block once for several
//! columns; one kernel call runs a panel of such tiles down 16 weight rows.
//!
//! Batches of F32 activations against the weight types [`panel`] lists take another route on
//! AVX-512 VNNI processors: each thread decodes 16 weight rows at a time into a transposed
//! layout and runs every column of its chunk against them.
//!
//! `mul_mat_id` converts the same way, then groups the (slot, token) pairs by the expert
//! they route to, and runs each expert's group like a `mul_mat`, with a chunk counter per
//! expert kept in the scratch.
//!
//! `out_prod` accumulates `dst[:, i1] += src0[:, i01] · src1[i1, i01]` with axpy; F16 and
//! quantized weight rows are expanded into a per-thread scratch row first.
//!
//! The `*_work_size` functions give the scratch each op needs (ggml 0.25.1's `ggml_graph_plan`
//! sizes); the planner adds a cache line per thread, which the kernels use for alignment.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::dot::{self, DotKernel, MAX_PANEL_ROWS, MAX_WIDE_COLS};
use super::{copy, simd};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::plan::CACHE_LINE_SIZE;
use crate::quants::blocks_mut;
use crate::quants::half::Bf16;
use crate::quants::k_quants::{BlockQ8K, quantize_row_q8_k};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

#[cfg(target_arch = "x86_64")]
mod panel;
mod repack;

/// Rows and columns of the result walked together inside a chunk (a cache block): a panel of
/// weight rows per kernel call.
const BLOCK_ROWS: i64 = MAX_PANEL_ROWS as i64;
const BLOCK_COLS: i64 = 24;

fn source(dst: TensorPtr, i: usize) -> TensorPtr {
    dst.src(i).unwrap_or_else(|| crate::ggml_abort!("{}: missing source {}", dst.op.name(), i))
}

fn dot_kernel(op: &str, ty: Type) -> DotKernel {
    DotKernel::for_type(ty).unwrap_or_else(|| crate::ggml_abort!("{}: no dot product for {} weights", op, ty.name()))
}

/// Whether the op may take the SIMD paths.
fn use_simd(params: &ComputeParams) -> bool {
    !params.use_ref && crate::cpu::features::features().has_avx2_fma()
}

/// Whether `src1` must be converted (or gathered) into the scratch before the products.
fn needs_conversion(src1: &Tensor, vec_dot_type: Type) -> bool {
    src1.type_ != vec_dot_type || src1.nb[0] != src1.type_.type_size()
}

/// Where in a cache line the activation rows should start: where the weights' rows start, for
/// the float formats whose rows are whole lines long (every row then starts at the same place
/// in its line). The float tiles take a short first step up to the weights' next aligned
/// address, so activations placed like the weights make every later load of the tile aligned
/// (a load across two cache lines costs about two).
fn line_offset(src0: &Tensor, vec_dot_type: Type) -> Option<usize> {
    let float = matches!(vec_dot_type, Type::F32 | Type::F16 | Type::BF16);
    let whole_lines = vec_dot_type.row_size(src0.ne[0]).is_multiple_of(CACHE_LINE_SIZE)
        && [1, 2, 3].iter().all(|&d| src0.nb[d].is_multiple_of(CACHE_LINE_SIZE));
    (float && whole_lines).then_some(src0.data as usize % CACHE_LINE_SIZE)
}

/// Whether F32 activations already in the activation format are copied anyway, to the weights'
/// place in the cache line (`offset`, from [`line_offset`]), because their rows start elsewhere.
fn realign(src1: &Tensor, offset: usize, vec_dot_type: Type) -> bool {
    let in_line = |t: &Tensor| {
        t.data as usize % CACHE_LINE_SIZE == offset && t.nb[1..].iter().all(|nb| nb.is_multiple_of(CACHE_LINE_SIZE))
    };
    !needs_conversion(src1, vec_dot_type) && !in_line(src1)
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The scratch, its start aligned to a cache line (the planner's per-thread padding pays for
/// the alignment).
fn scratch(params: &ComputeParams) -> (*mut u8, usize) {
    if params.wdata.is_null() {
        return (params.wdata, 0);
    }
    let skip = params.wdata.align_offset(CACHE_LINE_SIZE).min(params.wsize);
    // SAFETY: skip <= wsize, so the pointer stays inside (or one past) the scratch.
    (unsafe { params.wdata.add(skip) }, params.wsize - skip)
}

/// `len` bytes of `t`'s data from `offset`.
///
/// # Safety
/// The bytes lie inside `t`'s allocated data, which nobody writes during the node.
unsafe fn data_bytes(t: &Tensor, offset: usize, len: usize) -> &[u8] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(t.data.cast::<u8>().add(offset), len) }
}

/// Views `bytes` as `T`s (aborting on a misaligned start).
fn typed_mut<T: Copy>(bytes: &mut [u8]) -> &mut [T] {
    let size = std::mem::size_of::<T>();
    crate::ggml_assert!(
        (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()),
        "matmul: misaligned buffer"
    );
    // SAFETY: alignment is checked above, the length rounds down to whole `T`s, and the `T`s
    // used here (f32, u16, Bf16) are valid for any bits.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), bytes.len() / size) }
}

/// Elements `start..start + n` of row `(i1, i2, i3)` of `t` as `T`s: the data itself when the
/// elements are packed, else a copy gathered into `buf`.
fn span<'a, T: Copy>(
    t: &'a Tensor,
    (i1, i2, i3): (i64, i64, i64),
    start: usize,
    n: usize,
    buf: &'a mut Vec<T>,
) -> &'a [T] {
    let size = std::mem::size_of::<T>();
    let row = i1 as usize * t.nb[1] + i2 as usize * t.nb[2] + i3 as usize * t.nb[3];
    if t.nb[0] == size && (t.data as usize + row).is_multiple_of(std::mem::align_of::<T>()) {
        // SAFETY: the row exists (indices from t's shape) and holds ne0 packed elements,
        // start + n <= ne0 of them; alignment is checked above; T is plain data.
        return unsafe { std::slice::from_raw_parts(t.data.cast::<u8>().add(row + start * size).cast::<T>(), n) };
    }
    buf.clear();
    for e in start..start + n {
        // SAFETY: element e < ne0 of an existing row; unaligned reads allow any strides.
        buf.push(unsafe { t.data.cast::<u8>().add(row + e * t.nb[0]).cast::<T>().read_unaligned() });
    }
    buf
}

/// Converts elements `start..start + n` of row `idx` of `src1` to `to` into `out`: `to` is an
/// activation type (a `vec_dot_type`), of which every weight format uses one of these.
fn convert_span(src1: &Tensor, to: Type, idx: (i64, i64, i64), start: usize, n: usize, out: &mut [u8], simd: bool) {
    match src1.type_ {
        Type::F32 => {
            let mut buf = Vec::new();
            let x = span::<f32>(src1, idx, start, n, &mut buf);
            match to {
                Type::F32 => typed_mut::<f32>(out)[..n].copy_from_slice(x),
                Type::F16 if simd => simd::f32_to_fp16_row(x, typed_mut::<u16>(out)),
                Type::F16 => simd::scalar::f32_to_fp16_row(x, typed_mut::<u16>(out)),
                Type::BF16 if simd => simd::f32_to_bf16_row(x, typed_mut::<Bf16>(out)),
                Type::BF16 => simd::scalar::f32_to_bf16_row(x, typed_mut::<Bf16>(out)),
                Type::Q8_0 if simd => dot::quantize_row_q8_0(x, blocks_mut::<BlockQ8_0>(out)),
                Type::Q8_0 => dot::scalar::quantize_row_q8_0(x, blocks_mut::<BlockQ8_0>(out)),
                Type::Q8_1 if simd => dot::quantize_row_q8_1(x, blocks_mut::<BlockQ8_1>(out)),
                Type::Q8_1 => dot::scalar::quantize_row_q8_1(x, blocks_mut::<BlockQ8_1>(out)),
                // ggml's CPU backend uses the reference quantizer for q8_K on every path
                Type::Q8_K => quantize_row_q8_k(x, blocks_mut::<BlockQ8K>(out)),
                _ => crate::ggml_abort!("matmul: cannot convert f32 activations to {}", to.name()),
            }
        }
        Type::F16 | Type::BF16 => {
            let mut buf = Vec::new();
            let x = span::<u16>(src1, idx, start, n, &mut buf);
            match (src1.type_, to) {
                (Type::F16, Type::F32) if simd => simd::fp16_to_f32_row(x, typed_mut::<f32>(out)),
                (Type::F16, Type::F32) => simd::scalar::fp16_to_f32_row(x, typed_mut::<f32>(out)),
                (from, to) if from == to => typed_mut::<u16>(out)[..n].copy_from_slice(x),
                (from, to) => crate::ggml_abort!("matmul: cannot convert {} activations to {}", from.name(), to.name()),
            }
        }
        from => crate::ggml_abort!("matmul: cannot convert {} activations to {}", from.name(), to.name()),
    }
}

/// Calls `convert(row, first, last)` for thread `ith`'s share of `nrows` rows of `nblocks`
/// blocks: whole rows when there are enough of them, else a range of each row's blocks.
fn share_rows(params: &ComputeParams, nrows: i64, nblocks: i64, mut convert: impl FnMut(i64, i64, i64)) {
    let (ith, nth) = (params.ith as i64, params.nth as i64);
    if nrows >= nth {
        for r in (ith..nrows).step_by(nth as usize) {
            convert(r, 0, nblocks);
        }
    } else {
        for r in 0..nrows {
            let (first, last) = (ith * nblocks / nth, (ith + 1) * nblocks / nth);
            if first < last {
                convert(r, first, last);
            }
        }
    }
}

/// Phase one: thread `ith`'s share of converting `src1` into `wdata`, rows packed in the
/// activation format (row `(i11, i12, i13)` at `((i13·ne12 + i12)·ne11 + i11)·row_size`).
fn convert_src1(params: &ComputeParams, src1: &Tensor, to: Type, wdata: *mut u8, wsize: usize) {
    let ne = src1.ne;
    let row_size = to.row_size(ne[0]);
    let needed = row_size * (ne[1] * ne[2] * ne[3]) as usize;
    crate::ggml_assert!(wsize >= needed, "matmul: scratch of {} bytes, {} needed", wsize, needed);
    let blck = to.blck_size();
    let simd = use_simd(params);
    share_rows(params, ne[1] * ne[2] * ne[3], ne[0] / blck, |r, first, last| {
        let idx = (r % ne[1], (r / ne[1]) % ne[2], r / (ne[1] * ne[2]));
        let unit = to.type_size();
        let offset = r as usize * row_size + first as usize * unit;
        let len = (last - first) as usize * unit;
        // SAFETY: offset + len <= needed <= wsize; this thread alone writes this range (rows
        // or block ranges are shared out disjointly) until the barrier that follows.
        let out = unsafe { std::slice::from_raw_parts_mut(wdata.add(offset), len) };
        convert_span(src1, to, idx, (first * blck) as usize, ((last - first) * blck) as usize, out, simd);
    });
}

/// The activation rows a product reads: `src1` itself, or its converted copy in the scratch.
struct Activations<'a> {
    src1: &'a Tensor,
    converted: Option<*const u8>,
    row_size: usize,
}

impl Activations<'_> {
    /// Row `(i11, i12, i13)` of the activations.
    fn row(&self, i11: i64, i12: i64, i13: i64) -> &[u8] {
        let ne = self.src1.ne;
        match self.converted {
            // SAFETY: the converted rows fill the scratch densely and the team finished
            // writing them before the barrier; the index lies inside src1's shape.
            Some(base) => unsafe {
                let r = ((i13 * ne[2] + i12) * ne[1] + i11) as usize;
                std::slice::from_raw_parts(base.add(r * self.row_size), self.row_size)
            },
            None => {
                let t = self.src1;
                let offset = i11 as usize * t.nb[1] + i12 as usize * t.nb[2] + i13 as usize * t.nb[3];
                // SAFETY: an existing row of packed elements of src1, read only.
                unsafe { data_bytes(t, offset, self.row_size) }
            }
        }
    }
}

/// One column of a tile: its activation row and where its results go.
#[derive(Clone, Copy)]
struct Column<'a> {
    act: &'a [u8],
    /// The first float of the destination column.
    dst: *mut f32,
}

/// One weight tensor's rows times activation columns, in tiles of up to [`dot::MAX_ROWS`] rows and
/// [`dot::MAX_COLS`] columns over whole rows. (Splitting the rows into cache-sized panels along `k`
/// was measured and gained nothing: the tiles are bound by their arithmetic, not by the
/// second-level cache.)
struct Product<'a> {
    kernel: DotKernel,
    w: &'a Tensor,
    /// Values per row.
    n: usize,
    simd: bool,
}

impl<'a> Product<'a> {
    fn new(kernel: DotKernel, w: &'a Tensor, simd: bool) -> Product<'a> {
        Product { kernel, w, n: w.ne[0] as usize, simd }
    }

    /// The chunk grid ([`chunking`]) of `nr0` result rows by `nr1` columns of this product.
    fn chunks(&self, nr0: i64, nr1: i64, nth: usize) -> (i64, i64, i64, i64) {
        let row_bytes = self.w.type_.row_size(self.n as i64) as i64;
        chunking(nr0, nr1, nth as i64, self.kernel.cols() as i64, self.n as i64, row_bytes)
    }

    /// Writes `w[row] · column` to each column's destination, for `rows` (at most
    /// [`MAX_PANEL_ROWS`]) of the matrix that starts at byte `w_offset`.
    fn run(&self, w_offset: usize, rows: std::ops::Range<i64>, cols: &[Column]) {
        let row_bytes = self.w.type_.row_size(self.n as i64);
        let nr = (rows.end - rows.start) as usize;
        let mut xs: [&[u8]; MAX_PANEL_ROWS] = [&[]; MAX_PANEL_ROWS];
        for (k, x) in xs[..nr].iter_mut().enumerate() {
            let row = rows.start as usize + k;
            // SAFETY: row < ne01 of the weight matrix at `w_offset`, read only.
            *x = unsafe { data_bytes(self.w, w_offset + row * self.w.nb[1], row_bytes) };
        }
        for group in cols.chunks(self.kernel.cols()) {
            let mut acts: [&[u8]; MAX_WIDE_COLS] = [&[]; MAX_WIDE_COLS];
            for (a, c) in acts.iter_mut().zip(group) {
                *a = c.act;
            }
            let mut out = [0.0f32; MAX_PANEL_ROWS * MAX_WIDE_COLS];
            self.kernel.tile(self.n, &xs[..nr], &acts[..group.len()], &mut out, self.simd);
            for (k, results) in out.chunks_exact(group.len()).take(nr).enumerate() {
                for (col, &v) in group.iter().zip(results) {
                    // SAFETY: the destination column holds ne0 = ne01 floats and
                    // rows.start + k < ne01. Each (row, column) of dst belongs to one chunk, so
                    // no other thread writes it.
                    unsafe { col.dst.add(rows.start as usize + k).write(v) };
                }
            }
        }
    }
}

/// The indices `(i11, i12, i13)` of a flat result column `ir1` of a `[.., ne1, ne2, ..]`
/// product, counted up column by column rather than divided out for each.
struct ColumnIndex {
    i11: i64,
    i12: i64,
    i13: i64,
    ne1: i64,
    ne2: i64,
}

impl ColumnIndex {
    fn at(ir1: i64, ne1: i64, ne2: i64) -> Self {
        ColumnIndex { i11: ir1 % ne1, i12: (ir1 / ne1) % ne2, i13: ir1 / (ne1 * ne2), ne1, ne2 }
    }

    /// On to column `ir1 + 1`.
    fn advance(&mut self) {
        self.i11 += 1;
        if self.i11 == self.ne1 {
            self.i11 = 0;
            self.i12 += 1;
            if self.i12 == self.ne2 {
                self.i12 = 0;
                self.i13 += 1;
            }
        }
    }

    /// The column's byte offset in `t`, by its strides `nb[1..4]`.
    fn offset(&self, t: &Tensor) -> usize {
        self.i11 as usize * t.nb[1] + self.i12 as usize * t.nb[2] + self.i13 as usize * t.nb[3]
    }
}

/// Row length (values) from which a chunk holds the fewest rows.
const SHORT_ROW: i64 = 1024;

/// The least weight bytes (times columns) a chunk or task of a product by one column is given,
/// down to one a thread: each starts a new run through memory, whose first lines the
/// prefetchers have not yet learned to fetch, and is a claim on the team's counter (see
/// `repack::task_groups` for the measurements).
const MIN_TASK_WORK: i64 = 256 << 10;

/// Into how many tasks at most `units` units of `unit_work` bytes each (weights times columns)
/// split with [`MIN_TASK_WORK`] or more in each: a multiple of `nth`, `nth` at least; and how
/// many units make that least work.
fn most_tasks(units: i64, unit_work: i64, nth: i64) -> (i64, i64) {
    let min_units = ceil_div(MIN_TASK_WORK, unit_work.max(1));
    (nth * (units / (min_units * nth)).max(1), min_units)
}

/// The chunk grid of a product with `nr0` result rows and `nr1` result columns of `row_len`
/// values each:
/// (chunks along rows, chunks along columns, rows per chunk, columns per chunk). Columns per
/// chunk are rounded up to a multiple of `tile_cols`, the kernel's widest tile, where that
/// leaves every thread a chunk: a chunk's columns then split into whole tiles. By one column,
/// each chunk has [`MIN_TASK_WORK`] of the weights' rows of `row_bytes`, down to one a thread.
fn chunking(nr0: i64, nr1: i64, nth: i64, tile_cols: i64, row_len: i64, row_bytes: i64) -> (i64, i64, i64, i64) {
    // Rows shorter than SHORT_ROW come more to a chunk, so that what a chunk costs besides its
    // products (its column runs, a dispatch per block of rows, taking it from the team) stays
    // small beside them: generation's attention multiplies rows of 64 or 128 values, where
    // chunks of 16 rows spent more on that than on the products.
    let scale = (SHORT_ROW / row_len.max(1)).max(1);
    let chunk_size = if nr0 == 1 || nr1 == 1 { 64 } else { 16 } * scale;
    let (mut nchunk0, mut nchunk1) = (ceil_div(nr0, chunk_size), ceil_div(nr1, chunk_size));
    if nchunk0 * nchunk1 < nth * 4 {
        // Too few chunks to balance: one per thread, along the longer side.
        (nchunk0, nchunk1) = if nr0 > nr1 { (nth, 1) } else { (1, nth) };
    }
    if nr1 == 1 {
        nchunk0 = nchunk0.min(most_tasks(nr0, row_bytes, nth).0);
    }
    let mut dr1 = ceil_div(nr1, nchunk1);
    let whole_tiles = ceil_div(dr1, tile_cols) * tile_cols;
    if nchunk0 * ceil_div(nr1, whole_tiles) >= nth.min(nchunk0 * nchunk1) {
        dr1 = whole_tiles;
        nchunk1 = ceil_div(nr1, dr1);
    }
    (nchunk0, nchunk1, ceil_div(nr0, nchunk0), dr1)
}

/// Whether activations of type `src1` can be brought to `vec_dot_type` by these kernels.
fn activations_supported(src1: Type, vec_dot_type: Type) -> bool {
    src1 == Type::F32 || src1 == vec_dot_type || (src1 == Type::F16 && vec_dot_type == Type::F32)
}

/// Whether [`mul_mat`] computes `node` (for the backend's `supports_op`): weights F32, F16,
/// BF16, Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0 with packed rows; activations F32, F16 for F32 and
/// F16 weights, or already in the weights' activation format.
pub fn mul_mat_supports(node: &Tensor) -> bool {
    let (Some(src0), Some(src1)) = (node.source(0), node.source(1)) else {
        return false;
    };
    let Some(k) = DotKernel::for_type(src0.type_) else { return false };
    let strided_blocks = src1.type_.is_quantized() && src1.nb[0] != src1.type_.type_size();
    activations_supported(src1.type_, k.vec_dot_type)
        && !strided_blocks
        && src0.nb[0] == src0.type_.type_size()
        && node.type_ == Type::F32
        && node.nb[0] == 4
}

/// Whether [`mul_mat_id`] computes `node`: as [`mul_mat_supports`], with I32 expert ids.
pub fn mul_mat_id_supports(node: &Tensor) -> bool {
    let ids = node.source(2);
    mul_mat_supports(node) && ids.is_some_and(|ids| ids.type_ == Type::I32)
}

/// Whether [`out_prod`] computes `node`: weights F32, F16, Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0
/// with packed rows, F32 activations, F32 result.
pub fn out_prod_supports(node: &Tensor) -> bool {
    let (Some(src0), Some(src1)) = (node.source(0), node.source(1)) else {
        return false;
    };
    let weights = matches!(src0.type_, Type::F32 | Type::F16) || copy::is_dequantizable(src0.type_);
    weights
        && src0.nb[0] == src0.type_.type_size()
        && src1.type_ == Type::F32
        && node.type_ == Type::F32
        && node.nb[0] == 4
}

/// Scratch bytes for a MUL_MAT node: the converted `src1`, when it needs converting. That is
/// ggml's size, except that `src1` with strided elements gets scratch here even when it is
/// already in the activation format (ggml refuses such a `src1`), that float conversions get
/// a cache line more (to start at [`line_offset`]), and that F32 products always get room for
/// a copy of `src1`: the plan is made before the data has its addresses, and the product may
/// [`realign`] its activations. Where the [`panel`] route may run, its own scratch (activations
/// in its layout, a decoded panel per thread) when that is larger.
pub fn mul_mat_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let (Some(src0), Some(src1)) = (node.source(0), node.source(1)) else {
        return 0;
    };
    #[cfg(target_arch = "x86_64")]
    let panels = if panel::applies(src0, src1) { panel::work_size(src0, src1, n_tasks) } else { 0 };
    #[cfg(not(target_arch = "x86_64"))]
    let panels = 0;
    if crate::cpu::repack::is_repacked(src0) {
        return repack::work_size(src0, src1).max(panels);
    }
    let blocks = match DotKernel::for_type(src0.type_) {
        Some(k) if needs_conversion(src1, k.vec_dot_type) => {
            let line = if line_offset(src0, k.vec_dot_type).is_some() { CACHE_LINE_SIZE } else { 0 };
            k.vec_dot_type.row_size(src1.nelements()) + line
        }
        Some(k) if k.vec_dot_type == Type::F32 => 4 * src1.nelements() as usize + CACHE_LINE_SIZE,
        _ => 0,
    };
    blocks.max(panels)
}

/// `ggml_compute_forward_mul_mat`: `dst[i0, i1, i2, i3] = src0[:, i0, i2/r2, i3/r3] ·
/// src1[:, i1, i2, i3]` with `r2 = ne12/ne02`, `r3 = ne13/ne03`. Weights of type F32, F16,
/// BF16, Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0 with packed rows; activations F32 (any strides), or
/// F16 for F32 and F16 weights, or already in the activation format; result F32.
///
/// The op's hint (SRC0_IS_HADAMARD) is not used: the product is computed as written.
pub fn mul_mat(params: &ComputeParams, dst: TensorPtr) {
    if dst.is_empty() {
        return;
    }
    let (src0, src1) = (source(dst, 0), source(dst, 1));
    let kernel = dot_kernel("mul_mat", src0.type_);
    let vdt = kernel.vec_dot_type;
    let (ne0, ne1, ne2, ne3) = (dst.ne[0], dst.ne[1], dst.ne[2], dst.ne[3]);
    crate::ggml_assert!(
        ne0 == src0.ne[1] && ne1 == src1.ne[1] && ne2 == src1.ne[2] && ne3 == src1.ne[3],
        "mul_mat: result shape {:?} does not fit {:?} x {:?}",
        dst.ne,
        src0.ne,
        src1.ne
    );
    crate::ggml_assert!(src0.ne[0] == src1.ne[0], "mul_mat: row lengths differ");
    crate::ggml_assert!(src1.ne[2] % src0.ne[2] == 0 && src1.ne[3] % src0.ne[3] == 0, "mul_mat: cannot broadcast");
    crate::ggml_assert!(src0.nb[0] == src0.type_.type_size(), "mul_mat: src0 rows must be packed");
    crate::ggml_assert!(dst.type_ == Type::F32 && dst.nb[0] == 4, "mul_mat: the result must be F32 with packed rows");

    let (mut wdata, mut wsize) = scratch(params);
    #[cfg(target_arch = "x86_64")]
    if use_simd(params) && panel::applies(&src0, &src1) && panel::mul_mat(params, &dst, &src0, &src1, wdata, wsize) {
        return;
    }
    if crate::cpu::repack::is_repacked(&src0) {
        repack::mul_mat(params, &dst, &src0, &src1, wdata, wsize);
        return;
    }
    // A caller's own plan may leave no room for the line offset: the rows start on a line then,
    // and are read where they are when they need no conversion.
    let offset = line_offset(&src0, vdt).filter(|&o| vdt.row_size(src1.nelements()) + o <= wsize);
    let converted =
        needs_conversion(&src1, vdt) || (use_simd(params) && offset.is_some_and(|o| realign(&src1, o, vdt)));
    if converted {
        let offset = offset.unwrap_or(0);
        // SAFETY: offset <= wsize keeps the pointer inside the scratch.
        (wdata, wsize) = (unsafe { wdata.add(offset) }, wsize - offset);
        convert_src1(params, &src1, vdt, wdata, wsize);
    }
    params.barrier();

    let acts = Activations {
        src1: &src1,
        converted: converted.then_some(wdata.cast_const()),
        row_size: vdt.row_size(src1.ne[0]),
    };
    let (r2, r3) = (src1.ne[2] / src0.ne[2], src1.ne[3] / src0.ne[3]);
    let product = Product::new(kernel, &src0, use_simd(params));

    let (nr0, nr1) = (ne0, ne1 * ne2 * ne3);
    let (nchunk0, nchunk1, dr0, dr1) = product.chunks(nr0, nr1, params.nth);
    let total = (nchunk0 * nchunk1) as usize;
    let mut chunk = params.ith;
    while chunk < total {
        let (c0, c1) = (chunk as i64 % nchunk0, chunk as i64 / nchunk0);
        let rows = dr0 * c0..(dr0 * c0 + dr0).min(nr0);
        let cols = dr1 * c1..(dr1 * c1 + dr1).min(nr1);
        for cb in (cols.start..cols.end).step_by(BLOCK_COLS as usize) {
            let cb_end = (cb + BLOCK_COLS).min(cols.end);
            // The block's columns, in runs that multiply the same src0 matrix.
            let mut ir1 = cb;
            let mut at = ColumnIndex::at(ir1, ne1, ne2);
            while ir1 < cb_end {
                let mut run: [Option<Column>; BLOCK_COLS as usize] = [None; BLOCK_COLS as usize];
                let matrix = (at.i12 / r2, at.i13 / r3);
                let mut count = 0;
                while ir1 < cb_end && (at.i12 / r2, at.i13 / r3) == matrix {
                    // SAFETY: the column exists in dst (indices from its shape).
                    let dst_col = unsafe { dst.data.cast::<u8>().add(at.offset(&dst)).cast::<f32>() };
                    run[count] = Some(Column { act: acts.row(at.i11, at.i12, at.i13), dst: dst_col });
                    count += 1;
                    ir1 += 1;
                    at.advance();
                }
                let first = run[0].unwrap_or_else(|| crate::ggml_abort!("mul_mat: empty column run"));
                let columns: [Column; BLOCK_COLS as usize] = std::array::from_fn(|k| run[k].unwrap_or(first));
                let w_offset = matrix.0 as usize * src0.nb[2] + matrix.1 as usize * src0.nb[3];
                for rb in (rows.start..rows.end).step_by(BLOCK_ROWS as usize) {
                    let rb_end = (rb + BLOCK_ROWS).min(rows.end);
                    product.run(w_offset, rb..rb_end, &columns[..count]);
                }
            }
        }
        if params.nth >= total {
            break;
        }
        chunk = params.next_chunk();
    }
}

/// Bumps `*cursor` to a multiple of `align` (as an address), then reserves `size` bytes
/// there; returns the reserved start.
fn reserve(cursor: &mut usize, size: usize, align: usize) -> usize {
    let start = cursor.next_multiple_of(align);
    *cursor = start + size;
    start
}

/// Where MUL_MAT_ID keeps its pieces in the scratch (addresses).
struct IdLayout {
    converted: usize,
    counts: usize,
    rows: usize,
    counters: usize,
    end: usize,
}

/// A (slot, token) pair routed to an expert (`struct mmid_row_mapping`).
#[derive(Clone, Copy)]
#[repr(C)]
struct RowMapping {
    slot: i32,
    token: i32,
}

fn id_layout(base: usize, src1: &Tensor, ids: &Tensor, n_as: usize, vdt: Type) -> IdLayout {
    let mut cursor = base;
    let converted_size = if needs_conversion(src1, vdt) { vdt.row_size(src1.nelements()) } else { 0 };
    let converted = reserve(&mut cursor, converted_size, 8);
    let counts = reserve(&mut cursor, n_as * 8, 8);
    let n_pairs = (ids.ne[0] * ids.ne[1]) as usize;
    let rows = reserve(&mut cursor, n_as * n_pairs * std::mem::size_of::<RowMapping>(), 8);
    let counters = reserve(&mut cursor, CACHE_LINE_SIZE * n_as, CACHE_LINE_SIZE);
    IdLayout { converted, counts, rows, counters, end: cursor }
}

/// Scratch bytes for a MUL_MAT_ID node: the converted `src1`, the per-expert row counts and
/// row lists, and a cache line per expert for its chunk counter (with alignment slack).
pub fn mul_mat_id_work_size(node: &Tensor, _n_tasks: usize) -> usize {
    // SAFETY: a MUL_MAT_ID node's sources are live tensors of the graph.
    let (Some(src0), Some(src1), Some(ids)) = (node.source(0), node.source(1), node.source(2)) else {
        return 0;
    };
    let Some(k) = DotKernel::for_type(src0.type_) else { return 0 };
    let n_as = src0.ne[2] as usize;
    let mut size = 0;
    if needs_conversion(src1, k.vec_dot_type) {
        size += k.vec_dot_type.row_size(src1.nelements()) + 8;
    }
    size += n_as * 8 + 8;
    size += n_as * (ids.ne[0] * ids.ne[1]) as usize * std::mem::size_of::<RowMapping>() + 8;
    size += CACHE_LINE_SIZE * n_as + CACHE_LINE_SIZE;
    size
}

/// `ggml_compute_forward_mul_mat_id`: for each token `t` (dimension 2 of `src1`) and slot `s`
/// (`ids[s, t]` names an expert `e`), `dst[:, s, t] = src0[:, :, e] · src1[:, s % ne11, t]`.
/// Types as for [`mul_mat`].
pub fn mul_mat_id(params: &ComputeParams, dst: TensorPtr) {
    if dst.is_empty() {
        return;
    }
    let (src0, src1, ids) = (source(dst, 0), source(dst, 1), source(dst, 2));
    let kernel = dot_kernel("mul_mat_id", src0.type_);
    let vdt = kernel.vec_dot_type;
    let n_as = src0.ne[2] as usize;
    let n_ids = ids.ne[0];
    crate::ggml_assert!(ids.type_ == Type::I32, "mul_mat_id: ids must be I32");
    crate::ggml_assert!(src0.ne[0] == src1.ne[0], "mul_mat_id: row lengths differ");
    crate::ggml_assert!(
        dst.ne[0] == src0.ne[1] && dst.ne[1] == n_ids && dst.ne[2] == src1.ne[2] && ids.ne[1] == src1.ne[2],
        "mul_mat_id: result shape {:?} does not fit {:?}, {:?} and ids {:?}",
        dst.ne,
        src0.ne,
        src1.ne,
        ids.ne
    );
    crate::ggml_assert!(src0.nb[0] == src0.type_.type_size(), "mul_mat_id: src0 rows must be packed");
    crate::ggml_assert!(
        dst.type_ == Type::F32 && dst.nb[0] == 4,
        "mul_mat_id: the result must be F32 with packed rows"
    );

    let (wdata, wsize) = scratch(params);
    let layout = id_layout(wdata as usize, &src1, &ids, n_as, vdt);
    crate::ggml_assert!(layout.end - wdata as usize <= wsize, "mul_mat_id: scratch of {} bytes is too small", wsize);
    let at = |addr: usize| wdata.wrapping_add(addr - wdata as usize);

    let converted = needs_conversion(&src1, vdt);
    if converted {
        convert_src1(params, &src1, vdt, at(layout.converted), layout.counts - layout.converted);
    }

    let n_pairs = (ids.ne[0] * ids.ne[1]) as usize;
    let counts_ptr = at(layout.counts).cast::<i64>();
    let rows_ptr = at(layout.rows).cast::<RowMapping>();
    if params.ith == 0 {
        // SAFETY: the counts and row lists lie inside the scratch (checked above), aligned to
        // 8 by the layout; only thread 0 writes them, before the barrier below.
        let (counts, rows) = unsafe {
            (std::slice::from_raw_parts_mut(counts_ptr, n_as), std::slice::from_raw_parts_mut(rows_ptr, n_as * n_pairs))
        };
        counts.fill(0);
        for token in 0..ids.ne[1] {
            for slot in 0..n_ids {
                let off = token as usize * ids.nb[1] + slot as usize * ids.nb[0];
                // SAFETY: (slot, token) lies inside ids, an I32 tensor.
                let e = unsafe { ids.data.cast::<u8>().add(off).cast::<i32>().read_unaligned() };
                crate::ggml_assert!(
                    (0..n_as as i32).contains(&e),
                    "mul_mat_id: expert id {} out of range 0..{}",
                    e,
                    n_as
                );
                let e = e as usize;
                rows[e * n_pairs + counts[e] as usize] = RowMapping { slot: slot as i32, token: token as i32 };
                counts[e] += 1;
            }
        }
    }
    let counter = |e: usize| {
        // SAFETY: cache line e of the counters lies inside the scratch (checked above) and is
        // aligned for an AtomicUsize; it is only ever accessed atomically during the node.
        unsafe { AtomicUsize::from_ptr(at(layout.counters + e * CACHE_LINE_SIZE).cast::<usize>()) }
    };
    for e in (params.ith..n_as).step_by(params.nth) {
        counter(e).store(params.nth, Ordering::Relaxed);
    }
    params.barrier();

    // SAFETY: written by thread 0 before the barrier, only read from here on.
    let (counts, rows) = unsafe {
        (
            std::slice::from_raw_parts(counts_ptr.cast_const(), n_as),
            std::slice::from_raw_parts(rows_ptr.cast_const(), n_as * n_pairs),
        )
    };
    let acts = Activations {
        src1: &src1,
        converted: converted.then_some(at(layout.converted).cast_const()),
        row_size: vdt.row_size(src1.ne[0]),
    };
    let product = Product::new(kernel, &src0, use_simd(params));
    let nr0 = src0.ne[1];
    for e in 0..n_as {
        let nr1 = counts[e];
        if nr1 == 0 {
            continue;
        }
        let mapped = &rows[e * n_pairs..e * n_pairs + nr1 as usize];
        let w_offset = e * src0.nb[2];
        let (nchunk0, nchunk1, dr0, dr1) = product.chunks(nr0, nr1, params.nth);
        let total = (nchunk0 * nchunk1) as usize;
        let mut chunk = params.ith;
        while chunk < total {
            let (c0, c1) = (chunk as i64 % nchunk0, chunk as i64 / nchunk0);
            let rows = dr0 * c0..(dr0 * c0 + dr0).min(nr0);
            let cols = dr1 * c1..(dr1 * c1 + dr1).min(nr1);
            for cb in (cols.start..cols.end).step_by(BLOCK_COLS as usize) {
                let cb_end = (cb + BLOCK_COLS).min(cols.end);
                let columns: Vec<Column> = mapped[cb as usize..cb_end as usize]
                    .iter()
                    .map(|m| {
                        let (slot, token) = (i64::from(m.slot), i64::from(m.token));
                        let dst_off = slot as usize * dst.nb[1] + token as usize * dst.nb[2];
                        // SAFETY: (slot, token) is a column of dst (checked shapes).
                        let dst_col = unsafe { dst.data.cast::<u8>().add(dst_off).cast::<f32>() };
                        Column { act: acts.row(slot % src1.ne[1], token, 0), dst: dst_col }
                    })
                    .collect();
                for rb in (rows.start..rows.end).step_by(BLOCK_ROWS as usize) {
                    let rb_end = (rb + BLOCK_ROWS).min(rows.end);
                    product.run(w_offset, rb..rb_end, &columns);
                }
            }
            if params.nth >= total {
                break;
            }
            chunk = counter(e).fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Scratch bytes for an OUT_PROD node: one row of floats per task for F16 and quantized
/// weights, which are expanded before use.
pub fn out_prod_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let Some(src0) = node.source(0) else { return 0 };
    if src0.type_ == Type::F16 || src0.type_.is_quantized() { 4 * src0.ne[0] as usize * n_tasks } else { 0 }
}

/// Expands a weight row of `ty` (F16 or any format the CPU kernels dequantize) into `out`.
fn expand_row(ty: Type, bytes: &[u8], out: &mut [f32], simd: bool) {
    if ty == Type::F16 {
        let h: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        if simd { simd::fp16_to_f32_row(&h, out) } else { simd::scalar::fp16_to_f32_row(&h, out) }
    } else {
        let n = bytes.len() / ty.type_size() * ty.blck_size() as usize;
        // SAFETY: `bytes` is one whole row of `ty`, `n` values long, read only.
        unsafe { copy::dequantize_row_from(ty, bytes.as_ptr(), &mut out[..n]) }
    }
}

/// `ggml_compute_forward_out_prod`: `dst[i0, i1, i2, i3] = Σ_k src0[i0, k, i2/r2, i3/r3] ·
/// src1[i1, k, i2, i3]`, `src0` F32, F16 or a quantized format with packed rows,
/// `src1` F32 with any strides, result F32. Each thread owns a range of result rows: it
/// clears them and accumulates into them.
pub fn out_prod(params: &ComputeParams, dst: TensorPtr) {
    if dst.is_empty() {
        return;
    }
    let (src0, src1) = (source(dst, 0), source(dst, 1));
    let [ne0, ne1, ne2, ne3] = dst.ne;
    crate::ggml_assert!(
        ne0 == src0.ne[0] && ne1 == src1.ne[0] && ne2 == src1.ne[2] && ne3 == src1.ne[3] && src0.ne[1] == src1.ne[1],
        "out_prod: result shape {:?} does not fit {:?} and {:?}",
        dst.ne,
        src0.ne,
        src1.ne
    );
    crate::ggml_assert!(ne2 % src0.ne[2] == 0 && ne3 % src0.ne[3] == 0, "out_prod: cannot broadcast");
    crate::ggml_assert!(src0.nb[0] == src0.type_.type_size(), "out_prod: src0 rows must be packed");
    crate::ggml_assert!(src1.type_ == Type::F32, "out_prod: src1 must be F32, not {}", src1.type_.name());
    crate::ggml_assert!(dst.type_ == Type::F32 && dst.nb[0] == 4, "out_prod: the result must be F32 with packed rows");

    let n = ne0 as usize;
    let simd = use_simd(params);
    let expand = src0.type_ != Type::F32;
    if expand && src0.type_ != Type::F16 && DotKernel::for_type(src0.type_).is_none() {
        crate::ggml_abort!("out_prod: no expansion for {} weights", src0.type_.name());
    }
    let scratch_row: &mut [f32] = if expand {
        let (wdata, wsize) = scratch(params);
        let stride = n + CACHE_LINE_SIZE / 4;
        let offset = stride * params.ith * 4;
        crate::ggml_assert!(offset + 4 * n <= wsize, "out_prod: scratch of {} bytes is too small", wsize);
        // SAFETY: inside the scratch (checked), cache-line aligned, and this thread's own slice.
        unsafe { std::slice::from_raw_parts_mut(wdata.add(offset).cast::<f32>(), n) }
    } else {
        &mut []
    };

    let nr = ne1 * ne2 * ne3;
    let dr = ceil_div(nr, params.nth as i64);
    let (ir0, ir1) = ((dr * params.ith as i64).min(nr), (dr * params.ith as i64 + dr).min(nr));
    let (r2, r3) = (ne2 / src0.ne[2], ne3 / src0.ne[3]);
    let ne01 = src0.ne[1];
    let row_bytes = src0.type_.row_size(src0.ne[0]);
    let dst_row = |ir: i64| {
        let (i1, i2, i3) = (ir % ne1, (ir / ne1) % ne2, ir / (ne1 * ne2));
        let off = i1 as usize * dst.nb[1] + i2 as usize * dst.nb[2] + i3 as usize * dst.nb[3];
        // SAFETY: row ir of dst exists and belongs to this thread alone (row ranges are
        // disjoint); it holds ne0 packed floats.
        (unsafe { std::slice::from_raw_parts_mut(dst.data.cast::<u8>().add(off).cast::<f32>(), n) }, i1, i2, i3)
    };
    for ir in ir0..ir1 {
        dst_row(ir).0.fill(0.0);
    }

    // Blocks of result rows; within a block, each weight row k is expanded once for all the
    // rows that use the same weight matrix (consecutive rows mostly do).
    for bir in (ir0..ir1).step_by(BLOCK_ROWS as usize) {
        let bir_end = (bir + BLOCK_ROWS).min(ir1);
        for k in 0..ne01 {
            let mut expanded = None;
            for ir in bir..bir_end {
                let (d, i1, i2, i3) = dst_row(ir);
                let w_off = (i2 / r2) as usize * src0.nb[2] + (i3 / r3) as usize * src0.nb[3] + k as usize * src0.nb[1];
                // SAFETY: row k of weight matrix (i2/r2, i3/r3) exists and is read only.
                let w = unsafe { data_bytes(&src0, w_off, row_bytes) };
                let x: &[f32] = if expand {
                    if expanded != Some(w_off) {
                        expand_row(src0.type_, w, scratch_row, simd);
                        expanded = Some(w_off);
                    }
                    &*scratch_row
                } else {
                    typed_row(w)
                };
                let s1_off = i1 as usize * src1.nb[0]
                    + k as usize * src1.nb[1]
                    + i2 as usize * src1.nb[2]
                    + i3 as usize * src1.nb[3];
                // SAFETY: element (i1, k, i2, i3) of src1, an F32 tensor.
                let a = unsafe { src1.data.cast::<u8>().add(s1_off).cast::<f32>().read_unaligned() };
                if simd { simd::axpy_f32(d, x, a) } else { simd::scalar::axpy_f32(d, x, a) }
            }
        }
    }
}

/// A packed F32 row from its bytes.
fn typed_row(bytes: &[u8]) -> &[f32] {
    crate::ggml_assert!((bytes.as_ptr() as usize).is_multiple_of(4), "out_prod: misaligned F32 row");
    // SAFETY: aligned (checked), the length rounds down to whole floats, any bits are valid.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), bytes.len() / 4) }
}

#[cfg(test)]
pub(super) mod tests {
    use super::tests_support::placed;
    use super::*;
    use crate::core::context::Context;
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::ops::matmul as ops;
    use crate::core::ops::shape::{permute, transpose};
    use crate::core::status::Status;
    use crate::cpu::compute::compute;
    use crate::cpu::kernels::testing::{Rng, ctx, nmse, random};
    use crate::cpu::plan::plan;
    use crate::quants::chunk;

    /// Fills a tensor, plain or contiguous and quantized, with random values; returns what it
    /// holds, as f64 in logical order.
    pub(super) fn fill(t: TensorPtr, rng: &mut Rng) -> Vec<f64> {
        if matches!(t.type_, Type::F32 | Type::F16 | Type::BF16) {
            return random(t, rng, -1.0, 1.0);
        }
        assert!(t.is_contiguous() && copy::is_dequantizable(t.type_), "cannot fill {}", t.type_.name());
        let n = t.nelements() as usize;
        let x: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let mut y = vec![0.0; n];
        // SAFETY: the tensor is allocated and contiguous: the row of `n` values of its type.
        unsafe {
            let bytes = std::slice::from_raw_parts_mut(t.data.cast::<u8>(), t.type_.row_size(n as i64));
            let ne0 = t.ne[0] as usize;
            let imatrix = vec![1.0; ne0];
            chunk::quantize_chunk(t.type_, &x, bytes, ne0, chunk::requires_imatrix(t.type_).then_some(&imatrix[..]));
            copy::dequantize_row_from(t.type_, t.data.cast::<u8>(), &mut y);
        }
        y.iter().map(|&v| f64::from(v)).collect()
    }

    /// Element `(i0, i1, i2, i3)` of an F32 tensor with any strides.
    pub(super) fn at(t: &Tensor, i: [i64; 4]) -> f64 {
        let off: usize = (0..4).map(|d| i[d] as usize * t.nb[d]).sum();
        // SAFETY: the index is inside the tensor.
        f64::from(unsafe { t.data.cast::<u8>().add(off).cast::<f32>().read_unaligned() })
    }

    /// The value at a logical index of a tensor.
    type Values = Box<dyn Fn([i64; 4]) -> f64>;

    /// Logical values of a (possibly strided) view `v` of a contiguous tensor whose values
    /// are `base`.
    fn view_values(v: &Tensor, base_t: &Tensor, base: &[f64]) -> Values {
        let off0 = v.data as usize - base_t.data as usize;
        let (vnb, bne) = (v.nb, base_t.ne);
        let elem = base_t.type_.type_size();
        let base = base.to_vec();
        Box::new(move |i: [i64; 4]| {
            let byte = off0 + (0..4).map(|d| i[d] as usize * vnb[d]).sum::<usize>();
            // The base is contiguous: its flat index is the byte offset in elements.
            let flat = byte / elem;
            assert!(flat < bne.iter().product::<i64>() as usize);
            base[flat]
        })
    }

    pub(super) fn run(c: &mut Context, node: TensorPtr, n_threads: i32, use_ref: bool) {
        let g = new_graph_custom(c, 16, false);
        g.get_mut().build_forward_expand(node);
        let mut p = plan(&g, n_threads, None, &crate::cpu::kernels::CpuKernels);
        // an odd start, to exercise the kernels' own alignment
        let mut work = vec![0u8; p.work_size + 1];
        p.work_data = if p.work_size > 0 { work.as_mut_ptr().wrapping_add(1) } else { std::ptr::null_mut() };
        p.use_ref = use_ref;
        let kernel = |params: &ComputeParams, t: TensorPtr| {
            match t.op {
                Op::MUL_MAT => mul_mat(params, t),
                Op::MUL_MAT_ID => mul_mat_id(params, t),
                Op::OUT_PROD => out_prod(params, t),
                _ => {}
            }
            Status::SUCCESS
        };
        // SAFETY: no pool, the work buffer outlives the computation.
        assert_eq!(unsafe { compute(&g, &p, &kernel) }, Status::SUCCESS);
    }

    pub(super) fn all(t: &Tensor) -> Vec<[i64; 4]> {
        let ne = t.ne;
        let mut v = Vec::new();
        for i3 in 0..ne[3] {
            for i2 in 0..ne[2] {
                for i1 in 0..ne[1] {
                    for i0 in 0..ne[0] {
                        v.push([i0, i1, i2, i3]);
                    }
                }
            }
        }
        v
    }

    const TYPES: [Type; 8] =
        [Type::F32, Type::F16, Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0];

    fn tolerance(ty: Type) -> f64 {
        match ty {
            Type::F32 => 1e-10,
            Type::F16 | Type::BF16 => 1e-5,
            _ => 5e-4,
        }
    }

    /// mul_mat of a `ty` matrix [k, m, 2, 1] by an activation built by `make_b` (shape
    /// [k, n, 4, 2] once viewed), on 1 and 3 threads, SIMD and reference.
    fn check_mul_mat(ty: Type, k: i64, m: i64, n: i64, layout: &str) {
        let mut results: Vec<Vec<f64>> = Vec::new();
        for use_ref in [false, true] {
            for threads in [1, 3] {
                let mut c = ctx();
                let mut rng = Rng::new(0x1234_5678 + k as u64);
                let a = c.new_tensor(ty, &[k, m, 2, 1]);
                let av = fill(a, &mut rng);
                let (b, bv): (TensorPtr, Values) = match layout {
                    "packed" => {
                        let b = c.new_tensor(Type::F32, &[k, n, 4, 2]);
                        let v = fill(b, &mut rng);
                        (b, view_values(&b, &b, &v))
                    }
                    "permuted" => {
                        let base = c.new_tensor(Type::F32, &[k, 4, n, 2]);
                        let v = fill(base, &mut rng);
                        let b = permute(&mut c, base, 0, 2, 1, 3);
                        (b, view_values(&b, &base, &v))
                    }
                    "transposed" => {
                        let base = c.new_tensor(Type::F32, &[n, k, 4, 2]);
                        let v = fill(base, &mut rng);
                        let b = transpose(&mut c, base);
                        (b, view_values(&b, &base, &v))
                    }
                    "f16" => {
                        let b = c.new_tensor(Type::F16, &[k, n, 4, 2]);
                        let v = fill(b, &mut rng);
                        (b, view_values(&b, &b, &v))
                    }
                    other => panic!("{other}"),
                };
                assert_eq!(b.ne, [k, n, 4, 2]);
                let d = ops::mul_mat(&mut c, a, b);
                run(&mut c, d, threads, use_ref);
                let got: Vec<f64> = all(&d).into_iter().map(|i| at(&d, i)).collect();
                let want: Vec<f64> = all(&d)
                    .into_iter()
                    .map(|[i0, i1, i2, i3]| {
                        let w = |kk: i64| av[(kk + k * (i0 + m * (i2 / 2))) as usize];
                        (0..k).map(|kk| w(kk) * bv([kk, i1, i2, i3])).sum()
                    })
                    .collect();
                let e = nmse(&got, &want);
                assert!(e < tolerance(ty), "{} {layout} k={k} threads={threads} ref={use_ref}: nmse {e}", ty.name());
                results.push(got);
            }
        }
        // every run computes the same, up to float rounding
        for r in &results[1..] {
            assert!(nmse(r, &results[0]) < 1e-9, "{} {layout}: runs disagree", ty.name());
        }
    }

    #[test]
    fn activations_are_realigned_to_the_weights_line_offset() {
        for (ty, k) in [(Type::F32, 64), (Type::F32, 72), (Type::F16, 96), (Type::BF16, 64)] {
            for (wo, ao) in [(0, 0), (32, 0), (0, 32), (16, 48), (48, 48), (4, 8)] {
                let mut c = ctx();
                let mut rng = Rng::new(7);
                let a = placed(&mut c, ty, k, 5, wo);
                let b = placed(&mut c, Type::F32, k, 7, ao);
                let (av, bv) = (fill(a, &mut rng), fill(b, &mut rng));
                let rows_in_lines = ty.row_size(k).is_multiple_of(CACHE_LINE_SIZE);
                assert_eq!(line_offset(&a, ty), rows_in_lines.then_some(wo));
                assert_eq!(
                    line_offset(&a, ty).is_some_and(|o| realign(&b, o, ty)),
                    ty == Type::F32 && rows_in_lines && wo != ao
                );
                let d = ops::mul_mat(&mut c, a, b);
                for (threads, use_ref) in [(1, false), (3, false), (1, true)] {
                    run(&mut c, d, threads, use_ref);
                    let got: Vec<f64> = all(&d).into_iter().map(|i| at(&d, i)).collect();
                    let want: Vec<f64> = all(&d)
                        .into_iter()
                        .map(|[i0, i1, ..]| {
                            (0..k).map(|kk| av[(kk + k * i0) as usize] * bv[(kk + k * i1) as usize]).sum()
                        })
                        .collect();
                    let e = nmse(&got, &want);
                    assert!(e < tolerance(ty), "{} k={k} at {wo}/{ao}, {threads} threads: nmse {e}", ty.name());
                }
            }
        }
    }

    #[test]
    fn mul_mat_panel_formats_with_broadcast() {
        let grids = [Type::IQ1_S, Type::IQ1_M, Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S];
        let ternary = [Type::TQ1_0, Type::TQ2_0];
        let low_bit = [Type::Q1_0, Type::Q2_0];
        let others =
            [Type::IQ4_NL, Type::MXFP4, Type::Q2_K, Type::Q3_K, Type::Q4_K, Type::Q5_K, Type::Q6_K, Type::IQ4_XS];
        for ty in others.into_iter().chain(grids).chain(ternary).chain(low_bit) {
            check_mul_mat(ty, 512, 37, 5, "packed");
            check_mul_mat(ty, 256, 16, 1, "transposed");
        }
        // BF16 as pairs: a row with a part of a transpose (1100 = 1024 + 76), a short row, and
        // an odd one (the widening kind)
        check_mul_mat(Type::BF16, 1100, 37, 5, "packed");
        check_mul_mat(Type::BF16, 38, 16, 1, "transposed");
        check_mul_mat(Type::BF16, 39, 16, 1, "packed");
    }

    #[test]
    fn mul_mat_panels_take_large_activations_a_span_at_a_time() {
        // over 8 MiB of converted activations (1024 and 2048 columns of 2148 values, as f32
        // and as bfloat16 pairs): a span of 2048 values, then a part of one
        check_mul_mat(Type::F16, 2148, 17, 128, "packed");
        check_mul_mat(Type::BF16, 2148, 17, 256, "packed");
    }

    #[test]
    fn mul_mat_every_type_with_broadcast() {
        for ty in TYPES {
            let k = if ty.is_quantized() { 96 } else { 37 };
            check_mul_mat(ty, k, 11, 5, "packed");
        }
    }

    #[test]
    fn mul_mat_strided_activations() {
        for ty in [Type::F32, Type::F16, Type::Q4_0, Type::Q8_0] {
            let k = if ty.is_quantized() { 64 } else { 41 };
            check_mul_mat(ty, k, 9, 6, "permuted");
            check_mul_mat(ty, k, 9, 3, "transposed");
        }
        check_mul_mat(Type::F32, 29, 7, 5, "f16");
    }

    #[test]
    fn mul_mat_chunks_cover_large_products() {
        // enough rows and columns for the 16x16 chunk grid with dynamic hand-out
        check_mul_mat(Type::Q4_0, 64, 70, 37, "packed");
        check_mul_mat(Type::F32, 33, 70, 1, "packed");
    }

    #[test]
    fn mul_mat_long_rows() {
        // long rows, and column runs longer than a tile
        check_mul_mat(Type::F32, 600, 9, 5, "packed");
        check_mul_mat(Type::F16, 1100, 6, 3, "packed");
        check_mul_mat(Type::Q8_0, 1056, 6, 3, "permuted");
    }

    #[test]
    fn mul_mat_vector_splits_the_conversion_by_blocks() {
        // one activation row and more threads than rows: each thread quantizes some blocks
        for ty in [Type::Q4_0, Type::Q5_1, Type::BF16] {
            let (k, m) = (256, 45);
            let mut results = Vec::new();
            for (threads, use_ref) in [(1, true), (3, false), (4, true)] {
                let mut c = ctx();
                let mut rng = Rng::new(5);
                let a = c.new_tensor(ty, &[k, m]);
                let av = fill(a, &mut rng);
                let b = c.new_tensor(Type::F32, &[k]);
                let bv = fill(b, &mut rng);
                let d = ops::mul_mat(&mut c, a, b);
                run(&mut c, d, threads, use_ref);
                let got: Vec<f64> = (0..m).map(|i| at(&d, [i, 0, 0, 0])).collect();
                let want: Vec<f64> =
                    (0..m).map(|i| (0..k).map(|j| av[(i * k + j) as usize] * bv[j as usize]).sum()).collect();
                assert!(nmse(&got, &want) < tolerance(ty), "{} on {threads} threads", ty.name());
                results.push(got);
            }
            assert!(nmse(&results[1], &results[0]) < 1e-9 && nmse(&results[2], &results[0]) < 1e-9);
        }
    }

    #[test]
    fn mul_mat_id_routes_tokens_to_experts() {
        for ty in [Type::F32, Type::F16, Type::Q4_1, Type::Q8_0] {
            for b_rows in [1, 2] {
                let mut results = Vec::new();
                for use_ref in [false, true] {
                    for threads in [1, 3] {
                        let (k, m, n_as, n_ids, n_tok) = (if ty.is_quantized() { 64 } else { 35 }, 21, 4, 2, 9);
                        let mut c = ctx();
                        let mut rng = Rng::new(99);
                        let a = c.new_tensor(ty, &[k, m, n_as]);
                        let av = fill(a, &mut rng);
                        let b = c.new_tensor(Type::F32, &[k, b_rows, n_tok]);
                        let bv = fill(b, &mut rng);
                        let ids = c.new_tensor(Type::I32, &[n_ids, n_tok]);
                        let chosen: Vec<i32> = (0..n_ids * n_tok).map(|i| ((i * 7 + i / 3) % n_as) as i32).collect();
                        // SAFETY: ids holds n_ids * n_tok packed i32.
                        unsafe { std::ptr::copy_nonoverlapping(chosen.as_ptr(), ids.data.cast::<i32>(), chosen.len()) };
                        let d = ops::mul_mat_id(&mut c, a, b, ids);
                        run(&mut c, d, threads, use_ref);
                        let got: Vec<f64> = all(&d).into_iter().map(|i| at(&d, i)).collect();
                        let want: Vec<f64> = all(&d)
                            .into_iter()
                            .map(|[i0, slot, tok, _]| {
                                let e = i64::from(chosen[(slot + n_ids * tok) as usize]);
                                (0..k)
                                    .map(|kk| {
                                        av[(kk + k * (i0 + m * e)) as usize]
                                            * bv[(kk + k * (slot % b_rows + b_rows * tok)) as usize]
                                    })
                                    .sum()
                            })
                            .collect();
                        let e = nmse(&got, &want);
                        assert!(
                            e < tolerance(ty),
                            "mul_mat_id {} threads={threads} ref={use_ref}: nmse {e}",
                            ty.name()
                        );
                        results.push(got);
                    }
                }
                for r in &results[1..] {
                    assert!(nmse(r, &results[0]) < 1e-9);
                }
            }
        }
    }

    #[test]
    fn out_prod_of_each_weight_kind() {
        for ty in [Type::F32, Type::F16, Type::Q4_0, Type::Q5_1, Type::Q8_0, Type::Q4_K, Type::IQ4_NL, Type::MXFP4] {
            for threads in [1, 3] {
                for use_ref in [false, true] {
                    let (m, kk, n) = (if ty.is_quantized() { 256 } else { 19 }, 6, 5);
                    let bcast = if ty == Type::F32 { 2 } else { 1 };
                    let mut c = ctx();
                    let mut rng = Rng::new(7);
                    let a = c.new_tensor(ty, &[m, kk, 2, 1]);
                    let av = fill(a, &mut rng);
                    // b is used transposed, as in backpropagation: [n, kk] from a [kk, n] tensor
                    let base = c.new_tensor(Type::F32, &[kk, n, 2 * bcast, 1]);
                    let bv = fill(base, &mut rng);
                    let b = transpose(&mut c, base);
                    let d = ops::out_prod(&mut c, a, b);
                    run(&mut c, d, threads, use_ref);
                    let got: Vec<f64> = all(&d).into_iter().map(|i| at(&d, i)).collect();
                    let want: Vec<f64> = all(&d)
                        .into_iter()
                        .map(|[i0, i1, i2, _]| {
                            (0..kk)
                                .map(|k| {
                                    av[(i0 + m * (k + kk * (i2 / bcast))) as usize]
                                        * bv[(k + kk * (i1 + n * i2)) as usize]
                                })
                                .sum()
                        })
                        .collect();
                    let e = nmse(&got, &want);
                    assert!(e < 1e-10, "out_prod {} threads={threads} ref={use_ref}: nmse {e}", ty.name());
                }
            }
        }
    }

    #[test]
    fn chunks_hold_whole_tiles_unless_a_thread_would_go_idle() {
        for (nr0, nr1, nth, tile) in
            [(4096, 512, 2, 6), (1024, 77, 4, 4), (64, 6, 2, 6), (5, 1, 8, 6), (3000, 13, 2, 2), (4, 6, 2, 6)]
        {
            let (nc0, nc1, dr0, dr1) = chunking(nr0, nr1, nth, tile, 4096, 4096);
            assert!(nc0 * dr0 >= nr0 && nc1 * dr1 >= nr1, "{nr0}x{nr1}: the chunks cover the result");
            assert!((nc1 - 1) * dr1 < nr1, "{nr0}x{nr1}: no empty column chunk");
            assert!(nc0 * nc1 >= nth.min(nr0 * nr1), "{nr0}x{nr1}: a chunk for every thread");
        }
        // a prompt's columns go in whole 6-column tiles
        assert_eq!(chunking(4096, 512, 2, 6, 4096, 4096).3 % 6, 0);
        // six columns on two threads stay split in two chunks rather than one whole tile
        assert_eq!(chunking(4, 6, 2, 6, 4096, 4096), (1, 2, 4, 3));
        // rows of 64 values (attention's) go 256 to a chunk, 16 of 1024 or more
        assert_eq!(chunking(1024, 4, 1, 6, 64, 128).2, 256);
        assert_eq!(chunking(1024, 4, 1, 6, 1024, 2048).2, 16);
        assert_eq!(chunking(1024, 4, 1, 6, 4096, 4096).2, 16);
        // by one column, chunks of 256 KiB of weights at least, down to one a thread: IQ2_XS
        // 1024×1024 (rows of 296 bytes) in two halves, F16 32000×1024 in chunks of 128 rows
        assert_eq!(chunking(1024, 1, 2, 6, 1024, 296).0, 2);
        assert_eq!(chunking(32000, 1, 2, 6, 1024, 2048).2, 128);
    }

    #[test]
    fn supported_combinations() {
        let mut c = ctx();
        let q = c.new_tensor(Type::Q4_0, &[64, 8]);
        let f16 = c.new_tensor(Type::F16, &[64, 3]);
        let f32 = c.new_tensor(Type::F32, &[64, 3]);
        let k4 = c.new_tensor(Type::Q4_K, &[256, 3]);
        let k4b = c.new_tensor(Type::F32, &[256, 3]);
        assert!(mul_mat_supports(&ops::mul_mat(&mut c, q, f32)));
        assert!(!mul_mat_supports(&ops::mul_mat(&mut c, q, f16)));
        assert!(mul_mat_supports(&ops::mul_mat(&mut c, f32, f16)));
        assert!(mul_mat_supports(&ops::mul_mat(&mut c, f16, f16)));
        // K-quants take F32 activations, converted to Q8_K
        assert!(mul_mat_supports(&ops::mul_mat(&mut c, k4, k4b)));
        let a = c.new_tensor(Type::Q8_0, &[64, 5]);
        let b = c.new_tensor(Type::F32, &[7, 5]);
        assert!(out_prod_supports(&ops::out_prod(&mut c, a, b)));
        let a = c.new_tensor(Type::BF16, &[64, 5]);
        assert!(!out_prod_supports(&ops::out_prod(&mut c, a, b)));
    }

    #[test]
    fn work_sizes_follow_the_reference() {
        let mut c = ctx();
        let a = c.new_tensor(Type::Q4_0, &[64, 8]);
        let b = c.new_tensor(Type::F32, &[64, 3, 2]);
        let d = ops::mul_mat(&mut c, a, b);
        assert_eq!(mul_mat_work_size(&d, 4), 6 * 2 * 34);
        let a = c.new_tensor(Type::F32, &[64, 8]);
        let d = ops::mul_mat(&mut c, a, b);
        // Room to realign the activations: a copy and a cache line (ggml: none).
        assert_eq!(mul_mat_work_size(&d, 4), 6 * 64 * 4 + 64);
        let a = c.new_tensor(Type::F16, &[64, 8]);
        let d = ops::mul_mat(&mut c, a, b);
        assert_eq!(mul_mat_work_size(&d, 4), 6 * 64 * 2 + 64);
        let ob = c.new_tensor(Type::F32, &[5, 8]);
        let o = ops::out_prod(&mut c, a, ob);
        assert_eq!(out_prod_work_size(&o, 3), 4 * 64 * 3);
        let experts = c.new_tensor(Type::Q8_0, &[64, 8, 4]);
        let ids = c.new_tensor(Type::I32, &[2, 2]);
        let tokens = c.new_tensor(Type::F32, &[64, 1, 2]);
        let d = ops::mul_mat_id(&mut c, experts, tokens, ids);
        assert_eq!(mul_mat_id_work_size(&d, 2), 2 * 2 * 34 + 8 + 4 * 8 + 8 + 4 * 4 * 8 + 8 + 64 * 4 + 64);
    }
}

#[cfg(test)]
mod bench {
    use super::DotKernel;
    use super::tests_support::*;
    use crate::core::types::Type;

    /// Throughput of mul_mat on one thread: 4096×4096 weights (F32 and Q4_0) times 1 and 64
    /// columns. Run with `cargo test --release --lib matmul::bench -- --ignored --nocapture`.
    /// `MM_BENCH=TYPES:COLS[:K[:M]]` picks the cases instead, SIMD path only (for profiling and
    /// for comparing tiles, e.g. `MM_BENCH=f16,q4_0:1,512:14336`, then again with
    /// `GGML_RS_NO_AVX512=1`). `MM_LINE_OFFSET_W=BYTES` and `MM_LINE_OFFSET_A=BYTES` place the
    /// weights' and the activations' data that far into a cache line.
    #[test]
    #[ignore]
    fn mul_mat_gflops() {
        let with_tile =
            |name: &str| (0..Type::COUNT).map(Type).find(|t| t.name() == name && DotKernel::for_type(*t).is_some());
        let mut cases = vec![];
        match std::env::var("MM_BENCH") {
            Ok(spec) => {
                let parts: Vec<&str> = spec.split(':').collect();
                let k = parts.get(2).map_or(4096, |k| k.parse().expect("K"));
                let m = parts.get(3).map_or(4096, |m| m.parse().expect("M"));
                for name in parts[0].split(',') {
                    let ty = with_tile(name).expect("a type with a tile");
                    for cols in parts.get(1).unwrap_or(&"1").split(',') {
                        cases.push((ty, cols.parse().expect("COLS"), k, m, false));
                    }
                }
            }
            Err(_) => {
                for ty in [Type::F32, Type::Q4_0] {
                    for cols in [1, 64] {
                        cases.extend([(ty, cols, 4096, 4096, false), (ty, cols, 4096, 4096, true)]);
                    }
                }
            }
        }
        for (ty, cols, k, m, use_ref) in cases {
            let (wall, cpu) = measure(ty, k, m, cols, use_ref);
            let path = if use_ref { "scalar" } else { "simd" };
            println!("mul_mat {} {k}x{m} x {cols:>3} ({path}): {wall:.3} GFLOPS ({cpu:.3} per CPU second)", ty.name());
        }
    }
}

#[cfg(test)]
mod tests_support {
    use super::*;
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::ops::matmul as ops;
    use crate::core::status::Status;
    use crate::cpu::compute::compute;
    use crate::cpu::plan::plan;
    use crate::quants::half::{fp32_to_bf16, fp32_to_fp16};

    /// A `[k, n]` tensor of `ty` whose data starts `offset` bytes into a cache line.
    pub fn placed(c: &mut Context, ty: Type, k: i64, n: i64, offset: usize) -> TensorPtr {
        let big = c.new_tensor(ty, &[k * n + 64]);
        let skip = (offset + CACHE_LINE_SIZE - big.data as usize % CACHE_LINE_SIZE) % CACHE_LINE_SIZE;
        crate::core::ops::shape::view_2d(c, big, k, n, ty.row_size(k), skip)
    }

    /// GFLOPS of one mul_mat of `ty` weights [k, m] by F32 activations [k, n] on one thread,
    /// by wall-clock time and by the thread's CPU time.
    pub fn measure(ty: Type, k: i64, m: i64, n: i64, use_ref: bool) -> (f64, f64) {
        let size = 2 * (ty.row_size(k) * m as usize + 4 * (k * n + m * n) as usize) + (1 << 20);
        let mut c = Context::new(InitParams { mem_size: size, mem_buffer: std::ptr::null_mut(), no_alloc: false });
        let mut new = |ty: Type, n: i64, var: &str| match std::env::var(var) {
            Ok(offset) => placed(&mut c, ty, k, n, offset.parse().expect("a byte offset")),
            Err(_) => c.new_tensor(ty, &[k, n]),
        };
        let (a, b) = (new(ty, m, "MM_LINE_OFFSET_W"), new(Type::F32, n, "MM_LINE_OFFSET_A"));
        // SAFETY: both tensors are allocated and contiguous.
        let (wa, wb) = unsafe {
            (
                std::slice::from_raw_parts_mut(a.data.cast::<u8>(), a.nbytes()),
                std::slice::from_raw_parts_mut(b.data.cast::<f32>(), (k * n) as usize),
            )
        };
        let weight = |i: usize| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5;
        if ty == Type::F32 {
            typed_mut::<f32>(wa).iter_mut().enumerate().for_each(|(i, v)| *v = weight(i));
        } else if ty == Type::F16 {
            typed_mut::<u16>(wa).iter_mut().enumerate().for_each(|(i, v)| *v = fp32_to_fp16(weight(i)));
        } else if ty == Type::BF16 {
            typed_mut::<Bf16>(wa).iter_mut().enumerate().for_each(|(i, v)| *v = fp32_to_bf16(weight(i)));
        } else {
            let unit = ty.type_size();
            let scale = fp32_to_fp16(0.01).to_le_bytes();
            for (i, blk) in wa.chunks_exact_mut(unit).enumerate() {
                blk.iter_mut().enumerate().for_each(|(j, byte)| *byte = ((i * 31 + j * 17) % 251) as u8);
                blk[..2].copy_from_slice(&scale);
            }
        }
        wb.iter_mut().enumerate().for_each(|(i, v)| *v = ((i * 104_729) % 1000) as f32 / 1000.0 - 0.5);
        let d = ops::mul_mat(&mut c, a, b);
        let g = new_graph_custom(&mut c, 4, false);
        g.get_mut().build_forward_expand(d);
        let mut p = plan(&g, 1, None, &crate::cpu::kernels::CpuKernels);
        let mut work = vec![0u8; p.work_size];
        p.work_data = if p.work_size > 0 { work.as_mut_ptr() } else { std::ptr::null_mut() };
        p.use_ref = use_ref;
        let kernel = |params: &ComputeParams, t: TensorPtr| {
            mul_mat(params, t);
            Status::SUCCESS
        };
        let run = || {
            // SAFETY: no pool; the work buffer outlives the computation.
            assert_eq!(unsafe { compute(&g, &p, &kernel) }, Status::SUCCESS);
        };
        run();
        let mut iters = 0;
        let start = std::time::Instant::now();
        let cpu_start = thread_cpu_seconds();
        while iters < 3 || start.elapsed().as_secs_f64() < 1.0 {
            run();
            iters += 1;
            if start.elapsed().as_secs_f64() > 5.0 {
                break;
            }
        }
        let flop = 2.0 * (k * m * n) as f64 * f64::from(iters);
        (flop / start.elapsed().as_secs_f64() / 1e9, flop / (thread_cpu_seconds() - cpu_start) / 1e9)
    }

    /// CPU time of the calling thread (the benchmark shares its cores with other work).
    fn thread_cpu_seconds() -> f64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid clock id and out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    }
}
