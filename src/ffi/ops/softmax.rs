//! C entry points of softmax, its gradient and the causal masks (`core::ops::softmax`).

use crate::core::context::Context;
use crate::core::ops::softmax;
use crate::core::tensor::Tensor;
use crate::ffi::handle::{arg, opt_arg};
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_inf(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::diag_mask_inf(arg!(ctx), arg!(a), n_past).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_inf_inplace(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::diag_mask_inf_inplace(arg!(ctx), arg!(a), n_past).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_zero(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::diag_mask_zero(arg!(ctx), arg!(a), n_past).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_zero_inplace(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::diag_mask_zero_inplace(arg!(ctx), arg!(a), n_past).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::soft_max(arg!(ctx), arg!(a)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_inplace(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::soft_max_inplace(arg!(ctx), arg!(a)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext(
    ctx: *mut Context,
    a: *mut Tensor,
    mask: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::soft_max_ext(arg!(ctx), arg!(a), opt_arg!(mask), scale, max_bias).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    mask: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::soft_max_ext_inplace(arg!(ctx), arg!(a), opt_arg!(mask), scale, max_bias).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_add_sinks(a: *mut Tensor, sinks: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::soft_max_add_sinks(arg!(a), opt_arg!(sinks)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::soft_max_ext_back(arg!(ctx), arg!(a), arg!(b), scale, max_bias).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_back_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { softmax::soft_max_ext_back_inplace(arg!(ctx), arg!(a), arg!(b), scale, max_bias).as_ptr() }
}
