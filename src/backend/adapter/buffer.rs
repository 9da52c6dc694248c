//! Buffers: the table of every Rust buffer, and a buffer handle's object.

use std::ffi::c_void;

use super::{bytes, bytes_mut, owned, owned_context, same_entries, take_owned, tensor_arg};
use crate::backend::handle::{BufferPtr, BufferTypePtr};
use crate::backend::interface::{Buffer as RawBuffer, BufferInterface};
use crate::backend::traits::{Buffer, Copy2d};
use crate::core::status::Status;
use crate::core::tensor::Tensor;

const TABLE: BufferInterface = BufferInterface {
    free_buffer: Some(free_buffer),
    get_base: Some(get_base),
    init_tensor: Some(init_tensor),
    memset_tensor: Some(memset_tensor),
    set_tensor: Some(set_tensor),
    get_tensor: Some(get_tensor),
    set_tensor_2d: Some(set_tensor_2d),
    get_tensor_2d: Some(get_tensor_2d),
    cpy_tensor: Some(cpy_tensor),
    clear: Some(clear),
    reset: Some(reset),
};

/// A buffer of `size` bytes of type `buft` whose operations are `object`'s; freeing the buffer
/// drops it.
pub fn new_buffer(buft: BufferTypePtr, size: usize, object: Box<dyn Buffer>) -> BufferPtr {
    BufferPtr::new(buft.as_ptr(), TABLE, owned_context(object), size)
}

impl BufferPtr {
    /// What the buffer is: its Rust object when its table is the adapter's, else the C struct,
    /// served through its table (a plugin's buffer, or one of ours whose entries C code has
    /// replaced).
    pub(in crate::backend) fn object<'a>(self) -> &'a dyn Buffer {
        let raw: &RawBuffer = self.raw();
        if same_entries!(raw.iface, TABLE; free_buffer, get_base, init_tensor, memset_tensor, set_tensor,
            get_tensor, set_tensor_2d, get_tensor_2d, cpy_tensor, clear, reset)
        {
            // SAFETY: with the adapter's table the buffer was made by `new_buffer` (its context
            // is the boxed object, alive until the buffer is freed); buffers are used through
            // shared references only.
            unsafe { owned::<dyn Buffer>(raw.context) }
        } else {
            raw
        }
    }

    /// The buffer's Rust object if it is a `T`: how a backend recognises its own buffers.
    /// (C code may have replaced some entries; the object still owns the memory.)
    pub fn downcast<'a, T: Buffer>(self) -> Option<&'a T> {
        let raw: &RawBuffer = self.raw();
        if !same_entries!(raw.iface, TABLE; free_buffer) {
            return None;
        }
        // SAFETY: a buffer freed by the adapter's entry was made by `new_buffer`.
        let object: &dyn Buffer = unsafe { owned::<dyn Buffer>(raw.context) };
        (object as &dyn std::any::Any).downcast_ref::<T>()
    }
}

/// The object behind a buffer this table was called for.
fn object<'a>(buffer: *mut RawBuffer) -> &'a dyn Buffer {
    // SAFETY: the table's entries are called with a live buffer of this table, whose context
    // is ours even where C code replaced other entries.
    match unsafe { buffer.as_ref() } {
        // SAFETY: as above.
        Some(b) => unsafe { owned::<dyn Buffer>(b.context) },
        None => crate::ggml_abort!("NULL buffer passed to a buffer's table"),
    }
}

unsafe extern "C" fn free_buffer(buffer: *mut RawBuffer) {
    object(buffer);
    // SAFETY: called once, as the buffer is freed; the context is the adapter's box.
    drop(unsafe { take_owned::<dyn Buffer>((*buffer).context) });
}

unsafe extern "C" fn get_base(buffer: *mut RawBuffer) -> *mut c_void {
    object(buffer).get_base().map_or(std::ptr::null_mut(), |p| p.as_ptr())
}

unsafe extern "C" fn init_tensor(buffer: *mut RawBuffer, tensor: *mut Tensor) -> Status {
    object(buffer).init_tensor(tensor_arg(tensor, "init_tensor"))
}

unsafe extern "C" fn memset_tensor(buffer: *mut RawBuffer, tensor: *mut Tensor, value: u8, offset: usize, size: usize) {
    object(buffer).memset_tensor(tensor_arg(tensor, "memset_tensor"), value, offset, size);
}

unsafe extern "C" fn set_tensor(
    buffer: *mut RawBuffer,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: the caller passes `size` readable bytes (the entry's contract).
    let data = unsafe { bytes(data, size) };
    object(buffer).set_tensor(tensor_arg(tensor, "set_tensor"), data, offset);
}

unsafe extern "C" fn get_tensor(
    buffer: *mut RawBuffer,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: the caller passes `size` writable bytes (the entry's contract).
    let data = unsafe { bytes_mut(data, size) };
    object(buffer).get_tensor(tensor_arg(tensor, "get_tensor"), data, offset);
}

/// The 2-D copy an entry describes and the bytes of host memory it spans.
#[track_caller]
fn copy_2d(offset: usize, size: usize, n_copies: usize, stride_tensor: usize, stride_data: usize) -> (Copy2d, usize) {
    let c = Copy2d { offset, size, n_copies, stride_tensor, stride_data };
    match c.host_span() {
        Some(span) => (c, span),
        None => crate::ggml_abort!("2-D copy of {} rows overflows the address space", n_copies),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn set_tensor_2d(
    buffer: *mut RawBuffer,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    let (c, span) = copy_2d(offset, size, n_copies, stride_tensor, stride_data);
    // SAFETY: the caller passes host memory spanning every run (the entry's contract).
    let data = unsafe { bytes(data, span) };
    object(buffer).set_tensor_2d(tensor_arg(tensor, "set_tensor_2d"), data, c);
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn get_tensor_2d(
    buffer: *mut RawBuffer,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    let (c, span) = copy_2d(offset, size, n_copies, stride_tensor, stride_data);
    // SAFETY: as in `set_tensor_2d`, writable.
    let data = unsafe { bytes_mut(data, span) };
    object(buffer).get_tensor_2d(tensor_arg(tensor, "get_tensor_2d"), data, c);
}

unsafe extern "C" fn cpy_tensor(buffer: *mut RawBuffer, src: *const Tensor, dst: *mut Tensor) -> bool {
    object(buffer).cpy_tensor(tensor_arg(src, "cpy_tensor"), tensor_arg(dst, "cpy_tensor"))
}

unsafe extern "C" fn clear(buffer: *mut RawBuffer, value: u8) {
    object(buffer).clear(value);
}

unsafe extern "C" fn reset(buffer: *mut RawBuffer) {
    object(buffer).reset();
}
