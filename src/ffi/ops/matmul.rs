//! C entry points of the matrix products and their precision settings (`core::ops::matmul`).

use crate::core::context::Context;
use crate::core::ops::matmul;
use crate::core::ops::matmul::{OpHint, Prec};
use crate::core::tensor::Tensor;
use crate::ffi::{context, tensor};
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    matmul::mul_mat(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_set_prec(a: *mut Tensor, prec: Prec) {
    matmul::mul_mat_set_prec(tensor(a), prec);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_set_hint(a: *mut Tensor, hint: OpHint) {
    matmul::mul_mat_set_hint(tensor(a), hint);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_id(
    ctx: *mut Context,
    as_: *mut Tensor,
    b: *mut Tensor,
    ids: *mut Tensor,
) -> *mut Tensor {
    matmul::mul_mat_id(context(ctx), tensor(as_), tensor(b), tensor(ids)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_out_prod(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    matmul::out_prod(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_prec_set_acc(a: *mut Tensor, prec: Prec) -> bool {
    matmul::prec_set_acc(tensor(a), prec)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_prec_set_src(a: *mut Tensor, prec: Prec, idx: c_int) -> bool {
    matmul::prec_set_src(tensor(a), prec, idx)
}
