//! `struct ggml_compute_params` as ggml-cpu's internal entry points take it: one thread's
//! place in a team, the team's scratch, and the pool whose barrier and chunk counter the team
//! shares.

use std::ffi::{c_int, c_void};

use crate::cpu::ComputeParams;
use crate::cpu::threadpool::{Team, Threadpool, solo};

/// `struct ggml_compute_params` (ggml-cpu-impl.h).
#[repr(C)]
pub struct CComputeParams {
    pub ith: c_int,
    pub nth: c_int,
    pub wsize: usize,
    pub wdata: *mut c_void,
    pub threadpool: *mut Threadpool,
    pub use_ref: bool,
}

const _: () = assert!(std::mem::size_of::<CComputeParams>() == 40);
const _: () = assert!(std::mem::offset_of!(CComputeParams, threadpool) == 24);

/// The team member that `params` describes: thread `ith` of `nth` on its pool's barrier and
/// chunk counter; a team of one may name no pool.
///
/// # Safety
/// `params.threadpool` is NULL or a live pool from `ggml_threadpool_new`, not running a graph
/// meanwhile.
pub unsafe fn with_team<R>(params: &CComputeParams, export: &str, f: impl FnOnce(&Team) -> R) -> R {
    let (ith, nth) = (params.ith, params.nth);
    if nth < 1 || ith < 0 || ith >= nth {
        crate::ggml_abort!("{}: thread {} of a team of {}", export, ith, nth);
    }
    // SAFETY: the caller's contract.
    match unsafe { params.threadpool.as_ref() } {
        Some(pool) => f(&pool.member(ith as usize, nth as usize)),
        None if nth == 1 => solo(f),
        None => crate::ggml_abort!("{}: a team of {} threads without a thread pool", export, nth),
    }
}

/// Runs `f` with the kernels' view of `params` (see [`with_team`]). The scratch must be the
/// size our planner gives the node (`ggml_graph_plan`), as the reference's kernels expect its
/// own planner's.
///
/// # Safety
/// `params` is NULL or points to valid compute params whose pool keeps [`with_team`]'s contract
/// and whose `wdata` holds `wsize` bytes.
#[track_caller]
pub unsafe fn with_params<R>(params: *const CComputeParams, export: &str, f: impl FnOnce(&ComputeParams) -> R) -> R {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { params.as_ref() }) else { crate::ggml_abort!("{}: NULL compute params", export) };
    if c.wsize != 0 && c.wdata.is_null() {
        crate::ggml_abort!("{}: compute params with {} bytes of scratch at NULL", export, c.wsize);
    }
    // SAFETY: passed on from the caller.
    unsafe { with_team(c, export, |team| f(&ComputeParams::new(team, c.wsize, c.wdata.cast(), c.use_ref))) }
}
