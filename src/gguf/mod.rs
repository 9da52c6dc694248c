//! GGUF, the model file format: typed key-value metadata, tensor descriptions, and an
//! aligned block of tensor data.
//!
//! - [`value`]: the `gguf_type` values a key can hold;
//! - [`context`]: `struct gguf_context` and its getters and setters;
//! - [`source`]: the places bytes are read from (memory, files, C streams, callbacks);
//! - [`reader`]: parsing, which proves every length before it trusts it;
//! - [`writer`]: serialisation, byte for byte as ggml writes.

pub mod context;
pub mod reader;
pub mod source;
pub mod value;
pub mod writer;

pub use context::{GgufContext, TensorInfo};
pub use value::{GgufType, Kv};

pub const MAGIC: &[u8; 4] = b"GGUF";
pub const VERSION: u32 = 3;
pub const DEFAULT_ALIGNMENT: usize = 32;
pub const KEY_GENERAL_ALIGNMENT: &str = "general.alignment";

/// Longest string a file may declare (1 GiB).
pub const MAX_STRING_LENGTH: u64 = 1 << 30;
/// Most elements an array in a file may declare.
pub const MAX_ARRAY_ELEMENTS: u64 = 1 << 30;
