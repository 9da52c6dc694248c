//! GRAPH_COMPUTE's payload on arbitrary bytes: a client says HELLO, allocates one 64 KiB
//! buffer, and sends the input as the payload of a GRAPH_COMPUTE (then of a GRAPH_RECOMPUTE,
//! which runs the graph kept from it). The server must rebuild and check the graph, and
//! compute it or refuse it, without crashing; then answer a fresh client with no buffer left.
//!
//! Tensors' `buffer` and `data` fields may be placeholders for the buffer's handle and base
//! address (see `Connection`); fuzz/seeds/graph/ has a valid graph written with them.

#![no_main]

use ggml_rs::rpc::wire::Command;
use ggml_rs_fuzz::server::{hello, request, serve};
use libfuzzer_sys::fuzz_target;

/// ALLOC_BUFFER's payload: device 0, 64 KiB.
const ALLOC: [u8; 12] = [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0];

fuzz_target!(|data: &[u8]| {
    let device = data.get(..4).unwrap_or_default();
    serve(
        [
            hello(),
            request(Command::AllocBuffer, &ALLOC),
            request(Command::GraphCompute, data),
            request(Command::GraphRecompute, device),
        ]
        .concat(),
    );
});
