//! Malformed and malicious graphs: counts, ids, links, ops, shapes, parameters, indices and
//! chains long enough to overflow a recursive rebuild.

use super::*;
use crate::core::op::UnaryOp;

/// Sends the graph `build` makes (given a fresh 4 KiB buffer); the server must refuse it.
fn refuses_graph(srv: &TestServer, what: &str, build: impl FnOnce(&mut Client, &Remote) -> Vec<u8>) {
    srv.refuses(what, |c| {
        let r = c.alloc(4096);
        let payload = build(c, &r);
        let _ = c.send(Command::GraphCompute as u8, &payload);
    });
}

/// `a + b` in `r`: a and b of 4 floats, the sum after them.
fn sum(r: &Remote) -> (WireTensor, WireTensor, WireTensor) {
    let a = r.tensor(Type::F32, [4, 1, 1, 1], 0);
    let b = r.tensor(Type::F32, [4, 1, 1, 1], 64);
    (a, b, op(r.tensor(Type::F32, [4, 1, 1, 1], 128), Op::ADD, &[&a, &b]))
}

/// A graph of `nodes` with its tensors, written field by field with the counts given.
fn raw_graph(device: u32, n_nodes: u32, nodes: &[u64], n_tensors: u32, tensors: &[&WireTensor]) -> Vec<u8> {
    let mut w = Writer::default();
    w.u32(device).u32(n_nodes);
    nodes.iter().for_each(|&n| _ = w.u64(n));
    w.u32(n_tensors);
    tensors.iter().for_each(|t| _ = w.tensor(t));
    w.into_bytes()
}

fn with_params(mut t: WireTensor, params: &[i32]) -> WireTensor {
    t.op_params[..params.len()].copy_from_slice(params);
    t
}

#[test]
fn counts_ids_and_links_are_checked() {
    let srv = TestServer::start(None);
    // the graph these cases break is computed
    let mut c = srv.client();
    let r = c.alloc(4096);
    let (a, b, s) = sum(&r);
    c.set_f32(&a, &[1.0; 4]);
    c.set_f32(&b, &[2.0; 4]);
    c.compute(&[&s], &[&a, &b, &s]);
    assert_eq!(c.get_f32(&s), [3.0; 4]);
    drop(c);

    refuses_graph(&srv, "no payload", |_, _| vec![]);
    refuses_graph(&srv, "a device only", |_, _| vec![0; 4]);
    refuses_graph(&srv, "device 1", |_, r| {
        let (a, b, s) = sum(r);
        graph_payload(1, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "nodes overstated", |_, r| {
        let (a, b, s) = sum(r);
        raw_graph(0, 3, &[s.id], 3, &[&a, &b, &s])
    });
    refuses_graph(&srv, "2^32 - 1 nodes", |_, r| {
        let (a, b, s) = sum(r);
        raw_graph(0, u32::MAX, &[s.id], 3, &[&a, &b, &s])
    });
    for (what, n) in [("tensors understated", 2), ("tensors overstated", 4), ("2^32 - 1 tensors", u32::MAX)] {
        refuses_graph(&srv, what, |_, r| {
            let (a, b, s) = sum(r);
            raw_graph(0, 1, &[s.id], n, &[&a, &b, &s])
        });
    }
    refuses_graph(&srv, "node id 0", |_, r| {
        let (a, b, s) = sum(r);
        raw_graph(0, 2, &[s.id, 0], 3, &[&a, &b, &s])
    });
    refuses_graph(&srv, "an unknown node", |_, r| {
        let (a, b, s) = sum(r);
        raw_graph(0, 1, &[0xdead0], 3, &[&a, &b, &s])
    });
    refuses_graph(&srv, "a node twice", |_, r| {
        let (a, b, s) = sum(r);
        raw_graph(0, 2, &[s.id, s.id], 3, &[&a, &b, &s])
    });
    refuses_graph(&srv, "a tensor id twice", |_, r| {
        let (a, b, s) = sum(r);
        graph_payload(0, &[&s], &[&a, &b, &a, &s])
    });
    refuses_graph(&srv, "a tensor with id 0", |_, r| {
        let (a, b, s) = sum(r);
        let zero = WireTensor { id: 0, ..a };
        graph_payload(0, &[&s], &[&a, &b, &zero, &s])
    });
    refuses_graph(&srv, "an unknown source", |_, r| {
        let (a, b, mut s) = sum(r);
        s.src[1] = 0xbeef0;
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "an unknown view source", |_, r| {
        let (a, b, mut s) = sum(r);
        s.view_src = 0xbeef0;
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "a cycle", |_, r| {
        let (a, b, s) = sum(r);
        let t = op(r.tensor(Type::F32, [4, 1, 1, 1], 192), Op::ADD, &[&s, &b]);
        let s = WireTensor { src: [t.id, b.id, 0, 0, 0, 0, 0, 0, 0, 0], ..s };
        graph_payload(0, &[&s, &t], &[&a, &b, &s, &t])
    });
    refuses_graph(&srv, "a view of itself", |_, r| {
        let (a, b, mut s) = sum(r);
        s.view_src = s.id;
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "a view away from its offset", |_, r| {
        let (a, b, s) = sum(r);
        let mut v = op(r.tensor(Type::F32, [2, 1, 1, 1], 8), Op::VIEW, &[&a]);
        (v.view_src, v.view_offs) = (a.id, 4);
        let s = op(s, Op::ADD, &[&v, &b]);
        graph_payload(0, &[&v, &s], &[&a, &b, &v, &s])
    });
    refuses_graph(&srv, "a view in another buffer", |c, r| {
        let other = c.alloc(64);
        let (a, b, s) = sum(r);
        let mut v = op(other.tensor(Type::F32, [4, 1, 1, 1], 0), Op::VIEW, &[&a]);
        v.view_src = a.id;
        graph_payload(0, &[&v, &s], &[&a, &b, &v, &s])
    });
    refuses_graph(&srv, "a node without data", |_, r| {
        let (a, b, s) = sum(r);
        let s = WireTensor { buffer: 0, data: 0, ..s };
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "a source without data", |_, r| {
        let (a, b, s) = sum(r);
        let b = WireTensor { buffer: 0, data: 0, ..b };
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "a buffer without data", |_, r| {
        let (a, b, s) = sum(r);
        let a = WireTensor { data: 0, ..a };
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "misaligned f32 data", |_, r| {
        let (a, b, s) = sum(r);
        let a = WireTensor { data: a.data + 2, ..a };
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "a node outside its buffer", |_, r| {
        let (a, b, s) = sum(r);
        let s = WireTensor { data: r.base + r.size - 8, ..s };
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
}

#[test]
fn ops_shapes_and_parameters_are_checked() {
    let srv = TestServer::start(None);
    for (what, bad_op) in
        [("CUSTOM", Op::CUSTOM), ("MAP_CUSTOM1", Op::MAP_CUSTOM1), ("CONV_2D", Op::CONV_2D), ("op 101", Op(101))]
    {
        refuses_graph(&srv, what, |_, r| {
            let (a, b, s) = sum(r);
            let s = WireTensor { op: bad_op.0 as u32, ..s };
            graph_payload(0, &[&s], &[&a, &b, &s])
        });
    }
    refuses_graph(&srv, "a custom op as a source only", |_, r| {
        let (a, b, s) = sum(r);
        let a = WireTensor { op: Op::CUSTOM.0 as u32, ..a };
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "MUL_MAT of f16 activations by f32 weights (not on the CPU)", |_, r| {
        let w = r.tensor(Type::F32, [4, 3, 1, 1], 0);
        let x = r.tensor(Type::F16, [4, 2, 1, 1], 64);
        let y = op(r.tensor(Type::F32, [3, 2, 1, 1], 128), Op::MUL_MAT, &[&w, &x]);
        graph_payload(0, &[&y], &[&w, &x, &y])
    });
    refuses_graph(&srv, "ADD of a [3] to a [4]", |_, r| {
        let (a, _, s) = sum(r);
        let b = r.tensor(Type::F32, [3, 1, 1, 1], 64);
        let s = op(s, Op::ADD, &[&a, &b]);
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "ADD into a larger result", |_, r| {
        let (a, b, _) = sum(r);
        let s = op(r.tensor(Type::F32, [8, 1, 1, 1], 128), Op::ADD, &[&a, &b]);
        graph_payload(0, &[&s], &[&a, &b, &s])
    });
    refuses_graph(&srv, "MUL_MAT into the wrong shape", |_, r| {
        let w = r.tensor(Type::F32, [4, 3, 1, 1], 0);
        let x = r.tensor(Type::F32, [4, 2, 1, 1], 64);
        let y = op(r.tensor(Type::F32, [4, 2, 1, 1], 128), Op::MUL_MAT, &[&w, &x]);
        graph_payload(0, &[&y], &[&w, &x, &y])
    });
    refuses_graph(&srv, "GET_ROWS into the wrong shape", |_, r| {
        let table = r.tensor(Type::F32, [2, 4, 1, 1], 0);
        let ids = r.tensor(Type::I32, [2, 1, 1, 1], 64);
        let rows = op(r.tensor(Type::F32, [2, 8, 1, 1], 128), Op::GET_ROWS, &[&table, &ids]);
        graph_payload(0, &[&rows], &[&table, &ids, &rows])
    });
    for eps in [-1.0f32, f32::NAN] {
        refuses_graph(&srv, &format!("RMS_NORM with eps {eps}"), |_, r| {
            let (a, _, s) = sum(r);
            let n = with_params(op(s, Op::RMS_NORM, &[&a]), &[eps.to_bits() as i32]);
            graph_payload(0, &[&n], &[&a, &n])
        });
    }
    refuses_graph(&srv, "ROPE of 8 dimensions of rows of 4", |_, r| {
        let x = r.tensor(Type::F32, [4, 1, 2, 1], 0);
        let pos = r.tensor(Type::I32, [2, 1, 1, 1], 64);
        let y = with_params(op(r.tensor(Type::F32, [4, 1, 2, 1], 128), Op::ROPE, &[&x, &pos]), &[0, 8, 0]);
        graph_payload(0, &[&y], &[&x, &pos, &y])
    });
    refuses_graph(&srv, "ROPE with too few positions", |_, r| {
        let x = r.tensor(Type::F32, [4, 1, 2, 1], 0);
        let pos = r.tensor(Type::I32, [1, 1, 1, 1], 64);
        let y = with_params(op(r.tensor(Type::F32, [4, 1, 2, 1], 128), Op::ROPE, &[&x, &pos]), &[0, 4, 0]);
        graph_payload(0, &[&y], &[&x, &pos, &y])
    });
    // ACC and SET: b (2 x 2 floats) into the window of a (4 x 4 floats, 64 bytes)
    for (op_, params) in [
        (Op::ACC, [64, 64, 64, 0]),
        (Op::ACC, [16, 32, 32, 56]),
        (Op::ACC, [-1, 0, 0, 0]),
        (Op::ACC, [16, 16, 16, -8]),
        (Op::SET, [16, 64, 64, 60]),
        // inside the tensor, but at a misaligned offset or stride (found by the graph fuzzer)
        (Op::ACC, [16, 64, 64, 2]),
        (Op::SET, [18, 64, 64, 0]),
        (Op::SET, [i32::MAX, i32::MAX, i32::MAX, i32::MAX]),
        // inside the tensor, but with rows that overlap (the graph fuzzer: 2^30 elements in a
        // window of strides 0)
        (Op::ACC, [0, 64, 64, 0]),
        (Op::SET, [4, 64, 64, 0]),
    ] {
        refuses_graph(&srv, &format!("{} with window {params:?}", op_.name()), |_, r| {
            let a = r.tensor(Type::F32, [4, 4, 1, 1], 0);
            let b = r.tensor(Type::F32, [2, 2, 1, 1], 64);
            let y = with_params(op(r.tensor(Type::F32, [4, 4, 1, 1], 128), op_, &[&a, &b]), &params);
            graph_payload(0, &[&y], &[&a, &b, &y])
        });
    }
    // found by the graph fuzzer: a result naming 2^30 elements in 48 bytes ran for seconds
    refuses_graph(&srv, "a result whose elements overlap", |_, r| {
        let mut a = r.tensor(Type::F32, [4, 64, 64, 64], 0);
        a.nb = [4, 0, 0, 0];
        let mut y = op(r.tensor(Type::F32, [4, 64, 64, 64], 64), Op::UNARY, &[&a]);
        y.nb = [4, 16, 16, 16];
        y.op_params[0] = UnaryOp::NEG.0;
        graph_payload(0, &[&y], &[&a, &y])
    });
    // found by the graph fuzzer: sources naming 2^28 values in a 64 KiB buffer made the CPU
    // backend plan gigabytes of scratch for a product
    refuses_graph(&srv, "a source whose elements overlap", |_, r| {
        let mut a = r.tensor(Type::F32, [4, 64, 1, 1], 0);
        a.nb = [4, 0, 0, 0];
        let mut y = op(r.tensor(Type::F32, [4, 64, 1, 1], 64), Op::UNARY, &[&a]);
        y.op_params[0] = UnaryOp::NEG.0;
        graph_payload(0, &[&y], &[&a, &y])
    });
    // found by fuzzing (fuzz/fuzz_targets/graph.rs): SET from rows with gaps reached the CPU
    // kernel's assertion that they are packed
    refuses_graph(&srv, "SET from rows with gaps", |_, r| {
        let a = r.tensor(Type::F32, [4, 4, 1, 1], 0);
        let mut b = r.tensor(Type::F32, [2, 2, 1, 1], 64);
        b.nb = [8, 16, 32, 32];
        let y = with_params(op(r.tensor(Type::F32, [4, 4, 1, 1], 128), Op::SET, &[&a, &b]), &[16, 64, 64, 0]);
        graph_payload(0, &[&y], &[&a, &b, &y])
    });
    // the same window inside: computed
    let mut c = srv.client();
    let r = c.alloc(4096);
    let a = r.tensor(Type::F32, [4, 4, 1, 1], 0);
    let b = r.tensor(Type::F32, [2, 2, 1, 1], 64);
    let y = with_params(op(r.tensor(Type::F32, [4, 4, 1, 1], 128), Op::ACC, &[&a, &b]), &[16, 64, 64, 40, 0]);
    c.set_f32(&a, &[0.0; 16]);
    c.set_f32(&b, &[1.0, 2.0, 3.0, 4.0]);
    c.compute(&[&y], &[&a, &b, &y]);
    let mut want = [0.0; 16];
    (want[10], want[11], want[14], want[15]) = (1.0, 2.0, 3.0, 4.0);
    assert_eq!(c.get_f32(&y), want);
}

#[test]
fn indices_are_checked_before_every_use() {
    let srv = TestServer::start(None);
    let rows_of = |r: &Remote, ids: &WireTensor| {
        let table = r.tensor(Type::F32, [2, 4, 1, 1], 0);
        let rows = op(r.tensor(Type::F32, [2, ids.ne[0], 1, 1], 128), Op::GET_ROWS, &[&table, ids]);
        (table, rows)
    };
    for id in [4i32, -1, i32::MAX, i32::MIN] {
        refuses_graph(&srv, &format!("GET_ROWS of row {id} of 4"), |c, r| {
            let ids = r.tensor(Type::I32, [2, 1, 1, 1], 64);
            c.set(&ids, 0, &[0i32.to_le_bytes(), id.to_le_bytes()].concat());
            let (table, rows) = rows_of(r, &ids);
            graph_payload(0, &[&rows], &[&table, &ids, &rows])
        });
    }
    refuses_graph(&srv, "GET_ROWS of rows an ARGSORT of 8 computes, of 4", |_, r| {
        let x = r.tensor(Type::F32, [8, 1, 1, 1], 256);
        let ids = op(r.tensor(Type::I32, [8, 1, 1, 1], 64), Op::ARGSORT, &[&x]);
        let (table, rows) = rows_of(r, &ids);
        graph_payload(0, &[&ids, &rows], &[&x, &table, &ids, &rows])
    });
    refuses_graph(&srv, "GET_ROWS writing over its indices", |c, r| {
        let ids = r.tensor(Type::I32, [2, 1, 1, 1], 128);
        c.set(&ids, 0, &[0; 8]);
        let (table, rows) = rows_of(r, &ids);
        graph_payload(0, &[&rows], &[&table, &ids, &rows])
    });
    for (ty, id) in [(Type::I64, 4i64), (Type::I64, -1), (Type::I32, -1), (Type::I64, 1 << 40)] {
        refuses_graph(&srv, &format!("SET_ROWS to row {id} ({}) of 4", ty.name()), |c, r| {
            let dst = r.tensor(Type::F32, [2, 4, 1, 1], 0);
            let src = r.tensor(Type::F32, [2, 1, 1, 1], 64);
            let slots = r.tensor(ty, [1, 1, 1, 1], 96);
            c.set(&slots, 0, &id.to_le_bytes()[..ty.type_size()]);
            let mut set = op(dst, Op::SET_ROWS, &[&src, &slots]);
            (set.id, set.view_src) = (dst.id + 8, dst.id);
            graph_payload(0, &[&set], &[&dst, &src, &slots, &set])
        });
    }
    refuses_graph(&srv, "MUL_MAT_ID of expert 3 of 3", |c, r| {
        let experts = r.tensor(Type::F32, [2, 2, 3, 1], 0);
        let acts = r.tensor(Type::F32, [2, 1, 2, 1], 128);
        let ids = r.tensor(Type::I32, [1, 2, 1, 1], 160);
        c.set(&ids, 0, &[0i32.to_le_bytes(), 3i32.to_le_bytes()].concat());
        let out = op(r.tensor(Type::F32, [2, 1, 2, 1], 192), Op::MUL_MAT_ID, &[&experts, &acts, &ids]);
        graph_payload(0, &[&out], &[&experts, &acts, &ids, &out])
    });
    refuses_graph(&srv, "ADD_ID of bias 3 of 3", |c, r| {
        let a = r.tensor(Type::F32, [2, 2, 1, 1], 0);
        let biases = r.tensor(Type::F32, [2, 3, 1, 1], 32);
        let which = r.tensor(Type::I32, [2, 1, 1, 1], 64);
        c.set(&which, 0, &[3i32.to_le_bytes(), 0i32.to_le_bytes()].concat());
        let sum = op(r.tensor(Type::F32, [2, 2, 1, 1], 96), Op::ADD_ID, &[&a, &biases, &which]);
        graph_payload(0, &[&sum], &[&a, &biases, &which, &sum])
    });
    refuses_graph(&srv, "GET_ROWS_BACK into row 4 of 4", |c, r| {
        let grad = r.tensor(Type::F32, [2, 2, 1, 1], 0);
        let picked = r.tensor(Type::I32, [2, 1, 1, 1], 32);
        c.set(&picked, 0, &[0i32.to_le_bytes(), 4i32.to_le_bytes()].concat());
        let like = r.tensor(Type::F32, [2, 4, 1, 1], 64);
        let back = op(r.tensor(Type::F32, [2, 4, 1, 1], 128), Op::GET_ROWS_BACK, &[&grad, &picked, &like]);
        graph_payload(0, &[&back], &[&grad, &picked, &like, &back])
    });
    srv.refuses("indices changed out of range before a recompute", |c| {
        let r = c.alloc(4096);
        let ids = r.tensor(Type::I32, [2, 1, 1, 1], 64);
        c.set(&ids, 0, &[3i32.to_le_bytes(), 0i32.to_le_bytes()].concat());
        let (table, rows) = rows_of(&r, &ids);
        c.compute(&[&rows], &[&table, &ids, &rows]);
        c.sync();
        c.set(&ids, 0, &9i32.to_le_bytes());
        let _ = c.send(Command::GraphRecompute as u8, &0u32.to_le_bytes());
    });
    srv.refuses("GRAPH_RECOMPUTE after its buffer was freed", |c| {
        let r = c.alloc(4096);
        let (a, b, s) = sum(&r);
        c.compute(&[&s], &[&a, &b, &s]);
        c.request(Command::FreeBuffer, &r.handle.to_le_bytes());
        let _ = c.send(Command::GraphRecompute as u8, &0u32.to_le_bytes());
    });
}

/// A chain of `n` in-place SCALE nodes (`x * 1 + 1`) on one float, each the source of the
/// next: a rebuild that recursed through sources would need a stack frame per node.
fn chain(r: &Remote, n: usize) -> (WireTensor, Vec<WireTensor>) {
    let x = r.tensor(Type::F32, [1, 1, 1, 1], 0);
    let mut nodes: Vec<WireTensor> = Vec::with_capacity(n);
    for i in 0..n {
        let prev = if i == 0 { x } else { nodes[i - 1] };
        nodes.push(with_params(
            op(r.tensor(Type::F32, [1, 1, 1, 1], 0), Op::SCALE, &[&prev]),
            &[1.0f32.to_bits() as i32, 1.0f32.to_bits() as i32],
        ));
    }
    (x, nodes)
}

#[test]
fn long_chains_cost_no_stack() {
    const N: usize = 100_000;
    let srv = TestServer::start(None);
    let mut c = srv.client();
    let r = c.alloc(64);
    let (x, nodes) = chain(&r, N);
    c.set_f32(&x, &[0.5]);
    let node_refs: Vec<&WireTensor> = nodes.iter().collect();
    let all: Vec<&WireTensor> = std::iter::once(&x).chain(&nodes).collect();
    c.compute(&node_refs, &all);
    assert_eq!(c.get_f32(&x), [N as f32 + 0.5]);
    drop(c);

    refuses_graph(&srv, "a chain of 100000 ending in an unknown source", |_, r| {
        let (x, mut nodes) = chain(r, N);
        nodes[0].src[0] = 0xdead0;
        let node_refs: Vec<&WireTensor> = nodes.iter().collect();
        let all: Vec<&WireTensor> = std::iter::once(&x).chain(&nodes).collect();
        graph_payload(0, &node_refs, &all)
    });
    refuses_graph(&srv, "a cycle of 100000", |_, r| {
        let (x, mut nodes) = chain(r, N);
        nodes[0].src[0] = nodes[N - 1].id;
        let node_refs: Vec<&WireTensor> = nodes.iter().collect();
        let all: Vec<&WireTensor> = std::iter::once(&x).chain(&nodes).collect();
        graph_payload(0, &node_refs, &all)
    });
}

#[test]
fn empty_nodes_compute_nothing() {
    // found by the graph fuzzer in CI: a DUP of a [0, 3] into a [3, 0] with gaps between its
    // rows reached the copy kernel, which divided by the empty dimension; ggml computes no node
    // that has no elements
    let srv = TestServer::start(None);
    let mut c = srv.client();
    let r = c.alloc(4096);
    let a = r.tensor(Type::F32, [0, 3, 1, 1], 0);
    let mut y = op(r.tensor(Type::F16, [3, 0, 1, 1], 64), Op::DUP, &[&a]);
    y.nb = [2, 16, 16, 16];
    let (x, s) = (r.tensor(Type::F32, [4, 1, 1, 1], 128), r.tensor(Type::F32, [4, 1, 1, 1], 192));
    let s = op(s, Op::ADD, &[&x, &x]);
    c.set_f32(&x, &[1.0, 2.0, 3.0, 4.0]);
    c.compute(&[&y, &s], &[&a, &y, &x, &s]);
    assert_eq!(c.get_f32(&s), [2.0, 4.0, 6.0, 8.0]);

    // an ACC of an empty source is the copy alone, however many empty rows it names (the
    // graph fuzzer: 3.3e9 rows of nothing ran for seconds; fuzz/seeds/graph/acc-empty-rows)
    let b = r.tensor(Type::F32, [0, 1, 6, 553_648_384], 256);
    let acc = with_params(op(r.tensor(Type::F32, [4, 1, 1, 1], 320), Op::ACC, &[&x, &b]), &[16, 16, 16, 0, 0]);
    c.compute(&[&acc], &[&x, &b, &acc]);
    assert_eq!(c.get_f32(&acc), [1.0, 2.0, 3.0, 4.0]);
}
