//! The RPC server on an arbitrary client byte stream: the CPU device served over an in-memory
//! connection whose reads return the input and then end, and whose writes are dropped.
//! Whatever the client sends, the server must refuse it or answer it without crashing, and
//! afterwards answer a fresh client's HELLO with no buffer left allocated.
//!
//! Buffer handles and addresses in the input may be placeholders (see `Connection`). The
//! first byte's low bit puts a valid HELLO in front of the rest, so that half the inputs
//! reach the commands behind the handshake.

#![no_main]

use ggml_rs_fuzz::server::{hello, serve};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    serve(if first & 1 == 1 { [hello(), rest.to_vec()].concat() } else { rest.to_vec() });
});
