//! C entry points of the row gathers and scatters and `diag` (`core::ops::rows`).

use crate::core::context::Context;
use crate::core::ops::rows;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rows(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rows::get_rows(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rows_back(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rows::get_rows_back(arg!(ctx), arg!(a), arg!(b), arg!(c)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_rows(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rows::set_rows(arg!(ctx), arg!(a), arg!(b), arg!(c)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rows::diag(arg!(ctx), arg!(a)).as_ptr() }
}
