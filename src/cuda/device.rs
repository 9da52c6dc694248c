//! A GPU as a ggml device: `"CUDA<i>"`, described by the GPU's name, identified by its PCI bus
//! id. Its buffer type allocates device memory, its host buffer type page-locked memory, and
//! its backends are streams. `supports_op` is exactly what `ops` can compute.

use std::ffi::{CStr, CString};
use std::sync::Arc;

use super::event::CudaEvent;
use super::gpu::{self, Gpu};
use super::{backend, buffer, gpus, host_buffer, ops};
use crate::backend::adapter::new_event;
use crate::backend::backend::{BackendPtr, EventPtr};
use crate::backend::buffer::BufferTypePtr;
use crate::backend::device::DevicePtr;
use crate::backend::interface::{DevCaps, DevProps, DevType};
use crate::backend::traits::Device;
use crate::core::op::Op;
use crate::core::tensor::{Tensor, TensorPtr};

/// Products and other ops on fewer rows than this are left to the CPU when their weights live
/// there: copying the weights over would cost more than the computation (ggml's
/// `GGML_OP_OFFLOAD_MIN_BATCH`).
const OFFLOAD_MIN_BATCH: i64 = 32;

pub struct CudaDevice {
    pub index: usize,
    pub gpu: Arc<dyn Gpu>,
    name: CString,
    description: CString,
    pci_bus_id: CString,
    pub buffer_type: BufferTypePtr,
}

impl CudaDevice {
    /// The device of GPU `index`, whose handle is `this`.
    pub fn new(this: DevicePtr, index: usize) -> CudaDevice {
        let Some(gpu) = gpus::get(index) else { unreachable!("devices are made for the GPUs found") };
        let info = gpu.info();
        let text = |s: &str| CString::new(s.replace('\0', "")).unwrap_or_default();
        CudaDevice {
            index,
            gpu: Arc::clone(gpu),
            name: text(&format!("CUDA{index}")),
            description: text(&info.name),
            pci_bus_id: text(&info.pci_bus_id),
            buffer_type: buffer::new_type(this, index),
        }
    }
}

/// `(free, total)` bytes of the GPU's memory, zeros (logged) when the driver cannot say.
pub fn memory(gpu: &dyn Gpu) -> (usize, usize) {
    gpu.memory().unwrap_or_else(|e: gpu::Error| {
        crate::log_error!("CUDA: cannot read the memory of {}: {}\n", gpu.info().name, e);
        (0, 0)
    })
}

/// How many rows an op works on, as the offload decision counts them.
fn batch_size(op: &Tensor) -> i64 {
    match op.op {
        Op::GET_ROWS => 0,
        Op::MUL_MAT => op.ne[1],
        Op::MUL_MAT_ID | Op::ROPE | Op::ROPE_BACK => op.ne[2],
        _ => op.nrows(),
    }
}

impl Device for CudaDevice {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn get_description(&self) -> &CStr {
        &self.description
    }

    fn get_memory(&self) -> (usize, usize) {
        memory(self.gpu.as_ref())
    }

    fn get_type(&self) -> DevType {
        if self.gpu.info().integrated { DevType::IGPU } else { DevType::GPU }
    }

    fn get_props(&self) -> DevProps {
        let caps = DevCaps {
            async_: true,
            host_buffer: true,
            buffer_from_host_ptr: false,
            events: true,
            mmap_support: !self.gpu.info().integrated,
        };
        DevProps { device_id: self.pci_bus_id.as_ptr(), ..DevProps::describe(self, caps) }
    }

    fn init_backend(&self, this: DevicePtr, _params: Option<&CStr>) -> Option<BackendPtr> {
        backend::new(this, self.index)
    }

    fn get_buffer_type(&self, _this: DevicePtr) -> Option<BufferTypePtr> {
        Some(self.buffer_type)
    }

    fn get_host_buffer_type(&self) -> Option<BufferTypePtr> {
        Some(host_buffer::buffer_type())
    }

    /// Exactly what `ops` computes.
    fn supports_op(&self, op: TensorPtr) -> bool {
        ops::supports(&op)
    }

    fn supports_buft(&self, buft: BufferTypePtr) -> bool {
        buft == self.buffer_type
    }

    fn offload_op(&self, op: TensorPtr) -> bool {
        batch_size(&op) >= OFFLOAD_MIN_BATCH
    }

    fn event_new(&self, this: DevicePtr) -> Option<EventPtr> {
        match self.gpu.event_new() {
            Ok(handle) => {
                let event =
                    CudaEvent { gpu: Arc::clone(&self.gpu), handle, device: self.name.to_string_lossy().into() };
                Some(new_event(this, Box::new(event)))
            }
            Err(e) => {
                crate::log_error!("{}: cannot make an event: {}\n", self.name.to_string_lossy(), e);
                None
            }
        }
    }
}
