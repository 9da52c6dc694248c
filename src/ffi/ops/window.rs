//! C entry points of SAM's windowing and relative-position ops (`core::ops::window`).

use crate::core::context::Context;
use crate::core::ops::window;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_win_part(ctx: *mut Context, a: *mut Tensor, w: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { window::win_part(arg!(ctx), arg!(a), w).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_win_unpart(ctx: *mut Context, a: *mut Tensor, w0: c_int, h0: c_int, w: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { window::win_unpart(arg!(ctx), arg!(a), w0, h0, w).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rel_pos(ctx: *mut Context, a: *mut Tensor, qh: c_int, kh: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { window::get_rel_pos(arg!(ctx), arg!(a), qh, kh).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_rel_pos(ctx: *mut Context, a: *mut Tensor, pw: *mut Tensor, ph: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { window::add_rel_pos(arg!(ctx), arg!(a), arg!(pw), arg!(ph)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_rel_pos_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    pw: *mut Tensor,
    ph: *mut Tensor,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { window::add_rel_pos_inplace(arg!(ctx), arg!(a), arg!(pw), arg!(ph)).as_ptr() }
}
