//! The "CPU_REPACK" buffer type: host memory in which the weights the [`layout`] takes are
//! stored interleaved. Setting such a tensor packs the plain bytes, getting it unpacks them, so
//! to callers it holds what they wrote; the buffer is not host memory to them (its bytes are
//! not the plain ones), as in ggml, and llama.cpp loads weights into it through `set_tensor`.
//! Tensors the layout does not take are stored as written.

use std::ffi::{CStr, c_void};
use std::ptr::NonNull;

use super::layout::{self, GROUP_ROWS};
use crate::backend::adapter::{StaticBufferType, new_buffer};
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::host_buffer::{HostBuffer, TENSOR_ALIGNMENT};
use crate::backend::traits::{Buffer, BufferType};
use crate::core::tensor::{Tensor, TensorPtr};

struct RepackBufferType;

static REPACK: &dyn BufferType = &RepackBufferType;
pub(super) static REPACK_BUFFER_TYPE: StaticBufferType = StaticBufferType::new(&REPACK);

impl BufferType for RepackBufferType {
    fn get_name(&self) -> &CStr {
        c"CPU_REPACK"
    }

    /// Host memory whose tensor data operations pack and unpack.
    fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
        HostBuffer::alloc(size).map(|host| new_buffer(this, size, Box::new(RepackBuffer(host))))
    }

    /// As the CPU buffer type's.
    fn get_alignment(&self) -> usize {
        TENSOR_ALIGNMENT
    }
}

/// A CPU_REPACK buffer: host memory, some of whose tensors are stored interleaved. (A copy
/// between buffers goes through get and set: it has no `cpy_tensor` of its own.)
struct RepackBuffer(HostBuffer);

/// Whether `t`, allocated in a CPU_REPACK buffer, is stored packed: a tensor of its own (not a
/// view) of a format this processor runs packed and a shape the layout takes, with packed rows.
pub(super) fn stored_packed(t: &Tensor) -> bool {
    t.view_src.is_null() && super::packs(t.type_) && layout::takes(t.type_, t.ne) && t.is_contiguous()
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

impl Buffer for RepackBuffer {
    fn get_base(&self) -> Option<NonNull<c_void>> {
        self.0.get_base()
    }

    fn set_tensor(&self, tensor: TensorPtr, data: &[u8], offset: usize) {
        let t: &Tensor = &tensor;
        let (size, row_size) = (data.len(), t.type_.row_size(t.ne[0]));
        if !stored_packed(t) {
            self.0.set_tensor(tensor, data, offset);
        } else if offset.is_multiple_of(GROUP_ROWS * row_size) && size.is_multiple_of(GROUP_ROWS * row_size) {
            // whole groups, as when a model is loaded: packed straight from the caller's bytes
            // SAFETY: as in edit_plain.
            let packed = unsafe { std::slice::from_raw_parts_mut(t.data.cast::<u8>().add(offset), size) };
            layout::pack(t.type_, row_size, data, packed);
        } else {
            edit_plain(t, offset, size, true, |plain| plain.copy_from_slice(data));
        }
    }

    fn get_tensor(&self, tensor: TensorPtr, data: &mut [u8], offset: usize) {
        if stored_packed(&tensor) {
            edit_plain(&tensor, offset, data.len(), false, |plain| data.copy_from_slice(plain));
        } else {
            self.0.get_tensor(tensor, data, offset);
        }
    }

    fn memset_tensor(&self, tensor: TensorPtr, value: u8, offset: usize, size: usize) {
        if stored_packed(&tensor) {
            edit_plain(&tensor, offset, size, true, |plain| plain.fill(value));
        } else {
            self.0.memset_tensor(tensor, value, offset, size);
        }
    }

    fn clear(&self, value: u8) {
        self.0.clear(value);
    }
}
