//! A llama-style block built with the op constructors (embedding lookup, RMS norm, RoPE, KV
//! cache stores, attention both as FLASH_ATTN_EXT and as MUL_MAT + SOFT_MAX, SwiGLU, output
//! rows, expert-style routing, a cast, and a few ops of other families: cumulative sums, a
//! causal mask, padding, 1-d and 2-d unfolding), computed on the CPU here and on the server: every op
//! llama.cpp sends for such models passes the server's checks, and the results are the local
//! ones bit for bit.

use std::collections::HashMap;

use super::*;
use crate::backend::buffer;
use crate::backend::host_buffer::cpu_buffer_type;
use crate::backend::tallocr;
use crate::core::context::{Context, InitParams};
use crate::core::graph::cgraph::new_graph_custom;
use crate::core::op::{GluOp, UnaryOp};
use crate::core::ops::rope::{RopeParams, rope_type};
use crate::core::ops::{
    attention, conv, elementwise as ew, glu, matmul, norm, pool, reduce, rope, rows, shape, softmax, sort, unary,
};
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;
use crate::quants::half::fp32_to_fp16;

const N_EMBD: i64 = 64;
const N_HEAD: i64 = 4;
const N_HEAD_KV: i64 = 2;
const HEAD: i64 = 16;
const N_TOKENS: i64 = 5;
const N_KV: i64 = 16;
const N_VOCAB: i64 = 32;
const N_FF: i64 = 96;

/// Deterministic values in [-0.5, 0.5).
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| (((i * 7919 + seed * 104729) % 1000) as f32 / 1000.0) - 0.5).collect()
}

fn bytes_of_type(t: TensorPtr, seed: usize) -> Vec<u8> {
    let n = t.nelements() as usize;
    match t.type_ {
        Type::F16 => values(n, seed).iter().flat_map(|&v| fp32_to_fp16(v).to_le_bytes()).collect(),
        _ => f32_bytes(&values(n, seed)),
    }
}

#[test]
fn a_llama_block_is_served_and_matches_the_local_cpu() {
    let mut ctx = Context::new(InitParams { mem_size: 1 << 22, mem_buffer: std::ptr::null_mut(), no_alloc: true });
    let c = &mut *ctx;
    let weight = |c: &mut Context, ty: Type, ne: &[i64]| c.new_tensor(ty, ne);
    let tokens = c.new_tensor(Type::I32, &[N_TOKENS]);
    let pos = c.new_tensor(Type::I32, &[N_TOKENS]);
    let kv_idxs = c.new_tensor(Type::I64, &[N_TOKENS]);
    let mask = c.new_tensor(Type::F16, &[N_KV, N_TOKENS]);
    let out_ids = c.new_tensor(Type::I32, &[2]);
    let tok_embd = weight(c, Type::F16, &[N_EMBD, N_VOCAB]);
    let attn_norm = weight(c, Type::F32, &[N_EMBD]);
    let wq = weight(c, Type::F16, &[N_EMBD, N_EMBD]);
    let wk = weight(c, Type::F16, &[N_EMBD, HEAD * N_HEAD_KV]);
    let wv = weight(c, Type::F16, &[N_EMBD, HEAD * N_HEAD_KV]);
    let wo = weight(c, Type::F32, &[N_EMBD, N_EMBD]);
    let ffn_norm = weight(c, Type::F32, &[N_EMBD]);
    let w_gate = weight(c, Type::F16, &[N_EMBD, N_FF]);
    let w_up = weight(c, Type::F16, &[N_EMBD, N_FF]);
    let w_down = weight(c, Type::F16, &[N_FF, N_EMBD]);
    let out_norm = weight(c, Type::F32, &[N_EMBD]);
    let output = weight(c, Type::F16, &[N_EMBD, N_VOCAB]);
    let k_cache = c.new_tensor(Type::F16, &[HEAD * N_HEAD_KV, N_KV]);
    let v_cache = c.new_tensor(Type::F16, &[HEAD * N_HEAD_KV, N_KV]);
    let kernel_1d = weight(c, Type::F16, &[3, 4, 5]);
    let kernel_2d = weight(c, Type::F16, &[3, 2, 2, 4]);

    let x = rows::get_rows(c, tok_embd, tokens);
    let cur = norm::rms_norm(c, x, 1e-5);
    let cur = ew::mul(c, cur, attn_norm);
    let rope_params = RopeParams::new(HEAD as i32, rope_type::NEOX);
    let q = matmul::mul_mat(c, wq, cur);
    let q = shape::reshape_3d(c, q, HEAD, N_HEAD, N_TOKENS);
    let q = rope::rope_ext(c, q, pos, None, &rope_params);
    let k = matmul::mul_mat(c, wk, cur);
    let k = shape::reshape_3d(c, k, HEAD, N_HEAD_KV, N_TOKENS);
    let k = rope::rope_ext(c, k, pos, None, &rope_params);
    let v = matmul::mul_mat(c, wv, cur);
    let k_flat = shape::reshape_2d(c, k, HEAD * N_HEAD_KV, N_TOKENS);
    let k_store = rows::set_rows(c, k_cache, k_flat, kv_idxs);
    let v_store = rows::set_rows(c, v_cache, v, kv_idxs);
    let row = 2 * (HEAD * N_HEAD_KV) as usize;
    let k_view = shape::view_3d(c, k_cache, HEAD, N_HEAD_KV, N_KV, 2 * HEAD as usize, row, 0);
    let v_view = shape::view_3d(c, v_cache, HEAD, N_HEAD_KV, N_KV, 2 * HEAD as usize, row, 0);
    let qp = shape::permute(c, q, 0, 2, 1, 3);
    let kp = shape::permute(c, k_view, 0, 2, 1, 3);
    let vp = shape::permute(c, v_view, 0, 2, 1, 3);
    let scale = 1.0 / (HEAD as f32).sqrt();
    let fa = attention::flash_attn_ext(c, qp, kp, vp, Some(mask), scale, 0.0, 0.0);
    let fa = shape::reshape_2d(c, fa, N_EMBD, N_TOKENS);
    let kq = matmul::mul_mat(c, kp, qp);
    let kq = softmax::soft_max_ext(c, kq, Some(mask), scale, 0.0);
    let vt = shape::permute(c, vp, 1, 0, 2, 3);
    let vt = shape::cont(c, vt);
    let kqv = matmul::mul_mat(c, vt, kq);
    let merged = shape::permute(c, kqv, 0, 2, 1, 3);
    let merged = shape::cont(c, merged);
    let merged = shape::reshape_2d(c, merged, N_EMBD, N_TOKENS);
    let attn = ew::add(c, fa, merged);
    let attn = matmul::mul_mat(c, wo, attn);
    let x = ew::add(c, x, attn);
    let cur = norm::rms_norm(c, x, 1e-5);
    let cur = ew::mul(c, cur, ffn_norm);
    let gate = matmul::mul_mat(c, w_gate, cur);
    let up = matmul::mul_mat(c, w_up, cur);
    let h = glu::glu_split(c, gate, up, GluOp::SWIGLU);
    let down = matmul::mul_mat(c, w_down, h);
    let x = ew::add(c, x, down);
    let x = ew::scale(c, x, 0.5);
    let sel = rows::get_rows(c, x, out_ids);
    let cur = norm::rms_norm(c, sel, 1e-5);
    let cur = ew::mul(c, cur, out_norm);
    let logits = matmul::mul_mat(c, output, cur);
    // routing as mixture-of-experts layers do it: the top 2 of a softmax, their weights
    let probs = softmax::soft_max_ext(c, logits, None, 1.0, 0.0);
    let top = sort::argsort_top_k(c, probs, 2);
    let probs3 = shape::reshape_3d(c, probs, 1, N_VOCAB, 2);
    let picked = rows::get_rows(c, probs3, top);
    let picked = shape::reshape_2d(c, picked, 2, 2);
    let picked_sum = reduce::sum_rows(c, picked);
    // the smaller element-wise ops
    let silu = unary::unary(c, sel, UnaryOp::SILU);
    let tiled = reduce::repeat(c, out_norm, sel);
    let twice = ew::add(c, tiled, tiled);
    let ratio = ew::div(c, silu, twice);
    let joined = reduce::concat(c, ratio, sel, 1);
    let clamped = ew::clamp(c, joined, -0.25, 0.25);
    let half = shape::cast(c, clamped, Type::F16);
    // ops of other model families: running sums, masks, paddings, Whisper's and vision
    // encoders' unfolded convolutions (the kernels' weights give only their shapes)
    let sums = reduce::cumsum(c, sel);
    let masked = softmax::diag_mask_inf(c, sums, 3);
    let best = reduce::argmax(c, masked);
    let padded = pool::pad_ext(c, sel, 1, 3, 0, 1, 0, 0, 0, 0);
    let image_1d = shape::reshape_3d(c, padded, 17, 4, 3);
    let unfolded_1d = conv::im2col(c, kernel_1d, image_1d, 2, 0, 1, 0, 1, 0, false, Type::F32);
    let image_2d = shape::reshape_4d(c, sel, 8, 8, 2, 1);
    let unfolded_2d = conv::im2col(c, kernel_2d, image_2d, 1, 2, 1, 0, 1, 2, true, Type::F16);

    let graph = new_graph_custom(c, 512, false);
    let outputs = [k_store, v_store, logits, picked_sum, half, best, unfolded_1d, unfolded_2d];
    for t in outputs {
        graph.get_mut().build_forward_expand(t);
    }

    // local: the CPU backend, one thread as the server's
    let local = tallocr::alloc_ctx_tensors(c, cpu_buffer_type()).expect("a local buffer");
    local.clear(0);
    let dev = cpu_device();
    // SAFETY: the CPU device makes live backends.
    let backend = dev.init_backend(None).expect("a backend");
    super::super::set_n_threads(dev, backend, 1);

    // remote: a buffer of the same size, every tensor at the same offset
    let srv = TestServer::start(None);
    let mut client = srv.client();
    let remote = client.alloc(local.size() as u64);
    client.request(Command::BufferClear, &[remote.handle.to_le_bytes().as_slice(), &[0]].concat());
    let local_base = local.base() as u64;
    let wire: HashMap<u64, WireTensor> = c
        .tensors()
        .map(|t| {
            let at = remote.base + (t.data as u64 - local_base);
            (crate::rpc::wire::address(&t), WireTensor::describe(&t, Some((remote.handle, at))))
        })
        .collect();

    let inputs: Vec<(TensorPtr, Vec<u8>)> = vec![
        (tokens, [3i32, 0, 31, 7, 3].iter().flat_map(|v| v.to_le_bytes()).collect()),
        (pos, (0..N_TOKENS as i32).flat_map(|p| p.to_le_bytes()).collect()),
        (kv_idxs, (0..N_TOKENS).flat_map(|p| p.to_le_bytes()).collect()),
        (out_ids, [4i32, 1].iter().flat_map(|v| v.to_le_bytes()).collect()),
        (
            mask,
            (0..N_TOKENS)
                .flat_map(|t| (0..N_KV).map(move |kv| if kv <= t { 0u16 } else { 0xfc00 }))
                .flat_map(|h| h.to_le_bytes())
                .collect(),
        ),
    ];
    let weights =
        [tok_embd, attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down, out_norm, output, kernel_1d, kernel_2d];
    let data: Vec<(TensorPtr, Vec<u8>)> =
        inputs.into_iter().chain(weights.iter().enumerate().map(|(i, &w)| (w, bytes_of_type(w, i)))).collect();
    for (t, bytes) in &data {
        buffer::tensor_set(*t, bytes, 0);
        client.set(&wire[&crate::rpc::wire::address(t)], 0, bytes);
    }

    assert_eq!(backend.graph_compute(graph.get_mut()), Status::SUCCESS);
    let nodes: Vec<&WireTensor> = graph.nodes().map(|n| &wire[&crate::rpc::wire::address(&n)]).collect();
    let all: Vec<&WireTensor> = wire.values().collect();
    client.compute(&nodes, &all);

    for t in outputs.into_iter().chain([k_cache, v_cache, x, h, kq, fa, top, masked]) {
        let mut here = vec![0u8; t.nbytes()];
        buffer::tensor_get(t, &mut here, 0);
        let there = client.get(&wire[&crate::rpc::wire::address(&t)], 0, t.nbytes() as u64);
        assert!(
            here.iter().any(|&b| b != 0),
            "{} ({} {:?} {}) is all zeros",
            t.name(),
            t.op.name(),
            t.ne,
            t.type_.name()
        );
        assert!(here == there, "{} ({}) differs", t.name(), t.op.name());
    }
    // the same graph again, for new tokens at the next positions
    let next: Vec<u8> = (N_TOKENS as i32..2 * N_TOKENS as i32).flat_map(|p| p.to_le_bytes()).collect();
    buffer::tensor_set(pos, &next, 0);
    client.set(&wire[&crate::rpc::wire::address(&pos)], 0, &next);
    assert_eq!(backend.graph_compute(graph.get_mut()), Status::SUCCESS);
    client.request(Command::GraphRecompute, &0u32.to_le_bytes());
    let mut here = vec![0u8; logits.nbytes()];
    buffer::tensor_get(logits, &mut here, 0);
    assert_eq!(client.get(&wire[&crate::rpc::wire::address(&logits)], 0, logits.nbytes() as u64), here);
    drop(client);
    srv.check_alive("after the block");
    local.free();
    backend.free();
}
