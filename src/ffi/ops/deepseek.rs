//! C entry points of DeepSeek V4's ops (`core::ops::deepseek`).

use crate::core::context::Context;
use crate::core::ops::deepseek;
use crate::core::tensor::Tensor;
use crate::ffi::handle::{arg, opt_arg};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_lightning_indexer(
    ctx: *mut Context,
    q: *mut Tensor,
    k: *mut Tensor,
    weights: *mut Tensor,
    mask: *mut Tensor,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { deepseek::lightning_indexer(arg!(ctx), arg!(q), arg!(k), arg!(weights), arg!(mask)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_comb(
    ctx: *mut Context,
    mixes: *mut Tensor,
    scale: *mut Tensor,
    base: *mut Tensor,
    eps: f32,
    n_iter: i32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { deepseek::dsv4_hc_comb(arg!(ctx), arg!(mixes), arg!(scale), arg!(base), eps, n_iter).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_pre(ctx: *mut Context, x: *mut Tensor, weights: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { deepseek::dsv4_hc_pre(arg!(ctx), arg!(x), arg!(weights)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_pre_gated(
    ctx: *mut Context,
    x: *mut Tensor,
    gate: *mut Tensor,
    scale: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { deepseek::dsv4_hc_pre_gated(arg!(ctx), arg!(x), arg!(gate), scale).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_post(
    ctx: *mut Context,
    x: *mut Tensor,
    residual: *mut Tensor,
    post: *mut Tensor,
    comb: *mut Tensor,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { deepseek::dsv4_hc_post(arg!(ctx), arg!(x), arg!(residual), arg!(post), opt_arg!(comb)).as_ptr() }
}
