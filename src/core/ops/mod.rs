//! Op constructors: each describes one operation as a new tensor whose `op`, `src[]` and
//! `op_params` say what a backend must compute. Nothing is computed here.
//!
//! Shapes, source order, `op_params` bytes, in-place behaviour and the names given to views
//! and copies are those of ggml 0.25.1: backends and graph dumps depend on them.
//! Functions are named as the C API without its `ggml_` prefix (`ops::mul_mat` is
//! `ggml_mul_mat`); `_impl` variants take the in-place flag.

pub mod attention;
pub mod conv;
pub mod custom;
pub mod deepseek;
pub mod elementwise;
pub mod glu;
pub mod loss;
pub mod matmul;
pub mod norm;
pub mod pool;
pub mod reduce;
pub mod rope;
pub mod rows;
pub mod sequence;
pub mod shape;
pub mod softmax;
pub mod solve;
pub mod sort;
pub mod ssm;
pub mod unary;
pub mod window;

use super::context::Context;
use super::op::Op;
use super::tensor::{MAX_DIMS, TensorPtr};

/// Marks `result` as computing `op` from `srcs` (filling `src[0..]` in order) and returns it.
pub(super) fn with_op(result: TensorPtr, op: Op, srcs: &[TensorPtr]) -> TensorPtr {
    let t = result.get_mut();
    t.op = op;
    for (slot, src) in t.src.iter_mut().zip(srcs) {
        *slot = src.as_ptr();
    }
    result
}

/// Marks `result` as computing `op` from `srcs` (in `src[]` order).
pub(crate) fn set_op(result: TensorPtr, op: Op, srcs: &[TensorPtr]) {
    let r = result.get_mut();
    r.op = op;
    for (slot, s) in r.src.iter_mut().zip(srcs) {
        *slot = s.as_ptr();
    }
}

/// Sets `t`'s name to `src`'s name followed by `suffix` (ggml's `"%s (view)"` and the like),
/// truncated to 63 bytes.
pub fn name_after(t: TensorPtr, src: TensorPtr, suffix: &str) {
    let name = [src.name_bytes(), suffix.as_bytes()].concat();
    t.get_mut().set_name_bytes(&name);
}

/// A view of all of `src`, with its strides (`ggml_view_tensor`).
pub fn view_tensor(ctx: &mut Context, src: TensorPtr) -> TensorPtr {
    let result = ctx.new_tensor_impl(src.type_, &src.ne, Some(src), 0);
    name_after(result, src, " (view)");
    result.get_mut().nb = src.nb;
    result
}

/// The result tensor of an op that may run in place: a view of `a` if `inplace`, else a new
/// tensor of `a`'s type and shape.
pub fn view_or_dup(ctx: &mut Context, a: TensorPtr, inplace: bool) -> TensorPtr {
    if inplace { view_tensor(ctx, a) } else { ctx.dup_tensor(a) }
}

/// Extents of `ne` as an array, padding with ones.
pub fn dims(ne: &[i64]) -> [i64; MAX_DIMS] {
    let mut out = [1; MAX_DIMS];
    out[..ne.len()].copy_from_slice(ne);
    out
}
