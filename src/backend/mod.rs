//! The backend layer: ggml's backend objects (buffer types, buffers, devices, backends,
//! registries, events) as Rust traits, the tables C sees, and what the rest of the library
//! asks of them.
//!
//! - `interface`: the C structs and their tables, byte for byte as `ggml-backend-impl.h`;
//! - `handle`: the handles (`BufferPtr`, `DevicePtr`, ...) that name those structs;
//! - `traits`: one trait per table, each method serving the entry of its name;
//! - `adapter`: the bridge both ways: the tables of Rust implementations (the only
//!   `extern "C"` functions of the built-in backends, and the only place that reads a
//!   `context`), and the C structs of plugins as implementations;
//! - `buffer`, `device`, `backend`, `reg`: what a handle asks of its object, with ggml's checks
//!   and fallbacks, and the tensor data operations;
//! - `host_buffer`, `multi_buffer`: the CPU buffer types of the base library, and buffers made
//!   of several; `tallocr`: placing a context's tensors in a buffer; `meta`: the meta device.
//!
//! # Adding a backend
//!
//! A device backend is a module of its own beside `cpu`, `cuda` and `rpc`. It implements
//! [`traits::Reg`] (its name and devices), [`traits::Device`] for each device,
//! [`traits::BufferType`] and [`traits::Buffer`] for its memory, [`traits::Backend`] for its
//! streams and, if it has them, [`traits::Event`]; a method it lacks that ggml requires does
//! not compile, and those ggml marks optional have ggml's answer as their default. It makes
//! its objects with [`adapter`] (`StaticReg::new` or `leak_reg`, `leak_device`,
//! `leak_buffer_type`, `new_buffer`, `new_backend`, `new_event`), which gives C the tables, and
//! recognises its own objects with the handles' `downcast`. Then one line in
//! `registry/builtin.rs` lists its registry, and `ffi` exports its `ggml-<name>.h`.

pub mod adapter;
#[allow(clippy::module_inception)]
pub mod backend;
pub mod buffer;
pub mod device;
pub mod guid;
pub mod handle;
pub mod host_buffer;
pub mod interface;
pub mod meta;
pub mod multi_buffer;
pub mod reg;
pub mod tallocr;
#[cfg(test)]
pub mod test_backend;
pub mod traits;
