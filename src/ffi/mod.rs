//! The C edge. Every exported symbol lives under this module; each turns its raw handles into
//! Rust values through [`handle`] (which aborts with the export's name on a NULL that ggml does
//! not allow) and calls into the safe core.

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
pub mod handle;
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

/// Returns a static Rust string as a C string: the tables it comes from are NUL-terminated
/// copies kept alive for the whole process.
pub fn static_c_str(s: &'static str) -> *const c_char {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static INTERNED: OnceLock<Mutex<HashMap<&'static str, &'static CStr>>> = OnceLock::new();
    let mut map = INTERNED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    map.entry(s).or_insert_with(|| Box::leak(std::ffi::CString::new(s).unwrap_or_default().into_boxed_c_str())).as_ptr()
}
