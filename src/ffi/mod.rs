//! The C edge. Every exported function lives under this module; each turns its raw handles into
//! Rust values through [`handle`] (which aborts with the export's name on a NULL that ggml does
//! not allow) and calls into the safe core.
//!
//! Two kinds of C-facing code live elsewhere, beside what they serve: the five lookup tables
//! libggml-cpu exports as data (`cpu/tables.rs`, filled by `ggml_cpu_init`), and the
//! `extern "C"` functions that C reaches only by pointer, never by name: the entries of the
//! backend interface tables (`ggml_backend_i` and its siblings) and of the CPU type traits.

// The exported functions take raw pointers by design: they are the C ABI, and C callers cannot
// see an `unsafe` marker. Each one checks what it can (NULL) before dereferencing.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod alloc;
pub mod backend;
pub mod backend_buffer;
pub mod context;
pub mod cpu;
pub mod cpu_kernels;
pub mod critical_section;
pub mod cuda;
pub mod diagnostics;
pub mod file;
pub mod gguf;
pub mod graph;
pub mod guid;
pub mod handle;
pub mod memory;
pub mod meta;
pub mod op;
pub mod ops;
pub mod opt;
pub mod quants;
pub mod rpc;
pub mod sched;
pub mod status;
pub mod tensor;
#[cfg(test)]
pub(crate) mod test_callbacks;
pub mod threadpool_params;
pub mod variadic;
pub mod version;

pub use crate::core::c_str::static_c_str;
