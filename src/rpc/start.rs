//! `ggml_backend_rpc_start_server` with its C signature. llama.cpp's server program reaches it
//! through the "RPC" registry's proc address, and `ffi` exports the same function, so there is
//! one entry point however it is found.

use std::ffi::{CStr, c_char};
use std::path::Path;

use crate::backend::device::DevicePtr;
use crate::backend::interface::Device;

/// Serves `devices` at `endpoint` until the process ends; returns when it cannot start.
///
/// # Safety
/// `endpoint` is a C string; `cache_dir` is NULL or a C string; `devices` is NULL or points to
/// `n_devices` live device handles.
pub unsafe extern "C" fn start_server_c(
    endpoint: *const c_char,
    cache_dir: *const c_char,
    n_threads: usize,
    n_devices: usize,
    devices: *mut *mut Device,
) {
    // SAFETY: the caller's contract.
    let endpoint = unsafe { super::endpoint_arg(endpoint, "ggml_backend_rpc_start_server") };
    // SAFETY: as above.
    let cache_dir = (!cache_dir.is_null()).then(|| unsafe { CStr::from_ptr(cache_dir) }.to_string_lossy().into_owned());
    let devices: Vec<DevicePtr> = if devices.is_null() || n_devices == 0 {
        Vec::new()
    } else {
        // SAFETY: the caller's contract: `n_devices` handles, each live (a NULL one is dropped).
        unsafe { std::slice::from_raw_parts(devices, n_devices) }
            .iter()
            // SAFETY: as above.
            .filter_map(|&d| unsafe { DevicePtr::from_raw(d) })
            .collect()
    };
    super::server::start_server(&endpoint, cache_dir.as_deref().map(Path::new), n_threads, &devices);
}
