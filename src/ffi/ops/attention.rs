//! C entry points of fused attention (`core::ops::attention`).

use crate::core::context::Context;
use crate::core::ops::attention;
use crate::core::ops::matmul::Prec;
use crate::core::tensor::Tensor;
use crate::ffi::{context, opt_tensor, tensor};

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_flash_attn_ext(
    ctx: *mut Context,
    q: *mut Tensor,
    k: *mut Tensor,
    v: *mut Tensor,
    mask: *mut Tensor,
    scale: f32,
    max_bias: f32,
    logit_softcap: f32,
) -> *mut Tensor {
    attention::flash_attn_ext(
        context(ctx),
        tensor(q),
        tensor(k),
        tensor(v),
        opt_tensor(mask),
        scale,
        max_bias,
        logit_softcap,
    )
    .as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_set_prec(a: *mut Tensor, prec: Prec) {
    attention::flash_attn_ext_set_prec(tensor(a), prec);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_get_prec(a: *const Tensor) -> Prec {
    attention::flash_attn_ext_get_prec(tensor(a))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_set_n_kv_max(a: *mut Tensor, n_kv_max: i32) {
    attention::flash_attn_ext_set_n_kv_max(tensor(a), n_kv_max);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_add_sinks(a: *mut Tensor, sinks: *mut Tensor) {
    attention::flash_attn_ext_add_sinks(tensor(a), opt_tensor(sinks));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_back(
    ctx: *mut Context,
    q: *mut Tensor,
    k: *mut Tensor,
    v: *mut Tensor,
    d: *mut Tensor,
    masked: bool,
) -> *mut Tensor {
    attention::flash_attn_back(context(ctx), tensor(q), tensor(k), tensor(v), tensor(d), masked).as_ptr()
}
