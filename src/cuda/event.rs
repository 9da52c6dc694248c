//! Events of a CUDA device: the GPU's events, recorded on one stream and waited for by others.

use std::sync::Arc;

use super::gpu::{Gpu, GpuEvent};
use crate::backend::traits::Event;

pub struct CudaEvent {
    pub gpu: Arc<dyn Gpu>,
    pub handle: GpuEvent,
    /// The device's name, for messages.
    pub device: String,
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // SAFETY: ggml frees an event only after the work that records or waits on it has been
        // synchronized; the handle is the GPU's own, freed once.
        unsafe { self.gpu.event_free(self.handle) };
    }
}

impl Event for CudaEvent {
    fn synchronize(&self) {
        if let Err(e) = self.gpu.event_synchronize(self.handle) {
            crate::ggml_abort!("{}: waiting for an event failed: {}", self.device, e);
        }
    }
}
