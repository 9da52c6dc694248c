//! FLASH_ATTN_BACK, the gradient of the old fused attention.

use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::norm::{row_ptr, source, use_avx2};
use crate::cpu::kernels::simd;
use crate::cpu::kernels::softmax::{exp_row, max_of};

/// FLASH_ATTN_BACK: Q, K, V and the output gradient all F32, F32 result. (The graph
/// constructor of this op aborts in ggml 0.25.1, as ours does, so only a hand-built node gets
/// here.)
pub fn flash_attn_back_supports(node: &Tensor) -> bool {
    (0..4).all(|i| node.source(i).is_some_and(|t| t.type_ == Type::F32)) && node.type_ == Type::F32
}

/// The reference's scratch for FLASH_ATTN_BACK: two rows of `max(D, keys rounded up to 4)`
/// floats, twice over, per task.
pub fn flash_attn_back_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let (Some(q), Some(k)) = (node.source(0), node.source(1)) else { return 0 };
    if !matches!(k.type_, Type::F32 | Type::F16 | Type::BF16) {
        return 0;
    }
    let d = q.ne[0].max(0) as usize;
    let keys = (k.ne[1].max(0) as usize).next_multiple_of(4);
    2 * 4 * 2 * d.max(keys) * n_tasks
}

/// FLASH_ATTN_BACK, the gradient of the old fused attention `softmax(K q / sqrt(D)) V` with
/// `src = [q, k, v, d]`: `q` is `[D, N, H, ne3]`, `k` is `[D, M, Hk, ne3]` (M = P + N keys, P
/// of them from the past), `v` is transposed, `[M, D, Hk, ne3]`, and `d`, the gradient of the
/// output, is `[D, N, H, ne3]`; with `op_params[0] = 1` query `i` sees keys `0..=P + i` only.
/// The result holds the gradients of q, k and v one after another, each starting at a
/// multiple of 16 bytes, laid out packed (with ggml's quirk that the head strides of the k
/// and v gradients count Q's heads). Threads take whole K/V heads, each with the query heads
/// that share it.
pub fn flash_attn_back(params: &ComputeParams, dst: TensorPtr) {
    let (q, k, v, d) = (source(dst, 0), source(dst, 1), source(dst, 2), source(dst, 3));
    let masked = match dst.op_param_i32(0) {
        0 => false,
        1 => true,
        t => crate::ggml_abort!("flash_attn_back: bad masking flag {}", t),
    };
    crate::ggml_assert!(flash_attn_back_supports(&dst), "flash_attn_back: only F32 is supported");
    let [dim, n_q, n_head, ne3] = q.ne;
    let n_keys = k.ne[1];
    let n_past = n_keys - n_q;
    crate::ggml_assert!(n_past >= 0, "flash_attn_back: fewer keys than queries");
    crate::ggml_assert!(
        k.ne[0] == dim && v.ne[0] == n_keys && v.ne[1] == dim && d.ne[0] == dim && d.ne[1] == n_q,
        "flash_attn_back: shapes q {:?} k {:?} v {:?} d {:?} do not fit",
        q.ne,
        k.ne,
        v.ne,
        d.ne
    );
    crate::ggml_assert!(
        k.ne[2] > 0
            && n_head % k.ne[2] == 0
            && v.ne[2] >= k.ne[2]
            && d.ne[2] >= n_head
            && k.ne[3] <= ne3.min(v.ne[3]).min(d.ne[3]),
        "flash_attn_back: heads do not fit"
    );
    crate::ggml_assert!(
        q.nb[0] == 4 && k.nb[0] == 4 && v.nb[0] == 4 && dst.nb[0] == 4,
        "flash_attn_back: rows must be contiguous"
    );

    // the three gradients in the result
    let align = crate::core::context::MEM_ALIGN;
    let at_k = (4 * q.nelements() as usize).next_multiple_of(align);
    let at_v = at_k + (4 * k.nelements() as usize).next_multiple_of(align);
    let (n_kv_head, n_kv3) = (k.ne[2], k.ne[3]);
    let gq = [4 * dim, 4 * dim * n_q, 4 * dim * n_q * n_head].map(|b| b as usize);
    let gk = [4 * dim, 4 * dim * n_keys, 4 * dim * n_keys * n_head].map(|b| b as usize);
    let gv = [4 * n_keys, 4 * n_keys * dim, 4 * n_keys * dim * n_head].map(|b| b as usize);
    let extent = |at: usize, nb: [usize; 3], rows: i64, heads: i64, row_bytes: usize| {
        at + (rows as usize - 1) * nb[0] + (heads as usize - 1) * nb[1] + (n_kv3 as usize - 1) * nb[2] + row_bytes
    };
    if !q.is_empty() && !k.is_empty() {
        crate::ggml_assert!(
            extent(0, gq, n_q, n_head, 4 * dim as usize) <= at_k
                && extent(at_k, gk, n_keys, n_kv_head, 4 * dim as usize) <= at_v
                && extent(at_v, gv, dim, n_kv_head, 4 * n_keys as usize) <= dst.nbytes(),
            "flash_attn_back: result of {} bytes too small for the gradients, or they overlap",
            dst.nbytes()
        );
    }

    // this thread's scores and probabilities
    let m = n_keys as usize;
    // (packed, without cache-line padding: the reference's plan leaves no room for it when
    // the rows are short)
    let per_thread = 2 * 4 * m;
    let skip = params.wdata.align_offset(std::mem::align_of::<f32>());
    crate::ggml_assert!(
        !params.wdata.is_null() && params.wsize >= skip + per_thread * params.nth,
        "flash_attn_back: work buffer of {} bytes is too small",
        params.wsize
    );
    // SAFETY: past `skip` bytes the buffer holds nth slices of `per_thread` bytes (asserted);
    // each thread takes its own two float-aligned rows of m floats.
    let (scores, probs) = unsafe {
        let base = params.wdata.add(skip + per_thread * params.ith);
        (
            std::slice::from_raw_parts_mut(base.cast::<f32>(), m),
            std::slice::from_raw_parts_mut(base.add(4 * m).cast::<f32>(), m),
        )
    };

    if params.ith == 0 {
        // SAFETY: the result is a contiguous F32 tensor of nbytes bytes.
        unsafe { std::ptr::write_bytes(dst.data.cast::<u8>(), 0, dst.nbytes()) };
    }
    params.barrier();

    let simd_ok = use_avx2(params);
    let dot = |a: &[f32], b: &[f32]| if simd_ok { simd::dot_f32(a, b) } else { simd::scalar::dot_f32(a, b) };
    let axpy = |y: &mut [f32], x: &[f32], a: f32| {
        if simd_ok { simd::axpy_f32(y, x, a) } else { simd::scalar::axpy_f32(y, x, a) }
    };
    let scale = 1.0 / (dim as f32).sqrt();
    let dim = dim as usize;
    // SAFETY: for the closures, callers pass indices inside the tensors' shapes (the loops
    // below), whose rows are contiguous floats of the stated lengths.
    let row = |t: &Tensor, i1: i64, i2: i64, i3: i64, len: usize| unsafe {
        std::slice::from_raw_parts(row_ptr(t, i1, i2, i3).cast::<f32>(), len)
    };
    // SAFETY: as for `row`; the gradient rows lie inside the result (asserted above) and
    // each is written by the one thread that owns its K/V head.
    let grad = |at: usize, nb: [usize; 3], i1: i64, i2: i64, i3: i64, len: usize| unsafe {
        let offset = at + i1 as usize * nb[0] + i2 as usize * nb[1] + i3 as usize * nb[2];
        std::slice::from_raw_parts_mut(dst.data.cast::<u8>().add(offset).cast::<f32>(), len)
    };

    let groups = (n_kv_head * n_kv3) as usize;
    let per_group = groups.div_ceil(params.nth);
    let first = (per_group * params.ith).min(groups);
    let last = (first + per_group).min(groups);
    for g in first..last {
        let (ik2, ik3) = (g as i64 % n_kv_head, g as i64 / n_kv_head);
        for rep in 0..n_head / n_kv_head {
            let iq2 = ik2 + rep * n_kv_head;
            for iq1 in 0..n_q {
                let seen = if masked { (n_past + iq1 + 1) as usize } else { m };
                let q_row = row(&q, iq1, iq2, ik3, dim);
                let d_row = row(&d, iq1, iq2, ik3, dim);
                for (ic, s) in scores[..seen].iter_mut().enumerate() {
                    *s = dot(row(&k, ic as i64, ik2, ik3, dim), q_row) * scale;
                }
                // the attention weights
                let max = max_of(&scores[..seen], simd_ok);
                probs[..seen].copy_from_slice(&scores[..seen]);
                let sum = exp_row(&mut probs[..seen], max, simd_ok);
                let inv = (1.0 / sum) as f32;
                probs[..seen].iter_mut().for_each(|p| *p *= inv);
                // the gradient of the weights, then of the scores
                let dp = &mut scores[..seen];
                dp.fill(0.0);
                for (c, &dc) in d_row.iter().enumerate() {
                    axpy(dp, &row(&v, c as i64, ik2, ik3, m)[..seen], dc);
                }
                let centre = dot(&probs[..seen], dp);
                for (g, &p) in dp.iter_mut().zip(&probs[..seen]) {
                    *g = (*g - centre) * p * scale;
                }
                let gq_row = grad(0, gq, iq1, iq2, ik3, dim);
                for (ic, &g) in dp.iter().enumerate() {
                    axpy(gq_row, row(&k, ic as i64, ik2, ik3, dim), g);
                }
                for (ic, &g) in dp.iter().enumerate() {
                    axpy(grad(at_k, gk, ic as i64, ik2, ik3, dim), q_row, g);
                }
                for (c, &dc) in d_row.iter().enumerate() {
                    axpy(&mut grad(at_v, gv, c as i64, ik2, ik3, m)[..seen], &probs[..seen], dc);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::testing::*;

    /// The gradients of `sum(d * softmax(K q / sqrt(D)) V)` in f64, laid out as the result.
    #[test]
    fn flash_attn_back_matches_the_analytic_gradient() {
        let (dim, n_q, n_past, n_head, n_kv_head) = (8usize, 3usize, 4usize, 4usize, 2usize);
        let m = n_q + n_past;
        for masked in [false, true] {
            for use_ref in [false, true] {
                let mut c = ctx();
                let mut rng = Rng::new(31);
                let d = |n: usize| n as i64;
                let q = c.new_tensor(Type::F32, &[d(dim), d(n_q), d(n_head)]);
                let k = c.new_tensor(Type::F32, &[d(dim), d(m), d(n_kv_head)]);
                let v = c.new_tensor(Type::F32, &[d(m), d(dim), d(n_kv_head)]);
                let g = c.new_tensor(Type::F32, &[d(dim), d(n_q), d(n_head)]);
                let (qv, kv, vv, gv) = (
                    random(q, &mut rng, -1.0, 1.0),
                    random(k, &mut rng, -1.0, 1.0),
                    random(v, &mut rng, -1.0, 1.0),
                    random(g, &mut rng, -1.0, 1.0),
                );
                let (nq, nk) = (qv.len(), kv.len());
                let at_k = nq.next_multiple_of(4);
                let at_v = at_k + nk.next_multiple_of(4);
                let node = c.new_tensor(Type::F32, &[d(at_v + vv.len())]);
                node.get_mut().op = crate::core::op::Op::FLASH_ATTN_BACK;
                node.get_mut().op_params[0] = i32::from(masked);
                for (i, t) in [q, k, v, g].into_iter().enumerate() {
                    node.get_mut().src[i] = t.as_ptr();
                }
                assert!(flash_attn_back_supports(&node));
                run(&mut c, node, flash_attn_back, 3, flash_attn_back_work_size(&node, 3), use_ref);
                let got = values(node);

                let mut want = vec![0.0f64; got.len()];
                let scale = 1.0 / (dim as f64).sqrt();
                for h in 0..n_head {
                    let hk = h % n_kv_head;
                    for i in 0..n_q {
                        let seen = if masked { n_past + i + 1 } else { m };
                        let qi = &qv[dim * (i + n_q * h)..][..dim];
                        let gi = &gv[dim * (i + n_q * h)..][..dim];
                        let key = |j: usize| &kv[dim * (j + m * hk)..][..dim];
                        let val = |c: usize, j: usize| vv[j + m * (c + dim * hk)];
                        let s: Vec<f64> =
                            (0..seen).map(|j| scale * key(j).iter().zip(qi).map(|(a, b)| a * b).sum::<f64>()).collect();
                        let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        let total: f64 = s.iter().map(|x| (x - max).exp()).sum();
                        let p: Vec<f64> = s.iter().map(|x| (x - max).exp() / total).collect();
                        let dp: Vec<f64> = (0..seen).map(|j| (0..dim).map(|c| val(c, j) * gi[c]).sum()).collect();
                        let centre: f64 = p.iter().zip(&dp).map(|(a, b)| a * b).sum();
                        for j in 0..seen {
                            let ds = p[j] * (dp[j] - centre) * scale;
                            for c in 0..dim {
                                want[dim * (i + n_q * h) + c] += ds * key(j)[c];
                                want[at_k + dim * (j + m * hk) + c] += ds * qi[c];
                                want[at_v + j + m * (c + dim * hk)] += p[j] * gi[c];
                            }
                        }
                    }
                }
                let e = nmse(&got, &want);
                assert!(e < 1e-10, "masked {masked} ref {use_ref}: nmse {e}");
            }
        }
    }
}
