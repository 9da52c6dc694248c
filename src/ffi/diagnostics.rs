//! The default log sink and the backtrace printer: `ggml_log_callback_default` and
//! `ggml_print_backtrace`, declared in the reference's private `ggml-impl.h`, exported by its
//! libggml-base and called by some downstreams.

use std::ffi::{c_char, c_void};

use crate::core::log;

/// `ggml_log_callback_default`: the text as is, to stderr.
///
/// # Safety
/// `text` must be a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ggml_log_callback_default(level: log::RawLevel, text: *const c_char, user_data: *mut c_void) {
    // SAFETY: the caller's contract is the sink's.
    unsafe { log::log_to_stderr(level, text, user_data) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_print_backtrace() {
    log::print_backtrace();
}
