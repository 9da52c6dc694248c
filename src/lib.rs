//! ggml-rs: ggml 0.25.1's C API and ABI, implemented in Rust.
//!
//! `core` holds contexts, tensors, op constructors and graphs; `quants` the element formats;
//! `gguf` the model file format; `ffi` is the only place that turns C pointers into Rust
//! values and exports `extern "C"` symbols.

pub mod alloc;
pub mod backend;
pub mod core;
pub mod cpu;
pub mod ffi;
pub mod gguf;
pub mod opt;
pub mod quants;
pub mod registry;
pub mod sched;
