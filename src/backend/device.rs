//! Devices (`ggml_backend_dev_*`): every query dispatches through the device's own table,
//! with ggml's answers where an entry is optional (no host buffer type, no offloading, no
//! events).

use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use super::buffer::{BufferPtr, BufferTypePtr};
use super::interface::{Backend, BufferType, DevProps, DevType, Device, Event, Reg};
use crate::core::tensor::TensorPtr;

/// Aborts when a table lacks an entry that ggml requires (ggml itself would call NULL).
#[track_caller]
pub(crate) fn required<F>(entry: Option<F>, table: &str, name: &str) -> F {
    match entry {
        Some(f) => f,
        None => crate::ggml_abort!("{table} interface has no {name} function"),
    }
}

/// A C string returned by a backend, for log messages ("(null)" when it returned NULL).
pub(crate) fn lossy(s: *const c_char) -> String {
    if s.is_null() {
        return "(null)".to_owned();
    }
    // SAFETY: names and descriptions handed out by backends are NUL-terminated strings that
    // live at least as long as the object they describe.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// A handle to a `ggml_backend_device`.
///
/// Devices belong to their registry and live until it is unloaded (usually for the whole
/// process); a handle relies on that, as a [`TensorPtr`] relies on its context.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DevicePtr(NonNull<Device>);

// SAFETY: a device is a table of functions plus context that ggml lets any thread query; the
// handle is only an address, kept in the process-wide registry.
unsafe impl Send for DevicePtr {}

impl DevicePtr {
    /// # Safety
    /// `ptr`, when not null, must point to a device that outlives every use of the handle.
    pub unsafe fn from_raw(ptr: *mut Device) -> Option<Self> {
        NonNull::new(ptr).map(DevicePtr)
    }

    pub fn as_ptr(self) -> *mut Device {
        self.0.as_ptr()
    }

    fn get(&self) -> &Device {
        // SAFETY: the handle's contract keeps the device alive.
        unsafe { self.0.as_ref() }
    }

    /// Short identifier, such as "CPU" or "CUDA0".
    pub fn name(self) -> *const c_char {
        let f = required(self.get().iface.get_name, "device", "get_name");
        // SAFETY: the entry belongs to this device and is called with it.
        unsafe { f(self.as_ptr()) }
    }

    pub fn name_lossy(self) -> String {
        lossy(self.name())
    }

    /// Longer, human-readable description (for a CPU, the model name).
    pub fn description(self) -> *const c_char {
        let f = required(self.get().iface.get_description, "device", "get_description");
        // SAFETY: as in `name`.
        unsafe { f(self.as_ptr()) }
    }

    /// `(free, total)` device memory in bytes; zeros when the device reports none.
    pub fn memory(self) -> (usize, usize) {
        let f = required(self.get().iface.get_memory, "device", "get_memory");
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: as in `name`; both out-pointers are valid for writes.
        unsafe { f(self.as_ptr(), &mut free, &mut total) };
        (free, total)
    }

    pub fn dev_type(self) -> DevType {
        let f = required(self.get().iface.get_type, "device", "get_type");
        // SAFETY: as in `name`.
        unsafe { f(self.as_ptr()) }
    }

    /// All properties at once, starting from a zeroed struct as ggml does, so that fields a
    /// backend leaves alone read as NULL/0/false.
    pub fn props(self) -> DevProps {
        let f = required(self.get().iface.get_props, "device", "get_props");
        let mut props = DevProps {
            name: std::ptr::null(),
            description: std::ptr::null(),
            memory_free: 0,
            memory_total: 0,
            type_: DevType(0),
            device_id: std::ptr::null(),
            caps: Default::default(),
        };
        // SAFETY: as in `name`; `props` is a valid, initialised struct for the entry to fill.
        unsafe { f(self.as_ptr(), &mut props) };
        props
    }

    /// The registry the device belongs to.
    pub fn reg(self) -> *mut Reg {
        self.get().reg
    }

    /// Creates a backend (stream) on this device; NULL when the device cannot.
    pub fn init_backend(self, params: Option<&CStr>) -> *mut Backend {
        let f = required(self.get().iface.init_backend, "device", "init_backend");
        let params = params.map_or(std::ptr::null(), CStr::as_ptr);
        // SAFETY: as in `name`; `params` is NULL or a C string, as the entry expects.
        unsafe { f(self.as_ptr(), params) }
    }

    /// The device's preferred buffer type.
    pub fn buffer_type(self) -> *mut BufferType {
        let f = required(self.get().iface.get_buffer_type, "device", "get_buffer_type");
        // SAFETY: as in `name`.
        unsafe { f(self.as_ptr()) }
    }

    /// The device's preferred buffer type, as a handle (aborts if the device returns NULL).
    #[track_caller]
    pub fn buffer_type_handle(self) -> BufferTypePtr {
        // SAFETY: buffer types returned by devices live at least as long as the device.
        match unsafe { BufferTypePtr::from_raw(self.buffer_type()) } {
            Some(buft) => buft,
            None => crate::ggml_abort!("device {} has no buffer type", self.name_lossy()),
        }
    }

    /// The pinned host buffer type, if the device has one.
    pub fn host_buffer_type(self) -> Option<BufferTypePtr> {
        let f = self.get().iface.get_host_buffer_type?;
        // SAFETY: as in `name`; the returned type outlives the device.
        unsafe { BufferTypePtr::from_raw(f(self.as_ptr())) }
    }

    /// Wraps `size` bytes of host memory at `ptr` in a buffer of this device.
    ///
    /// # Safety
    /// `ptr` must address `size` bytes that stay valid (and owned by the caller) for the
    /// buffer's lifetime.
    pub unsafe fn buffer_from_host_ptr(
        self,
        ptr: *mut c_void,
        size: usize,
        max_tensor_size: usize,
    ) -> Option<BufferPtr> {
        let f = required(self.get().iface.buffer_from_host_ptr, "device", "buffer_from_host_ptr");
        // SAFETY: as in `name`; the caller vouches for the memory it hands over.
        let buffer = unsafe { f(self.as_ptr(), ptr, size, max_tensor_size) };
        // SAFETY: buffers returned by devices are made by ggml_backend_buffer_init.
        unsafe { BufferPtr::from_raw(buffer) }
    }

    pub fn supports_op(self, op: TensorPtr) -> bool {
        let f = required(self.get().iface.supports_op, "device", "supports_op");
        // SAFETY: as in `name`; `op` is a live tensor.
        unsafe { f(self.as_ptr(), op.as_ptr()) }
    }

    pub fn supports_buft(self, buft: BufferTypePtr) -> bool {
        let f = required(self.get().iface.supports_buft, "device", "supports_buft");
        // SAFETY: as in `name`; `buft` is a live buffer type.
        unsafe { f(self.as_ptr(), buft.as_ptr()) }
    }

    /// Whether the device wants to run `op` even when its weights live elsewhere; false for
    /// devices without an opinion.
    pub fn offload_op(self, op: TensorPtr) -> bool {
        match self.get().iface.offload_op {
            // SAFETY: as in `supports_op`.
            Some(f) => unsafe { f(self.as_ptr(), op.as_ptr()) },
            None => false,
        }
    }

    /// A new event on this device; NULL for devices without events.
    pub fn event_new(self) -> *mut Event {
        match self.get().iface.event_new {
            // SAFETY: as in `name`.
            Some(f) => unsafe { f(self.as_ptr()) },
            None => std::ptr::null_mut(),
        }
    }

    pub(super) fn event_free(self, event: *mut Event) {
        let f = required(self.get().iface.event_free, "device", "event_free");
        // SAFETY: as in `name`; `event` was made by this device's event_new.
        unsafe { f(self.as_ptr(), event) }
    }

    pub(super) fn event_synchronize(self, event: *mut Event) {
        let f = required(self.get().iface.event_synchronize, "device", "event_synchronize");
        // SAFETY: as in `event_free`.
        unsafe { f(self.as_ptr(), event) }
    }
}
