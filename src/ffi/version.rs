//! The library's version and commit strings (`ggml_version`, `ggml_commit`).

use std::ffi::c_char;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_version() -> *const c_char {
    c"0.25.1".as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_commit() -> *const c_char {
    concat!("ggml-rs ", env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
