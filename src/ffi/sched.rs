//! The backend scheduler (`ggml_backend_sched_*`): thin wrappers over
//! [`crate::sched::Sched`], which C sees as the opaque `ggml_backend_sched_t`.

use std::ffi::{c_int, c_void};

use crate::backend::backend::BackendPtr;
use crate::backend::buffer::BufferTypePtr;
use crate::backend::interface::{Backend, BufferType};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::Tensor;
use crate::ffi::{opt_tensor, tensor};
use crate::sched::{Sched, SchedEvalCallback};

/// The scheduler behind a handle returned by `ggml_backend_sched_new`.
#[track_caller]
fn sched<'a>(ptr: *mut Sched) -> &'a mut Sched {
    // SAFETY: handles come from ggml_backend_sched_new (a leaked Box) and are used until
    // ggml_backend_sched_free, one call at a time (ggml's contract).
    match unsafe { ptr.as_mut() } {
        Some(s) => s,
        None => crate::ggml_abort!("GGML_ASSERT(sched) failed"),
    }
}

#[track_caller]
fn graph<'a>(ptr: *mut Graph) -> &'a mut Graph {
    // SAFETY: C passes live graphs made by ggml_new_graph* (or views of them).
    match unsafe { ptr.as_mut() } {
        Some(g) => g,
        None => crate::ggml_abort!("NULL graph passed to the scheduler"),
    }
}

#[track_caller]
fn backend(ptr: *mut Backend) -> BackendPtr {
    // SAFETY: backends passed to the scheduler are live for as long as it is.
    match unsafe { BackendPtr::from_raw(ptr) } {
        Some(b) => b,
        None => crate::ggml_abort!("NULL backend passed to the scheduler"),
    }
}

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
    crate::ggml_assert!(!backends.is_null(), "ggml_backend_sched_new: NULL backend list");
    let n = n_backends as usize;
    // SAFETY: C passes `n_backends` backends, and as many buffer types when `bufts` is set.
    let backend_list: Vec<BackendPtr> =
        unsafe { std::slice::from_raw_parts(backends, n) }.iter().map(|&b| backend(b)).collect();
    let buft_list: Option<Vec<BufferTypePtr>> = (!bufts.is_null()).then(|| {
        // SAFETY: as above.
        let raw = unsafe { std::slice::from_raw_parts(bufts, n) };
        raw.iter()
            // SAFETY: buffer types are statics of their backends.
            .map(|&b| match unsafe { BufferTypePtr::from_raw(b) } {
                Some(b) => b,
                None => crate::ggml_abort!("ggml_backend_sched_new: NULL buffer type"),
            })
            .collect()
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
    let s = sched(sched_);
    crate::ggml_assert!(!sizes.is_null(), "GGML_ASSERT(sizes) failed");
    let result = s.reserve_size(graph(measure_graph));
    // SAFETY: `sizes` holds one entry per backend of the scheduler (ggml's contract).
    unsafe { std::slice::from_raw_parts_mut(sizes, result.len()) }.copy_from_slice(&result);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_reserve(sched_: *mut Sched, measure_graph: *mut Graph) -> bool {
    sched(sched_).reserve(graph(measure_graph))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_n_backends(sched_: *mut Sched) -> c_int {
    sched(sched_).n_backends() as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_backend(sched_: *mut Sched, i: c_int) -> *mut Backend {
    let s = sched(sched_);
    crate::ggml_assert!(i >= 0 && (i as usize) < s.n_backends(), "backend index {} out of range", i);
    s.backend(i as usize).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_n_splits(sched_: *mut Sched) -> c_int {
    sched(sched_).n_splits() as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_n_copies(sched_: *mut Sched) -> c_int {
    sched(sched_).n_copies() as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_buffer_type(sched_: *mut Sched, backend: *mut Backend) -> *mut BufferType {
    sched(sched_).buffer_type(backend).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_buffer_size(sched_: *mut Sched, backend: *mut Backend) -> usize {
    sched(sched_).buffer_size(backend)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_set_tensor_backend(sched_: *mut Sched, node: *mut Tensor, backend: *mut Backend) {
    sched(sched_).set_tensor_backend(tensor(node), backend);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_get_tensor_backend(sched_: *mut Sched, node: *mut Tensor) -> *mut Backend {
    let s = sched(sched_);
    opt_tensor(node).and_then(|t| s.tensor_backend(t)).map_or(std::ptr::null_mut(), BackendPtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_split_graph(sched_: *mut Sched, graph_: *mut Graph) {
    sched(sched_).split_graph(graph(graph_));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_alloc_graph(sched_: *mut Sched, graph_: *mut Graph) -> bool {
    sched(sched_).alloc_graph(graph(graph_))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_graph_compute(sched_: *mut Sched, graph_: *mut Graph) -> Status {
    sched(sched_).graph_compute(graph(graph_))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_graph_compute_async(sched_: *mut Sched, graph_: *mut Graph) -> Status {
    sched(sched_).graph_compute_async(graph(graph_))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_synchronize(sched_: *mut Sched) {
    sched(sched_).synchronize();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_reset(sched_: *mut Sched) {
    sched(sched_).reset();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_sched_set_eval_callback(
    sched_: *mut Sched,
    callback: Option<SchedEvalCallback>,
    user_data: *mut c_void,
) {
    sched(sched_).set_eval_callback(callback, user_data);
}
