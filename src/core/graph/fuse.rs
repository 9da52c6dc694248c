//! `ggml_can_fuse_subgraph_ext`: whether backends may compute a run of nodes as one fused
//! kernel, i.e. whether the nodes' intermediate results are invisible outside the run.

use super::cgraph::Graph;
use super::tensor_io::{BUFFER_USAGE_WEIGHTS, buffer_usage};
use crate::core::op::Op;
use crate::core::tensor::{TensorPtr, flag};

impl Graph {
    /// The node at `idx`, if `idx` names one.
    fn node_checked(&self, idx: i32) -> Option<TensorPtr> {
        usize::try_from(idx).ok().filter(|&i| i < self.node_slots().len()).map(|i| self.node(i))
    }

    /// Position in `idxs` of the entry naming `tensor`; like ggml, the search gives up at the
    /// first index that names no node.
    fn position_in(&self, idxs: &[i32], tensor: TensorPtr) -> Option<usize> {
        for (pos, &idx) in idxs.iter().enumerate() {
            let node = self.node_checked(idx)?;
            if node == tensor {
                return Some(pos);
            }
        }
        None
    }

    /// True if node `idx` is used by exactly `n_uses` nodes, is not a view and is not a graph
    /// output: its result can be folded into its users (`ggml_node_has_n_uses`).
    pub fn node_has_n_uses(&self, idx: usize, n_uses: i32) -> bool {
        let node = self.node(idx);
        self.use_count(node.as_ptr()) == n_uses && node.view_src.is_null() && node.flags & flag::OUTPUT == 0
    }

    /// `ggml_can_fuse_ext`: nodes `node_idxs` have the ops `ops`, are computed, each but the
    /// last is used once (by the next, of which it is source 0 or 1) and all have one shape.
    pub fn can_fuse(&self, node_idxs: &[i32], ops: &[Op]) -> bool {
        let n = ops.len();
        let mut prev: Option<TensorPtr> = None;
        for (i, (&idx, &op)) in node_idxs.iter().zip(ops).enumerate() {
            let Some(node) = self.node_checked(idx) else { return false };
            if node.op != op || node.flags & flag::COMPUTE == 0 {
                return false;
            }
            if i + 1 < n && !self.node_has_n_uses(idx as usize, 1) {
                return false;
            }
            if let Some(p) = prev {
                let feeds = node.src(0) == Some(p) || node.src(1) == Some(p);
                if !feeds || !node.same_shape(&p) {
                    return false;
                }
            }
            prev = Some(node);
        }
        true
    }

    /// True if nodes `node_idxs` have the ops `ops`, are all computed, and every one of them
    /// that is not among the graph nodes `outputs` is used only inside the run, is not a
    /// graph output, and views only tensors of the run or constant weights.
    pub fn can_fuse_subgraph(&self, node_idxs: &[i32], ops: &[Op], outputs: &[i32]) -> bool {
        crate::ggml_assert!(!outputs.is_empty(), "a fused subgraph needs at least one output");
        crate::ggml_assert!(ops.len() >= node_idxs.len(), "one op per fused node is needed");

        for (i, &idx) in node_idxs.iter().enumerate() {
            let Some(node) = self.node_checked(idx) else { return false };
            if node.op != ops[i] || node.flags & flag::COMPUTE == 0 {
                return false;
            }
            if self.position_in(outputs, node).is_some() {
                continue;
            }
            if node.flags & flag::OUTPUT != 0 {
                return false;
            }

            let uses_inside: usize = node_idxs[i + 1..]
                .iter()
                .filter_map(|&j| self.node_checked(j))
                .map(|other| other.src.iter().filter(|&&s| std::ptr::eq(s, node.as_ptr())).count())
                .sum();
            if uses_inside as i64 != i64::from(self.use_count(node.as_ptr())) {
                return false;
            }

            let mut view_src = node.view_source();
            while let Some(v) = view_src {
                let constant = buffer_usage(v) == Some(BUFFER_USAGE_WEIGHTS) && v.flags & flag::PARAM == 0;
                if self.position_in(node_idxs, v).is_none() && !constant {
                    return false;
                }
                view_src = v.view_source();
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::tensor::{TensorPtr, flag};
    use crate::core::types::Type;

    fn op(c: &mut Context, o: Op, srcs: &[TensorPtr]) -> TensorPtr {
        let t = c.new_tensor(Type::F32, &[4]);
        t.get_mut().op = o;
        for (i, s) in srcs.iter().enumerate() {
            t.get_mut().src[i] = s.as_ptr();
        }
        t
    }

    #[test]
    fn intermediate_used_outside_blocks_fusion() {
        let mut c = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let a = c.new_tensor(Type::F32, &[4]);
        let n = op(&mut c, Op::RMS_NORM, &[a]);
        let m = op(&mut c, Op::MUL, &[n, a]);
        let g = new_graph_custom(&mut c, 16, false);
        g.get_mut().build_forward_expand(m);
        assert!(g.can_fuse_subgraph(&[0, 1], &[Op::RMS_NORM, Op::MUL], &[1]));
        assert!(!g.can_fuse_subgraph(&[0, 1], &[Op::RMS_NORM, Op::ADD], &[1]));

        let extra = op(&mut c, Op::SCALE, &[n]);
        g.get_mut().build_forward_expand(extra);
        assert!(!g.can_fuse_subgraph(&[0, 1], &[Op::RMS_NORM, Op::MUL], &[1]));
        n.get_mut().flags |= flag::OUTPUT;
        assert!(g.can_fuse_subgraph(&[0, 1], &[Op::RMS_NORM, Op::MUL], &[0, 1]));
        assert!(!g.can_fuse_subgraph(&[0, 5], &[Op::RMS_NORM, Op::MUL], &[1]));
        assert!(!g.can_fuse(&[0, 1], &[Op::RMS_NORM, Op::MUL]));
        n.get_mut().flags &= !flag::OUTPUT;
        assert!(!g.can_fuse(&[1, 2], &[Op::MUL, Op::SCALE]));
    }
}
