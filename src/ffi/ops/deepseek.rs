//! C entry points of DeepSeek V4's ops (`core::ops::deepseek`).

use crate::core::context::Context;
use crate::core::ops::deepseek;
use crate::core::tensor::Tensor;
use crate::ffi::{context, opt_tensor, tensor};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_lightning_indexer(
    ctx: *mut Context,
    q: *mut Tensor,
    k: *mut Tensor,
    weights: *mut Tensor,
    mask: *mut Tensor,
) -> *mut Tensor {
    deepseek::lightning_indexer(context(ctx), tensor(q), tensor(k), tensor(weights), tensor(mask)).as_ptr()
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
    deepseek::dsv4_hc_comb(context(ctx), tensor(mixes), tensor(scale), tensor(base), eps, n_iter).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_pre(ctx: *mut Context, x: *mut Tensor, weights: *mut Tensor) -> *mut Tensor {
    deepseek::dsv4_hc_pre(context(ctx), tensor(x), tensor(weights)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_pre_gated(
    ctx: *mut Context,
    x: *mut Tensor,
    gate: *mut Tensor,
    scale: f32,
) -> *mut Tensor {
    deepseek::dsv4_hc_pre_gated(context(ctx), tensor(x), tensor(gate), scale).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_post(
    ctx: *mut Context,
    x: *mut Tensor,
    residual: *mut Tensor,
    post: *mut Tensor,
    comb: *mut Tensor,
) -> *mut Tensor {
    deepseek::dsv4_hc_post(context(ctx), tensor(x), tensor(residual), tensor(post), opt_tensor(comb)).as_ptr()
}
