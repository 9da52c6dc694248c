//! C entry points of `argsort` and the top-k selections (`core::ops::sort`).

use crate::core::context::Context;
use crate::core::ops::sort;
use crate::core::ops::sort::SortOrder;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_argsort(ctx: *mut Context, a: *mut Tensor, order: SortOrder) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { sort::argsort(arg!(ctx), arg!(a), order).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_argsort_top_k(ctx: *mut Context, a: *mut Tensor, k: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { sort::argsort_top_k(arg!(ctx), arg!(a), k).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_top_k(ctx: *mut Context, a: *mut Tensor, k: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { sort::top_k(arg!(ctx), arg!(a), k).as_ptr() }
}
