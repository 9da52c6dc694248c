//! A backend on a CUDA device is a stream: tensor copies and graph computations are queued
//! on it and run in order, and `synchronize` waits for them. A graph is queued node by node
//! with no wait on the host inside it.

use std::ffi::{CString, c_char, c_void};
use std::sync::{Arc, OnceLock};

use super::gpu::{self, DevicePtr, Gpu, Stream};
use super::scratch::Scratch;
use super::{buffer, device, gpus, ops, registry};
use crate::backend::backend::BackendPtr;
use crate::backend::guid::StaticGuid;
use crate::backend::interface::{Backend, BackendInterface, Event};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::Tensor;

/// The CUDA backends' GUID (`ggml_backend_cuda_guid`).
static GUID: StaticGuid =
    StaticGuid::new([0x2c, 0xdd, 0xe8, 0x1c, 0x65, 0xb3, 0x65, 0x73, 0x6a, 0x12, 0x88, 0x61, 0x1c, 0xc9, 0xdc, 0x25]);

struct BackendContext {
    gpu: Arc<dyn Gpu>,
    stream: Stream,
    name: CString,
    /// Marks the end of a copy to another backend's stream, which waits for it (made on the
    /// first such copy).
    copy_event: OnceLock<gpu::GpuEvent>,
    /// What the kernels of this backend's graphs use between launches.
    scratch: Scratch,
}

const INTERFACE: BackendInterface = BackendInterface {
    get_name: Some(get_name),
    free: Some(free),
    set_tensor_async: Some(set_tensor_async),
    get_tensor_async: Some(get_tensor_async),
    set_tensor_2d_async: None,
    get_tensor_2d_async: None,
    cpy_tensor_async: Some(cpy_tensor_async),
    synchronize: Some(synchronize),
    graph_plan_create: None,
    graph_plan_free: None,
    graph_plan_update: None,
    graph_plan_compute: None,
    graph_compute: Some(graph_compute),
    event_record: Some(event_record),
    event_wait: Some(event_wait),
    graph_optimize: None,
};

/// `ggml_backend_cuda_init`: a backend with its own stream on GPU `index`; `None` (logged)
/// when there is no such GPU or no stream can be made.
pub fn init(index: usize) -> Option<*mut Backend> {
    let Some(gpu) = gpus::get(index) else {
        crate::log_error!("ggml_backend_cuda_init: invalid device {}\n", index);
        return None;
    };
    let stream = match gpu.stream_new() {
        Ok(s) => s,
        Err(e) => {
            crate::log_error!("ggml_backend_cuda_init: no stream on device {}: {}\n", index, e);
            return None;
        }
    };
    let device = registry::devices()[index];
    let name = CString::new(format!("CUDA{index}")).unwrap_or_default();
    let context =
        BackendContext { gpu: Arc::clone(gpu), stream, name, copy_event: OnceLock::new(), scratch: Scratch::default() };
    let context = Box::into_raw(Box::new(context));
    Some(Box::into_raw(Box::new(Backend { guid: GUID.as_ptr(), iface: INTERFACE, device, context: context.cast() })))
}

/// `ggml_backend_is_cuda`.
pub fn is_cuda(backend: BackendPtr) -> bool {
    GUID.names(backend)
}

/// # Safety
/// `backend` is one made by [`init`] and not yet freed.
unsafe fn context<'a>(backend: *mut Backend) -> &'a BackendContext {
    // SAFETY: the caller's contract: the context is the boxed BackendContext.
    unsafe { &*(*backend).context.cast::<BackendContext>() }
}

/// Aborts when a call queued by one of ggml's functions without a result failed.
fn check(result: gpu::GpuResult<()>, ctx: &BackendContext, what: &str) {
    if let Err(e) = result {
        crate::ggml_abort!("{}: CUDA error in {}: {}", ctx.name.to_string_lossy(), what, e);
    }
}

unsafe extern "C" fn get_name(backend: *mut Backend) -> *const c_char {
    // SAFETY: called by the backend's own table.
    unsafe { context(backend) }.name.as_ptr()
}

unsafe extern "C" fn free(backend: *mut Backend) {
    // SAFETY: called once by the backend's own table; both boxes were made in `init`; the
    // stream has finished before its event, scratch memory and itself are freed.
    unsafe {
        let ctx = Box::from_raw((*backend).context.cast::<BackendContext>());
        check(ctx.gpu.synchronize(ctx.stream), &ctx, "free");
        if let Some(&e) = ctx.copy_event.get() {
            ctx.gpu.event_free(e);
        }
        ctx.scratch.free(ctx.gpu.as_ref());
        ctx.gpu.stream_free(ctx.stream);
        drop(Box::from_raw(backend));
    }
}

/// The device address of byte `offset` of `tensor`, which must live in a CUDA buffer.
fn device_address(tensor: &Tensor, offset: usize, what: &str) -> DevicePtr {
    if buffer::gpu_of(tensor).is_none() {
        crate::ggml_abort!("{}: tensor {} is not in a CUDA buffer", what, tensor.name());
    }
    tensor.data as DevicePtr + offset as DevicePtr
}

unsafe extern "C" fn set_tensor_async(
    backend: *mut Backend,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: called by the backend's own table with a live tensor; the caller keeps `data`
    // until it synchronizes the backend.
    let (ctx, t) = unsafe { (context(backend), &*tensor) };
    let at = device_address(t, offset, "ggml_backend_tensor_set_async");
    // SAFETY: as above; the dispatcher checked the range.
    check(unsafe { ctx.gpu.upload(ctx.stream, at, data.cast(), size) }, ctx, "set_tensor_async");
}

unsafe extern "C" fn get_tensor_async(
    backend: *mut Backend,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: as in `set_tensor_async`, with `data` writable.
    let (ctx, t) = unsafe { (context(backend), &*tensor) };
    let at = device_address(t, offset, "ggml_backend_tensor_get_async");
    // SAFETY: as above.
    check(unsafe { ctx.gpu.download(ctx.stream, data.cast(), at, size) }, ctx, "get_tensor_async");
}

/// Copies between device buffers of CUDA backends: queued on the source's stream, and when
/// the destination's backend is another one, its stream waits for the copy.
unsafe extern "C" fn cpy_tensor_async(
    backend_src: *mut Backend,
    backend_dst: *mut Backend,
    src: *const Tensor,
    dst: *mut Tensor,
) -> bool {
    // SAFETY: called with live backends and tensors.
    let (src, dst) = unsafe { (&*src, &*dst) };
    // SAFETY: handles from the caller are live backends.
    let both_cuda = [backend_src, backend_dst].iter().all(|&b| unsafe { BackendPtr::from_raw(b) }.is_some_and(is_cuda));
    if !both_cuda || buffer::gpu_of(src).is_none() || buffer::gpu_of(dst).is_none() {
        return false;
    }
    // SAFETY: both are CUDA backends.
    let (from, to) = unsafe { (context(backend_src), context(backend_dst)) };
    let (d, s) = (dst.data as DevicePtr, src.data as DevicePtr);
    // SAFETY: both tensors are allocated in device buffers, of the same size (checked by the
    // caller).
    check(unsafe { from.gpu.copy(from.stream, d, s, src.nbytes()) }, from, "cpy_tensor_async");
    if backend_src != backend_dst {
        let event = match from.copy_event.get() {
            Some(&e) => e,
            None => {
                let made = from.gpu.event_new().unwrap_or_else(|e| {
                    crate::ggml_abort!("{}: cannot make an event: {}", from.name.to_string_lossy(), e)
                });
                *from.copy_event.get_or_init(|| made)
            }
        };
        check(from.gpu.event_record(event, from.stream), from, "cpy_tensor_async");
        check(to.gpu.stream_wait(to.stream, event), to, "cpy_tensor_async");
    }
    true
}

unsafe extern "C" fn synchronize(backend: *mut Backend) {
    // SAFETY: called by the backend's own table.
    let ctx = unsafe { context(backend) };
    check(ctx.gpu.synchronize(ctx.stream), ctx, "synchronize");
}

unsafe extern "C" fn graph_compute(backend: *mut Backend, cgraph: *mut Graph) -> Status {
    // SAFETY: called by the backend's own table with a live graph.
    let (ctx, graph) = unsafe { (context(backend), &*cgraph) };
    let queue = ops::Queue { gpu: ctx.gpu.as_ref(), stream: ctx.stream, scratch: &ctx.scratch };
    for node in graph.nodes() {
        if node.is_empty() || ops::is_layout_only(node.op) {
            continue;
        }
        if let Err(e) = ops::compute(&queue, &node) {
            crate::log_error!("{}: {} ({}) failed: {}\n", ctx.name.to_string_lossy(), node.name(), node.op.name(), e);
            return Status::FAILED;
        }
    }
    Status::SUCCESS
}

unsafe extern "C" fn event_record(backend: *mut Backend, event: *mut Event) {
    // SAFETY: called by the backend's own table with a live event of a CUDA device.
    let (ctx, handle) = unsafe { (context(backend), device::event_handle(event)) };
    check(ctx.gpu.event_record(handle, ctx.stream), ctx, "event_record");
}

unsafe extern "C" fn event_wait(backend: *mut Backend, event: *mut Event) {
    // SAFETY: as in `event_record`.
    let (ctx, handle) = unsafe { (context(backend), device::event_handle(event)) };
    check(ctx.gpu.stream_wait(ctx.stream, handle), ctx, "event_wait");
}
