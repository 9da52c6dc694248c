//! The RPC backend: ggml's distributed engine, wire-compatible with ggml 0.25.1 (protocol
//! 7.0.0). The client side is a device backend whose buffers and graphs live on a remote
//! server; the server side serves local devices to one client at a time.
//!
//! - `wire`: the protocol's bytes (commands, the tensor description, message fields);
//! - `transport`: TCP framing of requests and replies;
//! - `client`: the "RPC" registry, one registry per server, its devices, buffer types,
//!   buffers and backends;
//! - `server`: `ggml_backend_rpc_start_server`, which checks every message before it
//!   touches memory;
//! - `start`: the server's entry point with its C signature, which the "RPC" registry hands
//!   out as a proc address and `ffi` exports.

pub mod client;
pub mod server;
pub mod start;
pub mod transport;
pub mod wire;

/// The endpoint argument of the C entry point `export`, which must not be NULL.
///
/// # Safety
/// `ptr` is NULL (which aborts, naming `export`) or a C string that outlives the call.
#[track_caller]
pub unsafe fn endpoint_arg<'a>(ptr: *const std::ffi::c_char, export: &str) -> std::borrow::Cow<'a, str> {
    if ptr.is_null() {
        crate::ggml_abort!("NULL endpoint passed to {}", export);
    }
    // SAFETY: the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(ptr) }.to_string_lossy()
}
