//! Filling and comparing `struct ggml_threadpool_params` (`ggml_threadpool_params_*`).

use crate::core::threadpool_params::ThreadpoolParams;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_params_init(p: *mut ThreadpoolParams, n_threads: c_int) {
    // SAFETY: callers pass a writable params struct.
    match unsafe { p.as_mut() } {
        Some(p) => *p = ThreadpoolParams::new(n_threads),
        None => crate::ggml_abort!("NULL params passed to ggml_threadpool_params_init"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_params_default(n_threads: c_int) -> ThreadpoolParams {
    ThreadpoolParams::new(n_threads)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_params_match(p0: *const ThreadpoolParams, p1: *const ThreadpoolParams) -> bool {
    // SAFETY: callers pass two params structs.
    match unsafe { (p0.as_ref(), p1.as_ref()) } {
        (Some(a), Some(b)) => a.matches(b),
        _ => crate::ggml_abort!("NULL params passed to ggml_threadpool_params_match"),
    }
}
