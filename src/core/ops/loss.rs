//! Training ops: the cross-entropy loss and its gradient, and the optimizer steps (AdamW,
//! SGD) that update a parameter tensor in place.

use super::set_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::{TensorPtr, flag};
use crate::core::types::Type;

/// Cross-entropy of logits `a` against labels `b` (same shape), summed into one value.
pub fn cross_entropy_loss(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.same_shape(&b), "logits {:?} and labels {:?}", a.ne, b.ne);
    let result = ctx.new_tensor(a.type_, &[1]);
    set_op(result, Op::CROSS_ENTROPY_LOSS, &[a, b]);
    result
}

/// The gradient of [`cross_entropy_loss`] with respect to the logits: `a` is the incoming
/// gradient of the loss (a scalar), `b` the logits, `c` the labels.
pub fn cross_entropy_loss_back(ctx: &mut Context, a: TensorPtr, b: TensorPtr, c: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.is_scalar());
    crate::ggml_assert!(b.same_shape(&c), "logits {:?} and labels {:?}", b.ne, c.ne);
    let result = ctx.dup_tensor(b);
    set_op(result, Op::CROSS_ENTROPY_LOSS_BACK, &[a, b, c]);
    result
}

/// One AdamW step on parameter `a` with gradient `grad` and moments `m`, `v`; the seven
/// hyper-parameters (alpha, beta1, beta2, eps, wd, beta1h, beta2h) are read from
/// `adamw_params`. The result is a view of `a`.
pub fn opt_step_adamw(
    ctx: &mut Context,
    a: TensorPtr,
    grad: TensorPtr,
    m: TensorPtr,
    v: TensorPtr,
    adamw_params: TensorPtr,
) -> TensorPtr {
    crate::ggml_assert!(a.flags & flag::PARAM != 0, "optimizer step on a tensor not marked as a parameter");
    crate::ggml_assert!(a.same_shape(&grad));
    crate::ggml_assert!(a.same_shape(&m));
    crate::ggml_assert!(a.same_shape(&v));
    crate::ggml_assert!(adamw_params.type_ == Type::F32);
    crate::ggml_assert!(adamw_params.nelements() == 7);
    let result = super::view_tensor(ctx, a);
    set_op(result, Op::OPT_STEP_ADAMW, &[a, grad, m, v, adamw_params]);
    result
}

/// One SGD step on parameter `a`; `params` holds alpha and the weight decay.
pub fn opt_step_sgd(ctx: &mut Context, a: TensorPtr, grad: TensorPtr, params: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.flags & flag::PARAM != 0, "optimizer step on a tensor not marked as a parameter");
    crate::ggml_assert!(a.same_shape(&grad));
    crate::ggml_assert!(params.type_ == Type::F32);
    crate::ggml_assert!(params.nelements() == 2);
    let result = super::view_tensor(ctx, a);
    set_op(result, Op::OPT_STEP_SGD, &[a, grad, params]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 16, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn loss_and_its_gradient() {
        let mut c = ctx();
        let logits = c.new_tensor(Type::F32, &[10, 4]);
        let labels = c.new_tensor(Type::F32, &[10, 4]);
        let loss = cross_entropy_loss(&mut c, logits, labels);
        assert_eq!(
            (loss.ne, loss.op, loss.src(0), loss.src(1)),
            ([1, 1, 1, 1], Op::CROSS_ENTROPY_LOSS, Some(logits), Some(labels))
        );
        let back = cross_entropy_loss_back(&mut c, loss, logits, labels);
        assert_eq!(back.ne, logits.ne);
        assert_eq!((back.src(0), back.src(1), back.src(2)), (Some(loss), Some(logits), Some(labels)));
    }

    #[test]
    fn optimizer_steps_view_the_parameter() {
        let mut c = ctx();
        let w = c.new_tensor(Type::F32, &[8, 2]);
        w.get_mut().flags |= flag::PARAM;
        let g = c.dup_tensor(w);
        let m = c.dup_tensor(w);
        let v = c.dup_tensor(w);
        let hp = c.new_tensor(Type::F32, &[7]);
        let step = opt_step_adamw(&mut c, w, g, m, v, hp);
        assert_eq!((step.op, step.view_source(), step.src(4)), (Op::OPT_STEP_ADAMW, Some(w), Some(hp)));
        let sp = c.new_tensor(Type::F32, &[2]);
        let step = opt_step_sgd(&mut c, w, g, sp);
        assert_eq!((step.op, step.src(0), step.src(1), step.src(2)), (Op::OPT_STEP_SGD, Some(w), Some(g), Some(sp)));
    }
}
