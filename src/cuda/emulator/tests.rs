//! Each kernel on the emulated device against the CPU backend computing the same node: the
//! node is built by ggml's constructors and computed on the CPU, then the kernel writes into
//! a twin of the result from the same sources.

use std::ffi::c_void;

use super::{has_kernel, launch};
use crate::core::context::Context;
use crate::core::graph::cgraph::new_graph_custom;
use crate::core::op::{GluOp, UnaryOp};
use crate::core::ops;
use crate::core::ops::rope::{RopeParams, rope_type};
use crate::core::ops::sort::SortOrder;
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;
use crate::cpu::api::graph_compute_with_ctx;
use crate::cpu::kernels::testing::{Rng, assert_close, ctx, nmse, random, values};
use crate::cuda::shape::Shape;

mod attention;

/// A pointer to `v` as CUDA's argument array holds it.
fn arg<T>(v: &T) -> *mut c_void {
    std::ptr::from_ref(v).cast_mut().cast()
}

/// Computes `node` on the CPU.
fn compute_on_cpu(c: &mut Context, node: TensorPtr) {
    let g = new_graph_custom(c, 64, false);
    g.get_mut().build_forward_expand(node);
    assert_eq!(graph_compute_with_ctx(c, &g, 2), Status::SUCCESS);
}

/// Computes `node` (of a plain type) on the CPU and returns its values.
fn on_cpu(c: &mut Context, node: TensorPtr) -> Vec<f64> {
    compute_on_cpu(c, node);
    values(node)
}

/// An empty tensor shaped and typed as `t`, for a kernel to write.
fn twin(c: &mut Context, t: TensorPtr) -> TensorPtr {
    c.new_tensor(t.type_, &t.ne)
}

/// Every weight type GET_ROWS and the matrix-vector products read.
const WEIGHT_TYPES: [Type; 16] = [
    Type::F32,
    Type::F16,
    Type::BF16,
    Type::Q4_0,
    Type::Q4_1,
    Type::Q5_0,
    Type::Q5_1,
    Type::Q8_0,
    Type::Q2_K,
    Type::Q3_K,
    Type::Q4_K,
    Type::Q5_K,
    Type::Q6_K,
    Type::IQ4_NL,
    Type::IQ4_XS,
    Type::MXFP4,
];

fn run(name: &str, grid: u32, threads: u32, args: &mut [*mut c_void]) {
    assert!(has_kernel(name), "no kernel {name}");
    // SAFETY: each test passes the kernel's parameters in order, pointing into live tensors.
    assert!(unsafe { launch(name, [grid, 1, 1], [threads, 1, 1], args) });
}

#[test]
fn row_norms() {
    let mut c = ctx();
    let mut rng = Rng::new(1);
    for (name, threads) in [("rms_norm_f32", 32), ("rms_norm_f32", 128), ("norm_f32", 64), ("l2_norm_f32", 256)] {
        let x = c.new_tensor(Type::F32, &[300, 5, 2]);
        random(x, &mut rng, -2.0, 2.0);
        let eps = 1e-5f32;
        let y = match name {
            "rms_norm_f32" => ops::norm::rms_norm(&mut c, x, eps),
            "norm_f32" => ops::norm::norm(&mut c, x, eps),
            _ => ops::norm::l2_norm(&mut c, x, eps),
        };
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (sx, so) = (Shape::of(&x), Shape::of(&out));
        let (px, po) = (x.data, out.data);
        run(name, 7, threads, &mut [arg(&sx), arg(&px), arg(&so), arg(&po), arg(&eps)]);
        assert_close(&values(out), &want, 1e-5, name);
    }
}

#[test]
fn soft_max_with_mask_alibi_and_sinks() {
    let mut c = ctx();
    let mut rng = Rng::new(2);
    for (max_bias, with_sinks, mask_type) in
        [(0.0f32, false, Type::F32), (8.0, false, Type::F16), (0.0, true, Type::F16)]
    {
        let x = c.new_tensor(Type::F32, &[70, 6, 4, 1]);
        random(x, &mut rng, -4.0, 4.0);
        let mask = c.new_tensor(mask_type, &[70, 6, 1, 1]);
        random(mask, &mut rng, -1.0, 0.0);
        let scale = 0.3f32;
        let y = ops::softmax::soft_max_ext(&mut c, x, Some(mask), scale, max_bias);
        let sinks = with_sinks.then(|| {
            let s = c.new_tensor(Type::F32, &[4]);
            random(s, &mut rng, -1.0, 1.0);
            ops::softmax::soft_max_add_sinks(y, Some(s));
            s
        });
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let n_head = x.ne[2] as u32;
        let n_head_log2 = 1i32 << n_head.ilog2();
        let m0 = 2f32.powf(-max_bias / n_head_log2 as f32);
        let m1 = 2f32.powf(-max_bias / 2.0 / n_head_log2 as f32);
        let (sx, sm, so) = (Shape::of(&x), Shape::of(&mask), Shape::of(&out));
        let (px, pm, po) = (x.data, mask.data, out.data);
        let ps = sinks.map_or(std::ptr::null_mut(), |s| s.data);
        let mt = mask_type.0;
        run(
            "soft_max_f32",
            5,
            64,
            &mut [
                arg(&sx),
                arg(&px),
                arg(&sm),
                arg(&pm),
                arg(&mt),
                arg(&ps),
                arg(&so),
                arg(&po),
                arg(&scale),
                arg(&max_bias),
                arg(&n_head_log2),
                arg(&m0),
                arg(&m1),
            ],
        );
        assert_close(&values(out), &want, 1e-5, &format!("soft_max bias {max_bias} sinks {with_sinks}"));
    }
}

/// A RoPE case: mode, rotated dimensions, sections, first rotated element, YaRN's
/// extrapolation factor, whether there are frequency factors, the row type.
type RopeCase = (i32, i32, [i32; 4], i32, f32, bool, Type);

#[test]
fn rope_in_every_mode_with_yarn_sections_and_offsets() {
    let mut c = ctx();
    let mut rng = Rng::new(3);
    let none = [0; 4];
    let cases: [RopeCase; 10] = [
        (rope_type::NORMAL, 48, none, 0, 0.0, false, Type::F32),
        (rope_type::NEOX, 48, none, 0, 1.0, true, Type::F32),
        (rope_type::NEOX, 48, none, 0, 0.0, false, Type::F16),
        // rope_set_offset: the rotated elements start at 8 (normal) or 16 (NeoX)
        (rope_type::NORMAL, 32, none, 8, 0.0, false, Type::F32),
        (rope_type::NEOX, 32, none, 16, 1.0, true, Type::F16),
        // M-RoPE and interleaved M-RoPE: 24 pairs over sections of 8, 8 and 8
        (rope_type::MROPE, 48, [8, 8, 8, 0], 0, 0.0, false, Type::F32),
        (rope_type::MROPE, 48, [6, 5, 5, 2], 0, 1.0, true, Type::F16),
        (rope_type::IMROPE, 48, [8, 8, 8, 0], 0, 0.0, true, Type::F32),
        // vision: 32 pairs (i, i + 32) over the whole row, each section's angles restarting;
        // with an empty first section, the second never restarts
        (rope_type::VISION, 32, [8, 8, 0, 0], 0, 0.0, false, Type::F32),
        (rope_type::VISION, 32, [0, 10, 4, 2], 0, 1.0, true, Type::F16),
    ];
    for (mode, n_dims, sections, n_offs, ext_factor, with_factors, ty) in cases {
        let x = c.new_tensor(ty, &[64, 4, 5, 1]);
        random(x, &mut rng, -1.0, 1.0);
        let multi = mode & rope_type::MROPE != 0;
        let pos = c.new_tensor(Type::I32, &[if multi { 20 } else { 5 }]);
        let positions = [0, 7, 100, 2047, 3, 1, 1, 50, 9, 4, 2, 3, 60, 5, 8, 0, 0, 1, 2, 3];
        for (i, &at) in positions.iter().take(pos.ne[0] as usize).enumerate() {
            // SAFETY: pos holds ne[0] i32.
            unsafe { *pos.data.cast::<i32>().add(i) = at };
        }
        let factors = with_factors.then(|| {
            let f = c.new_tensor(Type::F32, &[32]);
            random(f, &mut rng, 0.5, 2.0);
            f
        });
        let mut p = RopeParams::new(n_dims, mode);
        (p.n_ctx_orig, p.freq_base, p.freq_scale, p.ext_factor) = (4096, 10000.0, 0.25, ext_factor);
        let y = if multi {
            ops::rope::rope_multi(&mut c, x, pos, factors, &p, Some(&sections))
        } else {
            ops::rope::rope_ext(&mut c, x, pos, factors, &p)
        };
        if n_offs > 0 {
            ops::rope::rope_set_offset(y, n_offs);
        }
        assert!(crate::cuda::ops::rope::supports(&y), "mode {mode} is supported");
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let kp = crate::cuda::ops::rope::KernelParams::of(&y);
        let (sx, so) = (Shape::of(&x), Shape::of(&out));
        let (px, po, pp) = (x.data, out.data, pos.data);
        let pf = factors.map_or(std::ptr::null_mut(), |f| f.data);
        let t = ty.0;
        run("rope", 3, 64, &mut [arg(&kp), arg(&sx), arg(&px), arg(&so), arg(&po), arg(&t), arg(&pp), arg(&pf)]);
        // the CPU steps each pair's angle from the previous one by a product, the kernel takes
        // a power: at position 2047 they part by ~1e-3 radians, so compare as test-backend-ops
        // does, by the normalised mean squared error
        let err = nmse(&values(out), &want);
        assert!(err < 1e-7, "rope mode {mode} sections {sections:?} offset {n_offs} {}: nmse {err:e}", ty.name());
    }
}

#[test]
fn binary_arithmetic_broadcasts() {
    let mut c = ctx();
    let mut rng = Rng::new(4);
    for (op, code) in [("add", 0), ("sub", 1), ("mul", 2), ("div", 3)] {
        for (ta, tb) in [(Type::F32, Type::F32), (Type::F16, Type::F32), (Type::F16, Type::F16)] {
            let a = c.new_tensor(ta, &[33, 4, 3, 2]);
            random(a, &mut rng, -2.0, 2.0);
            let b = c.new_tensor(tb, &[33, 1, 3, 1]);
            random(b, &mut rng, 0.5, 2.0);
            let y = match op {
                "add" => ops::elementwise::add(&mut c, a, b),
                "sub" => ops::elementwise::sub(&mut c, a, b),
                "mul" => ops::elementwise::mul(&mut c, a, b),
                _ => ops::elementwise::div(&mut c, a, b),
            };
            let want = on_cpu(&mut c, y);
            let out = twin(&mut c, y);
            let (sa, sb, so) = (Shape::of(&a), Shape::of(&b), Shape::of(&out));
            let (pa, pb, po) = (a.data, b.data, out.data);
            let (tta, ttb, tto) = (ta.0, tb.0, out.type_.0);
            run(
                "binary",
                4,
                96,
                &mut [
                    arg(&code),
                    arg(&sa),
                    arg(&pa),
                    arg(&tta),
                    arg(&sb),
                    arg(&pb),
                    arg(&ttb),
                    arg(&so),
                    arg(&po),
                    arg(&tto),
                ],
            );
            let tol = if ta == Type::F16 { 1e-3 } else { 1e-6 };
            assert_close(&values(out), &want, tol, &format!("{op} {} {}", ta.name(), tb.name()));
        }
    }
}

#[test]
fn unary_functions() {
    let mut c = ctx();
    let mut rng = Rng::new(5);
    for op in [UnaryOp::SILU, UnaryOp::GELU, UnaryOp::RELU, UnaryOp::NEG, UnaryOp::TANH, UnaryOp::SIGMOID, UnaryOp::EXP]
    {
        let x = c.new_tensor(Type::F32, &[100, 3]);
        random(x, &mut rng, -3.0, 3.0);
        let y = ops::unary::unary(&mut c, x, op);
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (sx, so) = (Shape::of(&x), Shape::of(&out));
        let (px, po) = (x.data, out.data);
        let (f, p0, p1, t) = (op.0, 0f32, 0f32, Type::F32.0);
        run(
            "unary",
            2,
            128,
            &mut [arg(&f), arg(&p0), arg(&p1), arg(&sx), arg(&px), arg(&t), arg(&so), arg(&po), arg(&t)],
        );
        // GELU: the CPU's is tabulated at binary16 precision
        let tol = if op == UnaryOp::GELU { 2e-3 } else { 1e-5 };
        assert_close(&values(out), &want, tol, &format!("unary {}", op.0));
    }
    // SCALE: s * x + b
    let x = c.new_tensor(Type::F32, &[50, 2]);
    random(x, &mut rng, -3.0, 3.0);
    let y = ops::elementwise::scale_impl(&mut c, x, 0.5, 0.25, false);
    let want = on_cpu(&mut c, y);
    let out = twin(&mut c, y);
    let (sx, so) = (Shape::of(&x), Shape::of(&out));
    let (px, po) = (x.data, out.data);
    let (f, p0, p1, t) = (105i32, 0.5f32, 0.25f32, Type::F32.0);
    run("unary", 1, 64, &mut [arg(&f), arg(&p0), arg(&p1), arg(&sx), arg(&px), arg(&t), arg(&so), arg(&po), arg(&t)]);
    assert_close(&values(out), &want, 1e-6, "scale");
}

#[test]
fn gated_linear_units() {
    let mut c = ctx();
    let mut rng = Rng::new(6);
    for (op, swapped) in [(GluOp::SWIGLU, false), (GluOp::SWIGLU, true), (GluOp::GEGLU, false), (GluOp::REGLU, true)] {
        let a = c.new_tensor(Type::F32, &[64, 5]);
        random(a, &mut rng, -3.0, 3.0);
        let y = ops::glu::glu(&mut c, a, op, swapped);
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (sa, so) = (Shape::of(&a), Shape::of(&out));
        let (pa, po, pb) = (a.data, out.data, std::ptr::null_mut::<c_void>());
        let (f, sw, alpha, limit, t) = (op.0, i32::from(swapped), 0f32, 0f32, Type::F32.0);
        run(
            "glu",
            2,
            64,
            &mut [
                arg(&f),
                arg(&sw),
                arg(&alpha),
                arg(&limit),
                arg(&sa),
                arg(&pa),
                arg(&sa),
                arg(&pb),
                arg(&t),
                arg(&so),
                arg(&po),
            ],
        );
        let tol = if op == GluOp::GEGLU { 5e-3 } else { 1e-5 };
        assert_close(&values(out), &want, tol, &format!("glu {} swapped {swapped}", op.0));
    }
}

#[test]
fn get_rows_of_float_and_block_types() {
    let mut c = ctx();
    let mut rng = Rng::new(7);
    for ty in WEIGHT_TYPES {
        let table = c.new_tensor(ty, &[256, 10, 2]);
        let plain = c.new_tensor(Type::F32, &[256, 10, 2]);
        random(plain, &mut rng, -1.0, 1.0);
        let q = ops::shape::cpy(&mut c, plain, table);
        compute_on_cpu(&mut c, q);
        let ids = c.new_tensor(Type::I32, &[4, 2]);
        for (i, r) in [3, 9, 0, 3, 1, 2, 8, 5].into_iter().enumerate() {
            // SAFETY: ids holds eight i32.
            unsafe { *ids.data.cast::<i32>().add(i) = r };
        }
        let y = ops::rows::get_rows(&mut c, table, ids);
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (st, si, so) = (Shape::of(&table), Shape::of(&ids), Shape::of(&out));
        let (pt, pi, po, t) = (table.data, ids.data, out.data, ty.0);
        run("get_rows", 3, 64, &mut [arg(&st), arg(&pt), arg(&t), arg(&si), arg(&pi), arg(&so), arg(&po)]);
        assert_close(&values(out), &want, 0.0, &format!("get_rows {}", ty.name()));
    }
}

#[test]
fn set_rows_and_copies_quantize_as_the_cpu() {
    let mut c = ctx();
    let mut rng = Rng::new(8);
    let types = [Type::F32, Type::F16, Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0];
    for (ty, src_type) in types.into_iter().flat_map(|t| [(t, Type::F32), (t, Type::F16)]) {
        // SET_ROWS: 3 rows of 64 into a table of 8
        let table = c.new_tensor(ty, &[64, 8]);
        let src = c.new_tensor(src_type, &[64, 3]);
        random(src, &mut rng, -1.0, 1.0);
        let ids = c.new_tensor(Type::I64, &[3]);
        for (i, r) in [6i64, 1, 4].into_iter().enumerate() {
            // SAFETY: ids holds three i64.
            unsafe { *ids.data.cast::<i64>().add(i) = r };
        }
        let y = ops::rows::set_rows(&mut c, table, src, ids);
        compute_on_cpu(&mut c, y);
        // SAFETY: the table's bytes, as the CPU left them.
        let want = unsafe { std::slice::from_raw_parts(table.data.cast::<u8>(), table.nbytes()) }.to_vec();
        let out = twin(&mut c, table);
        // SAFETY: both hold nbytes; rows the ids skip must match too.
        unsafe { std::ptr::copy_nonoverlapping(want.as_ptr(), out.data.cast::<u8>(), want.len()) };
        for r in [6usize, 1, 4] {
            // SAFETY: row r of out lies inside it.
            unsafe { std::ptr::write_bytes(out.data.cast::<u8>().add(r * out.nb[1]), 0xaa, out.nb[1]) };
        }
        let (ss, si, so) = (Shape::of(&src), Shape::of(&ids), Shape::of(&out));
        let (ps, ts, pi, po, wide, t) = (src.data, src_type.0, ids.data, out.data, 1i32, ty.0);
        run(
            "set_rows",
            2,
            32,
            &mut [arg(&ss), arg(&ps), arg(&ts), arg(&si), arg(&pi), arg(&wide), arg(&so), arg(&po), arg(&t)],
        );
        // SAFETY: as above.
        let got = unsafe { std::slice::from_raw_parts(out.data.cast::<u8>(), out.nbytes()) };
        assert!(got == want.as_slice(), "set_rows of {} into {}: bytes differ", src_type.name(), ty.name());

        // CPY of a strided F32 view into the type: transposed into a float type, rows with
        // gaps into a block type (whose CPU kernel quantizes packed rows only)
        let block = ty.blck_size() > 1;
        let m = c.new_tensor(Type::F32, if block { &[80, 8] } else { &[8, 64] });
        random(m, &mut rng, -1.0, 1.0);
        let mt =
            if block { ops::shape::view_2d(&mut c, m, 64, 8, m.nb[1], 0) } else { ops::shape::transpose(&mut c, m) };
        let dst = c.new_tensor(ty, &[64, 8]);
        let y = ops::shape::cpy(&mut c, mt, dst);
        compute_on_cpu(&mut c, y);
        // SAFETY: the destination's bytes, as the CPU left them.
        let want = unsafe { std::slice::from_raw_parts(dst.data.cast::<u8>(), dst.nbytes()) }.to_vec();
        let out = twin(&mut c, dst);
        let (sm, so) = (Shape::of(&mt), Shape::of(&out));
        let (pm, po, tf, t) = (mt.data, out.data, Type::F32.0, ty.0);
        let name = if block { "copy_to_blocks" } else { "copy_float" };
        let mut with_types = [arg(&sm), arg(&pm), arg(&tf), arg(&so), arg(&po), arg(&t)];
        let mut blocks = [arg(&sm), arg(&pm), arg(&so), arg(&po), arg(&t)];
        run(name, 3, 64, if block { &mut blocks } else { &mut with_types });
        // SAFETY: as above.
        let got = unsafe { std::slice::from_raw_parts(out.data.cast::<u8>(), out.nbytes()) };
        assert!(got == want.as_slice(), "cpy of a transposed f32 into {}: bytes differ", ty.name());
    }
}

#[test]
fn mul_mat_vec_of_every_weight_type() {
    let mut c = ctx();
    let mut rng = Rng::new(9);
    for ty in WEIGHT_TYPES {
        for ncols in [1, 3, 8] {
            // weights [256, 40, 2] broadcast over activations [256, ncols, 4]
            let plain = c.new_tensor(Type::F32, &[256, 40, 2]);
            random(plain, &mut rng, -1.0, 1.0);
            let w = c.new_tensor(ty, &[256, 40, 2]);
            let q = ops::shape::cpy(&mut c, plain, w);
            compute_on_cpu(&mut c, q);
            let x = c.new_tensor(Type::F32, &[256, ncols, 4]);
            random(x, &mut rng, -1.0, 1.0);
            let y = ops::matmul::mul_mat(&mut c, w, x);
            let want = on_cpu(&mut c, y);
            let out = twin(&mut c, y);
            let (sw, sx, so) = (Shape::of(&w), Shape::of(&x), Shape::of(&out));
            let (pw, px, po, t) = (w.data, x.data, out.data, ty.0);
            // SAFETY: as in `run`, on a 2-D grid: 10 blocks of 4 warps cover 40 rows.
            assert!(unsafe {
                launch(
                    "mul_mat_vec",
                    [10, 4, 1],
                    [128, 1, 1],
                    &mut [arg(&sw), arg(&pw), arg(&t), arg(&sx), arg(&px), arg(&so), arg(&po)],
                )
            });
            // the CPU rounds the activations to its dot product's type (Q8_0, F16, BF16) first
            let err = nmse(&values(out), &want);
            assert!(err < 5e-4, "mul_mat_vec {} x {ncols}: nmse {err:e}", ty.name());
        }
    }
}

#[test]
fn row_sums_sorts_repeats_and_concatenations() {
    let mut c = ctx();
    let mut rng = Rng::new(10);
    // SUM_ROWS and MEAN
    for mean in [0i32, 1] {
        let x = c.new_tensor(Type::F32, &[333, 4, 3]);
        random(x, &mut rng, -1.0, 1.0);
        let y = if mean == 1 { ops::reduce::mean(&mut c, x) } else { ops::reduce::sum_rows(&mut c, x) };
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (sx, so) = (Shape::of(&x), Shape::of(&out));
        let (px, po) = (x.data, out.data);
        run("sum_rows_f32", 5, 64, &mut [arg(&sx), arg(&px), arg(&so), arg(&po), arg(&mean)]);
        assert_close(&values(out), &want, 1e-5, &format!("sum_rows mean {mean}"));
    }
    // ARGSORT of distinct values, rows padded to a power of two
    for (n, order) in [(37, SortOrder::ASC), (37, SortOrder::DESC), (1000, SortOrder::DESC), (64, SortOrder::ASC)] {
        let x = c.new_tensor(Type::F32, &[n, 3]);
        random(x, &mut rng, -1.0, 1.0);
        let y = ops::sort::argsort(&mut c, x, order);
        compute_on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (sx, so) = (Shape::of(&x), Shape::of(&out));
        let (px, po, desc) = (x.data, out.data, order.0);
        let threads = (n as u32).next_power_of_two();
        run("argsort_f32", 2, threads, &mut [arg(&sx), arg(&px), arg(&so), arg(&po), arg(&desc)]);
        // SAFETY: both hold 3n i32.
        let (got, want) = unsafe {
            (
                std::slice::from_raw_parts(out.data.cast::<i32>(), 3 * n as usize),
                std::slice::from_raw_parts(y.data.cast::<i32>(), 3 * n as usize),
            )
        };
        assert_eq!(got, want, "argsort of {n}, order {}", order.0);
    }
    // REPEAT and CONCAT
    let a = c.new_tensor(Type::F32, &[5, 2, 1, 3]);
    random(a, &mut rng, -1.0, 1.0);
    let shape = c.new_tensor(Type::F32, &[10, 4, 3, 3]);
    let y = ops::reduce::repeat(&mut c, a, shape);
    let want = on_cpu(&mut c, y);
    let out = twin(&mut c, y);
    let (sa, so) = (Shape::of(&a), Shape::of(&out));
    let (pa, po) = (a.data, out.data);
    run("repeat_f32", 3, 64, &mut [arg(&sa), arg(&pa), arg(&so), arg(&po)]);
    assert_close(&values(out), &want, 0.0, "repeat");
    // CONCAT, element by element as the CPU copies them, for each element size
    for (ty, dim) in [(Type::F32, 0), (Type::F32, 1), (Type::F16, 2), (Type::I8, 3), (Type::I32, 0), (Type::I64, 1)] {
        let a = c.new_tensor(ty, &[6, 5, 4, 3]);
        let mut ne = [6, 5, 4, 3];
        ne[dim] = 2;
        let b = c.new_tensor(ty, &ne);
        for t in [a, b] {
            // SAFETY: t holds nbytes bytes; any bit pattern is an element to copy.
            let bytes = unsafe { std::slice::from_raw_parts_mut(t.data.cast::<u8>(), t.nbytes()) };
            bytes.iter_mut().for_each(|v| *v = (rng.uniform(0.0, 256.0) as u8) & 0x7b);
        }
        let y = ops::reduce::concat(&mut c, a, b, dim as i32);
        compute_on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (sa, sb, so) = (Shape::of(&a), Shape::of(&b), Shape::of(&out));
        let (pa, pb, po, d, size) = (a.data, b.data, out.data, dim as i32, ty.type_size() as i32);
        run("concat", 3, 64, &mut [arg(&sa), arg(&pa), arg(&sb), arg(&pb), arg(&so), arg(&po), arg(&d), arg(&size)]);
        // SAFETY: both hold y's nbytes bytes.
        let (got, want) = unsafe {
            (
                std::slice::from_raw_parts(out.data.cast::<u8>(), y.nbytes()),
                std::slice::from_raw_parts(y.data.cast::<u8>(), y.nbytes()),
            )
        };
        assert!(got == want, "concat of {} along {dim}: bytes differ", ty.name());
    }
}

#[test]
fn mul_mat_id_vec_picks_each_slots_expert() {
    let mut c = ctx();
    let mut rng = Rng::new(11);
    for (ty, b_cols) in [
        (Type::Q4_0, 1),
        (Type::Q8_0, 3),
        (Type::F16, 1),
        (Type::F32, 3),
        (Type::Q4_K, 1),
        (Type::Q6_K, 3),
        (Type::MXFP4, 1),
    ] {
        // 4 experts of [256, 24]; 3 slots per token, 2 tokens
        let plain = c.new_tensor(Type::F32, &[256, 24, 4]);
        random(plain, &mut rng, -1.0, 1.0);
        let w = c.new_tensor(ty, &[256, 24, 4]);
        let q = ops::shape::cpy(&mut c, plain, w);
        compute_on_cpu(&mut c, q);
        let x = c.new_tensor(Type::F32, &[256, b_cols, 2]);
        random(x, &mut rng, -1.0, 1.0);
        let ids = c.new_tensor(Type::I32, &[3, 2]);
        for (i, e) in [2, 0, 3, 1, 1, 2].into_iter().enumerate() {
            // SAFETY: ids holds six i32.
            unsafe { *ids.data.cast::<i32>().add(i) = e };
        }
        let y = ops::matmul::mul_mat_id(&mut c, w, x, ids);
        let want = on_cpu(&mut c, y);
        let out = twin(&mut c, y);
        let (sw, sx, si, so) = (Shape::of(&w), Shape::of(&x), Shape::of(&ids), Shape::of(&out));
        let (pw, px, pi, po, t) = (w.data, x.data, ids.data, out.data, ty.0);
        // SAFETY: as in `run`: 6 blocks of 4 warps cover 24 rows, 6 (slot, token) pairs.
        assert!(unsafe {
            launch(
                "mul_mat_id_vec",
                [6, 6, 1],
                [128, 1, 1],
                &mut [arg(&sw), arg(&pw), arg(&t), arg(&sx), arg(&px), arg(&si), arg(&pi), arg(&so), arg(&po)],
            )
        });
        let err = nmse(&values(out), &want);
        assert!(err < 5e-4, "mul_mat_id_vec {} with {b_cols} columns of b: nmse {err:e}", ty.name());
    }
}

#[test]
fn mul_mat_id_tiles_group_columns_by_expert() {
    let mut c = ctx();
    let mut rng = Rng::new(12);
    for (ty, b_cols) in [(Type::F32, 2), (Type::Q4_0, 1), (Type::Q6_K, 2)] {
        // 5 experts of [256, 70]: 70 rows leave a partial tile; 2 slots for each of 40 tokens,
        // expert 4 never chosen, expert 0 by 40 columns (two tiles)
        let plain = c.new_tensor(Type::F32, &[256, 70, 5]);
        random(plain, &mut rng, -1.0, 1.0);
        let w = c.new_tensor(ty, &[256, 70, 5]);
        let q = ops::shape::cpy(&mut c, plain, w);
        compute_on_cpu(&mut c, q);
        let x = c.new_tensor(Type::F32, &[256, b_cols, 40]);
        random(x, &mut rng, -1.0, 1.0);
        let (slots, tokens, experts) = (2i64, 40i64, 5i32);
        let ids = c.new_tensor(Type::I32, &[slots, tokens]);
        let chosen: Vec<i32> = (0..tokens as i32).flat_map(|t| [0, 1 + t % 3]).collect();
        // SAFETY: ids holds slots x tokens i32.
        unsafe { std::ptr::copy_nonoverlapping(chosen.as_ptr(), ids.data.cast::<i32>(), chosen.len()) };
        let y = ops::matmul::mul_mat_id(&mut c, w, x, ids);
        let want = on_cpu(&mut c, y);

        let columns = slots * tokens;
        let max_tiles = (columns + 31) / 32 + i64::from(experts);
        let mut table = vec![-1i32; (1 + 3 * max_tiles + columns) as usize + experts as usize];
        let (si, pi, pt, mt) = (Shape::of(&ids), ids.data, table.as_mut_ptr(), max_tiles as i32);
        run("group_by_expert", 1, 256, &mut [arg(&si), arg(&pi), arg(&experts), arg(&mt), arg(&pt)]);
        // expert 0: tiles of 32 and 8 columns; experts 1..3: 14, 13, 13; expert 4: none
        let tiles: Vec<&[i32]> = table[1..1 + 3 * table[0] as usize].chunks(3).collect();
        assert_eq!(tiles, [[0, 0, 32], [0, 32, 8], [1, 40, 14], [2, 54, 13], [3, 67, 13]]);
        let list = &table[1 + 3 * max_tiles as usize..][..columns as usize];
        assert!(list[..40].iter().enumerate().all(|(i, &col)| col == 2 * i as i32), "expert 0's columns in order");

        let out = twin(&mut c, y);
        let (sw, sx, so) = (Shape::of(&w), Shape::of(&x), Shape::of(&out));
        let (pw, px, po, t, s) = (w.data, x.data, out.data, ty.0, slots as i32);
        // SAFETY: as in `run`: 2 tiles of rows by every possible tile of columns.
        assert!(unsafe {
            launch(
                "mul_mat_id_tiles",
                [2, max_tiles as u32, 1],
                [256, 1, 1],
                &mut [arg(&sw), arg(&pw), arg(&t), arg(&sx), arg(&px), arg(&s), arg(&pt), arg(&mt), arg(&so), arg(&po)],
            )
        });
        let err = nmse(&values(out), &want);
        // the CPU rounds the activations of quantized weights to 8 bits, the kernel takes them as given
        let limit = if ty == Type::F32 { 1e-10 } else { 5e-4 };
        assert!(err < limit, "mul_mat_id_tiles {} with {b_cols} columns of b: nmse {err:e}", ty.name());
    }
}
