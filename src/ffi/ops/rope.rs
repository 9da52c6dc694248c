//! C entry points of the rotary position embeddings (`core::ops::rope`).

use crate::core::context::Context;
use crate::core::ops::rope;
use crate::core::ops::rope::{MROPE_SECTIONS, RopeParams};
use crate::core::tensor::Tensor;
use crate::ffi::handle::{arg, opt_arg};
use std::ffi::c_int;

/// The YaRN arguments that every extended RoPE entry point takes, in C order.
#[allow(clippy::too_many_arguments)]
fn rope_params(
    n_dims: c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> RopeParams {
    RopeParams { n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow }
}

/// The `int sections[GGML_MROPE_SECTIONS]` argument, which may be NULL.
fn sections<'a>(ptr: *const c_int) -> Option<&'a [i32; MROPE_SECTIONS]> {
    // SAFETY: a non-null sections argument points to GGML_MROPE_SECTIONS ints (the C
    // prototype's array parameter); c_int is i32 on every supported target.
    unsafe { ptr.cast::<[i32; MROPE_SECTIONS]>().as_ref() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rope(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope(arg!(ctx), arg!(a), arg!(b), n_dims, mode).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rope_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_inplace(arg!(ctx), arg!(a), arg!(b), n_dims, mode).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_ext(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_ext(arg!(ctx), arg!(a), arg!(b), opt_arg!(c), &p).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_ext_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_ext_inplace(arg!(ctx), arg!(a), arg!(b), opt_arg!(c), &p).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_multi(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    n_dims: c_int,
    sections_: *mut c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_multi(arg!(ctx), arg!(a), arg!(b), opt_arg!(c), &p, sections(sections_)).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_multi_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    n_dims: c_int,
    sections_: *mut c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_multi_inplace(arg!(ctx), arg!(a), arg!(b), opt_arg!(c), &p, sections(sections_)).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_custom(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_custom(arg!(ctx), arg!(a), arg!(b), &p).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_custom_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_custom_inplace(arg!(ctx), arg!(a), arg!(b), &p).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rope_yarn_corr_dims(
    n_dims: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    beta_fast: f32,
    beta_slow: f32,
    dims: *mut f32,
) {
    let out = rope::rope_yarn_corr_dims(n_dims, n_ctx_orig, freq_base, beta_fast, beta_slow);
    crate::ggml_assert!(!dims.is_null(), "ggml_rope_yarn_corr_dims: NULL dims");
    // SAFETY: `dims` is the caller's `float dims[2]` (checked non-null above).
    unsafe { dims.cast::<[f32; 2]>().write_unaligned(out) };
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_ext_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_ext_back(arg!(ctx), arg!(a), arg!(b), opt_arg!(c), &p).as_ptr() }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rope_multi_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    n_dims: c_int,
    sections_: *mut c_int,
    mode: c_int,
    n_ctx_orig: c_int,
    freq_base: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    beta_fast: f32,
    beta_slow: f32,
) -> *mut Tensor {
    let p = rope_params(n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_multi_back(arg!(ctx), arg!(a), arg!(b), opt_arg!(c), &p, sections(sections_)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rope_set_offset(a: *mut Tensor, n_offs: c_int) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { rope::rope_set_offset(arg!(a), n_offs).as_ptr() }
}
