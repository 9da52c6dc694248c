//! Training kernels: the cross-entropy loss and its gradient, and the AdamW and SGD steps
//! that update a parameter tensor in place.

use super::conv::{at, load, store};
use super::softmax::exp_row;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src, use_simd};

fn all_f32(node: &Tensor, n: usize) -> bool {
    node.type_ == Type::F32 && (0..n).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

/// Row `(i1, i2, i3)` of `t` (F32, packed rows) copied out.
fn read_row(t: &Tensor, r: [i64; 3]) -> Vec<f32> {
    // SAFETY: the row's elements are inside `t`.
    (0..t.ne[0]).map(|i| unsafe { load(t, at(t, i, r[0], r[1], r[2])) }).collect()
}

fn row_coords(t: &Tensor, r: usize) -> [i64; 3] {
    let r = r as i64;
    [r % t.ne[1], (r / t.ne[1]) % t.ne[2], r / (t.ne[1] * t.ne[2])]
}

fn row_max(x: &[f32]) -> f32 {
    x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v))
}

/// CROSS_ENTROPY_LOSS: F32 logits and labels, F32 scalar out.
pub fn cross_entropy_loss_supports(node: &Tensor) -> bool {
    all_f32(node, 2)
}

/// CROSS_ENTROPY_LOSS_BACK: F32 everywhere.
pub fn cross_entropy_loss_back_supports(node: &Tensor) -> bool {
    all_f32(node, 3)
}

/// The reference plan's scratch for CROSS_ENTROPY_LOSS: a partial sum and a row per task.
pub fn cross_entropy_loss_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let nc = node.source(0).map_or(0, |s| s.ne[0] as usize);
    node.type_.type_size() * (n_tasks + nc * n_tasks)
}

/// CROSS_ENTROPY_LOSS: `-(1/rows) Σ_rows Σ_i labels_i * log_softmax(logits)_i`. Threads sum
/// their rows into the scratch; thread 0 adds the partial sums after the barrier.
pub fn cross_entropy_loss(params: &ComputeParams, dst: TensorPtr) {
    let (logits, labels) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(cross_entropy_loss_supports(&dst), "cross_entropy_loss: F32 only");
    crate::ggml_assert!(logits.nb[0] == 4 && labels.nb[0] == 4 && logits.same_shape(&labels) && dst.is_scalar());
    crate::ggml_assert!(
        !params.wdata.is_null() && params.wsize >= 4 * params.nth,
        "cross_entropy_loss: the plan's scratch is missing"
    );
    let nr = logits.nrows() as usize;
    let mut partial = 0.0f32;
    for r in split(nr, params.ith, params.nth) {
        let rc = row_coords(&logits, r);
        let x = read_row(&logits, rc);
        let y = read_row(&labels, rc);
        let max = row_max(&x);
        let shifted: Vec<f32> = x.iter().map(|&v| v - max).collect();
        let log_sum = (shifted.iter().map(|&v| f64::from(v.exp())).sum::<f64>() as f32).ln();
        let sum: f64 = shifted.iter().zip(&y).map(|(&s, &l)| f64::from((s - log_sum) * l)).sum();
        partial += sum as f32;
    }
    let sums = params.wdata.cast::<f32>();
    // SAFETY: the scratch holds at least `nth` floats (checked); slot `ith` is this thread's.
    unsafe { sums.add(params.ith).write_unaligned(partial) };
    params.barrier();
    if params.ith == 0 {
        // SAFETY: every thread wrote its slot before the barrier.
        let total: f64 = (0..params.nth).map(|i| f64::from(unsafe { sums.add(i).read_unaligned() })).sum();
        // SAFETY: dst is a scalar F32; only thread 0 writes it.
        unsafe { store(&dst, 0, total as f32 * (-1.0 / nr as f32)) };
    }
}

/// CROSS_ENTROPY_LOSS_BACK: `(softmax(logits) - labels) * grad / rows`. Threads split rows.
pub fn cross_entropy_loss_back(params: &ComputeParams, dst: TensorPtr) {
    let (grad, logits, labels) = (src(dst, 0), src(dst, 1), src(dst, 2));
    crate::ggml_assert!(cross_entropy_loss_back_supports(&dst), "cross_entropy_loss_back: F32 only");
    crate::ggml_assert!(logits.same_shape(&labels) && logits.same_shape(&dst));
    crate::ggml_assert!(logits.nb[0] == 4 && labels.nb[0] == 4 && dst.nb[0] == 4);
    let nr = logits.nrows() as usize;
    // SAFETY: the gradient of the loss has an element.
    let d_by_nr = unsafe { load(&grad, 0) } / nr as f32;
    let avx2 = use_simd(params);
    for r in split(nr, params.ith, params.nth) {
        let rc = row_coords(&logits, r);
        let mut p = read_row(&logits, rc);
        let y = read_row(&labels, rc);
        let max = row_max(&p);
        let sum = exp_row(&mut p, max, avx2);
        let inv = (1.0 / sum) as f32;
        for (i, (pv, yv)) in p.iter().zip(&y).enumerate() {
            // SAFETY: inside dst (same shape as the logits); the row is this thread's.
            unsafe { store(&dst, at(&dst, i as i64, rc[0], rc[1], rc[2]), (pv * inv - yv) * d_by_nr) };
        }
    }
}

/// OPT_STEP_ADAMW: F32 parameter, gradient, moments and hyper-parameters.
pub fn opt_step_adamw_supports(node: &Tensor) -> bool {
    (0..5).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

/// OPT_STEP_SGD: F32 parameter, gradient and hyper-parameters.
pub fn opt_step_sgd_supports(node: &Tensor) -> bool {
    (0..3).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

/// The hyper-parameters stored in an F32 tensor of `n` values.
fn hyper(t: &Tensor, n: usize) -> Vec<f32> {
    crate::ggml_assert!(t.nelements() as usize == n, "optimizer step with {} hyper-parameters", t.nelements());
    crate::ggml_assert!(t.is_contiguous());
    // SAFETY: the contiguous tensor holds `n` floats.
    (0..n).map(|i| unsafe { load(t, i * 4) }).collect()
}

/// Runs `f(offset)` for the byte offset of every element of thread `ith`'s rows of `w`.
fn for_each_element(params: &ComputeParams, w: &Tensor, mut f: impl FnMut(usize)) {
    for r in split(w.nrows() as usize, params.ith, params.nth) {
        let [i1, i2, i3] = row_coords(w, r);
        for i0 in 0..w.ne[0] {
            f(at(w, i0, i1, i2, i3));
        }
    }
}

/// OPT_STEP_ADAMW: updates the moments `m`, `v` and the parameter `w` in place:
/// `w = w*(1 - alpha*wd) - alpha * (m*beta1h) / (sqrt(v*beta2h) + eps)`. Threads split rows.
pub fn opt_step_adamw(params: &ComputeParams, dst: TensorPtr) {
    let (w, g, m, v, hp) = (src(dst, 0), src(dst, 1), src(dst, 2), src(dst, 3), src(dst, 4));
    crate::ggml_assert!(opt_step_adamw_supports(&dst), "opt_step_adamw: F32 only");
    crate::ggml_assert!(w.same_shape(&g) && w.same_shape(&m) && w.same_shape(&v));
    crate::ggml_assert!(w.nb == g.nb && w.nb == m.nb && w.nb == v.nb, "opt_step_adamw: layouts differ");
    let h = hyper(&hp, 7);
    let (alpha, beta1, beta2, eps, wd, beta1h, beta2h) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6]);
    let keep = 1.0 - alpha * wd;
    for_each_element(params, &w, |off| {
        // SAFETY: the four tensors share shape and strides, so `off` is inside each; the row
        // is this thread's.
        unsafe {
            let gv = load(&g, off);
            let mv = load(&m, off) * beta1 + gv * (1.0 - beta1);
            let vv = load(&v, off) * beta2 + gv * gv * (1.0 - beta2);
            store(&m, off, mv);
            store(&v, off, vv);
            let mh = mv * beta1h;
            let vh = (vv * beta2h).sqrt() + eps;
            store(&w, off, load(&w, off) * keep - alpha * mh / vh);
        }
    });
}

/// OPT_STEP_SGD: `w = w*(1 - alpha*wd) - alpha*g` in place. Threads split rows.
pub fn opt_step_sgd(params: &ComputeParams, dst: TensorPtr) {
    let (w, g, hp) = (src(dst, 0), src(dst, 1), src(dst, 2));
    crate::ggml_assert!(opt_step_sgd_supports(&dst), "opt_step_sgd: F32 only");
    crate::ggml_assert!(w.same_shape(&g) && w.nb == g.nb, "opt_step_sgd: gradient differs from the parameter");
    let h = hyper(&hp, 2);
    let (alpha, keep) = (h[0], 1.0 - h[0] * h[1]);
    for_each_element(params, &w, |off| {
        // SAFETY: parameter and gradient share shape and strides; the row is this thread's.
        unsafe { store(&w, off, load(&w, off) * keep - alpha * load(&g, off)) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::loss as ops;
    use crate::core::tensor::flag;
    use crate::cpu::kernels::testing::*;

    fn softmax(row: &[f64]) -> Vec<f64> {
        let max = row.iter().copied().fold(f64::MIN, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        row.iter().map(|v| (v - max).exp() / sum).collect()
    }

    #[test]
    fn cross_entropy_and_its_gradient() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let (nc, nr) = (11usize, 7usize);
            let logits = c.new_tensor(Type::F32, &[nc as i64, nr as i64]);
            let labels = c.new_tensor(Type::F32, &[nc as i64, nr as i64]);
            put(logits, |i| noise(i, 1) * 3.0);
            put(labels, |i| (noise(i, 2) + 1.0) / 2.0);
            let (x, y) = (values(logits), values(labels));
            let loss = ops::cross_entropy_loss(&mut c, logits, labels);
            assert!(cross_entropy_loss_supports(&loss));
            run(&mut c, loss, cross_entropy_loss, nth, cross_entropy_loss_work_size(&loss, nth), use_ref);
            let mut want = 0.0;
            for (xr, yr) in x.chunks(nc).zip(y.chunks(nc)) {
                want -= softmax(xr).iter().zip(yr).map(|(p, l)| p.ln() * l).sum::<f64>();
            }
            want /= nr as f64;
            assert_close(&values(loss), &[want], 1e-5, "cross_entropy_loss");

            let g = c.new_tensor(Type::F32, &[1]);
            put(g, |_| 0.8);
            let back = ops::cross_entropy_loss_back(&mut c, g, logits, labels);
            assert!(cross_entropy_loss_back_supports(&back));
            run(&mut c, back, cross_entropy_loss_back, nth, 0, use_ref);
            let mut want = Vec::new();
            for (xr, yr) in x.chunks(nc).zip(y.chunks(nc)) {
                want.extend(softmax(xr).iter().zip(yr).map(|(p, l)| (p - l) * 0.8 / nr as f64));
            }
            assert_close(&values(back), &want, 1e-6, "cross_entropy_loss_back");
        });
    }

    #[test]
    fn optimizer_steps() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let w = c.new_tensor(Type::F32, &[9, 4]);
            w.get_mut().flags |= flag::PARAM;
            let g = c.dup_tensor(w);
            let m = c.dup_tensor(w);
            let v = c.dup_tensor(w);
            put(w, |i| noise(i, 3));
            put(g, |i| noise(i, 4));
            put(m, |i| noise(i, 5) * 0.1);
            put(v, |i| noise(i, 6).abs() * 0.1);
            let (wv, gv, mv, vv) = (values(w), values(g), values(m), values(v));
            let hp = c.new_tensor(Type::F32, &[7]);
            let (alpha, b1, b2, eps, wd, b1h, b2h) = (1e-2, 0.9, 0.999, 1e-8, 0.1, 1.5, 1.2);
            put(hp, |i| [alpha, b1, b2, eps, wd, b1h, b2h][i]);
            let step = ops::opt_step_adamw(&mut c, w, g, m, v, hp);
            assert!(opt_step_adamw_supports(&step));
            run(&mut c, step, opt_step_adamw, nth, 0, use_ref);
            let (mut wn, mut mn, mut vn) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..36 {
                let m1 = mv[i] * b1 + gv[i] * (1.0 - b1);
                let v1 = vv[i] * b2 + gv[i] * gv[i] * (1.0 - b2);
                wn.push(wv[i] * (1.0 - alpha * wd) - alpha * (m1 * b1h) / ((v1 * b2h).sqrt() + eps));
                mn.push(m1);
                vn.push(v1);
            }
            assert_close(&values(m), &mn, 1e-6, "adamw m");
            assert_close(&values(v), &vn, 1e-6, "adamw v");
            assert_close(&values(w), &wn, 1e-5, "adamw w");

            let sp = c.new_tensor(Type::F32, &[2]);
            put(sp, |i| [0.05, 0.2][i]);
            let before = values(w);
            let step = ops::opt_step_sgd(&mut c, w, g, sp);
            assert!(opt_step_sgd_supports(&step));
            run(&mut c, step, opt_step_sgd, nth, 0, use_ref);
            let want: Vec<f64> = before.iter().zip(&gv).map(|(w, g)| w * (1.0 - 0.05 * 0.2) - 0.05 * g).collect();
            assert_close(&values(w), &want, 1e-6, "sgd");
        });
    }
}
