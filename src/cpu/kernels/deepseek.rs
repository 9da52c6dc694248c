//! DeepSeek V4's kernels: the lightning indexer and the hyper-connection ops (`dsv4_hc_*`).

use super::conv::{at, load, store};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src, use_simd};
use crate::cpu::kernels::simd;
use crate::quants::traits::type_traits;

fn all_f32(node: &Tensor, n_src: usize) -> bool {
    node.type_ == Type::F32 && (0..n_src).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

fn dot(x: &[f32], y: &[f32], simd: bool) -> f32 {
    if simd { simd::dot_f32(x, y) } else { simd::scalar::dot_f32(x, y) }
}

/// LIGHTNING_INDEXER: F32 queries and weights, F16 mask, keys F32 or any type with a row
/// converter to f32; F32 out.
pub fn lightning_indexer_supports(node: &Tensor) -> bool {
    let ty = |i: usize| node.source(i).map(|s| s.type_);
    node.type_ == Type::F32
        && ty(0) == Some(Type::F32)
        && ty(2) == Some(Type::F32)
        && ty(3) == Some(Type::F16)
        && ty(1).is_some_and(|k| k == Type::F32 || (k.is_valid() && type_traits(k).to_float.is_some()))
}

/// The reference plan's scratch for LIGHTNING_INDEXER: one f32 key row per task.
pub fn lightning_indexer_work_size(node: &Tensor, n_tasks: usize) -> usize {
    node.source(1).map_or(0, |k| 4 * k.ne[0] as usize * n_tasks)
}

/// LIGHTNING_INDEXER: for each stream, token and key, `Σ_h relu(q_h·k) * w_h` plus the mask.
/// Threads split the keys.
pub fn lightning_indexer(params: &ComputeParams, dst: TensorPtr) {
    let (q, k, w, m) = (src(dst, 0), src(dst, 1), src(dst, 2), src(dst, 3));
    crate::ggml_assert!(lightning_indexer_supports(&dst), "lightning_indexer: unsupported types");
    for t in [&dst, &q, &k, &w, &m] {
        crate::ggml_assert!(t.nb[0] == t.type_.type_size(), "lightning_indexer: rows must be packed");
    }
    if dst.is_empty() || q.ne[0] == 0 {
        // Empty query and key rows: every score is the mask alone (nothing to do when empty).
        if params.ith == 0 && !dst.is_empty() {
            for s in 0..dst.ne[3] {
                for t in 0..dst.ne[1] {
                    for ik in 0..dst.ne[0] {
                        // SAFETY: the coordinates are inside dst and the mask; thread 0 alone.
                        unsafe { store(&dst, at(&dst, ik, t, 0, s), load(&m, at(&m, ik, t, 0, s % m.ne[3]))) };
                    }
                }
            }
        }
        return;
    }
    let n_embd = q.ne[0] as usize;
    let (n_head, n_tokens, n_stream) = (q.ne[1], q.ne[2], q.ne[3]);
    let to_float = if k.type_ == Type::F32 { None } else { type_traits(k.type_).to_float };
    let simd = use_simd(params);
    let mut k_row = vec![0.0f32; n_embd];
    let keys = split(k.ne[2] as usize, params.ith, params.nth);
    // Each key row is converted once and scored against every token.
    for s in 0..n_stream {
        for ik in keys.clone() {
            let ik = ik as i64;
            let k_ptr = k.data.cast::<u8>().wrapping_add(at(&k, 0, 0, ik, s));
            // SAFETY: key row (ik, s) holds `n_embd` elements of k's type; the converter
            // reads exactly that and writes `n_embd` floats.
            unsafe {
                match to_float {
                    Some(f) => f(k_ptr.cast(), k_row.as_mut_ptr(), n_embd as i64),
                    None => std::ptr::copy_nonoverlapping(k_ptr.cast::<f32>(), k_row.as_mut_ptr(), n_embd),
                }
            }
            for t in 0..n_tokens {
                let mut score = 0.0f32;
                for h in 0..n_head {
                    // SAFETY: query row (h, t, s) holds `n_embd` packed floats.
                    let q_row = unsafe {
                        std::slice::from_raw_parts(q.data.cast::<u8>().add(at(&q, 0, h, t, s)).cast::<f32>(), n_embd)
                    };
                    let qk = dot(q_row, &k_row, simd);
                    // SAFETY: weight (h, t, s) is inside w.
                    let wv = unsafe { load(&w, at(&w, h, t, 0, s)) };
                    score += (if qk > 0.0 { qk } else { 0.0 }) * wv;
                }
                // SAFETY: mask (ik, t, s mod its streams) is inside m; the output element is
                // inside dst and its key is this thread's.
                unsafe {
                    let mv = load(&m, at(&m, ik, t, 0, s % m.ne[3]));
                    store(&dst, at(&dst, ik, t, 0, s), score + mv);
                }
            }
        }
    }
}

/// DSV4_HC_COMB, DSV4_HC_PRE, DSV4_HC_POST: F32 everywhere.
pub fn dsv4_hc_supports(node: &Tensor) -> bool {
    let n_src = if node.op == crate::core::op::Op::DSV4_HC_PRE { 2 } else { 3 };
    all_f32(node, n_src) && node.source(3).is_none_or(|c| c.type_ == Type::F32)
}

/// The fixed number of hyper-connections the combination kernel handles.
const HC: usize = 4;

/// Scales each column (fixed destination) of a 4×4 combination to sum 1 (plus `eps`).
fn normalize_cols(comb: &mut [f32; HC * HC], eps: f32) {
    for d in 0..HC {
        let sum = (0..HC).fold(eps, |acc, s| acc + comb[d + HC * s]);
        let inv = 1.0 / sum;
        (0..HC).for_each(|s| comb[d + HC * s] *= inv);
    }
}

/// Scales each row (fixed source) of a 4×4 combination to sum 1 (plus `eps`).
fn normalize_rows(comb: &mut [f32; HC * HC], eps: f32) {
    for s in 0..HC {
        let sum = (0..HC).fold(eps, |acc, d| acc + comb[d + HC * s]);
        let inv = 1.0 / sum;
        (0..HC).for_each(|d| comb[d + HC * s] *= inv);
    }
}

/// DSV4_HC_COMB: per token, the 4×4 block of `mixes * scale[2] + base` at offset 8 goes
/// through a softmax per source (plus `eps`) and `n_iter` Sinkhorn normalisations. Threads
/// split the tokens.
pub fn dsv4_hc_comb(params: &ComputeParams, dst: TensorPtr) {
    let (mixes, scale, base) = (src(dst, 0), src(dst, 1), src(dst, 2));
    crate::ggml_assert!(dsv4_hc_supports(&dst), "dsv4_hc_comb: F32 only");
    let n_tokens = mixes.ne[1];
    crate::ggml_assert!(mixes.ne[0] == ((2 + HC) * HC) as i64 && base.ne[0] == mixes.ne[0] && scale.ne[0] >= 3);
    crate::ggml_assert!(dst.ne[0] == HC as i64 && dst.ne[1] == HC as i64 && dst.ne[2] == n_tokens);
    let eps = dst.op_param_f32(0);
    let n_iter = dst.op_params[1];
    crate::ggml_assert!(n_iter > 0, "dsv4_hc_comb: {} iterations", n_iter);
    let offset = (2 * HC) as i64;
    // SAFETY: scale has at least three elements.
    let scale_comb = unsafe { load(&scale, at(&scale, 2, 0, 0, 0)) };
    for it in split(n_tokens as usize, params.ith, params.nth) {
        let it = it as i64;
        let mut comb = [0.0f32; HC * HC];
        for s in 0..HC {
            let mut max = f32::NEG_INFINITY;
            for d in 0..HC {
                let idx = d + HC * s;
                let j = offset + idx as i64;
                // SAFETY: `j < 24` indexes mixes' row `it` and base.
                let v =
                    unsafe { load(&mixes, at(&mixes, j, it, 0, 0)) * scale_comb + load(&base, at(&base, j, 0, 0, 0)) };
                comb[idx] = v;
                max = if max > v { max } else { v };
            }
            let mut sum = 0.0f32;
            for d in 0..HC {
                let v = (comb[d + HC * s] - max).exp();
                comb[d + HC * s] = v;
                sum += v;
            }
            let inv = 1.0 / sum;
            (0..HC).for_each(|d| comb[d + HC * s] = comb[d + HC * s] * inv + eps);
        }
        normalize_cols(&mut comb, eps);
        for _ in 1..n_iter {
            normalize_rows(&mut comb, eps);
            normalize_cols(&mut comb, eps);
        }
        for s in 0..HC {
            for d in 0..HC {
                // SAFETY: inside dst; token `it` is this thread's.
                unsafe { store(&dst, at(&dst, d as i64, s as i64, it, 0), comb[d + HC * s]) };
            }
        }
    }
}

/// DSV4_HC_PRE: `scale * Σ_h x[:, h, t] * w_h`, the weight per (stream, token) or, gated,
/// `sigmoid` of a gate shaped like `x`. Threads split the output elements.
pub fn dsv4_hc_pre(params: &ComputeParams, dst: TensorPtr) {
    let (x, weights) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(dsv4_hc_supports(&dst), "dsv4_hc_pre: F32 only");
    let [n_embd, hc, n_tokens, _] = x.ne;
    let scale = dst.op_param_f32(0);
    let gated = dst.op_params[1] != 0;
    crate::ggml_assert!(dst.ne[0] == n_embd && dst.ne[1] == n_tokens);
    if gated {
        crate::ggml_assert!(weights.ne[0] == n_embd && weights.ne[1] == hc && weights.ne[2] == n_tokens);
    } else {
        crate::ggml_assert!(weights.ne[0] == hc && weights.ne[1] == n_tokens);
    }
    for r in split((n_embd * n_tokens) as usize, params.ith, params.nth) {
        let (i0, it) = (r as i64 % n_embd, r as i64 / n_embd);
        let mut sum = 0.0f32;
        for ih in 0..hc {
            // SAFETY: the coordinates are inside x and the weights (shapes checked above).
            unsafe {
                let xv = load(&x, at(&x, i0, ih, it, 0));
                let wv = if gated {
                    1.0 / (1.0 + (-load(&weights, at(&weights, i0, ih, it, 0))).exp())
                } else {
                    load(&weights, at(&weights, ih, it, 0, 0))
                };
                sum += xv * wv;
            }
        }
        // SAFETY: inside dst; the element is this thread's.
        unsafe { store(&dst, at(&dst, i0, it, 0, 0), scale * sum) };
    }
}

/// DSV4_HC_POST: stream `d` of token `t` is `x * post[d]` plus the residual streams mixed by
/// `comb[d, :]` (or stream `d`'s own residual without `comb`). Threads split the elements.
pub fn dsv4_hc_post(params: &ComputeParams, dst: TensorPtr) {
    let (x, residual, post) = (src(dst, 0), src(dst, 1), src(dst, 2));
    let comb = dst.src(3);
    crate::ggml_assert!(dsv4_hc_supports(&dst), "dsv4_hc_post: F32 only");
    let (n_embd, n_tokens, hc) = (x.ne[0], x.ne[1], residual.ne[1]);
    crate::ggml_assert!(dst.ne[0] == n_embd && dst.ne[1] == hc && dst.ne[2] == n_tokens);
    crate::ggml_assert!(residual.ne[0] == n_embd && residual.ne[2] == n_tokens);
    crate::ggml_assert!(post.ne[0] == hc && post.ne[1] == n_tokens);
    if let Some(c) = comb {
        crate::ggml_assert!(c.ne[0] == hc && c.ne[1] == hc && c.ne[2] == n_tokens);
    }
    for r in split((n_embd * hc * n_tokens) as usize, params.ith, params.nth) {
        let r = r as i64;
        let (i0, d, it) = (r % n_embd, (r / n_embd) % hc, r / (n_embd * hc));
        // SAFETY: every coordinate is inside its tensor (shapes checked above); the output
        // element is this thread's.
        unsafe {
            let mut sum = load(&x, at(&x, i0, it, 0, 0)) * load(&post, at(&post, d, it, 0, 0));
            match comb {
                Some(c) => {
                    for s in 0..hc {
                        sum += load(&residual, at(&residual, i0, s, it, 0)) * load(&c, at(&c, d, s, it, 0));
                    }
                }
                None => sum += load(&residual, at(&residual, i0, d, it, 0)),
            }
            store(&dst, at(&dst, i0, d, it, 0), sum);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::deepseek as ops;
    use crate::cpu::kernels::testing::*;

    fn get(v: &[f64], ne: [i64; 4], i: [i64; 4]) -> f64 {
        v[(i[0] + ne[0] * (i[1] + ne[1] * (i[2] + ne[2] * i[3]))) as usize]
    }

    #[test]
    fn lightning_indexer_scores() {
        for_each_team(|nth, use_ref| {
            for kty in [Type::F32, Type::F16] {
                let mut c = ctx();
                let (n_embd, n_head, n_tokens, n_kv, n_stream) = (16, 3, 4, 7, 2);
                let q = c.new_tensor(Type::F32, &[n_embd, n_head, n_tokens, n_stream]);
                let k = c.new_tensor(kty, &[n_embd, 1, n_kv, n_stream]);
                let w = c.new_tensor(Type::F32, &[n_head, n_tokens, 1, n_stream]);
                let m = c.new_tensor(Type::F16, &[n_kv, n_tokens, 1, 1]);
                for (t, s) in [(q, 10), (k, 11), (w, 12), (m, 13)] {
                    put(t, |i| noise(i, s));
                }
                let r = ops::lightning_indexer(&mut c, q, k, w, m);
                assert!(lightning_indexer_supports(&r));
                run(&mut c, r, lightning_indexer, nth, lightning_indexer_work_size(&r, nth), use_ref);
                let (qv, kv, wv, mv) = (values(q), values(k), values(w), values(m));
                let mut want = Vec::new();
                for s in 0..n_stream {
                    for t in 0..n_tokens {
                        for ik in 0..n_kv {
                            let mut score = 0.0;
                            for h in 0..n_head {
                                let qk: f64 = (0..n_embd)
                                    .map(|e| get(&qv, q.ne, [e, h, t, s]) * get(&kv, k.ne, [e, 0, ik, s]))
                                    .sum();
                                score += qk.max(0.0) * get(&wv, w.ne, [h, t, 0, s]);
                            }
                            want.push(score + get(&mv, m.ne, [ik, t, 0, 0]));
                        }
                    }
                }
                assert_close(&values(r), &want, 1e-5, "lightning_indexer");
            }
        });
    }

    #[test]
    fn hyper_connection_ops() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let n_tokens = 5;
            let mixes = c.new_tensor(Type::F32, &[24, n_tokens]);
            let scale = c.new_tensor(Type::F32, &[3]);
            let base = c.new_tensor(Type::F32, &[24]);
            put(mixes, |i| noise(i, 14) * 2.0);
            put(scale, |i| [0.5, 0.7, 1.3][i]);
            put(base, |i| noise(i, 15));
            let r = ops::dsv4_hc_comb(&mut c, mixes, scale, base, 1e-6, 20);
            assert!(dsv4_hc_supports(&r));
            run(&mut c, r, dsv4_hc_comb, nth, 0, use_ref);
            let (mx, bs) = (values(mixes), values(base));
            let v = values(r);
            for t in 0..n_tokens as usize {
                // softmax per source, then Sinkhorn normalisation, in f64
                let mut comb = [0.0f64; 16];
                for s in 0..4 {
                    let logits: Vec<f64> =
                        (0..4).map(|d| mx[t * 24 + 8 + d + 4 * s] * 1.3 + bs[8 + d + 4 * s]).collect();
                    let max = logits.iter().copied().fold(f64::MIN, f64::max);
                    let sum: f64 = logits.iter().map(|l| (l - max).exp()).sum();
                    for d in 0..4 {
                        comb[d + 4 * s] = (logits[d] - max).exp() / sum + 1e-6;
                    }
                }
                let cols = |comb: &mut [f64; 16]| {
                    for d in 0..4 {
                        let sum: f64 = 1e-6 + (0..4).map(|s| comb[d + 4 * s]).sum::<f64>();
                        (0..4).for_each(|s| comb[d + 4 * s] /= sum);
                    }
                };
                cols(&mut comb);
                for _ in 1..20 {
                    for s in 0..4 {
                        let sum: f64 = 1e-6 + (0..4).map(|d| comb[d + 4 * s]).sum::<f64>();
                        (0..4).for_each(|d| comb[d + 4 * s] /= sum);
                    }
                    cols(&mut comb);
                }
                assert_close(&v[t * 16..(t + 1) * 16], &comb, 1e-5, "dsv4_hc_comb");
            }

            let x = c.new_tensor(Type::F32, &[8, 4, n_tokens]);
            let w = c.new_tensor(Type::F32, &[4, n_tokens]);
            put(x, |i| noise(i, 16));
            put(w, |i| noise(i, 17));
            let (xv, wv) = (values(x), values(w));
            let pre = ops::dsv4_hc_pre(&mut c, x, w);
            run(&mut c, pre, dsv4_hc_pre, nth, 0, use_ref);
            let gated = ops::dsv4_hc_pre_gated(&mut c, x, x, 0.5);
            run(&mut c, gated, dsv4_hc_pre, nth, 0, use_ref);
            let (mut want, mut want_gated) = (Vec::new(), Vec::new());
            for t in 0..n_tokens {
                for e in 0..8 {
                    let xs = |h| get(&xv, x.ne, [e, h, t, 0]);
                    want.push((0..4).map(|h| xs(h) * get(&wv, w.ne, [h, t, 0, 0])).sum::<f64>());
                    want_gated.push(0.5 * (0..4).map(|h| xs(h) / (1.0 + (-xs(h)).exp())).sum::<f64>());
                }
            }
            assert_close(&values(pre), &want, 1e-6, "dsv4_hc_pre");
            assert_close(&values(gated), &want_gated, 1e-6, "dsv4_hc_pre gated");

            let y = c.new_tensor(Type::F32, &[8, n_tokens]);
            put(y, |i| noise(i, 18));
            let yv = values(y);
            for with_comb in [false, true] {
                let post = ops::dsv4_hc_post(&mut c, y, x, w, with_comb.then_some(r));
                run(&mut c, post, dsv4_hc_post, nth, 0, use_ref);
                let mut want = Vec::new();
                for t in 0..n_tokens {
                    for d in 0..4 {
                        for e in 0..8 {
                            let mut s = get(&yv, y.ne, [e, t, 0, 0]) * get(&wv, w.ne, [d, t, 0, 0]);
                            if with_comb {
                                s += (0..4)
                                    .map(|src| get(&xv, x.ne, [e, src, t, 0]) * get(&v, r.ne, [d, src, t, 0]))
                                    .sum::<f64>();
                            } else {
                                s += get(&xv, x.ne, [e, d, t, 0]);
                            }
                            want.push(s);
                        }
                    }
                }
                assert_close(&values(post), &want, 1e-5, "dsv4_hc_post");
            }
        });
    }
}
