//! "CUDA_Host": page-locked host memory, which the GPU reads and writes without staging, so
//! copies from it can run asynchronously. It is host memory for everyone else (the CPU
//! backend computes in it). When page-locked memory cannot be had, a plain CPU buffer is
//! returned instead, as ggml does. Also the registration of a caller's host memory
//! (`ggml_backend_cuda_register_host_buffer`).

use std::ffi::{CStr, c_void};

use super::gpus;
use crate::backend::adapter::StaticBufferType;
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::device::DevicePtr;
use crate::backend::host_buffer::{TENSOR_ALIGNMENT, alloc_host_buffer, host_buffer_freed_by};
use crate::backend::traits::BufferType;

struct HostBufferType;

static HOST_TYPE: &dyn BufferType = &HostBufferType;
static HOST: StaticBufferType = StaticBufferType::new(&HOST_TYPE);

/// Makes CUDA0 the device of the host buffer type, as ggml does; the registry does this once,
/// when it makes the devices, before anyone can ask for the type.
pub fn set_device(cuda0: DevicePtr) {
    HOST.set_device(cuda0.as_ptr());
}

/// `ggml_backend_cuda_host_buffer_type`.
pub fn buffer_type() -> BufferTypePtr {
    HOST.handle()
}

impl BufferType for HostBufferType {
    fn get_name(&self) -> &CStr {
        c"CUDA_Host"
    }

    fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
        let pinned = gpus::get(0).map(|gpu| (gpu, gpu.alloc_host(size.max(1))));
        match pinned {
            Some((gpu, Ok(ptr))) => {
                let gpu = std::sync::Arc::clone(gpu);
                // SAFETY: the memory is what alloc_host gave, released once, with the buffer.
                let release = Box::new(move |p: *mut c_void| unsafe { gpu.free_host(p.cast()) });
                Some(host_buffer_freed_by(this, ptr.cast(), size, release))
            }
            failed => {
                if let Some((_, Err(e))) = failed {
                    crate::log_warn!(
                        "ggml_backend_cuda_host_buffer_type_alloc_buffer: no page-locked memory for {:.2} MiB ({}), using a plain CPU buffer\n",
                        size as f64 / (1 << 20) as f64,
                        e
                    );
                }
                alloc_host_buffer(this, size)
            }
        }
    }

    fn get_alignment(&self) -> usize {
        TENSOR_ALIGNMENT
    }

    fn is_host(&self) -> bool {
        true
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
