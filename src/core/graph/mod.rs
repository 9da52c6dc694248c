//! Graphs (being written)
