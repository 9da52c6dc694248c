//! The backend layer: buffer types and the buffers they allocate, the tensor data operations
//! that go through them, the CPU host buffer type, and the linear tensor allocator.
//!
//! Everything a backend provides is a table of function pointers (`interface`); the code here
//! dispatches through those tables and supplies ggml's defaults for the optional entries, so a
//! backend written in C plugs in without anything else changing.

pub mod buffer;
pub mod host_buffer;
pub mod interface;
pub mod tallocr;

pub use buffer::{BufferPtr, BufferTypePtr, StaticBufferType};
pub use interface::{Buffer, BufferInterface, BufferType, BufferTypeInterface, BufferUsage};
pub use tallocr::Tallocr;
#[allow(clippy::module_inception)]
pub mod backend;
pub mod device;
pub mod guid;
pub mod meta;
pub mod reg;
#[cfg(test)]
pub mod test_backend;
