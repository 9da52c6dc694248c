//! Memory planning for graphs (ggml-alloc): the graph allocator, which places every tensor
//! of a graph in compute buffers and reuses memory once tensors are no longer needed, and the
//! dynamic offset allocator it plans with.

pub mod dyn_tallocr;
pub mod gallocr;

pub use gallocr::{Gallocr, op_can_inplace};
