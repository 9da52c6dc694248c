//! Writing graph tensors that may live in a backend buffer (gradient resets) and asking for
//! their buffer's usage (fusion checks), through the backend layer's buffer operations.

use crate::backend::buffer::{BufferPtr, tensor_memset, tensor_set};
use crate::core::tensor::TensorPtr;

pub const BUFFER_USAGE_WEIGHTS: i32 = crate::backend::interface::BufferUsage::WEIGHTS.0;

/// The usage of the buffer holding `t`, if it has one.
pub fn buffer_usage(t: TensorPtr) -> Option<i32> {
    // SAFETY: a tensor's buffer field is null or a live buffer (ggml's contract).
    unsafe { BufferPtr::from_raw(t.buffer.cast()) }.map(|b| b.usage().0)
}

/// Zeroes `t`'s bytes, in host memory or through its buffer (`ggml_set_zero`).
pub fn set_zero(t: TensorPtr) {
    if t.is_empty() {
        return;
    }
    let n = t.nbytes();
    if t.buffer.is_null() {
        crate::ggml_assert!(!t.data.is_null(), "tensor '{}' has no data", t.name());
        // SAFETY: a host tensor's data spans nbytes() bytes.
        unsafe { std::ptr::write_bytes(t.data.cast::<u8>(), 0, n) };
    } else {
        tensor_memset(t, 0, 0, n);
    }
}

/// Writes `bytes` at the start of `t`, in host memory or through its buffer.
pub fn set_bytes(t: TensorPtr, bytes: &[u8]) {
    crate::ggml_assert!(bytes.len() <= t.nbytes(), "tensor write out of bounds");
    if t.buffer.is_null() {
        crate::ggml_assert!(!t.data.is_null(), "tensor '{}' has no data", t.name());
        // SAFETY: the write stays within the tensor's nbytes() (asserted above).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), t.data.cast::<u8>(), bytes.len()) };
    } else if !bytes.is_empty() {
        tensor_set(t, bytes, 0);
    }
}
