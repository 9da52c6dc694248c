//! Recurrent sequence-model ops: Mamba's state-space convolution and scan, RWKV 6/7's WKV,
//! gated linear attention and the gated delta net. The recurrent ones return the outputs and
//! the updated states concatenated in one tensor, which the caller splits with views.

use super::set_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// Mamba's causal 1D convolution: `sx` [d_conv - 1 + n_t, d_inner, n_s] with kernels `c`
/// [d_conv, d_inner] gives [d_inner, n_t, n_s].
pub fn ssm_conv(ctx: &mut Context, sx: TensorPtr, c: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(sx.is_3d());
    crate::ggml_assert!(c.is_matrix());
    let d_conv = c.ne[0];
    let d_inner = c.ne[1];
    let n_t = sx.ne[0] - d_conv + 1;
    let n_s = sx.ne[2];
    crate::ggml_assert!(sx.ne[0] == d_conv - 1 + n_t);
    crate::ggml_assert!(sx.ne[1] == d_inner);
    crate::ggml_assert!(n_t >= 0);
    let result = ctx.new_tensor(Type::F32, &[d_inner, n_t, n_s]);
    set_op(result, Op::SSM_CONV, &[sx, c]);
    result
}

/// Mamba's selective scan. The result is 1D: the outputs (as many as `x` has elements)
/// followed by `k` snapshots of the final states of the sequences in `ids`.
#[allow(clippy::too_many_arguments)]
pub fn ssm_scan(
    ctx: &mut Context,
    s: TensorPtr,
    x: TensorPtr,
    dt: TensorPtr,
    a: TensorPtr,
    b: TensorPtr,
    c: TensorPtr,
    ids: TensorPtr,
    k: i64,
) -> TensorPtr {
    crate::ggml_assert!(k >= 1);
    crate::ggml_assert!(k <= i32::MAX as i64);
    crate::ggml_assert!(s.is_contiguous());
    crate::ggml_assert!(dt.is_contiguous());
    crate::ggml_assert!(a.is_contiguous());
    crate::ggml_assert!(x.nb[0] == x.type_.type_size());
    crate::ggml_assert!(b.nb[0] == b.type_.type_size());
    crate::ggml_assert!(c.nb[0] == c.type_.type_size());
    crate::ggml_assert!(x.nb[1] == x.ne[0] as usize * x.nb[0]);
    crate::ggml_assert!(b.nb[1] == b.ne[0] as usize * b.nb[0]);
    crate::ggml_assert!(c.nb[1] == c.ne[0] as usize * c.nb[0]);
    crate::ggml_assert!(b.same_shape(&c));
    crate::ggml_assert!(ids.type_ == Type::I32);

    let d_state = s.ne[0];
    let [head_dim, n_head, n_seq_tokens, n_seqs] = x.ne;
    crate::ggml_assert!(dt.ne[0] == n_head);
    crate::ggml_assert!(dt.ne[1] == n_seq_tokens);
    crate::ggml_assert!(dt.ne[2] == n_seqs);
    crate::ggml_assert!(dt.is_3d());
    crate::ggml_assert!(s.ne[1] == head_dim);
    crate::ggml_assert!(s.ne[2] == n_head);
    crate::ggml_assert!(b.ne[0] == d_state);
    crate::ggml_assert!(b.ne[2] == n_seq_tokens);
    crate::ggml_assert!(b.ne[3] == n_seqs);
    crate::ggml_assert!(ids.ne[0] == n_seqs);
    crate::ggml_assert!(ids.is_vector());
    crate::ggml_assert!(a.ne[1] == n_head);
    crate::ggml_assert!(a.is_matrix());
    if a.ne[0] != 1 {
        // Mamba-1: one decay per state element.
        crate::ggml_assert!(a.ne[0] == d_state);
        crate::ggml_assert!(k == 1);
    }

    let n_states = k * s.ne[0] * s.ne[1] * s.ne[2] * ids.ne[0];
    let result = ctx.new_tensor(Type::F32, &[x.nelements() + n_states]);
    set_op(result, Op::SSM_SCAN, &[s, x, dt, a, b, c, ids]);
    result.get_mut().set_op_param_i32(0, k as i32);
    result
}

/// The shape shared by the WKV-style ops: outputs [S*H, n_tokens] stacked over the new
/// states [S*H, S*n_seqs].
fn recurrent_output(ctx: &mut Context, k: TensorPtr, state: TensorPtr, others: &[TensorPtr]) -> TensorPtr {
    let [s, h, n_tokens, _] = k.ne;
    let n_seqs = state.ne[1];
    for t in others {
        crate::ggml_assert!(
            t.ne[0] == s && t.ne[1] == h && t.ne[2] == n_tokens,
            "{:?} does not match k {:?}",
            t.ne,
            k.ne
        );
    }
    crate::ggml_assert!(state.nelements() == s * s * h * n_seqs);
    ctx.new_tensor(Type::F32, &[s * h, n_tokens + s * n_seqs, 1, 1])
}

/// RWKV 6's WKV recurrence.
pub fn rwkv_wkv6(
    ctx: &mut Context,
    k: TensorPtr,
    v: TensorPtr,
    r: TensorPtr,
    tf: TensorPtr,
    td: TensorPtr,
    state: TensorPtr,
) -> TensorPtr {
    for t in [k, v, r, tf, td, state] {
        crate::ggml_assert!(t.is_contiguous());
    }
    let result = recurrent_output(ctx, k, state, &[v, r, td]);
    set_op(result, Op::RWKV_WKV6, &[k, v, r, tf, td, state]);
    result
}

/// Gated linear attention with query scale `scale`.
pub fn gated_linear_attn(
    ctx: &mut Context,
    k: TensorPtr,
    v: TensorPtr,
    q: TensorPtr,
    g: TensorPtr,
    state: TensorPtr,
    scale: f32,
) -> TensorPtr {
    for t in [k, v, q, g, state] {
        crate::ggml_assert!(t.is_contiguous());
    }
    let result = recurrent_output(ctx, k, state, &[v, q, g]);
    result.get_mut().set_op_param_f32(0, scale);
    set_op(result, Op::GATED_LINEAR_ATTN, &[k, v, q, g, state]);
    result
}

/// RWKV 7's WKV recurrence.
#[allow(clippy::too_many_arguments)]
pub fn rwkv_wkv7(
    ctx: &mut Context,
    r: TensorPtr,
    w: TensorPtr,
    k: TensorPtr,
    v: TensorPtr,
    a: TensorPtr,
    b: TensorPtr,
    state: TensorPtr,
) -> TensorPtr {
    for t in [r, w, k, v, a, b, state] {
        crate::ggml_assert!(t.is_contiguous());
    }
    let result = recurrent_output(ctx, k, state, &[w, k, v, a, b]);
    set_op(result, Op::RWKV_WKV7, &[r, w, k, v, a, b, state]);
    result
}

/// The gated delta rule (Qwen3-Next, Kimi linear attention): outputs [S_v*H, n_tokens*n_seqs]
/// stacked over `k_snapshots` copies of the final states [S_v*H, S_v*n_seqs].
#[allow(clippy::too_many_arguments)]
pub fn gated_delta_net(
    ctx: &mut Context,
    q: TensorPtr,
    k: TensorPtr,
    v: TensorPtr,
    g: TensorPtr,
    beta: TensorPtr,
    state: TensorPtr,
    k_snapshots: i64,
) -> TensorPtr {
    crate::ggml_assert!(q.is_contiguous_rows());
    crate::ggml_assert!(k.is_contiguous_rows());
    crate::ggml_assert!(v.is_contiguous_rows());
    crate::ggml_assert!(g.is_contiguous());
    crate::ggml_assert!(beta.is_contiguous());
    crate::ggml_assert!(state.is_contiguous());
    for t in [q, k, v, g, beta, state] {
        crate::ggml_assert!(t.type_ == Type::F32, "gated_delta_net takes f32, not {}", t.type_.name());
    }
    let [s_v, h, n_tokens, n_seqs] = v.ne;
    // The gate is a scalar per head or (KDA) a vector per head.
    crate::ggml_assert!(g.ne[0] == 1 || g.ne[0] == s_v);
    crate::ggml_assert!(beta.ne[0] == 1);
    crate::ggml_assert!(state.ne == [s_v, s_v, h, n_seqs], "state {:?}", state.ne);
    crate::ggml_assert!(k_snapshots >= 1);
    let state_rows = k_snapshots * s_v * n_seqs;
    let result = ctx.new_tensor(Type::F32, &[s_v * h, n_tokens * n_seqs + state_rows, 1, 1]);
    result.get_mut().set_op_param_i32(0, k_snapshots as i32);
    set_op(result, Op::GATED_DELTA_NET, &[q, k, v, g, beta, state]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn ssm_conv_and_scan() {
        let mut c = ctx();
        let sx = c.new_tensor(Type::F32, &[3 + 5, 16, 2]);
        let kern = c.new_tensor(Type::F32, &[4, 16]);
        let r = ssm_conv(&mut c, sx, kern);
        assert_eq!((r.ne, r.op, r.src(0), r.src(1)), ([16, 5, 2, 1], Op::SSM_CONV, Some(sx), Some(kern)));

        // Mamba-2 shapes: d_state 8, head_dim 4, 3 heads, 5 tokens, 2 sequences.
        let s = c.new_tensor(Type::F32, &[8, 4, 3, 2]);
        let x = c.new_tensor(Type::F32, &[4, 3, 5, 2]);
        let dt = c.new_tensor(Type::F32, &[3, 5, 2]);
        let a = c.new_tensor(Type::F32, &[1, 3]);
        let b = c.new_tensor(Type::F32, &[8, 1, 5, 2]);
        let cc = c.new_tensor(Type::F32, &[8, 1, 5, 2]);
        let ids = c.new_tensor(Type::I32, &[2]);
        let r = ssm_scan(&mut c, s, x, dt, a, b, cc, ids, 2);
        assert_eq!(r.ne, [120 + 2 * 8 * 4 * 3 * 2, 1, 1, 1]);
        assert_eq!(r.op_params[0], 2);
        assert_eq!((r.src(0), r.src(3), r.src(6)), (Some(s), Some(a), Some(ids)));
    }

    #[test]
    fn wkv_ops() {
        let mut c = ctx();
        let t = |c: &mut Context| c.new_tensor(Type::F32, &[8, 2, 5]);
        let (k, v, r, td) = (t(&mut c), t(&mut c), t(&mut c), t(&mut c));
        let tf = c.new_tensor(Type::F32, &[8, 2]);
        let state = c.new_tensor(Type::F32, &[8 * 8 * 2, 3]);
        let out = rwkv_wkv6(&mut c, k, v, r, tf, td, state);
        assert_eq!((out.ne, out.op), ([16, 5 + 8 * 3, 1, 1], Op::RWKV_WKV6));
        assert_eq!((out.src(0), out.src(3), out.src(5)), (Some(k), Some(tf), Some(state)));

        let gla = gated_linear_attn(&mut c, k, v, r, td, state, 0.25);
        assert_eq!((gla.ne, gla.op_params[0], gla.src(4)), ([16, 29, 1, 1], 0.25f32.to_bits() as i32, Some(state)));

        let w7 = rwkv_wkv7(&mut c, r, td, k, v, r, td, state);
        assert_eq!((w7.op, w7.src(0), w7.src(2), w7.src(6)), (Op::RWKV_WKV7, Some(r), Some(k), Some(state)));
    }

    #[test]
    fn gated_delta_net_appends_state_snapshots() {
        let mut c = ctx();
        let q = c.new_tensor(Type::F32, &[8, 2, 5, 3]);
        let g = c.new_tensor(Type::F32, &[1, 2, 5, 3]);
        let state = c.new_tensor(Type::F32, &[8, 8, 2, 3]);
        let r = gated_delta_net(&mut c, q, q, q, g, g, state, 2);
        assert_eq!(r.ne, [16, 15 + 2 * 8 * 3, 1, 1]);
        assert_eq!((r.op, r.op_params[0], r.src(5)), (Op::GATED_DELTA_NET, 2, Some(state)));
    }
}
