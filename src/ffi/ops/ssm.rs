//! C entry points of the recurrent sequence-model ops (`core::ops::ssm`).

use crate::core::context::Context;
use crate::core::ops::ssm;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_ssm_conv(ctx: *mut Context, sx: *mut Tensor, c: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { ssm::ssm_conv(arg!(ctx), arg!(sx), arg!(c)).as_ptr() }
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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { ssm::ssm_scan(arg!(ctx), arg!(s), arg!(x), arg!(dt), arg!(a), arg!(b), arg!(c), arg!(ids), k).as_ptr() }
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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { ssm::rwkv_wkv6(arg!(ctx), arg!(k), arg!(v), arg!(r), arg!(tf), arg!(td), arg!(state)).as_ptr() }
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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { ssm::rwkv_wkv7(arg!(ctx), arg!(r), arg!(w), arg!(k), arg!(v), arg!(a), arg!(b), arg!(state)).as_ptr() }
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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { ssm::gated_linear_attn(arg!(ctx), arg!(k), arg!(v), arg!(q), arg!(g), arg!(state), scale).as_ptr() }
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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        ssm::gated_delta_net(arg!(ctx), arg!(q), arg!(k), arg!(v), arg!(g), arg!(beta), arg!(state), k_snapshots)
            .as_ptr()
    }
}
