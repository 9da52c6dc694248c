//! The core of ggml: contexts, tensors, op constructors and graphs. Constructors only
//! describe computations; backends run them.

pub mod c_str;
pub mod context;
pub mod element;
pub mod graph;
pub mod log;
pub mod machine;
pub mod op;
pub mod ops;
pub mod status;
pub mod tensor;
pub mod threadpool_params;
pub mod time;
pub mod types;
