//! Element-by-element ops: copies, the four arithmetic operators with broadcasting of the
//! second operand, scalar addition, accumulation into a strided window, the simple math
//! functions (`sqr`, `sqrt`, `log`, `sin`, `cos`), and the affine maps `scale`, `clamp`,
//! `fill` and `tri`.
//!
//! Every op whose result has `a`'s type and shape can run in place: the result is then a view
//! of `a` named "<a's name> (view)" and a backend writes through it into `a`'s memory.

use super::{view_or_dup, with_op};
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// An op of one operand whose result is shaped like it.
fn same_shape_op(ctx: &mut Context, a: TensorPtr, op: Op, inplace: bool) -> TensorPtr {
    let result = view_or_dup(ctx, a, inplace);
    with_op(result, op, &[a])
}

/// `a op b`, with `b` repeated along every dimension to cover `a`.
fn broadcast_op(ctx: &mut Context, a: TensorPtr, b: TensorPtr, op: Op, inplace: bool) -> TensorPtr {
    crate::ggml_assert!(b.can_repeat_to(&a), "{}: {:?} cannot be broadcast to {:?}", op.name(), b.ne, a.ne);
    let result = view_or_dup(ctx, a, inplace);
    with_op(result, op, &[a, b])
}

// ---- dup ----

pub fn dup_impl(ctx: &mut Context, a: TensorPtr, inplace: bool) -> TensorPtr {
    same_shape_op(ctx, a, Op::DUP, inplace)
}

pub fn dup(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    dup_impl(ctx, a, false)
}

pub fn dup_inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    dup_impl(ctx, a, true)
}

// ---- add, sub, mul, div ----

pub fn add_impl(ctx: &mut Context, a: TensorPtr, b: TensorPtr, inplace: bool) -> TensorPtr {
    broadcast_op(ctx, a, b, Op::ADD, inplace)
}

pub fn add(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    add_impl(ctx, a, b, false)
}

pub fn add_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    add_impl(ctx, a, b, true)
}

pub fn sub_impl(ctx: &mut Context, a: TensorPtr, b: TensorPtr, inplace: bool) -> TensorPtr {
    broadcast_op(ctx, a, b, Op::SUB, inplace)
}

pub fn sub(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    sub_impl(ctx, a, b, false)
}

pub fn sub_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    sub_impl(ctx, a, b, true)
}

pub fn mul_impl(ctx: &mut Context, a: TensorPtr, b: TensorPtr, inplace: bool) -> TensorPtr {
    broadcast_op(ctx, a, b, Op::MUL, inplace)
}

pub fn mul(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    mul_impl(ctx, a, b, false)
}

pub fn mul_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    mul_impl(ctx, a, b, true)
}

pub fn div_impl(ctx: &mut Context, a: TensorPtr, b: TensorPtr, inplace: bool) -> TensorPtr {
    broadcast_op(ctx, a, b, Op::DIV, inplace)
}

pub fn div(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    div_impl(ctx, a, b, false)
}

pub fn div_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    div_impl(ctx, a, b, true)
}

/// `a + b` computed into a new tensor of type `type_` (an ADD node whose result type differs
/// from `a`'s). Only quantized, F16 and BF16 `a` are supported, and `b` broadcasts by rows.
pub fn add_cast(ctx: &mut Context, a: TensorPtr, b: TensorPtr, type_: Type) -> TensorPtr {
    crate::ggml_assert!(b.can_repeat_rows_to(&a), "add_cast: rows of {:?} cannot be broadcast to {:?}", b.ne, a.ne);
    crate::ggml_assert!(
        a.type_.is_quantized() || a.type_ == Type::F16 || a.type_ == Type::BF16,
        "add_cast: a must be quantized, f16 or bf16, not {}",
        a.type_.name()
    );
    let result = ctx.new_tensor(type_, &a.ne);
    with_op(result, Op::ADD, &[a, b])
}

/// `a[:, i, j] + b[:, ids[i, j]]`: adds to each row of `a` the row of `b` that `ids` selects.
pub fn add_id(ctx: &mut Context, a: TensorPtr, b: TensorPtr, ids: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] == b.ne[0], "add_id: row lengths differ ({} vs {})", a.ne[0], b.ne[0]);
    crate::ggml_assert!(a.ne[1] == ids.ne[0], "add_id: a.ne[1] = {} but ids.ne[0] = {}", a.ne[1], ids.ne[0]);
    crate::ggml_assert!(a.ne[2] == ids.ne[1], "add_id: a.ne[2] = {} but ids.ne[1] = {}", a.ne[2], ids.ne[1]);
    crate::ggml_assert!(ids.type_ == Type::I32, "add_id: ids must be i32, not {}", ids.type_.name());
    let result = ctx.dup_tensor(a);
    with_op(result, Op::ADD_ID, &[a, b, ids])
}

// ---- add1, acc ----

/// `a + b` for a scalar `b`.
pub fn add1_impl(ctx: &mut Context, a: TensorPtr, b: TensorPtr, inplace: bool) -> TensorPtr {
    crate::ggml_assert!(b.is_scalar(), "add1: b must be a scalar, not {:?}", b.ne);
    crate::ggml_assert!(a.is_padded_1d(), "add1: a's rows must be packed");
    let result = view_or_dup(ctx, a, inplace);
    with_op(result, Op::ADD1, &[a, b])
}

pub fn add1(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    add1_impl(ctx, a, b, false)
}

pub fn add1_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    add1_impl(ctx, a, b, true)
}

/// `a` with `b` added into the window of `a` that starts `offset` bytes in and has strides
/// `nb1..nb3`. The op params hold the strides, the offset and the in-place flag as `i32`s.
#[allow(clippy::too_many_arguments)]
pub fn acc_impl(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
    inplace: bool,
) -> TensorPtr {
    crate::ggml_assert!(
        b.nelements() <= a.nelements(),
        "acc: b has more elements ({}) than a ({})",
        b.nelements(),
        a.nelements()
    );
    crate::ggml_assert!(a.is_contiguous(), "acc: a must be contiguous");
    crate::ggml_assert!(a.type_ == Type::F32, "acc: a must be f32, not {}", a.type_.name());
    crate::ggml_assert!(b.type_ == Type::F32, "acc: b must be f32, not {}", b.type_.name());
    let result = view_or_dup(ctx, a, inplace);
    // The reference stores these byte counts as 32-bit integers; keep its truncation.
    result.get_mut().set_op_params_i32(&[nb1 as i32, nb2 as i32, nb3 as i32, offset as i32, i32::from(inplace)]);
    with_op(result, Op::ACC, &[a, b])
}

pub fn acc(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> TensorPtr {
    acc_impl(ctx, a, b, nb1, nb2, nb3, offset, false)
}

pub fn acc_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> TensorPtr {
    acc_impl(ctx, a, b, nb1, nb2, nb3, offset, true)
}

// ---- sqr, sqrt, log, sin, cos ----

pub fn sqr_impl(ctx: &mut Context, a: TensorPtr, inplace: bool) -> TensorPtr {
    same_shape_op(ctx, a, Op::SQR, inplace)
}

pub fn sqr(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    sqr_impl(ctx, a, false)
}

pub fn sqr_inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    sqr_impl(ctx, a, true)
}

pub fn sqrt_impl(ctx: &mut Context, a: TensorPtr, inplace: bool) -> TensorPtr {
    same_shape_op(ctx, a, Op::SQRT, inplace)
}

pub fn sqrt(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    sqrt_impl(ctx, a, false)
}

pub fn sqrt_inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    sqrt_impl(ctx, a, true)
}

pub fn log_impl(ctx: &mut Context, a: TensorPtr, inplace: bool) -> TensorPtr {
    same_shape_op(ctx, a, Op::LOG, inplace)
}

pub fn log(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    log_impl(ctx, a, false)
}

pub fn log_inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    log_impl(ctx, a, true)
}

pub fn sin_impl(ctx: &mut Context, a: TensorPtr, inplace: bool) -> TensorPtr {
    same_shape_op(ctx, a, Op::SIN, inplace)
}

pub fn sin(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    sin_impl(ctx, a, false)
}

pub fn sin_inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    sin_impl(ctx, a, true)
}

pub fn cos_impl(ctx: &mut Context, a: TensorPtr, inplace: bool) -> TensorPtr {
    same_shape_op(ctx, a, Op::COS, inplace)
}

pub fn cos(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    cos_impl(ctx, a, false)
}

pub fn cos_inplace(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    cos_impl(ctx, a, true)
}

// ---- scale, clamp, fill, tri ----

/// `s * a + b`; op params are the two `f32`s `[s, b]`.
pub fn scale_impl(ctx: &mut Context, a: TensorPtr, s: f32, b: f32, inplace: bool) -> TensorPtr {
    crate::ggml_assert!(a.is_padded_1d(), "scale: a's rows must be packed");
    let result = view_or_dup(ctx, a, inplace);
    let t = result.get_mut();
    t.set_op_param_f32(0, s);
    t.set_op_param_f32(1, b);
    with_op(result, Op::SCALE, &[a])
}

pub fn scale(ctx: &mut Context, a: TensorPtr, s: f32) -> TensorPtr {
    scale_impl(ctx, a, s, 0.0, false)
}

pub fn scale_inplace(ctx: &mut Context, a: TensorPtr, s: f32) -> TensorPtr {
    scale_impl(ctx, a, s, 0.0, true)
}

pub fn scale_bias(ctx: &mut Context, a: TensorPtr, s: f32, b: f32) -> TensorPtr {
    scale_impl(ctx, a, s, b, false)
}

pub fn scale_bias_inplace(ctx: &mut Context, a: TensorPtr, s: f32, b: f32) -> TensorPtr {
    scale_impl(ctx, a, s, b, true)
}

/// `a` clamped to `[min, max]`; op params are the two `f32`s `[min, max]`.
pub fn clamp_impl(ctx: &mut Context, a: TensorPtr, min: f32, max: f32, inplace: bool) -> TensorPtr {
    let result = view_or_dup(ctx, a, inplace);
    let t = result.get_mut();
    t.set_op_param_f32(0, min);
    t.set_op_param_f32(1, max);
    with_op(result, Op::CLAMP, &[a])
}

pub fn clamp(ctx: &mut Context, a: TensorPtr, min: f32, max: f32) -> TensorPtr {
    clamp_impl(ctx, a, min, max, false)
}

pub fn clamp_inplace(ctx: &mut Context, a: TensorPtr, min: f32, max: f32) -> TensorPtr {
    clamp_impl(ctx, a, min, max, true)
}

/// A tensor shaped like `a` with every element `c` (op param 0, as `f32`).
pub fn fill_impl(ctx: &mut Context, a: TensorPtr, c: f32, inplace: bool) -> TensorPtr {
    crate::ggml_assert!(
        a.type_ == Type::F32 || a.type_ == Type::F16,
        "fill: a must be f32 or f16, not {}",
        a.type_.name()
    );
    crate::ggml_assert!(a.is_contiguous(), "fill: a must be contiguous");
    let result = view_or_dup(ctx, a, inplace);
    result.get_mut().set_op_param_f32(0, c);
    with_op(result, Op::FILL, &[a])
}

pub fn fill(ctx: &mut Context, a: TensorPtr, c: f32) -> TensorPtr {
    fill_impl(ctx, a, c, false)
}

pub fn fill_inplace(ctx: &mut Context, a: TensorPtr, c: f32) -> TensorPtr {
    fill_impl(ctx, a, c, true)
}

/// `enum ggml_tri_type`: which triangle of each square matrix `tri` keeps.
pub mod tri_type {
    pub const UPPER_DIAG: i32 = 0;
    pub const UPPER: i32 = 1;
    pub const LOWER_DIAG: i32 = 2;
    pub const LOWER: i32 = 3;
}

/// The triangle of each square f32 matrix of `a` that `tri_type` names, the rest zeroed; the
/// triangle kind is op param 0.
pub fn tri(ctx: &mut Context, a: TensorPtr, tri_type: i32) -> TensorPtr {
    crate::ggml_assert!(a.type_ == Type::F32, "tri: a must be f32, not {}", a.type_.name());
    crate::ggml_assert!(a.is_contiguous(), "tri: a must be contiguous");
    crate::ggml_assert!(a.ne[0] == a.ne[1], "tri: matrices must be square, not {}x{}", a.ne[0], a.ne[1]);
    let result = ctx.dup_tensor(a);
    result.get_mut().set_op_param_i32(0, tri_type);
    with_op(result, Op::TRI, &[a])
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::core::context::InitParams;

    pub fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false })
    }

    #[test]
    fn add_broadcasts_b_over_a() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 3, 2]);
        let b = c.new_tensor(Type::F32, &[4, 1]);
        let r = add(&mut c, a, b);
        assert_eq!(r.op, Op::ADD);
        assert_eq!(r.ne, [4, 3, 2, 1]);
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(a), Some(b), None));
        assert!(!r.is_view());
        assert_eq!(r.name(), "");
    }

    #[test]
    fn inplace_ops_view_their_first_operand() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[8, 2]);
        a.get_mut().set_name("x");
        let b = c.new_tensor(Type::F32, &[8, 2]);
        let r = mul_inplace(&mut c, a, b);
        assert_eq!(r.op, Op::MUL);
        assert_eq!(r.view_source(), Some(a));
        assert_eq!(r.data, a.data);
        assert_eq!(r.name(), "x (view)");
        let s = sqrt_inplace(&mut c, r);
        assert_eq!(s.view_source(), Some(a));
        assert_eq!(s.name(), "x (view) (view)");
        assert_eq!(s.op, Op::SQRT);
        assert_eq!(s.src(0), Some(r));
    }

    #[test]
    fn acc_packs_strides_offset_and_flag() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[10, 4]);
        let b = c.new_tensor(Type::F32, &[5, 2]);
        let r = acc_inplace(&mut c, a, b, 40, 160, 160, 8);
        assert_eq!(r.op, Op::ACC);
        assert_eq!(&r.op_params[..6], &[40, 160, 160, 8, 1, 0]);
        assert!(r.is_view());
        let r = acc(&mut c, a, b, 40, 160, 160, 8);
        assert_eq!(r.op_params[4], 0);
    }

    #[test]
    fn add_cast_and_add_id() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[8, 3]);
        let b = c.new_tensor(Type::F32, &[8]);
        let r = add_cast(&mut c, a, b, Type::F32);
        assert_eq!((r.type_, r.op, r.ne), (Type::F32, Op::ADD, [8, 3, 1, 1]));

        let a = c.new_tensor(Type::F32, &[8, 2, 5]);
        let b = c.new_tensor(Type::F32, &[8, 4]);
        let ids = c.new_tensor(Type::I32, &[2, 5]);
        let r = add_id(&mut c, a, b, ids);
        assert_eq!(r.op, Op::ADD_ID);
        assert_eq!(r.src(2), Some(ids));
        assert_eq!(r.ne, a.ne);
    }

    #[test]
    fn scale_clamp_fill_tri_params() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[3, 3]);
        let r = scale_bias(&mut c, a, 2.0, -1.0);
        assert_eq!(r.op, Op::SCALE);
        assert_eq!((r.op_param_f32(0), r.op_param_f32(1)), (2.0, -1.0));
        let r = scale(&mut c, a, 0.5);
        assert_eq!((r.op_param_f32(0), r.op_param_f32(1)), (0.5, 0.0));
        let r = clamp_inplace(&mut c, a, -1.0, 1.0);
        assert_eq!((r.op, r.op_param_f32(0), r.op_param_f32(1)), (Op::CLAMP, -1.0, 1.0));
        assert!(r.is_view());
        let r = fill(&mut c, a, 7.5);
        assert_eq!((r.op, r.op_param_f32(0)), (Op::FILL, 7.5));
        let r = tri(&mut c, a, tri_type::LOWER);
        assert_eq!((r.op, r.op_params[0]), (Op::TRI, 3));
        assert!(!r.is_view());
    }

    #[test]
    fn dup_copies_shape_not_strides() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[4, 6]);
        let r = dup(&mut c, a);
        assert_eq!((r.op, r.type_, r.ne, r.src(0)), (Op::DUP, Type::F16, a.ne, Some(a)));
        let r = dup_inplace(&mut c, a);
        assert_eq!(r.view_source(), Some(a));
    }
}
