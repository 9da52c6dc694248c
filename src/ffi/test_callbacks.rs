//! C callbacks for the tests of the C-shaped parts of the library: the custom-op functions
//! that `ggml_map_custom*` and `ggml_custom_4d` take, a `ggml_abort_callback` and a meta
//! device's split-state callback. They are
//! `extern "C"` functions, which live at the C edge, so the tests below the edge take them
//! from here.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::backend::meta::{SplitAxis, SplitState};
use crate::core::tensor::Tensor;

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

pub unsafe extern "C" fn double(dst: *mut Tensor, a: *const Tensor, ith: c_int, nth: c_int, ud: *mut c_void) {
    tally(ud);
    for i in (ith as usize..count(dst)).step_by(nth as usize) {
        // SAFETY: both tensors are contiguous F32 of the same size.
        unsafe { *elem(dst, i) = 2.0 * *elem(a, i) };
    }
}

pub unsafe extern "C" fn add2(
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

pub unsafe extern "C" fn fma3(
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

pub unsafe extern "C" fn sum_srcs(dst: *mut Tensor, ith: c_int, nth: c_int, ud: *mut c_void) {
    tally(ud);
    // SAFETY: dst is live; its first two sources are set by the test.
    let (a, b) = unsafe { ((*dst).src[0], (*dst).src[1]) };
    for i in (ith as usize..count(dst)).step_by(nth as usize) {
        // SAFETY: as in `double`.
        unsafe { *elem(dst, i) = *elem(a, i) - *elem(b, i) };
    }
}

pub unsafe extern "C" fn abort_after_two(data: *mut c_void) -> bool {
    // SAFETY: the test passes a pointer to an AtomicUsize that outlives the computation.
    let calls = unsafe { &*data.cast::<AtomicUsize>() };
    calls.fetch_add(1, Ordering::Relaxed) + 1 >= 2
}

/// Splits by tensor name: `a0_<x>_<y>` along axis 0 with pieces x and y, `a1_...` along
/// axis 1, `seg_...` along axis 0 in two segments of [1, 1] and [1, 3], `part` partial,
/// anything else mirrored.
pub unsafe extern "C" fn split_by_name(tensor: *const Tensor, _ud: *mut c_void) -> SplitState {
    // SAFETY: the meta buffer passes a live tensor.
    let name = unsafe { &*tensor }.name().to_owned();
    let pieces = |axis: SplitAxis, rest: &str| {
        let mut state = SplitState::new(axis);
        for (j, p) in rest.split('_').enumerate() {
            state.ne[j] = p.parse().expect("piece size");
        }
        state
    };
    if let Some(rest) = name.strip_prefix("a0_") {
        pieces(SplitAxis::AXIS_0, rest)
    } else if let Some(rest) = name.strip_prefix("a1_") {
        pieces(SplitAxis::AXIS_1, rest)
    } else if name.starts_with("seg") {
        let mut state = SplitState::new(SplitAxis::AXIS_0);
        state.n_segments = 2;
        state.nr = [0; 16];
        state.nr[0] = 1;
        state.nr[1] = 1;
        state.ne[..4].copy_from_slice(&[1, 1, 1, 3]);
        state
    } else if name == "part" {
        SplitState::new(SplitAxis::PARTIAL)
    } else {
        SplitState::new(SplitAxis::MIRRORED)
    }
}
