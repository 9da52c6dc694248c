//! FLASH_ATTN_EXT on the emulated device against the CPU backend.

use super::*;
use crate::core::ops::attention::{flash_attn_ext, flash_attn_ext_add_sinks};
use crate::cpu::kernels::testing::put;

/// `struct attention_params` of kernels/attention.cu.
#[repr(C)]
struct KernelAttention {
    scale: f32,
    max_bias: f32,
    logit_softcap: f32,
    n_head_log2: i32,
    m0: f32,
    m1: f32,
}

struct Case {
    dk: i64,
    dv: i64,
    n_q: i64,
    n_head: i64,
    n_head_kv: i64,
    n_kv: i64,
    n_seq: i64,
    kv_type: Type,
    mask: bool,
    max_bias: f32,
    softcap: f32,
    sinks: bool,
    /// Q, K and V stored head-major and permuted into place, as llama.cpp's caches are.
    permuted: bool,
}

impl Default for Case {
    fn default() -> Case {
        Case {
            dk: 64,
            dv: 64,
            n_q: 3,
            n_head: 4,
            n_head_kv: 2,
            n_kv: 150,
            n_seq: 1,
            kv_type: Type::F16,
            mask: true,
            max_bias: 0.0,
            softcap: 0.0,
            sinks: false,
            permuted: false,
        }
    }
}

/// A tensor of `ty` with extents `ne`, random in [-1, 1) (quantized by the CPU for a block
/// type); with `permuted`, dimensions 1 and 2 swapped in memory.
fn operand(c: &mut Context, rng: &mut Rng, ty: Type, ne: [i64; 4], permuted: bool) -> TensorPtr {
    let stored = if permuted { [ne[0], ne[2], ne[1], ne[3]] } else { ne };
    let t = c.new_tensor(ty, &stored);
    if ty.blck_size() > 1 {
        let plain = c.new_tensor(Type::F32, &stored);
        random(plain, rng, -1.0, 1.0);
        let q = ops::shape::cpy(c, plain, t);
        compute_on_cpu(c, q);
    } else {
        random(t, rng, -1.0, 1.0);
    }
    if permuted { ops::shape::permute(c, t, 0, 2, 1, 3) } else { t }
}

/// The node of `case` computed by the kernel and by the CPU: the kernel's values, then the
/// CPU's.
fn attend(case: &Case, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut c = ctx();
    let mut rng = Rng::new(seed);
    let q = operand(&mut c, &mut rng, Type::F32, [case.dk, case.n_q, case.n_head, case.n_seq], case.permuted);
    let k = operand(&mut c, &mut rng, case.kv_type, [case.dk, case.n_kv, case.n_head_kv, case.n_seq], case.permuted);
    let v = operand(&mut c, &mut rng, case.kv_type, [case.dv, case.n_kv, case.n_head_kv, case.n_seq], case.permuted);
    let mask = case.mask.then(|| {
        // rows padded past n_q as llama.cpp pads them; causal, with holes, and query row 1
        // of sequence 0 sees nothing
        let rows = case.n_q + 5;
        let m = c.new_tensor(Type::F16, &[case.n_kv, rows, 1, case.n_seq]);
        let (n_kv, n_q) = (case.n_kv as usize, case.n_q as usize);
        let vals: Vec<f32> = (0..m.nelements() as usize)
            .map(|i| {
                let (j, row, s) = (i % n_kv, (i / n_kv) % rows as usize, i / (n_kv * rows as usize));
                let hidden = j + n_q > n_kv + row || (j + s) % 7 == 3 || (row == 1 && s == 0);
                if hidden { f32::NEG_INFINITY } else { rng.uniform(-1.0, 0.5) }
            })
            .collect();
        put(m, |i| f64::from(vals[i]));
        m
    });
    let scale = 1.0 / (case.dk as f32).sqrt();
    let y = flash_attn_ext(&mut c, q, k, v, mask, scale, case.max_bias, case.softcap);
    let sinks = case.sinks.then(|| {
        let s = c.new_tensor(Type::F32, &[case.n_head]);
        random(s, &mut rng, -2.0, 2.0);
        flash_attn_ext_add_sinks(y, Some(s));
        s
    });
    let want = on_cpu(&mut c, y);

    let out = twin(&mut c, y);
    let n_head_log2 = 1i32 << (case.n_head as u32).ilog2();
    let p = KernelAttention {
        scale,
        max_bias: case.max_bias,
        logit_softcap: case.softcap,
        n_head_log2,
        m0: 2f32.powf(-case.max_bias / n_head_log2 as f32),
        m1: 2f32.powf(-case.max_bias / 2.0 / n_head_log2 as f32),
    };
    let none = c.new_tensor(Type::F16, &[1]);
    let m = mask.unwrap_or(none);
    let (sq, sk, sv, sm, so) = (Shape::of(&q), Shape::of(&k), Shape::of(&v), Shape::of(&m), Shape::of(&out));
    let (pq, pk, pv, po) = (q.data, k.data, v.data, out.data);
    let pm = mask.map_or(std::ptr::null_mut(), |m| m.data);
    let ps = sinks.map_or(std::ptr::null_mut(), |s| s.data);
    let t = case.kv_type.0;
    run(
        "flash_attn_ext",
        5,
        64,
        &mut [
            arg(&p),
            arg(&sq),
            arg(&pq),
            arg(&sk),
            arg(&pk),
            arg(&t),
            arg(&sv),
            arg(&pv),
            arg(&t),
            arg(&sm),
            arg(&pm),
            arg(&ps),
            arg(&so),
            arg(&po),
        ],
    );
    (values(out), want)
}

fn check(case: &Case, what: &str) {
    let (got, want) = attend(case, 12);
    // the CPU rounds the query to binary16 for F16 keys (to Q8_0 for Q8_0 keys) and sums
    // F16 values in binary16: NMSE 1e-6 .. 3e-6 (dropping the sinks: 7e-4, the mask: 0.6)
    let err = nmse(&got, &want);
    let tol = if case.kv_type == Type::F32 { 1e-10 } else { 2e-5 };
    assert!(err < tol, "flash_attn_ext {what}: nmse {err:e}");
    if case.mask && !case.sinks {
        // query row 1 of sequence 0 sees no key: zeros, for every head
        let row = &got[(case.dv * case.n_head) as usize..][..(case.dv * case.n_head) as usize];
        assert!(row.iter().all(|&x| x == 0.0), "flash_attn_ext {what}: a row that sees nothing");
    }
}

#[test]
fn flash_attn_ext_head_sizes_and_types() {
    check(&Case::default(), "D 64, F16");
    check(&Case { dk: 128, dv: 128, kv_type: Type::F32, ..Case::default() }, "D 128, F32");
    check(&Case { dk: 192, dv: 128, n_head: 6, n_head_kv: 1, ..Case::default() }, "D 192/128, 6 heads on 1");
    check(&Case { dk: 576, dv: 512, n_q: 2, n_head: 2, n_head_kv: 1, n_kv: 70, ..Case::default() }, "D 576/512");
    check(&Case { kv_type: Type::Q8_0, ..Case::default() }, "D 64, Q8_0");
}

#[test]
fn flash_attn_ext_options() {
    check(&Case { max_bias: 8.0, n_head: 6, n_head_kv: 3, ..Case::default() }, "ALiBi");
    check(&Case { softcap: 2.0, kv_type: Type::F32, ..Case::default() }, "soft-capped");
    check(&Case { sinks: true, ..Case::default() }, "sinks");
    check(&Case { sinks: true, mask: false, n_seq: 2, n_kv: 40, ..Case::default() }, "sinks, no mask, 2 sequences");
    check(&Case { n_seq: 2, permuted: true, max_bias: 4.0, softcap: 10.0, ..Case::default() }, "permuted, 2 sequences");
}
