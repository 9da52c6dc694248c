//! Device memory: the buffer type `"CUDA<i>"` of each device and its buffers. A buffer is one
//! allocation; tensor data operations are copies on the device's default stream, finished
//! before they return, as ggml's synchronous buffer calls promise.

use std::ffi::{CString, c_char, c_void};
use std::sync::Arc;

use super::gpu::{DevicePtr, Gpu, Stream};
use super::gpus;
use crate::backend::buffer::BufferPtr;
use crate::backend::interface::{Buffer, BufferInterface, BufferType, BufferTypeInterface, Device};
use crate::core::status::Status;
use crate::core::tensor::Tensor;

/// Tensor data in device buffers is aligned for the widest loads the kernels make.
const ALIGNMENT: usize = 128;

/// Quantized rows are padded to a multiple of this many values, so that kernels reading whole
/// groups of a row never step past its allocation (ggml's `MATRIX_ROW_PADDING`).
pub const ROW_PADDING: i64 = 512;

struct TypeContext {
    index: usize,
    name: CString,
}

const TYPE_INTERFACE: BufferTypeInterface = BufferTypeInterface {
    get_name: Some(get_name),
    alloc_buffer: Some(alloc_buffer),
    get_alignment: Some(get_alignment),
    get_max_size: None,
    get_alloc_size: Some(get_alloc_size),
    is_host: None,
};

/// The buffer type of GPU `index`, owned by `device`; it lives for the process.
pub fn new_type(device: *mut Device, index: usize) -> *mut BufferType {
    let name = CString::new(format!("CUDA{index}")).unwrap_or_default();
    let context = Box::into_raw(Box::new(TypeContext { index, name }));
    Box::into_raw(Box::new(BufferType { iface: TYPE_INTERFACE, device, context: context.cast() }))
}

/// # Safety
/// `buft` is a type made by [`new_type`].
unsafe fn type_context<'a>(buft: *mut BufferType) -> &'a TypeContext {
    // SAFETY: the caller's contract.
    unsafe { &*(*buft).context.cast::<TypeContext>() }
}

unsafe extern "C" fn get_name(buft: *mut BufferType) -> *const c_char {
    // SAFETY: called by the type's own table.
    unsafe { type_context(buft) }.name.as_ptr()
}

unsafe extern "C" fn get_alignment(_buft: *mut BufferType) -> usize {
    ALIGNMENT
}

/// The bytes `tensor` takes in a device buffer: its data, plus the padding of its last row
/// when it is quantized and its rows are not a multiple of [`ROW_PADDING`] values.
pub fn alloc_size(tensor: &Tensor) -> usize {
    let mut size = tensor.nbytes();
    let ne0 = tensor.ne[0];
    if tensor.type_.is_quantized() && ne0 % ROW_PADDING != 0 {
        size += tensor.type_.row_size(ROW_PADDING - ne0 % ROW_PADDING);
    }
    size
}

unsafe extern "C" fn get_alloc_size(_buft: *mut BufferType, tensor: *const Tensor) -> usize {
    // SAFETY: called with a live tensor.
    alloc_size(unsafe { &*tensor })
}

pub struct BufferContext {
    pub gpu: Arc<dyn Gpu>,
    pub base: DevicePtr,
}

const INTERFACE: BufferInterface = BufferInterface {
    free_buffer: Some(free_buffer),
    get_base: Some(get_base),
    init_tensor: Some(init_tensor),
    memset_tensor: Some(memset_tensor),
    set_tensor: Some(set_tensor),
    get_tensor: Some(get_tensor),
    set_tensor_2d: None,
    get_tensor_2d: None,
    cpy_tensor: Some(cpy_tensor),
    clear: Some(clear),
    reset: None,
};

unsafe extern "C" fn alloc_buffer(buft: *mut BufferType, size: usize) -> *mut Buffer {
    // SAFETY: called by the type's own table.
    let ctx = unsafe { type_context(buft) };
    let Some(gpu) = gpus::get(ctx.index) else { unreachable!("buffer types are made for the GPUs found") };
    // an empty buffer still gets a distinct address, as cudaMalloc of one byte would give
    match gpu.alloc(size.max(1)) {
        Ok(base) => {
            let context = Box::into_raw(Box::new(BufferContext { gpu: Arc::clone(gpu), base }));
            BufferPtr::new(buft, INTERFACE, context.cast(), size).as_ptr()
        }
        Err(e) => {
            crate::log_error!(
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating {:.2} MiB on device {} failed: {}\n",
                size as f64 / (1 << 20) as f64,
                ctx.index,
                e
            );
            std::ptr::null_mut()
        }
    }
}

/// The CUDA context of `buffer`, when it is one of ours.
///
/// # Safety
/// `buffer` is null or a live buffer.
pub unsafe fn context<'a>(buffer: *const Buffer) -> Option<&'a BufferContext> {
    // SAFETY: the caller's contract; our buffers' context is the BufferContext made in
    // `alloc_buffer`, alive until `free_buffer`.
    unsafe { crate::backend::buffer::context_of(buffer, free_buffer) }
}

/// # Safety
/// `buffer` is one of ours (the table is only installed on our buffers).
unsafe fn ours<'a>(buffer: *mut Buffer) -> &'a BufferContext {
    // SAFETY: the caller's contract.
    unsafe { context(buffer) }.unwrap_or_else(|| unreachable!("the CUDA buffer table is only on CUDA buffers"))
}

/// Aborts with `what` when a GPU call failed: ggml's buffer calls have no way to report it,
/// and going on would compute with data that is not there.
fn check(result: super::gpu::GpuResult<()>, what: &str) {
    if let Err(e) = result {
        crate::ggml_abort!("CUDA error in {}: {}", what, e);
    }
}

/// Runs `op` on the default stream of `gpu` and waits for it.
fn on_default_stream(gpu: &dyn Gpu, what: &str, op: impl FnOnce(&dyn Gpu) -> super::gpu::GpuResult<()>) {
    check(op(gpu).and_then(|()| gpu.synchronize(Stream::DEFAULT)), what);
}

unsafe extern "C" fn free_buffer(buffer: *mut Buffer) {
    // SAFETY: called once, by the buffer's own table, while the buffer is live.
    let ctx = unsafe { Box::from_raw((*buffer).context.cast::<BufferContext>()) };
    // SAFETY: ggml frees a buffer only after the work that used it has been synchronized.
    unsafe { ctx.gpu.free(ctx.base) };
}

unsafe extern "C" fn get_base(buffer: *mut Buffer) -> *mut c_void {
    // SAFETY: called by the buffer's own table.
    unsafe { ours(buffer) }.base as *mut c_void
}

unsafe extern "C" fn init_tensor(buffer: *mut Buffer, tensor: *mut Tensor) -> Status {
    // SAFETY: called by the buffer's own table with a live tensor placed in this buffer.
    let (ctx, t) = unsafe { (ours(buffer), &*tensor) };
    // the padding of a quantized tensor is zeroed once, so that the values kernels read past
    // the row's end are zeros and not whatever the memory held
    let padded = alloc_size(t);
    if t.view_src.is_null() && padded > t.nbytes() {
        let tail = t.data as DevicePtr + t.nbytes() as DevicePtr;
        // SAFETY: the allocator gave the tensor `padded` bytes from its data.
        on_default_stream(ctx.gpu.as_ref(), "init_tensor", |g| unsafe {
            g.memset(Stream::DEFAULT, tail, 0, padded - t.nbytes())
        });
    }
    Status::SUCCESS
}

unsafe extern "C" fn memset_tensor(buffer: *mut Buffer, tensor: *mut Tensor, value: u8, offset: usize, size: usize) {
    // SAFETY: called by the buffer's own table; the dispatcher checked the range.
    let (ctx, t) = unsafe { (ours(buffer), &*tensor) };
    let at = t.data as DevicePtr + offset as DevicePtr;
    // SAFETY: the range lies in the tensor's device memory.
    on_default_stream(ctx.gpu.as_ref(), "memset_tensor", |g| unsafe { g.memset(Stream::DEFAULT, at, value, size) });
}

unsafe extern "C" fn set_tensor(
    buffer: *mut Buffer,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: called by the buffer's own table; the dispatcher checked the range, and `data`
    // holds `size` bytes until we return (we wait for the copy).
    let (ctx, t) = unsafe { (ours(buffer), &*tensor) };
    let at = t.data as DevicePtr + offset as DevicePtr;
    // SAFETY: as above.
    on_default_stream(ctx.gpu.as_ref(), "set_tensor", |g| unsafe { g.upload(Stream::DEFAULT, at, data.cast(), size) });
}

unsafe extern "C" fn get_tensor(
    buffer: *mut Buffer,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: as in `set_tensor`, with `data` writable.
    let (ctx, t) = unsafe { (ours(buffer), &*tensor) };
    let at = t.data as DevicePtr + offset as DevicePtr;
    // SAFETY: as above.
    on_default_stream(ctx.gpu.as_ref(), "get_tensor", |g| unsafe {
        g.download(Stream::DEFAULT, data.cast(), at, size)
    });
}

/// Copies from another device buffer (on any GPU: addresses are unified); anything else is
/// the caller's to do through host memory.
unsafe extern "C" fn cpy_tensor(buffer: *mut Buffer, src: *const Tensor, dst: *mut Tensor) -> bool {
    // SAFETY: called by the buffer's own table with live tensors, `dst` in this buffer.
    let (ctx, src, dst) = unsafe { (ours(buffer), &*src, &*dst) };
    // SAFETY: a tensor's buffer is null or live.
    if unsafe { context(src.buffer.cast()) }.is_none() {
        return false;
    }
    let (to, from) = (dst.data as DevicePtr, src.data as DevicePtr);
    // SAFETY: both tensors are allocated in device buffers with the same size (checked by
    // ggml_backend_tensor_copy).
    on_default_stream(ctx.gpu.as_ref(), "cpy_tensor", |g| unsafe { g.copy(Stream::DEFAULT, to, from, src.nbytes()) });
    true
}

unsafe extern "C" fn clear(buffer: *mut Buffer, value: u8) {
    // SAFETY: called by the buffer's own table.
    let (ctx, size) = unsafe { (ours(buffer), (*buffer).size) };
    // SAFETY: the buffer's allocation covers `size` bytes from its base.
    on_default_stream(ctx.gpu.as_ref(), "clear", |g| unsafe { g.memset(Stream::DEFAULT, ctx.base, value, size) });
}

/// The GPU whose memory holds `tensor`, when it lives in a CUDA buffer.
pub fn gpu_of(tensor: &Tensor) -> Option<&Arc<dyn Gpu>> {
    // SAFETY: a tensor's buffer is null or live.
    unsafe { context(tensor.buffer.cast()) }.map(|c| &c.gpu)
}
