//! The "CUDA" registry: one device per GPU, named "CUDA0", "CUDA1", ... It joins the device
//! list only when there is a GPU (`listed`), so a machine without one sees what a build
//! without CUDA shows.

use std::ffi::{CStr, c_void};
use std::ptr::NonNull;
use std::sync::OnceLock;

use super::device::CudaDevice;
use super::{gpus, host_buffer};
use crate::backend::adapter::{StaticReg, leak_device};
use crate::backend::device::DevicePtr;
use crate::backend::reg::RegPtr;
use crate::backend::traits::Reg;

struct CudaReg;

static REG_OBJECT: &dyn Reg = &CudaReg;
static REG: StaticReg = StaticReg::new(&REG_OBJECT);

/// The devices, made with the registry's first use and kept for the process.
static DEVICES: OnceLock<Vec<DevicePtr>> = OnceLock::new();

/// `ggml_backend_cuda_reg`.
pub fn reg() -> RegPtr {
    REG.handle()
}

/// The registry when there is at least one GPU, for the built-in list.
pub fn listed() -> Option<RegPtr> {
    (!devices().is_empty()).then(reg)
}

/// Every device, in GPU order.
pub fn devices() -> &'static [DevicePtr] {
    DEVICES.get_or_init(|| {
        let devices: Vec<DevicePtr> = (0..gpus::all().len())
            .map(|index| leak_device(REG.as_ptr(), |this| Box::new(CudaDevice::new(this, index))))
            .collect();
        if let Some(&cuda0) = devices.first() {
            host_buffer::set_device(cuda0);
        }
        devices
    })
}

/// Device `index`, or `None` with the reason logged on behalf of `call`.
pub fn device_at(index: i32, call: &str) -> Option<&'static CudaDevice> {
    let found = usize::try_from(index).ok().and_then(|i| devices().get(i).copied());
    if found.is_none() {
        crate::log_error!("{}: invalid device {} ({} CUDA devices)\n", call, index, devices().len());
    }
    found.and_then(DevicePtr::downcast::<CudaDevice>)
}

impl Reg for CudaReg {
    fn get_name(&self) -> &CStr {
        c"CUDA"
    }

    fn get_device_count(&self) -> usize {
        devices().len()
    }

    fn get_device(&self, index: usize) -> DevicePtr {
        match devices().get(index) {
            Some(&d) => d,
            None => crate::ggml_abort!("the CUDA registry has {} devices, not index {}", devices().len(), index),
        }
    }

    /// The registry's extra functions, which are C functions of `ffi` (a seam of `lib.rs`).
    fn get_proc_address(&self, name: &CStr) -> Option<NonNull<c_void>> {
        crate::ffi::cuda::proc_address(name)
    }
}
