//! `ggml_status_to_string`: the message for each `enum ggml_status`.

use std::ffi::{c_char, c_int};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_status_to_string(status: c_int) -> *const c_char {
    match status {
        -2 => c"GGML status: error (failed to allocate memory)",
        -1 => c"GGML status: error (operation failed)",
        0 => c"GGML status: success",
        1 => c"GGML status: warning (operation aborted)",
        _ => c"GGML status: unknown",
    }
    .as_ptr()
}
