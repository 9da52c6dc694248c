//! Gated linear units (`GGML_OP_GLU`): `act(x) * g` with the two halves in one tensor,
//! swapped, or in two; the activations are `unary`'s.

use super::copy::{Elem, F16, addr, extents, nrows, row_addr, row_coords, split, src, use_simd};
use super::unary::{
    cpp_clamp, cpp_min, fast, gelu_erf, gelu_formula, gelu_quick_formula, gelu_quick_table, gelu_table, gelu_tabled,
    silu,
};
use crate::core::op::GluOp;
use crate::core::ops::glu::get_glu_op;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::quants::half::Bf16;

/// GLU's task count: the whole team. Aborts for a sub-op that does not exist, as the
/// reference's planner does.
pub fn glu_tasks(node: &Tensor, n_threads: usize) -> usize {
    match get_glu_op(node) {
        g if (0..GluOp::COUNT).contains(&g.0) => n_threads,
        g => crate::ggml_abort!("unknown GLU op {}", g.0),
    }
}

/// Whether [`glu`] covers `node`.
pub fn glu_supports(node: &Tensor) -> bool {
    let (a, b) = (node.source(0), node.source(1));
    let Some(a) = a else { return false };
    let op = GluOp(node.op_params[0]);
    if !(0..GluOp::COUNT).contains(&op.0)
        || a.type_ != node.type_
        || !matches!(a.type_, Type::F32 | Type::F16 | Type::BF16)
    {
        return false;
    }
    let ts = a.type_.type_size();
    let shapes = match b {
        Some(b) => b.type_ == a.type_ && b.same_shape(a) && a.same_shape(node) && b.nb[0] == ts,
        // an odd row leaves its last element out: ggml takes halves of ne0 / 2
        None => node.ne[0] == a.ne[0] / 2 && (1..4).all(|d| node.ne[d] == a.ne[d]),
    };
    shapes && a.nb[0] == ts && node.nb[0] == ts
}

/// `GGML_OP_GLU`: `dst = act(x) * g`, where `x` and `g` are the two halves of each row of
/// `src[0]` (gate first when `op_params[1]` says swapped), or `src[0]` and `src[1]`.
/// SWIGLU_OAI takes alpha and limit from `op_params[2..4]`, SWIGLU_CLAMP its limit from 3.
pub fn glu(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let b = dst.src(1);
    let op = GluOp(dst.op_params[0]);
    let swapped = dst.op_params[1] != 0;
    let ty = a.type_;
    crate::ggml_assert!(dst.type_ == ty, "glu: result type {} differs from {}", dst.type_.name(), ty.name());
    let nc = extents(&dst)[0];
    let ne = extents(&a);
    if let Some(b) = b {
        crate::ggml_assert!(b.type_ == ty && b.same_shape(&a), "glu: the two halves differ in type or shape");
    } else {
        crate::ggml_assert!(ne[0] / 2 == nc, "glu: rows of {} do not split into two of {}", ne[0], nc);
    }
    let ts = ty.type_size();
    let simd = use_simd(params) && ty == Type::F32;
    let (alpha, limit) = (dst.op_param_f32(2), dst.op_param_f32(3));
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        let (x, g) = match b {
            Some(b) => (row_addr(&a, r), row_addr(&b, r)),
            None => {
                let (first, second) = (row_addr(&a, r), addr(&a, [nc, r[0], r[1], r[2]]));
                if swapped { (second, first) } else { (first, second) }
            }
        };
        let y = row_addr(&dst, r);
        // SAFETY: `x` and `g` address nc packed elements of rows of the sources, `y` nc
        // packed elements of row `r` of `dst`; rows are split between threads.
        unsafe {
            if simd && op == GluOp::SWIGLU {
                fast::swiglu(nc, y.cast(), x.cast(), g.cast());
                continue;
            }
            if simd && op == GluOp::GEGLU {
                fast::geglu(nc, y.cast(), x.cast(), g.cast());
                continue;
            }
            match op {
                GluOp::REGLU => glu_row(ty, nc, y, x, g, ts, |x, g| if x > 0.0 { x * g } else { 0.0 }),
                GluOp::GEGLU => {
                    // f32 inputs go through the table with its cut-offs at ±10, binary16 inputs
                    // straight through it, as in the reference
                    let t = gelu_table();
                    match ty {
                        Type::F32 => glu_row(ty, nc, y, x, g, ts, |x, g| gelu_tabled(t, x) * g),
                        Type::F16 => glu_row(ty, nc, y, x, g, ts, |x, g| t.get(x) * g),
                        _ => glu_row(ty, nc, y, x, g, ts, |x, g| gelu_formula(x) * g),
                    }
                }
                GluOp::SWIGLU => glu_row(ty, nc, y, x, g, ts, |x, g| silu(x) * g),
                GluOp::SWIGLU_OAI => glu_row(ty, nc, y, x, g, ts, |x, g| {
                    let x = cpp_min(x, limit);
                    let g = cpp_clamp(g, -limit, limit);
                    x / (1.0 + (alpha * (-x)).exp()) * (g + 1.0)
                }),
                GluOp::GEGLU_ERF => glu_row(ty, nc, y, x, g, ts, |x, g| gelu_erf(x) * g),
                GluOp::GEGLU_QUICK => {
                    let t = gelu_quick_table();
                    if ty == Type::BF16 {
                        glu_row(ty, nc, y, x, g, ts, |x, g| gelu_quick_formula(x) * g)
                    } else {
                        glu_row(ty, nc, y, x, g, ts, |x, g| t.get(x) * g)
                    }
                }
                GluOp::SWIGLU_CLAMP => glu_row(ty, nc, y, x, g, ts, |x, g| {
                    let gate = cpp_min(x, limit);
                    let up = cpp_clamp(g, -limit, limit);
                    gate / (1.0 + (-gate).exp()) * up
                }),
                other => crate::ggml_abort!("glu: unknown op {}", other.0),
            }
        }
    }
}

/// `y[i] = f(x[i], g[i])` over `n` packed elements of `ty`.
///
/// # Safety
/// The three rows hold `n` packed elements of `ty`; `y` overlaps neither input.
unsafe fn glu_row(ty: Type, n: usize, y: *mut u8, x: *const u8, g: *const u8, ts: usize, f: impl Fn(f32, f32) -> f32) {
    unsafe fn typed<T: Elem>(n: usize, y: *mut u8, x: *const u8, g: *const u8, f: &impl Fn(f32, f32) -> f32) {
        let (y, x, g) = (y.cast::<T>(), x.cast::<T>(), g.cast::<T>());
        for i in 0..n {
            // SAFETY: element i < n of each row (caller's contract).
            unsafe { *y.add(i) = T::from_f32(f((*x.add(i)).to_f32(), (*g.add(i)).to_f32())) };
        }
    }
    debug_assert_eq!(ts, ty.type_size());
    // SAFETY: the caller's row contract, for the matching element type.
    unsafe {
        match ty {
            Type::F32 => typed::<f32>(n, y, x, g, &f),
            Type::F16 => typed::<F16>(n, y, x, g, &f),
            Type::BF16 => typed::<Bf16>(n, y, x, g, &f),
            other => crate::ggml_abort!("glu: unsupported type {}", other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::op::UnaryOp;
    use crate::core::ops::{glu as glu_ops, shape};
    use crate::cpu::kernels::testing::*;
    use crate::cpu::kernels::unary::tests::{input, reference, tol};

    fn glu_reference(op: GluOp, x: f64, g: f64, alpha: f64, limit: f64) -> f64 {
        match op {
            GluOp::SWIGLU_OAI => {
                let x = x.min(limit);
                let g = g.clamp(-limit, limit);
                x / (1.0 + (-alpha * x).exp()) * (g + 1.0)
            }
            GluOp::SWIGLU_CLAMP => {
                let x = x.min(limit);
                x / (1.0 + (-x).exp()) * g.clamp(-limit, limit)
            }
            GluOp::REGLU => x.max(0.0) * g,
            GluOp::GEGLU => reference(UnaryOp::GELU, x) * g,
            GluOp::SWIGLU => reference(UnaryOp::SILU, x) * g,
            GluOp::GEGLU_ERF => reference(UnaryOp::GELU_ERF, x) * g,
            GluOp::GEGLU_QUICK => reference(UnaryOp::GELU_QUICK, x) * g,
            _ => unreachable!(),
        }
    }

    #[test]
    fn glu_ops_fused_swapped_and_split() {
        for op in (0..GluOp::COUNT).map(GluOp) {
            for ty in [Type::F32, Type::F16, Type::BF16] {
                for_each_team(|nth, use_ref| {
                    for variant in 0..3 {
                        let mut c = ctx();
                        let (alpha, limit) = (1.702f32, 2.5f32);
                        // an odd row: its last element belongs to neither half
                        let a = c.new_tensor(ty, &[2 * 19 + 1, 3, 2]);
                        put(a, input);
                        let b = c.new_tensor(ty, &[19, 3, 2]);
                        put(b, |i| noise(i, 9) * 3.0);
                        let half = c.new_tensor(ty, &[19, 3, 2]);
                        put(half, |i| input(i) * 0.75);
                        let (r, xs, gs) = match variant {
                            0 | 1 => {
                                let r = match op {
                                    GluOp::SWIGLU_OAI => glu_ops::swiglu_oai(&mut c, a, None, alpha, limit),
                                    GluOp::SWIGLU_CLAMP => glu_ops::swiglu_clamp(&mut c, a, None, limit),
                                    _ => glu_ops::glu(&mut c, a, op, variant == 1),
                                };
                                if variant == 1 {
                                    r.get_mut().op_params[1] = 1;
                                }
                                let v = values(a);
                                let (mut xs, mut gs) = (Vec::new(), Vec::new());
                                for row in v.chunks(39) {
                                    let (first, second) = (&row[..19], &row[19..38]);
                                    let (x, g) = if variant == 1 { (second, first) } else { (first, second) };
                                    xs.extend_from_slice(x);
                                    gs.extend_from_slice(g);
                                }
                                (r, xs, gs)
                            }
                            _ => {
                                let r = match op {
                                    GluOp::SWIGLU_OAI => glu_ops::swiglu_oai(&mut c, half, Some(b), alpha, limit),
                                    GluOp::SWIGLU_CLAMP => glu_ops::swiglu_clamp(&mut c, half, Some(b), limit),
                                    _ => glu_ops::glu_split(&mut c, half, b, op),
                                };
                                (r, values(half), values(b))
                            }
                        };
                        assert!(glu_supports(&r));
                        run(&mut c, r, glu, nth, 0, use_ref);
                        let want: Vec<f64> = xs
                            .iter()
                            .zip(&gs)
                            .map(|(&x, &g)| glu_reference(op, x, g, f64::from(alpha), f64::from(limit)))
                            .collect();
                        let t = if matches!(op, GluOp::GEGLU | GluOp::GEGLU_QUICK) {
                            tol(ty).max(4e-3)
                        } else {
                            tol(ty) * 4.0
                        };
                        assert_close(&values(r), &want, t, &format!("{} {} variant {variant}", op.name(), ty.name()));
                    }
                });
            }
        }
        // a permuted source is refused
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 8]);
        let t = shape::transpose(&mut c, a);
        let r = glu_ops::swiglu(&mut c, a);
        r.get_mut().src[0] = t.as_ptr();
        assert!(!glu_supports(&r));
    }
}
