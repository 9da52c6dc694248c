//! The RPC server on an arbitrary client byte stream: the CPU device served over an in-memory
//! connection whose reads return the input and then end, and whose writes go nowhere. Whatever
//! the client sends, the server must refuse it or answer it without crashing, and afterwards
//! answer a fresh client's HELLO with no buffer left allocated.
//!
//! Buffer handles and addresses in the input may be placeholders (see `Connection`). The
//! first byte's low bit puts a valid HELLO in front of the rest, so that half the inputs
//! reach the commands behind the handshake.

#![no_main]

use std::rc::Rc;
use std::sync::atomic::Ordering;

use ggml_rs::backend::device::DevicePtr;
use ggml_rs::cpu::device::cpu_reg;
use ggml_rs::rpc::server::Server;
use ggml_rs::rpc::transport::Stream;
use ggml_rs::rpc::wire::{CAPS_SIZE, Command, HELLO_REPLY_SIZE};
use ggml_rs_fuzz::connection::Connection;
use libfuzzer_sys::fuzz_target;

thread_local! {
    // one server for the whole run, as a real one serves client after client
    static SERVER: Server = {
        // SAFETY: the CPU registry's devices live for the whole process.
        let cpu = unsafe { DevicePtr::from_raw(cpu_reg().dev_get(0)) }.expect("a CPU device");
        Server::new(&[cpu], 1, None).expect("a server")
    };
}

fuzz_target!(|data: &[u8]| {
    ggml_rs_fuzz::quiet();
    let Some((&first, rest)) = data.split_first() else { return };
    let input = if first & 1 == 1 { [hello(), rest.to_vec()].concat() } else { rest.to_vec() };
    SERVER.with(|server| {
        server.serve_connection(Stream::new(Connection::new(input, None)));
        let written = Rc::default();
        server.serve_connection(Stream::new(Connection::new(hello(), Some(Rc::clone(&written)))));
        assert_eq!(written.take(), hello_reply(), "a fresh client's HELLO was not answered");
        assert_eq!(server.live_buffers().load(Ordering::SeqCst), 0, "buffers outlived their connection");
    });
});

fn hello() -> Vec<u8> {
    let mut m = vec![Command::Hello as u8];
    m.extend_from_slice(&(CAPS_SIZE as u64).to_le_bytes());
    m.extend_from_slice(&[0; CAPS_SIZE]);
    m
}

/// `length u64 | 7.0.0 | padding | capabilities (all zero)`.
fn hello_reply() -> Vec<u8> {
    let mut m = (HELLO_REPLY_SIZE as u64).to_le_bytes().to_vec();
    m.extend_from_slice(&[7, 0, 0]);
    m.resize(8 + HELLO_REPLY_SIZE, 0);
    m
}
