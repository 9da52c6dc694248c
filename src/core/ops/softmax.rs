//! Softmax over rows, with the optional mask, scale, ALiBi bias and attention sinks of
//! `soft_max_ext`; its gradient; and the causal masks (`diag_mask_inf`, `diag_mask_zero`)
//! that older attention graphs apply before it.

use super::view_or_dup;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

fn diag_mask_impl(ctx: &mut Context, a: TensorPtr, n_past: i32, op: Op, inplace: bool) -> TensorPtr {
    let result = view_or_dup(ctx, a, inplace);
    let r = result.get_mut();
    r.set_op_params_i32(&[n_past]);
    r.op = op;
    r.src[0] = a.as_ptr();
    result
}

/// Sets the elements above the diagonal (shifted right by `n_past`) to -inf.
pub fn diag_mask_inf_impl(ctx: &mut Context, a: TensorPtr, n_past: i32, inplace: bool) -> TensorPtr {
    diag_mask_impl(ctx, a, n_past, Op::DIAG_MASK_INF, inplace)
}

pub fn diag_mask_inf(ctx: &mut Context, a: TensorPtr, n_past: i32) -> TensorPtr {
    diag_mask_inf_impl(ctx, a, n_past, false)
}

pub fn diag_mask_inf_inplace(ctx: &mut Context, a: TensorPtr, n_past: i32) -> TensorPtr {
    diag_mask_inf_impl(ctx, a, n_past, true)
}

/// Sets the elements above the diagonal (shifted right by `n_past`) to zero.
pub fn diag_mask_zero_impl(ctx: &mut Context, a: TensorPtr, n_past: i32, inplace: bool) -> TensorPtr {
    diag_mask_impl(ctx, a, n_past, Op::DIAG_MASK_ZERO, inplace)
}

pub fn diag_mask_zero(ctx: &mut Context, a: TensorPtr, n_past: i32) -> TensorPtr {
    diag_mask_zero_impl(ctx, a, n_past, false)
}

pub fn diag_mask_zero_inplace(ctx: &mut Context, a: TensorPtr, n_past: i32) -> TensorPtr {
    diag_mask_zero_impl(ctx, a, n_past, true)
}

/// `softmax(a * scale + mask)` over rows, with an ALiBi slope per head when `max_bias > 0`
/// (which needs a mask). The mask is F16 or F32, `[a.ne0, >= a.ne1, ne2', ne3']` with
/// `ne2'` and `ne3'` dividing `a`'s (it is broadcast).
pub fn soft_max_impl(
    ctx: &mut Context,
    a: TensorPtr,
    mask: Option<TensorPtr>,
    scale: f32,
    max_bias: f32,
    inplace: bool,
) -> TensorPtr {
    crate::ggml_assert!(a.is_contiguous(), "soft_max: input must be contiguous");
    if let Some(mask) = mask {
        crate::ggml_assert!(
            mask.type_ == Type::F16 || mask.type_ == Type::F32,
            "soft_max: mask must be F16 or F32, not {}",
            mask.type_.name()
        );
        crate::ggml_assert!(mask.is_contiguous(), "soft_max: mask must be contiguous");
        crate::ggml_assert!(
            mask.ne[0] == a.ne[0],
            "soft_max: mask rows have {} elements, input rows {}",
            mask.ne[0],
            a.ne[0]
        );
        crate::ggml_assert!(mask.ne[1] >= a.ne[1], "soft_max: mask has {} rows, input {}", mask.ne[1], a.ne[1]);
        crate::ggml_assert!(a.ne[2] % mask.ne[2] == 0, "soft_max: mask cannot broadcast over dimension 2");
        crate::ggml_assert!(a.ne[3] % mask.ne[3] == 0, "soft_max: mask cannot broadcast over dimension 3");
    }
    if max_bias > 0.0 {
        crate::ggml_assert!(mask.is_some(), "soft_max: ALiBi (max_bias > 0) needs a mask");
    }

    let result = view_or_dup(ctx, a, inplace);
    let r = result.get_mut();
    r.set_op_param_f32(0, scale);
    r.set_op_param_f32(1, max_bias);
    r.op = Op::SOFT_MAX;
    r.src[0] = a.as_ptr();
    r.src[1] = mask.map_or(std::ptr::null_mut(), TensorPtr::as_ptr);
    result
}

pub fn soft_max(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    soft_max_impl(ctx, a, None, 1.0, 0.0, false)
}

pub fn soft_max_inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    soft_max_impl(ctx, a, None, 1.0, 0.0, true)
}

pub fn soft_max_ext(ctx: &mut Context, a: TensorPtr, mask: Option<TensorPtr>, scale: f32, max_bias: f32) -> TensorPtr {
    soft_max_impl(ctx, a, mask, scale, max_bias, false)
}

pub fn soft_max_ext_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    mask: Option<TensorPtr>,
    scale: f32,
    max_bias: f32,
) -> TensorPtr {
    soft_max_impl(ctx, a, mask, scale, max_bias, true)
}

/// Adds per-head attention sinks (F32, one per `src[0].ne2`) to a SOFT_MAX node, in `src[2]`.
/// `None` removes them, whatever the node is.
pub fn soft_max_add_sinks(a: TensorPtr, sinks: Option<TensorPtr>) {
    let Some(sinks) = sinks else {
        a.get_mut().src[2] = std::ptr::null_mut();
        return;
    };
    crate::ggml_assert!(a.op == Op::SOFT_MAX, "soft_max_add_sinks: tensor is a {}, not a SOFT_MAX", a.op.name());
    crate::ggml_assert!(a.src(2).is_none(), "soft_max_add_sinks: the node already has sinks");
    let heads = a.src(0).map_or(0, |s| s.ne[2]);
    crate::ggml_assert!(heads == sinks.ne[0], "soft_max_add_sinks: {} sinks for {} heads", sinks.ne[0], heads);
    crate::ggml_assert!(sinks.type_ == Type::F32, "soft_max_add_sinks: sinks must be F32, not {}", sinks.type_.name());
    a.get_mut().src[2] = sinks.as_ptr();
}

/// Gradient of `soft_max_ext`: `a` is the gradient of its output, `b` the output itself.
pub fn soft_max_ext_back_impl(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    scale: f32,
    max_bias: f32,
    inplace: bool,
) -> TensorPtr {
    let result = view_or_dup(ctx, a, inplace);
    let r = result.get_mut();
    r.op = Op::SOFT_MAX_BACK;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    r.set_op_param_f32(0, scale);
    r.set_op_param_f32(1, max_bias);
    result
}

pub fn soft_max_ext_back(ctx: &mut Context, a: TensorPtr, b: TensorPtr, scale: f32, max_bias: f32) -> TensorPtr {
    soft_max_ext_back_impl(ctx, a, b, scale, max_bias, false)
}

pub fn soft_max_ext_back_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    scale: f32,
    max_bias: f32,
) -> TensorPtr {
    soft_max_ext_back_impl(ctx, a, b, scale, max_bias, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false })
    }

    #[test]
    fn diag_masks_store_n_past() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[6, 4]);
        a.get_mut().set_name("kq");
        let r = diag_mask_inf(&mut c, a, 2);
        assert_eq!((r.op, r.op_params[0], r.src(0)), (Op::DIAG_MASK_INF, 2, Some(a)));
        assert!(!r.is_view());
        assert_eq!(r.name(), "");
        let r = diag_mask_zero_inplace(&mut c, a, 3);
        assert_eq!((r.op, r.op_params[0]), (Op::DIAG_MASK_ZERO, 3));
        assert_eq!((r.view_source(), r.name()), (Some(a), "kq (view)"));
    }

    #[test]
    fn soft_max_ext_params_and_sources() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[32, 4, 8]);
        let mask = c.new_tensor(Type::F16, &[32, 4]);
        let r = soft_max_ext(&mut c, a, Some(mask), 0.125, 8.0);
        assert_eq!(r.op, Op::SOFT_MAX);
        assert_eq!((r.op_param_f32(0), r.op_param_f32(1)), (0.125, 8.0));
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(a), Some(mask), None));
        assert_eq!((r.type_, r.ne), (Type::F32, a.ne));

        let sinks = c.new_tensor(Type::F32, &[8]);
        soft_max_add_sinks(r, Some(sinks));
        assert_eq!(r.src(2), Some(sinks));
        soft_max_add_sinks(r, None);
        assert_eq!(r.src(2), None);

        let r = soft_max_inplace(&mut c, a);
        assert_eq!((r.op_param_f32(0), r.op_param_f32(1)), (1.0, 0.0));
        assert_eq!((r.view_source(), r.src(1)), (Some(a), None));
    }

    #[test]
    fn soft_max_back_sources() {
        let mut c = ctx();
        let dy = c.new_tensor(Type::F32, &[10, 3]);
        let y = c.new_tensor(Type::F32, &[10, 3]);
        let r = soft_max_ext_back(&mut c, dy, y, 0.5, 0.0);
        assert_eq!((r.op, r.src(0), r.src(1)), (Op::SOFT_MAX_BACK, Some(dy), Some(y)));
        assert_eq!(&r.op_params[..3], &[0.5f32.to_bits() as i32, 0, 0]);
        let r = soft_max_ext_back_inplace(&mut c, dy, y, 0.5, 0.0);
        assert_eq!(r.view_source(), Some(dy));
    }
}
