//! ggml-rs: ggml 0.25.1's C API and ABI, implemented in Rust.
//!
//! # Layers
//!
//! The crate is built in layers. A module may use the modules on the rows below its own, never
//! one on a row above and never a neighbour on its own row: device backends are siblings that
//! know nothing of each other, and nothing beneath them names a device. `src/layering/`
//! reads this picture and fails, naming file and line, on any path in the library's code
//! (tests aside) that it does not allow, and on any import circle among the files of one folder.
//!
//! ```text
//! ffi                │ the C edge: every exported symbol; C handles become Rust references here
//! opt                │ training: datasets, optimizer contexts and epochs (ggml-opt)
//! sched registry     │ the scheduler over several backends; the device list, built-ins, plugins
//! cpu rpc cuda       │ device backends, one module each
//! gguf alloc         │ the model file format; graph memory planning (ggml-alloc)
//! backend            │ the backend, buffer, device and registry tables; buffers, host buffer, meta device
//! quants             │ element formats: 16-bit floats, block quantization, the type traits
//! core               │ contexts, tensors, op constructors, graphs, status, logging
//! ```
//!
//! Seams: where ggml itself couples two layers against this order, the coupling sits in one
//! file, named here, and only that file may cross.
//!
//! - seam `core/graph/tensor_io.rs` -> `backend`: a graph tensor's data may live in a backend
//!   buffer, and `ggml_set_zero`, the gradient resets and the fusion checks reach it there.
//! - seam `cpu/device.rs` -> `ffi`: a registry's extra functions (`get_proc_address`) are C
//!   functions of the library, which live at the C edge; the registry names its own there.
//! - seam `cuda/registry.rs` -> `ffi`: as for the CPU registry.
//! - seam `rpc/client/registry.rs` -> `ffi`: as for the CPU registry.

pub mod alloc;
pub mod backend;
pub mod core;
pub mod cpu;
pub mod cuda;
pub mod ffi;
pub mod gguf;
#[cfg(test)]
mod layering;
pub mod opt;
pub mod quants;
pub mod registry;
pub mod rpc;
pub mod sched;
