//! Sorting along rows: `argsort` and the top-k selections (`argsort_top_k`, `top_k`), with
//! `enum ggml_sort_order`.

use super::set_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// `enum ggml_sort_order`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SortOrder(pub i32);

impl SortOrder {
    pub const ASC: SortOrder = SortOrder(0);
    pub const DESC: SortOrder = SortOrder(1);
}

/// The indices (i32) that sort each row of `a` in `order`.
pub fn argsort(ctx: &mut Context, a: TensorPtr, order: SortOrder) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] <= i32::MAX as i64, "rows of {} elements", a.ne[0]);
    let result = ctx.new_tensor(Type::I32, &a.ne);
    result.get_mut().set_op_param_i32(0, order.0);
    set_op(result, Op::ARGSORT, &[a]);
    result
}

/// The indices of the `k` largest values of each row, largest first: a view of the first `k`
/// columns of a descending argsort.
pub fn argsort_top_k(ctx: &mut Context, a: TensorPtr, k: i32) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] >= k as i64, "argsort_top_k: k = {} exceeds the row length {}", k, a.ne[0]);
    let sorted = argsort(ctx, a, SortOrder::DESC);
    let [_, ne1, ne2, ne3] = sorted.ne;
    let [_, nb1, nb2, nb3] = sorted.nb;
    super::shape::view_4d(ctx, sorted, k as i64, ne1, ne2, ne3, nb1, nb2, nb3, 0)
}

/// The indices (i32, in no particular order) of the `k` largest values of each row.
pub fn top_k(ctx: &mut Context, a: TensorPtr, k: i32) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] >= k as i64, "top_k: k = {} exceeds the row length {}", k, a.ne[0]);
    let result = ctx.new_tensor(Type::I32, &[k as i64, a.ne[1], a.ne[2], a.ne[3]]);
    set_op(result, Op::TOP_K, &[a]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;
    use crate::core::ops::sequence::timestep_embedding;

    #[test]
    fn sorting_ops() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[10, 3, 2]);
        let s = argsort(&mut c, a, SortOrder::DESC);
        assert_eq!((s.type_, s.ne, s.op, s.op_params[0]), (Type::I32, a.ne, Op::ARGSORT, 1));
        let v = argsort_top_k(&mut c, a, 4);
        let sorted = v.view_source().unwrap();
        assert_eq!((v.ne, v.nb, v.op), ([4, 3, 2, 1], s.nb, Op::VIEW));
        assert_eq!((sorted.op, sorted.op_params[0], sorted.src(0)), (Op::ARGSORT, 1, Some(a)));
        let t = top_k(&mut c, a, 4);
        assert_eq!((t.type_, t.ne, t.op, t.src(0)), (Type::I32, [4, 3, 2, 1], Op::TOP_K, Some(a)));
        let e = timestep_embedding(&mut c, a, 16, 10000);
        assert_eq!((e.ne, e.op_params[..2].to_vec()), ([16, 10, 1, 1], vec![16, 10000]));
    }
}
