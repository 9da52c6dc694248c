//! A backend on a CUDA device is a stream: tensor copies and graph computations are queued
//! on it and run in order, and `synchronize` waits for them. A graph is queued node by node
//! with no wait on the host inside it.

use std::ffi::{CStr, CString};
use std::sync::{Arc, OnceLock};

use super::event::CudaEvent;
use super::gpu::{self, DevicePtr, Gpu, Stream};
use super::scratch::Scratch;
use super::{buffer, gpus, ops};
use crate::backend::adapter::new_backend;
use crate::backend::backend::{BackendPtr, EventPtr};
use crate::backend::device::DevicePtr as Device;
use crate::backend::guid::StaticGuid;
use crate::backend::traits::{self, CopySource};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};

/// The CUDA backends' GUID (`ggml_backend_cuda_guid`).
static GUID: StaticGuid =
    StaticGuid::new([0x2c, 0xdd, 0xe8, 0x1c, 0x65, 0xb3, 0x65, 0x73, 0x6a, 0x12, 0x88, 0x61, 0x1c, 0xc9, 0xdc, 0x25]);

pub struct CudaBackend {
    gpu: Arc<dyn Gpu>,
    stream: Stream,
    name: CString,
    /// Marks the end of a copy to another backend's stream, which waits for it (made on the
    /// first such copy).
    copy_event: OnceLock<gpu::GpuEvent>,
    /// What the kernels of this backend's graphs use between launches.
    scratch: Scratch,
}

/// `ggml_backend_cuda_init`: a backend of `device` with its own stream on GPU `index`; `None`
/// (logged) when there is no such GPU or no stream can be made.
pub fn new(device: Device, index: usize) -> Option<BackendPtr> {
    let Some(gpu) = gpus::get(index) else {
        crate::log_error!("ggml_backend_cuda_init: invalid device {}\n", index);
        return None;
    };
    let stream = match gpu.stream_new() {
        Ok(s) => s,
        Err(e) => {
            crate::log_error!("ggml_backend_cuda_init: no stream on device {}: {}\n", index, e);
            return None;
        }
    };
    let name = CString::new(format!("CUDA{index}")).unwrap_or_default();
    let backend =
        CudaBackend { gpu: Arc::clone(gpu), stream, name, copy_event: OnceLock::new(), scratch: Scratch::default() };
    Some(new_backend(GUID.as_ptr(), device, Box::new(backend)))
}

/// `ggml_backend_is_cuda`.
pub fn is_cuda(backend: BackendPtr) -> bool {
    GUID.names(backend)
}

impl CudaBackend {
    /// Aborts when a call queued by one of ggml's functions without a result failed.
    fn check(&self, result: gpu::GpuResult<()>, what: &str) {
        if let Err(e) = result {
            crate::ggml_abort!("{}: CUDA error in {}: {}", self.name.to_string_lossy(), what, e);
        }
    }

    /// The GPU's handle of an event, which must be a CUDA device's.
    fn event_handle(&self, event: EventPtr) -> gpu::GpuEvent {
        match event.downcast::<CudaEvent>() {
            Some(e) => e.handle,
            None => crate::ggml_abort!("{}: not an event of a CUDA device", self.name.to_string_lossy()),
        }
    }

    /// The event marking the end of this stream's copies (made on first use).
    fn copy_event(&self) -> gpu::GpuEvent {
        *self.copy_event.get_or_init(|| {
            self.gpu
                .event_new()
                .unwrap_or_else(|e| crate::ggml_abort!("{}: cannot make an event: {}", self.name.to_string_lossy(), e))
        })
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        self.check(self.gpu.synchronize(self.stream), "free");
        // SAFETY: the stream has finished before its event, scratch memory and itself are
        // freed, once, here.
        unsafe {
            if let Some(&e) = self.copy_event.get() {
                self.gpu.event_free(e);
            }
            self.scratch.free(self.gpu.as_ref());
            self.gpu.stream_free(self.stream);
        }
    }
}

/// The device address of byte `offset` of `tensor`, which must live in a CUDA buffer.
fn device_address(tensor: &Tensor, offset: usize, what: &str) -> DevicePtr {
    if buffer::gpu_of(tensor).is_none() {
        crate::ggml_abort!("{}: tensor {} is not in a CUDA buffer", what, tensor.name());
    }
    tensor.data as DevicePtr + offset as DevicePtr
}

impl traits::Backend for CudaBackend {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    /// The caller keeps `data` until it synchronizes the backend.
    fn set_tensor_async(&mut self, tensor: TensorPtr, data: &[u8], offset: usize) -> bool {
        let at = device_address(&tensor, offset, "ggml_backend_tensor_set_async");
        // SAFETY: the dispatch checked the range; `data` stays valid until the stream is
        // synchronized (ggml's contract for asynchronous writes).
        self.check(unsafe { self.gpu.upload(self.stream, at, data.as_ptr(), data.len()) }, "set_tensor_async");
        true
    }

    fn get_tensor_async(&mut self, tensor: TensorPtr, data: &mut [u8], offset: usize) -> bool {
        let at = device_address(&tensor, offset, "ggml_backend_tensor_get_async");
        // SAFETY: as in `set_tensor_async`, with `data` writable.
        self.check(unsafe { self.gpu.download(self.stream, data.as_mut_ptr(), at, data.len()) }, "get_tensor_async");
        true
    }

    /// Copies between device buffers of CUDA backends: queued on the source's stream, and when
    /// the destination's backend is another one, its stream waits for the copy.
    fn cpy_tensor_async(&mut self, from: CopySource, src: TensorPtr, dst: TensorPtr) -> bool {
        if buffer::gpu_of(&src).is_none() || buffer::gpu_of(&dst).is_none() {
            return false;
        }
        let source: &CudaBackend = match from {
            CopySource::This => self,
            CopySource::Other(b) => match b.downcast::<CudaBackend>() {
                Some(b) => b,
                None => return false,
            },
            CopySource::Unknown => return false,
        };
        let (d, s) = (dst.data as DevicePtr, src.data as DevicePtr);
        // SAFETY: both tensors are allocated in device buffers, of the same size (checked by
        // the caller).
        source.check(unsafe { source.gpu.copy(source.stream, d, s, src.nbytes()) }, "cpy_tensor_async");
        if from != CopySource::This {
            let event = source.copy_event();
            source.check(source.gpu.event_record(event, source.stream), "cpy_tensor_async");
            self.check(self.gpu.stream_wait(self.stream, event), "cpy_tensor_async");
        }
        true
    }

    fn synchronize(&mut self) {
        self.check(self.gpu.synchronize(self.stream), "synchronize");
    }

    fn graph_compute(&mut self, graph: &mut Graph) -> Status {
        let queue = ops::Queue { gpu: self.gpu.as_ref(), stream: self.stream, scratch: &self.scratch };
        for node in graph.nodes() {
            if node.is_empty() || node.op.is_empty() {
                continue;
            }
            if let Err(e) = ops::compute(&queue, &node) {
                crate::log_error!(
                    "{}: {} ({}) failed: {}\n",
                    self.name.to_string_lossy(),
                    node.name(),
                    node.op.name(),
                    e
                );
                return Status::FAILED;
            }
        }
        Status::SUCCESS
    }

    fn event_record(&mut self, event: EventPtr) {
        let handle = self.event_handle(event);
        self.check(self.gpu.event_record(handle, self.stream), "event_record");
    }

    fn event_wait(&mut self, event: EventPtr) {
        let handle = self.event_handle(event);
        self.check(self.gpu.stream_wait(self.stream, handle), "event_wait");
    }
}
