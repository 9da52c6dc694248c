//! Logging through a user-settable callback, and aborts with file, line and reason.
//!
//! Both are process-wide, as in ggml: `ggml_log_set` replaces the sink for every context and
//! backend, and `ggml_set_abort_callback` sees every fatal error before the process ends.

use std::cell::Cell;
use std::ffi::{CString, c_char, c_void};
use std::io::Write;
use std::sync::Mutex;

thread_local! {
    /// The path of the marker function (see `ffi::handle::this_export!`) of the exported
    /// function this thread last entered through a handle check. The core's asserts know the
    /// operation but not which C entry point led to it, so an abort names this one. Exports
    /// that take no handle leave it as it was; [`clear_export`] forgets it.
    static EXPORT: Cell<&'static str> = const { Cell::new("") };
}

/// Records the export being entered (a marker path, trimmed only if an abort needs it).
#[inline]
pub fn enter_export(marker_path: &'static str) {
    EXPORT.with(|e| e.set(marker_path));
}

/// Forgets the export recorded on this thread: for aborts the C caller itself asks for.
pub fn clear_export() {
    EXPORT.with(|e| e.set(""));
}

/// The exported function's name in the path of a marker function declared in it
/// (`ggml_rs::ffi::tensor::ggml_nbytes::here`, possibly with `{{closure}}` segments).
pub fn export_name(marker_path: &'static str) -> &'static str {
    marker_path.rsplit("::").find(|s| *s != "here" && !s.starts_with('{')).unwrap_or(marker_path)
}

/// `enum ggml_log_level`.
#[repr(i32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Level {
    None = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
    Cont = 5,
}

/// `enum ggml_log_level` as it crosses the C boundary: any int, including levels `Level` does not
/// name (C callers of `ggml_log_internal` pass what they like, and it is passed on as it came).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RawLevel(pub i32);

/// `ggml_log_callback`.
pub type LogCallback = Option<unsafe extern "C" fn(level: RawLevel, text: *const c_char, user_data: *mut c_void)>;

/// `ggml_abort_callback_t`.
pub type AbortMessageCallback = Option<unsafe extern "C" fn(message: *const c_char)>;

struct Logger {
    callback: LogCallback,
    user_data: *mut c_void,
}

// SAFETY: the user data pointer is only handed back to the callback that came with it; ggml
// makes the same promise (and no more) about thread safety of the logger.
unsafe impl Send for Logger {}

static LOGGER: Mutex<Logger> = Mutex::new(Logger { callback: None, user_data: std::ptr::null_mut() });
static ABORT_CALLBACK: Mutex<AbortMessageCallback> = Mutex::new(None);

/// The default sink: the text as is, to stderr.
///
/// # Safety
/// `text` must be a NUL-terminated string.
pub unsafe extern "C" fn log_to_stderr(_level: RawLevel, text: *const c_char, _user_data: *mut c_void) {
    // SAFETY: log text is always a NUL-terminated string built by `log` below or by C callers.
    let text = unsafe { std::ffi::CStr::from_ptr(text) };
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.to_bytes());
    let _ = err.flush();
}

/// Writes the calling thread's stack to stderr (`ggml_print_backtrace`).
pub fn print_backtrace() {
    let _ = writeln!(std::io::stderr().lock(), "{}", std::backtrace::Backtrace::force_capture());
}

pub fn set_logger(callback: LogCallback, user_data: *mut c_void) {
    let mut logger = LOGGER.lock().unwrap_or_else(|e| e.into_inner());
    logger.callback = callback;
    logger.user_data = user_data;
}

pub fn logger() -> (LogCallback, *mut c_void) {
    let logger = LOGGER.lock().unwrap_or_else(|e| e.into_inner());
    (logger.callback, logger.user_data)
}

/// Sends one message to the current sink (stderr unless `ggml_log_set` chose another).
pub fn log(level: Level, text: &str) {
    let text = CString::new(text.replace('\0', "")).unwrap_or_default();
    log_cstr(level as i32, &text);
}

pub fn log_cstr(level: i32, text: &std::ffi::CStr) {
    let (callback, user_data) = logger();
    let sink = callback.unwrap_or(log_to_stderr);
    // SAFETY: the sink is either ours or one the user registered for exactly this call shape.
    unsafe { sink(RawLevel(level), text.as_ptr(), user_data) };
}

pub fn set_abort_callback(callback: AbortMessageCallback) -> AbortMessageCallback {
    std::mem::replace(&mut *ABORT_CALLBACK.lock().unwrap_or_else(|e| e.into_inner()), callback)
}

/// [`abort`] at the caller's file and line: for the argument checks of `#[track_caller]`
/// helpers (byte regions, arrays, element counts), so that a report points at the exported
/// function that was called, not at the helper.
#[track_caller]
pub fn abort_at_caller(message: &str) -> ! {
    let loc = std::panic::Location::caller();
    abort(loc.file(), loc.line(), message)
}

/// Ends the process: hands `file:line: message` to the abort callback if one is set, else
/// prints it and a backtrace to stderr; then `abort()`.
pub fn abort(file: &str, line: u32, message: &str) -> ! {
    let _ = std::io::stdout().flush();
    // SAFETY: fflush(NULL) flushes every C stdio stream; C callers print through those.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    let export = export_name(EXPORT.with(Cell::get));
    // A message that names a C function already says where it came from (and may come from an
    // export that takes no handle, after the record was made by another one).
    let names_a_function = message.contains("ggml_") || message.contains("gguf_");
    let full = if export.is_empty() || names_a_function {
        format!("{file}:{line}: {message}")
    } else {
        format!("{file}:{line}: {message} (in {export})")
    };
    let callback = *ABORT_CALLBACK.lock().unwrap_or_else(|e| e.into_inner());
    match callback {
        Some(cb) => {
            let text = CString::new(full.replace('\0', "")).unwrap_or_default();
            // SAFETY: the callback was registered by the user for this signature.
            unsafe { cb(text.as_ptr()) };
        }
        None => {
            let _ = writeln!(std::io::stderr().lock(), "{full}");
            print_backtrace();
        }
    }
    std::process::abort()
}

/// Aborts with the caller's file and line and a formatted reason.
#[macro_export]
macro_rules! ggml_abort {
    ($($arg:tt)*) => {
        $crate::core::log::abort(file!(), line!(), &format!($($arg)*))
    };
}

/// Checks a condition that guards memory or the API contract; never compiled out.
#[macro_export]
macro_rules! ggml_assert {
    ($cond:expr) => {
        if !$cond {
            $crate::core::log::abort(file!(), line!(), concat!("GGML_ASSERT(", stringify!($cond), ") failed"))
        }
    };
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            $crate::core::log::abort(
                file!(),
                line!(),
                &format!(concat!("GGML_ASSERT(", stringify!($cond), ") failed: {}"), format!($($arg)+)),
            )
        }
    };
}

#[macro_export]
macro_rules! log_info {
    ($($arg:tt)*) => { $crate::core::log::log($crate::core::log::Level::Info, &format!($($arg)*)) };
}

#[macro_export]
macro_rules! log_warn {
    ($($arg:tt)*) => { $crate::core::log::log($crate::core::log::Level::Warn, &format!($($arg)*)) };
}

#[macro_export]
macro_rules! log_error {
    ($($arg:tt)*) => { $crate::core::log::log($crate::core::log::Level::Error, &format!($($arg)*)) };
}

#[macro_export]
macro_rules! log_debug {
    ($($arg:tt)*) => { $crate::core::log::log($crate::core::log::Level::Debug, &format!($($arg)*)) };
}
