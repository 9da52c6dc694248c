//! User-defined ops: `map_custom1/2/3` and `custom` call the user's C callback, stored in the
//! node's `op_params`, on every thread of the team with `(ith, nth)`, exactly as the
//! reference does. The callback splits the work itself; the node's task count only sized the
//! team when the graph was planned.

use std::ffi::c_int;

use crate::core::ops::custom::{CustomOpParamsAny, MapCustom1OpParams, MapCustom2OpParams, MapCustom3OpParams};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::cpu::compute::ComputeParams;

/// The custom ops compute whatever their callback computes, on any types: supported when a
/// callback is set.
pub fn custom_supports(node: &Tensor) -> bool {
    CustomOpParamsAny::from_op_params(node).fun.is_some()
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

    /// Element `i` of a contiguous F32 tensor, as the C callbacks would reach it.
    ///
    /// # Safety
    /// `t` is a live contiguous F32 tensor with more than `i` elements.
    unsafe fn elem(t: *const Tensor, i: usize) -> *mut f32 {
        // SAFETY: as the caller promises.
        unsafe { (*t).data.cast::<f32>().add(i) }
    }

    fn count(t: *const Tensor) -> usize {
        // SAFETY: the callbacks get live tensors.
        unsafe { (*t).nelements() as usize }
    }

    /// Counts calls in the AtomicUsize behind `userdata`.
    fn tally(userdata: *mut c_void) {
        // SAFETY: the tests pass a pointer to an AtomicUsize that outlives the computation.
        unsafe { &*userdata.cast::<AtomicUsize>() }.fetch_add(1, Ordering::Relaxed);
    }

    unsafe extern "C" fn double(dst: *mut Tensor, a: *const Tensor, ith: c_int, nth: c_int, ud: *mut c_void) {
        tally(ud);
        for i in (ith as usize..count(dst)).step_by(nth as usize) {
            // SAFETY: both tensors are contiguous F32 of the same size.
            unsafe { *elem(dst, i) = 2.0 * *elem(a, i) };
        }
    }

    unsafe extern "C" fn add2(
        dst: *mut Tensor,
        a: *const Tensor,
        b: *const Tensor,
        ith: c_int,
        nth: c_int,
        ud: *mut c_void,
    ) {
        tally(ud);
        for i in (ith as usize..count(dst)).step_by(nth as usize) {
            // SAFETY: as in `double`.
            unsafe { *elem(dst, i) = *elem(a, i) + *elem(b, i) };
        }
    }

    unsafe extern "C" fn fma3(
        dst: *mut Tensor,
        a: *const Tensor,
        b: *const Tensor,
        c: *const Tensor,
        ith: c_int,
        nth: c_int,
        ud: *mut c_void,
    ) {
        tally(ud);
        for i in (ith as usize..count(dst)).step_by(nth as usize) {
            // SAFETY: as in `double`.
            unsafe { *elem(dst, i) = *elem(a, i) * *elem(b, i) + *elem(c, i) };
        }
    }

    unsafe extern "C" fn sum_srcs(dst: *mut Tensor, ith: c_int, nth: c_int, ud: *mut c_void) {
        tally(ud);
        // SAFETY: dst is live; its first two sources are set by the test.
        let (a, b) = unsafe { ((*dst).src[0], (*dst).src[1]) };
        for i in (ith as usize..count(dst)).step_by(nth as usize) {
            // SAFETY: as in `double`.
            unsafe { *elem(dst, i) = *elem(a, i) - *elem(b, i) };
        }
    }

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
