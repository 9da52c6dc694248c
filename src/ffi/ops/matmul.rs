//! C entry points of the matrix products and their precision settings (`core::ops::matmul`).

use crate::core::context::Context;
use crate::core::ops::matmul;
use crate::core::ops::matmul::{OpHint, Prec};
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { matmul::mul_mat(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_set_prec(a: *mut Tensor, prec: Prec) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { matmul::mul_mat_set_prec(arg!(a), prec) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_set_hint(a: *mut Tensor, hint: OpHint) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { matmul::mul_mat_set_hint(arg!(a), hint) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_id(
    ctx: *mut Context,
    as_: *mut Tensor,
    b: *mut Tensor,
    ids: *mut Tensor,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { matmul::mul_mat_id(arg!(ctx), arg!(as_), arg!(b), arg!(ids)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_out_prod(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { matmul::out_prod(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_prec_set_acc(a: *mut Tensor, prec: Prec) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { matmul::prec_set_acc(arg!(a), prec) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_prec_set_src(a: *mut Tensor, prec: Prec, idx: c_int) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { matmul::prec_set_src(arg!(a), prec, idx) }
}
