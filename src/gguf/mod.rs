//! GGUF (being written)
