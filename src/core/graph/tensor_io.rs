//! What graph code needs of tensor data and backend buffers: the two writes
//! `ggml_graph_reset` makes (zero a tensor, store the loss seed), for tensors in context
//! memory and in a backend buffer, and a buffer's usage (for the fusion check).
//!
//! A backend buffer is written through its own function table, as `ggml_backend_tensor_set`
//! and `ggml_backend_tensor_memset` do; `struct ggml_backend_buffer` is read as laid out in
//! ggml 0.25.1.

use std::ffi::c_void;

use crate::core::tensor::{Tensor, TensorPtr};

type MemsetFn = unsafe extern "C" fn(*mut BufferHead, *mut Tensor, u8, usize, usize);
type SetFn = unsafe extern "C" fn(*mut BufferHead, *mut Tensor, *const c_void, usize, usize);

/// `struct ggml_backend_buffer` (120 bytes): the interface table (`ggml_backend_buffer_i`,
/// only the two entries called here typed), then `buft`, `context`, `size`, `usage`.
#[repr(C)]
struct BufferHead {
    free_buffer: *const c_void,
    get_base: *const c_void,
    init_tensor: *const c_void,
    memset_tensor: Option<MemsetFn>,
    set_tensor: Option<SetFn>,
    other_entries: [*const c_void; 6],
    buft: *const c_void,
    context: *mut c_void,
    size: usize,
    usage: i32,
}

const _: () = assert!(std::mem::size_of::<BufferHead>() == 120);
const _: () = assert!(std::mem::offset_of!(BufferHead, usage) == 112);

/// `GGML_BACKEND_BUFFER_USAGE_WEIGHTS`.
pub const BUFFER_USAGE_WEIGHTS: i32 = 1;

/// The usage of a tensor's own buffer (`ggml_backend_buffer_get_usage(t->buffer)`), if it has
/// one.
pub fn buffer_usage(t: TensorPtr) -> Option<i32> {
    let buf = t.buffer.cast::<BufferHead>();
    // SAFETY: a non-null buffer pointer in a tensor is a live ggml_backend_buffer.
    unsafe { buf.as_ref() }.map(|b| b.usage)
}

/// The buffer holding `t`'s data: its view source's, for a view.
fn buffer_of(t: TensorPtr) -> *mut BufferHead {
    let owner = t.view_source().unwrap_or(t);
    owner.buffer.cast()
}

/// Sets every byte of `t`'s data to zero (`ggml_set_zero`).
pub fn set_zero(t: TensorPtr) {
    if t.is_empty() {
        return;
    }
    let n = t.nbytes();
    if t.buffer.is_null() {
        crate::ggml_assert!(!t.data.is_null(), "tensor '{}' has no data", t.name());
        // SAFETY: a host tensor's data spans nbytes() bytes.
        unsafe { std::ptr::write_bytes(t.data.cast::<u8>(), 0, n) };
        return;
    }
    let buf = buffer_of(t);
    crate::ggml_assert!(!buf.is_null(), "tensor buffer not set");
    crate::ggml_assert!(!t.data.is_null(), "tensor not allocated");
    // SAFETY: a non-null buffer pointer in a tensor is a live ggml_backend_buffer, whose
    // struct starts with its interface table.
    let memset = unsafe { (*buf).memset_tensor };
    let Some(memset) = memset else { crate::ggml_abort!("memset not implemented by backend buffer") };
    // SAFETY: the buffer's own function, called with its buffer and one of its tensors over
    // the tensor's whole extent.
    unsafe { memset(buf, t.as_ptr(), 0, 0, n) };
}

/// Copies `bytes` to the start of `t`'s data (`ggml_backend_tensor_set` at offset 0, or a
/// plain copy for a host tensor).
pub fn set_bytes(t: TensorPtr, bytes: &[u8]) {
    crate::ggml_assert!(bytes.len() <= t.nbytes(), "tensor write out of bounds");
    if t.buffer.is_null() {
        crate::ggml_assert!(!t.data.is_null(), "tensor '{}' has no data", t.name());
        // SAFETY: the destination holds nbytes() >= bytes.len() bytes; the source is a
        // distinct Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), t.data.cast::<u8>(), bytes.len()) };
        return;
    }
    let buf = buffer_of(t);
    crate::ggml_assert!(!buf.is_null(), "tensor buffer not set");
    crate::ggml_assert!(!t.data.is_null(), "tensor not allocated");
    if bytes.is_empty() {
        return;
    }
    // SAFETY: as in `set_zero`.
    let set = unsafe { (*buf).set_tensor };
    let Some(set) = set else { crate::ggml_abort!("backend buffer has no set_tensor") };
    // SAFETY: the buffer's own function; the range lies within the tensor (checked above).
    unsafe { set(buf, t.as_ptr(), bytes.as_ptr().cast(), 0, bytes.len()) };
}
