//! C entry points of the ops that move or reinterpret data: `set`, copies and casts, `cont`,
//! reshapes, views, `permute` and `transpose` (`core::ops::shape`).

use crate::core::context::Context;
use crate::core::ops::{shape, view_tensor};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::ffi::handle::arg;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::set(arg!(ctx), arg!(a), arg!(b), nb1, nb2, nb3, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::set_inplace(arg!(ctx), arg!(a), arg!(b), nb1, nb2, nb3, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_1d(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, offset: usize) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::set_1d(arg!(ctx), arg!(a), arg!(b), offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_1d_inplace(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, offset: usize) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::set_1d_inplace(arg!(ctx), arg!(a), arg!(b), offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_2d(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::set_2d(arg!(ctx), arg!(a), arg!(b), nb1, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_2d_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::set_2d_inplace(arg!(ctx), arg!(a), arg!(b), nb1, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpy(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::cpy(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cast(ctx: *mut Context, a: *mut Tensor, type_: Type) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::cast(arg!(ctx), arg!(a), type_).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::cont(arg!(ctx), arg!(a)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont_1d(ctx: *mut Context, a: *mut Tensor, ne0: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::cont_1d(arg!(ctx), arg!(a), ne0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont_2d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::cont_2d(arg!(ctx), arg!(a), ne0, ne1).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont_3d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64, ne2: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::cont_3d(arg!(ctx), arg!(a), ne0, ne1, ne2).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont_4d(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::cont_4d(arg!(ctx), arg!(a), ne0, ne1, ne2, ne3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::reshape(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape_1d(ctx: *mut Context, a: *mut Tensor, ne0: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::reshape_1d(arg!(ctx), arg!(a), ne0).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape_2d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::reshape_2d(arg!(ctx), arg!(a), ne0, ne1).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape_3d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64, ne2: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::reshape_3d(arg!(ctx), arg!(a), ne0, ne1, ne2).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape_4d(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::reshape_4d(arg!(ctx), arg!(a), ne0, ne1, ne2, ne3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_view_tensor(ctx: *mut Context, src: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { view_tensor(arg!(ctx), arg!(src)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_view_1d(ctx: *mut Context, a: *mut Tensor, ne0: i64, offset: usize) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::view_1d(arg!(ctx), arg!(a), ne0, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_view_2d(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    nb1: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::view_2d(arg!(ctx), arg!(a), ne0, ne1, nb1, offset).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_view_3d(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    nb1: usize,
    nb2: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::view_3d(arg!(ctx), arg!(a), ne0, ne1, ne2, nb1, nb2, offset).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_view_4d(
    ctx: *mut Context,
    a: *mut Tensor,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::view_4d(arg!(ctx), arg!(a), ne0, ne1, ne2, ne3, nb1, nb2, nb3, offset).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_permute(
    ctx: *mut Context,
    a: *mut Tensor,
    axis0: c_int,
    axis1: c_int,
    axis2: c_int,
    axis3: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::permute(arg!(ctx), arg!(a), axis0, axis1, axis2, axis3).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_transpose(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { shape::transpose(arg!(ctx), arg!(a)).as_ptr() }
}
