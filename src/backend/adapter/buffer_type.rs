//! Buffer types: the table of every Rust buffer type, and a buffer type handle's object.

use std::cell::UnsafeCell;
use std::ffi::c_char;

use super::{leak_shared, same_entries, shared, shared_context, tensor_arg};
use crate::backend::handle::{BufferPtr, BufferTypePtr};
use crate::backend::interface::{Buffer as RawBuffer, BufferType as RawBufferType, BufferTypeInterface, Device};
use crate::backend::traits::BufferType;
use crate::core::tensor::Tensor;

const TABLE: BufferTypeInterface = BufferTypeInterface {
    get_name: Some(get_name),
    alloc_buffer: Some(alloc_buffer),
    get_alignment: Some(get_alignment),
    get_max_size: Some(get_max_size),
    get_alloc_size: Some(get_alloc_size),
    is_host: Some(is_host),
};

/// A buffer type of `device` (NULL for none) served by `object`, for the rest of the process.
pub fn leak_buffer_type(device: *mut Device, object: Box<dyn BufferType>) -> BufferTypePtr {
    let buft = Box::new(RawBufferType { iface: TABLE, device, context: leak_shared(object) });
    // SAFETY: leaked, so alive for the rest of the process.
    match unsafe { BufferTypePtr::from_raw(Box::into_raw(buft)) } {
        Some(b) => b,
        None => unreachable!("boxes are never null"),
    }
}

/// A buffer type defined as a `static`, served by the object in `slot`. C code receives a
/// mutable pointer to it (ggml's own types are mutable statics), so the struct sits in an
/// `UnsafeCell`: a write through that pointer, such as a backend filling in `device`, is then
/// not undefined behaviour.
pub struct StaticBufferType(UnsafeCell<RawBufferType>);

// SAFETY: the struct is only read after start-up, but for `device`, which its owner writes at
// most once, before it hands the type out; ggml promises no more for its own static types.
unsafe impl Sync for StaticBufferType {}

impl StaticBufferType {
    pub const fn new(slot: &'static &'static dyn BufferType) -> Self {
        StaticBufferType(UnsafeCell::new(RawBufferType {
            iface: TABLE,
            device: std::ptr::null_mut(),
            context: shared_context(slot),
        }))
    }

    pub fn handle(&'static self) -> BufferTypePtr {
        // SAFETY: a static lives for the whole process and is never null.
        match unsafe { BufferTypePtr::from_raw(self.0.get()) } {
            Some(b) => b,
            None => unreachable!("statics are never null"),
        }
    }

    /// Sets the device the type belongs to, once, before the type is handed out.
    pub fn set_device(&'static self, device: *mut Device) {
        // SAFETY: see the `Sync` argument: the one write, before any reader.
        unsafe { (*self.0.get()).device = device };
    }
}

impl BufferTypePtr {
    /// What the buffer type is: its Rust object when its table is the adapter's, else the C
    /// struct, served through its table.
    pub(in crate::backend) fn object<'a>(self) -> &'a dyn BufferType {
        let raw: &RawBufferType = self.raw();
        if same_entries!(raw.iface, TABLE; get_name, alloc_buffer, get_alignment, get_max_size, get_alloc_size,
            is_host)
        {
            // SAFETY: with the adapter's table the context is a shared slot of ours.
            unsafe { shared::<dyn BufferType>(raw.context) }
        } else {
            raw
        }
    }

    /// The type's Rust object if it is a `T`.
    pub fn downcast<T: BufferType>(self) -> Option<&'static T> {
        let raw: &RawBufferType = self.raw();
        if !same_entries!(raw.iface, TABLE; alloc_buffer) {
            return None;
        }
        // SAFETY: with an entry of the adapter the context is a shared slot of ours.
        let object: &dyn BufferType = unsafe { shared::<dyn BufferType>(raw.context) };
        (object as &dyn std::any::Any).downcast_ref::<T>()
    }
}

fn object(buft: *mut RawBufferType) -> &'static dyn BufferType {
    // SAFETY: the table's entries are called with a live buffer type whose context is ours
    // (C code may copy our entries into a struct of its own, with our context, as a plugin
    // renaming a type does).
    match unsafe { buft.as_ref() } {
        // SAFETY: as above.
        Some(b) => unsafe { shared::<dyn BufferType>(b.context) },
        None => crate::ggml_abort!("NULL buffer type passed to a buffer type's table"),
    }
}

unsafe extern "C" fn get_name(buft: *mut RawBufferType) -> *const c_char {
    object(buft).get_name().as_ptr()
}

unsafe extern "C" fn alloc_buffer(buft: *mut RawBufferType, size: usize) -> *mut RawBuffer {
    // SAFETY: `object` checked that `buft` is not null; it is live (the entry's contract).
    let this = unsafe { BufferTypePtr::from_raw(buft) };
    match this {
        Some(this) => object(buft).alloc_buffer(this, size).map_or(std::ptr::null_mut(), BufferPtr::as_ptr),
        None => crate::ggml_abort!("NULL buffer type passed to alloc_buffer"),
    }
}

unsafe extern "C" fn get_alignment(buft: *mut RawBufferType) -> usize {
    object(buft).get_alignment()
}

unsafe extern "C" fn get_max_size(buft: *mut RawBufferType) -> usize {
    object(buft).get_max_size()
}

unsafe extern "C" fn get_alloc_size(buft: *mut RawBufferType, tensor: *const Tensor) -> usize {
    object(buft).get_alloc_size(tensor_arg(tensor, "get_alloc_size"))
}

unsafe extern "C" fn is_host(buft: *mut RawBufferType) -> bool {
    object(buft).is_host()
}
