//! Device memory: the buffer type `"CUDA<i>"` of each device and its buffers. A buffer is one
//! allocation; tensor data operations are copies on the device's default stream, finished
//! before they return, as ggml's synchronous buffer calls promise.

use std::ffi::{CStr, CString, c_void};
use std::ptr::NonNull;
use std::sync::Arc;

use super::gpu::{DevicePtr, Gpu, Stream};
use super::gpus;
use crate::backend::adapter::{leak_buffer_type, new_buffer};
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::device::DevicePtr as Device;
use crate::backend::traits::{Buffer, BufferType};
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};

/// Tensor data in device buffers is aligned for the widest loads the kernels make.
const ALIGNMENT: usize = 128;

/// Quantized rows are padded to a multiple of this many values, so that kernels reading whole
/// groups of a row never step past its allocation (ggml's `MATRIX_ROW_PADDING`).
pub const ROW_PADDING: i64 = 512;

/// The buffer type `"CUDA<i>"` of GPU `i`.
struct CudaBufferType {
    index: usize,
    name: CString,
}

/// The buffer type of GPU `index`, owned by `device`; it lives for the process.
pub fn new_type(device: Device, index: usize) -> BufferTypePtr {
    let name = CString::new(format!("CUDA{index}")).unwrap_or_default();
    leak_buffer_type(device.as_ptr(), Box::new(CudaBufferType { index, name }))
}

/// The bytes `tensor` takes in a device buffer: its data, plus the padding of its last row
/// when it is quantized and its rows are not a multiple of [`ROW_PADDING`] values.
pub fn alloc_size(tensor: &Tensor) -> usize {
    let mut size = tensor.nbytes();
    let ne0 = tensor.ne[0];
    if tensor.type_.is_quantized() && ne0 % ROW_PADDING != 0 {
        size += tensor.type_.row_size(ROW_PADDING - ne0 % ROW_PADDING);
    }
    size
}

impl BufferType for CudaBufferType {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
        let Some(gpu) = gpus::get(self.index) else { unreachable!("buffer types are made for the GPUs found") };
        // an empty buffer still gets a distinct address, as cudaMalloc of one byte would give
        match gpu.alloc(size.max(1)) {
            Ok(base) => Some(new_buffer(this, size, Box::new(CudaBuffer { gpu: Arc::clone(gpu), base, size }))),
            Err(e) => {
                crate::log_error!(
                    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating {:.2} MiB on device {} failed: {}\n",
                    size as f64 / (1 << 20) as f64,
                    self.index,
                    e
                );
                None
            }
        }
    }

    fn get_alignment(&self) -> usize {
        ALIGNMENT
    }

    fn get_alloc_size(&self, tensor: TensorPtr) -> usize {
        alloc_size(&tensor)
    }
}

/// One allocation of device memory.
pub struct CudaBuffer {
    pub gpu: Arc<dyn Gpu>,
    pub base: DevicePtr,
    size: usize,
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        // SAFETY: ggml frees a buffer only after the work that used it has been synchronized;
        // the allocation is freed once, with the buffer.
        unsafe { self.gpu.free(self.base) };
    }
}

/// Aborts with `what` when a GPU call failed: ggml's buffer calls have no way to report it,
/// and going on would compute with data that is not there.
fn check(result: super::gpu::GpuResult<()>, what: &str) {
    if let Err(e) = result {
        crate::ggml_abort!("CUDA error in {}: {}", what, e);
    }
}

/// Runs `op` on the default stream of `gpu` and waits for it.
fn on_default_stream(gpu: &dyn Gpu, what: &str, op: impl FnOnce(&dyn Gpu) -> super::gpu::GpuResult<()>) {
    check(op(gpu).and_then(|()| gpu.synchronize(Stream::DEFAULT)), what);
}

/// The device address of byte `offset` of `t`'s data.
fn at(t: &Tensor, offset: usize) -> DevicePtr {
    t.data as DevicePtr + offset as DevicePtr
}

impl Buffer for CudaBuffer {
    fn get_base(&self) -> Option<NonNull<c_void>> {
        NonNull::new(self.base as *mut c_void)
    }

    fn init_tensor(&self, tensor: TensorPtr) -> Status {
        // the padding of a quantized tensor is zeroed once, so that the values kernels read past
        // the row's end are zeros and not whatever the memory held
        let padded = alloc_size(&tensor);
        if tensor.view_src.is_null() && padded > tensor.nbytes() {
            let tail = at(&tensor, tensor.nbytes());
            // SAFETY: the allocator gave the tensor `padded` bytes from its data.
            on_default_stream(self.gpu.as_ref(), "init_tensor", |g| unsafe {
                g.memset(Stream::DEFAULT, tail, 0, padded - tensor.nbytes())
            });
        }
        Status::SUCCESS
    }

    fn memset_tensor(&self, tensor: TensorPtr, value: u8, offset: usize, size: usize) {
        let to = at(&tensor, offset);
        // SAFETY: the dispatch checked that the range lies in the tensor's device memory.
        on_default_stream(self.gpu.as_ref(), "memset_tensor", |g| unsafe {
            g.memset(Stream::DEFAULT, to, value, size)
        });
    }

    fn set_tensor(&self, tensor: TensorPtr, data: &[u8], offset: usize) {
        let to = at(&tensor, offset);
        // SAFETY: as in memset; `data` stays valid until we return (we wait for the copy).
        on_default_stream(self.gpu.as_ref(), "set_tensor", |g| unsafe {
            g.upload(Stream::DEFAULT, to, data.as_ptr(), data.len())
        });
    }

    fn get_tensor(&self, tensor: TensorPtr, data: &mut [u8], offset: usize) {
        let from = at(&tensor, offset);
        // SAFETY: as in set, with `data` writable.
        on_default_stream(self.gpu.as_ref(), "get_tensor", |g| unsafe {
            g.download(Stream::DEFAULT, data.as_mut_ptr(), from, data.len())
        });
    }

    /// Copies from another device buffer (on any GPU: addresses are unified); anything else is
    /// the caller's to do through host memory.
    fn cpy_tensor(&self, src: TensorPtr, dst: TensorPtr) -> bool {
        if gpu_of(&src).is_none() {
            return false;
        }
        let (to, from) = (at(&dst, 0), at(&src, 0));
        // SAFETY: both tensors are allocated in device buffers with the same size (checked by
        // ggml_backend_tensor_copy).
        on_default_stream(self.gpu.as_ref(), "cpy_tensor", |g| unsafe {
            g.copy(Stream::DEFAULT, to, from, src.nbytes())
        });
        true
    }

    fn clear(&self, value: u8) {
        // SAFETY: the allocation covers `size` bytes from its base.
        on_default_stream(self.gpu.as_ref(), "clear", |g| unsafe {
            g.memset(Stream::DEFAULT, self.base, value, self.size)
        });
    }
}

/// The GPU whose memory holds `tensor`, when it lives in a CUDA buffer.
pub fn gpu_of(tensor: &Tensor) -> Option<&Arc<dyn Gpu>> {
    // SAFETY: a tensor's buffer is null or live.
    let buffer = unsafe { BufferPtr::from_raw(tensor.buffer.cast()) }?;
    buffer.downcast::<CudaBuffer>().map(|b| &b.gpu)
}
