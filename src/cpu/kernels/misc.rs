//! Kernels for the ops of no larger family: sequences (`arange`, `timestep_embedding`),
//! sorting (`argsort`, `top_k`), SAM's windowing and relative positions (`win_part`,
//! `win_unpart`, `get_rel_pos`, `add_rel_pos`), the lower-triangular solve, and DeepSeek V4's
//! lightning indexer and hyper-connection ops.
//!
//! Sorting is stable: equal keys keep their index order, which is what the reference's
//! `std::sort` gives on the short rows it sorts by insertion and one valid order otherwise.
//! Keys compare as C's `<` does, except that NaNs (which `<` cannot order) go to the ends.

use std::cmp::Ordering;

use super::conv::{at, load, store};
use crate::core::ops::misc::SortOrder;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src, use_simd};
use crate::cpu::kernels::simd;
use crate::quants::traits::type_traits;

fn source_ref(node: &Tensor, i: usize) -> Option<&Tensor> {
    // SAFETY: a node's sources are null or live tensors.
    unsafe { node.src[i].as_ref() }
}

fn all_f32(node: &Tensor, n_src: usize) -> bool {
    node.type_ == Type::F32 && (0..n_src).all(|i| source_ref(node, i).is_some_and(|s| s.type_ == Type::F32))
}

/// Writes the i32 `v` at byte offset `off` of `t`.
///
/// # Safety
/// `off` addresses an I32 element inside `t` that no other thread touches now.
unsafe fn store_i32(t: &Tensor, off: usize, v: i32) {
    // SAFETY: the caller keeps the offset inside the data.
    unsafe { t.data.cast::<u8>().add(off).cast::<i32>().write_unaligned(v) }
}

fn dot(x: &[f32], y: &[f32], simd: bool) -> f32 {
    if simd { simd::dot_f32(x, y) } else { simd::scalar::dot_f32(x, y) }
}

// ---------------------------------------------------------------------------------------------
// Sequences

/// ARANGE: F32 out.
pub fn arange_supports(node: &Tensor) -> bool {
    node.type_ == Type::F32
}

/// ARANGE: `start + step*i`. Threads take every `nth`-th element.
pub fn arange(params: &ComputeParams, dst: TensorPtr) {
    crate::ggml_assert!(arange_supports(&dst) && dst.nb[0] == 4, "arange: F32 only");
    let (start, stop, step) = (dst.op_param_f32(0), dst.op_param_f32(1), dst.op_param_f32(2));
    let steps = ((stop - start) / step).ceil() as i64;
    crate::ggml_assert!(dst.nelements() == steps, "arange: {} elements for {} steps", dst.nelements(), steps);
    let mut i = params.ith as i64;
    while i < steps {
        // SAFETY: `i` is below the element count of the packed vector.
        unsafe { store(&dst, i as usize * 4, start + step * i as f32) };
        i += params.nth as i64;
    }
}

/// TIMESTEP_EMBEDDING: F32 timesteps, F32 out.
pub fn timestep_embedding_supports(node: &Tensor) -> bool {
    all_f32(node, 1)
}

/// TIMESTEP_EMBEDDING: for timestep `t` and `j < dim/2`, `cos(t*f_j)` at `j` and `sin(t*f_j)`
/// at `j + dim/2` with `f_j = max_period^(-j/half)`; an odd `dim` ends in 0. Threads split `j`.
pub fn timestep_embedding(params: &ComputeParams, dst: TensorPtr) {
    let ts = src(dst, 0);
    crate::ggml_assert!(timestep_embedding_supports(&dst), "timestep_embedding: F32 only");
    let dim = i64::from(dst.op_params[0]);
    let max_period = dst.op_params[1] as f32;
    let half = dim / 2;
    for i in 0..ts.ne[0] {
        // SAFETY: `i` is inside the timesteps vector.
        let t = unsafe { load(&ts, at(&ts, i, 0, 0, 0)) };
        let mut j = params.ith as i64;
        while j < half {
            let freq = (-max_period.ln() * j as f32 / half as f32).exp();
            let arg = t * freq;
            // SAFETY: `j` and `j + half` are below dim = dst.ne[0]; `j` is this thread's.
            unsafe {
                store(&dst, at(&dst, j, i, 0, 0), arg.cos());
                store(&dst, at(&dst, j + half, i, 0, 0), arg.sin());
            }
            j += params.nth as i64;
        }
        if dim % 2 != 0 && params.ith == 0 {
            // SAFETY: 2*half = dim - 1 is inside the row; only thread 0 writes it.
            unsafe { store(&dst, at(&dst, 2 * half, i, 0, 0), 0.0) };
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sorting

/// Ascending order of two keys: C's `<` for ordered values (so -0 equals +0), NaNs at the
/// ends (by sign), which keeps the order total.
fn ascending(a: f32, b: f32) -> Ordering {
    let key = |x: f32| if x == 0.0 { 0.0 } else { x };
    key(a).total_cmp(&key(b))
}

/// The row `r` of `x` as f32, and the indices 0..n sorted by it (stable).
fn sorted_indices(x: &Tensor, i1: i64, i2: i64, i3: i64, descending: bool) -> Vec<i32> {
    // SAFETY: the row's elements are inside x.
    let row: Vec<f32> = (0..x.ne[0]).map(|i| unsafe { load(x, at(x, i, i1, i2, i3)) }).collect();
    let mut idx: Vec<i32> = (0..x.ne[0] as i32).collect();
    if descending {
        idx.sort_by(|&a, &b| ascending(row[b as usize], row[a as usize]));
    } else {
        idx.sort_by(|&a, &b| ascending(row[a as usize], row[b as usize]));
    }
    idx
}

/// ARGSORT: F32 rows, I32 indices out.
pub fn argsort_supports(node: &Tensor) -> bool {
    node.type_ == Type::I32 && source_ref(node, 0).is_some_and(|s| s.type_ == Type::F32)
}

/// ARGSORT: the indices that sort each row ascending or descending. Threads take every
/// `nth`-th row.
pub fn argsort(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(argsort_supports(&dst), "argsort: {} is not supported", x.type_.name());
    let descending = match SortOrder(dst.op_params[0]) {
        SortOrder::ASC => false,
        SortOrder::DESC => true,
        other => crate::ggml_abort!("argsort: invalid sort order {}", other.0),
    };
    let [_, ne1, ne2, ne3] = x.ne;
    let mut r = params.ith as i64;
    while r < ne1 * ne2 * ne3 {
        let (i1, i2, i3) = (r % ne1, (r / ne1) % ne2, r / (ne1 * ne2));
        for (j, &v) in sorted_indices(&x, i1, i2, i3, descending).iter().enumerate() {
            // SAFETY: dst has x's shape; the row is this thread's.
            unsafe { store_i32(&dst, at(&dst, j as i64, i1, i2, i3), v) };
        }
        r += params.nth as i64;
    }
}

/// TOP_K: F32 rows, I32 indices out.
pub fn top_k_supports(node: &Tensor) -> bool {
    argsort_supports(node)
}

/// The reference plan's scratch for TOP_K: one row of indices per task.
pub fn top_k_work_size(node: &Tensor, n_tasks: usize) -> usize {
    source_ref(node, 0).map_or(0, |s| 4 * s.ne[0] as usize * n_tasks)
}

/// TOP_K: the indices of each row's `k` largest values, largest first except that the first
/// two are swapped (as the reference does, to show callers the order carries no meaning).
pub fn top_k(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(top_k_supports(&dst), "top_k: {} is not supported", x.type_.name());
    let k = dst.ne[0] as usize;
    crate::ggml_assert!(k as i64 <= x.ne[0], "top_k: {} of {}", k, x.ne[0]);
    let [_, ne1, ne2, ne3] = x.ne;
    let mut r = params.ith as i64;
    while r < ne1 * ne2 * ne3 {
        let (i1, i2, i3) = (r % ne1, (r / ne1) % ne2, r / (ne1 * ne2));
        let mut idx = sorted_indices(&x, i1, i2, i3, true);
        idx.truncate(k);
        if k > 1 {
            idx.swap(0, 1);
        }
        for (j, &v) in idx.iter().enumerate() {
            // SAFETY: `j < k = dst.ne[0]`; the row is this thread's.
            unsafe { store_i32(&dst, at(&dst, j as i64, i1, i2, i3), v) };
        }
        r += params.nth as i64;
    }
}

// ---------------------------------------------------------------------------------------------
// Windows and relative positions

/// WIN_PART and WIN_UNPART: F32 in and out.
pub fn win_supports(node: &Tensor) -> bool {
    all_f32(node, 1)
}

/// WIN_PART: cuts `[C, W, H]` into `w`×`w` windows `[C, w, w, npx*npy]`, zero past the image.
/// Runs on thread 0.
pub fn win_part(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(win_supports(&dst), "win_part: F32 only");
    if params.ith != 0 {
        return;
    }
    let (npx, npy, w) = (i64::from(dst.op_params[0]), i64::from(dst.op_params[1]), i64::from(dst.op_params[2]));
    for py in 0..npy {
        for px in 0..npx {
            let i3 = py * npx + px;
            for i2 in 0..dst.ne[2] {
                for i1 in 0..dst.ne[1] {
                    let (y, xx) = (py * w + i2, px * w + i1);
                    let inside = y < x.ne[2] && xx < x.ne[1];
                    for i0 in 0..dst.ne[0] {
                        // SAFETY: the source coordinates are checked against x; the output
                        // ones are inside dst; only thread 0 runs.
                        unsafe {
                            let v = if inside { load(&x, at(&x, i0, xx, y, 0)) } else { 0.0 };
                            store(&dst, at(&dst, i0, i1, i2, i3), v);
                        }
                    }
                }
            }
        }
    }
}

/// WIN_UNPART: reassembles `w`×`w` windows into a `[C, W, H]` image (dropping the padding).
/// Runs on thread 0.
pub fn win_unpart(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(win_supports(&dst), "win_unpart: F32 only");
    if params.ith != 0 {
        return;
    }
    let w = i64::from(dst.op_params[0]);
    let px = (w - dst.ne[1] % w) % w;
    let npx = (px + dst.ne[1]) / w;
    for i2 in 0..dst.ne[2] {
        for i1 in 0..dst.ne[1] {
            let window = (i2 / w) * npx + i1 / w;
            for i0 in 0..dst.ne[0] {
                // SAFETY: the window and in-window coordinates are inside x by construction
                // of the windowing; the output is inside dst; only thread 0 runs.
                unsafe { store(&dst, at(&dst, i0, i1, i2, 0), load(&x, at(&x, i0, i1 % w, i2 % w, window))) };
            }
        }
    }
}

/// GET_REL_POS: F16 or BF16 table, F16 out (the 16-bit patterns are copied as they are).
pub fn get_rel_pos_supports(node: &Tensor) -> bool {
    node.type_ == Type::F16 && source_ref(node, 0).is_some_and(|s| matches!(s.type_, Type::F16 | Type::BF16))
}

/// GET_REL_POS: `dst[:, i1, i2] = table[:, (kh - 1 - i1) + i2]`. Runs on thread 0.
pub fn get_rel_pos(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(get_rel_pos_supports(&dst), "get_rel_pos: {} is not supported", x.type_.name());
    if params.ith != 0 {
        return;
    }
    let w = dst.ne[1];
    for i2 in 0..dst.ne[2] {
        for i1 in 0..dst.ne[1] {
            let pos = (w - i1 - 1) + i2;
            for i0 in 0..dst.ne[0] {
                // SAFETY: `pos < 2*w - 1 = x.ne[1]` and `i0 < x.ne[0]`; 16-bit elements on both
                // sides; only thread 0 runs.
                unsafe {
                    let v = x.data.cast::<u8>().add(at(&x, i0, pos, 0, 0)).cast::<u16>().read_unaligned();
                    dst.data.cast::<u8>().add(at(&dst, i0, i1, i2, 0)).cast::<u16>().write_unaligned(v);
                }
            }
        }
    }
}

/// ADD_REL_POS: F32 scores and terms, F32 out.
pub fn add_rel_pos_supports(node: &Tensor) -> bool {
    all_f32(node, 3)
}

/// ADD_REL_POS: adds the decomposed relative-position terms to attention scores: for
/// position `p` of `pw`/`ph` (flattened), `ph[p]` goes to the `W` consecutive scores of row
/// `p` and `pw[p]` to `W` scores strided `W` apart. Threads split dimension 3 of `pw`; each
/// first copies its planes of the scores unless the op runs in place.
pub fn add_rel_pos(params: &ComputeParams, dst: TensorPtr) {
    let (a, pw, ph) = (src(dst, 0), src(dst, 1), src(dst, 2));
    crate::ggml_assert!(add_rel_pos_supports(&dst), "add_rel_pos: F32 only");
    crate::ggml_assert!(a.is_contiguous() && dst.is_contiguous() && pw.is_contiguous() && ph.is_contiguous());
    if dst.is_empty() {
        return;
    }
    let inplace = dst.op_params[0] != 0;
    let [ne10, ne11, ne12, ne13] = pw.ne.map(|n| n as usize);
    let plane = ne10 * ne10 * ne11 * ne12;
    crate::ggml_assert!(dst.nelements() as usize == plane * ne13, "add_rel_pos: scores and terms disagree");
    let out = dst.data.cast::<f32>();
    let (w_terms, h_terms) = (pw.data.cast::<f32>().cast_const(), ph.data.cast::<f32>().cast_const());
    for i13 in split(ne13, params.ith, params.nth) {
        if !inplace {
            // SAFETY: plane `i13` lies inside both contiguous tensors of equal size; the
            // planes are this thread's. `copy` tolerates the (impossible here) overlap.
            unsafe { std::ptr::copy(a.data.cast::<f32>().add(i13 * plane), out.add(i13 * plane), plane) };
        }
        for i12 in 0..ne12 {
            for i11 in 0..ne11 {
                let jp1 = ((i13 * ne12 + i12) * ne11 + i11) * ne10;
                for i10 in 0..ne10 {
                    let jp0 = jp1 + i10;
                    let jdh = jp0 * ne10;
                    let jdw = jdh - (ne10 - 1) * i10;
                    // SAFETY: `jp0` indexes pw/ph (same shape); `jdh + j` and `jdw + j*ne10`
                    // stay inside plane `i13` of the scores, which is this thread's.
                    unsafe {
                        let (tw, th) = (*w_terms.add(jp0), *h_terms.add(jp0));
                        for j in 0..ne10 {
                            *out.add(jdh + j) += th;
                            *out.add(jdw + j * ne10) += tw;
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Triangular solve

/// SOLVE_TRI: F32 everywhere.
pub fn solve_tri_supports(node: &Tensor) -> bool {
    all_f32(node, 2)
}

/// SOLVE_TRI: solves `A X = B` by forward substitution, `A` lower triangular `[n, n]`, `B`
/// and `X` `[k, n]` (contiguous rows). Threads split the (batch, column) pairs.
pub fn solve_tri(params: &ComputeParams, dst: TensorPtr) {
    let (a, b) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(solve_tri_supports(&dst), "solve_tri: F32 only");
    crate::ggml_assert!(a.ne[0] == a.ne[1] && dst.ne[0] == b.ne[0] && dst.ne[1] == b.ne[1]);
    crate::ggml_assert!(a.ne[2] == b.ne[2] && b.ne[2] == dst.ne[2] && a.ne[3] == b.ne[3] && b.ne[3] == dst.ne[3]);
    crate::ggml_assert!(a.nb[0] == 4 && b.nb[0] == 4 && dst.nb[0] == 4);
    let (k, n, ne02) = (b.ne[0], b.ne[1], a.ne[2]);
    for r in split((ne02 * a.ne[3] * k) as usize, params.ith, params.nth) {
        let r = r as i64;
        let (i3, i2, col) = (r / (ne02 * k), (r / k) % ne02, r % k);
        for row in 0..n {
            let mut sum = 0.0f32;
            // SAFETY: every index is inside the matrices of batch (i2, i3); column `col` of X
            // is this thread's, and its earlier rows were written just above.
            unsafe {
                for t in 0..row {
                    sum += load(&a, at(&a, t, row, i2, i3)) * load(&dst, at(&dst, col, t, i2, i3));
                }
                let diag = load(&a, at(&a, row, row, i2, i3));
                let v = (load(&b, at(&b, col, row, i2, i3)) - sum) / diag;
                store(&dst, at(&dst, col, row, i2, i3), v);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// DeepSeek V4

/// LIGHTNING_INDEXER: F32 queries and weights, F16 mask, keys F32 or any type with a row
/// converter to f32; F32 out.
pub fn lightning_indexer_supports(node: &Tensor) -> bool {
    let ty = |i: usize| source_ref(node, i).map(|s| s.type_);
    node.type_ == Type::F32
        && ty(0) == Some(Type::F32)
        && ty(2) == Some(Type::F32)
        && ty(3) == Some(Type::F16)
        && ty(1).is_some_and(|k| k == Type::F32 || (k.is_valid() && type_traits(k).to_float.is_some()))
}

/// The reference plan's scratch for LIGHTNING_INDEXER: one f32 key row per task.
pub fn lightning_indexer_work_size(node: &Tensor, n_tasks: usize) -> usize {
    source_ref(node, 1).map_or(0, |k| 4 * k.ne[0] as usize * n_tasks)
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
    all_f32(node, n_src) && source_ref(node, 3).is_none_or(|c| c.type_ == Type::F32)
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
    use crate::core::ops::misc as ops;
    use crate::cpu::kernels::testing::*;

    fn get(v: &[f64], ne: [i64; 4], i: [i64; 4]) -> f64 {
        v[(i[0] + ne[0] * (i[1] + ne[1] * (i[2] + ne[2] * i[3]))) as usize]
    }

    #[test]
    fn sequences() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let r = ops::arange(&mut c, 1.5, 10.0, 0.75);
            run(&mut c, r, arange, nth, 0, use_ref);
            let want: Vec<f64> = (0..12).map(|i| f64::from(1.5f32 + 0.75 * i as f32)).collect();
            assert_close(&values(r), &want, 0.0, "arange");

            let ts = c.new_tensor(Type::F32, &[3]);
            put(ts, |i| [0.0, 1.0, 250.0][i]);
            for dim in [8, 7] {
                let r = ops::timestep_embedding(&mut c, ts, dim, 10000);
                run(&mut c, r, timestep_embedding, nth, 0, use_ref);
                let half = dim / 2;
                let mut want = Vec::new();
                for t in [0.0f64, 1.0, 250.0] {
                    for j in 0..dim {
                        let k = j % half;
                        let arg = t * (-(10000f64).ln() * f64::from(k) / f64::from(half)).exp();
                        want.push(if j == 2 * half {
                            0.0
                        } else if j < half {
                            arg.cos()
                        } else {
                            arg.sin()
                        });
                    }
                }
                assert_close(&values(r), &want, 2e-4, "timestep_embedding");
            }
        });
    }

    #[test]
    fn argsort_is_stable_and_top_k_picks_the_largest() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[37, 3, 2]);
            // few distinct values: many ties
            put(a, |i| (noise(i, 1) * 4.0).round() + 0.0); // + 0.0: no negative zeros
            let x = values(a);
            for (order, desc) in [(ops::SortOrder::ASC, false), (ops::SortOrder::DESC, true)] {
                let r = ops::argsort(&mut c, a, order);
                assert!(argsort_supports(&r));
                run(&mut c, r, argsort, nth, 0, use_ref);
                let got = values(r);
                for (row, idx) in x.chunks(37).zip(got.chunks(37)) {
                    let mut want: Vec<usize> = (0..37).collect();
                    want.sort_by(|&p, &q| if desc { row[q].total_cmp(&row[p]) } else { row[p].total_cmp(&row[q]) });
                    assert_eq!(idx.iter().map(|&v| v as usize).collect::<Vec<_>>(), want);
                }
            }

            let b = c.new_tensor(Type::F32, &[20, 4]);
            put(b, |i| noise(i, 2));
            let y = values(b);
            let r = ops::top_k(&mut c, b, 5);
            assert!(top_k_supports(&r));
            run(&mut c, r, top_k, nth, top_k_work_size(&r, nth), use_ref);
            for (row, idx) in y.chunks(20).zip(values(r).chunks(5)) {
                let mut want: Vec<usize> = (0..20).collect();
                want.sort_by(|&p, &q| row[q].total_cmp(&row[p]));
                want.truncate(5);
                want.swap(0, 1);
                assert_eq!(idx.iter().map(|&v| v as usize).collect::<Vec<_>>(), want);
            }
        });
    }

    #[test]
    fn windows_round_trip() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[3, 7, 5]);
            put(a, |i| noise(i, 3));
            let x = values(a);
            let p = ops::win_part(&mut c, a, 4);
            run(&mut c, p, win_part, nth, 0, use_ref);
            let pv = values(p);
            // window (1, 1) holds pixels x 4..8, y 4..8: only x 4..7, y 4..5 are inside
            let w = 3; // px 1 + 2 windows per row * py 1
            assert_eq!(get(&pv, p.ne, [2, 0, 0, w]), get(&x, a.ne, [2, 4, 4, 0]));
            assert_eq!(get(&pv, p.ne, [1, 3, 0, w]), 0.0);
            assert_eq!(get(&pv, p.ne, [1, 0, 1, w]), 0.0);
            let u = ops::win_unpart(&mut c, p, 7, 5, 4);
            run(&mut c, u, win_unpart, nth, 0, use_ref);
            assert_close(&values(u), &x, 0.0, "win_unpart");
        });
    }

    #[test]
    fn relative_positions() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let table = c.new_tensor(Type::F16, &[6, 9]);
            put(table, |i| noise(i, 4));
            let t = values(table);
            let r = ops::get_rel_pos(&mut c, table, 5, 5);
            run(&mut c, r, get_rel_pos, nth, 0, use_ref);
            let mut want = Vec::new();
            for q in 0..5 {
                for k in 0..5 {
                    for i in 0..6 {
                        want.push(t[((4 - k + q) * 6 + i) as usize]);
                    }
                }
            }
            assert_close(&values(r), &want, 0.0, "get_rel_pos");

            for inplace in [false, true] {
                let scores = c.new_tensor(Type::F32, &[9, 6, 2]);
                put(scores, |i| noise(i, 5));
                let s = values(scores);
                let pw = c.new_tensor(Type::F32, &[3, 3, 2, 2]);
                let ph = c.new_tensor(Type::F32, &[3, 3, 2, 2]);
                put(pw, |i| noise(i, 6));
                put(ph, |i| noise(i, 7));
                let (wv, hv) = (values(pw), values(ph));
                let r = if inplace {
                    ops::add_rel_pos_inplace(&mut c, scores, pw, ph)
                } else {
                    ops::add_rel_pos(&mut c, scores, pw, ph)
                };
                run(&mut c, r, add_rel_pos, nth, 0, use_ref);
                // score (kw + 3*kh, q, b) gains pw[kw, q] + ph[kh, q] for q over (3, 2) positions
                let mut want = s.clone();
                for b in 0..2 {
                    for q in 0..6 {
                        for kh in 0..3 {
                            for kw in 0..3 {
                                let i = ((b * 6 + q) * 9 + kh * 3 + kw) as usize;
                                want[i] += wv[((b * 6 + q) * 3 + kw) as usize] + hv[((b * 6 + q) * 3 + kh) as usize];
                            }
                        }
                    }
                }
                assert_close(&values(r), &want, 1e-6, "add_rel_pos");
            }
        });
    }

    #[test]
    fn solve_tri_inverts_the_product() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let n = 6;
            let a = c.new_tensor(Type::F32, &[n, n, 2, 1]);
            put(a, |i| {
                let (col, row) = ((i as i64) % n, (i as i64 / n) % n);
                if col > row {
                    0.0
                } else if col == row {
                    2.0 + noise(i, 8).abs()
                } else {
                    noise(i, 8)
                }
            });
            let b = c.new_tensor(Type::F32, &[3, n, 2, 1]);
            put(b, |i| noise(i, 9));
            let r = ops::solve_tri(&mut c, a, b, true, true, false);
            run(&mut c, r, solve_tri, nth, 0, use_ref);
            let (av, bv, xv) = (values(a), values(b), values(r));
            for m in 0..2 {
                for row in 0..n {
                    for col in 0..3 {
                        let s: f64 =
                            (0..n).map(|t| get(&av, a.ne, [t, row, m, 0]) * get(&xv, r.ne, [col, t, m, 0])).sum();
                        assert!((s - get(&bv, b.ne, [col, row, m, 0])).abs() < 1e-5, "A X != B");
                    }
                }
            }
        });
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
