//! Human-readable views of a graph: `ggml_graph_print` (through the log) and
//! `ggml_graph_dump_dot` (a Graphviz file). Both print what ggml 0.25.1 prints, line for line.

use std::fmt::Write as _;
use std::io::Write as _;

use super::cgraph::Graph;
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr, flag};

impl Graph {
    /// `ggml_graph_print`: one log line per node and per leaf.
    pub fn print(&self) {
        crate::log_info!("=== GRAPH ===\n");
        crate::log_info!("n_nodes = {}\n", self.n_nodes);
        for (i, node) in self.nodes().enumerate() {
            let mark = if node.flags & flag::PARAM != 0 {
                "x"
            } else if self.grad(node.as_ptr()).is_some() {
                "g"
            } else {
                " "
            };
            crate::log_info!(
                " - {:3}: [ {:5}, {:5}, {:5}] {:>16} {}\n",
                i,
                node.ne[0],
                node.ne[1],
                node.ne[2],
                node.op.name(),
                mark
            );
        }
        crate::log_info!("n_leafs = {}\n", self.n_leafs);
        for (i, leaf) in self.leafs().enumerate() {
            crate::log_info!(
                " - {:3}: [ {:5}, {:5}] {:>8} {:>16}\n",
                i,
                leaf.ne[0],
                leaf.ne[1],
                leaf.op.name(),
                String::from_utf8_lossy(leaf.name_bytes())
            );
        }
        crate::log_info!("========================================\n");
    }

    /// Whether `node` is one of this graph's nodes.
    fn has_node(&self, node: TensorPtr) -> bool {
        self.nodes().any(|n| n == node)
    }

    /// The node whose gradient `t` is, if `t` is a gradient in this graph.
    fn grad_owner(&self, t: TensorPtr) -> Option<TensorPtr> {
        self.nodes().find(|&n| self.grad(n.as_ptr()) == Some(t))
    }

    /// The Graphviz text of `ggml_graph_dump_dot`: this graph (`gb`) with the nodes that are
    /// also in `forward` told apart by colour (`forward` may be absent: then all are in it).
    pub fn dot(&self, forward: Option<&Graph>) -> String {
        let mut out = String::new();
        out.push_str("digraph G {\n  newrank = true;\n  rankdir = TB;\n");

        for (i, node) in self.nodes().enumerate() {
            if self.grad_owner(node).is_some() {
                continue;
            }
            let grad = self.grad(node.as_ptr());
            let color = if node.flags & flag::PARAM != 0 {
                "yellow"
            } else if grad.is_some() {
                if forward.is_none_or(|f| f.has_node(node)) { "green" } else { "lightblue" }
            } else {
                "white"
            };
            let _ = write!(
                out,
                "  \"{:p}\" [ style = filled; fillcolor = {}; shape = record; label=\"{}",
                node.as_ptr(),
                color,
                name_and_type(&node)
            );
            if node.is_matrix() {
                let _ = write!(out, "{} [{}, {}] | <x>{}", i, node.ne[0], node.ne[1], node.op.symbol());
            } else {
                let _ = write!(out, "{} [{}, {}, {}] | <x>{}", i, node.ne[0], node.ne[1], node.ne[2], node.op.symbol());
            }
            match grad {
                Some(g) => {
                    let _ = writeln!(out, " | <g>{}\"; ]", g.op.symbol());
                }
                None => out.push_str("\"; ]\n"),
            }
        }

        for (i, leaf) in self.leafs().enumerate() {
            let _ = write!(
                out,
                "  \"{:p}\" [ style = filled; fillcolor = pink; shape = record; label=\"<x>{}",
                leaf.as_ptr(),
                name_and_type(&leaf)
            );
            let _ = write!(out, "CONST {} [{}, {}]", i, leaf.ne[0], leaf.ne[1]);
            let n = leaf.nelements();
            if n < 5 && !leaf.data.is_null() {
                // ggml prints a placeholder per element: data may live on a device.
                let marks = vec!["#"; usize::try_from(n).unwrap_or(0)].join(", ");
                let _ = write!(out, " | ({marks})");
            }
            out.push_str("\"; ]\n");
        }

        for node in self.nodes() {
            for j in 0..MAX_SRC {
                let Some(src) = node.src(j) else { continue };
                let to = self.grad_owner(node);
                let from = self.grad_owner(src).unwrap_or(src);
                let _ = writeln!(
                    out,
                    "  \"{:p}\" -> \"{:p}\" [ arrowhead = {}; style = {}; label = \"src {}\"; ]",
                    from.as_ptr(),
                    to.unwrap_or(node).as_ptr(),
                    if to.is_some() { "empty" } else { "vee" },
                    if to.is_some() { "dashed" } else { "solid" },
                    j
                );
            }
        }

        for leaf in self.leafs() {
            for j in 0..MAX_SRC {
                let Some(src) = leaf.src(j) else { continue };
                let _ = writeln!(out, "  \"{:p}\" -> \"{:p}\" [ label = \"src {}\"; ]", src.as_ptr(), leaf.as_ptr(), j);
            }
        }

        out.push_str("}\n");
        out
    }

    /// `ggml_graph_dump_dot`: writes [`Graph::dot`] to `filename`.
    pub fn dump_dot(&self, forward: Option<&Graph>, filename: &str) {
        let text = self.dot(forward);
        let written = std::fs::File::create(filename).and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            crate::ggml_abort!("cannot write {}: {}", filename, e);
        }
        crate::log_info!("ggml_graph_dump_dot: dot -Tpng {} -o {}.png && open {}.png\n", filename, filename, filename);
    }
}

/// `"name (type)|"`, or `"(type)|"` for an unnamed tensor.
fn name_and_type(t: &Tensor) -> String {
    let name = String::from_utf8_lossy(t.name_bytes());
    if name.is_empty() { format!("({})|", t.type_.name()) } else { format!("{} ({})|", name, t.type_.name()) }
}

#[cfg(test)]
mod tests {
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::types::Type;

    #[test]
    fn dot_lists_nodes_leafs_and_edges() {
        let mut c = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false });
        let a = c.new_tensor(Type::F32, &[2]);
        let b = c.new_tensor(Type::F32, &[2, 3, 4]);
        b.get_mut().op = Op::SCALE;
        b.get_mut().src[0] = a.as_ptr();
        let g = new_graph_custom(&mut c, 8, false);
        g.get_mut().build_forward_expand(b);
        let text = g.dot(None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7);
        assert_eq!(
            lines[3],
            format!(
                "  \"{:p}\" [ style = filled; fillcolor = white; shape = record; label=\"node_0 (f32)|0 [2, 3, 4] | <x>x*v\"; ]",
                b.as_ptr()
            )
        );
        assert_eq!(
            lines[4],
            format!(
                "  \"{:p}\" [ style = filled; fillcolor = pink; shape = record; label=\"<x>leaf_0 (f32)|CONST 0 [2, 1] | (#, #)\"; ]",
                a.as_ptr()
            )
        );
        assert!(lines[5].ends_with("[ arrowhead = vee; style = solid; label = \"src 0\"; ]"));
        g.print();
    }
}
