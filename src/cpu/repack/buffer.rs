//! The "CPU_REPACK" buffer type: host memory in which the weights the [`layout`] takes are
//! stored interleaved. Setting such a tensor packs the plain bytes, getting it unpacks them, so
//! to callers it holds what they wrote; the buffer is not host memory to them (its bytes are
//! not the plain ones), as in ggml, and llama.cpp loads weights into it through `set_tensor`.
//! Tensors the layout does not take are stored as written.

use std::ffi::{c_char, c_void};

use super::layout::{self, GROUP_ROWS};
use crate::backend::buffer::StaticBufferType;
use crate::backend::host_buffer::{cpu_buffer_type_alloc_buffer, tensor_ref};
use crate::backend::interface::{Buffer, BufferType, BufferTypeInterface};
use crate::core::tensor::Tensor;

/// Alignment of tensors in the buffer: as the CPU buffer type's.
const ALIGNMENT: usize = crate::backend::host_buffer::TENSOR_ALIGNMENT;

pub(super) static REPACK_BUFFER_TYPE: StaticBufferType = StaticBufferType::new(
    BufferTypeInterface {
        get_name: Some(get_name),
        alloc_buffer: Some(alloc_buffer),
        get_alignment: Some(get_alignment),
        get_max_size: None,
        get_alloc_size: None,
        is_host: None,
    },
    std::ptr::null_mut(),
);

unsafe extern "C" fn get_name(_buft: *mut BufferType) -> *const c_char {
    c"CPU_REPACK".as_ptr()
}

unsafe extern "C" fn get_alignment(_buft: *mut BufferType) -> usize {
    ALIGNMENT
}

/// A CPU buffer whose tensor data entries pack and unpack.
unsafe extern "C" fn alloc_buffer(buft: *mut BufferType, size: usize) -> *mut Buffer {
    // SAFETY: the buffer type is a static, which outlives the buffer.
    let buffer = unsafe { cpu_buffer_type_alloc_buffer(buft, size) };
    // SAFETY: a buffer just made (or null), which nobody else holds yet.
    if let Some(b) = unsafe { buffer.as_mut() } {
        b.iface.memset_tensor = Some(memset_tensor);
        b.iface.set_tensor = Some(set_tensor);
        b.iface.get_tensor = Some(get_tensor);
        // (a copy between buffers goes through get and set)
        b.iface.cpy_tensor = None;
    }
    buffer
}

/// Whether `t`, allocated in a CPU_REPACK buffer, is stored packed: a tensor of its own (not a
/// view) of a format and shape the layout takes, with packed rows.
pub(super) fn stored_packed(t: &Tensor) -> bool {
    t.view_src.is_null() && layout::takes(t.type_, t.ne) && t.is_contiguous()
}

/// Runs `edit` on the plain bytes `offset..offset + size` of the packed tensor `t`: the groups
/// around them are unpacked first (unless `edit` overwrites them all) and, when `write`, packed
/// back after.
fn edit_plain(t: &Tensor, offset: usize, size: usize, write: bool, edit: impl FnOnce(&mut [u8])) {
    let row_size = t.type_.row_size(t.ne[0]);
    let group = GROUP_ROWS * row_size;
    let (start, end) = (offset / group * group, (offset + size).next_multiple_of(group));
    // SAFETY: the dispatcher checked that offset + size lies inside the tensor, whose bytes
    // are whole groups (`stored_packed`); nobody else touches them during the call.
    let packed = unsafe { std::slice::from_raw_parts_mut(t.data.cast::<u8>().add(start), end - start) };
    let mut plain = vec![0u8; end - start];
    if !(write && start == offset && end == offset + size) {
        layout::unpack(t.type_, row_size, packed, &mut plain);
    }
    edit(&mut plain[offset - start..offset - start + size]);
    if write {
        layout::pack(t.type_, row_size, &plain, packed);
    }
}

unsafe extern "C" fn set_tensor(
    _buffer: *mut Buffer,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    let t = tensor_ref(tensor);
    // SAFETY: `data` holds `size` readable bytes (the caller's contract).
    let src = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    let row_size = t.type_.row_size(t.ne[0]);
    if !stored_packed(t) {
        // SAFETY: the dispatcher checked the range; the ranges do not overlap (ggml's contract).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), t.data.cast::<u8>().add(offset), size) };
    } else if offset.is_multiple_of(GROUP_ROWS * row_size) && size.is_multiple_of(GROUP_ROWS * row_size) {
        // whole groups, as when a model is loaded: packed straight from the caller's bytes
        // SAFETY: as in edit_plain.
        let packed = unsafe { std::slice::from_raw_parts_mut(t.data.cast::<u8>().add(offset), size) };
        layout::pack(t.type_, row_size, src, packed);
    } else {
        edit_plain(t, offset, size, true, |plain| plain.copy_from_slice(src));
    }
}

unsafe extern "C" fn get_tensor(
    _buffer: *mut Buffer,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    let t = tensor_ref(tensor);
    // SAFETY: `data` holds `size` writable bytes (the caller's contract).
    let dst = unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), size) };
    if stored_packed(t) {
        edit_plain(t, offset, size, false, |plain| dst.copy_from_slice(plain));
    } else {
        // SAFETY: the dispatcher checked the range; the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(t.data.cast::<u8>().add(offset), dst.as_mut_ptr(), size) };
    }
}

unsafe extern "C" fn memset_tensor(_buffer: *mut Buffer, tensor: *mut Tensor, value: u8, offset: usize, size: usize) {
    let t = tensor_ref(tensor);
    if stored_packed(t) {
        edit_plain(t, offset, size, true, |plain| plain.fill(value));
    } else {
        // SAFETY: the dispatcher checked the range.
        unsafe { std::ptr::write_bytes(t.data.cast::<u8>().add(offset), value, size) };
    }
}
