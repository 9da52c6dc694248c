//! C entry points of the reductions, tilings and `concat` (`core::ops::reduce`).

use crate::core::context::Context;
use crate::core::ops::reduce;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use std::ffi::c_int;

export_one_operand! {
    ggml_sum => reduce::sum;
    ggml_sum_rows => reduce::sum_rows;
    ggml_cumsum => reduce::cumsum;
    ggml_mean => reduce::mean;
    ggml_argmax => reduce::argmax;
}

export_two_operands! {
    ggml_count_equal => reduce::count_equal;
    ggml_repeat => reduce::repeat;
    ggml_repeat_back => reduce::repeat_back;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_repeat_4d(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { reduce::repeat_4d(arg!(ctx), arg!(a), ne0, ne1, ne2, ne3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_concat(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, dim: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { reduce::concat(arg!(ctx), arg!(a), arg!(b), dim).as_ptr() }
}
