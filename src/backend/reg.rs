//! A handle to a backend registry (`ggml_backend_reg`): the table a backend exports to
//! list its devices. The process-wide list of registries is [`crate::registry`], above the
//! devices; the handle lives here so that devices and the meta device can name their own.

use std::cell::UnsafeCell;
use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use super::device::{lossy, required};
use super::interface::{Device, GGML_BACKEND_API_VERSION, Reg, RegInterface};

/// A handle to a `ggml_backend_reg`.
///
/// Registries are statics of the backend that defines them and live until it is unloaded; a
/// handle relies on that.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RegPtr(NonNull<Reg>);

// SAFETY: a registry is a table of functions that ggml lets any thread call; the handle is
// only an address, kept in the process-wide list.
unsafe impl Send for RegPtr {}

impl RegPtr {
    /// # Safety
    /// `ptr`, when not null, must point to a registry that outlives every use of the handle.
    pub unsafe fn from_raw(ptr: *mut Reg) -> Option<Self> {
        NonNull::new(ptr).map(RegPtr)
    }

    pub fn as_ptr(self) -> *mut Reg {
        self.0.as_ptr()
    }

    fn get(&self) -> &Reg {
        // SAFETY: the handle's contract keeps the registry alive.
        unsafe { self.0.as_ref() }
    }

    pub fn api_version(self) -> i32 {
        self.get().api_version
    }

    pub fn name(self) -> *const c_char {
        let f = required(self.get().iface.get_name, "registry", "get_name");
        // SAFETY: the entry belongs to this registry and is called with it.
        unsafe { f(self.as_ptr()) }
    }

    pub fn name_lossy(self) -> String {
        lossy(self.name())
    }

    pub fn dev_count(self) -> usize {
        let f = required(self.get().iface.get_device_count, "registry", "get_device_count");
        // SAFETY: as in `name`.
        unsafe { f(self.as_ptr()) }
    }

    /// Device `index` of this registry, as the registry returns it (it checks the index).
    pub fn dev_get(self, index: usize) -> *mut Device {
        let f = required(self.get().iface.get_device, "registry", "get_device");
        // SAFETY: as in `name`.
        unsafe { f(self.as_ptr(), index) }
    }

    /// An extra function the backend offers under `name`; NULL when it offers none.
    pub fn proc_address(self, name: &CStr) -> *mut c_void {
        match self.get().iface.get_proc_address {
            // SAFETY: as in `name`; `name` is a C string.
            Some(f) => unsafe { f(self.as_ptr(), name.as_ptr()) },
            None => std::ptr::null_mut(),
        }
    }
}

/// A registry defined as a `static` (a backend's base registry). C code receives a mutable
/// pointer to it, as to ggml's own static registries, so the value sits in an `UnsafeCell`.
pub struct StaticReg(UnsafeCell<Reg>);

// SAFETY: nothing in this library writes to a static registry after start-up; what C code may
// do through the pointer it gets is the same as with ggml's own statics.
unsafe impl Sync for StaticReg {}

impl StaticReg {
    pub const fn new(iface: RegInterface) -> StaticReg {
        StaticReg(UnsafeCell::new(Reg { api_version: GGML_BACKEND_API_VERSION, iface, context: std::ptr::null_mut() }))
    }

    pub const fn as_ptr(&'static self) -> *mut Reg {
        self.0.get()
    }

    pub fn handle(&'static self) -> RegPtr {
        // SAFETY: a static is never null and lives for the whole process.
        RegPtr(unsafe { NonNull::new_unchecked(self.0.get()) })
    }
}
