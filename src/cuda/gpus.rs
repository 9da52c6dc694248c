//! The process's GPUs, found once: the emulated device in a `cuda-emulator` build, else every
//! device the CUDA driver reports. Finding none is not an error for the library: the CUDA
//! registry then stays out of the device list, as in a build without CUDA.

use std::sync::{Arc, OnceLock};

use super::gpu::Gpu;

static GPUS: OnceLock<Vec<Arc<dyn Gpu>>> = OnceLock::new();

/// Every GPU, in the driver's order; device `i` of the registry is `all()[i]`.
pub fn all() -> &'static [Arc<dyn Gpu>] {
    GPUS.get_or_init(find)
}

/// GPU `index`, when there is one.
pub fn get(index: usize) -> Option<&'static Arc<dyn Gpu>> {
    all().get(index)
}

#[cfg(feature = "cuda-emulator")]
fn find() -> Vec<Arc<dyn Gpu>> {
    vec![Arc::new(super::emulator::gpu::Emulated::new())]
}

#[cfg(not(feature = "cuda-emulator"))]
fn find() -> Vec<Arc<dyn Gpu>> {
    match super::driver::gpus() {
        Ok(gpus) => gpus,
        // a machine without the driver library is a CPU machine: nothing to report there,
        // as a build without CUDA reports nothing (a request for a device says there is none)
        Err(e) if e.call == "dlopen" => Vec::new(),
        Err(e) => {
            crate::log_warn!("ggml_cuda_init: failed to initialize CUDA: {}\n", e);
            Vec::new()
        }
    }
}
