//! C entry points of the row gathers and scatters and `diag` (`core::ops::rows`).

use crate::core::context::Context;
use crate::core::ops::rows;
use crate::core::tensor::Tensor;
use crate::ffi::{context, tensor};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rows(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    rows::get_rows(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rows_back(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    rows::get_rows_back(context(ctx), tensor(a), tensor(b), tensor(c)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_rows(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    rows::set_rows(context(ctx), tensor(a), tensor(b), tensor(c)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    rows::diag(context(ctx), tensor(a)).as_ptr()
}
