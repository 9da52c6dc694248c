//! Copies: `dup`/`cpy`/`cont` between the plain types (F32, F16, BF16, I32) and into or out of
//! the block formats, and `set`.
//!
//! The helpers at the top (element conversions, row addressing, thread ranges, per-thread
//! scratch, block-format rows) are shared with the other element-wise kernel files.

use std::ops::Range;

use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::quants::formats::{is_weight_format, with_weight_format};
use crate::quants::half::{Bf16, bf16_to_fp32, fp16_to_fp32, fp32_to_bf16, fp32_to_fp16};
use crate::quants::iq_grids::Grid;
use crate::quants::q8::BlockQ8_0;
use crate::quants::{BlockFormat, blocks, blocks_mut, dequantize_row, quantize_row};

// ---- shared helpers ----

/// Floats of padding between threads' scratch slices (a cache line), as the reference lays
/// out its work buffer.
pub(crate) const SCRATCH_PAD_F32: usize = 16;

/// The source in slot `i` of `dst`, aborting when the graph left it empty.
pub(crate) fn src(dst: TensorPtr, i: usize) -> TensorPtr {
    match dst.src(i) {
        Some(s) => s,
        None => crate::ggml_abort!("{} node without source {}", dst.op.name(), i),
    }
}

/// Whether the SIMD paths may run: not asked for the reference kernels, and the CPU has them.
pub(crate) fn use_simd(params: &ComputeParams) -> bool {
    !params.use_ref && crate::cpu::features::features().has_avx2_fma()
}

/// Thread `ith`'s share of `n` items in `nth` contiguous ranges (`get_thread_range`).
pub(crate) fn split(n: usize, ith: usize, nth: usize) -> Range<usize> {
    let per = n.div_ceil(nth.max(1));
    let start = (per * ith).min(n);
    start..(start + per).min(n)
}

/// The extents of `t` as unsigned counts.
pub(crate) fn extents(t: &Tensor) -> [usize; 4] {
    t.ne.map(|n| usize::try_from(n).unwrap_or(0))
}

/// Row `ir` of a tensor with extents `ne`, as the coordinates `[i1, i2, i3]`.
pub(crate) fn row_coords(ir: usize, ne: [usize; 4]) -> [usize; 3] {
    let i3 = ir / (ne[2] * ne[1]);
    let rest = ir - i3 * ne[2] * ne[1];
    let i2 = rest / ne[1];
    [rest - i2 * ne[1], i2, i3]
}

/// The address of element `[i0, i1, i2, i3]` of `t` (computed without dereferencing).
pub(crate) fn addr(t: &Tensor, i: [usize; 4]) -> *mut u8 {
    let offset = i[0] * t.nb[0] + i[1] * t.nb[1] + i[2] * t.nb[2] + i[3] * t.nb[3];
    t.data.cast::<u8>().wrapping_add(offset)
}

/// The address of the start of row `[i1, i2, i3]` of `t`.
pub(crate) fn row_addr(t: &Tensor, r: [usize; 3]) -> *mut u8 {
    addr(t, [0, r[0], r[1], r[2]])
}

/// Number of rows (`ggml_nrows`) as an unsigned count.
pub(crate) fn nrows(t: &Tensor) -> usize {
    let ne = extents(t);
    ne[1] * ne[2] * ne[3]
}

/// Whether `t` holds one of the plain float types the element-wise kernels compute in.
pub(crate) fn is_float(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16)
}

/// A stored element that converts to and from `f32` as ggml's CPU backend converts it.
pub(crate) trait Elem: Copy + 'static {
    fn to_f32(self) -> f32;
    fn from_f32(x: f32) -> Self;
}

/// An IEEE binary16 element (`ggml_fp16_t`) as raw bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct F16(pub u16);

impl Elem for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        x
    }
}

impl Elem for F16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        fp16_to_fp32(self.0)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        F16(fp32_to_fp16(x))
    }
}

impl Elem for Bf16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16_to_fp32(self)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        fp32_to_bf16(x)
    }
}

impl Elem for i32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        // C's float-to-int conversion truncates; Rust's also saturates where C is undefined.
        x as i32
    }
}

/// Runs `f` on `n` floats of this thread's scratch: its slice of the plan's work buffer, laid
/// out as the reference does (`n + 16` floats per thread), or a buffer of its own when the
/// plan has too little.
pub(crate) fn with_scratch<R>(params: &ComputeParams, n: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    let offset = (n + SCRATCH_PAD_F32) * params.ith;
    let fits = !params.wdata.is_null()
        && params.wdata.align_offset(std::mem::align_of::<f32>()) == 0
        && (offset + n) * std::mem::size_of::<f32>() <= params.wsize;
    if fits {
        // SAFETY: the plan's work buffer holds `wsize` bytes, and floats `offset..offset + n`
        // lie inside it (checked above); other threads' slices start `n + 16` floats apart, so
        // this slice is this thread's alone while the node runs.
        let scratch = unsafe { std::slice::from_raw_parts_mut(params.wdata.cast::<f32>().add(offset), n) };
        f(scratch)
    } else {
        let mut own = vec![0.0f32; n];
        f(&mut own)
    }
}

/// The block formats whose rows the CPU kernels both quantize and dequantize: those with a
/// `from_float` in ggml's CPU type traits, the [`is_dequantizable`] ones but the I-quants that
/// quantize onto a lattice grid (their quantizers need the tables of `ggml_quantize_init`).
pub(crate) fn is_block_type(ty: Type) -> bool {
    is_dequantizable(ty) && Grid::of(ty).is_none()
}

/// The block formats whose rows the CPU kernels dequantize (those with a `to_float`): the
/// weight formats.
pub(crate) fn is_dequantizable(ty: Type) -> bool {
    is_weight_format(ty)
}

/// Quantizes `x` (a whole number of blocks) into the row at `out`, as ggml's CPU `from_float`
/// does: the reference quantizer, but for Q8_0, which gets the x86 activation quantizer
/// (rounding half to even).
///
/// # Safety
/// `out` is valid for writes of `ty.row_size(x.len())` bytes that nothing else accesses.
pub(crate) unsafe fn quantize_row_into(ty: Type, x: &[f32], out: *mut u8) {
    // SAFETY: the caller vouches for the row's bytes.
    let bytes = unsafe { std::slice::from_raw_parts_mut(out, ty.row_size(x.len() as i64)) };
    fn typed<B: BlockFormat>(x: &[f32], bytes: &mut [u8]) {
        quantize_row::<B>(x, blocks_mut::<B>(bytes));
    }
    match ty {
        // (Q8_0 is the activation format of other weight formats too, and ggml's CPU backend
        // has the one quantizer for it)
        Type::Q8_0 => super::dot::quantize_row_q8_0(x, blocks_mut::<BlockQ8_0>(bytes)),
        _ if is_block_type(ty) => with_weight_format!(ty, typed(x, bytes), _ => unreachable!("a weight format")),
        other => crate::ggml_abort!("no CPU quantizer for type {}", other.name()),
    }
}

/// Dequantizes the row at `row` (a whole number of blocks) into `y`.
///
/// # Safety
/// `row` is valid for reads of `ty.row_size(y.len())` bytes not written meanwhile.
pub(crate) unsafe fn dequantize_row_from(ty: Type, row: *const u8, y: &mut [f32]) {
    // SAFETY: the caller vouches for the row's bytes.
    let bytes = unsafe { std::slice::from_raw_parts(row, ty.row_size(y.len() as i64)) };
    fn typed<B: BlockFormat>(bytes: &[u8], y: &mut [f32]) {
        dequantize_row::<B>(blocks::<B>(bytes), y);
    }
    with_weight_format!(ty, typed(bytes, y), _ => crate::ggml_abort!("no CPU dequantizer for type {}", ty.name()))
}

/// Converts `n` packed elements at `x` into `n` packed elements at `y`, through `f32`.
///
/// # Safety
/// `x` is valid for reading and `y` for writing `n` elements of their types; they are the
/// same address (an in-place conversion of one type) or do not overlap.
unsafe fn convert_elems<S: Elem, D: Elem>(n: usize, x: *const u8, y: *mut u8) {
    let (x, y) = (x.cast::<S>(), y.cast::<D>());
    for i in 0..n {
        // SAFETY: i < n, inside both rows (caller's contract); unaligned access is allowed.
        unsafe { y.add(i).write_unaligned(D::from_f32(x.add(i).read_unaligned().to_f32())) };
    }
}

/// Converts a packed row of `n` elements of type `from` at `x` to type `to` at `y`, using
/// the AVX2 conversions where `simd` allows and the pair has one.
///
/// # Safety
/// As [`convert_elems`]; both types are plain (F32, F16, BF16, I32).
pub(crate) unsafe fn convert_row(from: Type, to: Type, n: usize, x: *const u8, y: *mut u8, simd: bool) {
    use super::simd;
    // The four conversions the shared row helpers cover: the rows are of different types,
    // hence different tensors, so the slices below do not overlap.
    match (from, to) {
        (Type::F32, Type::F16) => {
            // SAFETY: the caller vouches for `n` readable and writable elements; rows of these
            // types are aligned to their element size in ggml's buffers.
            let (x, y) = unsafe {
                (std::slice::from_raw_parts(x.cast::<f32>(), n), std::slice::from_raw_parts_mut(y.cast::<u16>(), n))
            };
            return if simd { simd::f32_to_fp16_row(x, y) } else { simd::scalar::f32_to_fp16_row(x, y) };
        }
        (Type::F16, Type::F32) => {
            // SAFETY: the caller vouches for `n` readable and writable elements; rows of these
            // types are aligned to their element size in ggml's buffers.
            let (x, y) = unsafe {
                (std::slice::from_raw_parts(x.cast::<u16>(), n), std::slice::from_raw_parts_mut(y.cast::<f32>(), n))
            };
            return if simd { simd::fp16_to_f32_row(x, y) } else { simd::scalar::fp16_to_f32_row(x, y) };
        }
        (Type::F32, Type::BF16) => {
            // SAFETY: the caller vouches for `n` readable and writable elements; rows of these
            // types are aligned to their element size in ggml's buffers.
            let (x, y) = unsafe {
                (std::slice::from_raw_parts(x.cast::<f32>(), n), std::slice::from_raw_parts_mut(y.cast::<Bf16>(), n))
            };
            return if simd { simd::f32_to_bf16_row(x, y) } else { simd::scalar::f32_to_bf16_row(x, y) };
        }
        (Type::BF16, Type::F32) => {
            // SAFETY: the caller vouches for `n` readable and writable elements; rows of these
            // types are aligned to their element size in ggml's buffers.
            let (x, y) = unsafe {
                (std::slice::from_raw_parts(x.cast::<Bf16>(), n), std::slice::from_raw_parts_mut(y.cast::<f32>(), n))
            };
            return if simd { simd::bf16_to_f32_row(x, y) } else { simd::scalar::bf16_to_f32_row(x, y) };
        }
        _ => {}
    }
    if from == to {
        // SAFETY: same type: a byte copy of the row (memmove, so an in-place call is fine).
        unsafe { std::ptr::copy(x, y, n * from.type_size()) };
        return;
    }
    // SAFETY: the caller's row contract.
    unsafe {
        match (from, to) {
            (Type::F32, Type::F16) => convert_elems::<f32, F16>(n, x, y),
            (Type::F32, Type::BF16) => convert_elems::<f32, Bf16>(n, x, y),
            (Type::F32, Type::I32) => convert_elems::<f32, i32>(n, x, y),
            (Type::F16, Type::F32) => convert_elems::<F16, f32>(n, x, y),
            (Type::F16, Type::BF16) => convert_elems::<F16, Bf16>(n, x, y),
            (Type::BF16, Type::F32) => convert_elems::<Bf16, f32>(n, x, y),
            (Type::BF16, Type::F16) => convert_elems::<Bf16, F16>(n, x, y),
            (Type::I32, Type::F32) => convert_elems::<i32, f32>(n, x, y),
            _ => crate::ggml_abort!("no conversion from {} to {}", from.name(), to.name()),
        }
    }
}

/// Reads a row of `n` elements of a plain float type into `y` as `f32`.
///
/// # Safety
/// `x` is valid for reading `n` packed elements of type `ty`.
pub(crate) unsafe fn row_to_f32(ty: Type, n: usize, x: *const u8, y: &mut [f32], simd: bool) {
    // SAFETY: `y` holds at least `n` floats and is a distinct buffer; `x` is the caller's.
    unsafe { convert_row(ty, Type::F32, n.min(y.len()), x, y.as_mut_ptr().cast(), simd) }
}

/// A walk through a tensor's elements (or blocks) in logical order, for copies between
/// tensors whose shapes differ.
struct Cursor {
    ne: [usize; 4],
    idx: [usize; 4],
}

impl Cursor {
    /// Placed at the `linear`-th element of a tensor whose dimension 0 has `ne[0]` units.
    fn at(ne: [usize; 4], linear: usize) -> Cursor {
        let mut idx = [0; 4];
        let mut rest = linear;
        for d in 0..3 {
            idx[d] = rest % ne[d];
            rest /= ne[d];
        }
        idx[3] = rest;
        Cursor { ne, idx }
    }

    fn advance(&mut self) {
        for d in 0..4 {
            self.idx[d] += 1;
            if self.idx[d] < self.ne[d] || d == 3 {
                return;
            }
            self.idx[d] = 0;
        }
    }
}

// ---- dup, cpy, cont ----

pub(crate) fn is_plain(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16 | Type::I32)
}

/// Whether `dup`/`cpy`/`cont` kernels cover `node`'s source and result types and layout.
pub fn copy_supports(node: &Tensor) -> bool {
    let Some(s) = node.source(0) else { return false };
    let (from, to) = (s.type_, node.type_);
    if s.nelements() != node.nelements() {
        return false;
    }
    if from == to {
        return from.is_valid()
            && from.blck_size() > 0
            && s.ne[0] % from.blck_size() == 0
            && node.ne[0] % to.blck_size() == 0;
    }
    match (from, to) {
        (Type::F32, Type::I32) | (Type::I32, Type::F32) => true,
        _ if is_float(from) && is_float(to) => true,
        _ if is_float(from) && is_block_type(to) => {
            node.is_contiguous() && s.nb[0] == from.type_size() && s.ne[0] % to.blck_size() == 0
        }
        _ if is_dequantizable(from) && to == Type::F32 => {
            let qk = from.blck_size();
            node.nb[0] == 4 && (node.ne[0] % qk == 0 || node.is_contiguous()) && s.ne[0] % qk == 0
        }
        _ => false,
    }
}

/// Scratch bytes for a copy node run by `n_tasks` threads, as the reference plans it.
pub fn copy_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let s = node.source(0);
    let t = node.source(1);
    let (Some(s), ne0) = (s, usize::try_from(node.ne[0]).unwrap_or(0)) else { return 0 };
    let via_f32 = |a: Type, b: Type| t.is_some_and(|t| s.type_ == a && t.type_ == b);
    let needs = node.type_.is_quantized()
        || via_f32(Type::F16, Type::BF16)
        || via_f32(Type::BF16, Type::F16)
        || via_f32(Type::F32, Type::I32)
        || via_f32(Type::I32, Type::F32);
    if needs { std::mem::size_of::<f32>() * ne0 * n_tasks } else { 0 }
}

/// `GGML_OP_DUP`: `dst` becomes a copy of `src[0]`, converted to `dst`'s type and laid out in
/// `dst`'s shape (elements taken in logical order).
pub fn dup(params: &ComputeParams, dst: TensorPtr) {
    let s = src(dst, 0);
    crate::ggml_assert!(
        s.nelements() == dst.nelements(),
        "{}: {} elements into {}",
        dst.op.name(),
        s.nelements(),
        dst.nelements()
    );
    let (from, to) = (s.type_, dst.type_);
    if from == to {
        dup_bytes(params, &s, &dst);
    } else if (is_float(from) && is_float(to)) || matches!((from, to), (Type::F32, Type::I32) | (Type::I32, Type::F32))
    {
        dup_convert(params, &s, &dst);
    } else if is_float(from) && is_block_type(to) {
        dup_to_blocks(params, &s, &dst);
    } else if is_dequantizable(from) && to == Type::F32 {
        dup_from_blocks(params, &s, &dst);
    } else {
        crate::ggml_abort!("{}: copying {} to {} is not supported", dst.op.name(), from.name(), to.name());
    }
}

/// `GGML_OP_CPY`: as [`dup`], into the view of `src[1]` that `dst` is.
pub fn cpy(params: &ComputeParams, dst: TensorPtr) {
    dup(params, dst);
}

/// `GGML_OP_CONT`: as [`dup`], into a contiguous tensor.
pub fn cont(params: &ComputeParams, dst: TensorPtr) {
    dup(params, dst);
}

/// Same-type copy: bytes move unchanged (whole blocks for the block formats).
fn dup_bytes(params: &ComputeParams, s: &Tensor, d: &Tensor) {
    let ty = s.type_;
    let unit = ty.type_size();
    let blck = usize::try_from(ty.blck_size()).unwrap_or(1).max(1);
    let (ith, nth) = (params.ith, params.nth);

    if s.is_contiguous() && d.is_contiguous() {
        let n_units = usize::try_from(s.nelements()).unwrap_or(0) / blck;
        let r = split(n_units, ith, nth);
        if !r.is_empty() {
            // SAFETY: both tensors are contiguous with `n_units` units; this thread copies units
            // `r` only (memmove: a copy onto itself is allowed).
            unsafe {
                std::ptr::copy(
                    s.data.cast::<u8>().add(r.start * unit),
                    d.data.cast::<u8>().add(r.start * unit),
                    r.len() * unit,
                );
            }
        }
        return;
    }

    let ne_s = extents(s);
    if s.same_shape(d) && s.nb[0] == unit && d.nb[0] == unit {
        let row_bytes = ty.row_size(s.ne[0]);
        for ir in split(nrows(s), ith, nth) {
            let r = row_coords(ir, ne_s);
            // SAFETY: row `r` exists in both tensors (same shape) and holds `row_bytes` packed
            // bytes in each; rows are split between threads.
            unsafe { std::ptr::copy(row_addr(s, r), row_addr(d, r), row_bytes) };
        }
        return;
    }

    // General case: walk the destination's units in logical order.
    let units_s = ne_s[0] / blck;
    let mut ne_d = extents(d);
    ne_d[0] /= blck;
    for ir in split(nrows(s), ith, nth) {
        let r = row_coords(ir, ne_s);
        let mut cur = Cursor::at(ne_d, ir * units_s);
        for k in 0..units_s {
            let from = addr(s, [k, r[0], r[1], r[2]]);
            let to = addr(d, cur.idx);
            // SAFETY: `k` and the cursor stay inside their tensors (same element counts); each
            // unit is `unit` bytes; threads write disjoint destination units.
            unsafe { std::ptr::copy(from, to, unit) };
            cur.advance();
        }
    }
}

/// Copy between different plain types, converting each element through `f32`.
fn dup_convert(params: &ComputeParams, s: &Tensor, d: &Tensor) {
    let (from, to) = (s.type_, d.type_);
    let simd = use_simd(params);
    let ne_s = extents(s);
    let rows = split(nrows(s), params.ith, params.nth);
    let packed_src_rows = s.nb[0] == from.type_size();

    if packed_src_rows && d.is_contiguous() {
        let row_bytes = ne_s[0] * to.type_size();
        for ir in rows {
            let r = row_coords(ir, ne_s);
            // SAFETY: the source row holds ne00 packed elements; the destination is contiguous
            // with as many elements, so row `ir` of the source lands at element ir*ne00;
            // distinct tensors of different types do not overlap.
            unsafe {
                convert_row(from, to, ne_s[0], row_addr(s, r), d.data.cast::<u8>().add(ir * row_bytes), simd);
            }
        }
        return;
    }
    if packed_src_rows && s.same_shape(d) && d.nb[0] == to.type_size() {
        for ir in rows {
            let r = row_coords(ir, ne_s);
            // SAFETY: row `r` exists in both (same shape) with ne00 packed elements each.
            unsafe { convert_row(from, to, ne_s[0], row_addr(s, r), row_addr(d, r), simd) };
        }
        return;
    }

    let ne_d = extents(d);
    for ir in rows {
        let r = row_coords(ir, ne_s);
        let mut cur = Cursor::at(ne_d, ir * ne_s[0]);
        for i0 in 0..ne_s[0] {
            // SAFETY: one element at in-bounds coordinates of each tensor.
            unsafe { convert_row(from, to, 1, addr(s, [i0, r[0], r[1], r[2]]), addr(d, cur.idx), false) };
            cur.advance();
        }
    }
}

/// Plain floats into a contiguous block-format tensor, one source row at a time.
fn dup_to_blocks(params: &ComputeParams, s: &Tensor, d: &Tensor) {
    let (from, to) = (s.type_, d.type_);
    crate::ggml_assert!(d.is_contiguous(), "copy to {} needs a contiguous destination", to.name());
    crate::ggml_assert!(s.nb[0] == from.type_size(), "copy to {} needs packed source rows", to.name());
    let ne_s = extents(s);
    crate::ggml_assert!(ne_s[0] as i64 % to.blck_size() == 0, "rows of {} do not fill {} blocks", ne_s[0], to.name());
    let simd = use_simd(params);
    let row_bytes = to.row_size(ne_s[0] as i64);
    with_scratch(params, ne_s[0], |tmp| {
        for ir in split(nrows(s), params.ith, params.nth) {
            let r = row_coords(ir, ne_s);
            // SAFETY: the source row holds ne00 packed elements; destination row `ir` is
            // `row_bytes` bytes inside the contiguous destination, written by this thread only.
            unsafe {
                row_to_f32(from, ne_s[0], row_addr(s, r), tmp, simd);
                quantize_row_into(to, tmp, d.data.cast::<u8>().add(ir * row_bytes));
            }
        }
    });
}

/// Block-format source into an F32 destination, one block at a time.
fn dup_from_blocks(params: &ComputeParams, s: &Tensor, d: &Tensor) {
    let ty = s.type_;
    let qk = ty.blck_size() as usize;
    let ne_s = extents(s);
    let ne_d = extents(d);
    crate::ggml_assert!(d.nb[0] == std::mem::size_of::<f32>(), "dequantizing copy needs packed f32 rows");
    crate::ggml_assert!(ne_d[0].is_multiple_of(qk) || d.is_contiguous(), "dequantized blocks would straddle rows");
    let n_blocks = usize::try_from(s.nelements()).unwrap_or(0) / qk;
    let mut values = vec![0.0f32; qk];
    for b in split(n_blocks, params.ith, params.nth) {
        let i = b * qk;
        let cs = Cursor::at(ne_s, i).idx;
        let cd = Cursor::at(ne_d, i).idx;
        let block = addr(s, [cs[0] / qk, cs[1], cs[2], cs[3]]);
        // SAFETY: the block lies inside the source; its `qk` values land on packed f32s of
        // the destination (checked above), written by this thread only.
        unsafe {
            dequantize_row_from(ty, block, &mut values);
            std::ptr::copy_nonoverlapping(values.as_ptr(), addr(d, cd).cast::<f32>(), qk);
        }
    }
}

// ---- set ----

/// Whether [`set`] covers `node`.
pub fn set_supports(node: &Tensor) -> bool {
    let (a, b) = (node.source(0), node.source(1));
    match (a, b) {
        (Some(a), Some(b)) => {
            is_plain(a.type_)
                && b.type_ == a.type_
                && node.type_ == a.type_
                && a.is_contiguous()
                && node.is_contiguous()
        }
        _ => false,
    }
}

/// `GGML_OP_SET`: `dst` is `src[0]` with `src[1]` written into the window at byte offset
/// `op_params[3]` with strides `op_params[0..3]`. Unless `op_params[4]` says `dst` already is
/// `src[0]`, thread 0 copies it first and the team waits.
pub fn set(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let b = src(dst, 1);
    crate::ggml_assert!(a.same_shape(&dst), "set: result and destination differ in shape");
    crate::ggml_assert!(a.is_contiguous() && dst.is_contiguous(), "set: tensors must be contiguous");
    crate::ggml_assert!(
        is_plain(a.type_) && b.type_ == a.type_,
        "set: unsupported types {} <- {}",
        a.type_.name(),
        b.type_.name()
    );
    window_prepare(params, &a, &dst);
    if b.is_empty() {
        // rows of nothing: no work, however many of them (ggml walks them all)
        return;
    }
    let unit = a.type_.type_size();
    crate::ggml_assert!(b.nb[0] == unit, "set: the source rows must be packed");
    let win = Window::from_params(&dst, unit);
    let ne_b = extents(&b);
    win.check(ne_b, dst.nbytes());
    for ir in split(nrows(&b), params.ith, params.nth) {
        let r = row_coords(ir, ne_b);
        // SAFETY: the window row lies inside `dst` (checked by `win.check`), the source row
        // holds ne10 packed elements; rows are split between threads.
        unsafe { std::ptr::copy(row_addr(&b, r), win.row(&dst, r), ne_b[0] * unit) };
    }
}

/// The strided window of `set` and `acc` (op_params: nb1, nb2, nb3, offset, inplace).
pub(crate) struct Window {
    nb: [usize; 4],
    offset: usize,
}

impl Window {
    pub(crate) fn from_params(dst: &Tensor, unit: usize) -> Window {
        let p = |i: usize| dst.op_params[i] as u32 as usize;
        Window { nb: [unit, p(0), p(1), p(2)], offset: p(3) }
    }

    /// Aborts unless a window of extents `ne` fits in `nbytes`.
    pub(crate) fn check(&self, ne: [usize; 4], nbytes: usize) {
        if ne.contains(&0) {
            return;
        }
        let last: usize = (0..4).map(|d| (ne[d] - 1) * self.nb[d]).sum();
        crate::ggml_assert!(
            self.offset + last + self.nb[0] <= nbytes,
            "window of {:?} at offset {} leaves the tensor",
            ne,
            self.offset
        );
    }

    /// The window's row `r` in `t`.
    pub(crate) fn row(&self, t: &Tensor, r: [usize; 3]) -> *mut u8 {
        let offset = self.offset + r[0] * self.nb[1] + r[1] * self.nb[2] + r[2] * self.nb[3];
        t.data.cast::<u8>().wrapping_add(offset)
    }
}

/// The shared first phase of `set` and `acc`: unless `op_params[4]` (inplace) is set, thread 0
/// copies `a` into `dst`, and the whole team waits for it.
pub(crate) fn window_prepare(params: &ComputeParams, a: &Tensor, dst: &Tensor) {
    if dst.op_params[4] != 0 {
        return;
    }
    if params.ith == 0 {
        // SAFETY: both are contiguous tensors of the same shape and type (checked by the
        // callers); memmove allows them to be the same memory.
        unsafe { std::ptr::copy(a.data.cast::<u8>(), dst.data.cast::<u8>(), dst.nbytes()) };
    }
    params.barrier();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::op::Op;
    use crate::core::ops::shape;
    use crate::cpu::kernels::testing::*;

    const PLAIN: [Type; 4] = [Type::F32, Type::F16, Type::BF16, Type::I32];

    fn tol(ty: Type) -> f64 {
        match ty {
            Type::F16 => 1e-3,
            Type::BF16 => 8e-3,
            _ => 1e-6,
        }
    }

    fn value(i: usize) -> f64 {
        // integers survive every plain type; fractions test the float ones
        (noise(i, 1) * 50.0).round() / 4.0
    }

    #[test]
    fn copies_between_plain_types_in_any_layout() {
        for_each_team(|nth, use_ref| {
            for from in PLAIN {
                for to in PLAIN {
                    if !((is_float(from) && is_float(to))
                        || from == to
                        || matches!((from, to), (Type::F32, Type::I32) | (Type::I32, Type::F32)))
                    {
                        continue;
                    }
                    let mut c = ctx();
                    // contiguous
                    let a = c.new_tensor(from, &[19, 3, 2]);
                    let ints = from == Type::I32 || to == Type::I32;
                    put(a, |i| if ints { value(i).trunc() } else { value(i) });
                    let b = c.new_tensor(to, &[19, 3, 2]);
                    let r = shape::cpy(&mut c, a, b);
                    assert!(copy_supports(&r));
                    run(&mut c, r, cpy, nth, copy_work_size(&r, nth), use_ref);
                    assert_close(&values(b), &values(a), tol(to), "contiguous");
                    // permuted source, contiguous result of another shape
                    let p = shape::permute(&mut c, a, 1, 0, 2, 3);
                    let d = c.new_tensor(to, &[6, 19]);
                    let r = shape::cpy(&mut c, p, d);
                    run(&mut c, r, cpy, nth, copy_work_size(&r, nth), use_ref);
                    assert_close(&values(d), &values(p), tol(to), "permuted");
                    // transposed into a strided view of the same shape
                    let t = shape::transpose(&mut c, a);
                    let big = c.new_tensor(to, &[5, 19, 2]);
                    let v = shape::view_3d(&mut c, big, 3, 19, 2, big.nb[1], big.nb[2], big.nb[0]);
                    let r = shape::cpy(&mut c, t, v);
                    run(&mut c, r, cpy, nth, 0, use_ref);
                    assert_close(&values(v), &values(t), tol(to), "strided");
                    // cont of a permuted tensor
                    let r = shape::cont(&mut c, p);
                    run(&mut c, r, cont, nth, 0, use_ref);
                    assert_close(&values(r), &values(p), tol(from), "cont");
                }
            }
        });
    }

    /// Every type ggml has.
    fn all_types() -> impl Iterator<Item = Type> {
        (0..Type::COUNT).map(Type).filter(|t| t.is_valid())
    }

    /// How far a round trip through `q` may move values in -1..1.
    fn round_trip_bound(q: Type) -> f64 {
        match q {
            Type::Q8_0 => 0.02,
            // four levels between a block's minimum and maximum
            Type::Q2_K => 0.4,
            // two or three levels: signs, or -1/0/1 times the largest magnitude
            Type::Q1_0 | Type::Q2_0 | Type::TQ1_0 | Type::TQ2_0 => 1.0,
            _ => 0.25,
        }
    }

    #[test]
    fn block_types_follow_the_cpu_type_traits() {
        for ty in all_types() {
            let traits = crate::ffi::cpu_kernels::type_traits::type_traits_cpu(ty);
            let quantized = ty.is_quantized() && !matches!(ty, Type::Q8_1 | Type::Q8_K);
            // the activation formats aside, a block format is written where ggml's CPU has a
            // `from_float`, and read where it has a `to_float`
            assert_eq!(is_block_type(ty), quantized && traits.from_float.is_some(), "{}", ty.name());
            let to_float = crate::quants::traits::type_traits(ty).to_float.is_some();
            assert_eq!(is_dequantizable(ty), quantized && to_float, "{}", ty.name());
        }
    }

    #[test]
    fn copies_into_and_out_of_blocks() {
        for q in all_types().filter(|&t| is_block_type(t)) {
            for from in [Type::F32, Type::F16, Type::BF16] {
                for_each_team(|nth, use_ref| {
                    let mut c = ctx();
                    let a = c.new_tensor(from, &[256, 3, 2]);
                    put(a, |i| noise(i, 7));
                    let qd = c.new_tensor(q, &[256, 3, 2]);
                    let r = shape::cpy(&mut c, a, qd);
                    assert!(copy_supports(&r));
                    run(&mut c, r, cpy, nth, copy_work_size(&r, nth), use_ref);
                    // back to f32, through a transposed-free but reshaped destination
                    let back = c.new_tensor(Type::F32, &[512, 3]);
                    let r2 = shape::cpy(&mut c, qd, back);
                    assert!(copy_supports(&r2));
                    run(&mut c, r2, cpy, nth, 0, use_ref);
                    assert_close(&values(back), &values(a), round_trip_bound(q), q.name());
                    // same type: a byte copy
                    let q2 = c.new_tensor(q, &[256, 3, 2]);
                    let r3 = shape::cpy(&mut c, qd, q2);
                    run(&mut c, r3, cpy, nth, 0, use_ref);
                    // SAFETY: both tensors are contiguous with the same byte size.
                    let same = unsafe {
                        std::slice::from_raw_parts(qd.data.cast::<u8>(), qd.nbytes())
                            == std::slice::from_raw_parts(q2.data.cast::<u8>(), q2.nbytes())
                    };
                    assert!(same);
                });
            }
        }
    }

    #[test]
    fn set_writes_a_window() {
        for ty in [Type::F32, Type::I32] {
            for_each_team(|nth, use_ref| {
                for inplace in [false, true] {
                    let mut c = ctx();
                    let a = c.new_tensor(ty, &[6, 5]);
                    put(a, |i| i as f64);
                    let before = values(a);
                    let b = c.new_tensor(ty, &[2, 3]);
                    put(b, |i| 100.0 + i as f64);
                    let r = if inplace {
                        shape::set_2d_inplace(&mut c, a, b, a.nb[1], a.nb[0] * 3)
                    } else {
                        shape::set_2d(&mut c, a, b, a.nb[1], a.nb[0] * 3)
                    };
                    assert!(set_supports(&r));
                    run(&mut c, r, set, nth, 0, use_ref);
                    let mut want = before.clone();
                    for j in 0..3 {
                        for i in 0..2 {
                            want[3 + i + j * 6] = 100.0 + (i + 2 * j) as f64;
                        }
                    }
                    assert_eq!(values(r), want);
                    if !inplace {
                        assert_eq!(values(a), before);
                    }
                }
            });
        }
    }

    #[test]
    fn unsupported_pairs_are_refused() {
        let mut c = ctx();
        let a = c.new_tensor(Type::Q4_0, &[32, 2]);
        let b = c.new_tensor(Type::F16, &[32, 2]);
        let r = shape::cpy(&mut c, a, b);
        assert!(!copy_supports(&r));
        assert_eq!(r.op, Op::CPY);
    }
}
