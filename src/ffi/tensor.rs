//! Tensor creation, names, flags and shape predicates.

use std::ffi::{c_char, c_int};

use super::{context, tensor};
use crate::core::context::Context;
use crate::core::tensor::Tensor;
use crate::core::types::Type;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor(ctx: *mut Context, type_: Type, n_dims: c_int, ne: *const i64) -> *mut Tensor {
    crate::ggml_assert!(!ne.is_null() && (1..=4).contains(&n_dims), "ggml_new_tensor: bad n_dims {n_dims}");
    // SAFETY: the caller passes n_dims extents.
    let ne = unsafe { std::slice::from_raw_parts(ne, n_dims as usize) };
    context(ctx).new_tensor(type_, ne).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_1d(ctx: *mut Context, type_: Type, ne0: i64) -> *mut Tensor {
    context(ctx).new_tensor(type_, &[ne0]).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_2d(ctx: *mut Context, type_: Type, ne0: i64, ne1: i64) -> *mut Tensor {
    context(ctx).new_tensor(type_, &[ne0, ne1]).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_3d(ctx: *mut Context, type_: Type, ne0: i64, ne1: i64, ne2: i64) -> *mut Tensor {
    context(ctx).new_tensor(type_, &[ne0, ne1, ne2]).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_4d(
    ctx: *mut Context,
    type_: Type,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
) -> *mut Tensor {
    context(ctx).new_tensor(type_, &[ne0, ne1, ne2, ne3]).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dup_tensor(ctx: *mut Context, src: *const Tensor) -> *mut Tensor {
    context(ctx).dup_tensor(tensor(src)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_name(t: *const Tensor) -> *const c_char {
    tensor(t).name.as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_name(t: *mut Tensor, name: *const c_char) -> *mut Tensor {
    let t = tensor(t);
    t.get_mut().set_name_bytes(super::c_str(name));
    t.as_ptr()
}

/// The name field that `ggml_format_name` (variadic.c) prints into.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_rs_tensor_name_buffer(t: *mut Tensor) -> *mut c_char {
    tensor(t).get_mut().name.as_mut_ptr()
}
