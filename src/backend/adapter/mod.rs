//! The one bridge between the backend traits ([`super::traits`]) and ggml's C tables
//! ([`super::interface`]), both ways.
//!
//! - A Rust implementation becomes a C object: [`new_buffer`], [`new_backend`], [`new_event`]
//!   and the `leak_*` constructors (or the `Static*` structs, for statics) make the struct with
//!   the adapter's table, one per interface, whose entries (the only `extern "C"` functions of
//!   the built-in backends) find the object behind `context` and call its method, turning
//!   `None` and `false` into NULL and false as ggml's callers expect.
//! - A C object made elsewhere (a plugin's, or one of ours whose entries C code replaced, as
//!   ggml's CPU variants do to the CPU buffers they allocate) is its own implementation: the C
//!   structs implement the traits by calling their tables, with ggml's defaults for NULL
//!   entries ([`foreign`]).
//!
//! Each handle's `object()` gives the one or the other, so the code above sees one kind; its
//! `downcast()` lets a backend recognise its own objects among any it is handed.
//!
//! Ownership: an adapter-made object's `context` points to its Rust object, boxed a second
//! time so that the pointer is thin. Buffers, backends and events own theirs, which their
//! table's `free_buffer`, `free` and `event_free` drop, once; buffer types, devices and
//! registries live for the process (statics, or leaked). This file is the only one that casts
//! a `context`.

mod backend;
mod buffer;
mod buffer_type;
mod device;
mod foreign;
mod reg;

pub use backend::new_backend;
pub use buffer::new_buffer;
pub use buffer_type::{StaticBufferType, leak_buffer_type};
pub use device::{StaticDevice, leak_device, new_event};
pub use reg::{StaticReg, leak_reg};

use std::any::Any;
use std::ffi::{CStr, c_char, c_void};

use super::interface::GraphPlan;
use crate::core::tensor::{Tensor, TensorPtr};

/// The context of an object that owns its Rust object (a buffer, backend or event).
fn owned_context<T: ?Sized>(object: Box<T>) -> *mut c_void {
    Box::into_raw(Box::new(object)).cast()
}

/// The Rust object of an owning context.
///
/// # Safety
/// `context` came from [`owned_context`] with the same `T` and has not been taken back; the
/// caller is the only one using the object for the reference's life.
unsafe fn owned<'a, T: ?Sized>(context: *mut c_void) -> &'a mut T {
    // SAFETY: the caller's contract: a live `Box<Box<T>>` leaked by `owned_context`.
    unsafe { &mut *context.cast::<Box<T>>() }
}

/// Takes an owning context back, to drop the object.
///
/// # Safety
/// As [`owned`], and the context is not used afterwards.
unsafe fn take_owned<T: ?Sized>(context: *mut c_void) -> Box<T> {
    // SAFETY: the caller's contract: the box leaked by `owned_context`, reclaimed once.
    *unsafe { Box::from_raw(context.cast::<Box<T>>()) }
}

/// The context of an object that lives for the process (a buffer type, device or registry):
/// a pointer to a `&'static T`.
const fn shared_context<T: ?Sized>(slot: &'static &'static T) -> *mut c_void {
    std::ptr::from_ref(slot).cast_mut().cast()
}

/// [`shared_context`] for an object made at run time.
fn leak_shared<T: ?Sized + 'static>(object: Box<T>) -> *mut c_void {
    let object: &'static T = Box::leak(object);
    shared_context(Box::leak(Box::new(object)))
}

/// The Rust object of a shared context.
///
/// # Safety
/// `context` came from [`shared_context`] or [`leak_shared`] with the same `T`.
unsafe fn shared<T: ?Sized>(context: *mut c_void) -> &'static T {
    // SAFETY: the caller's contract: a `&'static T` that lives for the process.
    unsafe { *context.cast::<&'static T>() }
}

/// A plan handed to C: the boxed `Box<dyn Any>` a backend's `graph_plan_create` made.
fn plan_into(plan: Box<dyn Any>) -> GraphPlan {
    owned_context(plan)
}

/// # Safety
/// `plan` came from [`plan_into`] and is not freed.
unsafe fn plan_mut<'a>(plan: GraphPlan) -> &'a mut dyn Any {
    // SAFETY: the caller's contract.
    unsafe { owned(plan) }
}

/// # Safety
/// As [`plan_mut`]; the plan is not used afterwards.
unsafe fn plan_take(plan: GraphPlan) -> Box<dyn Any> {
    // SAFETY: the caller's contract.
    unsafe { take_owned(plan) }
}

/// Whether two tables hold the same entries, compared by address.
macro_rules! same_entries {
    ($a:expr, $b:expr; $($field:ident),* $(,)?) => {
        $( $a.$field.map(|f| f as usize) == $b.$field.map(|f| f as usize) )&&*
    };
}
use same_entries;

/// The tensor a table entry received, which ggml's callers never pass as NULL.
#[track_caller]
fn tensor_arg(tensor: *const Tensor, entry: &str) -> TensorPtr {
    // SAFETY: a non-null tensor handed to a table entry is live (ggml's contract).
    match unsafe { TensorPtr::from_raw(tensor.cast_mut()) } {
        Some(t) => t,
        None => crate::ggml_abort!("NULL tensor passed to {}", entry),
    }
}

/// `size` bytes at `data` as a slice (empty for 0, whatever `data` is).
///
/// # Safety
/// For `size > 0`, `data` holds `size` readable bytes for the slice's life.
unsafe fn bytes<'a>(data: *const c_void, size: usize) -> &'a [u8] {
    if size == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(data.cast(), size) }
}

/// # Safety
/// As [`bytes`], writable, and not otherwise borrowed.
unsafe fn bytes_mut<'a>(data: *mut c_void, size: usize) -> &'a mut [u8] {
    if size == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(data.cast(), size) }
}

/// A C string argument that may be NULL.
///
/// # Safety
/// `s` is NULL or a C string that outlives the use.
unsafe fn c_str<'a>(s: *const c_char) -> Option<&'a CStr> {
    // SAFETY: the caller's contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) })
}
