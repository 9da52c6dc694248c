//! A GPU as a ggml device: `"CUDA<i>"`, described by the GPU's name, identified by its PCI bus
//! id. Its buffer type allocates device memory, its host buffer type page-locked memory, and
//! its backends are streams. `supports_op` is exactly what `ops` can compute.

use std::ffi::{CString, c_char};
use std::sync::Arc;

use super::gpu::{self, Gpu};
use super::{backend, buffer, gpus, host_buffer, ops, registry};
use crate::backend::interface::{Backend, BufferType, DevCaps, DevProps, DevType, Device, DeviceInterface, Event};
use crate::core::op::Op;
use crate::core::tensor::Tensor;

/// Products and other ops on fewer rows than this are left to the CPU when their weights live
/// there: copying the weights over would cost more than the computation (ggml's
/// `GGML_OP_OFFLOAD_MIN_BATCH`).
const OFFLOAD_MIN_BATCH: i64 = 32;

pub struct DeviceContext {
    pub index: usize,
    pub gpu: Arc<dyn Gpu>,
    name: CString,
    description: CString,
    pci_bus_id: CString,
    pub buffer_type: *mut BufferType,
}

const INTERFACE: DeviceInterface = DeviceInterface {
    get_name: Some(get_name),
    get_description: Some(get_description),
    get_memory: Some(get_memory),
    get_type: Some(get_type),
    get_props: Some(get_props),
    init_backend: Some(init_backend),
    get_buffer_type: Some(get_buffer_type),
    get_host_buffer_type: Some(get_host_buffer_type),
    buffer_from_host_ptr: None,
    supports_op: Some(supports_op),
    supports_buft: Some(supports_buft),
    offload_op: Some(offload_op),
    event_new: Some(event_new),
    event_free: Some(event_free),
    event_synchronize: Some(event_synchronize),
};

/// The device of GPU `index`; it lives for the process.
pub fn new(index: usize) -> *mut Device {
    let Some(gpu) = gpus::get(index) else { unreachable!("devices are made for the GPUs found") };
    let info = gpu.info();
    let text = |s: &str| CString::new(s.replace('\0', "")).unwrap_or_default();
    let device =
        Box::into_raw(Box::new(Device { iface: INTERFACE, reg: registry::reg_ptr(), context: std::ptr::null_mut() }));
    let context = Box::new(DeviceContext {
        index,
        gpu: Arc::clone(gpu),
        name: text(&format!("CUDA{index}")),
        description: text(&info.name),
        pci_bus_id: text(&info.pci_bus_id),
        buffer_type: buffer::new_type(device, index),
    });
    // SAFETY: just made, and not yet shared.
    unsafe { (*device).context = Box::into_raw(context).cast() };
    device
}

/// # Safety
/// `dev` is a device made by [`new`].
pub unsafe fn context<'a>(dev: *mut Device) -> &'a DeviceContext {
    // SAFETY: the caller's contract: the context is the leaked DeviceContext.
    unsafe { &*(*dev).context.cast::<DeviceContext>() }
}

unsafe extern "C" fn get_name(dev: *mut Device) -> *const c_char {
    // SAFETY: called by the device's own table.
    unsafe { context(dev) }.name.as_ptr()
}

unsafe extern "C" fn get_description(dev: *mut Device) -> *const c_char {
    // SAFETY: called by the device's own table.
    unsafe { context(dev) }.description.as_ptr()
}

/// `(free, total)` bytes of the GPU's memory, zeros (logged) when the driver cannot say.
pub fn memory(gpu: &dyn Gpu) -> (usize, usize) {
    gpu.memory().unwrap_or_else(|e: gpu::Error| {
        crate::log_error!("CUDA: cannot read the memory of {}: {}\n", gpu.info().name, e);
        (0, 0)
    })
}

unsafe extern "C" fn get_memory(dev: *mut Device, free: *mut usize, total: *mut usize) {
    // SAFETY: called by the device's own table with valid out-pointers.
    unsafe { (*free, *total) = memory(context(dev).gpu.as_ref()) };
}

unsafe extern "C" fn get_type(dev: *mut Device) -> DevType {
    // SAFETY: called by the device's own table.
    if unsafe { context(dev) }.gpu.info().integrated { DevType::IGPU } else { DevType::GPU }
}

unsafe extern "C" fn get_props(dev: *mut Device, props: *mut DevProps) {
    // SAFETY: called by the device's own table with a struct to fill.
    unsafe {
        let ctx = context(dev);
        let props = &mut *props;
        props.name = get_name(dev);
        props.description = get_description(dev);
        props.type_ = get_type(dev);
        props.device_id = ctx.pci_bus_id.as_ptr();
        get_memory(dev, &mut props.memory_free, &mut props.memory_total);
        props.caps = DevCaps {
            async_: true,
            host_buffer: true,
            buffer_from_host_ptr: false,
            events: true,
            mmap_support: !ctx.gpu.info().integrated,
        };
    }
}

unsafe extern "C" fn init_backend(dev: *mut Device, _params: *const c_char) -> *mut Backend {
    // SAFETY: called by the device's own table.
    backend::init(unsafe { context(dev) }.index).unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn get_buffer_type(dev: *mut Device) -> *mut BufferType {
    // SAFETY: called by the device's own table.
    unsafe { context(dev) }.buffer_type
}

unsafe extern "C" fn get_host_buffer_type(_dev: *mut Device) -> *mut BufferType {
    host_buffer::buffer_type().as_ptr()
}

unsafe extern "C" fn supports_op(_dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: called with a live tensor.
    ops::supports(unsafe { &*op })
}

unsafe extern "C" fn supports_buft(dev: *mut Device, buft: *mut BufferType) -> bool {
    // SAFETY: called by the device's own table.
    unsafe { context(dev) }.buffer_type == buft
}

/// How many rows an op works on, as the offload decision counts them.
fn batch_size(op: &Tensor) -> i64 {
    match op.op {
        Op::GET_ROWS => 0,
        Op::MUL_MAT => op.ne[1],
        Op::MUL_MAT_ID | Op::ROPE | Op::ROPE_BACK => op.ne[2],
        _ => op.nrows(),
    }
}

unsafe extern "C" fn offload_op(_dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: called with a live tensor.
    batch_size(unsafe { &*op }) >= OFFLOAD_MIN_BATCH
}

unsafe extern "C" fn event_new(dev: *mut Device) -> *mut Event {
    // SAFETY: called by the device's own table.
    let ctx = unsafe { context(dev) };
    match ctx.gpu.event_new() {
        Ok(e) => Box::into_raw(Box::new(Event { device: dev, context: e.0 as *mut _ })),
        Err(e) => {
            crate::log_error!("{}: cannot make an event: {}\n", ctx.name.to_string_lossy(), e);
            std::ptr::null_mut()
        }
    }
}

/// The GPU's handle of an event of ours.
///
/// # Safety
/// `event` came from [`event_new`] and is live.
pub unsafe fn event_handle(event: *mut Event) -> gpu::GpuEvent {
    // SAFETY: the caller's contract.
    gpu::GpuEvent(unsafe { (*event).context } as usize)
}

unsafe extern "C" fn event_free(dev: *mut Device, event: *mut Event) {
    // SAFETY: events come from `event_new` and are freed once.
    unsafe {
        context(dev).gpu.event_free(event_handle(event));
        drop(Box::from_raw(event));
    }
}

unsafe extern "C" fn event_synchronize(dev: *mut Device, event: *mut Event) {
    // SAFETY: called by the device's own table with a live event of it.
    let (ctx, handle) = unsafe { (context(dev), event_handle(event)) };
    if let Err(e) = ctx.gpu.event_synchronize(handle) {
        crate::ggml_abort!("{}: waiting for an event failed: {}", ctx.name.to_string_lossy(), e);
    }
}
