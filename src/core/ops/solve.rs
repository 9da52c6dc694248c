//! The triangular solve `solve_tri` (`A X = B` with `A` lower triangular).

use super::set_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// Solves `A X = B` for `X`, `A` lower triangular (the only variant supported: `left`,
/// `lower` and not `uni`).
pub fn solve_tri(ctx: &mut Context, a: TensorPtr, b: TensorPtr, left: bool, lower: bool, uni: bool) -> TensorPtr {
    crate::ggml_assert!(a.type_ == Type::F32);
    crate::ggml_assert!(b.type_ == Type::F32);
    crate::ggml_assert!(a.ne[0] == a.ne[1], "A must be square");
    crate::ggml_assert!(a.ne[1] == b.ne[1], "B must have A's outer dimension");
    crate::ggml_assert!(a.ne[2] == b.ne[2]);
    crate::ggml_assert!(a.ne[3] == b.ne[3]);
    crate::ggml_assert!(a.is_contiguous());
    crate::ggml_assert!(b.is_contiguous());
    crate::ggml_assert!(lower && left && !uni, "only left, lower, non-unit solves are supported");
    let result = ctx.new_tensor(Type::F32, &b.ne);
    set_op(result, Op::SOLVE_TRI, &[a, b]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;

    #[test]
    fn solve_tri_shapes_like_b() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[6, 6, 2]);
        let b = c.new_tensor(Type::F32, &[3, 6, 2]);
        let x = solve_tri(&mut c, a, b, true, true, false);
        assert_eq!((x.ne, x.op, x.src(0), x.src(1)), ([3, 6, 2, 1], Op::SOLVE_TRI, Some(a), Some(b)));
    }
}
