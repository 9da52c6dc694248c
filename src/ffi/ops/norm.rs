//! C entry points of the normalisations (`core::ops::norm`).

use crate::core::context::Context;
use crate::core::ops::norm;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use std::ffi::c_int;

export_with_f32! {
    ggml_norm => norm::norm;
    ggml_norm_inplace => norm::norm_inplace;
    ggml_rms_norm => norm::rms_norm;
    ggml_rms_norm_inplace => norm::rms_norm_inplace;
    ggml_l2_norm => norm::l2_norm;
    ggml_l2_norm_inplace => norm::l2_norm_inplace;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rms_norm_back(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, eps: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { norm::rms_norm_back(arg!(ctx), arg!(a), arg!(b), eps).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_group_norm(ctx: *mut Context, a: *mut Tensor, n_groups: c_int, eps: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { norm::group_norm(arg!(ctx), arg!(a), n_groups, eps).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_group_norm_inplace(ctx: *mut Context, a: *mut Tensor, n_groups: c_int, eps: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { norm::group_norm_inplace(arg!(ctx), arg!(a), n_groups, eps).as_ptr() }
}
