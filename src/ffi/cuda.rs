//! `ggml-cuda.h`: backends, buffer types and the registry of the CUDA devices. On a machine
//! without a GPU (or without the driver) every function answers as for zero devices: no
//! abort, NULL with the reason logged where a device was asked for.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::NonNull;

use crate::backend::backend::BackendPtr;
use crate::backend::interface::{Backend, BackendFeature, BufferType, Reg};
use crate::cuda::{backend, device, gpus, host_buffer, registry};
use crate::ffi::handle::opt_arg;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_init(device: c_int) -> *mut Backend {
    let Ok(index) = usize::try_from(device) else {
        crate::log_error!("ggml_backend_cuda_init: invalid device {}\n", device);
        return std::ptr::null_mut();
    };
    match registry::devices().get(index) {
        Some(&dev) => dev.init_backend(None).map_or(std::ptr::null_mut(), BackendPtr::as_ptr),
        None => {
            crate::log_error!("ggml_backend_cuda_init: invalid device {}\n", device);
            std::ptr::null_mut()
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_is_cuda(b: *mut Backend) -> bool {
    // SAFETY: a non-null backend handle points to a live backend (ggml's contract).
    unsafe { opt_arg!(b) }.is_some_and(|b: BackendPtr| backend::is_cuda(b))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_buffer_type(device: c_int) -> *mut BufferType {
    registry::device_at(device, "ggml_backend_cuda_buffer_type")
        .map_or(std::ptr::null_mut(), |d| d.buffer_type.as_ptr())
}

/// NULL when there is no GPU: its buffers would have no device to serve (ggml asserts here).
#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_host_buffer_type() -> *mut BufferType {
    if gpus::all().is_empty() {
        crate::log_error!("ggml_backend_cuda_host_buffer_type: no CUDA device\n");
        return std::ptr::null_mut();
    }
    registry::devices();
    host_buffer::buffer_type().as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_get_device_count() -> c_int {
    registry::devices().len() as c_int
}

/// Writes the device's name, cut to fit and NUL-terminated, as snprintf would; an empty
/// string for a device that does not exist.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_get_device_description(device: c_int, description: *mut c_char, size: usize) {
    if description.is_null() || size == 0 {
        return;
    }
    let name = registry::device_at(device, "ggml_backend_cuda_get_device_description")
        .map_or(String::new(), |d| d.gpu.info().name.clone());
    let n = name.len().min(size - 1);
    // SAFETY: the caller's buffer holds `size` bytes (the API's contract); n < size.
    unsafe {
        std::ptr::copy_nonoverlapping(name.as_ptr(), description.cast::<u8>(), n);
        *description.add(n) = 0;
    }
}

/// Zeros for a device that does not exist.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_get_device_memory(device: c_int, free: *mut usize, total: *mut usize) {
    if free.is_null() || total.is_null() {
        crate::ggml_abort!("NULL free or total passed to ggml_backend_cuda_get_device_memory");
    }
    let (f, t) = registry::device_at(device, "ggml_backend_cuda_get_device_memory")
        .map_or((0, 0), |d| device::memory(d.gpu.as_ref()));
    // SAFETY: both out-pointers are non-null and, by the API's contract, writable.
    unsafe {
        *free = f;
        *total = t;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_register_host_buffer(buffer: *mut c_void, size: usize) -> bool {
    // SAFETY: the caller's memory stays valid until it unregisters it (the API's contract).
    unsafe { host_buffer::register(buffer, size) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_unregister_host_buffer(buffer: *mut c_void) {
    // SAFETY: the caller registered `buffer` before (the API's contract).
    unsafe { host_buffer::unregister(buffer) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cuda_reg() -> *mut Reg {
    registry::reg().as_ptr()
}

// ---- the registry's extra functions ----

/// What `ggml_backend_get_features` reports, ending with a NULL name.
struct Features([BackendFeature; 3]);
// SAFETY: the array only holds pointers to string literals.
unsafe impl Sync for Features {}

static FEATURES: Features = Features([
    BackendFeature { name: c"CUDA".as_ptr(), value: c"1".as_ptr() },
    BackendFeature {
        name: c"EMULATED".as_ptr(),
        value: if cfg!(feature = "cuda-emulator") { c"1".as_ptr() } else { c"0".as_ptr() },
    },
    BackendFeature { name: std::ptr::null(), value: std::ptr::null() },
]);

/// `ggml_backend_get_features_t` for the CUDA registry.
unsafe extern "C" fn get_features(_reg: *mut Reg) -> *const BackendFeature {
    FEATURES.0.as_ptr()
}

/// The CUDA registry's extra functions by name: the exports of this file under the names
/// the registry gives them.
pub fn proc_address(name: &CStr) -> Option<NonNull<c_void>> {
    let f: *mut c_void = match name.to_bytes() {
        b"ggml_backend_get_features" => get_features as *mut c_void,
        b"ggml_backend_register_host_buffer" => ggml_backend_cuda_register_host_buffer as *mut c_void,
        b"ggml_backend_unregister_host_buffer" => ggml_backend_cuda_unregister_host_buffer as *mut c_void,
        _ => return None,
    };
    NonNull::new(f)
}
