//! C entry points of pooling, resampling, padding and rolling (`core::ops::pool`).

use crate::core::context::Context;
use crate::core::ops::pool;
use crate::core::ops::pool::PoolOp;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pool_1d(
    ctx: *mut Context,
    a: *mut Tensor,
    op: PoolOp,
    k0: c_int,
    s0: c_int,
    p0: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pool_1d(arg!(ctx), arg!(a), op, k0, s0, p0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pool_2d(
    ctx: *mut Context,
    a: *mut Tensor,
    op: PoolOp,
    k0: c_int,
    k1: c_int,
    s0: c_int,
    s1: c_int,
    p0: f32,
    p1: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pool_2d(arg!(ctx), arg!(a), op, k0, k1, s0, s1, p0, p1).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pool_2d_back(
    ctx: *mut Context,
    a: *mut Tensor,
    af: *mut Tensor,
    op: PoolOp,
    k0: c_int,
    k1: c_int,
    s0: c_int,
    s1: c_int,
    p0: f32,
    p1: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pool_2d_back(arg!(ctx), arg!(a), arg!(af), op, k0, k1, s0, s1, p0, p1).as_ptr() }
}

/// `enum ggml_scale_mode`, as C passes it (a mode, possibly with GGML_SCALE_FLAG_* bits).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct ScaleMode(pub c_int);

#[unsafe(no_mangle)]
pub extern "C" fn ggml_upscale(ctx: *mut Context, a: *mut Tensor, scale_factor: c_int, mode: ScaleMode) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::upscale(arg!(ctx), arg!(a), scale_factor, mode.0 as u32).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_upscale_ext(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: c_int,
    ne1: c_int,
    ne2: c_int,
    ne3: c_int,
    mode: ScaleMode,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::upscale_ext(arg!(ctx), arg!(a), ne0, ne1, ne2, ne3, mode.0 as u32).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_interpolate(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
    mode: u32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::interpolate(arg!(ctx), arg!(a), ne0, ne1, ne2, ne3, mode).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pad(
    ctx: *mut Context,
    a: *mut Tensor,
    p0: c_int,
    p1: c_int,
    p2: c_int,
    p3: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pad(arg!(ctx), arg!(a), p0, p1, p2, p3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pad_circular(
    ctx: *mut Context,
    a: *mut Tensor,
    p0: c_int,
    p1: c_int,
    p2: c_int,
    p3: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pad_circular(arg!(ctx), arg!(a), p0, p1, p2, p3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pad_ext(
    ctx: *mut Context,
    a: *mut Tensor,
    lp0: c_int,
    rp0: c_int,
    lp1: c_int,
    rp1: c_int,
    lp2: c_int,
    rp2: c_int,
    lp3: c_int,
    rp3: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pad_ext(arg!(ctx), arg!(a), lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pad_ext_circular(
    ctx: *mut Context,
    a: *mut Tensor,
    lp0: c_int,
    rp0: c_int,
    lp1: c_int,
    rp1: c_int,
    lp2: c_int,
    rp2: c_int,
    lp3: c_int,
    rp3: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pad_ext_circular(arg!(ctx), arg!(a), lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pad_reflect_1d(ctx: *mut Context, a: *mut Tensor, p0: c_int, p1: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::pad_reflect_1d(arg!(ctx), arg!(a), p0, p1).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_roll(
    ctx: *mut Context,
    a: *mut Tensor,
    shift0: c_int,
    shift1: c_int,
    shift2: c_int,
    shift3: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { pool::roll(arg!(ctx), arg!(a), shift0, shift1, shift2, shift3).as_ptr() }
}
