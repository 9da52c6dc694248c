//! One RPC server for a whole fuzzing run (as a real one serves client after client), and the
//! check every input ends with.

use std::rc::Rc;
use std::sync::atomic::Ordering;

use ggml_rs::cpu::device::cpu_reg;
use ggml_rs::rpc::server::Server;
use ggml_rs::rpc::transport::Stream;
use ggml_rs::rpc::wire::{CAPS_SIZE, Command, HELLO_REPLY_SIZE};

use crate::connection::Connection;

thread_local! {
    static SERVER: Server = {
        let cpu = cpu_reg().dev_get(0);
        Server::new(&[cpu], 1, None).expect("a server")
    };
}

/// Serves a client that sends `input` and leaves; then the server must answer a fresh
/// client's HELLO, with no buffer left allocated.
pub fn serve(input: Vec<u8>) {
    crate::quiet();
    SERVER.with(|server| {
        server.serve_connection(Stream::new(Connection::new(input, None)));
        let written = Rc::default();
        server.serve_connection(Stream::new(Connection::new(hello(), Some(Rc::clone(&written)))));
        assert_eq!(written.take(), hello_reply(), "a fresh client's HELLO was not answered");
        assert_eq!(server.live_buffers().load(Ordering::SeqCst), 0, "buffers outlived their connection");
    });
}

/// A request: `command u8 | length u64 | payload`.
pub fn request(command: Command, payload: &[u8]) -> Vec<u8> {
    let mut m = vec![command as u8];
    m.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    m.extend_from_slice(payload);
    m
}

pub fn hello() -> Vec<u8> {
    request(Command::Hello, &[0; CAPS_SIZE])
}

/// `length u64 | 7.0.0 | padding | capabilities (all zero)`.
fn hello_reply() -> Vec<u8> {
    let mut m = (HELLO_REPLY_SIZE as u64).to_le_bytes().to_vec();
    m.extend_from_slice(&[7, 0, 0]);
    m.resize(8 + HELLO_REPLY_SIZE, 0);
    m
}
