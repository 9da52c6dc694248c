//! C entry points of the activations and other per-element functions (`core::ops::unary`).

use crate::core::context::Context;
use crate::core::op::UnaryOp;
use crate::core::ops::unary;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use crate::ffi::static_c_str;
use std::ffi::c_char;

export_one_operand! {
    ggml_abs => unary::abs;
    ggml_abs_inplace => unary::abs_inplace;
    ggml_sgn => unary::sgn;
    ggml_sgn_inplace => unary::sgn_inplace;
    ggml_neg => unary::neg;
    ggml_neg_inplace => unary::neg_inplace;
    ggml_step => unary::step;
    ggml_step_inplace => unary::step_inplace;
    ggml_tanh => unary::tanh;
    ggml_tanh_inplace => unary::tanh_inplace;
    ggml_elu => unary::elu;
    ggml_elu_inplace => unary::elu_inplace;
    ggml_relu => unary::relu;
    ggml_relu_inplace => unary::relu_inplace;
    ggml_sigmoid => unary::sigmoid;
    ggml_sigmoid_inplace => unary::sigmoid_inplace;
    ggml_gelu => unary::gelu;
    ggml_gelu_inplace => unary::gelu_inplace;
    ggml_gelu_erf => unary::gelu_erf;
    ggml_gelu_erf_inplace => unary::gelu_erf_inplace;
    ggml_gelu_quick => unary::gelu_quick;
    ggml_gelu_quick_inplace => unary::gelu_quick_inplace;
    ggml_silu => unary::silu;
    ggml_silu_inplace => unary::silu_inplace;
    ggml_hardswish => unary::hardswish;
    ggml_hardsigmoid => unary::hardsigmoid;
    ggml_exp => unary::exp;
    ggml_exp_inplace => unary::exp_inplace;
    ggml_expm1 => unary::expm1;
    ggml_expm1_inplace => unary::expm1_inplace;
    ggml_softplus => unary::softplus;
    ggml_softplus_inplace => unary::softplus_inplace;
    ggml_floor => unary::floor;
    ggml_floor_inplace => unary::floor_inplace;
    ggml_ceil => unary::ceil;
    ggml_ceil_inplace => unary::ceil_inplace;
    ggml_round => unary::round;
    ggml_round_inplace => unary::round_inplace;
    ggml_trunc => unary::trunc;
    ggml_trunc_inplace => unary::trunc_inplace;
}

export_two_operands! {
    ggml_silu_back => unary::silu_back;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_unary(ctx: *mut Context, a: *mut Tensor, op: UnaryOp) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { unary::unary(arg!(ctx), arg!(a), op).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_unary_inplace(ctx: *mut Context, a: *mut Tensor, op: UnaryOp) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { unary::unary_inplace(arg!(ctx), arg!(a), op).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_leaky_relu(
    ctx: *mut Context,
    a: *mut Tensor,
    negative_slope: f32,
    inplace: bool,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { unary::leaky_relu(arg!(ctx), arg!(a), negative_slope, inplace).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_xielu(
    ctx: *mut Context,
    a: *mut Tensor,
    alpha_n: f32,
    alpha_p: f32,
    beta: f32,
    eps: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { unary::xielu(arg!(ctx), arg!(a), alpha_n, alpha_p, beta, eps).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_unary_op(t: *const Tensor) -> UnaryOp {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { unary::get_unary_op(&arg!(t)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_unary_op_name(op: UnaryOp) -> *const c_char {
    static_c_str(op.name())
}
