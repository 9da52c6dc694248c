//! Sorting kernels: `argsort` and `top_k`.
//!
//! Sorting is stable: equal keys keep their index order, which is what the reference's
//! `std::sort` gives on the short rows it sorts by insertion and one valid order otherwise.
//! Keys compare as C's `<` does, except that NaNs (which `<` cannot order) go to the ends.

use super::conv::{at, load};
use crate::core::ops::sort::SortOrder;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::src;
use std::cmp::Ordering;

/// Writes the i32 `v` at byte offset `off` of `t`.
///
/// # Safety
/// `off` addresses an I32 element inside `t` that no other thread touches now.
unsafe fn store_i32(t: &Tensor, off: usize, v: i32) {
    // SAFETY: the caller keeps the offset inside the data.
    unsafe { t.data.cast::<u8>().add(off).cast::<i32>().write_unaligned(v) }
}

/// Ascending order of two keys: C's `<` for ordered values (so -0 equals +0), NaNs at the
/// ends (by sign), which keeps the order total.
fn ascending(a: f32, b: f32) -> Ordering {
    let key = |x: f32| if x == 0.0 { 0.0 } else { x };
    key(a).total_cmp(&key(b))
}

/// The row `r` of `x` as f32, and the indices 0..n sorted by it (stable).
fn sorted_indices(x: &Tensor, i1: i64, i2: i64, i3: i64, descending: bool) -> Vec<i32> {
    // SAFETY: the row's elements are inside x.
    let row: Vec<f32> = (0..x.ne[0]).map(|i| unsafe { load(x, at(x, i, i1, i2, i3)) }).collect();
    let mut idx: Vec<i32> = (0..x.ne[0] as i32).collect();
    if descending {
        idx.sort_by(|&a, &b| ascending(row[b as usize], row[a as usize]));
    } else {
        idx.sort_by(|&a, &b| ascending(row[a as usize], row[b as usize]));
    }
    idx
}

/// ARGSORT: F32 rows, I32 indices out.
pub fn argsort_supports(node: &Tensor) -> bool {
    node.type_ == Type::I32 && node.source(0).is_some_and(|s| s.type_ == Type::F32)
}

/// ARGSORT: the indices that sort each row ascending or descending. Threads take every
/// `nth`-th row.
pub fn argsort(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(argsort_supports(&dst), "argsort: {} is not supported", x.type_.name());
    let descending = match SortOrder(dst.op_params[0]) {
        SortOrder::ASC => false,
        SortOrder::DESC => true,
        other => crate::ggml_abort!("argsort: invalid sort order {}", other.0),
    };
    let [_, ne1, ne2, ne3] = x.ne;
    let mut r = params.ith as i64;
    while r < ne1 * ne2 * ne3 {
        let (i1, i2, i3) = (r % ne1, (r / ne1) % ne2, r / (ne1 * ne2));
        for (j, &v) in sorted_indices(&x, i1, i2, i3, descending).iter().enumerate() {
            // SAFETY: dst has x's shape; the row is this thread's.
            unsafe { store_i32(&dst, at(&dst, j as i64, i1, i2, i3), v) };
        }
        r += params.nth as i64;
    }
}

/// TOP_K: F32 rows, I32 indices out.
pub fn top_k_supports(node: &Tensor) -> bool {
    argsort_supports(node)
}

/// The reference plan's scratch for TOP_K: one row of indices per task.
pub fn top_k_work_size(node: &Tensor, n_tasks: usize) -> usize {
    node.source(0).map_or(0, |s| 4 * s.ne[0] as usize * n_tasks)
}

/// TOP_K: the indices of each row's `k` largest values, largest first except that the first
/// two are swapped (as the reference does, to show callers the order carries no meaning).
pub fn top_k(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(top_k_supports(&dst), "top_k: {} is not supported", x.type_.name());
    let k = dst.ne[0] as usize;
    crate::ggml_assert!(k as i64 <= x.ne[0], "top_k: {} of {}", k, x.ne[0]);
    let [_, ne1, ne2, ne3] = x.ne;
    let mut r = params.ith as i64;
    while r < ne1 * ne2 * ne3 {
        let (i1, i2, i3) = (r % ne1, (r / ne1) % ne2, r / (ne1 * ne2));
        let mut idx = sorted_indices(&x, i1, i2, i3, true);
        idx.truncate(k);
        if k > 1 {
            idx.swap(0, 1);
        }
        for (j, &v) in idx.iter().enumerate() {
            // SAFETY: `j < k = dst.ne[0]`; the row is this thread's.
            unsafe { store_i32(&dst, at(&dst, j as i64, i1, i2, i3), v) };
        }
        r += params.nth as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::sort as ops;
    use crate::cpu::kernels::testing::*;

    #[test]
    fn argsort_is_stable_and_top_k_picks_the_largest() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[37, 3, 2]);
            // few distinct values: many ties
            put(a, |i| (noise(i, 1) * 4.0).round() + 0.0); // + 0.0: no negative zeros
            let x = values(a);
            for (order, desc) in [(ops::SortOrder::ASC, false), (ops::SortOrder::DESC, true)] {
                let r = ops::argsort(&mut c, a, order);
                assert!(argsort_supports(&r));
                run(&mut c, r, argsort, nth, 0, use_ref);
                let got = values(r);
                for (row, idx) in x.chunks(37).zip(got.chunks(37)) {
                    let mut want: Vec<usize> = (0..37).collect();
                    want.sort_by(|&p, &q| if desc { row[q].total_cmp(&row[p]) } else { row[p].total_cmp(&row[q]) });
                    assert_eq!(idx.iter().map(|&v| v as usize).collect::<Vec<_>>(), want);
                }
            }

            let b = c.new_tensor(Type::F32, &[20, 4]);
            put(b, |i| noise(i, 2));
            let y = values(b);
            let r = ops::top_k(&mut c, b, 5);
            assert!(top_k_supports(&r));
            run(&mut c, r, top_k, nth, top_k_work_size(&r, nth), use_ref);
            for (row, idx) in y.chunks(20).zip(values(r).chunks(5)) {
                let mut want: Vec<usize> = (0..20).collect();
                want.sort_by(|&p, &q| row[q].total_cmp(&row[p]));
                want.truncate(5);
                want.swap(0, 1);
                assert_eq!(idx.iter().map(|&v| v as usize).collect::<Vec<_>>(), want);
            }
        });
    }
}
