//! C entry points of `argsort` and the top-k selections (`core::ops::sort`).

use crate::core::context::Context;
use crate::core::ops::sort;
use crate::core::ops::sort::SortOrder;
use crate::core::tensor::Tensor;
use crate::ffi::{context, tensor};
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_argsort(ctx: *mut Context, a: *mut Tensor, order: SortOrder) -> *mut Tensor {
    sort::argsort(context(ctx), tensor(a), order).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_argsort_top_k(ctx: *mut Context, a: *mut Tensor, k: c_int) -> *mut Tensor {
    sort::argsort_top_k(context(ctx), tensor(a), k).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_top_k(ctx: *mut Context, a: *mut Tensor, k: c_int) -> *mut Tensor {
    sort::top_k(context(ctx), tensor(a), k).as_ptr()
}
