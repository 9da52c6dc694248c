//! Buffer types, buffers, tensor data access, the CPU buffer types, the tensor allocator and
//! context allocation (`ggml-backend.h`, `ggml-alloc.h`), plus the backend-author helpers of
//! `ggml-backend-impl.h` that plugins import.

use std::ffi::{c_char, c_void};

use crate::backend::buffer::{self, BufferPtr};
use crate::backend::interface::{Buffer, BufferInterface, BufferType, BufferUsage, Device};
use crate::backend::multi_buffer;
use crate::backend::tallocr::Tallocr;
use crate::backend::traits::{Copy2d, strided_span};
use crate::backend::{host_buffer, tallocr};
use crate::core::context::Context;
use crate::core::log::abort_at_caller;
use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::Tensor;
use crate::ffi::handle::{arg, host_bytes, host_bytes_mut, opt_arg};

/// The caller's array of `n` buffers.
#[track_caller]
fn buffer_array<'a>(ptr: *const *mut Buffer, n: usize) -> &'a [*mut Buffer] {
    if ptr.is_null() {
        abort_at_caller("NULL buffer array");
    }
    // SAFETY: the caller passes an array of `n` buffer pointers.
    unsafe { std::slice::from_raw_parts(ptr, n) }
}

#[track_caller]
fn span_2d(size: usize, n_copies: usize, stride_data: usize) -> usize {
    match strided_span(size, n_copies, stride_data) {
        Some(n) => n,
        None => abort_at_caller(&format!("2-D copy of {} rows overflows the address space", n_copies)),
    }
}

// ---------------------------------------------------------------------------------------------
// Buffer types

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_name(b: *mut BufferType) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).name() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_alloc_buffer(b: *mut BufferType, size: usize) -> *mut Buffer {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).alloc_buffer(size).map_or(std::ptr::null_mut(), BufferPtr::as_ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_get_alignment(b: *mut BufferType) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).alignment() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_get_max_size(b: *mut BufferType) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).max_size() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_get_alloc_size(b: *mut BufferType, t: *const Tensor) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).alloc_size(arg!(t)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_is_host(b: *mut BufferType) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).is_host() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_get_device(b: *mut BufferType) -> *mut Device {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).device() }
}

// ---------------------------------------------------------------------------------------------
// Buffers

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_init(
    buft: *mut BufferType,
    iface: BufferInterface,
    context: *mut c_void,
    size: usize,
) -> *mut Buffer {
    BufferPtr::new(buft, iface, context, size).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_name(b: *mut Buffer) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).name() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_free(b: *mut Buffer) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        if let Some(b) = opt_arg!(b) {
            b.free();
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_get_base(b: *mut Buffer) -> *mut c_void {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).base() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_get_size(b: *mut Buffer) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).size() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_init_tensor(b: *mut Buffer, t: *mut Tensor) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).init_tensor(arg!(t)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_get_alignment(b: *mut Buffer) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).alignment() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_get_max_size(b: *mut Buffer) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).max_size() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_get_alloc_size(b: *mut Buffer, t: *const Tensor) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).alloc_size(arg!(t)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_clear(b: *mut Buffer, value: u8) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).clear(value) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_is_host(b: *mut Buffer) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).is_host() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_set_usage(b: *mut Buffer, usage: BufferUsage) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).set_usage(usage) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_get_usage(b: *mut Buffer) -> BufferUsage {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).usage() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_get_type(b: *mut Buffer) -> *mut BufferType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).buft }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_reset(b: *mut Buffer) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).reset() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_copy_tensor(src: *const Tensor, dst: *mut Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { buffer::buffer_copy_tensor(arg!(src), arg!(dst)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_multi_buffer_alloc_buffer(buffers: *mut *mut Buffer, n_buffers: usize) -> *mut Buffer {
    crate::ggml_assert!(n_buffers > 0, "a multi-buffer needs at least one buffer");
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let parts: Vec<BufferPtr> = unsafe { buffer_array(buffers, n_buffers).iter().map(|&b| arg!(b)).collect() };
    multi_buffer::multi_buffer_new(&parts).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_is_multi_buffer(b: *mut Buffer) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(b).is_multi_buffer() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_multi_buffer_set_usage(b: *mut Buffer, usage: BufferUsage) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { multi_buffer::multi_buffer_set_usage(arg!(b), usage) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_alloc_size_may_expand(op: Op) -> bool {
    buffer::op_alloc_size_may_expand(op)
}

// ---------------------------------------------------------------------------------------------
// Tensor data

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_set(t: *mut Tensor, data: *const c_void, offset: usize, size: usize) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    buffer::tensor_set(t, host_bytes(data, size), offset)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_get(t: *const Tensor, data: *mut c_void, offset: usize, size: usize) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    buffer::tensor_get(t, host_bytes_mut(data, size), offset)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_set_2d(
    t: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    let data = host_bytes(data, span_2d(size, n_copies, stride_data));
    buffer::tensor_set_2d(t, data, Copy2d { offset, size, n_copies, stride_tensor, stride_data })
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_get_2d(
    t: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    let data = host_bytes_mut(data, span_2d(size, n_copies, stride_data));
    buffer::tensor_get_2d(t, data, Copy2d { offset, size, n_copies, stride_tensor, stride_data })
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_memset(t: *mut Tensor, value: u8, offset: usize, size: usize) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { buffer::tensor_memset(arg!(t), value, offset, size) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_copy(src: *const Tensor, dst: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { buffer::tensor_copy(arg!(src), arg!(dst)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_tensor_alloc(b: *mut Buffer, t: *mut Tensor, addr: *mut c_void) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { buffer::tensor_alloc(arg!(b), t, addr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_view_init(t: *mut Tensor) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { buffer::view_init(arg!(t)) }
}

// ---------------------------------------------------------------------------------------------
// CPU buffer types

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_buffer_type() -> *mut BufferType {
    host_buffer::cpu_buffer_type().as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_buffer_from_ptr(ptr: *mut c_void, size: usize) -> *mut Buffer {
    host_buffer::cpu_buffer_from_ptr(ptr, size).as_ptr()
}

// ---------------------------------------------------------------------------------------------
// Tensor allocator and context allocation

#[unsafe(no_mangle)]
pub extern "C" fn ggml_tallocr_new(b: *mut Buffer) -> Tallocr {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { Tallocr::new(arg!(b)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_tallocr_alloc(talloc: *mut Tallocr, t: *mut Tensor) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(talloc).alloc(arg!(t)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_alloc_ctx_tensors_from_buft_size(ctx: *mut Context, b: *mut BufferType) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tallocr::alloc_ctx_tensors_size(arg!(ctx), arg!(b)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_alloc_ctx_tensors_from_buft(ctx: *mut Context, b: *mut BufferType) -> *mut Buffer {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tallocr::alloc_ctx_tensors(arg!(ctx), arg!(b)).map_or(std::ptr::null_mut(), BufferPtr::as_ptr) }
}
