//! The thread team's tools as ggml-cpu exports them: the barrier and the chunk counter of a
//! pool, for kernels that split work dynamically.

use std::ffi::c_int;

use crate::cpu::threadpool::Threadpool;
use crate::ffi::handle::arg;

/// `ggml_barrier`: waits until the pool's current team (its latest job's) has arrived.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_barrier(tp: *mut Threadpool) {
    // SAFETY: the C caller's contract: a live pool.
    unsafe { arg!(tp) }.barrier();
}

/// `ggml_threadpool_chunk_set`.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_chunk_set(tp: *mut Threadpool, value: c_int) {
    // SAFETY: the C caller's contract: a live pool.
    unsafe { arg!(tp) }.chunk_set(value as usize);
}

/// `ggml_threadpool_chunk_add`: the counter's value before the addition.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_chunk_add(tp: *mut Threadpool, value: c_int) -> c_int {
    // SAFETY: the C caller's contract: a live pool.
    unsafe { arg!(tp) }.chunk_add(value as usize) as c_int
}
