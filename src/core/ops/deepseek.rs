//! DeepSeek V4's ops: the lightning indexer and the hyper-connection ops (`dsv4_hc_*`).

use super::{dims, set_op};
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// DeepSeek V4's lightning indexer: per-token key scores [n_kv, n_q, 1, n_seq].
pub fn lightning_indexer(
    ctx: &mut Context,
    q: TensorPtr,
    k: TensorPtr,
    weights: TensorPtr,
    mask: TensorPtr,
) -> TensorPtr {
    crate::ggml_assert!(q.type_ == Type::F32);
    crate::ggml_assert!(weights.type_ == Type::F32);
    crate::ggml_assert!(mask.type_ == Type::F16);
    crate::ggml_assert!(q.ne[0] == k.ne[0]);
    crate::ggml_assert!(mask.ne[0] == k.ne[2]);
    crate::ggml_assert!(q.ne[1] == weights.ne[0]);
    crate::ggml_assert!(k.ne[1] == 1);
    crate::ggml_assert!(mask.ne[1] == q.ne[2]);
    crate::ggml_assert!(q.ne[2] == weights.ne[1]);
    crate::ggml_assert!(weights.ne[2] == 1);
    crate::ggml_assert!(mask.ne[2] == 1);
    crate::ggml_assert!(q.ne[3] == k.ne[3]);
    crate::ggml_assert!(k.ne[3] == weights.ne[3]);
    crate::ggml_assert!(mask.ne[3] != 0 && weights.ne[3] % mask.ne[3] == 0);
    let result = ctx.new_tensor(Type::F32, &[k.ne[2], q.ne[2], 1, q.ne[3]]);
    set_op(result, Op::LIGHTNING_INDEXER, &[q, k, weights, mask]);
    result
}

/// DeepSeek V4 hyper-connection mixing matrices, [hc, hc, n_tokens], from `mixes`
/// ([hc*(hc+2), n_tokens]) by `n_iter` Sinkhorn iterations.
pub fn dsv4_hc_comb(
    ctx: &mut Context,
    mixes: TensorPtr,
    scale: TensorPtr,
    base: TensorPtr,
    eps: f32,
    n_iter: i32,
) -> TensorPtr {
    crate::ggml_assert!(mixes.type_ == Type::F32);
    crate::ggml_assert!(scale.type_ == Type::F32);
    crate::ggml_assert!(base.type_ == Type::F32);
    crate::ggml_assert!(n_iter > 0);
    let mix_dim = mixes.ne[0];
    let n_tokens = mixes.ne[1];
    // hc is the number of hyper-connections: mix_dim = hc * (hc + 2).
    let hc = (1..).take_while(|i| i * i + 2 * i <= mix_dim).find(|i| (2 + i) * i == mix_dim).unwrap_or(0);
    crate::ggml_assert!(hc > 0);
    crate::ggml_assert!(hc == 4);
    crate::ggml_assert!(mixes.ne[2] == 1);
    crate::ggml_assert!(mixes.ne[3] == 1);
    crate::ggml_assert!(scale.ne[0] >= 3);
    crate::ggml_assert!(scale.ne[1] == 1);
    crate::ggml_assert!(scale.ne[2] == 1);
    crate::ggml_assert!(scale.ne[3] == 1);
    crate::ggml_assert!(base.ne[0] == mix_dim);
    crate::ggml_assert!(base.ne[1] == 1);
    crate::ggml_assert!(base.ne[2] == 1);
    crate::ggml_assert!(base.ne[3] == 1);
    let result = ctx.new_tensor(Type::F32, &[hc, hc, n_tokens]);
    let r = result.get_mut();
    r.set_op_param_f32(0, eps);
    r.set_op_param_i32(1, n_iter);
    set_op(result, Op::DSV4_HC_COMB, &[mixes, scale, base]);
    result
}

fn dsv4_hc_pre_impl(ctx: &mut Context, x: TensorPtr, weights: TensorPtr, scale: f32, gated: bool) -> TensorPtr {
    crate::ggml_assert!(x.type_ == Type::F32);
    crate::ggml_assert!(weights.type_ == Type::F32);
    let [n_embd, hc, n_tokens, _] = x.ne;
    crate::ggml_assert!(hc > 0);
    crate::ggml_assert!(x.ne[3] == 1);
    if gated {
        crate::ggml_assert!(weights.ne[0] == n_embd);
        crate::ggml_assert!(weights.ne[1] == hc);
        crate::ggml_assert!(weights.ne[2] == n_tokens);
    } else {
        crate::ggml_assert!(weights.ne[0] == hc);
        crate::ggml_assert!(weights.ne[1] == n_tokens);
        crate::ggml_assert!(weights.ne[2] == 1);
    }
    crate::ggml_assert!(weights.ne[3] == 1);
    let result = ctx.new_tensor(Type::F32, &[n_embd, n_tokens]);
    let r = result.get_mut();
    r.set_op_param_f32(0, scale);
    r.set_op_param_i32(1, gated as i32);
    set_op(result, Op::DSV4_HC_PRE, &[x, weights]);
    result
}

/// Collapses `hc` hyper-connection streams [n_embd, hc, n_tokens] with per-token weights
/// [hc, n_tokens] into [n_embd, n_tokens].
pub fn dsv4_hc_pre(ctx: &mut Context, x: TensorPtr, weights: TensorPtr) -> TensorPtr {
    dsv4_hc_pre_impl(ctx, x, weights, 1.0, false)
}

/// As [`dsv4_hc_pre`] with an elementwise gate shaped like `x`, scaled by `scale`.
pub fn dsv4_hc_pre_gated(ctx: &mut Context, x: TensorPtr, gate: TensorPtr, scale: f32) -> TensorPtr {
    dsv4_hc_pre_impl(ctx, x, gate, scale, true)
}

/// Expands a layer output [n_embd, n_tokens] back into `hc` streams, mixing in `residual`
/// ([n_embd, hc, n_tokens]) through `post` ([hc, n_tokens]) and optionally `comb`
/// ([hc, hc, n_tokens]).
pub fn dsv4_hc_post(
    ctx: &mut Context,
    x: TensorPtr,
    residual: TensorPtr,
    post: TensorPtr,
    comb: Option<TensorPtr>,
) -> TensorPtr {
    crate::ggml_assert!(x.type_ == Type::F32);
    crate::ggml_assert!(residual.type_ == Type::F32);
    crate::ggml_assert!(post.type_ == Type::F32);
    let [n_embd, n_tokens, _, _] = x.ne;
    let hc = residual.ne[1];
    crate::ggml_assert!(hc > 0);
    crate::ggml_assert!(x.ne[2] == 1);
    crate::ggml_assert!(x.ne[3] == 1);
    crate::ggml_assert!(residual.ne[0] == n_embd);
    crate::ggml_assert!(residual.ne[2] == n_tokens);
    crate::ggml_assert!(residual.ne[3] == 1);
    crate::ggml_assert!(post.ne == dims(&[hc, n_tokens]), "post is {:?}", post.ne);
    if let Some(comb) = comb {
        crate::ggml_assert!(comb.type_ == Type::F32);
        crate::ggml_assert!(comb.ne == dims(&[hc, hc, n_tokens]), "comb is {:?}", comb.ne);
    }
    let result = ctx.new_tensor(Type::F32, &[n_embd, hc, n_tokens]);
    set_op(result, Op::DSV4_HC_POST, &[x, residual, post]);
    if let Some(comb) = comb {
        result.get_mut().src[3] = comb.as_ptr();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;

    #[test]
    fn deepseek_ops() {
        let mut c = ctx();
        let mixes = c.new_tensor(Type::F32, &[24, 5]);
        let scale = c.new_tensor(Type::F32, &[3]);
        let base = c.new_tensor(Type::F32, &[24]);
        let comb = dsv4_hc_comb(&mut c, mixes, scale, base, 1e-6, 20);
        assert_eq!(comb.ne, [4, 4, 5, 1]);
        assert_eq!(comb.op_params[..2], [1e-6f32.to_bits() as i32, 20]);

        let x = c.new_tensor(Type::F32, &[32, 4, 5]);
        let w = c.new_tensor(Type::F32, &[4, 5]);
        let pre = dsv4_hc_pre(&mut c, x, w);
        assert_eq!((pre.ne, pre.op_params[..2].to_vec()), ([32, 5, 1, 1], vec![1.0f32.to_bits() as i32, 0]));
        let g = dsv4_hc_pre_gated(&mut c, x, x, 0.5);
        assert_eq!(g.op_params[1], 1);

        let y = c.new_tensor(Type::F32, &[32, 5]);
        let post = dsv4_hc_post(&mut c, y, x, w, Some(comb));
        assert_eq!((post.ne, post.src(3)), ([32, 4, 5, 1], Some(comb)));
        let post = dsv4_hc_post(&mut c, y, x, w, None);
        assert_eq!(post.src(3), None);
    }
}
