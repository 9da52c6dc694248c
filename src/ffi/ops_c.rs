//! Op constructors, part C: convolutions, pooling and resampling, sequence-model ops,
//! sorting and miscellany, user-defined ops, losses and optimizer steps.

use std::ffi::{c_int, c_void};

use super::{context, opt_tensor, tensor};
use crate::core::context::Context;
use crate::core::ops::custom::{Custom1Fn, Custom2Fn, Custom3Fn, CustomFn};
use crate::core::ops::misc::SortOrder;
use crate::core::ops::pool::PoolOp;
use crate::core::ops::{conv, custom, loss, misc, pool, ssm};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;

// ---- convolutions ----

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
    conv::im2col(context(ctx), tensor(a), tensor(b), s0, s1, p0, p1, d0, d1, is_2d, dst_type).as_ptr()
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
    conv::im2col_back(context(ctx), tensor(a), tensor(b), ne, s0, s1, p0, p1, d0, d1, is_2d).as_ptr()
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
    conv::im2col_3d(context(ctx), tensor(a), tensor(b), ic, s0, s1, s2, p0, p1, p2, d0, d1, d2, dst_type).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_col2im_1d(ctx: *mut Context, a: *mut Tensor, s0: c_int, oc: c_int, p0: c_int) -> *mut Tensor {
    conv::col2im_1d(context(ctx), tensor(a), s0, oc, p0).as_ptr()
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
    conv::conv_1d(context(ctx), tensor(a), tensor(b), s0, p0, d0).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_1d_ph(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s: c_int,
    d: c_int,
) -> *mut Tensor {
    conv::conv_1d_ph(context(ctx), tensor(a), tensor(b), s, d).as_ptr()
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
    conv::conv_1d_dw(context(ctx), tensor(a), tensor(b), s0, p0, d0).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_1d_dw_ph(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    s0: c_int,
    d0: c_int,
) -> *mut Tensor {
    conv::conv_1d_dw_ph(context(ctx), tensor(a), tensor(b), s0, d0).as_ptr()
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
    conv::conv_2d(context(ctx), tensor(a), tensor(b), s0, s1, p0, p1, d0, d1).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d_sk_p0(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    conv::conv_2d_sk_p0(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_2d_s1_ph(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    conv::conv_2d_s1_ph(context(ctx), tensor(a), tensor(b)).as_ptr()
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
    conv::conv_2d_dw(context(ctx), tensor(a), tensor(b), s0, s1, p0, p1, d0, d1).as_ptr()
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
    conv::conv_3d(context(ctx), tensor(a), tensor(b), ic, s0, s1, s2, p0, p1, p2, d0, d1, d2).as_ptr()
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
    conv::conv_transpose_1d(context(ctx), tensor(a), tensor(b), s0, p0, d0).as_ptr()
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
    conv::conv_2d_dw_direct(context(ctx), tensor(a), tensor(b), stride0, stride1, pad0, pad1, dilation0, dilation1)
        .as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_conv_transpose_2d_p0(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    stride: c_int,
) -> *mut Tensor {
    conv::conv_transpose_2d_p0(context(ctx), tensor(a), tensor(b), stride).as_ptr()
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
    conv::conv_2d_direct(context(ctx), tensor(a), tensor(b), s0, s1, p0, p1, d0, d1).as_ptr()
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
    conv::conv_3d_direct(
        context(ctx),
        tensor(a),
        tensor(b),
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

// ---- pooling, resampling, padding ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pool_1d(
    ctx: *mut Context,
    a: *mut Tensor,
    op: PoolOp,
    k0: c_int,
    s0: c_int,
    p0: c_int,
) -> *mut Tensor {
    pool::pool_1d(context(ctx), tensor(a), op, k0, s0, p0).as_ptr()
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
    pool::pool_2d(context(ctx), tensor(a), op, k0, k1, s0, s1, p0, p1).as_ptr()
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
    pool::pool_2d_back(context(ctx), tensor(a), tensor(af), op, k0, k1, s0, s1, p0, p1).as_ptr()
}

/// `enum ggml_scale_mode`, as C passes it (a mode, possibly with GGML_SCALE_FLAG_* bits).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct ScaleMode(pub c_int);

#[unsafe(no_mangle)]
pub extern "C" fn ggml_upscale(ctx: *mut Context, a: *mut Tensor, scale_factor: c_int, mode: ScaleMode) -> *mut Tensor {
    pool::upscale(context(ctx), tensor(a), scale_factor, mode.0 as u32).as_ptr()
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
    pool::upscale_ext(context(ctx), tensor(a), ne0, ne1, ne2, ne3, mode.0 as u32).as_ptr()
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
    pool::interpolate(context(ctx), tensor(a), ne0, ne1, ne2, ne3, mode).as_ptr()
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
    pool::pad(context(ctx), tensor(a), p0, p1, p2, p3).as_ptr()
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
    pool::pad_circular(context(ctx), tensor(a), p0, p1, p2, p3).as_ptr()
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
    pool::pad_ext(context(ctx), tensor(a), lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3).as_ptr()
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
    pool::pad_ext_circular(context(ctx), tensor(a), lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_pad_reflect_1d(ctx: *mut Context, a: *mut Tensor, p0: c_int, p1: c_int) -> *mut Tensor {
    pool::pad_reflect_1d(context(ctx), tensor(a), p0, p1).as_ptr()
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
    pool::roll(context(ctx), tensor(a), shift0, shift1, shift2, shift3).as_ptr()
}

// ---- sequences, sorting, windows, DeepSeek ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_arange(ctx: *mut Context, start: f32, stop: f32, step: f32) -> *mut Tensor {
    misc::arange(context(ctx), start, stop, step).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_timestep_embedding(
    ctx: *mut Context,
    timesteps: *mut Tensor,
    dim: c_int,
    max_period: c_int,
) -> *mut Tensor {
    misc::timestep_embedding(context(ctx), tensor(timesteps), dim, max_period).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_argsort(ctx: *mut Context, a: *mut Tensor, order: SortOrder) -> *mut Tensor {
    misc::argsort(context(ctx), tensor(a), order).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_argsort_top_k(ctx: *mut Context, a: *mut Tensor, k: c_int) -> *mut Tensor {
    misc::argsort_top_k(context(ctx), tensor(a), k).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_top_k(ctx: *mut Context, a: *mut Tensor, k: c_int) -> *mut Tensor {
    misc::top_k(context(ctx), tensor(a), k).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_win_part(ctx: *mut Context, a: *mut Tensor, w: c_int) -> *mut Tensor {
    misc::win_part(context(ctx), tensor(a), w).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_win_unpart(ctx: *mut Context, a: *mut Tensor, w0: c_int, h0: c_int, w: c_int) -> *mut Tensor {
    misc::win_unpart(context(ctx), tensor(a), w0, h0, w).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_rel_pos(ctx: *mut Context, a: *mut Tensor, qh: c_int, kh: c_int) -> *mut Tensor {
    misc::get_rel_pos(context(ctx), tensor(a), qh, kh).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_rel_pos(ctx: *mut Context, a: *mut Tensor, pw: *mut Tensor, ph: *mut Tensor) -> *mut Tensor {
    misc::add_rel_pos(context(ctx), tensor(a), tensor(pw), tensor(ph)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_add_rel_pos_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    pw: *mut Tensor,
    ph: *mut Tensor,
) -> *mut Tensor {
    misc::add_rel_pos_inplace(context(ctx), tensor(a), tensor(pw), tensor(ph)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_solve_tri(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    left: bool,
    lower: bool,
    uni: bool,
) -> *mut Tensor {
    misc::solve_tri(context(ctx), tensor(a), tensor(b), left, lower, uni).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_lightning_indexer(
    ctx: *mut Context,
    q: *mut Tensor,
    k: *mut Tensor,
    weights: *mut Tensor,
    mask: *mut Tensor,
) -> *mut Tensor {
    misc::lightning_indexer(context(ctx), tensor(q), tensor(k), tensor(weights), tensor(mask)).as_ptr()
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
    misc::dsv4_hc_comb(context(ctx), tensor(mixes), tensor(scale), tensor(base), eps, n_iter).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_pre(ctx: *mut Context, x: *mut Tensor, weights: *mut Tensor) -> *mut Tensor {
    misc::dsv4_hc_pre(context(ctx), tensor(x), tensor(weights)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_pre_gated(
    ctx: *mut Context,
    x: *mut Tensor,
    gate: *mut Tensor,
    scale: f32,
) -> *mut Tensor {
    misc::dsv4_hc_pre_gated(context(ctx), tensor(x), tensor(gate), scale).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dsv4_hc_post(
    ctx: *mut Context,
    x: *mut Tensor,
    residual: *mut Tensor,
    post: *mut Tensor,
    comb: *mut Tensor,
) -> *mut Tensor {
    misc::dsv4_hc_post(context(ctx), tensor(x), tensor(residual), tensor(post), opt_tensor(comb)).as_ptr()
}

// ---- sequence models ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_ssm_conv(ctx: *mut Context, sx: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    ssm::ssm_conv(context(ctx), tensor(sx), tensor(c)).as_ptr()
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_ssm_scan(
    ctx: *mut Context,
    s: *mut Tensor,
    x: *mut Tensor,
    dt: *mut Tensor,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    ids: *mut Tensor,
    k: i64,
) -> *mut Tensor {
    ssm::ssm_scan(context(ctx), tensor(s), tensor(x), tensor(dt), tensor(a), tensor(b), tensor(c), tensor(ids), k)
        .as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_rwkv_wkv6(
    ctx: *mut Context,
    k: *mut Tensor,
    v: *mut Tensor,
    r: *mut Tensor,
    tf: *mut Tensor,
    td: *mut Tensor,
    state: *mut Tensor,
) -> *mut Tensor {
    ssm::rwkv_wkv6(context(ctx), tensor(k), tensor(v), tensor(r), tensor(tf), tensor(td), tensor(state)).as_ptr()
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_rwkv_wkv7(
    ctx: *mut Context,
    r: *mut Tensor,
    w: *mut Tensor,
    k: *mut Tensor,
    v: *mut Tensor,
    a: *mut Tensor,
    b: *mut Tensor,
    state: *mut Tensor,
) -> *mut Tensor {
    ssm::rwkv_wkv7(context(ctx), tensor(r), tensor(w), tensor(k), tensor(v), tensor(a), tensor(b), tensor(state))
        .as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gated_linear_attn(
    ctx: *mut Context,
    k: *mut Tensor,
    v: *mut Tensor,
    q: *mut Tensor,
    g: *mut Tensor,
    state: *mut Tensor,
    scale: f32,
) -> *mut Tensor {
    ssm::gated_linear_attn(context(ctx), tensor(k), tensor(v), tensor(q), tensor(g), tensor(state), scale).as_ptr()
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_gated_delta_net(
    ctx: *mut Context,
    q: *mut Tensor,
    k: *mut Tensor,
    v: *mut Tensor,
    g: *mut Tensor,
    beta: *mut Tensor,
    state: *mut Tensor,
    k_snapshots: i64,
) -> *mut Tensor {
    ssm::gated_delta_net(
        context(ctx),
        tensor(q),
        tensor(k),
        tensor(v),
        tensor(g),
        tensor(beta),
        tensor(state),
        k_snapshots,
    )
    .as_ptr()
}

// ---- user-defined ops ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom1(
    ctx: *mut Context,
    a: *mut Tensor,
    fun: Option<Custom1Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    custom::map_custom1(context(ctx), tensor(a), fun, n_tasks, userdata).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom1_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    fun: Option<Custom1Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    custom::map_custom1_inplace(context(ctx), tensor(a), fun, n_tasks, userdata).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom2(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    fun: Option<Custom2Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    custom::map_custom2(context(ctx), tensor(a), tensor(b), fun, n_tasks, userdata).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom2_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    fun: Option<Custom2Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    custom::map_custom2_inplace(context(ctx), tensor(a), tensor(b), fun, n_tasks, userdata).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom3(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    fun: Option<Custom3Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    custom::map_custom3(context(ctx), tensor(a), tensor(b), tensor(c), fun, n_tasks, userdata).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_map_custom3_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
    fun: Option<Custom3Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    custom::map_custom3_inplace(context(ctx), tensor(a), tensor(b), tensor(c), fun, n_tasks, userdata).as_ptr()
}

/// The `args`/`n_args` array of the custom ops; entries may be NULL.
fn custom_args(args: *mut *mut Tensor, n_args: c_int) -> Vec<Option<TensorPtr>> {
    let n = usize::try_from(n_args).unwrap_or(0);
    if n == 0 {
        return Vec::new();
    }
    crate::ggml_assert!(!args.is_null(), "NULL args with n_args = {}", n_args);
    // SAFETY: the caller passes an array of n_args tensor pointers.
    unsafe { std::slice::from_raw_parts(args, n) }.iter().map(|&p| opt_tensor(p)).collect()
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn ggml_custom_4d(
    ctx: *mut Context,
    type_: Type,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
    args: *mut *mut Tensor,
    n_args: c_int,
    fun: Option<CustomFn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    crate::ggml_assert!(n_args < crate::core::tensor::MAX_SRC as c_int, "n_args = {}", n_args);
    let args = custom_args(args, n_args);
    custom::custom_4d(context(ctx), type_, [ne0, ne1, ne2, ne3], &args, fun, n_tasks, userdata).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_custom_inplace(
    ctx: *mut Context,
    a: *mut Tensor,
    args: *mut *mut Tensor,
    n_args: c_int,
    fun: Option<CustomFn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> *mut Tensor {
    crate::ggml_assert!(n_args < crate::core::tensor::MAX_SRC as c_int - 1, "n_args = {}", n_args);
    let args = custom_args(args, n_args);
    custom::custom_inplace(context(ctx), tensor(a), &args, fun, n_tasks, userdata).as_ptr()
}

// ---- losses and optimizer steps ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cross_entropy_loss(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    loss::cross_entropy_loss(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cross_entropy_loss_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
) -> *mut Tensor {
    loss::cross_entropy_loss_back(context(ctx), tensor(a), tensor(b), tensor(c)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_step_adamw(
    ctx: *mut Context,
    a: *mut Tensor,
    grad: *mut Tensor,
    m: *mut Tensor,
    v: *mut Tensor,
    adamw_params: *mut Tensor,
) -> *mut Tensor {
    loss::opt_step_adamw(context(ctx), tensor(a), tensor(grad), tensor(m), tensor(v), tensor(adamw_params)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_step_sgd(
    ctx: *mut Context,
    a: *mut Tensor,
    grad: *mut Tensor,
    sgd_params: *mut Tensor,
) -> *mut Tensor {
    loss::opt_step_sgd(context(ctx), tensor(a), tensor(grad), tensor(sgd_params)).as_ptr()
}
