//! The RPC backend: ggml's distributed engine, wire-compatible with ggml 0.25.1 (protocol
//! 7.0.0). The client side is a device backend whose buffers and graphs live on a remote
//! server; the server side serves local devices to one client at a time.
//!
//! - `wire`: the protocol's bytes (commands, the tensor description, message fields);
//! - `transport`: TCP framing of requests and replies;
//! - `client`: the "RPC" registry, one registry per server, its devices, buffer types,
//!   buffers and backends;
//! - `server`: `ggml_backend_rpc_start_server`, which checks every message before it
//!   touches memory.

pub mod client;
pub mod server;
pub mod transport;
pub mod wire;
