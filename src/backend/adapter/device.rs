//! Devices and their events: the table of every Rust device, a device handle's object, and
//! the events Rust devices make.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void};

use super::{c_str, leak_shared, owned, owned_context, same_entries, shared, shared_context, take_owned, tensor_arg};
use crate::backend::handle::{BackendPtr, BufferPtr, BufferTypePtr, DevicePtr, EventPtr};
use crate::backend::interface::{
    Backend as RawBackend, Buffer as RawBuffer, BufferType as RawBufferType, DevProps, DevType, Device as RawDevice,
    DeviceInterface, Event as RawEvent, Reg as RawReg,
};
use crate::backend::traits::{Device, Event};
use crate::core::tensor::Tensor;

const TABLE: DeviceInterface = DeviceInterface {
    get_name: Some(get_name),
    get_description: Some(get_description),
    get_memory: Some(get_memory),
    get_type: Some(get_type),
    get_props: Some(get_props),
    init_backend: Some(init_backend),
    get_buffer_type: Some(get_buffer_type),
    get_host_buffer_type: Some(get_host_buffer_type),
    buffer_from_host_ptr: Some(buffer_from_host_ptr),
    supports_op: Some(supports_op),
    supports_buft: Some(supports_buft),
    offload_op: Some(offload_op),
    event_new: Some(event_new),
    event_free: Some(event_free),
    event_synchronize: Some(event_synchronize),
};

/// A device of `reg` (NULL for none) served by the object `make` returns, which is given the
/// device's handle; it lives for the rest of the process.
pub fn leak_device(reg: *mut RawReg, make: impl FnOnce(DevicePtr) -> Box<dyn Device>) -> DevicePtr {
    let raw = Box::into_raw(Box::new(RawDevice { iface: TABLE, reg, context: std::ptr::null_mut() }));
    // SAFETY: leaked, so alive for the rest of the process.
    let Some(device) = (unsafe { DevicePtr::from_raw(raw) }) else { unreachable!("boxes are never null") };
    let context = leak_shared(make(device));
    // SAFETY: the struct was just made and is not shared yet (`make` only keeps its address).
    unsafe { (*raw).context = context };
    device
}

/// A device defined as a `static`, served by the object in `slot` (as [`super::StaticReg`]).
pub struct StaticDevice(UnsafeCell<RawDevice>);

// SAFETY: never written after it is made; what C code does through the pointer it gets is as
// with ggml's own static devices.
unsafe impl Sync for StaticDevice {}

impl StaticDevice {
    pub const fn new(reg: *mut RawReg, slot: &'static &'static dyn Device) -> Self {
        StaticDevice(UnsafeCell::new(RawDevice { iface: TABLE, reg, context: shared_context(slot) }))
    }

    pub fn handle(&'static self) -> DevicePtr {
        // SAFETY: a static lives for the whole process and is never null.
        match unsafe { DevicePtr::from_raw(self.0.get()) } {
            Some(d) => d,
            None => unreachable!("statics are never null"),
        }
    }
}

/// An event of `device` whose synchronization is `object`'s; the device's `event_free`
/// drops it.
pub fn new_event(device: DevicePtr, object: Box<dyn Event>) -> EventPtr {
    let raw = Box::into_raw(Box::new(RawEvent { device: device.as_ptr(), context: owned_context(object) }));
    // SAFETY: a fresh box, alive until `event_free`.
    match unsafe { EventPtr::from_raw(raw) } {
        Some(e) => e,
        None => unreachable!("boxes are never null"),
    }
}

impl DevicePtr {
    /// What the device is: its Rust object when its table is the adapter's, else the C
    /// struct, served through its table.
    pub(in crate::backend) fn object<'a>(self) -> &'a dyn Device {
        let raw: &RawDevice = self.raw();
        if is_ours(raw) {
            // SAFETY: with the adapter's table the context is a shared slot of ours.
            unsafe { shared::<dyn Device>(raw.context) }
        } else {
            raw
        }
    }

    /// The device's Rust object if it is a `T`.
    pub fn downcast<T: Device>(self) -> Option<&'static T> {
        let raw: &RawDevice = self.raw();
        if !same_entries!(raw.iface, TABLE; init_backend) {
            return None;
        }
        // SAFETY: with an entry of the adapter the context is a shared slot of ours.
        let object: &dyn Device = unsafe { shared::<dyn Device>(raw.context) };
        (object as &dyn std::any::Any).downcast_ref::<T>()
    }
}

fn is_ours(raw: &RawDevice) -> bool {
    same_entries!(raw.iface, TABLE; get_name, get_description, get_memory, get_type, get_props, init_backend,
        get_buffer_type, get_host_buffer_type, buffer_from_host_ptr, supports_op, supports_buft, offload_op,
        event_new, event_free, event_synchronize)
}

impl EventPtr {
    /// What the event is: the Rust object when a Rust device made it, else the C struct,
    /// served through its device's table.
    pub(in crate::backend) fn object<'a>(self) -> &'a dyn Event {
        let raw: &RawEvent = self.raw();
        // SAFETY: an event's device outlives it.
        if unsafe { raw.device.as_ref() }.is_some_and(is_ours) {
            // SAFETY: events of the adapter's devices are made by `new_event`.
            unsafe { owned::<dyn Event>(raw.context) }
        } else {
            raw
        }
    }

    /// The event's Rust object if it is a `T`.
    pub fn downcast<'a, T: Event>(self) -> Option<&'a T> {
        let raw: &RawEvent = self.raw();
        // SAFETY: as in `object`.
        let ours = unsafe { raw.device.as_ref() }.is_some_and(|d| same_entries!(d.iface, TABLE; event_free));
        if !ours {
            return None;
        }
        // SAFETY: as in `object`.
        let object: &dyn Event = unsafe { owned::<dyn Event>(raw.context) };
        (object as &dyn std::any::Any).downcast_ref::<T>()
    }
}

/// The object and handle of a device this table was called for.
fn object(dev: *mut RawDevice) -> (&'static dyn Device, DevicePtr) {
    // SAFETY: the table's entries are called with a live device whose context is ours.
    match unsafe { DevicePtr::from_raw(dev) } {
        // SAFETY: as above.
        Some(d) => (unsafe { shared::<dyn Device>((*dev).context) }, d),
        None => crate::ggml_abort!("NULL device passed to a device's table"),
    }
}

unsafe extern "C" fn get_name(dev: *mut RawDevice) -> *const c_char {
    object(dev).0.get_name().as_ptr()
}

unsafe extern "C" fn get_description(dev: *mut RawDevice) -> *const c_char {
    object(dev).0.get_description().as_ptr()
}

unsafe extern "C" fn get_memory(dev: *mut RawDevice, free: *mut usize, total: *mut usize) {
    let (f, t) = object(dev).0.get_memory();
    crate::ggml_assert!(!free.is_null() && !total.is_null(), "NULL free or total passed to get_memory");
    // SAFETY: non-null out-pointers are writable (the entry's contract).
    unsafe { (*free, *total) = (f, t) };
}

unsafe extern "C" fn get_type(dev: *mut RawDevice) -> DevType {
    object(dev).0.get_type()
}

unsafe extern "C" fn get_props(dev: *mut RawDevice, props: *mut DevProps) {
    let filled = object(dev).0.get_props();
    crate::ggml_assert!(!props.is_null(), "NULL props passed to get_props");
    // SAFETY: a non-null props struct is writable (the entry's contract).
    unsafe { props.write(filled) };
}

unsafe extern "C" fn init_backend(dev: *mut RawDevice, params: *const c_char) -> *mut RawBackend {
    let (object, this) = object(dev);
    // SAFETY: `params` is NULL or a C string (the entry's contract).
    let params = unsafe { c_str(params) };
    object.init_backend(this, params).map_or(std::ptr::null_mut(), BackendPtr::as_ptr)
}

unsafe extern "C" fn get_buffer_type(dev: *mut RawDevice) -> *mut RawBufferType {
    let (object, this) = object(dev);
    object.get_buffer_type(this).map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr)
}

unsafe extern "C" fn get_host_buffer_type(dev: *mut RawDevice) -> *mut RawBufferType {
    object(dev).0.get_host_buffer_type().map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr)
}

unsafe extern "C" fn buffer_from_host_ptr(
    dev: *mut RawDevice,
    ptr: *mut c_void,
    size: usize,
    max_tensor_size: usize,
) -> *mut RawBuffer {
    // SAFETY: the caller vouches for the memory it hands over (the entry's contract).
    let buffer = unsafe { object(dev).0.buffer_from_host_ptr(ptr, size, max_tensor_size) };
    buffer.map_or(std::ptr::null_mut(), BufferPtr::as_ptr)
}

unsafe extern "C" fn supports_op(dev: *mut RawDevice, op: *const Tensor) -> bool {
    object(dev).0.supports_op(tensor_arg(op, "supports_op"))
}

unsafe extern "C" fn supports_buft(dev: *mut RawDevice, buft: *mut RawBufferType) -> bool {
    let object = object(dev).0;
    // SAFETY: a non-null buffer type handed to a device is live.
    unsafe { BufferTypePtr::from_raw(buft) }.is_some_and(|b| object.supports_buft(b))
}

unsafe extern "C" fn offload_op(dev: *mut RawDevice, op: *const Tensor) -> bool {
    object(dev).0.offload_op(tensor_arg(op, "offload_op"))
}

unsafe extern "C" fn event_new(dev: *mut RawDevice) -> *mut RawEvent {
    let (object, this) = object(dev);
    object.event_new(this).map_or(std::ptr::null_mut(), EventPtr::as_ptr)
}

unsafe extern "C" fn event_free(dev: *mut RawDevice, event: *mut RawEvent) {
    object(dev);
    crate::ggml_assert!(!event.is_null(), "NULL event passed to event_free");
    // SAFETY: the events of the adapter's devices are made by `new_event` (struct and
    // context boxed) and freed once, here.
    unsafe {
        let event = Box::from_raw(event);
        drop(take_owned::<dyn Event>(event.context));
    }
}

unsafe extern "C" fn event_synchronize(dev: *mut RawDevice, event: *mut RawEvent) {
    object(dev);
    crate::ggml_assert!(!event.is_null(), "NULL event passed to event_synchronize");
    // SAFETY: as in `event_free`, the event being live.
    unsafe { owned::<dyn Event>((*event).context) }.synchronize();
}
