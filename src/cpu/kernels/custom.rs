//! User-defined ops: `map_custom1/2/3` and `custom` call the user's C callback, stored in the
//! node's `op_params`, on every thread of the team with `(ith, nth)`, exactly as the
//! reference does. The callback splits the work itself; the node's task count only sized the
//! team when the graph was planned.

use std::ffi::c_int;

use crate::core::ops::custom::{
    CustomOpParamsAny, MapCustom1OpParams, MapCustom2OpParams, MapCustom3OpParams, N_TASKS_MAX,
};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::cpu::compute::ComputeParams;

/// The custom ops compute whatever their callback computes, on any types: supported when a
/// callback is set.
pub fn custom_supports(node: &Tensor) -> bool {
    CustomOpParamsAny::from_op_params(node).fun.is_some()
}

/// The custom ops' task count: what the user asked for when the op was made, at most the
/// team (`GGML_N_TASKS_MAX` for all of it). Their params share one layout, the count at the
/// same offset.
pub fn custom_tasks(node: &Tensor, n_threads: usize) -> usize {
    match CustomOpParamsAny::from_op_params(node).n_tasks {
        N_TASKS_MAX => n_threads,
        n => n_threads.min(usize::try_from(n).unwrap_or(1).max(1)),
    }
}

/// The source in slot `i` as the callback receives it (null when the slot is empty).
fn arg(dst: TensorPtr, i: usize) -> *const Tensor {
    dst.src[i].cast_const()
}

fn thread(params: &ComputeParams) -> (c_int, c_int) {
    (params.ith as c_int, params.nth as c_int)
}

/// MAP_CUSTOM1: `fun(dst, a, ith, nth, userdata)`.
pub fn map_custom1(params: &ComputeParams, dst: TensorPtr) {
    let p = MapCustom1OpParams::from_op_params(&dst);
    let Some(fun) = p.fun else { crate::ggml_abort!("map_custom1 without a callback") };
    let (ith, nth) = thread(params);
    // SAFETY: the user registered `fun` for this node with this userdata; the tensors are the
    // graph's live tensors, as the C API promises the callback.
    unsafe { fun(dst.as_ptr(), arg(dst, 0), ith, nth, p.userdata) }
}

/// MAP_CUSTOM2: `fun(dst, a, b, ith, nth, userdata)`.
pub fn map_custom2(params: &ComputeParams, dst: TensorPtr) {
    let p = MapCustom2OpParams::from_op_params(&dst);
    let Some(fun) = p.fun else { crate::ggml_abort!("map_custom2 without a callback") };
    let (ith, nth) = thread(params);
    // SAFETY: as in map_custom1.
    unsafe { fun(dst.as_ptr(), arg(dst, 0), arg(dst, 1), ith, nth, p.userdata) }
}

/// MAP_CUSTOM3: `fun(dst, a, b, c, ith, nth, userdata)`.
pub fn map_custom3(params: &ComputeParams, dst: TensorPtr) {
    let p = MapCustom3OpParams::from_op_params(&dst);
    let Some(fun) = p.fun else { crate::ggml_abort!("map_custom3 without a callback") };
    let (ith, nth) = thread(params);
    // SAFETY: as in map_custom1.
    unsafe { fun(dst.as_ptr(), arg(dst, 0), arg(dst, 1), arg(dst, 2), ith, nth, p.userdata) }
}

/// CUSTOM: `fun(dst, ith, nth, userdata)`; the callback finds its arguments in `dst->src`.
pub fn custom(params: &ComputeParams, dst: TensorPtr) {
    let p = CustomOpParamsAny::from_op_params(&dst);
    let Some(fun) = p.fun else { crate::ggml_abort!("custom op without a callback") };
    let (ith, nth) = thread(params);
    // SAFETY: as in map_custom1.
    unsafe { fun(dst.as_ptr(), ith, nth, p.userdata) }
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::core::ops::custom as ops;
    use crate::core::types::Type;
    use crate::cpu::kernels::testing::*;
    use crate::ffi::test_callbacks::{add2, double, fma3, sum_srcs};

    #[test]
    fn callbacks_run_on_every_thread() {
        for nth in [1usize, 3] {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[10, 3]);
            let b = c.new_tensor(Type::F32, &[10, 3]);
            let d = c.new_tensor(Type::F32, &[10, 3]);
            put(a, |i| noise(i, 1));
            put(b, |i| noise(i, 2));
            put(d, |i| noise(i, 3));
            let (av, bv, dv) = (values(a), values(b), values(d));
            let calls = AtomicUsize::new(0);
            let ud = std::ptr::from_ref(&calls).cast_mut().cast::<c_void>();

            let r = ops::map_custom1(&mut c, a, Some(double), ops::N_TASKS_MAX, ud);
            assert!(custom_supports(&r));
            run(&mut c, r, map_custom1, nth, 0, false);
            assert_close(&values(r), &av.iter().map(|x| 2.0 * x).collect::<Vec<_>>(), 1e-6, "custom1");

            let r = ops::map_custom2(&mut c, a, b, Some(add2), ops::N_TASKS_MAX, ud);
            run(&mut c, r, map_custom2, nth, 0, false);
            assert_close(&values(r), &av.iter().zip(&bv).map(|(x, y)| x + y).collect::<Vec<_>>(), 1e-6, "custom2");

            let r = ops::map_custom3(&mut c, a, b, d, Some(fma3), ops::N_TASKS_MAX, ud);
            run(&mut c, r, map_custom3, nth, 0, false);
            let want: Vec<f64> = (0..30).map(|i| av[i] * bv[i] + dv[i]).collect();
            assert_close(&values(r), &want, 1e-6, "custom3");

            let r = ops::custom_4d(
                &mut c,
                Type::F32,
                [10, 3, 1, 1],
                &[Some(a), Some(b)],
                Some(sum_srcs),
                ops::N_TASKS_MAX,
                ud,
            );
            run(&mut c, r, custom, nth, 0, false);
            assert_close(&values(r), &av.iter().zip(&bv).map(|(x, y)| x - y).collect::<Vec<_>>(), 1e-6, "custom");

            assert_eq!(calls.load(Ordering::Relaxed), 4 * nth);
            let none = ops::map_custom1(&mut c, a, None, 1, std::ptr::null_mut());
            assert!(!custom_supports(&none));
        }
    }
}
