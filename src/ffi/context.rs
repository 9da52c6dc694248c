//! Contexts, logging, aborts and clocks.

use std::ffi::{c_char, c_int, c_void};

use crate::core::context::{Context, InitParams};
use crate::core::log;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;

/// NULL with a logged reason when the pool cannot be allocated (ggml asserts instead; a
/// caller that asked for more memory than the machine has gets to say so).
#[unsafe(no_mangle)]
pub extern "C" fn ggml_init(params: InitParams) -> *mut Context {
    match Context::try_new(params) {
        Ok(ctx) => Box::into_raw(ctx),
        Err(e) => {
            crate::log_error!("ggml_init: {e}\n");
            std::ptr::null_mut()
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_free(ctx: *mut Context) {
    if !ctx.is_null() {
        // SAFETY: non-null contexts come from ggml_init's Box::into_raw and are freed once.
        drop(unsafe { Box::from_raw(ctx) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reset(ctx: *mut Context) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        if !ctx.is_null() {
            arg!(ctx).reset();
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_used_mem(ctx: *const Context) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx.cast_mut()).used_mem() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_no_alloc(ctx: *mut Context) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).no_alloc }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_no_alloc(ctx: *mut Context, no_alloc: bool) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).no_alloc = no_alloc };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_mem_buffer(ctx: *const Context) -> *mut c_void {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx.cast_mut()).mem_buffer() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_mem_size(ctx: *const Context) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx.cast_mut()).mem_size() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_max_tensor_size(ctx: *const Context) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx.cast_mut()).tensors().map(|t| t.nbytes()).max().unwrap_or(0) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_buffer(ctx: *mut Context, nbytes: usize) -> *mut c_void {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).new_object(crate::core::context::ObjectType::WorkBuffer, nbytes).as_ptr().cast() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_first_tensor(ctx: *const Context) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx.cast_mut()).tensors().next().map_or(std::ptr::null_mut(), |t| t.as_ptr()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_next_tensor(ctx: *const Context, t: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx.cast_mut()).next_tensor(arg!(t)).map_or(std::ptr::null_mut(), |t| t.as_ptr()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_tensor(ctx: *mut Context, name: *const c_char) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).get_tensor(arg!(name)).map_or(std::ptr::null_mut(), |t| t.as_ptr()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_print_objects(ctx: *const Context) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx.cast_mut()).print_objects() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_print_object(obj: *const crate::core::context::Object) {
    // SAFETY: callers pass object headers they got from a context's pool.
    if let Some(obj) = unsafe { obj.as_ref() } {
        crate::core::context::print_object(obj);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_log_set(callback: log::LogCallback, user_data: *mut c_void) {
    log::set_logger(callback, user_data);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_log_get(callback: *mut log::LogCallback, user_data: *mut *mut c_void) {
    let (cb, ud) = log::logger();
    // SAFETY: out-pointers are written only when the caller provided them.
    unsafe {
        if let Some(out) = callback.as_mut() {
            *out = Some(cb.unwrap_or(log::log_to_stderr));
        }
        if let Some(out) = user_data.as_mut() {
            *out = ud;
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_abort_callback(callback: log::AbortMessageCallback) -> log::AbortMessageCallback {
    log::set_abort_callback(callback)
}

/// Sink of the C-side `ggml_abort` (see variadic.c).
#[unsafe(no_mangle)]
pub extern "C" fn ggml_rs_abort_text(file: *const c_char, line: c_int, message: *const c_char) -> ! {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let file = unsafe { String::from_utf8_lossy(arg!(file)).into_owned() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let message = unsafe { String::from_utf8_lossy(arg!(message)).into_owned() };
    // The caller's own abort: no export of ours to name (the handle checks above recorded this one).
    log::clear_export();
    log::abort(&file, line.max(0) as u32, &message)
}

/// Sink of the C-side `ggml_log_internal` (see variadic.c).
#[unsafe(no_mangle)]
pub extern "C" fn ggml_rs_log_text(level: c_int, text: *const c_char) {
    if !text.is_null() {
        // SAFETY: variadic.c passes its NUL-terminated formatting buffer.
        log::log_cstr(level, unsafe { std::ffi::CStr::from_ptr(text) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_time_init() {
    crate::core::time::init();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_time_ms() -> i64 {
    crate::core::time::ms()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_time_us() -> i64 {
    crate::core::time::us()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cycles() -> i64 {
    crate::core::time::cycles()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cycles_per_ms() -> i64 {
    crate::core::time::cycles_per_ms()
}
