//! The whole kernel against naive attention in `f64`, and against models of ggml's steps.

use super::*;
use crate::core::context::Context;
use crate::core::ops::attention as ops;
use crate::cpu::kernels::testing::*;
use crate::quants::traits::type_traits;

/// Fills a contiguous tensor of any type with a row converter with uniform values and
/// returns the values it then holds, as f64.
fn fill_any(t: TensorPtr, rng: &mut Rng, lo: f32, hi: f32) -> Vec<f64> {
    if t.type_ == Type::F32 {
        return random(t, rng, lo, hi);
    }
    let n = t.nelements() as usize;
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(lo, hi)).collect();
    let traits = type_traits(t.type_);
    let mut y = vec![0.0f32; n];
    // SAFETY: the tensor is contiguous and allocated, holding n values of its type.
    unsafe {
        (traits.from_float_ref.unwrap())(x.as_ptr(), t.data.cast(), n as i64);
        (traits.to_float.unwrap())(t.data.cast(), y.as_mut_ptr(), n as i64);
    }
    y.into_iter().map(f64::from).collect()
}

struct Case {
    dk: usize,
    dv: usize,
    n_head: usize,
    n_head_kv: usize,
    n_kv: usize,
    n_batch: usize,
    ne3: usize,
    k_type: Type,
    v_type: Type,
    mask: bool,
    max_bias: f32,
    softcap: f32,
    sinks: bool,
    /// Keys before this one are masked for every query.
    hide_before: usize,
}

impl Default for Case {
    fn default() -> Case {
        Case {
            dk: 64,
            dv: 64,
            n_head: 4,
            n_head_kv: 2,
            n_kv: 150,
            n_batch: 3,
            ne3: 1,
            k_type: Type::F16,
            v_type: Type::F16,
            mask: true,
            max_bias: 0.0,
            softcap: 0.0,
            sinks: false,
            hide_before: 0,
        }
    }
}

struct Built {
    node: TensorPtr,
    q: Vec<f64>,
    k: Vec<f64>,
    v: Vec<f64>,
    mask: Option<Vec<f64>>,
    sinks: Option<Vec<f64>>,
}

fn build(c: &mut Context, case: &Case, rng: &mut Rng) -> Built {
    let d = |n: usize| n as i64;
    let q = c.new_tensor(Type::F32, &[d(case.dk), d(case.n_batch), d(case.n_head), d(case.ne3)]);
    let k = c.new_tensor(case.k_type, &[d(case.dk), d(case.n_kv), d(case.n_head_kv), d(case.ne3)]);
    let v = c.new_tensor(case.v_type, &[d(case.dv), d(case.n_kv), d(case.n_head_kv), d(case.ne3)]);
    let qv = fill_any(q, rng, -1.0, 1.0);
    let kv = fill_any(k, rng, -1.0, 1.0);
    let vv = fill_any(v, rng, -1.0, 1.0);
    let (mask, mv) = if case.mask {
        // one mask for every head, per sample of dimension 3; causal-ish with holes
        let m = c.new_tensor(Type::F16, &[d(case.n_kv), d(case.n_batch), 1, d(case.ne3)]);
        let mut vals = Vec::new();
        for s in 0..case.ne3 {
            for i in 0..case.n_batch {
                for j in 0..case.n_kv {
                    let hidden = j > case.n_kv - case.n_batch + i
                        || (j + s) % 7 == 3
                        || (i == 1 && s == 0)
                        || j < case.hide_before;
                    vals.push(if hidden { f32::NEG_INFINITY } else { rng.uniform(-1.0, 0.5) });
                }
            }
        }
        put(m, |i| f64::from(vals[i]));
        (Some(m), Some(values(m)))
    } else {
        (None, None)
    };
    let node = ops::flash_attn_ext(c, q, k, v, mask, 0.125, case.max_bias, case.softcap);
    ops::flash_attn_ext_set_prec(node, Prec::F32);
    let sinks = case.sinks.then(|| {
        let s = c.new_tensor(Type::F32, &[d(case.n_head)]);
        let vals = random(s, rng, -2.0, 2.0);
        ops::flash_attn_ext_add_sinks(node, Some(s));
        vals
    });
    Built { node, q: qv, k: kv, v: vv, mask: mv, sinks }
}

/// softmax(scale q·k + slope mask) · v per query row, in f64, laid out as the result.
fn reference(case: &Case, b: &Built) -> Vec<f64> {
    let alibi = Alibi::new(case.max_bias, case.n_head as i64);
    let (nb, nh, nkv, dk, dv) = (case.n_batch, case.n_head, case.n_kv, case.dk, case.dv);
    let mut out = vec![0.0; dv * nh * nb * case.ne3];
    for i3 in 0..case.ne3 {
        for h in 0..nh {
            let hk = h / (nh / case.n_head_kv);
            for i in 0..nb {
                let q = &b.q[dk * (i + nb * (h + nh * i3))..][..dk];
                let slope = f64::from(alibi.slope(h as u32));
                let mut logits = Vec::new();
                for j in 0..nkv {
                    let m = b.mask.as_ref().map_or(0.0, |m| m[j + nkv * (i + nb * i3)]);
                    let k = &b.k[dk * (j + nkv * (hk + case.n_head_kv * i3))..][..dk];
                    let mut s = 0.125 * q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>();
                    if case.softcap != 0.0 {
                        let c = f64::from(case.softcap);
                        s = c * (s / c).tanh();
                    }
                    logits.push(if m == f64::NEG_INFINITY { m } else { s + slope * m });
                }
                let sink = b.sinks.as_ref().map(|s| s[h]);
                let max = logits.iter().copied().chain(sink).fold(f64::NEG_INFINITY, f64::max);
                if max == f64::NEG_INFINITY {
                    continue;
                }
                let weights: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
                let total: f64 = weights.iter().sum::<f64>() + sink.map_or(0.0, |s| (s - max).exp());
                let o = &mut out[dv * (h + nh * (i + nb * i3))..][..dv];
                for (j, w) in weights.iter().enumerate() {
                    let v = &b.v[dv * (j + nkv * (hk + case.n_head_kv * i3))..][..dv];
                    for (o, v) in o.iter_mut().zip(v) {
                        *o += w * v / total;
                    }
                }
            }
        }
    }
    out
}

fn check(case: &Case, tolerance: f64) {
    for (use_ref, n_threads) in [(false, 3), (true, 2)] {
        let mut c = ctx();
        let mut rng = Rng::new(21);
        let b = build(&mut c, case, &mut rng);
        assert!(flash_attn_ext_supports(&b.node));
        run(&mut c, b.node, flash_attn_ext, n_threads, flash_attn_ext_work_size(&b.node, n_threads), use_ref);
        let got = values(b.node);
        let want = reference(case, &b);
        let e = nmse(&got, &want);
        assert!(
            e < tolerance,
            "K {} V {} bias {} softcap {} sinks {} ref {use_ref}: nmse {e}",
            case.k_type.name(),
            case.v_type.name(),
            case.max_bias,
            case.softcap,
            case.sinks
        );
        if case.mask && !case.sinks && case.n_batch > 1 {
            // query 1 of sample 0 sees no key at all: zeros
            let row = &got[case.dv * case.n_head..][..case.dv];
            assert!(row.iter().all(|&x| x == 0.0));
        }
    }
}

#[test]
fn float_keys_and_values_match_naive_attention() {
    check(&Case { k_type: Type::F32, v_type: Type::F32, ..Case::default() }, 1e-10);
    // binary16 accumulation of F16 values (the rows way)
    check(&Case::default(), 1e-5);
    check(&Case { k_type: Type::F16, v_type: Type::F32, dv: 40, ..Case::default() }, 1e-6);
    check(&Case { k_type: Type::BF16, v_type: Type::BF16, ..Case::default() }, 1e-4);
}

#[test]
fn options_match_naive_attention() {
    let f32s = |case: Case| Case { k_type: Type::F32, v_type: Type::F32, ..case };
    check(&f32s(Case { max_bias: 8.0, n_head: 6, n_head_kv: 3, ..Case::default() }), 1e-10);
    check(&f32s(Case { softcap: 2.0, ..Case::default() }), 1e-10);
    check(&f32s(Case { sinks: true, ..Case::default() }), 1e-10);
    check(&f32s(Case { mask: false, sinks: true, ne3: 2, n_kv: 70, ..Case::default() }), 1e-10);
    check(&f32s(Case { ne3: 2, dk: 40, dv: 24, n_head: 3, n_head_kv: 1, ..Case::default() }), 1e-10);
    check(&Case { sinks: true, max_bias: 4.0, softcap: 10.0, ..Case::default() }, 1e-5);
}

#[test]
fn decoding_splits_the_keys_among_threads() {
    // one query row per head, three threads: the keys are split (in the non-reference run)
    let decode = Case { n_batch: 1, n_head: 2, n_head_kv: 1, n_kv: 700, ..Case::default() };
    // binary16 accumulation over 700 keys
    check(&Case { sinks: true, ..decode }, 3e-5);
    // the first thread's slice is fully masked
    check(&Case { hide_before: 300, ..decode }, 3e-5);
    check(&Case { mask: false, k_type: Type::F32, v_type: Type::F32, ..decode }, 1e-10);
}

#[test]
fn quantized_keys_and_values_match_naive_attention() {
    check(&Case { k_type: Type::Q8_0, v_type: Type::Q8_0, ..Case::default() }, 1e-4);
    check(&Case { k_type: Type::Q4_0, v_type: Type::F16, ..Case::default() }, 1e-4);
    check(&Case { k_type: Type::Q4_1, v_type: Type::Q5_1, ..Case::default() }, 1e-4);
    check(&Case { k_type: Type::Q5_0, v_type: Type::Q4_0, n_kv: 64, ..Case::default() }, 1e-4);
}

#[test]
fn work_size_is_the_reference_plan() {
    let mut c = ctx();
    let mut rng = Rng::new(3);
    let b = build(&mut c, &Case { dk: 128, dv: 64, n_head: 32, ..Case::default() }, &mut rng);
    let prefill = 4 * (64 * 128 + 2 * 64 * 64 + 64 * 64 + 64 * 64 + 64 * 128) * 4;
    assert_eq!(flash_attn_ext_work_size(&b.node, 4), prefill);
    let decode = 4 * (32 * 4 * 66 + 4 * (128 + 128));
    assert!(decode < prefill);
}

/// binary16 bits of values that are binary16 already.
fn bits(x: &[f64]) -> Vec<u16> {
    x.iter().map(|&v| crate::quants::half::fp32_to_fp16(v as f32)).collect()
}

/// ggml's steps for one query row with F16 keys and values (the rows way), on plain vectors:
/// the query rounded to binary16, each score a binary16 dot product, the weighted values
/// accumulated in binary16, with [`HalfMath`]'s scalar models (themselves checked against
/// their definitions in `half`).
fn model_row(half: Half, q: &[f64], keys: &[Vec<u16>], values: &[Vec<u16>], scale: f32, mask: &[f64]) -> Vec<f32> {
    let q16 = bits(&q.iter().map(|&x| f64::from(x as f32)).collect::<Vec<_>>());
    let mut acc = vec![0u16; values[0].len()];
    let (mut max, mut sum) = (f32::NEG_INFINITY, 0.0f32);
    for ((k, v), &m) in keys.iter().zip(values).zip(mask) {
        if m == f64::NEG_INFINITY {
            continue;
        }
        let s = half.dot(k, &q16) * scale + m as f32;
        let (mut grow, mut weight) = (1.0, 1.0);
        if s > max {
            grow = (max - s).exp();
            max = s;
            half.scale(&mut acc, grow);
        } else {
            weight = (s - max).exp();
        }
        half.mad(&mut acc, v, weight);
        sum = grow.mul_add(sum, weight);
    }
    let inv = if sum == 0.0 { 0.0 } else { 1.0 / sum };
    acc.iter().map(|&h| crate::quants::half::fp16_to_fp32(h) * inv).collect()
}

/// Runs `case` on `n_threads` threads and returns the built operands and the result.
fn compute_case(case: &Case, n_threads: usize, use_ref: bool) -> (Built, Vec<f64>) {
    let mut c = ctx();
    let mut rng = Rng::new(21);
    let b = build(&mut c, case, &mut rng);
    run(&mut c, b.node, flash_attn_ext, n_threads, flash_attn_ext_work_size(&b.node, n_threads), use_ref);
    let got = values(b.node);
    (b, got)
}

#[test]
fn small_batches_accumulate_values_in_binary16_as_ggml_does() {
    let half = Half::new(HalfMath::native(), false);
    for dk in [64usize, 128, 192] {
        let case = Case { dk, dv: dk, n_head: 2, n_head_kv: 1, n_kv: 150, ..Case::default() };
        let (nb, nkv) = (case.n_batch, case.n_kv);
        for use_ref in [false, true] {
            let (b, got) = compute_case(&case, 2, use_ref);
            let keys: Vec<Vec<u16>> = (0..nkv).map(|j| bits(&b.k[dk * j..][..dk])).collect();
            let values: Vec<Vec<u16>> = (0..nkv).map(|j| bits(&b.v[dk * j..][..dk])).collect();
            let mask = b.mask.as_ref().unwrap();
            for h in 0..case.n_head {
                for i in 0..nb {
                    let q = &b.q[dk * (i + nb * h)..][..dk];
                    let want = model_row(half, q, &keys, &values, 0.125, &mask[nkv * i..][..nkv]);
                    let out: Vec<f32> = got[dk * (h + case.n_head * i)..][..dk].iter().map(|&x| x as f32).collect();
                    assert_eq!(out, want, "dk {dk} ref {use_ref} head {h} query {i}");
                }
            }
        }
    }
}

#[test]
fn at_64_queries_per_head_the_f32_tiles_take_over() {
    let error = |n_batch: usize, use_ref: bool| {
        let case = Case { n_batch, n_head: 2, n_head_kv: 1, n_kv: 200, ..Case::default() };
        let (b, got) = compute_case(&case, 2, use_ref);
        nmse(&got, &reference(&case, &b))
    };
    // binary16 accumulation below 64 queries, or on the reference path
    let (rows_63, rows_64) = (error(63, false), error(64, true));
    assert!(rows_63 > 1e-9 && rows_64 > 1e-9, "{rows_63} {rows_64}");
    let tiles = error(64, false);
    assert!(tiles < 1e-11, "{tiles}");
    let tiles = error(150, false);
    assert!(tiles < 1e-11, "{tiles}");
}

#[test]
fn the_tiles_take_keys_beyond_the_last_block_of_eight() {
    // 203 keys: a last tile of 11, whose 3 last keys the register blocks leave to the rows
    let case = Case { n_batch: 64, n_head: 2, n_head_kv: 1, n_kv: 203, ..Case::default() };
    let (b, got) = compute_case(&case, 1, false);
    let error = nmse(&got, &reference(&case, &b));
    assert!(error < 1e-11, "{error}");
}

#[test]
fn a_row_does_not_depend_on_the_tile_it_shares() {
    // 100 queries per head cut into different tiles by 1, 2 and 3 threads' chunks
    let case = Case { n_batch: 100, n_head: 3, n_head_kv: 1, n_kv: 130, sinks: true, softcap: 5.0, ..Case::default() };
    let base = compute_case(&case, 1, false).1;
    for n_threads in [2, 3] {
        assert_eq!(compute_case(&case, n_threads, false).1, base, "{n_threads} threads");
    }
    let f32s = Case { k_type: Type::F32, v_type: Type::F32, max_bias: 8.0, ..case };
    let base = compute_case(&f32s, 1, false).1;
    assert_eq!(compute_case(&f32s, 3, false).1, base);
}

#[test]
fn the_rows_way_is_bit_identical_on_simd_and_scalar() {
    let cases = [
        Case::default(),
        Case { dk: 128, dv: 128, sinks: true, softcap: 10.0, max_bias: 8.0, ..Case::default() },
        Case { dk: 256, dv: 136, k_type: Type::F16, v_type: Type::F32, sinks: true, ..Case::default() },
        Case { dk: 128, dv: 128, n_batch: 1, n_kv: 300, mask: false, ..Case::default() },
    ];
    for case in &cases {
        let simd = compute_case(case, 3, false).1;
        let scalar = compute_case(case, 2, true).1;
        assert_eq!(simd, scalar, "dk {} dv {}", case.dk, case.dv);
    }
}

#[test]
fn decoding_over_one_thread_is_the_rows_way() {
    // one query per head and 700 keys: split among the threads (one slice here), merged
    for case in [
        Case { dk: 128, dv: 128, n_batch: 1, n_head: 4, n_head_kv: 2, n_kv: 700, sinks: true, ..Case::default() },
        Case { n_batch: 1, n_head: 2, n_kv: 600, k_type: Type::F32, v_type: Type::F32, ..Case::default() },
    ] {
        let split = compute_case(&case, 1, false).1;
        let rows = compute_case(&case, 1, true).1;
        if case.k_type == Type::F16 {
            assert_eq!(split, rows);
        } else {
            // F32 keys: the SIMD and scalar dot products sum in different orders
            assert!(nmse(&split, &rows) < 1e-12);
        }
    }
}
