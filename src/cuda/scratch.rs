//! Device memory a backend's kernels use between two launches of one op (the F32 copy of a
//! quantized weight before a product, say): one allocation per backend, grown when an op
//! asks for more, reused by every op after it.
//!
//! Reuse is safe without a wait because every op of a backend is queued on its one stream:
//! the next op's writes run after the last op's reads. Only growing waits, since queued work
//! may still read the old allocation when it is freed.

use std::sync::Mutex;

use super::gpu::{DevicePtr, Gpu, GpuResult, Stream};

#[derive(Default)]
pub struct Scratch {
    /// The allocation and its size in bytes, once there is one.
    allocation: Mutex<Option<(DevicePtr, usize)>>,
}

impl Scratch {
    /// At least `bytes` of device memory, valid for work queued on `stream` until the next
    /// call.
    pub fn get(&self, gpu: &dyn Gpu, stream: Stream, bytes: usize) -> GpuResult<DevicePtr> {
        let mut allocation = self.allocation.lock().unwrap_or_else(|e| e.into_inner());
        match *allocation {
            Some((ptr, size)) if size >= bytes => return Ok(ptr),
            Some((ptr, _)) => {
                gpu.synchronize(stream)?;
                *allocation = None;
                // SAFETY: made by `alloc` below; the stream that used it has finished.
                unsafe { gpu.free(ptr) };
            }
            None => {}
        }
        let ptr = gpu.alloc(bytes)?;
        *allocation = Some((ptr, bytes));
        Ok(ptr)
    }

    /// Gives the memory back.
    ///
    /// # Safety
    /// No queued work uses it any more.
    pub unsafe fn free(&self, gpu: &dyn Gpu) {
        let mut allocation = self.allocation.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((ptr, _)) = allocation.take() {
            // SAFETY: the caller's contract.
            unsafe { gpu.free(ptr) };
        }
    }
}
