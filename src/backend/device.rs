//! Devices (`ggml_backend_dev_*`): what a device handle asks of its object (`adapter` gives
//! the Rust object or the C struct behind it).

use std::ffi::{CStr, c_char, c_void};

pub use super::handle::DevicePtr;
use super::handle::{BackendPtr, BufferPtr, BufferTypePtr, EventPtr};
use super::interface::{DevProps, DevType};
use crate::core::tensor::TensorPtr;

/// A C string returned by a backend, for log messages ("(null)" when it returned NULL).
pub(crate) fn lossy(s: *const c_char) -> String {
    if s.is_null() {
        return "(null)".to_owned();
    }
    // SAFETY: names and descriptions handed out by backends are NUL-terminated strings that
    // live at least as long as the object they describe.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

impl DevicePtr {
    /// Short identifier, such as "CPU" or "CUDA0".
    pub fn name(self) -> *const c_char {
        self.object().get_name().as_ptr()
    }

    pub fn name_lossy(self) -> String {
        self.object().get_name().to_string_lossy().into_owned()
    }

    /// Longer, human-readable description (for a CPU, the model name).
    pub fn description(self) -> *const c_char {
        self.object().get_description().as_ptr()
    }

    /// `(free, total)` device memory in bytes.
    pub fn memory(self) -> (usize, usize) {
        self.object().get_memory()
    }

    pub fn dev_type(self) -> DevType {
        self.object().get_type()
    }

    /// All properties at once.
    pub fn props(self) -> DevProps {
        self.object().get_props()
    }

    /// Creates a backend (stream) on this device; `None` when the device cannot.
    pub fn init_backend(self, params: Option<&CStr>) -> Option<BackendPtr> {
        self.object().init_backend(self, params)
    }

    /// The device's preferred buffer type, if it can be had.
    pub fn buffer_type_opt(self) -> Option<BufferTypePtr> {
        self.object().get_buffer_type(self)
    }

    /// The device's preferred buffer type (aborts if there is none).
    #[track_caller]
    pub fn buffer_type(self) -> BufferTypePtr {
        match self.buffer_type_opt() {
            Some(b) => b,
            None => crate::ggml_abort!("device {} has no buffer type", self.name_lossy()),
        }
    }

    /// The pinned host buffer type, if the device has one.
    pub fn host_buffer_type(self) -> Option<BufferTypePtr> {
        self.object().get_host_buffer_type()
    }

    /// Wraps `size` bytes of host memory at `ptr` in a buffer of this device.
    ///
    /// # Safety
    /// `ptr` must address `size` bytes that stay valid (and owned by the caller) for the
    /// buffer's lifetime.
    pub unsafe fn buffer_from_host_ptr(
        self,
        ptr: *mut c_void,
        size: usize,
        max_tensor_size: usize,
    ) -> Option<BufferPtr> {
        // SAFETY: the caller's contract.
        unsafe { self.object().buffer_from_host_ptr(ptr, size, max_tensor_size) }
    }

    pub fn supports_op(self, op: TensorPtr) -> bool {
        self.object().supports_op(op)
    }

    pub fn supports_buft(self, buft: BufferTypePtr) -> bool {
        self.object().supports_buft(buft)
    }

    /// Whether the device wants to run `op` even when its weights live elsewhere; false for
    /// devices without an opinion.
    pub fn offload_op(self, op: TensorPtr) -> bool {
        self.object().offload_op(op)
    }

    /// A new event on this device; `None` for devices without events.
    pub fn event_new(self) -> Option<EventPtr> {
        self.object().event_new(self)
    }
}
