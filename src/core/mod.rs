//! The core of ggml: contexts, tensors, op constructors and graphs. Constructors only
//! describe computations; backends run them.

pub mod context;
pub mod element;
pub mod graph;
pub mod log;
pub mod op;
pub mod ops;
pub mod tensor;
pub mod time;
pub mod types;
