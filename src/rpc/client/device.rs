//! A device of a server, as the client sees it: a GPU-type device whose memory is the server's
//! report, whose buffer type allocates there and whose backends compute there. Every op is
//! offered (the server checks what it receives), as in the reference.
//!
//! Calls to a server complete in order on its one connection, so an event is complete when it
//! is recorded: the events exist because the scheduler asks for them, and waiting on one
//! returns at once.

use std::ffi::{CString, c_char};
use std::sync::atomic::AtomicU64;

use super::{backend, buffer_type, registry};
use crate::backend::buffer::BufferTypePtr;
use crate::backend::interface::{Backend, BufferType, DevCaps, DevProps, DevType, Device, DeviceInterface, Event};
use crate::core::tensor::Tensor;
use crate::rpc::wire::Command;

pub struct DeviceContext {
    pub endpoint: String,
    /// The device's index on its server.
    pub index: u32,
    name: CString,
    description: CString,
    /// The uid of the last graph sent to this device: the same uid again is recomputed on the
    /// server from its stored copy instead of being sent.
    pub last_graph_uid: AtomicU64,
}

const INTERFACE: DeviceInterface = DeviceInterface {
    get_name: Some(get_name),
    get_description: Some(get_description),
    get_memory: Some(get_memory),
    get_type: Some(get_type),
    get_props: Some(get_props),
    init_backend: Some(init_backend),
    get_buffer_type: Some(get_buffer_type),
    get_host_buffer_type: None,
    buffer_from_host_ptr: None,
    supports_op: Some(supports_op),
    supports_buft: Some(supports_buft),
    offload_op: None,
    event_new: Some(event_new),
    event_free: Some(event_free),
    event_synchronize: Some(event_synchronize),
};

/// A new device for device `index` of the server at `endpoint`, named `"RPC<number>"` and
/// described by the endpoint; it lives for the process.
pub fn new(endpoint: &str, index: u32, number: u32) -> *mut Device {
    let context = Box::new(DeviceContext {
        endpoint: endpoint.to_owned(),
        index,
        name: CString::new(format!("RPC{number}")).unwrap_or_default(),
        description: CString::new(endpoint).unwrap_or_default(),
        last_graph_uid: AtomicU64::new(0),
    });
    let device =
        Box::new(Device { iface: INTERFACE, reg: registry::base_ptr(), context: Box::into_raw(context).cast() });
    Box::into_raw(device)
}

/// # Safety
/// `dev` is a device made by [`new`].
pub unsafe fn context<'a>(dev: *mut Device) -> &'a DeviceContext {
    // SAFETY: the caller's contract: the context is the leaked DeviceContext.
    unsafe { &*(*dev).context.cast::<DeviceContext>() }
}

/// `ggml_backend_rpc_get_device_memory`: the server's `(free, total)`, or zeros (logged) when
/// it cannot be reached.
pub fn memory(endpoint: &str, index: u32) -> (usize, usize) {
    let conn = match super::connection::Connection::open(endpoint) {
        Ok(conn) => conn,
        Err(e) => {
            crate::log_error!("rpc: cannot reach {} for its memory: {}\n", endpoint, e);
            return (0, 0);
        }
    };
    let reply: [u8; 16] = conn.call_for(Command::GetDeviceMemory, &index.to_le_bytes());
    let field = |at: usize| u64::from_le_bytes(reply[at..at + 8].try_into().unwrap_or_default()) as usize;
    (field(0), field(8))
}

unsafe extern "C" fn get_name(dev: *mut Device) -> *const c_char {
    // SAFETY: called by the device's own table.
    unsafe { context(dev) }.name.as_ptr()
}

unsafe extern "C" fn get_description(dev: *mut Device) -> *const c_char {
    // SAFETY: called by the device's own table.
    unsafe { context(dev) }.description.as_ptr()
}

unsafe extern "C" fn get_memory(dev: *mut Device, free: *mut usize, total: *mut usize) {
    // SAFETY: called by the device's own table with valid out-pointers.
    unsafe {
        let ctx = context(dev);
        (*free, *total) = memory(&ctx.endpoint, ctx.index);
    }
}

unsafe extern "C" fn get_type(_dev: *mut Device) -> DevType {
    // the protocol does not say what the remote device is; the reference reports a GPU
    DevType::GPU
}

unsafe extern "C" fn get_props(dev: *mut Device, props: *mut DevProps) {
    // SAFETY: called by the device's own table with a struct to fill.
    unsafe {
        let props = &mut *props;
        props.name = get_name(dev);
        props.description = get_description(dev);
        props.type_ = get_type(dev);
        get_memory(dev, &mut props.memory_free, &mut props.memory_total);
        props.caps =
            DevCaps { async_: true, host_buffer: false, buffer_from_host_ptr: false, events: true, mmap_support: true };
    }
}

unsafe extern "C" fn init_backend(dev: *mut Device, _params: *const c_char) -> *mut Backend {
    // SAFETY: called by the device's own table.
    let ctx = unsafe { context(dev) };
    backend::init(&ctx.endpoint, ctx.index).unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn get_buffer_type(dev: *mut Device) -> *mut BufferType {
    // SAFETY: called by the device's own table.
    let ctx = unsafe { context(dev) };
    buffer_type::buffer_type(&ctx.endpoint, ctx.index).map_or(std::ptr::null_mut(), BufferTypePtr::as_ptr)
}

unsafe extern "C" fn supports_op(_dev: *mut Device, _op: *const Tensor) -> bool {
    true
}

unsafe extern "C" fn supports_buft(dev: *mut Device, buft: *mut BufferType) -> bool {
    // SAFETY: called by the device's own table; a non-null buffer type is live.
    let (ctx, buft) = unsafe { (context(dev), BufferTypePtr::from_raw(buft)) };
    buft.is_some_and(|b| buffer_type::is_of(b, &ctx.endpoint, ctx.index))
}

unsafe extern "C" fn event_new(dev: *mut Device) -> *mut Event {
    Box::into_raw(Box::new(Event { device: dev, context: std::ptr::null_mut() }))
}

unsafe extern "C" fn event_free(_dev: *mut Device, event: *mut Event) {
    // SAFETY: events come from `event_new` and are freed once.
    drop(unsafe { Box::from_raw(event) });
}

unsafe extern "C" fn event_synchronize(_dev: *mut Device, _event: *mut Event) {}
