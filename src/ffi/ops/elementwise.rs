//! C entry points of the element-wise constructors (`core::ops::elementwise`): copies, the
//! arithmetic operators, the simple math functions and the affine maps.

use crate::core::context::Context;
use crate::core::ops::elementwise;
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::ffi::handle::arg;
use std::ffi::c_int;

export_one_operand! {
    ggml_dup => elementwise::dup;
    ggml_dup_inplace => elementwise::dup_inplace;
    ggml_sqr => elementwise::sqr;
    ggml_sqr_inplace => elementwise::sqr_inplace;
    ggml_sqrt => elementwise::sqrt;
    ggml_sqrt_inplace => elementwise::sqrt_inplace;
    ggml_log => elementwise::log;
    ggml_log_inplace => elementwise::log_inplace;
    ggml_sin => elementwise::sin;
    ggml_sin_inplace => elementwise::sin_inplace;
    ggml_cos => elementwise::cos;
    ggml_cos_inplace => elementwise::cos_inplace;
}

export_two_operands! {
    ggml_add => elementwise::add;
    ggml_add_inplace => elementwise::add_inplace;
    ggml_add1 => elementwise::add1;
    ggml_add1_inplace => elementwise::add1_inplace;
    ggml_sub => elementwise::sub;
    ggml_sub_inplace => elementwise::sub_inplace;
    ggml_mul => elementwise::mul;
    ggml_mul_inplace => elementwise::mul_inplace;
    ggml_div => elementwise::div;
    ggml_div_inplace => elementwise::div_inplace;
}

export_with_f32! {
    ggml_scale => elementwise::scale;
    ggml_scale_inplace => elementwise::scale_inplace;
    ggml_fill => elementwise::fill;
    ggml_fill_inplace => elementwise::fill_inplace;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_cast(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, type_: Type) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::add_cast(arg!(ctx), arg!(a), arg!(b), type_).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_id(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, ids: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::add_id(arg!(ctx), arg!(a), arg!(b), arg!(ids)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_acc(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::acc(arg!(ctx), arg!(a), arg!(b), nb1, nb2, nb3, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_acc_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::acc_inplace(arg!(ctx), arg!(a), arg!(b), nb1, nb2, nb3, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_scale_bias(ctx: *mut Context, a: *mut Tensor, s: f32, b: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::scale_bias(arg!(ctx), arg!(a), s, b).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_scale_bias_inplace(ctx: *mut Context, a: *mut Tensor, s: f32, b: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::scale_bias_inplace(arg!(ctx), arg!(a), s, b).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_clamp(ctx: *mut Context, a: *mut Tensor, min: f32, max: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::clamp(arg!(ctx), arg!(a), min, max).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_clamp_inplace(ctx: *mut Context, a: *mut Tensor, min: f32, max: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::clamp_inplace(arg!(ctx), arg!(a), min, max).as_ptr() }
}

/// `enum ggml_tri_type`, as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct TriType(pub c_int);

#[unsafe(no_mangle)]
pub extern "C" fn ggml_tri(ctx: *mut Context, a: *mut Tensor, tri_type: TriType) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { elementwise::tri(arg!(ctx), arg!(a), tri_type.0).as_ptr() }
}
