//! Recurrent sequence-model kernels: Mamba's causal convolution and selective scan, RWKV 6
//! and 7's WKV, gated linear attention and the gated delta rule.
//!
//! The recurrent ops write their outputs followed by the final states into one F32 tensor.
//! Each thread owns a set of heads (or head × sequence pairs) and runs the whole token loop
//! for them, so no phase needs the team: a thread clears only the outputs it accumulates
//! into. The inputs are the packed F32 layouts the constructors require.

use super::conv::{at, load, store};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src, use_simd};
use crate::cpu::kernels::simd;

/// `dst` and its first `n` sources are F32.
fn all_f32(node: &Tensor, n: usize) -> bool {
    node.type_ == Type::F32 && (0..n).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

/// A raw view of an F32 tensor's data as a flat array of floats.
#[derive(Clone, Copy)]
struct Floats(*mut f32);

impl Floats {
    fn of(t: &Tensor) -> Floats {
        Floats(t.data.cast::<f32>())
    }

    /// # Safety
    /// `i` is inside the tensor's data.
    #[inline]
    unsafe fn get(self, i: usize) -> f32 {
        // SAFETY: the caller keeps `i` in range.
        unsafe { *self.0.add(i) }
    }

    /// # Safety
    /// `i` is inside the tensor's data and no other thread touches it now.
    #[inline]
    unsafe fn set(self, i: usize, v: f32) {
        // SAFETY: the caller keeps `i` in range and owns the element.
        unsafe { *self.0.add(i) = v }
    }

    fn offset(self, i: usize) -> Floats {
        Floats(self.0.wrapping_add(i))
    }
}

/// `ggml_compute_softplus_f32`.
fn softplus(x: f32) -> f32 {
    if x > 20.0 { x } else { (1.0 + x.exp()).ln() }
}

// ---------------------------------------------------------------------------------------------
// Mamba

/// SSM_CONV: F32 everywhere.
pub fn ssm_conv_supports(node: &Tensor) -> bool {
    all_f32(node, 2)
}

/// SSM_CONV: `dst[c, t, s] = Σ_k x[t + k, c, s] * w[k, c]` over the `d_conv` taps. Threads
/// split the channels.
pub fn ssm_conv(params: &ComputeParams, dst: TensorPtr) {
    let (x, w) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(ssm_conv_supports(&dst), "ssm_conv: F32 only");
    crate::ggml_assert!(dst.ne[0] == x.ne[1] && w.ne[1] == x.ne[1], "ssm_conv: channel counts differ");
    let nc = w.ne[0];
    for ch in split(x.ne[1] as usize, params.ith, params.nth) {
        let ch = ch as i64;
        for s in 0..dst.ne[2] {
            for t in 0..dst.ne[1] {
                let mut sum = 0.0f32;
                for k in 0..nc {
                    // SAFETY: `t + k < n_t + d_conv - 1 = x.ne[0]`; the other indices are in
                    // range of their tensors.
                    sum += unsafe { load(&x, at(&x, t + k, ch, s, 0)) * load(&w, at(&w, k, ch, 0, 0)) };
                }
                // SAFETY: inside dst; channel `ch` is this thread's.
                unsafe { store(&dst, at(&dst, ch, t, s, 0), sum) };
            }
        }
    }
}

/// SSM_SCAN: F32 states, inputs and parameters, I32 sequence ids; Mamba-1 decays (one per
/// state element) only with a single state snapshot.
pub fn ssm_scan_supports(node: &Tensor) -> bool {
    all_f32(node, 6)
        && node.source(6).is_some_and(|ids| ids.type_ == Type::I32)
        && (node.op_params[0] == 1 || node.source(3).is_some_and(|a| a.ne[0] == 1))
}

/// SSM_SCAN: the selective scan. Per sequence, token, head `h`, row `i` and state `n`:
/// `state = state * exp(softplus(dt) * A) + B[n] * x[i] * softplus(dt)` and
/// `y[i] = Σ_n state * C[n]`. The states of sequence `s` start from `s0[ids[s]]`; the final
/// ones (and, with `K > 1` snapshots, those of the last `K` tokens) follow the outputs.
/// Threads split the heads.
pub fn ssm_scan(params: &ComputeParams, dst: TensorPtr) {
    let (s0, x, dt, a, b, c, ids) =
        (src(dst, 0), src(dst, 1), src(dst, 2), src(dst, 3), src(dst, 4), src(dst, 5), src(dst, 6));
    crate::ggml_assert!(ssm_scan_supports(&dst), "ssm_scan: unsupported types or snapshot count");
    if dst.is_empty() {
        return;
    }
    let nc = s0.ne[0] as usize; // d_state
    let nr = s0.ne[1] as usize; // head dim
    let nh = x.ne[1] as usize;
    let ng = b.ne[1] as usize;
    let nt = x.ne[2] as usize;
    let ns = x.ne[3] as usize;
    let k = dst.op_params[0] as usize;
    crate::ggml_assert!(k >= 1 && ng > 0 && nh.is_multiple_of(ng), "ssm_scan: bad groups or snapshots");
    crate::ggml_assert!(x.nelements() as usize + k * nc * nr * nh * ns == dst.nelements() as usize);
    for t in [&s0, &x, &dt, &a, &b, &c] {
        crate::ggml_assert!(t.nb[0] == 4, "ssm_scan: rows must be packed");
    }
    crate::ggml_assert!(s0.is_contiguous() && a.is_contiguous(), "ssm_scan: states and A must be contiguous");
    let mamba1 = a.ne[0] != 1;
    let s_off = x.nelements() as usize; // in floats
    let state_stride = s0.nb[3] / 4; // floats per sequence's states
    let head_stride = s0.nb[2] / 4;
    let out = Floats::of(&dst);
    let av = Floats::of(&a);
    let heads = split(nh, params.ith, params.nth);
    let group_size = nh / ng;

    for seq in 0..ns {
        // SAFETY: ids holds `ns` i32 values.
        let id = unsafe { ids.data.cast::<i32>().add(seq).read_unaligned() };
        crate::ggml_assert!(id >= 0 && (id as i64) < s0.ne[3], "ssm_scan: state id {} out of range", id);
        let mut prev = Floats::of(&s0).offset(id as usize * state_stride);
        let cur = out.offset(s_off + seq * state_stride);
        for tok in 0..nt {
            let xr = Floats(x.data.cast::<u8>().wrapping_add(at(&x, 0, 0, tok as i64, seq as i64)).cast());
            let dtr = Floats(dt.data.cast::<u8>().wrapping_add(at(&dt, 0, tok as i64, seq as i64, 0)).cast());
            let br = Floats(b.data.cast::<u8>().wrapping_add(at(&b, 0, 0, tok as i64, seq as i64)).cast());
            let cr = Floats(c.data.cast::<u8>().wrapping_add(at(&c, 0, 0, tok as i64, seq as i64)).cast());
            let y = out.offset((seq * nt + tok) * nh * nr);
            for h in heads.clone() {
                // SAFETY: every index below stays inside its tensor: heads < nh, rows < nr,
                // states < nc, groups < ng (packed layouts asserted above); the states and
                // outputs of head `h` are this thread's.
                unsafe {
                    let dt_sp = softplus(dtr.get(h));
                    let g = h / group_size;
                    let decay = if mamba1 { 0.0 } else { (dt_sp * av.get(h)).exp() };
                    for i1 in 0..nr {
                        let ii = i1 + h * nr;
                        let x_dt = xr.get(ii) * dt_sp;
                        let mut sum = 0.0f32;
                        for i0 in 0..nc {
                            let i = i0 + ii * nc;
                            let ig = i0 + g * nc;
                            let d = if mamba1 { (dt_sp * av.get(i0 + h * nc)).exp() } else { decay };
                            let state = prev.get(i) * d + br.get(ig) * x_dt;
                            sum += state * cr.get(ig);
                            cur.set(i, state);
                        }
                        y.set(ii, sum);
                    }
                }
            }
            let slot = nt as i64 - 1 - tok as i64;
            if k > 1 && slot > 0 && (slot as usize) < k {
                let snap = out.offset(s_off + (slot as usize * ns + seq) * state_stride);
                for h in heads.clone() {
                    // SAFETY: snapshot `slot` of sequence `seq` lies inside dst's state area
                    // (K snapshots of `ns` sequences); head `h`'s block is this thread's.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            cur.0.add(h * head_stride),
                            snap.0.add(h * head_stride),
                            head_stride,
                        )
                    };
                }
            }
            prev = cur;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RWKV and gated linear attention

/// The task count of RWKV_WKV6, RWKV_WKV7 and GATED_LINEAR_ATTN: a thread per head at most
/// (the heads are `src[1]`'s second dimension).
pub fn per_head_tasks(node: &Tensor, n_threads: usize) -> usize {
    let heads = node.source(1).map_or(1, |k| usize::try_from(k.ne[1]).unwrap_or(1));
    n_threads.min(heads.max(1))
}

/// RWKV_WKV6: F32 everywhere.
pub fn rwkv_wkv6_supports(node: &Tensor) -> bool {
    all_f32(node, 6)
}

/// RWKV_WKV7: F32 everywhere.
pub fn rwkv_wkv7_supports(node: &Tensor) -> bool {
    all_f32(node, 7)
}

/// GATED_LINEAR_ATTN: F32 everywhere.
pub fn gated_linear_attn_supports(node: &Tensor) -> bool {
    all_f32(node, 5)
}

/// The shape of a WKV-style recurrence: `t_total` tokens of `heads` heads of `hs` values
/// (`c = heads*hs` per token), in `n_seqs` sequences of equal length.
struct Wkv {
    t_total: usize,
    c: usize,
    heads: usize,
    hs: usize,
    n_seqs: usize,
}

impl Wkv {
    fn new(dst: &Tensor, v: &Tensor, state: &Tensor) -> Wkv {
        let (t_total, c, heads, n_seqs) =
            (v.ne[2] as usize, dst.ne[0] as usize, v.ne[1] as usize, state.ne[1] as usize);
        crate::ggml_assert!(heads > 0 && c % heads == 0, "wkv: {} channels in {} heads", c, heads);
        crate::ggml_assert!(n_seqs > 0 && t_total % n_seqs == 0, "wkv: {} tokens in {} sequences", t_total, n_seqs);
        Wkv { t_total, c, heads, hs: c / heads, n_seqs }
    }

    /// Thread `ith`'s heads, as the reference splits them.
    fn heads_of(&self, ith: usize, nth: usize) -> std::ops::Range<usize> {
        (self.heads * ith / nth)..(self.heads * (ith + 1) / nth).min(self.heads)
    }

    /// The state to read at token `t` (the input state at a sequence's first token, the
    /// running one after) and the one to write, as float offsets from the input state's
    /// data and from dst's state area.
    fn states(&self, t: usize) -> (bool, usize) {
        let per_seq = self.t_total / self.n_seqs;
        (t.is_multiple_of(per_seq), self.hs * self.c * (t / per_seq))
    }
}

/// Runs the WKV-style token loop for this thread's heads. `step(t_h, s_prev, s_cur, out)`
/// handles one head of one token: `t_h` is the float offset of the head's values in the
/// token inputs, `s_prev`/`s_cur` the head's state (read, written), `out` its outputs.
fn wkv_loop(
    params: &ComputeParams,
    dst: &Tensor,
    state_in: &Tensor,
    w: &Wkv,
    mut step: impl FnMut(usize, Floats, Floats, Floats),
) {
    let out = Floats::of(dst);
    let state_out = out.offset(w.t_total * w.c);
    let input = Floats::of(state_in);
    let heads = w.heads_of(params.ith, params.nth);
    for t in 0..w.t_total {
        let (first, off) = w.states(t);
        let cur = state_out.offset(off);
        let prev = if first { input.offset(off) } else { cur };
        for h in heads.clone() {
            let t_h = t * w.c + h * w.hs;
            let h2 = h * w.hs * w.hs;
            step(t_h, prev.offset(h2), cur.offset(h2), out.offset(t_h));
        }
    }
}

/// RWKV_WKV6: `out = r·(tf ⊙ (k ⊗ v) + S)`, `S = td ⊙ S + k ⊗ v` per token, with per-token
/// decay `td`. Threads split the heads.
pub fn rwkv_wkv6(params: &ComputeParams, dst: TensorPtr) {
    crate::ggml_assert!(rwkv_wkv6_supports(&dst), "rwkv_wkv6: F32 only");
    let (k, v, r, tf, td, state) = (src(dst, 0), src(dst, 1), src(dst, 2), src(dst, 3), src(dst, 4), src(dst, 5));
    let w = Wkv::new(&dst, &v, &state);
    let (kf, vf, rf, tff, tdf) = (Floats::of(&k), Floats::of(&v), Floats::of(&r), Floats::of(&tf), Floats::of(&td));
    let hs = w.hs;
    wkv_loop(params, &dst, &state, &w, |t_h, prev, cur, out| {
        let h_off = t_h % w.c;
        // SAFETY: the offsets stay inside the token inputs (t_h + hs <= T*C), the per-head
        // bonus (h_off + hs <= C) and the head's hs×hs state; outputs and states of this head
        // are this thread's.
        unsafe {
            for j in 0..hs {
                out.set(j, 0.0);
            }
            for i in 0..hs {
                let (kv, rv, bonus, decay) = (kf.get(t_h + i), rf.get(t_h + i), tff.get(h_off + i), tdf.get(t_h + i));
                for j in 0..hs {
                    let kvj = vf.get(t_h + j) * kv;
                    let p = prev.get(i * hs + j);
                    let temp = kvj * bonus + p;
                    out.set(j, out.get(j) + temp * rv);
                    cur.set(i * hs + j, p * decay + kvj);
                }
            }
        }
    });
}

/// GATED_LINEAR_ATTN: `S = g ⊙ S + k ⊗ v`, `out = (q*scale)·S` per token. Threads split the
/// heads.
pub fn gated_linear_attn(params: &ComputeParams, dst: TensorPtr) {
    crate::ggml_assert!(gated_linear_attn_supports(&dst), "gated_linear_attn: F32 only");
    let (k, v, q, g, state) = (src(dst, 0), src(dst, 1), src(dst, 2), src(dst, 3), src(dst, 4));
    let scale = dst.op_param_f32(0);
    let w = Wkv::new(&dst, &v, &state);
    let (kf, vf, qf, gf) = (Floats::of(&k), Floats::of(&v), Floats::of(&q), Floats::of(&g));
    let hs = w.hs;
    wkv_loop(params, &dst, &state, &w, |t_h, prev, cur, out| {
        // SAFETY: as in rwkv_wkv6.
        unsafe {
            for j in 0..hs {
                out.set(j, 0.0);
            }
            for i in 0..hs {
                let (kv, qv, gv) = (kf.get(t_h + i), qf.get(t_h + i) * scale, gf.get(t_h + i));
                for j in 0..hs {
                    let kvj = vf.get(t_h + j) * kv;
                    let temp = prev.get(i * hs + j) * gv + kvj;
                    out.set(j, out.get(j) + temp * qv);
                    cur.set(i * hs + j, temp);
                }
            }
        }
    });
}

/// RWKV_WKV7: per token and state row `i`, `sa = a·S[i]`, `S[i] = w ⊙ S[i] + v[i]*k +
/// sa*b`, `out[i] = r·S[i]`. Threads split the heads.
pub fn rwkv_wkv7(params: &ComputeParams, dst: TensorPtr) {
    crate::ggml_assert!(rwkv_wkv7_supports(&dst), "rwkv_wkv7: F32 only");
    let (r, wd, k, v, a, b, state) =
        (src(dst, 0), src(dst, 1), src(dst, 2), src(dst, 3), src(dst, 4), src(dst, 5), src(dst, 6));
    let w = Wkv::new(&dst, &wd, &state);
    let f = [&r, &wd, &k, &v, &a, &b].map(|t| Floats::of(t));
    let [rf, wf, kf, vf, af, bf] = f;
    let hs = w.hs;
    wkv_loop(params, &dst, &state, &w, |t_h, prev, cur, out| {
        // SAFETY: as in rwkv_wkv6; the state row is read in full (for `sa`) before it is
        // overwritten element by element, each element read before its own write.
        unsafe {
            for i in 0..hs {
                let vi = vf.get(t_h + i);
                let mut sa = 0.0f32;
                for j in 0..hs {
                    sa += af.get(t_h + j) * prev.get(i * hs + j);
                }
                let mut result = 0.0f32;
                for j in 0..hs {
                    let s = prev.get(i * hs + j) * wf.get(t_h + j) + vi * kf.get(t_h + j) + sa * bf.get(t_h + j);
                    cur.set(i * hs + j, s);
                    result += s * rf.get(t_h + j);
                }
                out.set(i, result);
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Gated delta net

/// GATED_DELTA_NET: F32 everywhere.
pub fn gated_delta_net_supports(node: &Tensor) -> bool {
    all_f32(node, 6)
}

/// The reference plan's scratch for GATED_DELTA_NET: a delta row per task, plus a working
/// state when several snapshots are kept.
pub fn gated_delta_net_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let s_v = node.source(2).map_or(0, |v| v.ne[0] as usize);
    let per_thread = s_v + if node.op_params[0] > 1 { s_v * s_v } else { 0 };
    per_thread * 4 * n_tasks
}

/// GATED_DELTA_NET: per head and sequence, over the tokens: decay the state `M` (stored
/// transposed, row `j` = column `j` of S) by `exp(g)` (scalar, or per row element with KDA
/// gates), `delta = (v - M k) * beta`, `M[j] += delta[j] * k`, `out = (M q) / sqrt(S_v)`.
/// The final state (or, with `K > 1`, the states after each of the last `K` tokens) follows
/// the outputs. Threads split the (head, sequence) pairs.
pub fn gated_delta_net(params: &ComputeParams, dst: TensorPtr) {
    let (q, k, v, g, beta, state) = (src(dst, 0), src(dst, 1), src(dst, 2), src(dst, 3), src(dst, 4), src(dst, 5));
    crate::ggml_assert!(gated_delta_net_supports(&dst), "gated_delta_net: F32 only");
    crate::ggml_assert!(q.is_contiguous_rows() && k.is_contiguous_rows() && v.is_contiguous_rows());
    crate::ggml_assert!(g.is_contiguous() && beta.is_contiguous() && state.is_contiguous());
    let [sv, h, n_tokens, n_seqs] = v.ne.map(|n| n as usize);
    crate::ggml_assert!(g.ne[0] == 1 || g.ne[0] == sv as i64, "gated_delta_net: gate width {}", g.ne[0]);
    crate::ggml_assert!(beta.ne[0] == 1);
    if dst.is_empty() {
        return;
    }
    let kda = g.ne[0] == sv as i64;
    let snaps = dst.op_params[0] as usize;
    crate::ggml_assert!(snaps >= 1);
    let simd = use_simd(params);
    let attn_elems = sv * h * n_tokens * n_seqs;
    let snap_size = sv * sv * h * n_seqs;
    let out = Floats::of(&dst);
    let state_out = out.offset(attn_elems);
    let state_in = Floats::of(&state);
    let seq_stride = state.nb[3] / 4;
    let (rq3, rk3) = (v.ne[3] / q.ne[3], v.ne[3] / k.ne[3]);
    let scale = 1.0 / (sv as f32).sqrt();
    let mut delta = vec![0.0f32; sv];
    let mut m = vec![0.0f32; sv * sv];
    /// Row `(i1, i2, i3)` of `t`, `n` packed floats.
    fn row(t: &Tensor, i1: i64, i2: usize, i3: i64, n: usize) -> &[f32] {
        // SAFETY: the callers' coordinates are inside `t`, whose rows hold `n` packed floats.
        unsafe { std::slice::from_raw_parts(t.data.cast::<u8>().add(at(t, 0, i1, i2 as i64, i3)).cast::<f32>(), n) }
    }

    for ir in split(h * n_seqs, params.ith, params.nth) {
        let (iv1, iv3) = ((ir % h) as i64, (ir / h) as i64);
        let (iq1, ik1) = (iv1 % q.ne[1], iv1 % k.ne[1]);
        let (iq3, ik3) = (iv3 / rq3, iv3 / rk3);
        let head = (iv3 as usize * h + iv1 as usize) * sv * sv;
        // SAFETY: the head's input state is sv*sv floats inside the contiguous state.
        let s_in = unsafe {
            std::slice::from_raw_parts(state_in.0.add(iv3 as usize * seq_stride + iv1 as usize * sv * sv), sv * sv)
        };
        m.copy_from_slice(s_in);
        for t in 0..n_tokens {
            let (qd, kd, vd) = (row(&q, iq1, t, iq3, sv), row(&k, ik1, t, ik3, sv), row(&v, iv1, t, iv3, sv));
            // SAFETY: (iv1, t, iv3) is inside beta and g.
            let bv = unsafe { load(&beta, at(&beta, 0, iv1, t as i64, iv3)) };
            if kda {
                let gd = row(&g, iv1, t, iv3, sv);
                delta.iter_mut().zip(gd).for_each(|(d, &gv)| *d = gv.exp());
                for mj in m.chunks_exact_mut(sv) {
                    mj.iter_mut().zip(&delta).for_each(|(x, &e)| *x *= e);
                }
            } else {
                // SAFETY: as above.
                let decay = unsafe { load(&g, at(&g, 0, iv1, t as i64, iv3)) }.exp();
                if simd { simd::scale_f32(&mut m, decay) } else { simd::scalar::scale_f32(&mut m, decay) }
            }
            for (j, mj) in m.chunks_exact(sv).enumerate() {
                let s = if simd { simd::dot_f32(mj, kd) } else { simd::scalar::dot_f32(mj, kd) };
                delta[j] = (vd[j] - s) * bv;
            }
            for (mj, &dj) in m.chunks_exact_mut(sv).zip(&delta) {
                if simd { simd::axpy_f32(mj, kd, dj) } else { simd::scalar::axpy_f32(mj, kd, dj) }
            }
            let attn = out.offset((iv3 as usize * n_tokens + t) * h * sv + iv1 as usize * sv);
            for (j, mj) in m.chunks_exact(sv).enumerate() {
                let s = if simd { simd::dot_f32(mj, qd) } else { simd::scalar::dot_f32(mj, qd) };
                // SAFETY: output row (t, iv1, iv3) is inside the attention part; it is this
                // thread's pair's.
                unsafe { attn.set(j, s * scale) };
            }
            let slot = n_tokens as i64 - 1 - t as i64;
            if snaps > 1 && (0..snaps as i64).contains(&slot) {
                // SAFETY: snapshot `slot` of this pair lies inside dst's state area.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        m.as_ptr(),
                        state_out.0.add(slot as usize * snap_size + head),
                        sv * sv,
                    )
                };
            }
        }
        if snaps == 1 {
            // SAFETY: the pair's single state slot lies inside dst's state area.
            unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), state_out.0.add(head), sv * sv) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::Context;
    use crate::core::ops::ssm as ops;
    use crate::cpu::kernels::testing::*;

    fn tensor(c: &mut Context, ne: &[i64], seed: u64, scale: f64) -> (TensorPtr, Vec<f64>) {
        let t = c.new_tensor(Type::F32, ne);
        put(t, |i| noise(i, seed) * scale);
        (t, values(t))
    }

    #[test]
    fn ssm_conv_slides_the_kernel() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let (d_conv, d_inner, n_t, n_s) = (4i64, 6i64, 5i64, 2i64);
            let (sx, xv) = tensor(&mut c, &[d_conv - 1 + n_t, d_inner, n_s], 1, 1.0);
            let (w, wv) = tensor(&mut c, &[d_conv, d_inner], 2, 1.0);
            let r = ops::ssm_conv(&mut c, sx, w);
            assert!(ssm_conv_supports(&r));
            run(&mut c, r, ssm_conv, nth, 0, use_ref);
            let mut want = Vec::new();
            let ncs = d_conv - 1 + n_t;
            for s in 0..n_s {
                for t in 0..n_t {
                    for ch in 0..d_inner {
                        want.push(
                            (0..d_conv)
                                .map(|k| {
                                    xv[(s * d_inner * ncs + ch * ncs + t + k) as usize] * wv[(ch * d_conv + k) as usize]
                                })
                                .sum(),
                        );
                    }
                }
            }
            assert_close(&values(r), &want, 1e-5, "ssm_conv");
        });
    }

    /// The selective scan in f64: outputs, then `k` state snapshots per sequence.
    #[allow(clippy::too_many_arguments)]
    fn naive_scan(
        s0: &[f64],
        x: &[f64],
        dt: &[f64],
        a: &[f64],
        b: &[f64],
        cm: &[f64],
        ids: &[usize],
        dims: [usize; 6],
        k: usize,
    ) -> Vec<f64> {
        let [ds, hd, nh, ng, nt, ns] = dims;
        let state_size = ds * hd * nh;
        let mut y = vec![0.0; hd * nh * nt * ns];
        let mut snaps = vec![0.0; k * state_size * ns];
        for seq in 0..ns {
            let mut st = s0[ids[seq] * state_size..][..state_size].to_vec();
            for t in 0..nt {
                for h in 0..nh {
                    let d = dt[(seq * nt + t) * nh + h];
                    let sp = if d > 20.0 { d } else { (1.0 + d.exp()).ln() };
                    let g = h / (nh / ng);
                    for i in 0..hd {
                        let xi = x[((seq * nt + t) * nh + h) * hd + i];
                        let mut sum = 0.0;
                        for n in 0..ds {
                            let decay = if a.len() == nh { (sp * a[h]).exp() } else { (sp * a[h * ds + n]).exp() };
                            let bn = b[((seq * nt + t) * ng + g) * ds + n];
                            let cn = cm[((seq * nt + t) * ng + g) * ds + n];
                            let idx = (h * hd + i) * ds + n;
                            st[idx] = st[idx] * decay + bn * xi * sp;
                            sum += st[idx] * cn;
                        }
                        y[((seq * nt + t) * nh + h) * hd + i] = sum;
                    }
                }
                let slot = nt - 1 - t;
                if slot < k {
                    snaps[(slot * ns + seq) * state_size..][..state_size].copy_from_slice(&st);
                }
            }
        }
        y.extend(snaps);
        y
    }

    #[test]
    fn ssm_scan_mamba_1_and_2() {
        for_each_team(|nth, use_ref| {
            for (mamba2, k) in [(true, 1), (true, 2), (false, 1)] {
                let mut c = ctx();
                let (ds, hd, nh, ng, nt, ns) = (8usize, 4usize, 4usize, 2usize, 3usize, 2usize);
                let ne = |v: &[usize]| v.iter().map(|&n| n as i64).collect::<Vec<_>>();
                let (s, sv) = tensor(&mut c, &ne(&[ds, hd, nh, 3]), 3, 1.0);
                let (x, xv) = tensor(&mut c, &ne(&[hd, nh, nt, ns]), 4, 1.0);
                let (dt, dtv) = tensor(&mut c, &ne(&[nh, nt, ns]), 5, 2.0);
                let (a, av) = tensor(&mut c, &ne(&[if mamba2 { 1 } else { ds }, nh]), 6, 1.0);
                let (b, bv) = tensor(&mut c, &ne(&[ds, ng, nt, ns]), 7, 1.0);
                let (cc, cv) = tensor(&mut c, &ne(&[ds, ng, nt, ns]), 8, 1.0);
                let ids = c.new_tensor(Type::I32, &[ns as i64]);
                put(ids, |i| [2.0, 0.0][i]);
                let r = ops::ssm_scan(&mut c, s, x, dt, a, b, cc, ids, k as i64);
                assert!(ssm_scan_supports(&r));
                run(&mut c, r, ssm_scan, nth, 0, use_ref);
                let got = values(r);
                let want = naive_scan(&sv, &xv, &dtv, &av, &bv, &cv, &[2, 0], [ds, hd, nh, ng, nt, ns], k);
                // slot 0 of the snapshots is the final state; with k > 1 the kernel writes slots 1..k
                assert_close(&got, &want, 1e-4, "ssm_scan");
            }
        });
    }

    /// A test tensor and its values.
    type Input = (TensorPtr, Vec<f64>);

    /// Inputs of the WKV-style ops: `n` tensors [S, H, T], plus a state [S*S*H, n_seqs].
    fn wkv_inputs(c: &mut Context, n: usize, s: i64, h: i64, t: i64, n_seqs: i64) -> (Vec<Input>, Input) {
        let ins = (0..n).map(|i| tensor(c, &[s, h, t], 20 + i as u64, 0.8)).collect();
        let state = tensor(c, &[s * s * h, n_seqs], 30, 1.0);
        (ins, state)
    }

    /// Runs a per-head recurrence in f64: `step(inputs at (t, h), state, out)`.
    fn naive_wkv(
        ins: &[Vec<f64>],
        state: &[f64],
        (s, h, t, n_seqs): (usize, usize, usize, usize),
        step: impl Fn(&dyn Fn(usize, usize) -> f64, &mut [f64], &mut [f64]),
    ) -> Vec<f64> {
        let c = s * h;
        let per_seq = t / n_seqs;
        let mut out = vec![0.0; c * t];
        let mut states = state.to_vec();
        for seq in 0..n_seqs {
            for tok in seq * per_seq..(seq + 1) * per_seq {
                for head in 0..h {
                    let get = |input: usize, i: usize| ins[input][tok * c + head * s + i];
                    let st = &mut states[seq * s * c + head * s * s..][..s * s];
                    step(&get, st, &mut out[tok * c + head * s..][..s]);
                }
            }
        }
        out.extend(states);
        out
    }

    #[test]
    fn wkv_recurrences() {
        for_each_team(|nth, use_ref| {
            let (s, h, t, n_seqs) = (4i64, 3i64, 6i64, 2i64);
            let dims = (s as usize, h as usize, t as usize, n_seqs as usize);
            let hs = s as usize;

            // RWKV 6: k, v, r, time_first [S, H], time_decay
            let mut c = ctx();
            let (ins, (state, stv)) = wkv_inputs(&mut c, 4, s, h, t, n_seqs);
            let (tf, tfv) = tensor(&mut c, &[s, h], 40, 1.0);
            let r = ops::rwkv_wkv6(&mut c, ins[0].0, ins[1].0, ins[2].0, tf, ins[3].0, state);
            assert!(rwkv_wkv6_supports(&r));
            run(&mut c, r, rwkv_wkv6, nth, 0, use_ref);
            let vals: Vec<Vec<f64>> = ins.iter().map(|i| i.1.clone()).collect();
            // time_first depends on the head only: pass it as a fifth input repeated per token
            let mut vals5 = vals.clone();
            vals5.push((0..t as usize).flat_map(|_| tfv.iter().copied()).collect());
            let want = naive_wkv(&vals5, &stv, dims, |get, st, out| {
                for i in 0..hs {
                    for j in 0..hs {
                        let kv = get(0, i) * get(1, j);
                        out[j] += get(2, i) * (get(4, i) * kv + st[i * hs + j]);
                        st[i * hs + j] = get(3, i) * st[i * hs + j] + kv;
                    }
                }
            });
            assert_close(&values(r), &want, 1e-4, "rwkv_wkv6");

            // gated linear attention: k, v, q, g
            let r = ops::gated_linear_attn(&mut c, ins[0].0, ins[1].0, ins[2].0, ins[3].0, state, 0.5);
            run(&mut c, r, gated_linear_attn, nth, 0, use_ref);
            let want = naive_wkv(&vals, &stv, dims, |get, st, out| {
                for i in 0..hs {
                    for j in 0..hs {
                        st[i * hs + j] = get(3, i) * st[i * hs + j] + get(0, i) * get(1, j);
                        out[j] += get(2, i) * 0.5 * st[i * hs + j];
                    }
                }
            });
            assert_close(&values(r), &want, 1e-4, "gated_linear_attn");

            // RWKV 7: r, w, k, v, a, b
            let mut c = ctx();
            let (ins, (state, stv)) = wkv_inputs(&mut c, 6, s, h, t, n_seqs);
            let r = ops::rwkv_wkv7(&mut c, ins[0].0, ins[1].0, ins[2].0, ins[3].0, ins[4].0, ins[5].0, state);
            assert!(rwkv_wkv7_supports(&r));
            run(&mut c, r, rwkv_wkv7, nth, 0, use_ref);
            let vals: Vec<Vec<f64>> = ins.iter().map(|i| i.1.clone()).collect();
            let want = naive_wkv(&vals, &stv, dims, |get, st, out| {
                for i in 0..hs {
                    let sa: f64 = (0..hs).map(|j| get(4, j) * st[i * hs + j]).sum();
                    for j in 0..hs {
                        st[i * hs + j] = st[i * hs + j] * get(1, j) + get(3, i) * get(2, j) + sa * get(5, j);
                    }
                    out[i] = (0..hs).map(|j| st[i * hs + j] * get(0, j)).sum();
                }
            });
            assert_close(&values(r), &want, 1e-4, "rwkv_wkv7");
        });
    }

    #[test]
    fn gated_delta_net_with_scalar_and_vector_gates() {
        for_each_team(|nth, use_ref| {
            for (kda, snaps) in [(false, 1usize), (true, 1), (false, 2)] {
                let mut c = ctx();
                let (sv, h, nt, ns) = (4usize, 2usize, 3usize, 2usize);
                let ne4 = [sv, h, nt, ns].map(|n| n as i64);
                let (q, qv) = tensor(&mut c, &ne4, 50, 1.0);
                let (k, kv) = tensor(&mut c, &ne4, 51, 0.5);
                let (v, vv) = tensor(&mut c, &ne4, 52, 1.0);
                let (g, gv) =
                    tensor(&mut c, &[if kda { sv as i64 } else { 1 }, h as i64, nt as i64, ns as i64], 53, 0.3);
                let (beta, bv) = tensor(&mut c, &[1, h as i64, nt as i64, ns as i64], 54, 1.0);
                let (state, stv) = tensor(&mut c, &[sv as i64, sv as i64, h as i64, ns as i64], 55, 1.0);
                let r = ops::gated_delta_net(&mut c, q, k, v, g, beta, state, snaps as i64);
                assert!(gated_delta_net_supports(&r));
                run(&mut c, r, gated_delta_net, nth, gated_delta_net_work_size(&r, nth), use_ref);

                let mut attn = vec![0.0; sv * h * nt * ns];
                let mut out_states = vec![0.0; snaps * sv * sv * h * ns];
                let snap = sv * sv * h * ns;
                for seq in 0..ns {
                    for head in 0..h {
                        let base = (seq * h + head) * sv * sv;
                        let mut m = stv[base..base + sv * sv].to_vec();
                        for t in 0..nt {
                            let row = |x: &[f64], i: usize| x[((seq * nt + t) * h + head) * sv + i];
                            let gw = if kda { sv } else { 1 };
                            for j in 0..sv {
                                for i in 0..sv {
                                    let gi = gv[((seq * nt + t) * h + head) * gw + if kda { i } else { 0 }];
                                    m[j * sv + i] *= gi.exp();
                                }
                            }
                            let b = bv[(seq * nt + t) * h + head];
                            let delta: Vec<f64> = (0..sv)
                                .map(|j| (row(&vv, j) - (0..sv).map(|i| m[j * sv + i] * row(&kv, i)).sum::<f64>()) * b)
                                .collect();
                            for j in 0..sv {
                                for i in 0..sv {
                                    m[j * sv + i] += row(&kv, i) * delta[j];
                                }
                            }
                            for j in 0..sv {
                                attn[((seq * nt + t) * h + head) * sv + j] =
                                    (0..sv).map(|i| m[j * sv + i] * row(&qv, i)).sum::<f64>() / (sv as f64).sqrt();
                            }
                            let slot = nt - 1 - t;
                            if slot < snaps {
                                out_states[slot * snap + base..][..sv * sv].copy_from_slice(&m);
                            }
                        }
                    }
                }
                attn.extend(out_states);
                assert_close(&values(r), &attn, 1e-4, "gated_delta_net");
            }
        });
    }
}
