//! Normalisations along rows (`norm`, `rms_norm`, `l2_norm`), over channel groups
//! (`group_norm`), and the gradient of RMS normalisation. `eps` is stored as the `f32` op
//! param 0, except for `group_norm` where op param 0 is the group count and `eps` follows.

use super::view_or_dup;
use super::with_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;

/// A row normalisation whose only parameter is `eps`.
fn eps_norm(ctx: &mut Context, a: TensorPtr, op: Op, eps: f32, inplace: bool) -> TensorPtr {
    let result = view_or_dup(ctx, a, inplace);
    result.get_mut().set_op_param_f32(0, eps);
    with_op(result, op, &[a])
}

/// Each row shifted to zero mean and scaled to unit variance.
pub fn norm_impl(ctx: &mut Context, a: TensorPtr, eps: f32, inplace: bool) -> TensorPtr {
    eps_norm(ctx, a, Op::NORM, eps, inplace)
}

pub fn norm(ctx: &mut Context, a: TensorPtr, eps: f32) -> TensorPtr {
    norm_impl(ctx, a, eps, false)
}

pub fn norm_inplace(ctx: &mut Context, a: TensorPtr, eps: f32) -> TensorPtr {
    norm_impl(ctx, a, eps, true)
}

/// Each row divided by its root mean square.
pub fn rms_norm_impl(ctx: &mut Context, a: TensorPtr, eps: f32, inplace: bool) -> TensorPtr {
    eps_norm(ctx, a, Op::RMS_NORM, eps, inplace)
}

pub fn rms_norm(ctx: &mut Context, a: TensorPtr, eps: f32) -> TensorPtr {
    rms_norm_impl(ctx, a, eps, false)
}

pub fn rms_norm_inplace(ctx: &mut Context, a: TensorPtr, eps: f32) -> TensorPtr {
    rms_norm_impl(ctx, a, eps, true)
}

/// The gradient of [`rms_norm`]: `a` is the forward input, `b` the incoming gradient.
pub fn rms_norm_back(ctx: &mut Context, a: TensorPtr, b: TensorPtr, eps: f32) -> TensorPtr {
    let result = ctx.dup_tensor(a);
    result.get_mut().set_op_param_f32(0, eps);
    with_op(result, Op::RMS_NORM_BACK, &[a, b])
}

/// Normalisation over `n_groups` groups of channels (dimension 2); op params are the group
/// count as `i32`, then `eps` as `f32`.
pub fn group_norm_impl(ctx: &mut Context, a: TensorPtr, n_groups: i32, eps: f32, inplace: bool) -> TensorPtr {
    let result = view_or_dup(ctx, a, inplace);
    let t = result.get_mut();
    t.set_op_param_i32(0, n_groups);
    t.set_op_param_f32(1, eps);
    with_op(result, Op::GROUP_NORM, &[a])
}

pub fn group_norm(ctx: &mut Context, a: TensorPtr, n_groups: i32, eps: f32) -> TensorPtr {
    group_norm_impl(ctx, a, n_groups, eps, false)
}

pub fn group_norm_inplace(ctx: &mut Context, a: TensorPtr, n_groups: i32, eps: f32) -> TensorPtr {
    group_norm_impl(ctx, a, n_groups, eps, true)
}

/// Each row divided by its Euclidean length.
pub fn l2_norm_impl(ctx: &mut Context, a: TensorPtr, eps: f32, inplace: bool) -> TensorPtr {
    eps_norm(ctx, a, Op::L2_NORM, eps, inplace)
}

pub fn l2_norm(ctx: &mut Context, a: TensorPtr, eps: f32) -> TensorPtr {
    l2_norm_impl(ctx, a, eps, false)
}

pub fn l2_norm_inplace(ctx: &mut Context, a: TensorPtr, eps: f32) -> TensorPtr {
    l2_norm_impl(ctx, a, eps, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;
    use crate::core::types::Type;

    #[test]
    fn norms_store_eps() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[16, 3]);
        a.get_mut().set_name("x");
        let r = rms_norm(&mut c, a, 1e-5);
        assert_eq!((r.op, r.ne, r.op_param_f32(0), r.src(0)), (Op::RMS_NORM, a.ne, 1e-5, Some(a)));
        assert!(!r.is_view());
        let r = norm_inplace(&mut c, a, 1e-6);
        assert_eq!((r.op, r.op_param_f32(0)), (Op::NORM, 1e-6));
        assert_eq!(r.name(), "x (view)");
        let r = l2_norm(&mut c, a, 1e-12);
        assert_eq!((r.op, r.op_param_f32(0)), (Op::L2_NORM, 1e-12));
    }

    #[test]
    fn group_norm_and_rms_norm_back() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 4, 32]);
        let r = group_norm(&mut c, a, 8, 1e-6);
        assert_eq!((r.op, r.op_params[0], r.op_param_f32(1)), (Op::GROUP_NORM, 8, 1e-6));
        let g = c.new_tensor(Type::F32, &[4, 4, 32]);
        let r = rms_norm_back(&mut c, a, g, 1e-5);
        assert_eq!((r.op, r.src(0), r.src(1), r.op_param_f32(0)), (Op::RMS_NORM_BACK, Some(a), Some(g), 1e-5));
    }
}
