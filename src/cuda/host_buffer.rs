//! "CUDA_Host": page-locked host memory, which the GPU reads and writes without staging, so
//! copies from it can run asynchronously. It is host memory for everyone else (the CPU
//! backend computes in it). When page-locked memory cannot be had, a plain CPU buffer is
//! returned instead, as ggml does. Also the registration of a caller's host memory
//! (`ggml_backend_cuda_register_host_buffer`).

use std::ffi::{c_char, c_void};

use super::{gpus, registry};
use crate::backend::buffer::{BufferTypePtr, StaticBufferType};
use crate::backend::host_buffer::{
    cpu_buffer_type_alloc_buffer, cpu_buffer_type_is_host, host_alignment, host_buffer_freed_by,
};
use crate::backend::interface::{Buffer, BufferType, BufferTypeInterface};

static HOST: StaticBufferType = StaticBufferType::new(
    BufferTypeInterface {
        get_name: Some(get_name),
        alloc_buffer: Some(alloc_buffer),
        get_alignment: Some(host_alignment),
        get_max_size: None,
        get_alloc_size: None,
        is_host: Some(cpu_buffer_type_is_host),
    },
    std::ptr::null_mut(),
);

/// `ggml_backend_cuda_host_buffer_type`: its device is CUDA0.
pub fn buffer_type() -> BufferTypePtr {
    let buft = HOST.as_ptr();
    // SAFETY: the static type is only written here, with the same value every time, before
    // its address is handed out.
    unsafe {
        if (*buft).device.is_null() {
            (*buft).device = registry::devices().first().copied().unwrap_or(std::ptr::null_mut());
        }
    }
    HOST.handle()
}

unsafe extern "C" fn get_name(_buft: *mut BufferType) -> *const c_char {
    c"CUDA_Host".as_ptr()
}

unsafe extern "C" fn free_pinned(buffer: *mut Buffer) {
    let Some(gpu) = gpus::get(0) else { unreachable!("page-locked buffers exist only where there is a GPU") };
    // SAFETY: the context of a page-locked buffer is the memory `alloc_buffer` got from
    // alloc_host, released once, with the buffer.
    unsafe { gpu.free_host((*buffer).context.cast()) };
}

unsafe extern "C" fn alloc_buffer(buft: *mut BufferType, size: usize) -> *mut Buffer {
    let pinned = gpus::get(0).map(|gpu| gpu.alloc_host(size.max(1)));
    match pinned {
        Some(Ok(ptr)) => host_buffer_freed_by(buft, ptr.cast(), size, free_pinned).as_ptr(),
        failed => {
            if let Some(Err(e)) = failed {
                crate::log_warn!(
                    "ggml_backend_cuda_host_buffer_type_alloc_buffer: no page-locked memory for {:.2} MiB ({}), using a plain CPU buffer\n",
                    size as f64 / (1 << 20) as f64,
                    e
                );
            }
            // SAFETY: `buft` is our static type, alive for the process.
            unsafe { cpu_buffer_type_alloc_buffer(buft, size) }
        }
    }
}

/// `ggml_backend_cuda_register_host_buffer`: page-locks `size` bytes of the caller's memory
/// at `ptr`; false when that is not possible. As in ggml, only when the environment sets
/// `GGML_CUDA_REGISTER_HOST`: page-locking a whole model is slow and may fail late.
///
/// # Safety
/// `ptr` is valid for `size` bytes until it is unregistered.
pub unsafe fn register(ptr: *mut c_void, size: usize) -> bool {
    if std::env::var_os("GGML_CUDA_REGISTER_HOST").is_none() {
        return false;
    }
    let Some(gpu) = gpus::get(0) else { return false };
    // SAFETY: the caller vouches for `size` bytes at `ptr` until it unregisters them.
    match unsafe { gpu.register_host(ptr.cast(), size) } {
        Ok(()) => true,
        Err(e) => {
            crate::log_debug!(
                "ggml_backend_cuda_register_host_buffer: {:.2} MiB not registered: {}\n",
                size as f64 / (1 << 20) as f64,
                e
            );
            false
        }
    }
}

/// `ggml_backend_cuda_unregister_host_buffer`.
///
/// # Safety
/// `ptr` is null or was registered by [`register`].
pub unsafe fn unregister(ptr: *mut c_void) {
    if std::env::var_os("GGML_CUDA_REGISTER_HOST").is_none() {
        return;
    }
    if let (false, Some(gpu)) = (ptr.is_null(), gpus::get(0)) {
        // SAFETY: the caller registered `ptr` before.
        unsafe { gpu.unregister_host(ptr.cast()) };
    }
}

/// [`register`] with its C signature, for the registry's proc address.
///
/// # Safety
/// As [`register`].
pub unsafe extern "C" fn register_c(ptr: *mut c_void, size: usize) -> bool {
    // SAFETY: the caller's contract.
    unsafe { register(ptr, size) }
}

/// [`unregister`] with its C signature, for the registry's proc address.
///
/// # Safety
/// As [`unregister`].
pub unsafe extern "C" fn unregister_c(ptr: *mut c_void) {
    // SAFETY: the caller's contract.
    unsafe { unregister(ptr) }
}
