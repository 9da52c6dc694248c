//! Buffer types and buffers: every operation dispatches through the object's own table, with
//! ggml's defaults for the optional entries; the tensor data operations (`set`, `get`, their
//! 2-D forms, `memset`, `copy`) that find a tensor's buffer and call into it; and the
//! multi-buffer that groups several buffers allocated for one context.
//!
//! Buffers are always created here ([`BufferPtr::new`], which plugins reach through
//! `ggml_backend_buffer_init`) and destroyed here ([`BufferPtr::free`]); buffer types are
//! statics owned by whoever defines them.

use std::cell::UnsafeCell;
use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use super::interface::{Buffer, BufferInterface, BufferType, BufferTypeInterface, BufferUsage, Device};
use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};

/// Aborts when a table lacks an entry that ggml requires (ggml itself would jump to NULL).
#[track_caller]
fn required<F>(entry: Option<F>, table: &str, name: &str) -> F {
    match entry {
        Some(f) => f,
        None => crate::ggml_abort!("{table} interface has no {name} function"),
    }
}

/// Ops that are only metadata: their tensors never own memory.
fn op_is_empty(op: Op) -> bool {
    matches!(op, Op::NONE | Op::RESHAPE | Op::TRANSPOSE | Op::VIEW | Op::PERMUTE)
}

/// The context of `buffer` as a `T`, when the buffer is one whose table frees it with `free`:
/// how a backend recognises its own buffers among any it is handed.
///
/// # Safety
/// `buffer` is null or live, and every buffer freed by `free` has a live `T` as its context.
pub unsafe fn context_of<'a, T>(buffer: *const Buffer, free: unsafe extern "C" fn(*mut Buffer)) -> Option<&'a T> {
    // SAFETY: the caller's contract.
    let buffer = unsafe { buffer.as_ref() }?;
    let ours = buffer.iface.free_buffer.is_some_and(|f| std::ptr::fn_addr_eq(f, free));
    // SAFETY: the caller's contract on buffers freed by `free`.
    ours.then(|| unsafe { &*buffer.context.cast::<T>() })
}

/// Ops whose output a buffer type may allocate more than `ggml_nbytes` for (scratch data kept
/// next to the result). A buffer type reporting more for any other op is a bug in it.
pub fn op_alloc_size_may_expand(op: Op) -> bool {
    matches!(op, Op::FLASH_ATTN_EXT | Op::MUL_MAT | Op::MUL_MAT_ID | Op::CUMSUM | Op::ARGSORT | Op::TOP_K)
}

// ---------------------------------------------------------------------------------------------
// Buffer types

/// A handle to a `ggml_backend_buffer_type`.
///
/// Buffer types are long-lived (usually statics of the backend that defines them); a handle
/// relies on that, as a [`TensorPtr`] relies on its context.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct BufferTypePtr(NonNull<BufferType>);

impl BufferTypePtr {
    /// # Safety
    /// `ptr`, when not null, must point to a buffer type that outlives every use of the handle.
    pub unsafe fn from_raw(ptr: *mut BufferType) -> Option<Self> {
        NonNull::new(ptr).map(BufferTypePtr)
    }

    pub fn as_ptr(self) -> *mut BufferType {
        self.0.as_ptr()
    }

    fn iface(self) -> BufferTypeInterface {
        // SAFETY: the handle's contract keeps the buffer type alive.
        unsafe { (*self.0.as_ptr()).iface }
    }

    /// The type's name, as the C string its table returns.
    pub fn name(self) -> *const c_char {
        let get_name = required(self.iface().get_name, "buffer type", "get_name");
        // SAFETY: the entry belongs to this buffer type and is called with it.
        unsafe { get_name(self.as_ptr()) }
    }

    /// The name for log messages.
    pub fn name_lossy(self) -> String {
        let name = self.name();
        if name.is_null() {
            return String::from("(null)");
        }
        // SAFETY: buffer type names are NUL-terminated strings that live as long as the type.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    }

    /// A new buffer of `size` bytes, or `None` when the backend could not allocate it. Zero
    /// bytes give an empty buffer with no table entries (no backend call is made).
    pub fn alloc_buffer(self, size: usize) -> Option<BufferPtr> {
        if size == 0 {
            return Some(BufferPtr::new(self.as_ptr(), BufferInterface::EMPTY, std::ptr::null_mut(), 0));
        }
        let alloc = required(self.iface().alloc_buffer, "buffer type", "alloc_buffer");
        // SAFETY: as in `name`; a non-null result is a buffer made by ggml_backend_buffer_init.
        unsafe { BufferPtr::from_raw(alloc(self.as_ptr(), size)) }
    }

    pub fn alignment(self) -> usize {
        let get_alignment = required(self.iface().get_alignment, "buffer type", "get_alignment");
        // SAFETY: as in `name`.
        unsafe { get_alignment(self.as_ptr()) }
    }

    /// The largest buffer the type can allocate (`usize::MAX` unless the type says otherwise).
    pub fn max_size(self) -> usize {
        match self.iface().get_max_size {
            // SAFETY: as in `name`.
            Some(get_max_size) => unsafe { get_max_size(self.as_ptr()) },
            None => usize::MAX,
        }
    }

    /// Bytes the type needs for `tensor`'s data, padding included (`ggml_nbytes` by default).
    pub fn alloc_size(self, tensor: TensorPtr) -> usize {
        let Some(get_alloc_size) = self.iface().get_alloc_size else {
            return tensor.nbytes();
        };
        // SAFETY: as in `name`; the tensor is live (TensorPtr's contract).
        let size = unsafe { get_alloc_size(self.as_ptr(), tensor.as_ptr()) };
        crate::ggml_assert!(
            size <= tensor.nbytes()
                || op_is_empty(tensor.op)
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
        match self.iface().is_host {
            // SAFETY: as in `name`.
            Some(is_host) => unsafe { is_host(self.as_ptr()) },
            None => false,
        }
    }

    pub fn device(self) -> *mut Device {
        // SAFETY: the handle's contract keeps the buffer type alive.
        unsafe { (*self.0.as_ptr()).device }
    }
}

/// A buffer type defined as a `static`. C code receives a mutable pointer to it (and ggml's own
/// types are mutable statics), so the value sits in an `UnsafeCell`: a write through that
/// pointer, such as a registry filling in `device`, is then not undefined behaviour.
pub struct StaticBufferType(UnsafeCell<BufferType>);

// SAFETY: the table and pointers inside are only read after start-up; ggml gives no stronger
// guarantee for its own static buffer types, and callers of as_ptr write at most `device` once.
unsafe impl Sync for StaticBufferType {}

impl StaticBufferType {
    pub const fn new(iface: BufferTypeInterface, context: *mut c_void) -> Self {
        StaticBufferType(UnsafeCell::new(BufferType { iface, device: std::ptr::null_mut(), context }))
    }

    pub fn as_ptr(&'static self) -> *mut BufferType {
        self.0.get()
    }

    pub fn handle(&'static self) -> BufferTypePtr {
        // SAFETY: a static lives for the whole process.
        BufferTypePtr(unsafe { NonNull::new_unchecked(self.0.get()) })
    }
}

// ---------------------------------------------------------------------------------------------
// Buffers

/// A handle to a `ggml_backend_buffer`, valid from [`BufferPtr::new`] until [`BufferPtr::free`].
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct BufferPtr(NonNull<Buffer>);

impl std::ops::Deref for BufferPtr {
    type Target = Buffer;
    fn deref(&self) -> &Buffer {
        // SAFETY: the handle's contract keeps the buffer alive until it is freed.
        unsafe { self.0.as_ref() }
    }
}

impl BufferPtr {
    /// `ggml_backend_buffer_init`: wraps a backend's allocation in a new buffer object with
    /// usage `ANY`.
    pub fn new(buft: *mut BufferType, iface: BufferInterface, context: *mut c_void, size: usize) -> BufferPtr {
        let buffer = Box::new(Buffer { iface, buft, context, size, usage: BufferUsage::ANY });
        BufferPtr(NonNull::from(Box::leak(buffer)))
    }

    /// # Safety
    /// `ptr`, when not null, must be a buffer made by [`BufferPtr::new`] and not yet freed, and
    /// stay so for every use of the handle.
    pub unsafe fn from_raw(ptr: *mut Buffer) -> Option<Self> {
        NonNull::new(ptr).map(BufferPtr)
    }

    pub fn as_ptr(self) -> *mut Buffer {
        self.0.as_ptr()
    }

    /// Releases the backend's memory (if the table frees anything) and the buffer object. The
    /// handle and every copy of it are dangling afterwards.
    pub fn free(self) {
        if let Some(free_buffer) = self.iface.free_buffer {
            // SAFETY: the entry belongs to this buffer and is called with it, once.
            unsafe { free_buffer(self.as_ptr()) };
        }
        // SAFETY: the buffer was made by Box in `new` and is dropped exactly once here.
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

    pub fn size(self) -> usize {
        self.size
    }

    /// The start of the buffer's memory; null for a zero-sized buffer or one without `get_base`
    /// (a multi-buffer).
    pub fn base(self) -> *mut c_void {
        // A meta buffer has a base even when empty: its tensors' addresses are offsets from it.
        if self.size == 0 && !crate::backend::meta::buffer_is_meta(self) {
            return std::ptr::null_mut();
        }
        let Some(get_base) = self.iface.get_base else {
            return std::ptr::null_mut();
        };
        // SAFETY: the entry belongs to this buffer and is called with it.
        let base = unsafe { get_base(self.as_ptr()) };
        crate::ggml_assert!(!base.is_null(), "backend buffer base cannot be NULL");
        base
    }

    /// Lets the backend set up a tensor just placed in this buffer (nothing to do by default).
    pub fn init_tensor(self, tensor: TensorPtr) -> Status {
        match self.iface.init_tensor {
            // SAFETY: the entry belongs to this buffer; the tensor is live.
            Some(init_tensor) => unsafe { init_tensor(self.as_ptr(), tensor.as_ptr()) },
            None => Status::SUCCESS,
        }
    }

    /// Fills the whole buffer with `value`.
    pub fn clear(self, value: u8) {
        if self.size == 0 {
            return;
        }
        let clear = required(self.iface.clear, "buffer", "clear");
        // SAFETY: the entry belongs to this buffer and is called with it.
        unsafe { clear(self.as_ptr(), value) };
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

    pub fn usage(self) -> BufferUsage {
        self.usage
    }

    /// Records what the buffer holds; a multi-buffer passes it on to its parts.
    pub fn set_usage(self, usage: BufferUsage) {
        // SAFETY: the handle's contract keeps the buffer alive; this is the only live access.
        unsafe { (*self.as_ptr()).usage = usage };
        if self.is_multi_buffer() {
            multi_buffer_set_usage(self, usage);
        } else if crate::backend::meta::buffer_is_meta(self) {
            crate::backend::meta::buffer_set_usage(self, usage);
        }
    }

    /// Drops per-tensor state that `init_tensor` made (if the backend keeps any).
    pub fn reset(self) {
        if let Some(reset) = self.iface.reset {
            // SAFETY: the entry belongs to this buffer and is called with it.
            unsafe { reset(self.as_ptr()) };
        }
    }

    pub fn is_multi_buffer(self) -> bool {
        self.iface
            .free_buffer
            .is_some_and(|f| std::ptr::fn_addr_eq(f, multi_buffer_free as unsafe extern "C" fn(*mut Buffer)))
    }
}

// ---------------------------------------------------------------------------------------------
// Multi-buffers

/// What a multi-buffer's `context` points to: the buffers it owns.
struct MultiBuffer {
    parts: Vec<BufferPtr>,
}

fn multi_buffer_parts<'a>(buffer: BufferPtr) -> &'a [BufferPtr] {
    crate::ggml_assert!(buffer.is_multi_buffer(), "not a multi-buffer");
    // SAFETY: a multi-buffer's context is the MultiBuffer leaked in `multi_buffer_new`, alive
    // until the buffer is freed.
    unsafe { &(*buffer.context.cast::<MultiBuffer>()).parts }
}

unsafe extern "C" fn multi_buffer_free(buffer: *mut Buffer) {
    // SAFETY: called through the multi-buffer's own table with the buffer being freed.
    let buffer = unsafe { BufferPtr::from_raw(buffer) };
    let Some(buffer) = buffer else { crate::ggml_abort!("NULL multi-buffer") };
    // SAFETY: the context is the Box leaked in `multi_buffer_new`, reclaimed once, here.
    let multi = unsafe { Box::from_raw(buffer.context.cast::<MultiBuffer>()) };
    for part in multi.parts {
        part.free();
    }
}

unsafe extern "C" fn multi_buffer_clear(buffer: *mut Buffer, value: u8) {
    // SAFETY: called through the multi-buffer's own table with a live multi-buffer.
    let buffer = unsafe { BufferPtr::from_raw(buffer) };
    let Some(buffer) = buffer else { crate::ggml_abort!("NULL multi-buffer") };
    for part in multi_buffer_parts(buffer) {
        part.clear(value);
    }
}

const MULTI_BUFFER_IFACE: BufferInterface =
    BufferInterface { free_buffer: Some(multi_buffer_free), clear: Some(multi_buffer_clear), ..BufferInterface::EMPTY };

/// One buffer owning `parts` (freed with it), of their total size and the first part's type.
pub fn multi_buffer_new(parts: &[BufferPtr]) -> BufferPtr {
    crate::ggml_assert!(!parts.is_empty(), "a multi-buffer needs at least one buffer");
    let total: usize = parts.iter().map(|b| b.size()).sum();
    let buft = parts[0].buft;
    let context = Box::into_raw(Box::new(MultiBuffer { parts: parts.to_vec() }));
    BufferPtr::new(buft, MULTI_BUFFER_IFACE, context.cast(), total)
}

/// Sets the usage of every part of a multi-buffer.
pub fn multi_buffer_set_usage(buffer: BufferPtr, usage: BufferUsage) {
    for part in multi_buffer_parts(buffer) {
        part.set_usage(usage);
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

/// Writes `data` into the tensor's bytes starting at `offset`.
pub fn tensor_set(tensor: TensorPtr, data: &[u8], offset: usize) {
    let buf = storage_buffer_set(tensor);
    if data.is_empty() {
        return;
    }
    check_range(tensor, offset.checked_add(data.len()), "write");
    let set = required(buf.iface.set_tensor, "buffer", "set_tensor");
    // SAFETY: the entry belongs to the tensor's buffer; the range lies inside the tensor and
    // `data` is readable for its length.
    unsafe { set(buf.as_ptr(), tensor.as_ptr(), data.as_ptr().cast(), offset, data.len()) };
}

/// Reads the tensor's bytes starting at `offset` into `data`.
pub fn tensor_get(tensor: TensorPtr, data: &mut [u8], offset: usize) {
    let buf = storage_buffer_set(tensor);
    if data.is_empty() {
        return;
    }
    check_range(tensor, offset.checked_add(data.len()), "read");
    let get = required(buf.iface.get_tensor, "buffer", "get_tensor");
    // SAFETY: as in `tensor_set`, with `data` writable for its length.
    unsafe { get(buf.as_ptr(), tensor.as_ptr(), data.as_mut_ptr().cast(), offset, data.len()) };
}

/// How many bytes of host memory `n_copies` rows of `size` bytes, `stride` apart, span.
pub fn strided_span(size: usize, n_copies: usize, stride: usize) -> Option<usize> {
    match n_copies {
        0 => Some(0),
        n => (n - 1).checked_mul(stride)?.checked_add(size),
    }
}

/// A described 2-D copy: `n_copies` runs of `size` bytes, `stride_tensor` apart in the tensor
/// (from `offset`) and `stride_data` apart in host memory.
#[derive(Clone, Copy, Debug)]
pub struct Copy2d {
    pub offset: usize,
    pub size: usize,
    pub n_copies: usize,
    pub stride_tensor: usize,
    pub stride_data: usize,
}

impl Copy2d {
    fn data_span(&self) -> usize {
        match strided_span(self.size, self.n_copies, self.stride_data) {
            Some(n) => n,
            None => crate::ggml_abort!("2-D copy of {} rows overflows the address space", self.n_copies),
        }
    }

    fn tensor_end(&self) -> Option<usize> {
        strided_span(self.size, self.n_copies, self.stride_tensor)?.checked_add(self.offset)
    }
}

/// Writes the runs `c` describes from `data` (which must span them) into the tensor; one
/// `set` per run unless the buffer has a 2-D entry.
pub fn tensor_set_2d(tensor: TensorPtr, data: &[u8], c: Copy2d) {
    let buf = storage_buffer_set(tensor);
    crate::ggml_assert!(data.len() >= c.data_span(), "2-D write source is too short");
    let set_2d = match buf.iface.set_tensor_2d {
        Some(f) if c.n_copies > 1 => f,
        _ => {
            for i in 0..c.n_copies {
                let row = &data[i * c.stride_data..][..c.size];
                tensor_set(tensor, row, c.offset + i * c.stride_tensor);
            }
            return;
        }
    };
    if c.size == 0 {
        return;
    }
    check_range(tensor, c.tensor_end(), "write");
    // SAFETY: the entry belongs to the tensor's buffer; every run lies inside the tensor and
    // inside `data` (both checked above).
    unsafe {
        set_2d(
            buf.as_ptr(),
            tensor.as_ptr(),
            data.as_ptr().cast(),
            c.offset,
            c.size,
            c.n_copies,
            c.stride_tensor,
            c.stride_data,
        )
    };
}

/// Reads the runs `c` describes from the tensor into `data` (which must span them).
pub fn tensor_get_2d(tensor: TensorPtr, data: &mut [u8], c: Copy2d) {
    let buf = storage_buffer_set(tensor);
    crate::ggml_assert!(data.len() >= c.data_span(), "2-D read destination is too short");
    let get_2d = match buf.iface.get_tensor_2d {
        Some(f) if c.n_copies > 1 => f,
        _ => {
            for i in 0..c.n_copies {
                let row = &mut data[i * c.stride_data..][..c.size];
                tensor_get(tensor, row, c.offset + i * c.stride_tensor);
            }
            return;
        }
    };
    if c.size == 0 {
        return;
    }
    check_range(tensor, c.tensor_end(), "read");
    // SAFETY: as in `tensor_set_2d`, with `data` writable.
    unsafe {
        get_2d(
            buf.as_ptr(),
            tensor.as_ptr(),
            data.as_mut_ptr().cast(),
            c.offset,
            c.size,
            c.n_copies,
            c.stride_tensor,
            c.stride_data,
        )
    };
}

/// Sets `size` bytes of the tensor, from `offset`, to `value`.
pub fn tensor_memset(tensor: TensorPtr, value: u8, offset: usize, size: usize) {
    if size == 0 {
        return;
    }
    let buf = storage_buffer_set(tensor);
    check_range(tensor, offset.checked_add(size), "write");
    let Some(memset) = buf.iface.memset_tensor else {
        crate::ggml_abort!("memset not implemented by backend buffer {}", buf.buft().name_lossy())
    };
    // SAFETY: the entry belongs to the tensor's buffer; the range lies inside the tensor.
    unsafe { memset(buf.as_ptr(), tensor.as_ptr(), value, offset, size) };
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
    let buf = storage_buffer_set(dst);
    match buf.iface.cpy_tensor {
        // SAFETY: the entry belongs to dst's buffer; both tensors are live.
        Some(cpy) => unsafe { cpy(buf.as_ptr(), src.as_ptr(), dst.as_ptr()) },
        None => false,
    }
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
        crate::backend::meta::buffer_is_meta(buffer) || end.is_some_and(|e| e <= base + buffer.size()),
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
