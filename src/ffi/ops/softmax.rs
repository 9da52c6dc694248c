//! C entry points of softmax, its gradient and the causal masks (`core::ops::softmax`).

use crate::core::context::Context;
use crate::core::ops::softmax;
use crate::core::tensor::Tensor;
use crate::ffi::{context, opt_tensor, tensor};
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_inf(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_inf(context(ctx), tensor(a), n_past).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_inf_inplace(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_inf_inplace(context(ctx), tensor(a), n_past).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_zero(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_zero(context(ctx), tensor(a), n_past).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_zero_inplace(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_zero_inplace(context(ctx), tensor(a), n_past).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    softmax::soft_max(context(ctx), tensor(a)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_inplace(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    softmax::soft_max_inplace(context(ctx), tensor(a)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext(
    ctx: *mut Context,
    a: *mut Tensor,
    mask: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext(context(ctx), tensor(a), opt_tensor(mask), scale, max_bias).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    mask: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext_inplace(context(ctx), tensor(a), opt_tensor(mask), scale, max_bias).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_add_sinks(a: *mut Tensor, sinks: *mut Tensor) {
    softmax::soft_max_add_sinks(tensor(a), opt_tensor(sinks));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext_back(context(ctx), tensor(a), tensor(b), scale, max_bias).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_back_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext_back_inplace(context(ctx), tensor(a), tensor(b), scale, max_bias).as_ptr()
}
