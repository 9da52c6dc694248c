//! Gated linear units: `act(x) * g`. Either `a` holds both halves along its rows (the result
//! has half its row length; `swapped` says the gate comes first), or the halves come as two
//! tensors of one shape (`_split`). Op params: the `enum ggml_glu_op`, the swapped flag, and
//! for SWIGLU_OAI / SWIGLU_CLAMP the `f32` constants in slots 2 and 3.

use super::with_op;
use crate::core::context::Context;
use crate::core::op::{GluOp, Op};
use crate::core::tensor::{Tensor, TensorPtr};

/// The GLU node all the others build: `b` is the separate gate, or `None` when `a` holds both
/// halves.
pub fn glu_impl(ctx: &mut Context, a: TensorPtr, b: Option<TensorPtr>, op: GluOp, swapped: bool) -> TensorPtr {
    crate::ggml_assert!(a.is_contiguous_n(1), "glu {}: a's rows must be packed", op.name());
    let ne = match b {
        Some(b) => {
            crate::ggml_assert!(b.is_contiguous_n(1), "glu {}: b's rows must be packed", op.name());
            crate::ggml_assert!(a.same_shape(&b), "glu {}: a {:?} and b {:?} differ in shape", op.name(), a.ne, b.ne);
            crate::ggml_assert!(a.type_ == b.type_, "glu {}: a and b differ in type", op.name());
            a.ne
        }
        None => [a.ne[0] / 2, a.ne[1], a.ne[2], a.ne[3]],
    };
    let result = ctx.new_tensor(a.type_, &ne);
    let t = result.get_mut();
    t.set_op_param_i32(0, op.0);
    t.set_op_param_i32(1, i32::from(swapped));
    match b {
        Some(b) => with_op(result, Op::GLU, &[a, b]),
        None => with_op(result, Op::GLU, &[a]),
    }
}

pub fn glu(ctx: &mut Context, a: TensorPtr, op: GluOp, swapped: bool) -> TensorPtr {
    glu_impl(ctx, a, None, op, swapped)
}

pub fn glu_split(ctx: &mut Context, a: TensorPtr, b: TensorPtr, op: GluOp) -> TensorPtr {
    glu_impl(ctx, a, Some(b), op, false)
}

/// Defines the fused, swapped and split shorthands of one GLU function.
macro_rules! glu_shorthands {
    ($($name:ident, $swapped:ident, $split:ident => $op:ident;)*) => {
        $(
            pub fn $name(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
                glu_impl(ctx, a, None, GluOp::$op, false)
            }

            pub fn $swapped(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
                glu_impl(ctx, a, None, GluOp::$op, true)
            }

            pub fn $split(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
                glu_impl(ctx, a, Some(b), GluOp::$op, false)
            }
        )*
    };
}

glu_shorthands! {
    reglu, reglu_swapped, reglu_split => REGLU;
    geglu, geglu_swapped, geglu_split => GEGLU;
    swiglu, swiglu_swapped, swiglu_split => SWIGLU;
    geglu_erf, geglu_erf_swapped, geglu_erf_split => GEGLU_ERF;
    geglu_quick, geglu_quick_swapped, geglu_quick_split => GEGLU_QUICK;
}

/// SwiGLU as gpt-oss uses it: `alpha` (op param 2) and `limit` (op param 3).
pub fn swiglu_oai(ctx: &mut Context, a: TensorPtr, b: Option<TensorPtr>, alpha: f32, limit: f32) -> TensorPtr {
    let result = glu_impl(ctx, a, b, GluOp::SWIGLU_OAI, false);
    let t = result.get_mut();
    t.set_op_param_f32(2, alpha);
    t.set_op_param_f32(3, limit);
    result
}

/// SwiGLU with both halves clamped to `limit` (op param 3).
pub fn swiglu_clamp(ctx: &mut Context, a: TensorPtr, b: Option<TensorPtr>, limit: f32) -> TensorPtr {
    let result = glu_impl(ctx, a, b, GluOp::SWIGLU_CLAMP, false);
    result.get_mut().set_op_param_f32(3, limit);
    result
}

/// The function of a GLU node.
pub fn get_glu_op(t: &Tensor) -> GluOp {
    crate::ggml_assert!(t.op == Op::GLU, "not a GLU node but {}", t.op.name());
    GluOp(t.op_param_i32(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;
    use crate::core::ops::unary::op_desc;
    use crate::core::types::Type;

    #[test]
    fn fused_glu_halves_the_rows() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[10, 3, 2]);
        let r = swiglu_swapped(&mut c, a);
        assert_eq!((r.op, r.ne, r.type_), (Op::GLU, [5, 3, 2, 1], Type::F32));
        assert_eq!(&r.op_params[..3], &[GluOp::SWIGLU.0, 1, 0]);
        assert_eq!((r.src(0), r.src(1)), (Some(a), None));
        assert_eq!(get_glu_op(&r), GluOp::SWIGLU);
        assert_eq!(op_desc(&r), "SWIGLU");
        let r = glu(&mut c, a, GluOp::GEGLU_QUICK, false);
        assert_eq!(&r.op_params[..2], &[GluOp::GEGLU_QUICK.0, 0]);
    }

    #[test]
    fn split_glu_keeps_the_shape() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[8, 4]);
        let b = c.new_tensor(Type::F16, &[8, 4]);
        let r = geglu_split(&mut c, a, b);
        assert_eq!((r.ne, r.type_), ([8, 4, 1, 1], Type::F16));
        assert_eq!((r.src(0), r.src(1)), (Some(a), Some(b)));
        assert_eq!(&r.op_params[..2], &[GluOp::GEGLU.0, 0]);

        let r = swiglu_oai(&mut c, a, Some(b), 1.702, 7.0);
        assert_eq!(get_glu_op(&r), GluOp::SWIGLU_OAI);
        assert_eq!((r.op_param_f32(2), r.op_param_f32(3)), (1.702, 7.0));
        let r = swiglu_clamp(&mut c, a, None, 3.0);
        assert_eq!((r.ne[0], r.op_param_f32(3), r.op_params[2]), (4, 3.0, 0));
    }
}
