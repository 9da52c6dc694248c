//! Registries: the table of every Rust registry, and a registry handle's object.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void};

use super::{c_str, leak_shared, same_entries, shared, shared_context};
use crate::backend::handle::RegPtr;
use crate::backend::interface::{Device as RawDevice, GGML_BACKEND_API_VERSION, Reg as RawReg, RegInterface};
use crate::backend::traits::Reg;

const TABLE: RegInterface = RegInterface {
    get_name: Some(get_name),
    get_device_count: Some(get_device_count),
    get_device: Some(get_device),
    get_proc_address: Some(get_proc_address),
};

/// A registry served by `object`, for the rest of the process.
pub fn leak_reg(object: Box<dyn Reg>) -> RegPtr {
    let raw = Box::new(RawReg { api_version: GGML_BACKEND_API_VERSION, iface: TABLE, context: leak_shared(object) });
    // SAFETY: leaked, so alive for the rest of the process.
    match unsafe { RegPtr::from_raw(Box::into_raw(raw)) } {
        Some(r) => r,
        None => unreachable!("boxes are never null"),
    }
}

/// A registry defined as a `static` (a backend's base registry), served by the object in
/// `slot`. C code receives a mutable pointer to it, as to ggml's own static registries, so
/// the struct sits in an `UnsafeCell`.
pub struct StaticReg(UnsafeCell<RawReg>);

// SAFETY: nothing in this library writes to a static registry; what C code may do through
// the pointer it gets is the same as with ggml's own statics.
unsafe impl Sync for StaticReg {}

impl StaticReg {
    pub const fn new(slot: &'static &'static dyn Reg) -> StaticReg {
        StaticReg(UnsafeCell::new(RawReg {
            api_version: GGML_BACKEND_API_VERSION,
            iface: TABLE,
            context: shared_context(slot),
        }))
    }

    /// The address devices keep as their `reg`.
    pub const fn as_ptr(&'static self) -> *mut RawReg {
        self.0.get()
    }

    pub fn handle(&'static self) -> RegPtr {
        // SAFETY: a static lives for the whole process and is never null.
        match unsafe { RegPtr::from_raw(self.0.get()) } {
            Some(r) => r,
            None => unreachable!("statics are never null"),
        }
    }
}

impl RegPtr {
    /// What the registry is: its Rust object when its table is the adapter's, else the C
    /// struct, served through its table (a plugin's registry).
    pub(in crate::backend) fn object<'a>(self) -> &'a dyn Reg {
        let raw: &RawReg = self.raw();
        if same_entries!(raw.iface, TABLE; get_name, get_device_count, get_device, get_proc_address) {
            // SAFETY: with the adapter's table the context is a shared slot of ours.
            unsafe { shared::<dyn Reg>(raw.context) }
        } else {
            raw
        }
    }

    /// The registry's Rust object if it is a `T`.
    pub fn downcast<T: Reg>(self) -> Option<&'static T> {
        let raw: &RawReg = self.raw();
        if !same_entries!(raw.iface, TABLE; get_device) {
            return None;
        }
        // SAFETY: with an entry of the adapter the context is a shared slot of ours.
        let object: &dyn Reg = unsafe { shared::<dyn Reg>(raw.context) };
        (object as &dyn std::any::Any).downcast_ref::<T>()
    }
}

fn object(reg: *mut RawReg) -> &'static dyn Reg {
    // SAFETY: the table's entries are called with a live registry whose context is ours.
    match unsafe { reg.as_ref() } {
        // SAFETY: as above.
        Some(r) => unsafe { shared::<dyn Reg>(r.context) },
        None => crate::ggml_abort!("NULL registry passed to a registry's table"),
    }
}

unsafe extern "C" fn get_name(reg: *mut RawReg) -> *const c_char {
    object(reg).get_name().as_ptr()
}

unsafe extern "C" fn get_device_count(reg: *mut RawReg) -> usize {
    object(reg).get_device_count()
}

unsafe extern "C" fn get_device(reg: *mut RawReg, index: usize) -> *mut RawDevice {
    object(reg).get_device(index).as_ptr()
}

unsafe extern "C" fn get_proc_address(reg: *mut RawReg, name: *const c_char) -> *mut c_void {
    let object = object(reg);
    // SAFETY: `name` is NULL or a C string (the entry's contract).
    match unsafe { c_str(name) } {
        Some(name) => object.get_proc_address(name).map_or(std::ptr::null_mut(), |f| f.as_ptr()),
        None => std::ptr::null_mut(),
    }
}
