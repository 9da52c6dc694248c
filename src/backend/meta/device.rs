//! The meta device and its buffer type: tables whose answers combine those of the simple
//! devices (memory adds up, capabilities and op support must hold everywhere, alignment is the
//! strictest, the maximum size the smallest).
//!
//! Meta devices are made once per combination of simple devices and split callback and live
//! for the rest of the process, as registry devices do; so does the buffer type each one makes
//! on first request.

use std::ffi::{CString, c_char, c_void};
use std::sync::{Mutex, OnceLock};

use super::{GetSplitStateFn, MAX_DEVICES, SplitState, buffer};
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::device::DevicePtr;
use crate::backend::interface::{
    Backend, Buffer, BufferType, BufferTypeInterface, DevCaps, DevProps, DevType, Device, DeviceInterface,
};
use crate::core::tensor::{Tensor, TensorPtr};

/// What a meta device's `context` points to.
pub struct MetaDevice {
    pub simple: Vec<DevicePtr>,
    get_split_state: Option<GetSplitStateFn>,
    user_data: *mut c_void,
    name: CString,
    description: CString,
    buft: OnceLock<BufferTypePtr>,
}

impl MetaDevice {
    /// The user's split state for a statically allocated tensor.
    pub fn user_split_state(&self, tensor: TensorPtr) -> SplitState {
        let Some(f) = self.get_split_state else {
            crate::ggml_abort!("meta device {} has no split-state callback", self.name.to_string_lossy())
        };
        // SAFETY: the callback and its user data were handed over together by the user, who
        // keeps them valid for the device's lifetime; the tensor is live.
        unsafe { f(tensor.as_ptr(), self.user_data) }
    }
}

/// What a meta buffer type's `context` points to.
pub struct MetaBufferType {
    pub simple: Vec<BufferTypePtr>,
    name: CString,
}

/// The devices made so far, keyed by what they were made from.
struct Made {
    key: (Vec<DevicePtr>, usize, usize),
    device: DevicePtr,
}

static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// `ggml_backend_meta_device`: the meta device over `devs` (in that order) with the given
/// split rule; asking twice for the same combination gives the same device.
pub fn meta_device(devs: &[DevicePtr], get_split_state: Option<GetSplitStateFn>, user_data: *mut c_void) -> DevicePtr {
    crate::ggml_assert!(devs.len() <= MAX_DEVICES, "a meta device wraps at most {} devices", MAX_DEVICES);
    let key = (devs.to_vec(), get_split_state.map_or(0, |f| f as usize), user_data as usize);
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = made.iter().find(|m| m.key == key) {
        return m.device;
    }

    let joined = |part: fn(DevicePtr) -> String| devs.iter().map(|&d| part(d)).collect::<Vec<_>>().join(",");
    let name = format!("Meta({})", joined(|d| d.name_lossy()));
    let description = format!("Meta({})", joined(|d| crate::backend::device::lossy(d.description())));
    let ctx = Box::new(MetaDevice {
        simple: devs.to_vec(),
        get_split_state,
        user_data,
        name: CString::new(name).unwrap_or_default(),
        description: CString::new(description).unwrap_or_default(),
        buft: OnceLock::new(),
    });
    let device =
        Box::new(Device { iface: DEVICE_IFACE, reg: std::ptr::null_mut(), context: Box::into_raw(ctx).cast() });
    // SAFETY: leaked, so alive for the rest of the process.
    let device = unsafe { DevicePtr::from_raw(Box::into_raw(device)) }.expect("leaked device");
    made.push(Made { key, device });
    device
}

/// Whether `dev` is a meta device.
pub(super) fn is_meta_device(dev: *mut Device) -> bool {
    // SAFETY: a non-null device pointer handed to ggml points to a live device.
    !dev.is_null() && unsafe { (*dev).iface.get_name }.is_some_and(|f| std::ptr::fn_addr_eq(f, DEV_GET_NAME))
}

/// Whether `dev` is a meta device.
pub fn device_is_meta(dev: DevicePtr) -> bool {
    is_meta_device(dev.as_ptr())
}

/// Whether `buft` is a meta buffer type.
pub fn buft_is_meta(buft: BufferTypePtr) -> bool {
    is_meta_buft(buft.as_ptr())
}

/// The context of a meta device (aborts for any other device).
#[track_caller]
pub(super) fn meta_dev<'a>(dev: *mut Device) -> &'a MetaDevice {
    crate::ggml_assert!(is_meta_device(dev), "not a meta device");
    // SAFETY: meta devices carry a leaked MetaDevice as their context.
    unsafe { &*(*dev).context.cast::<MetaDevice>() }
}

/// Whether `buft` is a meta buffer type.
pub(super) fn is_meta_buft(buft: *mut BufferType) -> bool {
    // SAFETY: a non-null buffer type pointer handed to ggml points to a live buffer type.
    !buft.is_null() && unsafe { (*buft).iface.get_name }.is_some_and(|f| std::ptr::fn_addr_eq(f, BUFT_GET_NAME))
}

/// The context of a meta buffer type (aborts for any other type).
#[track_caller]
pub(super) fn meta_buft<'a>(buft: *mut BufferType) -> &'a MetaBufferType {
    crate::ggml_assert!(is_meta_buft(buft), "not a meta buffer type");
    // SAFETY: meta buffer types carry a leaked MetaBufferType as their context.
    unsafe { &*(*buft).context.cast::<MetaBufferType>() }
}

// ---------------------------------------------------------------------------------------------
// The device table

const DEV_GET_NAME: unsafe extern "C" fn(*mut Device) -> *const c_char = dev_get_name;

const DEVICE_IFACE: DeviceInterface = DeviceInterface {
    get_name: Some(DEV_GET_NAME),
    get_description: Some(dev_get_description),
    get_memory: Some(dev_get_memory),
    get_type: Some(dev_get_type),
    get_props: Some(dev_get_props),
    init_backend: Some(dev_init_backend),
    get_buffer_type: Some(dev_get_buffer_type),
    get_host_buffer_type: Some(dev_get_host_buffer_type),
    buffer_from_host_ptr: None,
    supports_op: Some(dev_supports_op),
    supports_buft: Some(dev_supports_buft),
    offload_op: None,
    event_new: None,
    event_free: None,
    event_synchronize: None,
};

unsafe extern "C" fn dev_get_name(dev: *mut Device) -> *const c_char {
    meta_dev(dev).name.as_ptr()
}

unsafe extern "C" fn dev_get_description(dev: *mut Device) -> *const c_char {
    meta_dev(dev).description.as_ptr()
}

fn total_memory(dev: &MetaDevice) -> (usize, usize) {
    dev.simple.iter().fold((0, 0), |(free, total), d| {
        let (f, t) = d.memory();
        (free + f, total + t)
    })
}

unsafe extern "C" fn dev_get_memory(dev: *mut Device, free: *mut usize, total: *mut usize) {
    let (f, t) = total_memory(meta_dev(dev));
    // SAFETY: callers pass valid out-pointers.
    unsafe {
        *free = f;
        *total = t;
    }
}

unsafe extern "C" fn dev_get_type(_dev: *mut Device) -> DevType {
    DevType::META
}

unsafe extern "C" fn dev_get_props(dev: *mut Device, props: *mut DevProps) {
    let meta = meta_dev(dev);
    let (memory_free, memory_total) = total_memory(meta);
    // Host buffers, buffers from host memory and events are not offered by the meta device.
    let mut caps =
        DevCaps { async_: true, host_buffer: false, buffer_from_host_ptr: false, events: false, mmap_support: true };
    for d in &meta.simple {
        let c = d.props().caps;
        caps.async_ &= c.async_;
        caps.host_buffer &= c.host_buffer;
        caps.buffer_from_host_ptr &= c.buffer_from_host_ptr;
        caps.events &= c.events;
        caps.mmap_support &= c.mmap_support;
    }
    let filled = DevProps {
        name: meta.name.as_ptr(),
        description: meta.description.as_ptr(),
        memory_free,
        memory_total,
        type_: DevType::META,
        device_id: std::ptr::null(),
        caps,
    };
    // SAFETY: callers pass a valid struct to fill.
    unsafe { props.write(filled) };
}

unsafe extern "C" fn dev_init_backend(dev: *mut Device, params: *const c_char) -> *mut Backend {
    super::backend::init(dev, params)
}

unsafe extern "C" fn dev_get_buffer_type(dev: *mut Device) -> *mut BufferType {
    let meta = meta_dev(dev);
    meta.buft
        .get_or_init(|| {
            let simple: Vec<BufferTypePtr> = meta.simple.iter().map(|d| d.buffer_type_handle()).collect();
            let name = format!("Meta({})", simple.iter().map(|b| b.name_lossy()).collect::<Vec<_>>().join(","));
            let ctx = Box::new(MetaBufferType { simple, name: CString::new(name).unwrap_or_default() });
            let buft = Box::new(BufferType { iface: BUFT_IFACE, device: dev, context: Box::into_raw(ctx).cast() });
            // SAFETY: leaked, so alive for the rest of the process.
            unsafe { BufferTypePtr::from_raw(Box::into_raw(buft)) }.expect("leaked buffer type")
        })
        .as_ptr()
}

/// The host buffer type all simple devices share; none if any lacks one or they differ.
unsafe extern "C" fn dev_get_host_buffer_type(dev: *mut Device) -> *mut BufferType {
    let mut common: Option<BufferTypePtr> = None;
    for d in &meta_dev(dev).simple {
        let Some(host) = d.host_buffer_type() else { return std::ptr::null_mut() };
        match common {
            Some(c) if c != host => return std::ptr::null_mut(),
            _ => common = Some(host),
        }
    }
    common.map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr)
}

unsafe extern "C" fn dev_supports_op(dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: callers pass a live tensor.
    let Some(op) = (unsafe { TensorPtr::from_raw(op.cast_mut()) }) else { crate::ggml_abort!("NULL op") };
    meta_dev(dev).simple.iter().all(|d| d.supports_op(op))
}

unsafe extern "C" fn dev_supports_buft(dev: *mut Device, buft: *mut BufferType) -> bool {
    if buft.is_null() {
        return false;
    }
    // SAFETY: callers pass a live buffer type.
    let buft_dev = unsafe { (*buft).device };
    is_meta_device(buft_dev) && meta_dev(dev).simple == meta_dev(buft_dev).simple
}

// ---------------------------------------------------------------------------------------------
// The buffer type table

const BUFT_GET_NAME: unsafe extern "C" fn(*mut BufferType) -> *const c_char = buft_get_name;

const BUFT_IFACE: BufferTypeInterface = BufferTypeInterface {
    get_name: Some(BUFT_GET_NAME),
    alloc_buffer: Some(buft_alloc_buffer),
    get_alignment: Some(buft_get_alignment),
    get_max_size: Some(buft_get_max_size),
    get_alloc_size: Some(buft_get_alloc_size),
    is_host: Some(buft_is_host),
};

unsafe extern "C" fn buft_get_name(buft: *mut BufferType) -> *const c_char {
    meta_buft(buft).name.as_ptr()
}

unsafe extern "C" fn buft_alloc_buffer(buft: *mut BufferType, size: usize) -> *mut Buffer {
    buffer::alloc_buffer(buft, size).map_or(std::ptr::null_mut(), BufferPtr::as_ptr)
}

unsafe extern "C" fn buft_get_alignment(buft: *mut BufferType) -> usize {
    let mut strictest = 1;
    for b in &meta_buft(buft).simple {
        let alignment = b.alignment();
        strictest = strictest.max(alignment);
        crate::ggml_assert!(
            strictest.is_multiple_of(alignment),
            "simple buffer type alignments are not multiples of each other"
        );
    }
    strictest
}

unsafe extern "C" fn buft_get_max_size(buft: *mut BufferType) -> usize {
    meta_buft(buft).simple.iter().map(|b| b.max_size()).min().unwrap_or(usize::MAX)
}

unsafe extern "C" fn buft_get_alloc_size(buft: *mut BufferType, tensor: *const Tensor) -> usize {
    // SAFETY: callers pass a live tensor.
    let Some(t) = (unsafe { TensorPtr::from_raw(tensor.cast_mut()) }) else { crate::ggml_abort!("NULL tensor") };
    meta_buft(buft).simple.iter().map(|b| b.alloc_size(t)).max().unwrap_or(0)
}

unsafe extern "C" fn buft_is_host(buft: *mut BufferType) -> bool {
    meta_buft(buft).simple.iter().all(|b| b.is_host())
}
