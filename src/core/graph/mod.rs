//! Computation graphs: `struct ggml_cgraph` and its memory (`cgraph`), its hash set (`hash`),
//! forward construction (`build`), gradients (`backward`), the fusion checks backends use
//! (`fuse`), the printers (`print`: `ggml_graph_print`, `ggml_graph_dump_dot`), and the data
//! writes of `ggml_graph_reset` (`tensor_io`).
//!
//! A graph lists tensors in an order in which they can be computed: `leafs` are constants
//! (no op, not trainable), `nodes` everything else, each after its sources. Graphs live in a
//! context's memory like tensors do.

pub mod backward;
pub mod build;
pub mod cgraph;
pub mod fuse;
pub mod hash;
pub mod print;
pub mod tensor_io;

pub use cgraph::{DEFAULT_GRAPH_SIZE, EvalOrder, Graph, GraphPtr};
pub use hash::{HashSet, OwnedHashSet};
