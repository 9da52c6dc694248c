//! The server against a raw client: a real server thread on 127.0.0.1 (port 0) serving the
//! CPU device, and messages built byte by byte with `wire`.
//!
//! - `happy`: every command answered as the reference answers it;
//! - `hostile`: malformed and malicious requests of every command;
//! - `graphs`: malformed and malicious graphs;
//! - `llama`: a llama-style block, on the server and locally.
//!
//! After every refused request the connection must be closed, a fresh client must be served,
//! and no buffer may be left allocated.

mod graphs;
mod happy;
mod hostile;
mod llama;

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Server;
use crate::backend::device::DevicePtr;
use crate::core::op::Op;
use crate::core::tensor::{MAX_SRC, flag};
use crate::core::types::Type;
use crate::rpc::transport::{Listener, Stream};
use crate::rpc::wire::{Command, HELLO_REPLY_SIZE, WireTensor, Writer};

pub(super) fn cpu_device() -> DevicePtr {
    crate::cpu::device::cpu_reg().dev_get(0)
}

/// A server thread, stopped and joined on drop.
pub(super) struct TestServer {
    port: u16,
    live: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(cache_dir: Option<&Path>) -> TestServer {
        let server = Server::new(&[cpu_device()], 1, cache_dir).expect("a server");
        let live = server.live_buffers();
        let listener = Listener::bind("127.0.0.1:0").expect("a listening socket");
        let port = listener.local_port().expect("a port");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || server.serve(&listener, || stopped.load(Ordering::SeqCst)));
        TestServer { port, live, stop, thread: Some(thread) }
    }

    /// A connection that has said HELLO.
    pub fn client(&self) -> Client {
        let mut c = self.connect();
        let reply = c.call(Command::Hello, &[0; 24], HELLO_REPLY_SIZE);
        assert_eq!(reply[..4], [7, 0, 0, 0]);
        assert_eq!(reply[4..], [0; 24]);
        c
    }

    pub fn connect(&self) -> Client {
        let tcp = TcpStream::connect(("127.0.0.1", self.port)).expect("a connection");
        tcp.set_read_timeout(Some(Duration::from_secs(30))).expect("a timeout");
        let raw = tcp.try_clone().expect("a second handle");
        Client { stream: Stream::new(tcp), raw }
    }

    pub fn live_buffers(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// After a refusal: the server serves a new client, and no buffer is left.
    pub fn check_alive(&self, what: &str) {
        let mut c = self.client();
        assert_eq!(c.call(Command::DeviceCount, &[], 4), 1u32.to_le_bytes(), "{what}: device count");
        assert_eq!(self.live_buffers(), 0, "{what}: buffers left allocated");
    }

    /// Runs `attack` on a fresh connection; the server must close it and keep serving.
    pub fn refuses(&self, what: &str, attack: impl FnOnce(&mut Client)) {
        let mut c = self.client();
        attack(&mut c);
        assert!(c.closed(), "{what}: the connection stayed open");
        drop(c);
        self.check_alive(what);
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // wakes the server if it waits for a client
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(super) struct Client {
    stream: Stream<TcpStream>,
    raw: TcpStream,
}

impl Client {
    /// Sends any command byte with a payload; errors are the caller's (a server that
    /// refused may have closed already).
    pub fn send(&mut self, cmd: u8, payload: &[u8]) -> io::Result<()> {
        let mut message = vec![cmd];
        message.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        message.extend_from_slice(payload);
        self.raw.write_all(&message)
    }

    /// Sends raw bytes.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.raw.write_all(bytes)
    }

    /// Sends raw bytes, then nothing more.
    pub fn send_last(&mut self, bytes: &[u8]) {
        let _ = self.raw.write_all(bytes);
        let _ = self.raw.shutdown(Shutdown::Write);
    }

    /// A request without a reply, which must go out.
    pub fn request(&mut self, cmd: Command, payload: &[u8]) {
        self.stream.send_request(cmd, payload).expect("a request");
    }

    /// A request and its reply of `reply_len` bytes.
    pub fn call(&mut self, cmd: Command, payload: &[u8], reply_len: usize) -> Vec<u8> {
        self.request(cmd, payload);
        let mut reply = vec![0u8; reply_len];
        self.stream.recv_reply(&mut reply).unwrap_or_else(|e| panic!("{cmd:?}: no reply: {e}"));
        reply
    }

    /// Whether the server closed the connection (a read sees its end, or a reset); a server
    /// that still waits for a request lets the read time out.
    pub fn closed(&mut self) -> bool {
        let mut byte = [0u8];
        match self.raw.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut),
        }
    }

    // ---- commands ----

    pub fn alloc(&mut self, size: u64) -> Remote {
        let mut w = Writer::default();
        w.u32(0).u64(size);
        let reply = self.call(Command::AllocBuffer, &w.into_bytes(), 16);
        let handle = u64::from_le_bytes(reply[..8].try_into().unwrap());
        assert_ne!(handle, 0, "an allocation of {size} bytes");
        let base = self.call(Command::BufferGetBase, &handle.to_le_bytes(), 8);
        Remote { handle, base: u64::from_le_bytes(base.try_into().unwrap()), size }
    }

    pub fn set(&mut self, t: &WireTensor, offset: u64, data: &[u8]) {
        self.request(Command::SetTensor, &set_payload(t, 0, offset, data));
    }

    pub fn get(&mut self, t: &WireTensor, offset: u64, size: u64) -> Vec<u8> {
        let mut w = Writer::default();
        w.tensor(t).u64(offset).u64(size);
        self.call(Command::GetTensor, &w.into_bytes(), size as usize)
    }

    pub fn set_f32(&mut self, t: &WireTensor, values: &[f32]) {
        self.set(t, 0, &f32_bytes(values));
    }

    pub fn get_f32(&mut self, t: &WireTensor) -> Vec<f32> {
        let n = t.ne.iter().map(|&n| n as u64).product::<u64>();
        let bytes = self.get(t, 0, 4 * n);
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    pub fn compute(&mut self, nodes: &[&WireTensor], tensors: &[&WireTensor]) {
        self.request(Command::GraphCompute, &graph_payload(0, nodes, tensors));
    }

    /// A round trip that only a live connection answers (and that waits for what was sent
    /// before it to be done).
    pub fn sync(&mut self) {
        assert_eq!(self.call(Command::DeviceCount, &[], 4), 1u32.to_le_bytes());
    }
}

/// A buffer on the server.
#[derive(Clone, Copy)]
pub(super) struct Remote {
    pub handle: u64,
    pub base: u64,
    pub size: u64,
}

impl Remote {
    /// A contiguous tensor at `offset` in this buffer, with a fresh id.
    pub fn tensor(&self, type_: Type, ne: [u32; 4], offset: u64) -> WireTensor {
        let mut t = tensor(type_, ne);
        t.buffer = self.handle;
        t.data = self.base.wrapping_add(offset);
        t
    }
}

/// A contiguous tensor, placed nowhere, with a fresh id.
pub(super) fn tensor(type_: Type, ne: [u32; 4]) -> WireTensor {
    static NEXT_ID: AtomicUsize = AtomicUsize::new(0x1000);
    let mut t = WireTensor::NONE;
    t.id = NEXT_ID.fetch_add(0x150, Ordering::Relaxed) as u64;
    t.type_ = type_.0 as u32;
    t.ne = ne;
    let ts = type_.type_size() as u32;
    t.nb[0] = ts;
    t.nb[1] = ts * ne[0] / type_.blck_size() as u32;
    t.nb[2] = t.nb[1] * ne[1];
    t.nb[3] = t.nb[2] * ne[2];
    t
}

/// `t` as the result of `op` on `srcs`, marked for computing (as graph building marks it).
pub(super) fn op(mut t: WireTensor, op: Op, srcs: &[&WireTensor]) -> WireTensor {
    t.op = op.0 as u32;
    t.flags |= flag::COMPUTE;
    assert!(srcs.len() <= MAX_SRC);
    t.src = [0; MAX_SRC];
    for (slot, s) in srcs.iter().enumerate() {
        t.src[slot] = s.id;
    }
    t
}

pub(super) fn bytes_of(t: &WireTensor) -> Vec<u8> {
    let mut w = Writer::default();
    w.tensor(t);
    w.into_bytes()
}

pub(super) fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(super) fn set_payload(t: &WireTensor, cache_flag: u8, offset: u64, data: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    w.tensor(t).u8(cache_flag).u64(offset).bytes(data);
    w.into_bytes()
}

pub(super) fn graph_payload(device: u32, nodes: &[&WireTensor], tensors: &[&WireTensor]) -> Vec<u8> {
    let mut w = Writer::default();
    w.u32(device).u32(nodes.len() as u32);
    nodes.iter().for_each(|n| _ = w.u64(n.id));
    w.u32(tensors.len() as u32);
    tensors.iter().for_each(|t| _ = w.tensor(t));
    w.into_bytes()
}
