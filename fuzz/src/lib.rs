//! What the fuzz targets share: a quiet log, an in-memory RPC connection, and the RPC server
//! with its closing check.

pub mod connection;
pub mod server;

use std::ffi::{c_char, c_void};
use std::sync::Once;

use ggml_rs::core::log::RawLevel;
use ggml_rs::ffi::context::ggml_log_set;

/// Silences the library's log: every refused input logs its reason, and printing thousands a
/// second would slow the fuzzer to the speed of the terminal. `FUZZ_LOG=1` keeps the log, to
/// read why a reproduced input was refused.
pub fn quiet() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("FUZZ_LOG").is_none() {
            ggml_log_set(Some(discard), std::ptr::null_mut());
        }
    });
}

unsafe extern "C" fn discard(_level: RawLevel, _text: *const c_char, _user_data: *mut c_void) {}
