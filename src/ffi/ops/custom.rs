//! C entry points of the user-defined ops (`core::ops::custom`).

use crate::core::context::Context;
use crate::core::ops::custom;
use crate::core::ops::custom::{Custom1Fn, Custom2Fn, Custom3Fn, CustomFn};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::ffi::handle::{arg, opt_arg};
use std::ffi::{c_int, c_void};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom1(
    ctx: *mut Context,
    a: *mut Tensor,
    fun: Option<Custom1Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::map_custom1(arg!(ctx), arg!(a), fun, n_tasks, userdata).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom1_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    fun: Option<Custom1Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::map_custom1_inplace(arg!(ctx), arg!(a), fun, n_tasks, userdata).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom2(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    fun: Option<Custom2Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::map_custom2(arg!(ctx), arg!(a), arg!(b), fun, n_tasks, userdata).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom2_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    fun: Option<Custom2Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::map_custom2_inplace(arg!(ctx), arg!(a), arg!(b), fun, n_tasks, userdata).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom3(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    fun: Option<Custom3Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::map_custom3(arg!(ctx), arg!(a), arg!(b), arg!(c), fun, n_tasks, userdata).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom3_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    fun: Option<Custom3Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::map_custom3_inplace(arg!(ctx), arg!(a), arg!(b), arg!(c), fun, n_tasks, userdata).as_ptr() }
}

/// The `args`/`n_args` array of the custom ops; entries may be NULL.
fn custom_args(args: *mut *mut Tensor, n_args: c_int) -> Vec<Option<TensorPtr>> {
    let n = usize::try_from(n_args).unwrap_or(0);
    if n == 0 {
        return Vec::new();
    }
    crate::ggml_assert!(!args.is_null(), "NULL args with n_args = {}", n_args);
    // SAFETY: the C caller's contract: an array of n_args tensors, each NULL or live.
    unsafe { std::slice::from_raw_parts(args, n).iter().map(|&p| opt_arg!(p)).collect() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_custom_4d(
    ctx: *mut Context,
    type_: Type,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
    args: *mut *mut Tensor,
    n_args: c_int,
    fun: Option<CustomFn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    crate::ggml_assert!(n_args < crate::core::tensor::MAX_SRC as c_int, "n_args = {}", n_args);
    let args = custom_args(args, n_args);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::custom_4d(arg!(ctx), type_, [ne0, ne1, ne2, ne3], &args, fun, n_tasks, userdata).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_custom_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    args: *mut *mut Tensor,
    n_args: c_int,
    fun: Option<CustomFn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    crate::ggml_assert!(n_args < crate::core::tensor::MAX_SRC as c_int - 1, "n_args = {}", n_args);
    let args = custom_args(args, n_args);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { custom::custom_inplace(arg!(ctx), arg!(a), &args, fun, n_tasks, userdata).as_ptr() }
}
