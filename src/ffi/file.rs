//! `ggml_fopen`: C's `fopen` (ggml's wrapper exists for wide paths on Windows).

use crate::ffi::handle::arg;
use std::ffi::c_char;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fopen(fname: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(fname) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(mode) };
    // SAFETY: both are valid NUL-terminated strings (checked non-null above).
    unsafe { libc::fopen(fname, mode) }
}
