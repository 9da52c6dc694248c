//! Activations and other functions applied to each element on its own: UNARY nodes (the
//! function is `enum ggml_unary_op` in op param 0), plus the ops with their own `ggml_op`
//! (`leaky_relu`, `silu_back`), and the names graph dumps print for a node.

use super::view_or_dup;
use super::with_op;
use crate::core::context::Context;
use crate::core::op::{Op, UnaryOp};
use crate::core::tensor::{Tensor, TensorPtr};

/// `op` applied to each element of `a`; the result is a view of `a` when `inplace`.
pub fn unary_impl(ctx: &mut Context, a: TensorPtr, op: UnaryOp, inplace: bool) -> TensorPtr {
    crate::ggml_assert!(a.is_contiguous_rows(), "unary {}: a's elements must be packed in rows", op.name());
    let result = view_or_dup(ctx, a, inplace);
    result.get_mut().set_op_param_i32(0, op.0);
    with_op(result, Op::UNARY, &[a])
}

pub fn unary(ctx: &mut Context, a: TensorPtr, op: UnaryOp) -> TensorPtr {
    unary_impl(ctx, a, op, false)
}

pub fn unary_inplace(ctx: &mut Context, a: TensorPtr, op: UnaryOp) -> TensorPtr {
    unary_impl(ctx, a, op, true)
}

/// Defines the named shorthands for [`unary`] and [`unary_inplace`].
macro_rules! unary_shorthands {
    ($($name:ident $(, $inplace:ident)? => $op:ident;)*) => {
        $(
            pub fn $name(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
                unary(ctx, a, UnaryOp::$op)
            }
            $(
                pub fn $inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
                    unary_inplace(ctx, a, UnaryOp::$op)
                }
            )?
        )*
    };
}

unary_shorthands! {
    abs, abs_inplace => ABS;
    sgn, sgn_inplace => SGN;
    neg, neg_inplace => NEG;
    step, step_inplace => STEP;
    tanh, tanh_inplace => TANH;
    elu, elu_inplace => ELU;
    relu, relu_inplace => RELU;
    sigmoid, sigmoid_inplace => SIGMOID;
    gelu, gelu_inplace => GELU;
    gelu_erf, gelu_erf_inplace => GELU_ERF;
    gelu_quick, gelu_quick_inplace => GELU_QUICK;
    silu, silu_inplace => SILU;
    exp, exp_inplace => EXP;
    expm1, expm1_inplace => EXPM1;
    softplus, softplus_inplace => SOFTPLUS;
    floor, floor_inplace => FLOOR;
    ceil, ceil_inplace => CEIL;
    round, round_inplace => ROUND;
    trunc, trunc_inplace => TRUNC;
    // The C API has no in-place forms of these two.
    hardswish => HARDSWISH;
    hardsigmoid => HARDSIGMOID;
}

/// `max(x, 0) + negative_slope * min(x, 0)`: its own op, LEAKY_RELU, with the slope as `f32`
/// op param 0.
pub fn leaky_relu(ctx: &mut Context, a: TensorPtr, negative_slope: f32, inplace: bool) -> TensorPtr {
    let result = view_or_dup(ctx, a, inplace);
    result.get_mut().set_op_param_f32(0, negative_slope);
    with_op(result, Op::LEAKY_RELU, &[a])
}

/// The gradient of SiLU: `a` is the forward input, `b` the incoming gradient.
pub fn silu_back(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    let result = ctx.dup_tensor(a);
    with_op(result, Op::SILU_BACK, &[a, b])
}

/// `softplus(x) = ln(1 + e^x)`, taken as `x` itself above 20 where the two agree in `f32`.
fn softplus_f32(x: f32) -> f32 {
    if x > 20.0 { x } else { (1.0 + x.exp()).ln() }
}

/// xIELU. The backend reads its constants precomputed: op params are the unary op, then
/// `beta + softplus(alpha_n)`, `softplus(alpha_p)`, `beta` and `eps` as `f32`s.
pub fn xielu(ctx: &mut Context, a: TensorPtr, alpha_n: f32, alpha_p: f32, beta: f32, eps: f32) -> TensorPtr {
    let result = ctx.dup_tensor(a);
    let t = result.get_mut();
    t.set_op_param_i32(0, UnaryOp::XIELU.0);
    t.set_op_param_f32(1, beta + softplus_f32(alpha_n));
    t.set_op_param_f32(2, softplus_f32(alpha_p));
    t.set_op_param_f32(3, beta);
    t.set_op_param_f32(4, eps);
    with_op(result, Op::UNARY, &[a])
}

/// The function of a UNARY node.
pub fn get_unary_op(t: &Tensor) -> UnaryOp {
    crate::ggml_assert!(t.op == Op::UNARY, "not a UNARY node but {}", t.op.name());
    UnaryOp(t.op_param_i32(0))
}

/// What a graph dump calls a node: the unary or GLU function for UNARY and GLU nodes, else the
/// op's name.
pub fn op_desc(t: &Tensor) -> &'static str {
    match t.op {
        Op::UNARY => get_unary_op(t).name(),
        Op::GLU => super::glu::get_glu_op(t).name(),
        op => op.name(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;
    use crate::core::types::Type;

    #[test]
    fn unary_records_its_function() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[5, 2]);
        a.get_mut().set_name("h");
        let r = gelu(&mut c, a);
        assert_eq!((r.op, r.op_params[0], r.src(0)), (Op::UNARY, UnaryOp::GELU.0, Some(a)));
        assert!(!r.is_view());
        assert_eq!(get_unary_op(&r), UnaryOp::GELU);
        assert_eq!(op_desc(&r), "GELU");
        let r = trunc_inplace(&mut c, a);
        assert_eq!(r.name(), "h (view)");
        assert_eq!(get_unary_op(&r), UnaryOp::TRUNC);
        assert_eq!(hardswish(&mut c, a).op_params[0], UnaryOp::HARDSWISH.0);
    }

    #[test]
    fn leaky_relu_silu_back_and_xielu() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[5]);
        let g = c.new_tensor(Type::F32, &[5]);
        let r = leaky_relu(&mut c, a, 0.1, true);
        assert_eq!((r.op, r.op_param_f32(0)), (Op::LEAKY_RELU, 0.1));
        assert!(r.is_view());
        assert_eq!(op_desc(&r), "LEAKY_RELU");
        let r = silu_back(&mut c, a, g);
        assert_eq!((r.op, r.src(0), r.src(1)), (Op::SILU_BACK, Some(a), Some(g)));
        let r = xielu(&mut c, a, 0.8, 0.8, 0.5, 1e-6);
        assert_eq!(get_unary_op(&r), UnaryOp::XIELU);
        let sp = (1.0f32 + 0.8f32.exp()).ln();
        assert_eq!(r.op_param_f32(1), 0.5 + sp);
        assert_eq!(r.op_param_f32(2), sp);
        assert_eq!((r.op_param_f32(3), r.op_param_f32(4)), (0.5, 1e-6));
        assert_eq!(softplus_f32(30.0), 30.0);
    }
}
