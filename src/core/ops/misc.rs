//! Ops that fit no larger family: sequences (`arange`, `timestep_embedding`), sorting
//! (`argsort`, `top_k`), the windowing and relative-position ops of SAM-style vision encoders,
//! the triangular solve, and DeepSeek V4's lightning indexer and hyper-connection ops.

use super::dims;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// Marks `result` as computing `op` from `srcs` (in `src[]` order).
pub(crate) fn set_op(result: TensorPtr, op: Op, srcs: &[TensorPtr]) {
    let r = result.get_mut();
    r.op = op;
    for (slot, s) in r.src.iter_mut().zip(srcs) {
        *slot = s.as_ptr();
    }
}

/// `enum ggml_sort_order`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SortOrder(pub i32);

impl SortOrder {
    pub const ASC: SortOrder = SortOrder(0);
    pub const DESC: SortOrder = SortOrder(1);
}

/// The values `start, start + step, ...` below `stop`, as f32.
pub fn arange(ctx: &mut Context, start: f32, stop: f32, step: f32) -> TensorPtr {
    let increasing = stop > start; // false for NaN too
    crate::ggml_assert!(increasing, "arange from {} to {}", start, stop);
    let steps = ((stop - start) / step).ceil() as i64;
    let result = ctx.new_tensor(Type::F32, &[steps]);
    let r = result.get_mut();
    r.set_op_param_f32(0, start);
    r.set_op_param_f32(1, stop);
    r.set_op_param_f32(2, step);
    r.op = Op::ARANGE;
    result
}

/// Sinusoidal embeddings of `dim` values for each timestep in `timesteps`.
pub fn timestep_embedding(ctx: &mut Context, timesteps: TensorPtr, dim: i32, max_period: i32) -> TensorPtr {
    let result = ctx.new_tensor(Type::F32, &[dim as i64, timesteps.ne[0]]);
    result.get_mut().set_op_params_i32(&[dim, max_period]);
    set_op(result, Op::TIMESTEP_EMBEDDING, &[timesteps]);
    result
}

/// The indices (i32) that sort each row of `a` in `order`.
pub fn argsort(ctx: &mut Context, a: TensorPtr, order: SortOrder) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] <= i32::MAX as i64, "rows of {} elements", a.ne[0]);
    let result = ctx.new_tensor(Type::I32, &a.ne);
    result.get_mut().set_op_param_i32(0, order.0);
    set_op(result, Op::ARGSORT, &[a]);
    result
}

/// The indices of the `k` largest values of each row, largest first: a view of the first `k`
/// columns of a descending argsort.
pub fn argsort_top_k(ctx: &mut Context, a: TensorPtr, k: i32) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] >= k as i64, "top {} of rows of {}", k, a.ne[0]);
    let sorted = argsort(ctx, a, SortOrder::DESC);
    let [_, ne1, ne2, ne3] = sorted.ne;
    let [_, nb1, nb2, nb3] = sorted.nb;
    super::shape::view_4d(ctx, sorted, k as i64, ne1, ne2, ne3, nb1, nb2, nb3, 0)
}

/// The indices (i32, in no particular order) of the `k` largest values of each row.
pub fn top_k(ctx: &mut Context, a: TensorPtr, k: i32) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] >= k as i64, "top {} of rows of {}", k, a.ne[0]);
    let result = ctx.new_tensor(Type::I32, &[k as i64, a.ne[1], a.ne[2], a.ne[3]]);
    set_op(result, Op::TOP_K, &[a]);
    result
}

/// Splits `a` ([C, W, H]) into `w`×`w` windows (zero-padded at the far edges): [C, w, w, n].
pub fn win_part(ctx: &mut Context, a: TensorPtr, w: i32) -> TensorPtr {
    crate::ggml_assert!(a.ne[3] == 1);
    crate::ggml_assert!(a.type_ == Type::F32);
    crate::ggml_assert!(w != 0, "window size 0");
    let w64 = w as i64;
    let px = ((w64 - a.ne[1] % w64) % w64) as i32;
    let py = ((w64 - a.ne[2] % w64) % w64) as i32;
    let npx = ((px as i64 + a.ne[1]) / w64) as i32;
    let npy = ((py as i64 + a.ne[2]) / w64) as i32;
    let np = npx.wrapping_mul(npy);
    let result = ctx.new_tensor(Type::F32, &[a.ne[0], w64, w64, np as i64]);
    result.get_mut().set_op_params_i32(&[npx, npy, w]);
    set_op(result, Op::WIN_PART, &[a]);
    result
}

/// Reassembles windows from [`win_part`] into a [C, w0, h0] image.
pub fn win_unpart(ctx: &mut Context, a: TensorPtr, w0: i32, h0: i32, w: i32) -> TensorPtr {
    crate::ggml_assert!(a.type_ == Type::F32);
    let result = ctx.new_tensor(Type::F32, &[a.ne[0], w0 as i64, h0 as i64]);
    result.get_mut().set_op_params_i32(&[w]);
    set_op(result, Op::WIN_UNPART, &[a]);
    result
}

/// Relative-position embeddings for `qh` query and `kh` key positions (f16).
pub fn get_rel_pos(ctx: &mut Context, a: TensorPtr, qh: i32, kh: i32) -> TensorPtr {
    crate::ggml_assert!(qh == kh);
    crate::ggml_assert!(2 * qh.max(kh) as i64 - 1 == a.ne[1]);
    let result = ctx.new_tensor(Type::F16, &[a.ne[0], kh as i64, qh as i64]);
    set_op(result, Op::GET_REL_POS, &[a]);
    result
}

fn add_rel_pos_impl(ctx: &mut Context, a: TensorPtr, pw: TensorPtr, ph: TensorPtr, inplace: bool) -> TensorPtr {
    crate::ggml_assert!(pw.same_shape(&ph));
    crate::ggml_assert!(a.is_contiguous());
    crate::ggml_assert!(pw.is_contiguous());
    crate::ggml_assert!(ph.is_contiguous());
    crate::ggml_assert!(ph.type_ == Type::F32);
    crate::ggml_assert!(pw.type_ == Type::F32);
    crate::ggml_assert!(pw.ne[3] == a.ne[2]);
    crate::ggml_assert!(pw.ne[0] * pw.ne[0] == a.ne[0]);
    crate::ggml_assert!(pw.ne[1] * pw.ne[2] == a.ne[1]);
    let result = super::view_or_dup(ctx, a, inplace);
    result.get_mut().set_op_param_i32(0, inplace as i32);
    set_op(result, Op::ADD_REL_POS, &[a, pw, ph]);
    result
}

/// Adds decomposed relative-position terms `pw` and `ph` to attention scores `a`.
pub fn add_rel_pos(ctx: &mut Context, a: TensorPtr, pw: TensorPtr, ph: TensorPtr) -> TensorPtr {
    add_rel_pos_impl(ctx, a, pw, ph, false)
}

pub fn add_rel_pos_inplace(ctx: &mut Context, a: TensorPtr, pw: TensorPtr, ph: TensorPtr) -> TensorPtr {
    add_rel_pos_impl(ctx, a, pw, ph, true)
}

/// Solves `A X = B` for `X`, `A` lower triangular (the only variant supported: `left`,
/// `lower` and not `uni`).
pub fn solve_tri(ctx: &mut Context, a: TensorPtr, b: TensorPtr, left: bool, lower: bool, uni: bool) -> TensorPtr {
    crate::ggml_assert!(a.type_ == Type::F32);
    crate::ggml_assert!(b.type_ == Type::F32);
    crate::ggml_assert!(a.ne[0] == a.ne[1], "A must be square");
    crate::ggml_assert!(a.ne[1] == b.ne[1], "B must have A's outer dimension");
    crate::ggml_assert!(a.ne[2] == b.ne[2]);
    crate::ggml_assert!(a.ne[3] == b.ne[3]);
    crate::ggml_assert!(a.is_contiguous());
    crate::ggml_assert!(b.is_contiguous());
    crate::ggml_assert!(lower && left && !uni, "only left, lower, non-unit solves are supported");
    let result = ctx.new_tensor(Type::F32, &b.ne);
    set_op(result, Op::SOLVE_TRI, &[a, b]);
    result
}

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
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn arange_counts_steps_and_stores_floats() {
        let mut c = ctx();
        let r = arange(&mut c, 0.0, 10.0, 3.0);
        assert_eq!(r.ne, [4, 1, 1, 1]);
        assert_eq!(r.op, Op::ARANGE);
        assert_eq!(r.op_params[..3], [0.0f32.to_bits() as i32, 10.0f32.to_bits() as i32, 3.0f32.to_bits() as i32]);
        assert!(r.src(0).is_none());
    }

    #[test]
    fn sorting_ops() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[10, 3, 2]);
        let s = argsort(&mut c, a, SortOrder::DESC);
        assert_eq!((s.type_, s.ne, s.op, s.op_params[0]), (Type::I32, a.ne, Op::ARGSORT, 1));
        let v = argsort_top_k(&mut c, a, 4);
        let sorted = v.view_source().unwrap();
        assert_eq!((v.ne, v.nb, v.op), ([4, 3, 2, 1], s.nb, Op::VIEW));
        assert_eq!((sorted.op, sorted.op_params[0], sorted.src(0)), (Op::ARGSORT, 1, Some(a)));
        let t = top_k(&mut c, a, 4);
        assert_eq!((t.type_, t.ne, t.op, t.src(0)), (Type::I32, [4, 3, 2, 1], Op::TOP_K, Some(a)));
        let e = timestep_embedding(&mut c, a, 16, 10000);
        assert_eq!((e.ne, e.op_params[..2].to_vec()), ([16, 10, 1, 1], vec![16, 10000]));
    }

    #[test]
    fn windows_and_rel_pos() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[8, 10, 7]);
        let p = win_part(&mut c, a, 4);
        assert_eq!(p.ne, [8, 4, 4, 6]);
        assert_eq!(p.op_params[..3], [3, 2, 4]);
        let u = win_unpart(&mut c, p, 10, 7, 4);
        assert_eq!((u.ne, u.op_params[0], u.op), ([8, 10, 7, 1], 4, Op::WIN_UNPART));

        let rp = c.new_tensor(Type::F32, &[16, 9]);
        let g = get_rel_pos(&mut c, rp, 5, 5);
        assert_eq!((g.type_, g.ne), (Type::F16, [16, 5, 5, 1]));

        let scores = c.new_tensor(Type::F32, &[16, 12, 3]);
        let pw = c.new_tensor(Type::F32, &[4, 3, 4, 3]);
        let ph = c.new_tensor(Type::F32, &[4, 3, 4, 3]);
        let r = add_rel_pos_inplace(&mut c, scores, pw, ph);
        assert_eq!((r.op, r.op_params[0], r.view_source()), (Op::ADD_REL_POS, 1, Some(scores)));
        assert_eq!((r.src(1), r.src(2)), (Some(pw), Some(ph)));
    }

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

    #[test]
    fn solve_tri_shapes_like_b() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[6, 6, 2]);
        let b = c.new_tensor(Type::F32, &[3, 6, 2]);
        let x = solve_tri(&mut c, a, b, true, true, false);
        assert_eq!((x.ne, x.op, x.src(0), x.src(1)), ([3, 6, 2, 1], Op::SOLVE_TRI, Some(a), Some(b)));
    }
}
