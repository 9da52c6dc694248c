//! The C edge. Every exported symbol lives under this module; each turns its raw arguments
//! into Rust values with the helpers below (aborting with the function's name on a NULL that
//! ggml does not allow) and calls into the safe core.

// The exported functions take raw pointers by design: they are the C ABI, and C callers cannot
// see an `unsafe` marker. Each one checks what it can (NULL) before dereferencing.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod alloc;
pub mod backend;
pub mod backend_buffer;
pub mod context;
pub mod cpu;
pub mod critical_section;
pub mod file;
pub mod gguf;
pub mod graph;
pub mod guid;
pub mod memory;
pub mod meta;
pub mod misc;
pub mod op;
pub mod ops;
pub mod opt;
pub mod quants;
pub mod sched;
pub mod status;
pub mod tensor;
pub mod threadpool_params;
pub mod variadic;
pub mod version;

use std::ffi::{CStr, c_char};

use crate::core::context::Context;
use crate::core::tensor::{Tensor, TensorPtr};

/// The tensor behind a pointer that the API requires to be non-null.
#[track_caller]
pub fn tensor(ptr: *const Tensor) -> TensorPtr {
    // SAFETY: C callers hand us tensors created by a live context (ggml's contract).
    match unsafe { TensorPtr::from_raw(ptr.cast_mut()) } {
        Some(t) => t,
        None => null_argument("tensor"),
    }
}

/// A tensor argument that may be NULL.
pub fn opt_tensor(ptr: *const Tensor) -> Option<TensorPtr> {
    // SAFETY: as `tensor`.
    unsafe { TensorPtr::from_raw(ptr.cast_mut()) }
}

/// The context behind a pointer returned by `ggml_init`.
#[track_caller]
pub fn context<'a>(ptr: *mut Context) -> &'a mut Context {
    // SAFETY: contexts are only created by ggml_init (a leaked Box) and live until ggml_free.
    match unsafe { ptr.as_mut() } {
        Some(c) => c,
        None => null_argument("context"),
    }
}

/// Bytes of a C string argument (without the terminator).
#[track_caller]
pub fn c_str<'a>(ptr: *const c_char) -> &'a [u8] {
    if ptr.is_null() {
        null_argument("string");
    }
    // SAFETY: non-null C strings passed to ggml are NUL-terminated.
    unsafe { CStr::from_ptr(ptr) }.to_bytes()
}

/// Returns a static Rust string as a C string: the tables it comes from are NUL-terminated
/// copies kept alive for the whole process.
pub fn static_c_str(s: &'static str) -> *const c_char {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static INTERNED: OnceLock<Mutex<HashMap<&'static str, &'static CStr>>> = OnceLock::new();
    let mut map = INTERNED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    map.entry(s).or_insert_with(|| Box::leak(std::ffi::CString::new(s).unwrap_or_default().into_boxed_c_str())).as_ptr()
}

#[track_caller]
fn null_argument(what: &str) -> ! {
    let loc = std::panic::Location::caller();
    crate::core::log::abort(loc.file(), loc.line(), &format!("NULL {what} passed to the ggml API"))
}
