//! `ggml-rpc.h`: backends, buffer types and registries on remote servers, and the server.

use std::ffi::c_char;

use crate::backend::backend::BackendPtr;
use crate::backend::buffer::BufferTypePtr;
use crate::backend::interface::{Backend, BufferType, Device, Reg};
use crate::ffi::handle::opt_arg;
use crate::rpc::client::{backend, buffer_type, device, registry};
use crate::rpc::endpoint_arg;

/// The endpoint argument of `export`, which ggml requires.
#[track_caller]
fn endpoint<'a>(ptr: *const c_char, export: &str) -> std::borrow::Cow<'a, str> {
    // SAFETY: a non-null endpoint is a C string that outlives the call (the API's contract).
    unsafe { endpoint_arg(ptr, export) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_init(endpoint_: *const c_char, device: u32) -> *mut Backend {
    backend::init(&endpoint(endpoint_, "ggml_backend_rpc_init"), device).unwrap_or(std::ptr::null_mut())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_is_rpc(b: *mut Backend) -> bool {
    // SAFETY: a non-null backend handle points to a live backend (ggml's contract).
    unsafe { opt_arg!(b) }.is_some_and(|b: BackendPtr| backend::is_rpc(b))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_buffer_type(endpoint_: *const c_char, device: u32) -> *mut BufferType {
    buffer_type::buffer_type(&endpoint(endpoint_, "ggml_backend_rpc_buffer_type"), device)
        .map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_get_device_memory(
    endpoint_: *const c_char,
    device: u32,
    free: *mut usize,
    total: *mut usize,
) {
    let endpoint = endpoint(endpoint_, "ggml_backend_rpc_get_device_memory");
    if free.is_null() || total.is_null() {
        crate::ggml_abort!("NULL free or total passed to ggml_backend_rpc_get_device_memory");
    }
    let (f, t) = device::memory(&endpoint, device);
    // SAFETY: both out-pointers are non-null and, by the API's contract, writable.
    unsafe {
        *free = f;
        *total = t;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_reg() -> *mut Reg {
    registry::base().as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_add_server(endpoint: *const c_char) -> *mut Reg {
    // SAFETY: the same contract; the registry's proc address hands out the same function.
    unsafe { registry::add_server_c(endpoint) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_start_server(
    endpoint: *const c_char,
    cache_dir: *const c_char,
    n_threads: usize,
    n_devices: usize,
    devices: *mut *mut Device,
) {
    // SAFETY: the same contract; the registry's proc address hands out the same function.
    unsafe { crate::rpc::start::start_server_c(endpoint, cache_dir, n_threads, n_devices, devices) }
}
