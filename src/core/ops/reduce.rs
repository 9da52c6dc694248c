//! Reductions (`sum`, `sum_rows`, `mean`, `argmax`, `count_equal`, `cumsum`) and their
//! broadcasting counterparts: `repeat` tiles a tensor, `repeat_back` sums the tiles again, and
//! `concat` joins two tensors along one dimension.

use super::with_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::{MAX_DIMS, TensorPtr};
use crate::core::types::Type;

/// The sum of all elements of `a`, as a one-element tensor of `a`'s type.
pub fn sum(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    let result = ctx.new_tensor(a.type_, &[1]);
    with_op(result, Op::SUM, &[a])
}

/// The sum of each row of `a`: shape `[1, ne1, ne2, ne3]`, `a`'s type.
pub fn sum_rows(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    let result = ctx.new_tensor(a.type_, &[1, a.ne[1], a.ne[2], a.ne[3]]);
    with_op(result, Op::SUM_ROWS, &[a])
}

/// Running sums along each row of an f32 tensor.
pub fn cumsum(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.type_ == Type::F32, "cumsum: a must be f32, not {}", a.type_.name());
    let result = ctx.dup_tensor(a);
    with_op(result, Op::CUMSUM, &[a])
}

/// The mean of each row of `a`: an f32 tensor of shape `[1, ne1, ne2, ne3]`.
pub fn mean(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    let result = ctx.new_tensor(Type::F32, &[1, a.ne[1], a.ne[2], a.ne[3]]);
    with_op(result, Op::MEAN, &[a])
}

/// The index of the largest element of each row of matrix `a`, as i32s.
pub fn argmax(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.is_matrix(), "argmax: a must be a matrix, not {:?}", a.ne);
    crate::ggml_assert!(a.ne[0] <= i64::from(i32::MAX), "argmax: rows of {} elements are too long", a.ne[0]);
    let result = ctx.new_tensor(Type::I32, &[a.ne[1]]);
    with_op(result, Op::ARGMAX, &[a])
}

/// How many elements of `a` and `b` are equal, as a single i64.
pub fn count_equal(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.same_shape(&b), "count_equal: shapes {:?} and {:?} differ", a.ne, b.ne);
    let result = ctx.new_tensor(Type::I64, &[1]);
    with_op(result, Op::COUNT_EQUAL, &[a, b])
}

/// `a` tiled to `b`'s shape (only `b`'s shape is used; it is not a source).
pub fn repeat(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.can_repeat_to(&b), "repeat: {:?} does not tile {:?}", a.ne, b.ne);
    let result = ctx.new_tensor(a.type_, &b.ne);
    with_op(result, Op::REPEAT, &[a])
}

/// `a` tiled to the shape `[ne0, ne1, ne2, ne3]`.
pub fn repeat_4d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> TensorPtr {
    let ne = [ne0, ne1, ne2, ne3];
    let can_repeat = a.is_empty() || (0..MAX_DIMS).all(|i| ne[i] % a.ne[i] == 0);
    crate::ggml_assert!(can_repeat, "repeat_4d: {:?} does not tile {:?}", a.ne, ne);
    let result = ctx.new_tensor(a.type_, &ne);
    with_op(result, Op::REPEAT, &[a])
}

/// The adjoint of [`repeat`]: `a`'s tiles summed into a tensor of `b`'s shape.
pub fn repeat_back(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(b.can_repeat_to(&a), "repeat_back: {:?} does not tile {:?}", b.ne, a.ne);
    let result = ctx.new_tensor(a.type_, &b.ne);
    with_op(result, Op::REPEAT_BACK, &[a])
}

/// `a` and `b` joined along dimension `dim` (op param 0); the other extents must agree.
pub fn concat(ctx: &mut Context, a: TensorPtr, b: TensorPtr, dim: i32) -> TensorPtr {
    crate::ggml_assert!((0..MAX_DIMS as i32).contains(&dim), "concat: no dimension {}", dim);
    crate::ggml_assert!(a.type_ == b.type_, "concat: a is {} but b is {}", a.type_.name(), b.type_.name());
    let dim = dim as usize;
    let mut ne = a.ne;
    for (d, (&na, &nb)) in a.ne.iter().zip(&b.ne).enumerate() {
        if d == dim {
            ne[d] = na + nb;
        } else {
            crate::ggml_assert!(na == nb, "concat: extents of dimension {} differ ({} vs {})", d, na, nb);
        }
    }
    let result = ctx.new_tensor(a.type_, &ne);
    result.get_mut().set_op_param_i32(0, dim as i32);
    with_op(result, Op::CONCAT, &[a, b])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;

    #[test]
    fn reductions_shape_and_type() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[6, 4, 3]);
        let s = sum(&mut c, a);
        assert_eq!((s.op, s.type_, s.ne), (Op::SUM, Type::F16, [1, 1, 1, 1]));
        let s = sum_rows(&mut c, a);
        assert_eq!((s.op, s.type_, s.ne), (Op::SUM_ROWS, Type::F16, [1, 4, 3, 1]));
        let m = mean(&mut c, a);
        assert_eq!((m.op, m.type_, m.ne), (Op::MEAN, Type::F32, [1, 4, 3, 1]));

        let x = c.new_tensor(Type::F32, &[6, 4]);
        let am = argmax(&mut c, x);
        assert_eq!((am.op, am.type_, am.ne), (Op::ARGMAX, Type::I32, [4, 1, 1, 1]));
        let y = c.new_tensor(Type::F32, &[6, 4]);
        let ce = count_equal(&mut c, x, y);
        assert_eq!((ce.op, ce.type_, ce.ne, ce.src(1)), (Op::COUNT_EQUAL, Type::I64, [1, 1, 1, 1], Some(y)));
        let cs = cumsum(&mut c, x);
        assert_eq!((cs.op, cs.ne), (Op::CUMSUM, x.ne));
    }

    #[test]
    fn repeat_and_its_adjoint() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 1, 2]);
        let b = c.new_tensor(Type::F16, &[8, 3, 2]);
        let r = repeat(&mut c, a, b);
        assert_eq!((r.op, r.type_, r.ne), (Op::REPEAT, Type::F32, [8, 3, 2, 1]));
        assert_eq!((r.src(0), r.src(1)), (Some(a), None));
        let r4 = repeat_4d(&mut c, a, 4, 5, 2, 3);
        assert_eq!((r4.op, r4.ne), (Op::REPEAT, [4, 5, 2, 3]));
        let back = repeat_back(&mut c, r, a);
        assert_eq!((back.op, back.ne, back.src(0)), (Op::REPEAT_BACK, a.ne, Some(r)));
    }

    #[test]
    fn concat_sums_one_dimension() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 2, 3]);
        let b = c.new_tensor(Type::F32, &[4, 5, 3]);
        let r = concat(&mut c, a, b, 1);
        assert_eq!((r.op, r.ne, r.op_params[0]), (Op::CONCAT, [4, 7, 3, 1], 1));
        assert_eq!((r.src(0), r.src(1)), (Some(a), Some(b)));
    }
}
