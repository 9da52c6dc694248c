//! C entry points of the convolutions and `im2col` (`core::ops::conv`).

use crate::core::context::Context;
use crate::core::ops::conv;
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::ffi::handle::arg;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_im2col(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    s1: c_int,
    p0: c_int,
    p1: c_int,
    d0: c_int,
    d1: c_int,
    is_2d: bool,
    dst_type: Type,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::im2col(arg!(ctx), arg!(a), arg!(b), s0, s1, p0, p1, d0, d1, is_2d, dst_type).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_im2col_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    ne: *mut i64,
    s0: c_int,
    s1: c_int,
    p0: c_int,
    p1: c_int,
    d0: c_int,
    d1: c_int,
    is_2d: bool,
) -> *mut Tensor {
    crate::ggml_assert!(!ne.is_null(), "ggml_im2col_back: NULL shape");
    // SAFETY: the API takes the im2col input's shape as four extents.
    let ne = unsafe { &*ne.cast::<[i64; 4]>() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::im2col_back(arg!(ctx), arg!(a), arg!(b), ne, s0, s1, p0, p1, d0, d1, is_2d).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_im2col_3d(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    ic: i64,
    s0: c_int,
    s1: c_int,
    s2: c_int,
    p0: c_int,
    p1: c_int,
    p2: c_int,
    d0: c_int,
    d1: c_int,
    d2: c_int,
    dst_type: Type,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::im2col_3d(arg!(ctx), arg!(a), arg!(b), ic, s0, s1, s2, p0, p1, p2, d0, d1, d2, dst_type).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_col2im_1d(ctx: *mut Context, a: *mut Tensor, s0: c_int, oc: c_int, p0: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::col2im_1d(arg!(ctx), arg!(a), s0, oc, p0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_1d(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    p0: c_int,
    d0: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_1d(arg!(ctx), arg!(a), arg!(b), s0, p0, d0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_1d_ph(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s: c_int,
    d: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_1d_ph(arg!(ctx), arg!(a), arg!(b), s, d).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_1d_dw(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    p0: c_int,
    d0: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_1d_dw(arg!(ctx), arg!(a), arg!(b), s0, p0, d0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_1d_dw_ph(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    d0: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_1d_dw_ph(arg!(ctx), arg!(a), arg!(b), s0, d0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    s1: c_int,
    p0: c_int,
    p1: c_int,
    d0: c_int,
    d1: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_2d(arg!(ctx), arg!(a), arg!(b), s0, s1, p0, p1, d0, d1).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d_sk_p0(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_2d_sk_p0(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d_s1_ph(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_2d_s1_ph(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d_dw(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    s1: c_int,
    p0: c_int,
    p1: c_int,
    d0: c_int,
    d1: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_2d_dw(arg!(ctx), arg!(a), arg!(b), s0, s1, p0, p1, d0, d1).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_conv_3d(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    ic: i64,
    s0: c_int,
    s1: c_int,
    s2: c_int,
    p0: c_int,
    p1: c_int,
    p2: c_int,
    d0: c_int,
    d1: c_int,
    d2: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_3d(arg!(ctx), arg!(a), arg!(b), ic, s0, s1, s2, p0, p1, p2, d0, d1, d2).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_transpose_1d(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    p0: c_int,
    d0: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_transpose_1d(arg!(ctx), arg!(a), arg!(b), s0, p0, d0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d_dw_direct(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    stride0: c_int,
    stride1: c_int,
    pad0: c_int,
    pad1: c_int,
    dilation0: c_int,
    dilation1: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        conv::conv_2d_dw_direct(arg!(ctx), arg!(a), arg!(b), stride0, stride1, pad0, pad1, dilation0, dilation1)
            .as_ptr()
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_transpose_2d_p0(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    stride: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_transpose_2d_p0(arg!(ctx), arg!(a), arg!(b), stride).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d_direct(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    s1: c_int,
    p0: c_int,
    p1: c_int,
    d0: c_int,
    d1: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { conv::conv_2d_direct(arg!(ctx), arg!(a), arg!(b), s0, s1, p0, p1, d0, d1).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_3d_direct(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    s1: c_int,
    s2: c_int,
    p0: c_int,
    p1: c_int,
    p2: c_int,
    d0: c_int,
    d1: c_int,
    d2: c_int,
    n_channels: c_int,
    n_batch: c_int,
    n_channels_out: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        conv::conv_3d_direct(
            arg!(ctx),
            arg!(a),
            arg!(b),
            s0,
            s1,
            s2,
            p0,
            p1,
            p2,
            d0,
            d1,
            d2,
            n_channels,
            n_batch,
            n_channels_out,
        )
        .as_ptr()
    }
}
