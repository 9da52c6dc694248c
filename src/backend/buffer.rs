//! Buffer types and buffers: what a handle asks of its object (`adapter` gives the Rust
//! object or the C struct behind it), with the checks ggml's dispatch makes; and the tensor
//! data operations (`set`, `get`, their 2-D forms, `memset`, `copy`) that find a tensor's
//! buffer and call into it.
//!
//! Buffers are always created by `BufferPtr::new` (which plugins reach through
//! `ggml_backend_buffer_init`, and [`super::adapter::new_buffer`] for Rust buffers) and
//! destroyed by [`BufferPtr::free`]; buffer types are statics or leaked by whoever defines them.

use std::ffi::{CStr, c_char, c_void};

pub use super::handle::{BufferPtr, BufferTypePtr};
use super::interface::{BufferInterface, BufferUsage};
use super::traits::Copy2d;
use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};

/// Ops whose output a buffer type may allocate more than `ggml_nbytes` for (scratch data kept
/// next to the result). A buffer type reporting more for any other op is a bug in it.
pub fn op_alloc_size_may_expand(op: Op) -> bool {
    matches!(op, Op::FLASH_ATTN_EXT | Op::MUL_MAT | Op::MUL_MAT_ID | Op::CUMSUM | Op::ARGSORT | Op::TOP_K)
}

// ---------------------------------------------------------------------------------------------
// Buffer types

impl BufferTypePtr {
    /// The type's name, as a C string that lives as long as the type.
    pub fn name(self) -> *const c_char {
        self.name_c().as_ptr()
    }

    pub fn name_c<'a>(self) -> &'a CStr {
        self.object().get_name()
    }

    /// The name for log messages.
    pub fn name_lossy(self) -> String {
        self.name_c().to_string_lossy().into_owned()
    }

    /// A new buffer of `size` bytes, or `None` when the backend could not allocate it. Zero
    /// bytes give an empty buffer with no table entries (no backend call is made).
    pub fn alloc_buffer(self, size: usize) -> Option<BufferPtr> {
        if size == 0 {
            return Some(BufferPtr::new(self.as_ptr(), BufferInterface::EMPTY, std::ptr::null_mut(), 0));
        }
        self.object().alloc_buffer(self, size)
    }

    pub fn alignment(self) -> usize {
        self.object().get_alignment()
    }

    /// The largest buffer the type can allocate (`usize::MAX` unless the type says otherwise).
    pub fn max_size(self) -> usize {
        self.object().get_max_size()
    }

    /// Bytes the type needs for `tensor`'s data, padding included (`ggml_nbytes` by default).
    pub fn alloc_size(self, tensor: TensorPtr) -> usize {
        let size = self.object().get_alloc_size(tensor);
        crate::ggml_assert!(
            size <= tensor.nbytes()
                || tensor.op.is_empty()
                || tensor.type_.is_quantized()
                || op_alloc_size_may_expand(tensor.op),
            "buffer type {} asks {} bytes for a {}-byte tensor of op {}",
            self.name_lossy(),
            size,
            tensor.nbytes(),
            tensor.op.0
        );
        size
    }

    /// Whether tensor data lives in host memory with ggml's standard layout (false by default).
    pub fn is_host(self) -> bool {
        self.object().is_host()
    }

    /// The type's own placement of a context's tensors, if it has one (the meta buffer type).
    pub fn alloc_ctx_tensors(self, ctx: &crate::core::context::Context) -> Option<BufferPtr> {
        self.object().alloc_ctx_tensors(self, ctx)
    }
}

// ---------------------------------------------------------------------------------------------
// Buffers

impl BufferPtr {
    /// Releases the backend's memory (if the table frees anything) and the buffer object. The
    /// handle and every copy of it are dangling afterwards.
    pub fn free(self) {
        if let Some(free_buffer) = self.iface.free_buffer {
            // SAFETY: the entry belongs to this buffer and is called with it, once.
            unsafe { free_buffer(self.as_ptr()) };
        }
        // SAFETY: every buffer is made by Box in `BufferPtr::new` and dropped exactly once here.
        drop(unsafe { Box::from_raw(self.as_ptr()) });
    }

    /// The buffer's type, which every buffer must have for the type-level queries.
    #[track_caller]
    pub fn buft(self) -> BufferTypePtr {
        // SAFETY: buffer types outlive the buffers they allocate.
        match unsafe { BufferTypePtr::from_raw(self.buft) } {
            Some(buft) => buft,
            None => crate::ggml_abort!("buffer has no buffer type"),
        }
    }

    pub fn name(self) -> *const c_char {
        self.buft().name()
    }

    /// The start of the buffer's memory; null for a zero-sized buffer or one without memory of
    /// its own (a multi-buffer). A meta buffer has a base even when empty: its tensors'
    /// addresses are offsets from it.
    pub fn base(self) -> *mut c_void {
        let object = self.object();
        if self.size() == 0 && !object.is_meta() {
            return std::ptr::null_mut();
        }
        object.get_base().map_or(std::ptr::null_mut(), |b| b.as_ptr())
    }

    /// Lets the backend set up a tensor just placed in this buffer (nothing to do by default).
    pub fn init_tensor(self, tensor: TensorPtr) -> Status {
        self.object().init_tensor(tensor)
    }

    /// Fills the whole buffer with `value`.
    pub fn clear(self, value: u8) {
        if self.size() == 0 {
            return;
        }
        self.object().clear(value);
    }

    pub fn alignment(self) -> usize {
        self.buft().alignment()
    }

    pub fn max_size(self) -> usize {
        self.buft().max_size()
    }

    pub fn alloc_size(self, tensor: TensorPtr) -> usize {
        self.buft().alloc_size(tensor)
    }

    pub fn is_host(self) -> bool {
        self.buft().is_host()
    }

    /// Records what the buffer holds; a buffer made of others passes it on to its parts.
    pub fn set_usage(self, usage: BufferUsage) {
        // SAFETY: the handle's contract keeps the buffer alive; this is the only live access.
        unsafe { (*self.as_ptr()).usage = usage };
        self.object().set_usage(usage);
    }

    /// Drops per-tensor state that `init_tensor` made (if the backend keeps any).
    pub fn reset(self) {
        self.object().reset();
    }

    /// `ggml_backend_buffer_is_meta`.
    pub fn is_meta(self) -> bool {
        self.object().is_meta()
    }
}

// ---------------------------------------------------------------------------------------------
// Tensor data

/// The buffer that holds a tensor's data: its view source's, for a view.
fn storage_buffer(tensor: TensorPtr) -> Option<BufferPtr> {
    let raw = match tensor.view_source() {
        Some(src) => src.buffer,
        None => tensor.buffer,
    };
    // SAFETY: a tensor's buffer field is null or a live buffer (ggml's contract).
    unsafe { BufferPtr::from_raw(raw.cast()) }
}

#[track_caller]
fn storage_buffer_set(tensor: TensorPtr) -> BufferPtr {
    match storage_buffer(tensor) {
        Some(b) => b,
        None => crate::ggml_abort!("tensor buffer not set"),
    }
}

#[track_caller]
fn check_range(tensor: TensorPtr, end: Option<usize>, what: &str) {
    crate::ggml_assert!(!tensor.data.is_null(), "tensor not allocated");
    crate::ggml_assert!(end.is_some_and(|e| e <= tensor.nbytes()), "tensor {what} out of bounds");
}

#[track_caller]
fn host_span(c: &Copy2d) -> usize {
    match c.host_span() {
        Some(n) => n,
        None => crate::ggml_abort!("2-D copy of {} rows overflows the address space", c.n_copies),
    }
}

/// Writes `data` into the tensor's bytes starting at `offset`.
pub fn tensor_set(tensor: TensorPtr, data: &[u8], offset: usize) {
    let buf = storage_buffer_set(tensor);
    if data.is_empty() {
        return;
    }
    check_range(tensor, offset.checked_add(data.len()), "write");
    buf.object().set_tensor(tensor, data, offset);
}

/// Reads the tensor's bytes starting at `offset` into `data`.
pub fn tensor_get(tensor: TensorPtr, data: &mut [u8], offset: usize) {
    let buf = storage_buffer_set(tensor);
    if data.is_empty() {
        return;
    }
    check_range(tensor, offset.checked_add(data.len()), "read");
    buf.object().get_tensor(tensor, data, offset);
}

/// Writes the runs `c` describes from `data` (which must span them) into the tensor; one
/// `set` per run when there is one run.
pub fn tensor_set_2d(tensor: TensorPtr, data: &[u8], c: Copy2d) {
    let buf = storage_buffer_set(tensor);
    crate::ggml_assert!(data.len() >= host_span(&c), "2-D write source is too short");
    if c.n_copies <= 1 {
        for (at_data, at_tensor) in c.runs() {
            tensor_set(tensor, &data[at_data..][..c.size], at_tensor);
        }
        return;
    }
    if c.size == 0 {
        return;
    }
    check_range(tensor, c.tensor_end(), "write");
    buf.object().set_tensor_2d(tensor, data, c);
}

/// Reads the runs `c` describes from the tensor into `data` (which must span them).
pub fn tensor_get_2d(tensor: TensorPtr, data: &mut [u8], c: Copy2d) {
    let buf = storage_buffer_set(tensor);
    crate::ggml_assert!(data.len() >= host_span(&c), "2-D read destination is too short");
    if c.n_copies <= 1 {
        for (at_data, at_tensor) in c.runs() {
            tensor_get(tensor, &mut data[at_data..][..c.size], at_tensor);
        }
        return;
    }
    if c.size == 0 {
        return;
    }
    check_range(tensor, c.tensor_end(), "read");
    buf.object().get_tensor_2d(tensor, data, c);
}

/// Sets `size` bytes of the tensor, from `offset`, to `value`.
pub fn tensor_memset(tensor: TensorPtr, value: u8, offset: usize, size: usize) {
    if size == 0 {
        return;
    }
    let buf = storage_buffer_set(tensor);
    check_range(tensor, offset.checked_add(size), "write");
    buf.object().memset_tensor(tensor, value, offset, size);
}

/// `src`'s bytes as host memory. Only for tensors in host buffers, whose `data` is a plain
/// address.
fn host_bytes<'a>(tensor: TensorPtr) -> &'a [u8] {
    let n = tensor.nbytes();
    if n == 0 {
        return &[];
    }
    crate::ggml_assert!(!tensor.data.is_null(), "tensor not allocated");
    // SAFETY: a tensor in a host buffer has nbytes readable bytes at `data`.
    unsafe { std::slice::from_raw_parts(tensor.data.cast::<u8>(), n) }
}

fn host_bytes_mut<'a>(tensor: TensorPtr) -> &'a mut [u8] {
    let n = tensor.nbytes();
    if n == 0 {
        return &mut [];
    }
    crate::ggml_assert!(!tensor.data.is_null(), "tensor not allocated");
    // SAFETY: a tensor in a host buffer has nbytes writable bytes at `data`; nothing else
    // borrows them during the copy.
    unsafe { std::slice::from_raw_parts_mut(tensor.data.cast::<u8>(), n) }
}

#[track_caller]
fn own_buffer(tensor: TensorPtr) -> BufferPtr {
    // SAFETY: as in `storage_buffer`.
    match unsafe { BufferPtr::from_raw(tensor.buffer.cast()) } {
        Some(b) => b,
        None => crate::ggml_abort!("tensor {} has no buffer", tensor.name()),
    }
}

fn same_layout(a: &Tensor, b: &Tensor) -> bool {
    a.type_ == b.type_ && a.ne == b.ne && a.nb == b.nb
}

/// Copies `src`'s data into `dst` (same type, shape and strides), whichever buffers they are
/// in: directly when either side is host memory, through the destination buffer's
/// `cpy_tensor`, or else through a host staging copy.
pub fn tensor_copy(src: TensorPtr, dst: TensorPtr) {
    crate::ggml_assert!(same_layout(&src, &dst), "cannot copy tensors with different layouts");
    if src == dst {
        return;
    }
    if own_buffer(src).is_host() {
        tensor_set(dst, host_bytes(src), 0);
    } else if own_buffer(dst).is_host() {
        tensor_get(src, host_bytes_mut(dst), 0);
    } else if !buffer_copy_tensor(src, dst) {
        crate::log_debug!(
            "ggml_backend_tensor_copy: warning: slow copy from {} to {}\n",
            own_buffer(src).buft().name_lossy(),
            own_buffer(dst).buft().name_lossy()
        );
        let mut staging = vec![0u8; src.nbytes()];
        tensor_get(src, &mut staging, 0);
        tensor_set(dst, &staging, 0);
    }
}

/// Asks the buffer holding `dst` to copy `src` in itself; false when it cannot.
pub fn buffer_copy_tensor(src: TensorPtr, dst: TensorPtr) -> bool {
    storage_buffer_set(dst).object().cpy_tensor(src, dst)
}

/// Places an unallocated, non-view tensor at `addr` inside `buffer`.
pub fn tensor_alloc(buffer: BufferPtr, tensor: TensorPtr, addr: *mut c_void) -> Status {
    crate::ggml_assert!(tensor.buffer.is_null(), "tensor {} already has a buffer", tensor.name());
    crate::ggml_assert!(tensor.data.is_null(), "tensor {} already has data", tensor.name());
    crate::ggml_assert!(tensor.view_src.is_null(), "tensor {} is a view", tensor.name());
    let base = buffer.base() as usize;
    let at = addr as usize;
    crate::ggml_assert!(at >= base, "address {:#x} is below the buffer's base {:#x}", at, base);
    let end = at.checked_add(buffer.alloc_size(tensor));
    crate::ggml_assert!(
        buffer.is_meta() || end.is_some_and(|e| e <= base + buffer.size()),
        "tensor {} does not fit in the buffer at offset {}",
        tensor.name(),
        at - base
    );
    let t = tensor.get_mut();
    t.buffer = buffer.as_ptr().cast();
    t.data = addr;
    buffer.init_tensor(tensor)
}

/// Gives a view the buffer and address of its (allocated) source.
pub fn view_init(tensor: TensorPtr) -> Status {
    crate::ggml_assert!(tensor.buffer.is_null(), "view {} already has a buffer", tensor.name());
    let Some(src) = tensor.view_source() else { crate::ggml_abort!("tensor {} is not a view", tensor.name()) };
    crate::ggml_assert!(!src.buffer.is_null(), "the source of view {} has no buffer", tensor.name());
    crate::ggml_assert!(!src.data.is_null(), "the source of view {} is not allocated", tensor.name());
    let t = tensor.get_mut();
    t.buffer = src.buffer;
    t.data = src.data.cast::<u8>().wrapping_add(tensor.view_offs).cast();
    own_buffer(tensor).init_tensor(tensor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host_buffer::cpu_buffer_type;
    use crate::backend::interface::Buffer;
    use crate::backend::multi_buffer::multi_buffer_new;
    use crate::core::context::{Context, InitParams};
    use crate::core::types::Type;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 64 * 1024, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    fn place(buffer: BufferPtr, t: TensorPtr, offset: usize) {
        let addr = buffer.base().cast::<u8>().wrapping_add(offset).cast();
        assert_eq!(tensor_alloc(buffer, t, addr), Status::SUCCESS);
    }

    #[test]
    fn zero_sized_buffers_have_no_base_and_clear_is_a_no_op() {
        let b = cpu_buffer_type().alloc_buffer(0).unwrap();
        assert_eq!(b.size(), 0);
        assert!(b.base().is_null());
        b.clear(7);
        assert_eq!(b.buft(), cpu_buffer_type());
        b.free();
    }

    #[test]
    fn set_get_memset_round_trip() {
        let mut c = ctx();
        let t = c.new_tensor(Type::F32, &[8]);
        let b = cpu_buffer_type().alloc_buffer(64).unwrap();
        place(b, t, 0);
        let bytes: Vec<u8> = (0..32).collect();
        tensor_set(t, &bytes, 0);
        tensor_memset(t, 0xAB, 4, 4);
        let mut back = [0u8; 32];
        tensor_get(t, &mut back, 0);
        assert_eq!(&back[..4], &bytes[..4]);
        assert_eq!(&back[4..8], &[0xAB; 4]);
        assert_eq!(&back[8..], &bytes[8..]);
        b.free();
    }

    #[test]
    fn two_d_copies_use_both_strides() {
        let mut c = ctx();
        let t = c.new_tensor(Type::I8, &[4, 3]);
        let b = cpu_buffer_type().alloc_buffer(32).unwrap();
        place(b, t, 0);
        b.clear(0);
        // Two bytes from each of 3 rows; the host side is packed 3 bytes apart.
        let src = [1u8, 2, 0, 3, 4, 0, 5, 6];
        let c2 = Copy2d { offset: 1, size: 2, n_copies: 3, stride_tensor: 4, stride_data: 3 };
        tensor_set_2d(t, &src, c2);
        let mut all = [0u8; 12];
        tensor_get(t, &mut all, 0);
        assert_eq!(all, [0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0]);
        let mut back = [9u8; 8];
        tensor_get_2d(t, &mut back, c2);
        assert_eq!(back, [1, 2, 9, 3, 4, 9, 5, 6]);
        b.free();
    }

    static CALLS_2D: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn set_2d_rows(
        _buffer: *mut Buffer,
        tensor: *mut Tensor,
        data: *const c_void,
        offset: usize,
        size: usize,
        n_copies: usize,
        stride_tensor: usize,
        stride_data: usize,
    ) {
        CALLS_2D.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for i in 0..n_copies {
            // SAFETY: the dispatcher checked both ranges; the tensor is an allocated host tensor.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data.cast::<u8>().add(i * stride_data),
                    (*tensor).data.cast::<u8>().add(offset + i * stride_tensor),
                    size,
                )
            };
        }
    }

    #[test]
    fn two_d_writes_use_the_buffers_own_entry_for_several_rows() {
        let mut c = ctx();
        let t = c.new_tensor(Type::I8, &[4, 2]);
        let b = cpu_buffer_type().alloc_buffer(32).unwrap();
        // SAFETY: the buffer is live and not otherwise borrowed; the entry fits its memory.
        unsafe { (*b.as_ptr()).iface.set_tensor_2d = Some(set_2d_rows) };
        place(b, t, 0);
        b.clear(0);
        let before = CALLS_2D.load(std::sync::atomic::Ordering::Relaxed);
        tensor_set_2d(t, &[1, 2], Copy2d { offset: 0, size: 1, n_copies: 2, stride_tensor: 4, stride_data: 1 });
        // One copy goes through plain set_tensor.
        tensor_set_2d(t, &[3], Copy2d { offset: 1, size: 1, n_copies: 1, stride_tensor: 4, stride_data: 1 });
        assert_eq!(CALLS_2D.load(std::sync::atomic::Ordering::Relaxed), before + 1);
        let mut all = [0u8; 8];
        tensor_get(t, &mut all, 0);
        assert_eq!(all, [1, 3, 0, 0, 2, 0, 0, 0]);
        b.free();
    }

    #[test]
    fn views_share_their_source_memory() {
        let mut c = ctx();
        let t = c.new_tensor(Type::F32, &[8]);
        let v = c.new_tensor_impl(Type::F32, &[2], Some(t), 8);
        let b = cpu_buffer_type().alloc_buffer(32).unwrap();
        place(b, t, 0);
        assert_eq!(view_init(v), Status::SUCCESS);
        assert_eq!(v.buffer, t.buffer);
        assert_eq!(v.data as usize, t.data as usize + 8);
        tensor_set(v, &[1, 2, 3, 4], 0);
        let mut all = [0u8; 12];
        tensor_get(t, &mut all, 0);
        assert_eq!(&all[8..], &[1, 2, 3, 4]);
        b.free();
    }

    #[test]
    fn copy_between_host_tensors() {
        let mut c = ctx();
        let a = c.new_tensor(Type::I32, &[4]);
        let d = c.new_tensor(Type::I32, &[4]);
        let b = cpu_buffer_type().alloc_buffer(64).unwrap();
        place(b, a, 0);
        place(b, d, 32);
        tensor_set(a, &[7u8; 16], 0);
        tensor_copy(a, d);
        let mut back = [0u8; 16];
        tensor_get(d, &mut back, 0);
        assert_eq!(back, [7u8; 16]);
        b.free();
    }

    #[test]
    fn usage_reaches_the_parts_of_a_multi_buffer() {
        let parts = [cpu_buffer_type().alloc_buffer(32).unwrap(), cpu_buffer_type().alloc_buffer(64).unwrap()];
        let m = multi_buffer_new(&parts);
        assert!(m.is_multi_buffer() && !parts[0].is_multi_buffer());
        assert_eq!(m.size(), 96);
        assert!(m.base().is_null());
        m.set_usage(BufferUsage::WEIGHTS);
        assert!(parts.iter().all(|p| p.usage() == BufferUsage::WEIGHTS));
        m.clear(1);
        m.free();
    }
}
