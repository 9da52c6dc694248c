//! C entry points of fused attention (`core::ops::attention`).

use crate::core::context::Context;
use crate::core::ops::attention;
use crate::core::ops::matmul::Prec;
use crate::core::tensor::Tensor;
use crate::ffi::handle::{arg, opt_arg};

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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        attention::flash_attn_ext(arg!(ctx), arg!(q), arg!(k), arg!(v), opt_arg!(mask), scale, max_bias, logit_softcap)
            .as_ptr()
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_set_prec(a: *mut Tensor, prec: Prec) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { attention::flash_attn_ext_set_prec(arg!(a), prec) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_get_prec(a: *const Tensor) -> Prec {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { attention::flash_attn_ext_get_prec(arg!(a)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_set_n_kv_max(a: *mut Tensor, n_kv_max: i32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { attention::flash_attn_ext_set_n_kv_max(arg!(a), n_kv_max) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_flash_attn_ext_add_sinks(a: *mut Tensor, sinks: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { attention::flash_attn_ext_add_sinks(arg!(a), opt_arg!(sinks)) };
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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { attention::flash_attn_back(arg!(ctx), arg!(q), arg!(k), arg!(v), arg!(d), masked).as_ptr() }
}
