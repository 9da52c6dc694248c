//! C strings handed out for names that live in Rust tables (type names, backend features):
//! each is made once and kept for the whole process, as C callers expect of ggml's statics.

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
