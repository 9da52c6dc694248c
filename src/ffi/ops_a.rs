//! C entry points of the element-wise, unary, GLU, reduction and normalisation op
//! constructors, and the op-name accessors.

use std::ffi::{c_char, c_int};

use super::{context, opt_tensor, static_c_str, tensor};
use crate::core::context::Context;
use crate::core::op::{GluOp, Op, UnaryOp};
use crate::core::ops::{elementwise, glu, norm, reduce, unary};
use crate::core::tensor::Tensor;
use crate::core::types::Type;

/// Exports constructors of the shape `(ctx, a)`.
macro_rules! export_one_operand {
    ($($c_name:ident => $rust:path;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
                $rust(context(ctx), tensor(a)).as_ptr()
            }
        )*
    };
}

/// Exports constructors of the shape `(ctx, a, b)`.
macro_rules! export_two_operands {
    ($($c_name:ident => $rust:path;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
                $rust(context(ctx), tensor(a), tensor(b)).as_ptr()
            }
        )*
    };
}

/// Exports constructors of the shape `(ctx, a, float)`.
macro_rules! export_with_f32 {
    ($($c_name:ident => $rust:path;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor, x: f32) -> *mut Tensor {
                $rust(context(ctx), tensor(a), x).as_ptr()
            }
        )*
    };
}

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

    ggml_sum => reduce::sum;
    ggml_sum_rows => reduce::sum_rows;
    ggml_cumsum => reduce::cumsum;
    ggml_mean => reduce::mean;
    ggml_argmax => reduce::argmax;

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

    ggml_reglu => glu::reglu;
    ggml_reglu_swapped => glu::reglu_swapped;
    ggml_geglu => glu::geglu;
    ggml_geglu_swapped => glu::geglu_swapped;
    ggml_swiglu => glu::swiglu;
    ggml_swiglu_swapped => glu::swiglu_swapped;
    ggml_geglu_erf => glu::geglu_erf;
    ggml_geglu_erf_swapped => glu::geglu_erf_swapped;
    ggml_geglu_quick => glu::geglu_quick;
    ggml_geglu_quick_swapped => glu::geglu_quick_swapped;
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

    ggml_count_equal => reduce::count_equal;
    ggml_repeat => reduce::repeat;
    ggml_repeat_back => reduce::repeat_back;

    ggml_silu_back => unary::silu_back;
}

export_with_f32! {
    ggml_scale => elementwise::scale;
    ggml_scale_inplace => elementwise::scale_inplace;
    ggml_fill => elementwise::fill;
    ggml_fill_inplace => elementwise::fill_inplace;

    ggml_norm => norm::norm;
    ggml_norm_inplace => norm::norm_inplace;
    ggml_rms_norm => norm::rms_norm;
    ggml_rms_norm_inplace => norm::rms_norm_inplace;
    ggml_l2_norm => norm::l2_norm;
    ggml_l2_norm_inplace => norm::l2_norm_inplace;
}

// ---- element-wise ops with extra arguments ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_cast(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, type_: Type) -> *mut Tensor {
    elementwise::add_cast(context(ctx), tensor(a), tensor(b), type_).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_id(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, ids: *mut Tensor) -> *mut Tensor {
    elementwise::add_id(context(ctx), tensor(a), tensor(b), tensor(ids)).as_ptr()
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
    elementwise::acc(context(ctx), tensor(a), tensor(b), nb1, nb2, nb3, offset).as_ptr()
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
    elementwise::acc_inplace(context(ctx), tensor(a), tensor(b), nb1, nb2, nb3, offset).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_scale_bias(ctx: *mut Context, a: *mut Tensor, s: f32, b: f32) -> *mut Tensor {
    elementwise::scale_bias(context(ctx), tensor(a), s, b).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_scale_bias_inplace(ctx: *mut Context, a: *mut Tensor, s: f32, b: f32) -> *mut Tensor {
    elementwise::scale_bias_inplace(context(ctx), tensor(a), s, b).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_clamp(ctx: *mut Context, a: *mut Tensor, min: f32, max: f32) -> *mut Tensor {
    elementwise::clamp(context(ctx), tensor(a), min, max).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_clamp_inplace(ctx: *mut Context, a: *mut Tensor, min: f32, max: f32) -> *mut Tensor {
    elementwise::clamp_inplace(context(ctx), tensor(a), min, max).as_ptr()
}

/// `enum ggml_tri_type`, as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct TriType(pub c_int);

#[unsafe(no_mangle)]
pub extern "C" fn ggml_tri(ctx: *mut Context, a: *mut Tensor, tri_type: TriType) -> *mut Tensor {
    elementwise::tri(context(ctx), tensor(a), tri_type.0).as_ptr()
}

// ---- reductions, repeat, concat ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_repeat_4d(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
) -> *mut Tensor {
    reduce::repeat_4d(context(ctx), tensor(a), ne0, ne1, ne2, ne3).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_concat(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, dim: c_int) -> *mut Tensor {
    reduce::concat(context(ctx), tensor(a), tensor(b), dim).as_ptr()
}

// ---- unary ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_unary(ctx: *mut Context, a: *mut Tensor, op: UnaryOp) -> *mut Tensor {
    unary::unary(context(ctx), tensor(a), op).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_unary_inplace(ctx: *mut Context, a: *mut Tensor, op: UnaryOp) -> *mut Tensor {
    unary::unary_inplace(context(ctx), tensor(a), op).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_leaky_relu(
    ctx: *mut Context,
    a: *mut Tensor,
    negative_slope: f32,
    inplace: bool,
) -> *mut Tensor {
    unary::leaky_relu(context(ctx), tensor(a), negative_slope, inplace).as_ptr()
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
    unary::xielu(context(ctx), tensor(a), alpha_n, alpha_p, beta, eps).as_ptr()
}

// ---- GLU ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_glu(ctx: *mut Context, a: *mut Tensor, op: GluOp, swapped: bool) -> *mut Tensor {
    glu::glu(context(ctx), tensor(a), op, swapped).as_ptr()
}

// The split forms accept a NULL gate as the reference does (it then acts as the fused form).

#[unsafe(no_mangle)]
pub extern "C" fn ggml_glu_split(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, op: GluOp) -> *mut Tensor {
    glu::glu_impl(context(ctx), tensor(a), opt_tensor(b), op, false).as_ptr()
}

/// Exports the `_split` GLU constructors `(ctx, a, b)`.
macro_rules! export_glu_split {
    ($($c_name:ident => $op:ident;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
                glu::glu_impl(context(ctx), tensor(a), opt_tensor(b), GluOp::$op, false).as_ptr()
            }
        )*
    };
}

export_glu_split! {
    ggml_reglu_split => REGLU;
    ggml_geglu_split => GEGLU;
    ggml_swiglu_split => SWIGLU;
    ggml_geglu_erf_split => GEGLU_ERF;
    ggml_geglu_quick_split => GEGLU_QUICK;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_swiglu_oai(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    alpha: f32,
    limit: f32,
) -> *mut Tensor {
    glu::swiglu_oai(context(ctx), tensor(a), opt_tensor(b), alpha, limit).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_swiglu_clamp(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, limit: f32) -> *mut Tensor {
    glu::swiglu_clamp(context(ctx), tensor(a), opt_tensor(b), limit).as_ptr()
}

// ---- normalisation ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rms_norm_back(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, eps: f32) -> *mut Tensor {
    norm::rms_norm_back(context(ctx), tensor(a), tensor(b), eps).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_group_norm(ctx: *mut Context, a: *mut Tensor, n_groups: c_int, eps: f32) -> *mut Tensor {
    norm::group_norm(context(ctx), tensor(a), n_groups, eps).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_group_norm_inplace(ctx: *mut Context, a: *mut Tensor, n_groups: c_int, eps: f32) -> *mut Tensor {
    norm::group_norm_inplace(context(ctx), tensor(a), n_groups, eps).as_ptr()
}

// ---- accessors ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_unary_op(t: *const Tensor) -> UnaryOp {
    unary::get_unary_op(&tensor(t))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_glu_op(t: *const Tensor) -> GluOp {
    glu::get_glu_op(&tensor(t))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_name(op: Op) -> *const c_char {
    static_c_str(op.name())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_symbol(op: Op) -> *const c_char {
    static_c_str(op.symbol())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_unary_op_name(op: UnaryOp) -> *const c_char {
    static_c_str(op.name())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_glu_op_name(op: GluOp) -> *const c_char {
    static_c_str(op.name())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_desc(t: *const Tensor) -> *const c_char {
    static_c_str(unary::op_desc(&tensor(t)))
}
