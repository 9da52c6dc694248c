//! Backends, events, devices, registries and plugin loading (`ggml-backend.h`), plus the
//! CPU registry entry point of `ggml-cpu.h`.

use std::ffi::{CStr, OsStr, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::NonNull;

use crate::backend::backend::{self as backend_ops, BackendPtr, EvalCallback, EventPtr, GraphCopy};
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::device::DevicePtr;
use crate::backend::interface::{
    Backend, Buffer, BufferType, DevProps, DevType, Device, Event, GraphPlan, GuidPtr, Reg,
};
use crate::backend::reg::RegPtr;
use crate::backend::tallocr;
use crate::backend::traits::Copy2d;
use crate::core::context::Context;
use crate::core::graph::{Graph, GraphPtr};
use crate::core::log::abort_at_caller;
use crate::core::status::Status;
use crate::core::tensor::Tensor;
use crate::cpu::device as cpu_device;
use crate::ffi::handle::{arg, host_bytes, host_bytes_mut, opt_arg};
use crate::registry;
use crate::registry::loader;

/// Host bytes spanned by a 2-D copy's runs.
#[track_caller]
fn span_2d(c: &Copy2d) -> usize {
    match c.host_span() {
        Some(n) => n,
        None => abort_at_caller(&format!("2-D copy of {} rows overflows the address space", c.n_copies)),
    }
}

/// An optional C string argument (NULL allowed).
fn opt_c_str<'a>(ptr: *const c_char) -> Option<&'a CStr> {
    // SAFETY: non-null strings passed to ggml are NUL-terminated and outlive the call.
    (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) })
}

fn c_path(path: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(path))
}

// ---- backend (stream) ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_guid(b: *mut Backend) -> GuidPtr {
    // SAFETY: the C caller's contract: a non-NULL handle is live; NULL is answered with NULL.
    unsafe { opt_arg!(b) }.map_or(std::ptr::null_mut(), BackendPtr::guid)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_name(b: *mut Backend) -> *const c_char {
    // SAFETY: the C caller's contract: a non-NULL handle is live; NULL is answered with "NULL".
    match unsafe { opt_arg!(b) } {
        Some(b) => b.name(),
        None => c"NULL".as_ptr(),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_free(b: *mut Backend) {
    // SAFETY: the C caller's contract: a non-NULL handle is live; NULL is ignored.
    if let Some(b) = unsafe { opt_arg!(b) } {
        b.free();
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_get_default_buffer_type(b: *mut Backend) -> *mut BufferType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).device().buffer_type_opt().map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_alloc_buffer(b: *mut Backend, size: usize) -> *mut Buffer {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).alloc_buffer(size).map_or(std::ptr::null_mut(), BufferPtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_get_alignment(b: *mut Backend) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).alignment() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_get_max_size(b: *mut Backend) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).max_size() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_set_async(
    b: *mut Backend,
    t: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { b.tensor_set_async(arg!(t), host_bytes(data, size), offset) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_get_async(
    b: *mut Backend,
    t: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { b.tensor_get_async(arg!(t), host_bytes_mut(data, size), offset) };
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_backend_tensor_set_2d_async(
    b: *mut Backend,
    t: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    let c = Copy2d { offset, size, n_copies, stride_tensor, stride_data };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { b.tensor_set_2d_async(arg!(t), host_bytes(data, span_2d(&c)), c) };
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_backend_tensor_get_2d_async(
    b: *mut Backend,
    t: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    let c = Copy2d { offset, size, n_copies, stride_tensor, stride_data };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { b.tensor_get_2d_async(arg!(t), host_bytes_mut(data, span_2d(&c)), c) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_copy_async(
    backend_src: *mut Backend,
    backend_dst: *mut Backend,
    src: *const Tensor,
    dst: *mut Tensor,
) {
    // SAFETY: the C caller's contract: a non-NULL handle is live; ggml only requires the backends where it uses them.
    let (backend_src, backend_dst) = unsafe { (opt_arg!(backend_src), opt_arg!(backend_dst)) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { backend_ops::tensor_copy_async(backend_src, backend_dst, arg!(src), arg!(dst)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_synchronize(b: *mut Backend) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).synchronize() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_graph_plan_create(b: *mut Backend, g: *mut Graph) -> GraphPlan {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { b.graph_plan_create(arg!(g)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_graph_plan_free(b: *mut Backend, plan: GraphPlan) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: C callers pass plans made by this backend's graph_plan_create (ggml's contract).
    unsafe { b.graph_plan_free(plan) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_graph_plan_compute(b: *mut Backend, plan: GraphPlan) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: as in ggml_backend_graph_plan_free.
    unsafe { b.graph_plan_compute(plan) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_graph_compute(b: *mut Backend, g: *mut Graph) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { b.graph_compute(arg!(g)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_graph_compute_async(b: *mut Backend, g: *mut Graph) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { b.graph_compute_async(arg!(g)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_supports_op(b: *mut Backend, op: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).supports_op(arg!(op)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_supports_buft(b: *mut Backend, bt: *mut BufferType) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).supports_buft(arg!(bt)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_offload_op(b: *mut Backend, op: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).offload_op(arg!(op)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_get_device(b: *mut Backend) -> *mut Device {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).device_ptr() }
}

/// `ggml_backend_alloc_ctx_tensors`: the context's tensors in one buffer of the backend's
/// default type.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_alloc_ctx_tensors(ctx: *mut Context, b: *mut Backend) -> *mut Buffer {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let buft = unsafe { arg!(b).default_buffer_type() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tallocr::alloc_ctx_tensors(arg!(ctx), buft).map_or(std::ptr::null_mut(), BufferPtr::as_ptr) }
}

// ---- events ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_event_new(d: *mut Device) -> *mut Event {
    // SAFETY: the C caller's contract: a non-NULL handle is live; a NULL device gets no event.
    backend_ops::event_new(unsafe { opt_arg!(d) }).map_or(std::ptr::null_mut(), EventPtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_event_free(e: *mut Event) {
    // SAFETY: the C caller's contract: a non-NULL handle is live; NULL is ignored.
    if let Some(e) = unsafe { opt_arg!(e) } {
        e.free();
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_event_record(e: *mut Event, b: *mut Backend) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).event_record(arg!(e)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_event_synchronize(e: *mut Event) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(e).synchronize() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_event_wait(b: *mut Backend, e: *mut Event) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).event_wait(arg!(e)) };
}

// ---- devices ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_name(d: *mut Device) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).name() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_description(d: *mut Device) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).description() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_memory(d: *mut Device, free: *mut usize, total: *mut usize) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let (f, t) = unsafe { arg!(d).memory() };
    crate::ggml_assert!(!free.is_null() && !total.is_null(), "NULL memory out-pointer");
    // SAFETY: checked non-null; the caller provides the two values to fill.
    unsafe {
        *free = f;
        *total = t;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_type(d: *mut Device) -> DevType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).dev_type() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_get_props(d: *mut Device, props: *mut DevProps) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let p = unsafe { arg!(d).props() };
    crate::ggml_assert!(!props.is_null(), "NULL props out-pointer");
    // SAFETY: checked non-null; the caller provides a struct to fill.
    unsafe { props.write(p) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_backend_reg(d: *mut Device) -> *mut Reg {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).reg() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_init(d: *mut Device, params: *const c_char) -> *mut Backend {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).init_backend(opt_c_str(params)).map_or(std::ptr::null_mut(), BackendPtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_buffer_type(d: *mut Device) -> *mut BufferType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).buffer_type_opt().map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_host_buffer_type(d: *mut Device) -> *mut BufferType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).host_buffer_type().map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_buffer_from_host_ptr(
    d: *mut Device,
    ptr: *mut c_void,
    size: usize,
    max_tensor_size: usize,
) -> *mut Buffer {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let d = unsafe { arg!(d) };
    // SAFETY: the caller hands over `size` bytes at `ptr` for the buffer's lifetime (ggml's
    // contract).
    unsafe { d.buffer_from_host_ptr(ptr, size, max_tensor_size) }.map_or(std::ptr::null_mut(), BufferPtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_supports_op(d: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).supports_op(arg!(op)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_supports_buft(d: *mut Device, bt: *mut BufferType) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).supports_buft(arg!(bt)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_offload_op(d: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(d).offload_op(arg!(op)) }
}

// ---- registries ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_reg_name(r: *mut Reg) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(r).name() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_reg_dev_count(r: *mut Reg) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(r).dev_count() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_reg_dev_get(r: *mut Reg, index: usize) -> *mut Device {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(r).dev_get(index).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_reg_get_proc_address(r: *mut Reg, name: *const c_char) -> *mut c_void {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let r = unsafe { arg!(r) };
    match opt_c_str(name) {
        Some(name) => r.proc_address(name),
        None => crate::ggml_abort!("NULL function name passed to ggml_backend_reg_get_proc_address"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_register(r: *mut Reg) {
    // SAFETY: the C caller's contract: a non-NULL handle is live; NULL is ignored, as in ggml.
    if let Some(r) = unsafe { opt_arg!(r) } {
        registry::register_backend(r, None);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_device_register(d: *mut Device) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { registry::register_device(arg!(d)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_reg_count() -> usize {
    registry::reg_count()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_reg_get(index: usize) -> *mut Reg {
    registry::reg_get(index).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_reg_by_name(name: *const c_char) -> *mut Reg {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { registry::reg_by_name(arg!(name)).map_or(std::ptr::null_mut(), RegPtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_count() -> usize {
    registry::dev_count()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_get(index: usize) -> *mut Device {
    registry::dev_get(index).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_by_name(name: *const c_char) -> *mut Device {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { registry::dev_by_name(arg!(name)).map_or(std::ptr::null_mut(), DevicePtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_dev_by_type(t: DevType) -> *mut Device {
    registry::dev_by_type(t).map_or(std::ptr::null_mut(), DevicePtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_init_by_name(name: *const c_char, params: *const c_char) -> *mut Backend {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { registry::init_by_name(arg!(name), opt_c_str(params)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_init_by_type(t: DevType, params: *const c_char) -> *mut Backend {
    registry::init_by_type(t, opt_c_str(params))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_init_best() -> *mut Backend {
    registry::init_best()
}

// ---- plugins ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_load(path: *const c_char) -> *mut Reg {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { loader::load(c_path(arg!(path)), false).map_or(std::ptr::null_mut(), RegPtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_unload(r: *mut Reg) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { loader::unload(arg!(r)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_load_all() {
    loader::load_all_from_path(None);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_load_all_from_path(dir_path: *const c_char) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let dir = unsafe { (!dir_path.is_null()).then(|| c_path(arg!(dir_path))) };
    loader::load_all_from_path(dir);
}

// ---- CPU registry ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_reg() -> *mut Reg {
    cpu_device::cpu_reg().as_ptr()
}

// ---- utilities ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_graph_copy(b: *mut Backend, g: *mut Graph) -> GraphCopy {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let b = unsafe { arg!(b) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { backend_ops::graph_copy(b, arg!(g)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_graph_copy_free(copy: GraphCopy) {
    copy.free();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_compare_graph_backend(
    backend1: *mut Backend,
    backend2: *mut Backend,
    g: *mut Graph,
    callback: EvalCallback,
    user_data: *mut c_void,
    test_nodes: *const *const Tensor,
    num_test_nodes: usize,
) -> bool {
    let test_nodes: &[*const Tensor] = if num_test_nodes == 0 {
        &[]
    } else {
        crate::ggml_assert!(!test_nodes.is_null(), "NULL test_nodes with num_test_nodes = {}", num_test_nodes);
        // SAFETY: the caller passes an array of num_test_nodes tensor pointers.
        unsafe { std::slice::from_raw_parts(test_nodes, num_test_nodes) }
    };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let (backend1, backend2, g) = unsafe { (arg!(backend1), arg!(backend2), arg!(g)) };
    // SAFETY: `g` is a live graph (above); the caller's callback is made for its own user_data
    // (ggml's contract).
    unsafe {
        backend_ops::compare_graph_backend(
            backend1,
            backend2,
            GraphPtr::new(NonNull::from(g)),
            callback,
            user_data,
            test_nodes,
        )
    }
}
