//! C entry points for matrix products, copies and views, row ops, softmax, RoPE and
//! attention. Each converts its arguments and calls the constructor in `core::ops`.

use std::ffi::c_int;

use super::{context, opt_tensor, tensor};
use crate::core::context::Context;
use crate::core::ops::matmul::{OpHint, Prec};
use crate::core::ops::rope::{MROPE_SECTIONS, RopeParams};
use crate::core::ops::{attention, matmul, rope, rows, shape, softmax, view_tensor};
use crate::core::tensor::Tensor;
use crate::core::types::Type;

// Matrix products and precision settings.

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    matmul::mul_mat(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_set_prec(a: *mut Tensor, prec: Prec) {
    matmul::mul_mat_set_prec(tensor(a), prec);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_set_hint(a: *mut Tensor, hint: OpHint) {
    matmul::mul_mat_set_hint(tensor(a), hint);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_mul_mat_id(
    ctx: *mut Context,
    as_: *mut Tensor,
    b: *mut Tensor,
    ids: *mut Tensor,
) -> *mut Tensor {
    matmul::mul_mat_id(context(ctx), tensor(as_), tensor(b), tensor(ids)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_out_prod(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    matmul::out_prod(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_prec_set_acc(a: *mut Tensor, prec: Prec) -> bool {
    matmul::prec_set_acc(tensor(a), prec)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_prec_set_src(a: *mut Tensor, prec: Prec, idx: c_int) -> bool {
    matmul::prec_set_src(tensor(a), prec, idx)
}

// Set, copy, cast, cont.

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
    shape::set(context(ctx), tensor(a), tensor(b), nb1, nb2, nb3, offset).as_ptr()
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
    shape::set_inplace(context(ctx), tensor(a), tensor(b), nb1, nb2, nb3, offset).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_1d(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, offset: usize) -> *mut Tensor {
    shape::set_1d(context(ctx), tensor(a), tensor(b), offset).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_1d_inplace(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, offset: usize) -> *mut Tensor {
    shape::set_1d_inplace(context(ctx), tensor(a), tensor(b), offset).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_2d(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    offset: usize,
) -> *mut Tensor {
    shape::set_2d(context(ctx), tensor(a), tensor(b), nb1, offset).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_2d_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    nb1: usize,
    offset: usize,
) -> *mut Tensor {
    shape::set_2d_inplace(context(ctx), tensor(a), tensor(b), nb1, offset).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpy(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    shape::cpy(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cast(ctx: *mut Context, a: *mut Tensor, type_: Type) -> *mut Tensor {
    shape::cast(context(ctx), tensor(a), type_).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    shape::cont(context(ctx), tensor(a)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont_1d(ctx: *mut Context, a: *mut Tensor, ne0: i64) -> *mut Tensor {
    shape::cont_1d(context(ctx), tensor(a), ne0).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont_2d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64) -> *mut Tensor {
    shape::cont_2d(context(ctx), tensor(a), ne0, ne1).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cont_3d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64, ne2: i64) -> *mut Tensor {
    shape::cont_3d(context(ctx), tensor(a), ne0, ne1, ne2).as_ptr()
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
    shape::cont_4d(context(ctx), tensor(a), ne0, ne1, ne2, ne3).as_ptr()
}

// Reshapes and views.

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    shape::reshape(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape_1d(ctx: *mut Context, a: *mut Tensor, ne0: i64) -> *mut Tensor {
    shape::reshape_1d(context(ctx), tensor(a), ne0).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape_2d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64) -> *mut Tensor {
    shape::reshape_2d(context(ctx), tensor(a), ne0, ne1).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_reshape_3d(ctx: *mut Context, a: *mut Tensor, ne0: i64, ne1: i64, ne2: i64) -> *mut Tensor {
    shape::reshape_3d(context(ctx), tensor(a), ne0, ne1, ne2).as_ptr()
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
    shape::reshape_4d(context(ctx), tensor(a), ne0, ne1, ne2, ne3).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_view_tensor(ctx: *mut Context, src: *mut Tensor) -> *mut Tensor {
    view_tensor(context(ctx), tensor(src)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_view_1d(ctx: *mut Context, a: *mut Tensor, ne0: i64, offset: usize) -> *mut Tensor {
    shape::view_1d(context(ctx), tensor(a), ne0, offset).as_ptr()
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
    shape::view_2d(context(ctx), tensor(a), ne0, ne1, nb1, offset).as_ptr()
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
    shape::view_3d(context(ctx), tensor(a), ne0, ne1, ne2, nb1, nb2, offset).as_ptr()
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
    shape::view_4d(context(ctx), tensor(a), ne0, ne1, ne2, ne3, nb1, nb2, nb3, offset).as_ptr()
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
    shape::permute(context(ctx), tensor(a), axis0, axis1, axis2, axis3).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_transpose(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    shape::transpose(context(ctx), tensor(a)).as_ptr()
}

// Rows and diagonals.

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rows(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    rows::get_rows(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rows_back(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    rows::get_rows_back(context(ctx), tensor(a), tensor(b), tensor(c)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_rows(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    rows::set_rows(context(ctx), tensor(a), tensor(b), tensor(c)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    rows::diag(context(ctx), tensor(a)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_inf(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_inf(context(ctx), tensor(a), n_past).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_inf_inplace(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_inf_inplace(context(ctx), tensor(a), n_past).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_zero(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_zero(context(ctx), tensor(a), n_past).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_diag_mask_zero_inplace(ctx: *mut Context, a: *mut Tensor, n_past: c_int) -> *mut Tensor {
    softmax::diag_mask_zero_inplace(context(ctx), tensor(a), n_past).as_ptr()
}

// Softmax.

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    softmax::soft_max(context(ctx), tensor(a)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_inplace(ctx: *mut Context, a: *mut Tensor) -> *mut Tensor {
    softmax::soft_max_inplace(context(ctx), tensor(a)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext(
    ctx: *mut Context,
    a: *mut Tensor,
    mask: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext(context(ctx), tensor(a), opt_tensor(mask), scale, max_bias).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    mask: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext_inplace(context(ctx), tensor(a), opt_tensor(mask), scale, max_bias).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_add_sinks(a: *mut Tensor, sinks: *mut Tensor) {
    softmax::soft_max_add_sinks(tensor(a), opt_tensor(sinks));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext_back(context(ctx), tensor(a), tensor(b), scale, max_bias).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_soft_max_ext_back_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    scale: f32,
    max_bias: f32,
) -> *mut Tensor {
    softmax::soft_max_ext_back_inplace(context(ctx), tensor(a), tensor(b), scale, max_bias).as_ptr()
}

// RoPE.

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
    rope::rope(context(ctx), tensor(a), tensor(b), n_dims, mode).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rope_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    n_dims: c_int,
    mode: c_int,
) -> *mut Tensor {
    rope::rope_inplace(context(ctx), tensor(a), tensor(b), n_dims, mode).as_ptr()
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
    rope::rope_ext(context(ctx), tensor(a), tensor(b), opt_tensor(c), &p).as_ptr()
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
    rope::rope_ext_inplace(context(ctx), tensor(a), tensor(b), opt_tensor(c), &p).as_ptr()
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
    rope::rope_multi(context(ctx), tensor(a), tensor(b), opt_tensor(c), &p, sections(sections_)).as_ptr()
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
    rope::rope_multi_inplace(context(ctx), tensor(a), tensor(b), opt_tensor(c), &p, sections(sections_)).as_ptr()
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
    rope::rope_custom(context(ctx), tensor(a), tensor(b), &p).as_ptr()
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
    rope::rope_custom_inplace(context(ctx), tensor(a), tensor(b), &p).as_ptr()
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
    rope::rope_ext_back(context(ctx), tensor(a), tensor(b), opt_tensor(c), &p).as_ptr()
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
    rope::rope_multi_back(context(ctx), tensor(a), tensor(b), opt_tensor(c), &p, sections(sections_)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rope_set_offset(a: *mut Tensor, n_offs: c_int) -> *mut Tensor {
    rope::rope_set_offset(tensor(a), n_offs).as_ptr()
}

// Attention.

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
