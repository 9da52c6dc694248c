//! Element-wise ops of two operands and the affine maps: `add`, `sub`, `mul`, `div` with the
//! second operand broadcast over the first (F32, F16, BF16 and the reference's mixed pairs;
//! `add` also from the block formats), `add1`, `acc`, `add_id`, `scale`, `clamp`,
//! `leaky_relu`, `fill`, `tri` and `silu_back`.

use super::copy::{
    Elem, F16, Window, addr, dequantize_row_from, extents, is_block_type, is_float, nrows, quantize_row_into, row_addr,
    row_coords, split, src, use_simd, window_prepare, with_scratch,
};
use super::unary::{c_max, c_min, map_rows, map_types_supported};
use crate::core::op::Op;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::quants::half::Bf16;

/// The four arithmetic operators.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

impl Arith {
    #[inline(always)]
    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            Arith::Add => a + b,
            Arith::Sub => a - b,
            Arith::Mul => a * b,
            Arith::Div => a / b,
        }
    }
}

/// `z[i] = op(x[i], y[i])` over `n` elements at byte strides `sz`, `sx`, `sy`.
type ArithRow = unsafe fn(op: Arith, n: usize, z: *mut u8, sz: usize, x: *const u8, sx: usize, y: *const u8, sy: usize);

/// The generic row: each element converted to `f32`, combined, converted back.
///
/// # Safety
/// The three rows address `n` elements of their types at their strides; `z` may equal `x`
/// or `y` (each element is read before it is written).
#[allow(clippy::too_many_arguments)]
unsafe fn arith_row<S0: Elem, S1: Elem, D: Elem>(
    op: Arith,
    n: usize,
    z: *mut u8,
    sz: usize,
    x: *const u8,
    sx: usize,
    y: *const u8,
    sy: usize,
) {
    for i in 0..n {
        // SAFETY: element i < n of each row (caller's contract).
        unsafe {
            let a = x.add(i * sx).cast::<S0>().read_unaligned().to_f32();
            let b = y.add(i * sy).cast::<S1>().read_unaligned().to_f32();
            z.add(i * sz).cast::<D>().write_unaligned(D::from_f32(op.apply(a, b)));
        }
    }
}

/// The row function for a type triple, `None` where the reference has none.
fn arith_row_for(s0: Type, s1: Type, d: Type) -> Option<ArithRow> {
    let row: ArithRow = match (s0, s1, d) {
        (Type::F32, Type::F32, Type::F32) => arith_row::<f32, f32, f32>,
        (Type::F16, Type::F16, Type::F16) => arith_row::<F16, F16, F16>,
        (Type::BF16, Type::BF16, Type::BF16) => arith_row::<Bf16, Bf16, Bf16>,
        (Type::BF16, Type::F32, Type::BF16) => arith_row::<Bf16, f32, Bf16>,
        (Type::BF16, Type::F32, Type::F32) => arith_row::<Bf16, f32, f32>,
        (Type::F16, Type::F32, Type::F16) => arith_row::<F16, f32, F16>,
        (Type::F16, Type::F32, Type::F32) => arith_row::<F16, f32, f32>,
        _ => return None,
    };
    Some(row)
}

/// Whether [`add`], [`sub`], [`mul`] and [`div`] cover `node`.
pub fn binary_supports(node: &Tensor) -> bool {
    let (a, b) = (node.source(0), node.source(1));
    let (Some(a), Some(b)) = (a, b) else { return false };
    if !b.can_repeat_to(a) || !a.same_shape(node) {
        return false;
    }
    if is_block_type(a.type_) {
        return node.op == Op::ADD
            && b.type_ == Type::F32
            && (node.type_ == a.type_ || node.type_ == Type::F32)
            && b.ne[0] == a.ne[0]
            && b.nb[0] == 4
            && a.nb[0] == a.type_.type_size()
            && node.nb[0] == node.type_.type_size();
    }
    arith_row_for(a.type_, b.type_, node.type_).is_some()
}

/// Scratch bytes for ADD, ADD1 and ADD_ID nodes run by `n_tasks` threads: a row of `f32`
/// per thread when the first operand is block-quantized (the reference's plan).
pub fn add_work_size(node: &Tensor, n_tasks: usize) -> usize {
    match node.source(0) {
        Some(a) if a.type_.is_quantized() => 4 * usize::try_from(a.ne[0]).unwrap_or(0) * n_tasks,
        _ => 0,
    }
}

/// `GGML_OP_ADD`: `dst = src[0] + src[1]`, `src[1]` repeated to cover `src[0]`.
pub fn add(params: &ComputeParams, dst: TensorPtr) {
    binary(params, dst, Arith::Add);
}

/// `GGML_OP_SUB`.
pub fn sub(params: &ComputeParams, dst: TensorPtr) {
    binary(params, dst, Arith::Sub);
}

/// `GGML_OP_MUL`.
pub fn mul(params: &ComputeParams, dst: TensorPtr) {
    binary(params, dst, Arith::Mul);
}

/// `GGML_OP_DIV`.
pub fn div(params: &ComputeParams, dst: TensorPtr) {
    binary(params, dst, Arith::Div);
}

fn binary(params: &ComputeParams, dst: TensorPtr, op: Arith) {
    let a = src(dst, 0);
    let b = src(dst, 1);
    crate::ggml_assert!(b.can_repeat_to(&a), "{}: {:?} does not repeat to {:?}", dst.op.name(), b.ne, a.ne);
    crate::ggml_assert!(a.same_shape(&dst), "{}: result shape differs from the first operand", dst.op.name());
    if is_block_type(a.type_) && op == Arith::Add {
        return add_blocks(params, &a, &b, &dst);
    }
    let Some(generic) = arith_row_for(a.type_, b.type_, dst.type_) else {
        crate::ggml_abort!(
            "{}: unsupported types: dst {}, src0 {}, src1 {}",
            dst.op.name(),
            dst.type_.name(),
            a.type_.name(),
            b.type_.name()
        );
    };
    let all_f32 = a.type_ == Type::F32 && b.type_ == Type::F32 && dst.type_ == Type::F32;
    let row = if all_f32 && use_simd(params) { fast_arith_row() } else { generic };

    let (ne_a, ne_b) = (extents(&a), extents(&b));
    let (sa, sb, sd) = (a.nb[0], b.nb[0], dst.nb[0]);
    let b_packed = sb == b.type_.type_size();
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne_a);
        let rb = [r[0] % ne_b[1], r[1] % ne_b[2], r[2] % ne_b[3]];
        let (x, y, z) = (row_addr(&a, r), row_addr(&b, rb), row_addr(&dst, r));
        // SAFETY: rows `r` of `a` and `dst` and row `rb` of `b` exist; each piece below stays
        // inside them (ne00 is a multiple of ne10); rows are split between threads and an
        // in-place result reads each element before writing it.
        unsafe {
            if b_packed {
                for rep in 0..ne_a[0] / ne_b[0].max(1) {
                    let k = rep * ne_b[0];
                    row(op, ne_b[0], z.add(k * sd), sd, x.add(k * sa), sa, y, sb);
                }
            } else {
                for i0 in 0..ne_a[0] {
                    row(op, 1, z.add(i0 * sd), sd, x.add(i0 * sa), sa, y.add((i0 % ne_b[0]) * sb), sb);
                }
            }
        }
    }
}

/// Block-quantized `a` plus f32 rows of `b`: each row is dequantized, added to, and
/// quantized again (or stored as f32 when `dst` is f32).
fn add_blocks(params: &ComputeParams, a: &Tensor, b: &Tensor, dst: &Tensor) {
    crate::ggml_assert!(
        b.type_ == Type::F32 && b.nb[0] == 4,
        "add: the second operand of a quantized add must be packed f32"
    );
    crate::ggml_assert!(b.ne[0] == a.ne[0], "add: quantized rows take whole rows of the second operand");
    crate::ggml_assert!(dst.type_ == a.type_ || dst.type_ == Type::F32, "add: quantized sum into {}", dst.type_.name());
    let (ne_a, ne_b) = (extents(a), extents(b));
    let simd = use_simd(params);
    with_scratch(params, ne_a[0], |tmp| {
        for ir in split(nrows(a), params.ith, params.nth) {
            let r = row_coords(ir, ne_a);
            let rb = [r[0] % ne_b[1], r[1] % ne_b[2], r[2] % ne_b[3]];
            // SAFETY: row `r` of `a` is whole blocks of ne00 values, row `rb` of `b` ne00
            // packed floats, row `r` of `dst` ne00 values of its type; threads take distinct rows.
            unsafe {
                dequantize_row_from(a.type_, row_addr(a, r), tmp);
                let y = std::slice::from_raw_parts(row_addr(b, rb).cast::<f32>(), ne_a[0]);
                add_assign_f32(tmp, y, simd);
                if dst.type_ == Type::F32 {
                    std::ptr::copy(tmp.as_ptr(), row_addr(dst, r).cast::<f32>(), ne_a[0]);
                } else {
                    quantize_row_into(dst.type_, tmp, row_addr(dst, r));
                }
            }
        }
    });
}

/// `acc[i] += y[i]`.
fn add_assign_f32(acc: &mut [f32], y: &[f32], simd: bool) {
    if simd {
        super::simd::axpy_f32(acc, y, 1.0);
    } else {
        for (a, b) in acc.iter_mut().zip(y) {
            *a += b;
        }
    }
}

// ---- add1, acc, add_id ----

/// Whether [`add1`] covers `node`.
pub fn add1_supports(node: &Tensor) -> bool {
    let (a, b) = (node.source(0), node.source(1));
    let (Some(a), Some(b)) = (a, b) else { return false };
    let types = match a.type_ {
        Type::F32 => b.type_ == Type::F32,
        Type::F16 | Type::BF16 => b.type_ == Type::F32 || b.type_ == a.type_,
        t => is_block_type(t) && b.type_ == Type::F32,
    };
    types
        && b.is_scalar()
        && node.type_ == a.type_
        && a.same_shape(node)
        && a.nb[0] == a.type_.type_size()
        && node.nb[0] == node.type_.type_size()
}

/// `GGML_OP_ADD1`: `dst = src[0] + s` for the scalar `s = src[1]`.
pub fn add1(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let b = src(dst, 1);
    crate::ggml_assert!(
        b.is_scalar() && a.same_shape(&dst),
        "add1: needs a scalar and a result shaped like the first operand"
    );
    // SAFETY: `b` is a scalar of a plain type (checked below by the match).
    let v = unsafe {
        match b.type_ {
            Type::F32 => b.data.cast::<f32>().read_unaligned(),
            Type::F16 => F16(b.data.cast::<u16>().read_unaligned()).to_f32(),
            Type::BF16 => b.data.cast::<Bf16>().read_unaligned().to_f32(),
            t => crate::ggml_abort!("add1: scalar of type {}", t.name()),
        }
    };
    if is_block_type(a.type_) {
        let ne = extents(&a);
        with_scratch(params, ne[0], |tmp| {
            for ir in split(nrows(&a), params.ith, params.nth) {
                let r = row_coords(ir, ne);
                // SAFETY: rows `r` of `a` and `dst` are whole blocks of ne00 values; threads
                // take distinct rows.
                unsafe {
                    dequantize_row_from(a.type_, row_addr(&a, r), tmp);
                    tmp.iter_mut().for_each(|x| *x += v);
                    quantize_row_into(dst.type_, tmp, row_addr(&dst, r));
                }
            }
        });
        return;
    }
    crate::ggml_assert!(dst.type_ == a.type_, "add1: result type differs from the first operand");
    map_rows(params, &a, &dst, None, move |x| x + v);
}

/// Whether [`acc`] covers `node`.
pub fn acc_supports(node: &Tensor) -> bool {
    let (a, b) = (node.source(0), node.source(1));
    match (a, b) {
        (Some(a), Some(b)) => {
            a.type_ == Type::F32
                && b.type_ == Type::F32
                && node.type_ == Type::F32
                && b.nb[0] == 4
                && a.is_contiguous()
                && node.is_contiguous()
                && a.same_shape(node)
        }
        _ => false,
    }
}

/// `GGML_OP_ACC`: `dst` is `src[0]` with `src[1]` added into the window at byte offset
/// `op_params[3]` with strides `op_params[0..3]` (copied first unless in place, `op_params[4]`).
pub fn acc(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let b = src(dst, 1);
    crate::ggml_assert!(acc_supports(&dst), "acc: needs contiguous f32 tensors and packed f32 rows to add");
    window_prepare(params, &a, &dst);
    if b.is_empty() {
        // rows of nothing: no work, however many of them (ggml walks them all)
        return;
    }
    let win = Window::from_params(&dst, 4);
    let ne_b = extents(&b);
    win.check(ne_b, dst.nbytes());
    win.check(ne_b, a.nbytes());
    let simd = use_simd(params);
    let row = if simd { fast_arith_row() } else { arith_row::<f32, f32, f32> as ArithRow };
    for ir in split(nrows(&b), params.ith, params.nth) {
        let r = row_coords(ir, ne_b);
        // SAFETY: the window rows lie inside `a` and `dst` (checked above), the row of `b`
        // holds ne10 packed floats; threads take distinct rows.
        unsafe { row(Arith::Add, ne_b[0], win.row(&dst, r), 4, win.row(&a, r), 4, row_addr(&b, r), 4) };
    }
}

/// Whether [`add_id`] covers `node`.
pub fn add_id_supports(node: &Tensor) -> bool {
    let (a, b, ids) = (node.source(0), node.source(1), node.source(2));
    match (a, b, ids) {
        (Some(a), Some(b), Some(ids)) => {
            a.type_ == Type::F32
                && b.type_ == Type::F32
                && node.type_ == Type::F32
                && ids.type_ == Type::I32
                && a.nb[0] == 4
                && b.nb[0] == 4
                && node.nb[0] == 4
                && a.ne[0] == b.ne[0]
        }
        _ => false,
    }
}

/// `GGML_OP_ADD_ID`: row `[i1, i2]` of `dst` is that row of `src[0]` plus row
/// `ids[i1, i2]` of `src[1]`.
pub fn add_id(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let b = src(dst, 1);
    let ids = src(dst, 2);
    crate::ggml_assert!(add_id_supports(&dst), "add_id: needs f32 rows and i32 ids");
    let ne = extents(&a);
    let row = if use_simd(params) { fast_arith_row() } else { arith_row::<f32, f32, f32> as ArithRow };
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        // SAFETY: an in-bounds element of the i32 id tensor.
        let k = unsafe { addr(&ids, [r[0], r[1], 0, 0]).cast::<i32>().read_unaligned() };
        crate::ggml_assert!(k >= 0 && i64::from(k) < b.ne[1], "add_id: id {} outside 0..{}", k, b.ne[1]);
        // SAFETY: rows of ne0 packed floats in `a`, `dst` and `b` (row k checked above).
        unsafe {
            row(Arith::Add, ne[0], row_addr(&dst, r), 4, row_addr(&a, r), 4, row_addr(&b, [k as usize, 0, 0]), 4)
        };
    }
}

// ---- scale, clamp, leaky_relu, fill, tri, silu_back ----

/// Whether [`scale`] covers `node`.
pub fn scale_supports(node: &Tensor) -> bool {
    match node.source(0) {
        Some(a) => {
            a.type_ == Type::F32 && node.type_ == Type::F32 && a.same_shape(node) && a.nb[0] == 4 && node.nb[0] == 4
        }
        None => false,
    }
}

/// `GGML_OP_SCALE`: `dst = s·x + b` with `[s, b]` = `op_params[0..2]` (`s·x` when `b` is 0).
pub fn scale(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    crate::ggml_assert!(scale_supports(&dst), "scale: needs f32 tensors with packed rows");
    let (s, b) = (dst.op_param_f32(0), dst.op_param_f32(1));
    let simd = use_simd(params);
    let ne = extents(&a);
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        // SAFETY: row `r` of `a` and of `dst` (same shape) hold ne0 packed floats; rows are
        // split between threads; in place, `y` equals `x`.
        unsafe { scale_row(ne[0], row_addr(&dst, r).cast(), row_addr(&a, r).cast(), s, b, simd) };
    }
}

/// `y[i] = x[i]·s (+ b)`.
///
/// # Safety
/// `x` and `y` address `n` packed floats (`y` may equal `x`).
unsafe fn scale_row(n: usize, y: *mut f32, x: *const f32, s: f32, b: f32, simd: bool) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` means the CPU has AVX2 and FMA; the rows are the caller's.
        return unsafe { avx2::scale(n, y, x, s, b) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    for i in 0..n {
        // SAFETY: i < n (caller's contract).
        unsafe {
            let v = *x.add(i);
            *y.add(i) = if b == 0.0 { v * s } else { v * s + b };
        }
    }
}

/// Whether [`clamp`] and [`leaky_relu`] cover `node`: a source of the result's shape, F32,
/// F16 or BF16 into the same type, or F16/BF16 into F32.
pub fn map_supports(node: &Tensor) -> bool {
    match node.source(0) {
        Some(a) => a.same_shape(node) && map_types_supported(a.type_, node.type_),
        None => false,
    }
}

/// `GGML_OP_CLAMP`: `MAX(MIN(x, max), min)` with `[min, max]` = `op_params[0..2]`.
pub fn clamp(params: &ComputeParams, dst: TensorPtr) {
    let (lo, hi) = (dst.op_param_f32(0), dst.op_param_f32(1));
    map_rows(params, &src(dst, 0), &dst, None, move |x| c_max(c_min(x, hi), lo));
}

/// `GGML_OP_LEAKY_RELU`: `max(x, 0) + slope·min(x, 0)`, the slope in `op_params[0]`.
pub fn leaky_relu(params: &ComputeParams, dst: TensorPtr) {
    let slope = dst.op_param_f32(0);
    map_rows(params, &src(dst, 0), &dst, None, move |x| {
        (if x > 0.0 { x } else { 0.0 }) + slope * (if x < 0.0 { x } else { 0.0 })
    });
}

/// Whether [`fill`] covers `node`.
pub fn fill_supports(node: &Tensor) -> bool {
    is_float(node.type_) && node.nb[0] == node.type_.type_size()
}

/// `GGML_OP_FILL`: every element becomes `op_params[0]`.
pub fn fill(params: &ComputeParams, dst: TensorPtr) {
    let c = dst.op_param_f32(0);
    crate::ggml_assert!(fill_supports(&dst), "fill: unsupported type {}", dst.type_.name());
    let ne = extents(&dst);
    for ir in split(nrows(&dst), params.ith, params.nth) {
        let y = row_addr(&dst, row_coords(ir, ne));
        // SAFETY: row `ir` of `dst` holds ne0 packed elements of its type; rows are split
        // between threads.
        unsafe {
            match dst.type_ {
                Type::F32 => fill_row(ne[0], y.cast::<f32>(), c),
                Type::F16 => fill_row(ne[0], y.cast::<F16>(), F16::from_f32(c)),
                _ => fill_row(ne[0], y.cast::<Bf16>(), Bf16::from_f32(c)),
            }
        }
    }
}

/// # Safety
/// `y` addresses `n` writable elements.
unsafe fn fill_row<T: Copy>(n: usize, y: *mut T, v: T) {
    for i in 0..n {
        // SAFETY: i < n (caller's contract).
        unsafe { y.add(i).write_unaligned(v) };
    }
}

/// Whether [`tri`] covers `node`.
pub fn tri_supports(node: &Tensor) -> bool {
    match node.source(0) {
        Some(a) => {
            is_float(a.type_) && node.type_ == a.type_ && a.same_shape(node) && (0..4).contains(&node.op_params[0])
        }
        None => false,
    }
}

/// `GGML_OP_TRI`: keeps the triangle of each matrix that `op_params[0]` names
/// (`enum ggml_tri_type`: upper with diagonal, upper, lower with diagonal, lower); the other
/// elements become 0.
pub fn tri(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let keep: fn(usize, usize) -> bool = match dst.op_params[0] {
        0 => |col, row| col >= row,
        1 => |col, row| col > row,
        2 => |col, row| col <= row,
        3 => |col, row| col < row,
        t => crate::ggml_abort!("tri: invalid triangle type {}", t),
    };
    crate::ggml_assert!(a.same_shape(&dst) && a.type_ == dst.type_ && is_float(a.type_), "tri: unsupported tensors");
    let unit = a.type_.type_size();
    let ne = extents(&a);
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        for i0 in 0..ne[0] {
            let to = addr(&dst, [i0, r[0], r[1], r[2]]);
            // SAFETY: in-bounds elements of this thread's rows of `a` and `dst`.
            unsafe {
                if keep(i0, r[0]) {
                    std::ptr::copy(addr(&a, [i0, r[0], r[1], r[2]]), to, unit);
                } else {
                    std::ptr::write_bytes(to, 0, unit);
                }
            }
        }
    }
}

/// Whether [`silu_back`] covers `node`.
pub fn silu_back_supports(node: &Tensor) -> bool {
    let (g, x) = (node.source(0), node.source(1));
    match (g, x) {
        (Some(g), Some(x)) => {
            matches!(x.type_, Type::F32 | Type::F16 | Type::BF16)
                && g.type_ == x.type_
                && node.type_ == x.type_
                && g.same_shape(x)
                && x.same_shape(node)
        }
        _ => false,
    }
}

/// `GGML_OP_SILU_BACK`: the gradient of SiLU, `dy·s·(1 + x·(1 - s))` with `s = σ(x)`, where
/// `dy` is `src[0]` and `x` is `src[1]`.
pub fn silu_back(params: &ComputeParams, dst: TensorPtr) {
    let dy = src(dst, 0);
    let x = src(dst, 1);
    crate::ggml_assert!(silu_back_supports(&dst), "silu_back: unsupported types or shapes");
    let ty = x.type_;
    let ne = extents(&x);
    for ir in split(nrows(&x), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        for i0 in 0..ne[0] {
            let at = [i0, r[0], r[1], r[2]];
            // SAFETY: in-bounds elements of the three tensors, of type `ty`; this thread's rows.
            unsafe {
                let read = |t: &Tensor| -> f32 {
                    let p = addr(t, at);
                    match ty {
                        Type::F32 => p.cast::<f32>().read_unaligned(),
                        Type::F16 => p.cast::<F16>().read_unaligned().to_f32(),
                        _ => p.cast::<Bf16>().read_unaligned().to_f32(),
                    }
                };
                let (xv, dv) = (read(&x), read(&dy));
                let s = 1.0 / (1.0 + (-xv).exp());
                let v = dv * s * (1.0 + xv * (1.0 - s));
                let p = addr(&dst, at);
                match ty {
                    Type::F32 => p.cast::<f32>().write_unaligned(v),
                    Type::F16 => p.cast::<F16>().write_unaligned(F16::from_f32(v)),
                    _ => p.cast::<Bf16>().write_unaligned(Bf16::from_f32(v)),
                }
            }
        }
    }
}

// ---- the vectorised rows ----

/// The AVX2 f32 arithmetic row (the scalar one where there is no AVX2).
fn fast_arith_row() -> ArithRow {
    #[cfg(target_arch = "x86_64")]
    {
        avx2::arith
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        arith_row::<f32, f32, f32>
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::Arith;

    /// # Safety
    /// AVX2 and FMA are available; `x` and `y` address `n` packed floats (`y` may equal `x`).
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn scale(n: usize, y: *mut f32, x: *const f32, s: f32, b: f32) {
        let (vs, vb) = (_mm256_set1_ps(s), _mm256_set1_ps(b));
        let mut i = 0;
        // SAFETY: every access is below `n`; each vector is loaded before it is stored.
        unsafe {
            while i + 8 <= n {
                let v = _mm256_loadu_ps(x.add(i));
                let r = if b == 0.0 { _mm256_mul_ps(v, vs) } else { _mm256_fmadd_ps(v, vs, vb) };
                _mm256_storeu_ps(y.add(i), r);
                i += 8;
            }
            while i < n {
                let v = *x.add(i);
                *y.add(i) = if b == 0.0 { v * s } else { v.mul_add(s, b) };
                i += 1;
            }
        }
    }

    /// # Safety
    /// AVX2 is available; the rows address `n` floats at their strides (`z` may equal `x` or
    /// `y`).
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn arith(op: Arith, n: usize, z: *mut u8, sz: usize, x: *const u8, sx: usize, y: *const u8, sy: usize) {
        if sz != 4 || sx != 4 || sy != 4 {
            // SAFETY: the caller's contract.
            return unsafe { super::arith_row::<f32, f32, f32>(op, n, z, sz, x, sx, y, sy) };
        }
        let (z, x, y) = (z.cast::<f32>(), x.cast::<f32>(), y.cast::<f32>());
        let mut i = 0;
        // SAFETY: every access is below `n`; loads precede the store of each vector.
        unsafe {
            while i + 8 <= n {
                let (a, b) = (_mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(y.add(i)));
                let v = match op {
                    Arith::Add => _mm256_add_ps(a, b),
                    Arith::Sub => _mm256_sub_ps(a, b),
                    Arith::Mul => _mm256_mul_ps(a, b),
                    Arith::Div => _mm256_div_ps(a, b),
                };
                _mm256_storeu_ps(z.add(i), v);
                i += 8;
            }
            while i < n {
                *z.add(i) = op.apply(*x.add(i), *y.add(i));
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::Context;
    use crate::core::ops::{elementwise as ew, shape, unary as unary_ops};
    use crate::cpu::kernels::testing::*;

    fn tol(ty: Type) -> f64 {
        match ty {
            Type::F16 => 2e-3,
            Type::BF16 => 1.6e-2,
            _ => 1e-6,
        }
    }

    const TRIPLES: [(Type, Type, Type); 7] = [
        (Type::F32, Type::F32, Type::F32),
        (Type::F16, Type::F16, Type::F16),
        (Type::BF16, Type::BF16, Type::BF16),
        (Type::BF16, Type::F32, Type::BF16),
        (Type::BF16, Type::F32, Type::F32),
        (Type::F16, Type::F32, Type::F16),
        (Type::F16, Type::F32, Type::F32),
    ];

    type Make = fn(&mut Context, TensorPtr, TensorPtr) -> TensorPtr;
    type Kernel = fn(&ComputeParams, TensorPtr);
    type Reference = fn(f64, f64) -> f64;

    const OPS: [(Make, Kernel, Reference); 4] = [
        (ew::add, add, |a, b| a + b),
        (ew::sub, sub, |a, b| a - b),
        (ew::mul, mul, |a, b| a * b),
        (ew::div, div, |a, b| a / b),
    ];

    /// The broadcast reference: `b` repeated over `a` (both in logical order).
    fn broadcast(a: &[f64], ne_a: [i64; 4], b: &[f64], ne_b: [i64; 4], f: fn(f64, f64) -> f64) -> Vec<f64> {
        let n = |ne: [i64; 4]| ne.map(|x| x as usize);
        let (na, nb) = (n(ne_a), n(ne_b));
        (0..a.len())
            .map(|i| {
                let c = [i % na[0], i / na[0] % na[1], i / (na[0] * na[1]) % na[2], i / (na[0] * na[1] * na[2])];
                let j = (c[0] % nb[0]) + nb[0] * ((c[1] % nb[1]) + nb[1] * ((c[2] % nb[2]) + nb[2] * (c[3] % nb[3])));
                f(a[i], b[j])
            })
            .collect()
    }

    #[test]
    fn arithmetic_with_broadcasting_and_strides() {
        for (make, kernel, f) in OPS {
            for (t0, t1, td) in TRIPLES {
                for_each_team(|nth, use_ref| {
                    for case in 0..5 {
                        let mut c = ctx();
                        let base = c.new_tensor(t0, &[16, 6, 4, 2]);
                        put(base, |i| noise(i, 1) * 4.0);
                        let a = if case == 4 { shape::permute(&mut c, base, 1, 0, 2, 3) } else { base };
                        let b = match case {
                            0 => c.new_tensor(t1, &a.ne.clone()),
                            1 => c.new_tensor(t1, &[a.ne[0], 1, 1, 1]),
                            2 => c.new_tensor(t1, &[a.ne[0] / 2, 3, 2, 1]),
                            _ => {
                                let bt = c.new_tensor(t1, &[2, a.ne[0]]);
                                shape::transpose(&mut c, bt)
                            }
                        };
                        put(b, |i| noise(i, 2) * 2.0 + 3.0);
                        let r = make(&mut c, a, b);
                        r.get_mut().type_ = td;
                        let fresh = c.new_tensor(td, &a.ne.clone());
                        r.get_mut().nb = fresh.nb;
                        r.get_mut().data = fresh.data;
                        assert!(binary_supports(&r));
                        run(&mut c, r, kernel, nth, 0, use_ref);
                        let want = broadcast(&values(a), a.ne, &values(b), b.ne, f);
                        let t = tol(t0).max(tol(td));
                        assert_close(
                            &values(r),
                            &want,
                            t,
                            &format!("{} {}/{}/{} case {case}", r.op.name(), t0.name(), t1.name(), td.name()),
                        );
                    }
                });
            }
        }
    }

    #[test]
    fn arithmetic_in_place() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[21, 5]);
            put(a, |i| noise(i, 4));
            let before = values(a);
            let b = c.new_tensor(Type::F32, &[21, 1]);
            put(b, |i| noise(i, 5));
            let r = ew::mul_inplace(&mut c, a, b);
            run(&mut c, r, mul, nth, 0, use_ref);
            let want = broadcast(&before, a.ne, &values(b), b.ne, |x, y| x * y);
            assert_close(&values(a), &want, 1e-6, "mul in place");
        });
    }

    #[test]
    fn quantized_add() {
        for q in [Type::Q4_0, Type::Q8_0, Type::Q5_1] {
            for to in [q, Type::F32] {
                for_each_team(|nth, use_ref| {
                    let mut c = ctx();
                    let src_f32 = c.new_tensor(Type::F32, &[64, 3]);
                    put(src_f32, |i| noise(i, 6));
                    let a = c.new_tensor(q, &[64, 3]);
                    let r = shape::cpy(&mut c, src_f32, a);
                    run(&mut c, r, super::super::copy::cpy, 1, 0, true);
                    let deq = c.new_tensor(Type::F32, &[64, 3]);
                    let r = shape::cpy(&mut c, a, deq);
                    run(&mut c, r, super::super::copy::cpy, 1, 0, true);
                    let b = c.new_tensor(Type::F32, &[64, 1]);
                    put(b, |i| noise(i, 7) * 0.5);
                    let r = if to == q { ew::add(&mut c, a, b) } else { ew::add_cast(&mut c, a, b, Type::F32) };
                    assert!(binary_supports(&r));
                    run(&mut c, r, add, nth, add_work_size(&r, nth), use_ref);
                    let want = broadcast(&values(deq), a.ne, &values(b), b.ne, |x, y| x + y);
                    let got = if to == q {
                        let out = c.new_tensor(Type::F32, &[64, 3]);
                        let r2 = shape::cpy(&mut c, r, out);
                        run(&mut c, r2, super::super::copy::cpy, 1, 0, true);
                        values(out)
                    } else {
                        values(r)
                    };
                    let bound = if to == Type::F32 {
                        1e-6
                    } else if q == Type::Q8_0 {
                        0.02
                    } else {
                        0.2
                    };
                    assert_close(&got, &want, bound, q.name());
                });
            }
        }
    }

    #[test]
    fn add1_acc_add_id() {
        for_each_team(|nth, use_ref| {
            for (ta, tb) in [
                (Type::F32, Type::F32),
                (Type::F16, Type::F32),
                (Type::F16, Type::F16),
                (Type::BF16, Type::BF16),
                (Type::BF16, Type::F32),
            ] {
                let mut c = ctx();
                let a = c.new_tensor(ta, &[10, 3]);
                put(a, |i| noise(i, 8));
                let s = c.new_tensor(tb, &[1]);
                put(s, |_| 0.75);
                let r = ew::add1(&mut c, a, s);
                assert!(add1_supports(&r));
                run(&mut c, r, add1, nth, 0, use_ref);
                let want: Vec<f64> = values(a).iter().map(|x| x + 0.75).collect();
                assert_close(&values(r), &want, tol(ta), "add1");
            }
            // quantized add1
            let mut c = ctx();
            let a = c.new_tensor(Type::Q8_0, &[32, 2]);
            let zero = c.new_tensor(Type::F32, &[32, 2]);
            put(zero, |i| noise(i, 9));
            let r = shape::cpy(&mut c, zero, a);
            run(&mut c, r, super::super::copy::cpy, 1, 0, true);
            let s = c.new_tensor(Type::F32, &[1]);
            put(s, |_| 0.5);
            let r = ew::add1(&mut c, a, s);
            assert!(add1_supports(&r));
            run(&mut c, r, add1, nth, add_work_size(&r, nth), use_ref);
            let out = c.new_tensor(Type::F32, &[32, 2]);
            let r2 = shape::cpy(&mut c, r, out);
            run(&mut c, r2, super::super::copy::cpy, 1, 0, true);
            let want: Vec<f64> = values(zero).iter().map(|x| x + 0.5).collect();
            assert_close(&values(out), &want, 0.02, "add1 q8_0");

            // acc into a window, in place and not
            for inplace in [false, true] {
                let a = c.new_tensor(Type::F32, &[8, 4]);
                put(a, |i| i as f64);
                let before = values(a);
                let b = c.new_tensor(Type::F32, &[3, 2]);
                put(b, |i| 100.0 * (i + 1) as f64);
                let r = ew::acc_impl(&mut c, a, b, a.nb[1], a.nb[2], a.nb[3], 4 * (8 + 2), inplace);
                assert!(acc_supports(&r));
                run(&mut c, r, acc, nth, 0, use_ref);
                let mut want = before.clone();
                for j in 0..2 {
                    for i in 0..3 {
                        want[(1 + j) * 8 + 2 + i] += 100.0 * (i + 3 * j + 1) as f64;
                    }
                }
                assert_eq!(values(r), want);
                if !inplace {
                    assert_eq!(values(a), before);
                }
            }

            // add_id
            let a = c.new_tensor(Type::F32, &[5, 2, 3]);
            put(a, |i| i as f64);
            let b = c.new_tensor(Type::F32, &[5, 4]);
            put(b, |i| 1000.0 * i as f64);
            let ids = c.new_tensor(Type::I32, &[2, 3]);
            let idx = [3, 0, 1, 1, 2, 3];
            put(ids, |i| idx[i] as f64);
            let r = ew::add_id(&mut c, a, b, ids);
            assert!(add_id_supports(&r));
            run(&mut c, r, add_id, nth, 0, use_ref);
            let (av, bv) = (values(a), values(b));
            let want: Vec<f64> = (0..30).map(|i| av[i] + bv[idx[i / 5] * 5 + i % 5]).collect();
            assert_eq!(values(r), want);
        });
    }

    #[test]
    fn affine_maps_and_masks() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[19, 3]);
            put(a, |i| noise(i, 10) * 5.0);
            let x = values(a);
            for (s, b) in [(0.5f32, 0.0f32), (-2.0, 1.25)] {
                let r = ew::scale_bias(&mut c, a, s, b);
                assert!(scale_supports(&r));
                run(&mut c, r, scale, nth, 0, use_ref);
                let want: Vec<f64> = x.iter().map(|v| v * f64::from(s) + f64::from(b)).collect();
                assert_close(&values(r), &want, 1e-6, "scale");
            }
            for ty in [Type::F32, Type::F16, Type::BF16] {
                let a = c.new_tensor(ty, &[19, 3]);
                put(a, |i| noise(i, 11) * 5.0);
                let x = values(a);
                let r = ew::clamp(&mut c, a, -1.5, 2.0);
                assert!(map_supports(&r));
                run(&mut c, r, clamp, nth, 0, use_ref);
                let want: Vec<f64> = x.iter().map(|v| v.clamp(-1.5, 2.0)).collect();
                assert_close(&values(r), &want, tol(ty), "clamp");
                let r = unary_ops::leaky_relu(&mut c, a, 0.125, false);
                run(&mut c, r, leaky_relu, nth, 0, use_ref);
                let want: Vec<f64> = x.iter().map(|&v| if v > 0.0 { v } else { 0.125 * v }).collect();
                assert_close(&values(r), &want, tol(ty), "leaky_relu");

                let g = c.new_tensor(ty, &[19, 3]);
                put(g, |i| noise(i, 12));
                let r = unary_ops::silu_back(&mut c, g, a);
                assert!(silu_back_supports(&r));
                run(&mut c, r, silu_back, nth, 0, use_ref);
                let want: Vec<f64> = x
                    .iter()
                    .zip(values(g))
                    .map(|(&x, dy)| {
                        let s = 1.0 / (1.0 + (-x).exp());
                        dy * s * (1.0 + x * (1.0 - s))
                    })
                    .collect();
                assert_close(&values(r), &want, tol(ty) * 4.0, "silu_back");
            }
            for ty in [Type::F32, Type::F16] {
                let a = c.new_tensor(ty, &[7, 3, 2]);
                let r = ew::fill(&mut c, a, 2.5);
                assert!(fill_supports(&r));
                run(&mut c, r, fill, nth, 0, use_ref);
                assert!(values(r).iter().all(|&v| v == 2.5));
            }
            for kind in 0..4 {
                let a = c.new_tensor(Type::F32, &[5, 5, 2]);
                put(a, |i| i as f64 + 1.0);
                let r = ew::tri(&mut c, a, kind);
                assert!(tri_supports(&r));
                run(&mut c, r, tri, nth, 0, use_ref);
                for (k, &v) in values(r).iter().enumerate() {
                    let (col, row) = (k % 5, k / 5 % 5);
                    let keep = [col >= row, col > row, col <= row, col < row][kind as usize];
                    assert_eq!(v, if keep { k as f64 + 1.0 } else { 0.0 });
                }
            }
        });
    }
}
