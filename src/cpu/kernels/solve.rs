//! The lower-triangular solve `solve_tri`.

use super::conv::{at, load, store};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src};

fn all_f32(node: &Tensor, n_src: usize) -> bool {
    node.type_ == Type::F32 && (0..n_src).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

/// SOLVE_TRI: F32 everywhere.
pub fn solve_tri_supports(node: &Tensor) -> bool {
    all_f32(node, 2)
}

/// SOLVE_TRI: solves `A X = B` by forward substitution, `A` lower triangular `[n, n]`, `B`
/// and `X` `[k, n]` (contiguous rows). Threads split the (batch, column) pairs.
pub fn solve_tri(params: &ComputeParams, dst: TensorPtr) {
    let (a, b) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(solve_tri_supports(&dst), "solve_tri: F32 only");
    crate::ggml_assert!(a.ne[0] == a.ne[1] && dst.ne[0] == b.ne[0] && dst.ne[1] == b.ne[1]);
    crate::ggml_assert!(a.ne[2] == b.ne[2] && b.ne[2] == dst.ne[2] && a.ne[3] == b.ne[3] && b.ne[3] == dst.ne[3]);
    crate::ggml_assert!(a.nb[0] == 4 && b.nb[0] == 4 && dst.nb[0] == 4);
    let (k, n, ne02) = (b.ne[0], b.ne[1], a.ne[2]);
    for r in split((ne02 * a.ne[3] * k) as usize, params.ith, params.nth) {
        let r = r as i64;
        let (i3, i2, col) = (r / (ne02 * k), (r / k) % ne02, r % k);
        for row in 0..n {
            let mut sum = 0.0f32;
            // SAFETY: every index is inside the matrices of batch (i2, i3); column `col` of X
            // is this thread's, and its earlier rows were written just above.
            unsafe {
                for t in 0..row {
                    sum += load(&a, at(&a, t, row, i2, i3)) * load(&dst, at(&dst, col, t, i2, i3));
                }
                let diag = load(&a, at(&a, row, row, i2, i3));
                let v = (load(&b, at(&b, col, row, i2, i3)) - sum) / diag;
                store(&dst, at(&dst, col, row, i2, i3), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::solve as ops;
    use crate::cpu::kernels::testing::*;

    fn get(v: &[f64], ne: [i64; 4], i: [i64; 4]) -> f64 {
        v[(i[0] + ne[0] * (i[1] + ne[1] * (i[2] + ne[2] * i[3]))) as usize]
    }

    #[test]
    fn solve_tri_inverts_the_product() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let n = 6;
            let a = c.new_tensor(Type::F32, &[n, n, 2, 1]);
            put(a, |i| {
                let (col, row) = ((i as i64) % n, (i as i64 / n) % n);
                if col > row {
                    0.0
                } else if col == row {
                    2.0 + noise(i, 8).abs()
                } else {
                    noise(i, 8)
                }
            });
            let b = c.new_tensor(Type::F32, &[3, n, 2, 1]);
            put(b, |i| noise(i, 9));
            let r = ops::solve_tri(&mut c, a, b, true, true, false);
            run(&mut c, r, solve_tri, nth, 0, use_ref);
            let (av, bv, xv) = (values(a), values(b), values(r));
            for m in 0..2 {
                for row in 0..n {
                    for col in 0..3 {
                        let s: f64 =
                            (0..n).map(|t| get(&av, a.ne, [t, row, m, 0]) * get(&xv, r.ne, [col, t, m, 0])).sum();
                        assert!((s - get(&bv, b.ne, [col, row, m, 0])).abs() < 1e-5, "A X != B");
                    }
                }
            }
        });
    }
}
