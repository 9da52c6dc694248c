//! `ggml_fopen`: C's `fopen` (ggml's wrapper exists for wide paths on Windows).

use super::c_str;
use std::ffi::c_char;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fopen(fname: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    c_str(fname);
    c_str(mode);
    // SAFETY: both are valid NUL-terminated strings (checked non-null above).
    unsafe { libc::fopen(fname, mode) }
}
