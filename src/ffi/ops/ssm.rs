//! C entry points of the recurrent sequence-model ops (`core::ops::ssm`).

use crate::core::context::Context;
use crate::core::ops::ssm;
use crate::core::tensor::Tensor;
use crate::ffi::{context, tensor};

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
