//! `ggml-rpc.h`: backends, buffer types and registries on remote servers, and the server.

use std::ffi::{CStr, c_char, c_void};
use std::path::Path;
use std::ptr::NonNull;

use crate::backend::backend::BackendPtr;
use crate::backend::buffer::BufferTypePtr;
use crate::backend::device::DevicePtr;
use crate::backend::interface::{Backend, BufferType, Device, Reg};
use crate::backend::reg::RegPtr;
use crate::ffi::handle::opt_arg;
use crate::rpc::client::{backend, buffer_type, device, registry};

/// The endpoint argument of `export`, which ggml requires (NULL aborts, naming `export`).
#[track_caller]
fn endpoint<'a>(ptr: *const c_char, export: &str) -> std::borrow::Cow<'a, str> {
    if ptr.is_null() {
        crate::ggml_abort!("NULL endpoint passed to {}", export);
    }
    // SAFETY: a non-null endpoint is a C string that outlives the call (the API's contract).
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_init(endpoint_: *const c_char, device: u32) -> *mut Backend {
    registry::device(&endpoint(endpoint_, "ggml_backend_rpc_init"), device)
        .and_then(|d| d.init_backend(None))
        .map_or(std::ptr::null_mut(), BackendPtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_is_rpc(b: *mut Backend) -> bool {
    // SAFETY: a non-null backend handle points to a live backend (ggml's contract).
    unsafe { opt_arg!(b) }.is_some_and(|b: BackendPtr| backend::is_rpc(b))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_buffer_type(endpoint_: *const c_char, device: u32) -> *mut BufferType {
    let endpoint = endpoint(endpoint_, "ggml_backend_rpc_buffer_type");
    registry::device(&endpoint, device)
        .and_then(|d| buffer_type::buffer_type(&endpoint, device, d))
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
pub extern "C" fn ggml_backend_rpc_add_server(endpoint_: *const c_char) -> *mut Reg {
    registry::add_server(&endpoint(endpoint_, "ggml_backend_rpc_add_server"))
        .map_or(std::ptr::null_mut(), RegPtr::as_ptr)
}

/// Serves `devices` at `endpoint` until the process ends; returns when it cannot start.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_rpc_start_server(
    endpoint_: *const c_char,
    cache_dir: *const c_char,
    n_threads: usize,
    n_devices: usize,
    devices: *mut *mut Device,
) {
    let endpoint = endpoint(endpoint_, "ggml_backend_rpc_start_server");
    // SAFETY: a non-null cache directory is a C string (the API's contract).
    let cache_dir = (!cache_dir.is_null()).then(|| unsafe { CStr::from_ptr(cache_dir) }.to_string_lossy().into_owned());
    let devices: Vec<DevicePtr> = if devices.is_null() || n_devices == 0 {
        Vec::new()
    } else {
        // SAFETY: the API's contract: `n_devices` handles, each live (a NULL one is dropped).
        unsafe { std::slice::from_raw_parts(devices, n_devices) }
            .iter()
            // SAFETY: as above.
            .filter_map(|&d| unsafe { DevicePtr::from_raw(d) })
            .collect()
    };
    crate::rpc::server::start_server(&endpoint, cache_dir.as_deref().map(Path::new), n_threads, &devices);
}

/// The "RPC" registry's extra functions by name: the exports of this file.
pub fn proc_address(name: &CStr) -> Option<NonNull<c_void>> {
    let f: *mut c_void = match name.to_bytes() {
        b"ggml_backend_rpc_add_server" => ggml_backend_rpc_add_server as *mut c_void,
        b"ggml_backend_rpc_start_server" => ggml_backend_rpc_start_server as *mut c_void,
        _ => return None,
    };
    NonNull::new(f)
}
