//! The meta device, buffer and backend (`ggml-backend.h`'s "Meta backend" section and the
//! meta helpers of `ggml-backend-impl.h`).

use std::ffi::c_char;

use crate::backend::device::DevicePtr;
use crate::backend::interface::{Backend, Buffer, BufferType, BufferUsage, Device};
use crate::backend::meta::{self, GetSplitStateFn, SplitAxis};
use crate::core::context::Context;
use crate::ffi::handle::{arg, opt_arg};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_meta_split_axis_name(split_axis: SplitAxis) -> *const c_char {
    match split_axis.name() {
        Some(name) => name.as_ptr(),
        None => crate::ggml_abort!("fatal error"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_meta_device(
    devs: *mut *mut Device,
    n_devs: usize,
    get_split_state: Option<GetSplitStateFn>,
    get_split_state_ud: *mut std::ffi::c_void,
) -> *mut Device {
    crate::ggml_assert!(n_devs <= meta::MAX_DEVICES, "GGML_ASSERT(n_devs <= GGML_BACKEND_META_MAX_DEVICES) failed");
    crate::ggml_assert!(n_devs == 0 || !devs.is_null(), "GGML_ASSERT(devs) failed");
    let raw: &[*mut Device] = if n_devs == 0 {
        &[]
    } else {
        // SAFETY: the caller passes an array of `n_devs` device pointers.
        unsafe { std::slice::from_raw_parts(devs, n_devs) }
    };
    let simple: Vec<DevicePtr> = raw
        .iter()
        // SAFETY: the C caller's contract: devices handed to the API belong to a loaded registry.
        .map(|&d| unsafe { arg!(d) })
        .collect();
    meta::meta_device(&simple, get_split_state, get_split_state_ud).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_is_meta(backend: *mut Backend) -> bool {
    // SAFETY: a non-null backend handed to the API is live.
    unsafe { opt_arg!(backend) }.is_some_and(meta::backend_is_meta)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buffer_is_meta(buf: *mut Buffer) -> bool {
    // SAFETY: a non-null buffer handed to the API is live.
    unsafe { opt_arg!(buf) }.is_some_and(meta::buffer_is_meta)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_buft_is_meta(buft: *mut BufferType) -> bool {
    // SAFETY: a non-null buffer type handed to the API is live.
    unsafe { opt_arg!(buft) }.is_some_and(meta::buft_is_meta)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_meta_n_backends(meta_backend_: *mut Backend) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { meta::meta_n_backends(arg!(meta_backend_)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_meta_simple_backend(meta_backend_: *mut Backend, index: usize) -> *mut Backend {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { meta::meta_simple_backend(arg!(meta_backend_), index).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_meta_buffer_set_usage(buffer: *mut Buffer, usage: BufferUsage) {
    // SAFETY: a non-null buffer handed to the API is live.
    match unsafe { opt_arg!(buffer) } {
        Some(b) if meta::buffer_is_meta(b) => meta::buffer_set_usage(b, usage),
        _ => crate::ggml_abort!("GGML_ASSERT(ggml_backend_buffer_is_meta(buffer)) failed"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_meta_alloc_ctx_tensors_from_buft(
    ctx: *mut Context,
    buft: *mut BufferType,
) -> *mut Buffer {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        match opt_arg!(buft) {
            Some(b) if meta::buft_is_meta(b) => meta::alloc_ctx_tensors(arg!(ctx), b).as_ptr(),
            _ => crate::ggml_abort!("GGML_ASSERT(ggml_backend_buft_is_meta(buft)) failed"),
        }
    }
}
