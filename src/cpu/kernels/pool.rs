//! Spatial resampling kernels: 1D and 2D pooling and the 2D pooling gradient, upscaling
//! (nearest, bilinear with optional antialiasing, bicubic; half-pixel or align-corners
//! sampling), padding (zeros or circular, on both sides of every dimension), reflective 1D
//! padding and rolling.
//!
//! Pooling and its gradient run on thread 0 alone, as the reference plans them; the others
//! split planes or rows.

use super::conv::{at, load, store};
use crate::core::ops::pool::{PoolOp, scale_mode};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src};

fn f32_to_f32(node: &Tensor) -> bool {
    node.type_ == Type::F32 && node.source(0).is_some_and(|s| s.type_ == Type::F32)
}

/// `std::max(v, acc)` as the reference's pooling uses it: `v` unless it is smaller.
fn keep_max(acc: f32, v: f32) -> f32 {
    if v < acc { acc } else { v }
}

/// POOL_1D and POOL_2D: F32 or F16 input, F32 out.
pub fn pool_supports(node: &Tensor) -> bool {
    node.type_ == Type::F32 && node.source(0).is_some_and(|s| matches!(s.type_, Type::F32 | Type::F16))
}

/// POOL_2D_BACK: F32 gradient, F32 forward input, F32 out.
pub fn pool_2d_back_supports(node: &Tensor) -> bool {
    f32_to_f32(node) && node.source(1).is_some_and(|s| s.type_ == Type::F32)
}

/// POOL_1D: max or average over windows of `k` along dimension 0, stride `s`, padding `p`;
/// the average counts only the taps inside the row.
pub fn pool_1d(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(pool_supports(&dst), "pool_1d: {} input is not supported", x.type_.name());
    if params.ith != 0 {
        return;
    }
    let op = PoolOp(dst.op_params[0]);
    let (k, s, p) = (i64::from(dst.op_params[1]), i64::from(dst.op_params[2]), i64::from(dst.op_params[3]));
    let (iw, ow) = (x.ne[0], dst.ne[0]);
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            for i1 in 0..dst.ne[1] {
                for o in 0..ow {
                    let base = o * s - p;
                    let mut acc = if op == PoolOp::MAX { -f32::MAX } else { 0.0 };
                    let mut count = 0;
                    for j in (base..base + k).filter(|j| (0..iw).contains(j)) {
                        // SAFETY: `j` is inside the row (filtered) and the row inside x.
                        let v = unsafe { load(&x, at(&x, j, i1, i2, i3)) };
                        acc = match op {
                            PoolOp::MAX => keep_max(acc, v),
                            PoolOp::AVG => acc + v,
                            other => crate::ggml_abort!("pool_1d: invalid pooling op {}", other.0),
                        };
                        count += 1;
                    }
                    if op == PoolOp::AVG {
                        acc = if count > 0 { acc / count as f32 } else { 0.0 };
                    }
                    // SAFETY: the element is inside dst; only thread 0 runs.
                    unsafe { store(&dst, at(&dst, o, i1, i2, i3), acc) };
                }
            }
        }
    }
}

/// The 2D pooling parameters: op, kernel, stride, padding.
struct Pool2d {
    op: PoolOp,
    k: [i64; 2],
    s: [i64; 2],
    p: [i64; 2],
}

impl Pool2d {
    fn from_params(dst: &Tensor) -> Pool2d {
        let o = |i: usize| i64::from(dst.op_params[i]);
        Pool2d { op: PoolOp(dst.op_params[0]), k: [o(1), o(2)], s: [o(3), o(4)], p: [o(5), o(6)] }
    }
}

/// POOL_2D: max or average over `k0`×`k1` windows; the average divides by the full window
/// size, padding included, as the reference does.
pub fn pool_2d(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(pool_supports(&dst), "pool_2d: {} input is not supported", x.type_.name());
    if params.ith != 0 {
        return;
    }
    let q = Pool2d::from_params(&dst);
    let area = (q.k[0] * q.k[1]) as f32;
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            for oy in 0..dst.ne[1] {
                for ox in 0..dst.ne[0] {
                    let (ix, iy) = (ox * q.s[0] - q.p[0], oy * q.s[1] - q.p[1]);
                    let mut acc = if q.op == PoolOp::MAX { -f32::MAX } else { 0.0 };
                    for y in (iy..iy + q.k[1]).filter(|y| (0..x.ne[1]).contains(y)) {
                        for xx in (ix..ix + q.k[0]).filter(|xx| (0..x.ne[0]).contains(xx)) {
                            // SAFETY: the coordinates are inside x (filtered).
                            let v = unsafe { load(&x, at(&x, xx, y, i2, i3)) };
                            acc = match q.op {
                                PoolOp::MAX => keep_max(acc, v),
                                PoolOp::AVG => acc + v,
                                other => crate::ggml_abort!("pool_2d: invalid pooling op {}", other.0),
                            };
                        }
                    }
                    if q.op == PoolOp::AVG {
                        acc /= area;
                    }
                    // SAFETY: the element is inside dst; only thread 0 runs.
                    unsafe { store(&dst, at(&dst, ox, oy, i2, i3), acc) };
                }
            }
        }
    }
}

/// POOL_2D_BACK: spreads the pooled gradient `src0` back over the forward input's shape: to
/// the first maximum of each window (max pooling) or evenly over the window (average).
pub fn pool_2d_back(params: &ComputeParams, dst: TensorPtr) {
    let (grad, fwd) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(pool_2d_back_supports(&dst), "pool_2d_back: unsupported types");
    if params.ith != 0 {
        return;
    }
    let q = Pool2d::from_params(&dst);
    let area = (q.k[0] * q.k[1]) as f32;
    let (w, h) = (dst.ne[0], dst.ne[1]);
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            for y in 0..h {
                for xx in 0..w {
                    // SAFETY: inside dst; only thread 0 runs.
                    unsafe { store(&dst, at(&dst, xx, y, i2, i3), 0.0) };
                }
            }
            for oy in 0..grad.ne[1] {
                for ox in 0..grad.ne[0] {
                    // SAFETY: inside the gradient.
                    let g = unsafe { load(&grad, at(&grad, ox, oy, i2, i3)) };
                    let (ix, iy) = (ox * q.s[0] - q.p[0], oy * q.s[1] - q.p[1]);
                    let ys = (iy..iy + q.k[1]).filter(|y| (0..h).contains(y));
                    match q.op {
                        PoolOp::MAX => {
                            let mut best: Option<(i64, i64)> = None;
                            let mut max = -f32::MAX;
                            for y in ys {
                                for xx in (ix..ix + q.k[0]).filter(|xx| (0..w).contains(xx)) {
                                    // SAFETY: inside the forward input, which has dst's shape.
                                    let v = unsafe { load(&fwd, at(&fwd, xx, y, i2, i3)) };
                                    if v > max {
                                        max = v;
                                        best = Some((xx, y));
                                    }
                                }
                            }
                            if let Some((bx, by)) = best {
                                let off = at(&dst, bx, by, i2, i3);
                                // SAFETY: inside dst; only thread 0 runs.
                                unsafe { store(&dst, off, load(&dst, off) + g) };
                            }
                        }
                        PoolOp::AVG => {
                            let share = g / area;
                            for y in ys {
                                for xx in (ix..ix + q.k[0]).filter(|xx| (0..w).contains(xx)) {
                                    let off = at(&dst, xx, y, i2, i3);
                                    // SAFETY: inside dst; only thread 0 runs.
                                    unsafe { store(&dst, off, load(&dst, off) + share) };
                                }
                            }
                        }
                        other => crate::ggml_abort!("pool_2d_back: invalid pooling op {}", other.0),
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Upscale

/// UPSCALE: F32 in and out, modes nearest, bilinear (optionally antialiased) and bicubic.
pub fn upscale_supports(node: &Tensor) -> bool {
    let mode = node.op_params[0] as u32;
    let base = mode & 0xFF;
    f32_to_f32(node)
        && base < scale_mode::COUNT
        && (mode & scale_mode::FLAG_ANTIALIAS == 0 || base == scale_mode::BILINEAR)
}

/// PyTorch's bicubic convolution weights (alpha = -0.75) applied to four samples.
fn bicubic(p: [f32; 4], t: f32) -> f32 {
    const A: f32 = -0.75;
    let near = |x: f32| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f32| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    p[0] * far(t + 1.0) + p[1] * near(t) + p[2] * near(1.0 - t) + p[3] * far(2.0 - t)
}

/// UPSCALE: resamples dimensions 0 and 1 with the op's mode (dimensions 2 and 3 by nearest
/// neighbour). Threads split dimension 2.
pub fn upscale(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(upscale_supports(&dst), "upscale: unsupported types or mode {}", dst.op_params[0]);
    let flags = dst.op_params[0] as u32;
    let mode = flags & 0xFF;
    let [ne00, ne01, _, _] = x.ne;
    let mut sf: [f32; 4] = std::array::from_fn(|i| dst.ne[i] as f32 / x.ne[i] as f32);
    let mut offset = 0.5f32;
    if flags & scale_mode::FLAG_ALIGN_CORNERS != 0 {
        offset = 0.0;
        for (i, f) in sf.iter_mut().enumerate().take(2) {
            if dst.ne[i] > 1 && x.ne[i] > 1 {
                *f = (dst.ne[i] - 1) as f32 / (x.ne[i] - 1) as f32;
            }
        }
    }
    // SAFETY: for the closure's callers, the clamped coordinates are inside x.
    let sample = |i0: i64, i1: i64, i2: i64, i3: i64| unsafe { load(&x, at(&x, i0, i1, i2, i3)) };

    for i3 in 0..dst.ne[3] {
        let i03 = (i3 as f32 / sf[3]) as i64;
        let mut i2 = params.ith as i64;
        while i2 < dst.ne[2] {
            let i02 = (i2 as f32 / sf[2]) as i64;
            for i1 in 0..dst.ne[1] {
                for i0 in 0..dst.ne[0] {
                    let v = if mode == scale_mode::NEAREST {
                        sample((i0 as f32 / sf[0]) as i64, (i1 as f32 / sf[1]) as i64, i02, i03)
                    } else if mode == scale_mode::BILINEAR && flags & scale_mode::FLAG_ANTIALIAS != 0 {
                        // A triangle filter widened to the downscaling factor.
                        let support = [1.0f32.max(1.0 / sf[0]), 1.0f32.max(1.0 / sf[1])];
                        let inv = [1.0 / support[0], 1.0 / support[1]];
                        let y = (i1 as f32 + offset) / sf[1];
                        let xc = (i0 as f32 + offset) / sf[0];
                        let x_min = ((xc - support[0] + offset) as i64).max(0);
                        let x_max = ((xc + support[0] + offset) as i64).min(ne00);
                        let y_min = ((y - support[1] + offset) as i64).max(0);
                        let y_max = ((y + support[1] + offset) as i64).min(ne01);
                        let tri = |t: f32| (1.0 - t.abs()).max(0.0);
                        let (mut val, mut total) = (0.0f32, 0.0f32);
                        for sy in y_min..y_max {
                            let wy = tri((sy as f32 - y + offset) * inv[1]);
                            for sx in x_min..x_max {
                                let w = tri((sx as f32 - xc + offset) * inv[0]) * wy;
                                if w <= 0.0 {
                                    continue;
                                }
                                val += sample(sx, sy, i02, i03) * w;
                                total += w;
                            }
                        }
                        if total > 0.0 { val / total } else { val }
                    } else if mode == scale_mode::BILINEAR {
                        let y = (i1 as f32 + offset) / sf[1] - offset;
                        let xc = (i0 as f32 + offset) / sf[0] - offset;
                        let (y0, x0) = (y.floor() as i64, xc.floor() as i64);
                        let (cy0, cy1) = (y0.clamp(0, ne01 - 1), (y0 + 1).clamp(0, ne01 - 1));
                        let (cx0, cx1) = (x0.clamp(0, ne00 - 1), (x0 + 1).clamp(0, ne00 - 1));
                        let dy = (y - cy0 as f32).clamp(0.0, 1.0);
                        let dx = (xc - cx0 as f32).clamp(0.0, 1.0);
                        let a = sample(cx0, cy0, i02, i03);
                        let b = sample(cx1, cy0, i02, i03);
                        let c = sample(cx0, cy1, i02, i03);
                        let d = sample(cx1, cy1, i02, i03);
                        a * (1.0 - dx) * (1.0 - dy) + b * dx * (1.0 - dy) + c * (1.0 - dx) * dy + d * dx * dy
                    } else {
                        let y = (i1 as f32 + offset) / sf[1] - offset;
                        let xc = (i0 as f32 + offset) / sf[0] - offset;
                        let (y0, x0) = (y.floor() as i64, xc.floor() as i64);
                        let (dy, dx) = (y - y0 as f32, xc - x0 as f32);
                        let p = |ox: i64, oy: i64| {
                            sample((x0 + ox).clamp(0, ne00 - 1), (y0 + oy).clamp(0, ne01 - 1), i02, i03)
                        };
                        let row = |oy: i64| bicubic([p(-1, oy), p(0, oy), p(1, oy), p(2, oy)], dx);
                        bicubic([row(-1), row(0), row(1), row(2)], dy)
                    };
                    // SAFETY: inside dst, in this thread's plane.
                    unsafe { store(&dst, at(&dst, i0, i1, i2, i3), v) };
                }
            }
            i2 += params.nth as i64;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Padding and rolling

/// PAD: F32 in and out.
pub fn pad_supports(node: &Tensor) -> bool {
    f32_to_f32(node)
}

/// PAD: places the source at offset `lp*` in each dimension, zeros elsewhere, or (circular)
/// fills every position from the source wrapped around. Threads split dimension 1.
pub fn pad(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(pad_supports(&dst), "pad: {} is not supported", x.type_.name());
    let lp: [i64; 4] = std::array::from_fn(|i| i64::from(dst.op_params[2 * i]));
    let rp: [i64; 4] = std::array::from_fn(|i| i64::from(dst.op_params[2 * i + 1]));
    let circular = dst.op_params[8] != 0;
    let ne = dst.ne;
    for i3 in 0..ne[3] {
        for i2 in 0..ne[2] {
            let mut i1 = params.ith as i64;
            while i1 < ne[1] {
                for i0 in 0..ne[0] {
                    let i = [i0, i1, i2, i3];
                    let v = if circular {
                        let s: [i64; 4] = std::array::from_fn(|d| (i[d] - lp[d]).rem_euclid(x.ne[d]));
                        // SAFETY: the wrapped coordinates are inside x.
                        unsafe { load(&x, at(&x, s[0], s[1], s[2], s[3])) }
                    } else if (0..4).all(|d| i[d] >= lp[d] && i[d] < ne[d] - rp[d]) {
                        // SAFETY: the shifted coordinates are inside x (dst = x + paddings).
                        unsafe { load(&x, at(&x, i0 - lp[0], i1 - lp[1], i2 - lp[2], i3 - lp[3])) }
                    } else {
                        0.0
                    };
                    // SAFETY: inside dst, in this thread's row.
                    unsafe { store(&dst, at(&dst, i0, i1, i2, i3), v) };
                }
                i1 += params.nth as i64;
            }
        }
    }
}

/// PAD_REFLECT_1D: F32 in and out.
pub fn pad_reflect_1d_supports(node: &Tensor) -> bool {
    f32_to_f32(node)
}

/// PAD_REFLECT_1D: copies each row to offset `p0` and mirrors `p0` values before it and
/// `p1` after it (the edge value itself not repeated). Threads split dimension 1.
pub fn pad_reflect_1d(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(pad_reflect_1d_supports(&dst), "pad_reflect_1d: {} is not supported", x.type_.name());
    let (p0, p1) = (i64::from(dst.op_params[0]), i64::from(dst.op_params[1]));
    let n = x.ne[0];
    crate::ggml_assert!(p0 < n && p1 < n && dst.ne[0] == n + p0 + p1, "pad_reflect_1d: padding too long");
    for i3 in 0..dst.ne[3] {
        for i2 in 0..dst.ne[2] {
            let mut i1 = params.ith as i64;
            while i1 < dst.ne[1] {
                for i0 in 0..dst.ne[0] {
                    // Position in the source row, mirrored at both ends.
                    let j = i0 - p0;
                    let j = if j < 0 {
                        -j
                    } else if j >= n {
                        2 * (n - 1) - j
                    } else {
                        j
                    };
                    // SAFETY: `j` is in 0..n since both paddings are shorter than the row;
                    // the output element is in this thread's row.
                    unsafe { store(&dst, at(&dst, i0, i1, i2, i3), load(&x, at(&x, j, i1, i2, i3))) };
                }
                i1 += params.nth as i64;
            }
        }
    }
}

/// ROLL: F32 in and out.
pub fn roll_supports(node: &Tensor) -> bool {
    f32_to_f32(node)
}

/// ROLL: `dst[i] = src[(i - shift) mod ne]` in every dimension. Threads split the rows.
pub fn roll(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(roll_supports(&dst), "roll: {} is not supported", x.type_.name());
    let shift: [i64; 4] = std::array::from_fn(|i| i64::from(dst.op_params[i]));
    let wrap = |i: i64, n: i64| i.rem_euclid(n);
    let [ne0, ne1, ne2, ne3] = dst.ne;
    for r in split((ne1 * ne2 * ne3) as usize, params.ith, params.nth) {
        let r = r as i64;
        let (i1, i2, i3) = (r % ne1, (r / ne1) % ne2, r / (ne1 * ne2));
        let (j1, j2, j3) = (wrap(i1 - shift[1], ne1), wrap(i2 - shift[2], ne2), wrap(i3 - shift[3], ne3));
        for i0 in 0..ne0 {
            let j0 = wrap(i0 - shift[0], ne0);
            // SAFETY: the wrapped coordinates are inside x (same shape as dst); the output
            // row is this thread's.
            unsafe { store(&dst, at(&dst, i0, i1, i2, i3), load(&x, at(&x, j0, j1, j2, j3))) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::pool as ops;
    use crate::cpu::kernels::testing::*;

    fn get(v: &[f64], ne: [i64; 4], i: [i64; 4]) -> f64 {
        v[(i[0] + ne[0] * (i[1] + ne[1] * (i[2] + ne[2] * i[3]))) as usize]
    }

    #[test]
    fn pooling_1d_and_2d() {
        for_each_team(|nth, use_ref| {
            for ty in [Type::F32, Type::F16] {
                let mut c = ctx();
                let a = c.new_tensor(ty, &[9, 5, 2]);
                put(a, |i| noise(i, 1));
                let x = values(a);
                for op in [PoolOp::MAX, PoolOp::AVG] {
                    let r = ops::pool_1d(&mut c, a, op, 3, 2, 1);
                    assert!(pool_supports(&r));
                    run(&mut c, r, pool_1d, nth, 0, use_ref);
                    let mut want = Vec::new();
                    for row in 0..10 {
                        for o in 0..r.ne[0] {
                            let taps: Vec<f64> = (o * 2 - 1..o * 2 + 2)
                                .filter(|j| (0..9).contains(j))
                                .map(|j| x[(row * 9 + j) as usize])
                                .collect();
                            want.push(if op == PoolOp::MAX {
                                taps.iter().copied().fold(f64::MIN, f64::max)
                            } else {
                                taps.iter().sum::<f64>() / taps.len() as f64
                            });
                        }
                    }
                    assert_close(&values(r), &want, 1e-6, "pool_1d");

                    let r = ops::pool_2d(&mut c, a, op, 3, 2, 2, 1, 1.0, 0.0);
                    run(&mut c, r, pool_2d, nth, 0, use_ref);
                    let mut want = Vec::new();
                    for p in 0..2 {
                        for oy in 0..r.ne[1] {
                            for ox in 0..r.ne[0] {
                                let mut taps = Vec::new();
                                for y in oy..oy + 2 {
                                    for xx in ox * 2 - 1..ox * 2 + 2 {
                                        if (0..9).contains(&xx) && (0..5).contains(&y) {
                                            taps.push(get(&x, a.ne, [xx, y, p, 0]));
                                        }
                                    }
                                }
                                want.push(if op == PoolOp::MAX {
                                    taps.iter().copied().fold(f64::MIN, f64::max)
                                } else {
                                    taps.iter().sum::<f64>() / 6.0
                                });
                            }
                        }
                    }
                    assert_close(&values(r), &want, 1e-6, "pool_2d");
                }
            }
        });
    }

    #[test]
    fn pool_2d_back_routes_gradients() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[6, 4, 2]);
            put(a, |i| noise(i, 2));
            let x = values(a);
            for op in [PoolOp::MAX, PoolOp::AVG] {
                let pooled = ops::pool_2d(&mut c, a, op, 2, 2, 2, 2, 0.0, 0.0);
                let g = c.new_tensor(Type::F32, &pooled.ne);
                put(g, |i| noise(i, 3));
                let gv = values(g);
                let r = ops::pool_2d_back(&mut c, g, a, op, 2, 2, 2, 2, 0.0, 0.0);
                assert!(pool_2d_back_supports(&r));
                run(&mut c, r, pool_2d_back, nth, 0, use_ref);
                let mut want = vec![0.0; 48];
                for p in 0..2 {
                    for oy in 0..2 {
                        for ox in 0..3 {
                            let gval = get(&gv, g.ne, [ox, oy, p, 0]);
                            let cells = [(0, 0), (1, 0), (0, 1), (1, 1)].map(|(dx, dy)| (ox * 2 + dx, oy * 2 + dy));
                            if op == PoolOp::MAX {
                                let best = cells
                                    .iter()
                                    .copied()
                                    .fold(None, |b: Option<(i64, i64)>, (xx, y)| match b {
                                        Some((bx, by))
                                            if get(&x, a.ne, [bx, by, p, 0]) >= get(&x, a.ne, [xx, y, p, 0]) =>
                                        {
                                            b
                                        }
                                        _ => Some((xx, y)),
                                    })
                                    .unwrap();
                                want[(best.0 + 6 * (best.1 + 4 * p)) as usize] += gval;
                            } else {
                                for (xx, y) in cells {
                                    want[(xx + 6 * (y + 4 * p)) as usize] += gval / 4.0;
                                }
                            }
                        }
                    }
                }
                assert_close(&values(r), &want, 1e-6, "pool_2d_back");
            }
        });
    }

    #[test]
    fn upscale_modes() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[4, 3, 2, 1]);
            put(a, |i| noise(i, 4));
            let x = values(a);
            // nearest, integer factor: each value repeated
            let r = ops::upscale(&mut c, a, 2, scale_mode::NEAREST);
            run(&mut c, r, upscale, nth, 0, use_ref);
            let mut want = Vec::new();
            for p in 0..2 {
                for y in 0..6 {
                    for xx in 0..8 {
                        want.push(get(&x, a.ne, [xx / 2, y / 2, p, 0]));
                    }
                }
            }
            assert_close(&values(r), &want, 0.0, "nearest");

            // bilinear with aligned corners keeps the corners and is linear along a row
            let r = ops::interpolate(&mut c, a, 7, 5, 2, 1, scale_mode::BILINEAR | scale_mode::FLAG_ALIGN_CORNERS);
            run(&mut c, r, upscale, nth, 0, use_ref);
            let v = values(r);
            for p in 0..2 {
                assert!((get(&v, r.ne, [0, 0, p, 0]) - get(&x, a.ne, [0, 0, p, 0])).abs() < 1e-6);
                assert!((get(&v, r.ne, [6, 4, p, 0]) - get(&x, a.ne, [3, 2, p, 0])).abs() < 1e-6);
                let mid = (get(&x, a.ne, [0, 0, p, 0]) + get(&x, a.ne, [1, 0, p, 0])) / 2.0;
                assert!((get(&v, r.ne, [1, 0, p, 0]) - mid).abs() < 1e-6);
            }

            // bicubic and antialiased bilinear reproduce a constant image
            let k = c.new_tensor(Type::F32, &[5, 4, 1, 1]);
            put(k, |_| 0.75);
            for mode in [scale_mode::BICUBIC, scale_mode::BILINEAR | scale_mode::FLAG_ANTIALIAS, scale_mode::BILINEAR] {
                let r = ops::interpolate(&mut c, k, 3, 9, 1, 1, mode);
                assert!(upscale_supports(&r));
                run(&mut c, r, upscale, nth, 0, use_ref);
                assert_close(&values(r), &[0.75; 27], 1e-5, "constant");
            }
        });
    }

    #[test]
    fn padding_and_rolling() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[4, 3, 2, 1]);
            put(a, |i| noise(i, 5));
            let x = values(a);
            for circular in [false, true] {
                let r = if circular {
                    ops::pad_ext_circular(&mut c, a, 1, 2, 2, 1, 0, 1, 1, 0)
                } else {
                    ops::pad_ext(&mut c, a, 1, 2, 2, 1, 0, 1, 1, 0)
                };
                run(&mut c, r, pad, nth, 0, use_ref);
                let mut want = Vec::new();
                for i3 in 0..r.ne[3] {
                    for i2 in 0..r.ne[2] {
                        for i1 in 0..r.ne[1] {
                            for i0 in 0..r.ne[0] {
                                let s = [i0 - 1, i1 - 2, i2, i3 - 1];
                                let inside = (0..4).all(|d| (0..a.ne[d]).contains(&s[d]));
                                want.push(if circular {
                                    get(&x, a.ne, std::array::from_fn(|d| s[d].rem_euclid(a.ne[d])))
                                } else if inside {
                                    get(&x, a.ne, s)
                                } else {
                                    0.0
                                });
                            }
                        }
                    }
                }
                assert_close(&values(r), &want, 0.0, "pad");
            }

            let r = ops::pad_reflect_1d(&mut c, a, 2, 3);
            run(&mut c, r, pad_reflect_1d, nth, 0, use_ref);
            let mut want = Vec::new();
            for row in 0..6 {
                for j in [2, 1, 0, 1, 2, 3, 2, 1, 0] {
                    want.push(x[row * 4 + j]);
                }
            }
            assert_close(&values(r), &want, 0.0, "reflect");

            let r = ops::roll(&mut c, a, -1, 2, 1, 0);
            run(&mut c, r, roll, nth, 0, use_ref);
            let mut want = Vec::new();
            for i2 in 0..2i64 {
                for i1 in 0..3i64 {
                    for i0 in 0..4i64 {
                        want.push(get(
                            &x,
                            a.ne,
                            [(i0 + 1).rem_euclid(4), (i1 - 2).rem_euclid(3), (i2 - 1).rem_euclid(2), 0],
                        ));
                    }
                }
            }
            assert_close(&values(r), &want, 0.0, "roll");
        });
    }
}
