//! Multi-buffers (`ggml_backend_multi_buffer_*`): one buffer owning several, made when a
//! context's tensors do not fit in one buffer of their type. It has no memory of its own:
//! every tensor lives in one of its parts, so the tensor operations never reach it.

use std::ffi::c_void;
use std::ptr::NonNull;

use super::adapter::new_buffer;
use super::handle::BufferPtr;
use super::interface::BufferUsage;
use super::traits::Buffer;
use crate::core::tensor::TensorPtr;

/// A multi-buffer's object: the buffers it owns (freed with it).
pub struct MultiBuffer {
    parts: Vec<BufferPtr>,
}

impl Drop for MultiBuffer {
    fn drop(&mut self) {
        for part in &self.parts {
            part.free();
        }
    }
}

#[track_caller]
fn no_tensors(entry: &str) -> ! {
    crate::ggml_abort!("a multi-buffer holds no tensors of its own ({} is for its parts)", entry)
}

impl Buffer for MultiBuffer {
    fn get_base(&self) -> Option<NonNull<c_void>> {
        None
    }

    fn memset_tensor(&self, _tensor: TensorPtr, _value: u8, _offset: usize, _size: usize) {
        no_tensors("memset_tensor")
    }

    fn set_tensor(&self, _tensor: TensorPtr, _data: &[u8], _offset: usize) {
        no_tensors("set_tensor")
    }

    fn get_tensor(&self, _tensor: TensorPtr, _data: &mut [u8], _offset: usize) {
        no_tensors("get_tensor")
    }

    fn clear(&self, value: u8) {
        for part in &self.parts {
            part.clear(value);
        }
    }

    fn set_usage(&self, usage: BufferUsage) {
        for part in &self.parts {
            part.set_usage(usage);
        }
    }
}

/// One buffer owning `parts` (freed with it), of their total size and the first part's type.
pub fn multi_buffer_new(parts: &[BufferPtr]) -> BufferPtr {
    crate::ggml_assert!(!parts.is_empty(), "a multi-buffer needs at least one buffer");
    let total: usize = parts.iter().map(|b| b.size()).sum();
    new_buffer(parts[0].buft(), total, Box::new(MultiBuffer { parts: parts.to_vec() }))
}

/// Sets the usage of every part of a multi-buffer (`ggml_backend_multi_buffer_set_usage`).
#[track_caller]
pub fn multi_buffer_set_usage(buffer: BufferPtr, usage: BufferUsage) {
    match buffer.downcast::<MultiBuffer>() {
        Some(multi) => multi.set_usage(usage),
        None => crate::ggml_abort!("GGML_ASSERT(ggml_backend_buffer_is_multi_buffer(buffer)) failed"),
    }
}

impl BufferPtr {
    pub fn is_multi_buffer(self) -> bool {
        self.downcast::<MultiBuffer>().is_some()
    }
}
