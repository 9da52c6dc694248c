//! The backend scheduler (`ggml_backend_sched_*`): thin wrappers over
//! [`crate::sched::Sched`], which C sees as the opaque `ggml_backend_sched_t`.

use std::ffi::{c_int, c_void};

use crate::backend::backend::BackendPtr;
use crate::backend::buffer::BufferTypePtr;
use crate::backend::interface::{Backend, BufferType};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::Tensor;
use crate::ffi::handle::{arg, opt_arg};
use crate::sched::{Sched, SchedEvalCallback};

/// GGML_SCHED_MAX_BACKENDS of the reference (not in its public headers).
const MAX_BACKENDS: usize = 16;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_new(
    backends: *mut *mut Backend,
    bufts: *mut *mut BufferType,
    n_backends: c_int,
    graph_size: usize,
    parallel: bool,
    op_offload: bool,
) -> *mut Sched {
    crate::ggml_assert!(n_backends > 0, "ggml_backend_sched_new: n_backends must be positive, not {}", n_backends);
    // The reference sizes its per-backend tables for at most this many.
    crate::ggml_assert!(
        n_backends as usize <= MAX_BACKENDS,
        "ggml_backend_sched_new: n_backends = {} exceeds GGML_SCHED_MAX_BACKENDS = {}",
        n_backends,
        MAX_BACKENDS
    );
    crate::ggml_assert!(!backends.is_null(), "ggml_backend_sched_new: NULL backend list");
    let n = n_backends as usize;
    // SAFETY: the C caller's contract: `n_backends` live backends, and as many live buffer
    // types when `bufts` is set.
    let backend_list: Vec<BackendPtr> =
        unsafe { std::slice::from_raw_parts(backends, n).iter().map(|&b| arg!(b)).collect() };
    let buft_list: Option<Vec<BufferTypePtr>> = (!bufts.is_null()).then(|| {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(bufts, n).iter().map(|&b| arg!(b)).collect() }
    });
    Box::into_raw(Sched::new(&backend_list, buft_list.as_deref(), graph_size, parallel, op_offload))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_free(sched: *mut Sched) {
    if !sched.is_null() {
        // SAFETY: made by ggml_backend_sched_new and freed once.
        drop(unsafe { Box::from_raw(sched) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_reserve_size(sched_: *mut Sched, measure_graph: *mut Graph, sizes: *mut usize) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let s = unsafe { arg!(sched_) };
    crate::ggml_assert!(!sizes.is_null(), "GGML_ASSERT(sizes) failed");
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let result = unsafe { s.reserve_size(arg!(measure_graph)) };
    // SAFETY: `sizes` holds one entry per backend of the scheduler (ggml's contract).
    unsafe { std::slice::from_raw_parts_mut(sizes, result.len()) }.copy_from_slice(&result);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_reserve(sched_: *mut Sched, measure_graph: *mut Graph) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).reserve(arg!(measure_graph)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_n_backends(sched_: *mut Sched) -> c_int {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).n_backends() as c_int }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_backend(sched_: *mut Sched, i: c_int) -> *mut Backend {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let s = unsafe { arg!(sched_) };
    crate::ggml_assert!(i >= 0 && (i as usize) < s.n_backends(), "backend index {} out of range", i);
    s.backend(i as usize).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_n_splits(sched_: *mut Sched) -> c_int {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).n_splits() as c_int }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_n_copies(sched_: *mut Sched) -> c_int {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).n_copies() as c_int }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_buffer_type(sched_: *mut Sched, backend: *mut Backend) -> *mut BufferType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).buffer_type(backend).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_buffer_size(sched_: *mut Sched, backend: *mut Backend) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).buffer_size(backend) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_set_tensor_backend(sched_: *mut Sched, node: *mut Tensor, backend: *mut Backend) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).set_tensor_backend(arg!(node), backend) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_tensor_backend(sched_: *mut Sched, node: *mut Tensor) -> *mut Backend {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let s = unsafe { arg!(sched_) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { opt_arg!(node).and_then(|t| s.tensor_backend(t)).map_or(std::ptr::null_mut(), BackendPtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_split_graph(sched_: *mut Sched, graph_: *mut Graph) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).split_graph(arg!(graph_)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_alloc_graph(sched_: *mut Sched, graph_: *mut Graph) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).alloc_graph(arg!(graph_)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_graph_compute(sched_: *mut Sched, graph_: *mut Graph) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).graph_compute(arg!(graph_)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_graph_compute_async(sched_: *mut Sched, graph_: *mut Graph) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).graph_compute_async(arg!(graph_)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_synchronize(sched_: *mut Sched) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).synchronize() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_reset(sched_: *mut Sched) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).reset() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_set_eval_callback(
    sched_: *mut Sched,
    callback: Option<SchedEvalCallback>,
    user_data: *mut c_void,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(sched_).set_eval_callback(callback, user_data) };
}
