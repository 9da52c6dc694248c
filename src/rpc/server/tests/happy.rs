//! Every command, answered as the reference answers it.

use std::io::{Cursor, Read, Write};

use super::*;
use crate::rpc::wire::fnv1a;

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn devices_and_buffer_types_are_described() {
    let srv = TestServer::start(None);
    let mut c = srv.client();
    c.sync();
    let memory = c.call(Command::GetDeviceMemory, &0u32.to_le_bytes(), 16);
    let (free, total) = (u64_at(&memory, 0), u64_at(&memory, 8));
    assert!(total > 0 && free <= total, "{free} of {total}");
    assert_eq!(c.call(Command::GetAlignment, &0u32.to_le_bytes(), 8), 32u64.to_le_bytes());
    assert_eq!(c.call(Command::GetMaxSize, &0u32.to_le_bytes(), 8), u64::MAX.to_le_bytes());

    let alloc_size = |c: &mut Client, t: &WireTensor| {
        let mut w = Writer::default();
        w.u32(0).tensor(t);
        (0..MAX_SRC).for_each(|_| _ = w.tensor(&WireTensor::NONE));
        u64::from_le_bytes(c.call(Command::GetAllocSize, &w.into_bytes(), 8).try_into().unwrap())
    };
    assert_eq!(alloc_size(&mut c, &tensor(Type::F32, [4, 3, 1, 1])), 48);
    assert_eq!(alloc_size(&mut c, &tensor(Type::Q4_0, [64, 2, 1, 1])), 72);
    let r = c.alloc(256);
    assert_eq!(alloc_size(&mut c, &r.tensor(Type::F16, [8, 2, 1, 1], 0)), 32);
}

#[test]
fn buffers_hold_set_get_copy_memset_and_clear() {
    let srv = TestServer::start(None);
    let mut c = srv.client();
    let r = c.alloc(1024);
    assert_eq!(r.base % 32, 0);
    assert_eq!(srv.live_buffers(), 1);
    let a = r.tensor(Type::F32, [4, 1, 1, 1], 0);
    let b = r.tensor(Type::F32, [4, 1, 1, 1], 64);

    c.set_f32(&a, &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(c.get_f32(&a), [1.0, 2.0, 3.0, 4.0]);
    c.set(&a, 12, &f32_bytes(&[9.0]));
    assert_eq!(c.get(&a, 8, 8), f32_bytes(&[3.0, 9.0]));

    let mut w = Writer::default();
    w.tensor(&a).u64(4).u64(4).u8(0);
    c.request(Command::MemsetTensor, &w.into_bytes());
    assert_eq!(c.get_f32(&a), [1.0, 0.0, 3.0, 9.0]);

    let mut w = Writer::default();
    w.tensor(&a).tensor(&b);
    assert_eq!(c.call(Command::CopyTensor, &w.into_bytes(), 1), [1]);
    assert_eq!(c.get_f32(&b), [1.0, 0.0, 3.0, 9.0]);

    c.request(Command::InitTensor, &bytes_of(&a));
    // a tensor without a buffer is only logged, as in the reference
    c.request(Command::InitTensor, &bytes_of(&tensor(Type::F32, [4, 1, 1, 1])));
    c.sync();

    let mut w = Writer::default();
    w.u64(r.handle).u8(0);
    c.request(Command::BufferClear, &w.into_bytes());
    assert_eq!(c.get_f32(&b), [0.0; 4]);

    c.request(Command::FreeBuffer, &r.handle.to_le_bytes());
    c.sync();
    assert_eq!(srv.live_buffers(), 0);

    // an empty buffer, as the reference makes it: a handle, no memory
    let mut w = Writer::default();
    w.u32(0).u64(0);
    let reply = c.call(Command::AllocBuffer, &w.into_bytes(), 16);
    assert_ne!(u64_at(&reply, 0), 0);
    assert_eq!(u64_at(&reply, 8), 0);
    assert_eq!(c.call(Command::BufferGetBase, &reply[..8], 8), [0; 8]);
    // an allocation that fails is answered with a null handle
    let mut w = Writer::default();
    w.u32(0).u64(1 << 62);
    assert_eq!(c.call(Command::AllocBuffer, &w.into_bytes(), 16), [0; 16]);
    drop(c);
    srv.check_alive("after the buffers");
}

#[test]
fn graphs_compute_and_recompute() {
    let srv = TestServer::start(None);
    let mut c = srv.client();
    let r = c.alloc(4096);
    let a = r.tensor(Type::F32, [4, 2, 1, 1], 0);
    let b = r.tensor(Type::F32, [4, 2, 1, 1], 64);
    let sum = op(r.tensor(Type::F32, [4, 2, 1, 1], 128), Op::ADD, &[&a, &b]);
    let w = r.tensor(Type::F32, [4, 3, 1, 1], 256);
    let y = op(r.tensor(Type::F32, [3, 2, 1, 1], 512), Op::MUL_MAT, &[&w, &sum]);
    c.set_f32(&a, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    c.set_f32(&b, &[10.0; 8]);
    c.set_f32(&w, &[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    c.compute(&[&sum, &y], &[&a, &b, &sum, &w, &y]);
    assert_eq!(c.get_f32(&sum), [11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0]);
    assert_eq!(c.get_f32(&y), [11.0, 12.0, 50.0, 15.0, 16.0, 66.0]);

    c.set_f32(&a, &[0.0; 8]);
    c.request(Command::GraphRecompute, &0u32.to_le_bytes());
    assert_eq!(c.get_f32(&y), [10.0, 10.0, 40.0, 10.0, 10.0, 40.0]);
}

#[test]
fn indices_from_the_client_and_from_the_graph_are_used() {
    let srv = TestServer::start(None);
    let mut c = srv.client();
    let r = c.alloc(4096);
    // argsort gives a permutation, computed before get_rows reads it in the same graph
    let x = r.tensor(Type::F32, [4, 1, 1, 1], 0);
    let order = op(r.tensor(Type::I32, [4, 1, 1, 1], 32), Op::ARGSORT, &[&x]);
    let table = r.tensor(Type::F32, [2, 4, 1, 1], 64);
    let rows = op(r.tensor(Type::F32, [2, 4, 1, 1], 128), Op::GET_ROWS, &[&table, &order]);
    c.set_f32(&x, &[3.0, 1.0, 2.0, 0.0]);
    c.set_f32(&table, &[0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]);
    // the result's memory held out-of-range garbage before: only the computed values count
    c.set(&order, 0, &[0xff; 16]);
    c.compute(&[&order, &rows], &[&x, &order, &table, &rows]);
    assert_eq!(c.get_f32(&rows), [3.0, 3.5, 1.0, 1.5, 2.0, 2.5, 0.0, 0.5]);

    // set_rows with I64 slots from the client
    let dst = r.tensor(Type::F32, [2, 4, 1, 1], 256);
    let src = r.tensor(Type::F32, [2, 2, 1, 1], 320);
    let slots = r.tensor(Type::I64, [2, 1, 1, 1], 352);
    let mut set = op(dst, Op::SET_ROWS, &[&src, &slots]);
    set.id += 8;
    set.view_src = dst.id;
    c.set_f32(&dst, &[0.0; 8]);
    c.set_f32(&src, &[1.0, 2.0, 3.0, 4.0]);
    c.set(&slots, 0, &[3i64.to_le_bytes(), 0i64.to_le_bytes()].concat());
    c.compute(&[&set], &[&dst, &src, &slots, &set]);
    assert_eq!(c.get_f32(&dst), [3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0]);

    // mul_mat_id: token t multiplies expert ids[t]
    let experts = r.tensor(Type::F32, [2, 2, 3, 1], 512);
    let acts = r.tensor(Type::F32, [2, 1, 2, 1], 640);
    let ids = r.tensor(Type::I32, [1, 2, 1, 1], 672);
    let out = op(r.tensor(Type::F32, [2, 1, 2, 1], 704), Op::MUL_MAT_ID, &[&experts, &acts, &ids]);
    c.set_f32(&experts, &[1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0, 3.0, 0.0, 0.0, 3.0]);
    c.set_f32(&acts, &[1.0, 2.0, 3.0, 4.0]);
    c.set(&ids, 0, &[2i32.to_le_bytes(), 0i32.to_le_bytes()].concat());
    c.compute(&[&out], &[&experts, &acts, &ids, &out]);
    assert_eq!(c.get_f32(&out), [3.0, 6.0, 3.0, 4.0]);

    // add_id: row i gets row ids[i] of the biases
    let a = r.tensor(Type::F32, [2, 2, 1, 1], 1024);
    let biases = r.tensor(Type::F32, [2, 3, 1, 1], 1056);
    let which = r.tensor(Type::I32, [2, 1, 1, 1], 1088);
    let sum = op(r.tensor(Type::F32, [2, 2, 1, 1], 1120), Op::ADD_ID, &[&a, &biases, &which]);
    c.set_f32(&a, &[1.0, 2.0, 3.0, 4.0]);
    c.set_f32(&biases, &[10.0, 10.0, 20.0, 20.0, 30.0, 30.0]);
    c.set(&which, 0, &[2i32.to_le_bytes(), 0i32.to_le_bytes()].concat());
    c.compute(&[&sum], &[&a, &biases, &which, &sum]);
    assert_eq!(c.get_f32(&sum), [31.0, 32.0, 13.0, 14.0]);

    // get_rows_back: gradient rows added into the rows the indices name
    let grad = r.tensor(Type::F32, [2, 3, 1, 1], 1152);
    let picked = r.tensor(Type::I32, [3, 1, 1, 1], 1184);
    let like = r.tensor(Type::F32, [2, 4, 1, 1], 1216);
    let back = op(r.tensor(Type::F32, [2, 4, 1, 1], 1280), Op::GET_ROWS_BACK, &[&grad, &picked, &like]);
    c.set_f32(&grad, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    c.set(&picked, 0, &[3i32.to_le_bytes(), 0i32.to_le_bytes(), 3i32.to_le_bytes()].concat());
    c.compute(&[&back], &[&grad, &picked, &like, &back]);
    assert_eq!(c.get_f32(&back), [3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 6.0, 8.0]);
}

#[test]
fn the_cache_serves_uploads_by_hash() {
    let dir = std::env::temp_dir().join(format!(
        "ggml-rs-rpc-cache-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let srv = TestServer::start(Some(&dir));
    let mut c = srv.client();
    let r = c.alloc(1024);
    let a = r.tensor(Type::F32, [64, 1, 1, 1], 0);
    let b = r.tensor(Type::F32, [64, 1, 1, 1], 256);
    let values: Vec<f32> = (0..64).map(|i| i as f32 * 0.25).collect();
    let bytes = f32_bytes(&values);
    let hash = fnv1a(&bytes);
    let offer = |c: &mut Client, t: &WireTensor| {
        let mut w = Writer::default();
        w.tensor(t).u64(0).u64(hash);
        c.call(Command::SetTensorHash, &w.into_bytes(), 1)[0]
    };
    assert_eq!(offer(&mut c, &b), 0);
    c.request(Command::SetTensor, &set_payload(&a, 1, 0, &bytes));
    c.sync();
    let file = dir.join(format!("{hash:016x}"));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 256);
    assert_eq!(offer(&mut c, &b), 1);
    assert_eq!(c.get_f32(&b), values);
    drop(c);
    drop(srv);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A session in process, on a byte stream: what a fuzzer drives.
struct Duplex {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Duplex {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Duplex {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_session_runs_on_any_byte_stream() {
    let server = Server::new(&[cpu_device()], 1, None).unwrap();
    let mut input = Writer::default();
    input.u8(Command::Hello as u8).u64(24).bytes(&[0; 24]);
    input.u8(Command::DeviceCount as u8).u64(0);
    input.u8(Command::AllocBuffer as u8).u64(12).u32(0).u64(64);
    input.u8(200);
    let mut duplex = Duplex { input: Cursor::new(input.into_bytes()), output: Vec::new() };
    server.serve_connection(Stream::new(&mut duplex));
    let out = duplex.output;
    assert_eq!(out.len(), 8 + 28 + 8 + 4 + 8 + 16);
    assert_eq!(out[..12], [28, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0]);
    assert_eq!(out[36..48], [4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(u64_at(&out, 48), 16);
    assert_eq!(u64_at(&out, 64), 64);
    assert_eq!(server.live_buffers().load(Ordering::SeqCst), 0);
}
