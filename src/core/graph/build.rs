//! Forward graph construction: a depth-first walk from a result tensor through its sources,
//! appending every tensor after its sources (`ggml_build_forward_expand` and friends).
//!
//! The order in which tensors land in the node and leaf lists, the automatic names
//! (`leaf_%d`, `node_%d`), the use counts and the `COMPUTE` flags are those of ggml 0.25.1:
//! schedulers, allocators and graph dumps depend on them. The walk keeps its own stack instead
//! of recursing, so a long chain of ops cannot overflow the thread's stack.

use super::cgraph::{EvalOrder, Graph};
use crate::core::op::Op;
use crate::core::tensor::{MAX_SRC, TensorPtr, flag};

/// One tensor whose sources are being walked.
struct Frame {
    node: TensorPtr,
    slot: usize,
    compute: bool,
    /// Next source index to look at.
    next: usize,
    /// The tensor was already in the graph: only spread the compute flag to its sources; no
    /// use counts, no list entry.
    revisit: bool,
}

impl Graph {
    /// Marks `node` as computed if asked, and records it in the hash set on first sight.
    /// Returns its slot when there is nothing more to do for it, or pushes a frame to walk its
    /// sources and returns `None`.
    fn enter(&mut self, node: TensorPtr, compute: bool, stack: &mut Vec<Frame>) -> Option<usize> {
        if node.op != Op::NONE && compute {
            node.get_mut().flags |= flag::COMPUTE;
        }
        let Some(slot) = self.visited_hash_set.find(node.as_ptr()) else {
            crate::ggml_abort!("graph hash set is full (size {})", self.visited_hash_set.size)
        };
        if self.visited_hash_set.is_used(slot) {
            if compute {
                stack.push(Frame { node, slot, compute, next: 0, revisit: true });
                return None;
            }
            return Some(slot);
        }
        self.visited_hash_set.occupy(slot, node);
        self.use_counts_mut()[slot] = 0;
        stack.push(Frame { node, slot, compute, next: 0, revisit: false });
        None
    }

    /// Source index to visit `i`-th under the graph's evaluation order.
    fn source_index(&self, i: usize) -> usize {
        if self.order == EvalOrder::RIGHT_TO_LEFT { MAX_SRC - 1 - i } else { i }
    }

    /// Adds `root` and everything it depends on that is not yet in the graph
    /// (`ggml_visit_parents_graph`). Returns `root`'s hash slot.
    fn visit(&mut self, root: TensorPtr, compute: bool) -> usize {
        let mut stack = Vec::new();
        if let Some(slot) = self.enter(root, compute, &mut stack) {
            return slot;
        }
        loop {
            let Some(frame) = stack.last_mut() else { unreachable!("the walk ends when the root's frame is popped") };
            if frame.next < MAX_SRC {
                let i = frame.next;
                frame.next += 1;
                let (node, compute, revisit) = (frame.node, frame.compute, frame.revisit);
                if revisit {
                    if let Some(src) = node.src(i).filter(|s| s.flags & flag::COMPUTE == 0) {
                        self.enter(src, true, &mut stack);
                    }
                } else if let Some(slot) =
                    node.src(self.source_index(i)).and_then(|src| self.enter(src, compute, &mut stack))
                {
                    // A source already in the graph: count this use now (a new one is counted
                    // when its walk ends).
                    self.use_counts_mut()[slot] += 1;
                }
                continue;
            }

            let Some(done) = stack.pop() else { unreachable!("a frame was on the stack") };
            if !done.revisit {
                self.classify(done.node);
            }
            match stack.last() {
                None => return done.slot,
                Some(parent) if !parent.revisit => self.use_counts_mut()[done.slot] += 1,
                Some(_) => {}
            }
        }
    }

    /// Appends a newly visited tensor to the leafs (a constant: no op and not trainable) or
    /// the nodes, naming it after its position if it has no name.
    fn classify(&mut self, node: TensorPtr) {
        if node.op == Op::NONE && node.flags & flag::PARAM == 0 {
            crate::ggml_assert!(self.n_leafs < self.size, "graph has no room for more than {} leafs", self.size);
            if node.name_bytes().is_empty() {
                node.get_mut().set_name(&format!("leaf_{}", self.n_leafs));
            }
            self.push_leaf(node);
        } else {
            crate::ggml_assert!(self.n_nodes < self.size, "graph has no room for more than {} nodes", self.size);
            if node.name_bytes().is_empty() {
                node.get_mut().set_name(&format!("node_{}", self.n_nodes));
            }
            self.push_node(node);
        }
    }

    fn build_forward(&mut self, tensor: TensorPtr, compute: bool) {
        let n_old = self.n_nodes;
        self.visit(tensor, compute);
        if self.n_nodes > n_old {
            crate::ggml_assert!(
                self.node((self.n_nodes - 1) as usize) == tensor,
                "the last node added must be the tensor the graph was expanded with"
            );
        }
    }

    /// `ggml_build_forward_expand`: adds `tensor` and its dependencies, marking the ops among
    /// them to be computed.
    pub fn build_forward_expand(&mut self, tensor: TensorPtr) {
        self.build_forward(tensor, true);
    }

    /// `ggml_build_forward_order`: adds `tensor` and its dependencies to fix their order
    /// without marking them to be computed.
    pub fn build_forward_order(&mut self, tensor: TensorPtr) {
        self.build_forward(tensor, false);
    }

    /// `ggml_build_forward_select`: adds all `tensors` (so the graph's shape does not depend
    /// on the choice) but marks only `tensors[idx]`'s branch to be computed; returns it.
    pub fn build_forward_select(&mut self, tensors: &[TensorPtr], idx: usize) -> TensorPtr {
        crate::ggml_assert!(idx < tensors.len(), "selected index {} out of {} tensors", idx, tensors.len());
        for (i, &t) in tensors.iter().enumerate() {
            self.build_forward(t, i == idx);
        }
        tensors[idx]
    }
}

#[cfg(test)]
mod tests {
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::tensor::{TensorPtr, flag};
    use crate::core::types::Type;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    /// A hand-made op node (op constructors live elsewhere; the walk only reads op and src).
    fn op(c: &mut Context, srcs: &[TensorPtr]) -> TensorPtr {
        let t = c.new_tensor(Type::F32, &[4]);
        t.get_mut().op = Op::ADD;
        for (i, s) in srcs.iter().enumerate() {
            t.get_mut().src[i] = s.as_ptr();
        }
        t
    }

    #[test]
    fn sources_come_before_users_and_are_counted() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4]);
        let b = c.new_tensor(Type::F32, &[4]);
        let x = op(&mut c, &[a, b]);
        let y = op(&mut c, &[x, a]);
        let z = op(&mut c, &[y, x]);
        let g = new_graph_custom(&mut c, 16, false);
        g.get_mut().build_forward_expand(z);
        assert_eq!(g.nodes().collect::<Vec<_>>(), vec![x, y, z]);
        assert_eq!(g.leafs().collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(a.name(), "leaf_0");
        assert_eq!(x.name(), "node_0");
        assert_eq!(g.use_count(a.as_ptr()), 2);
        assert_eq!(g.use_count(x.as_ptr()), 2);
        assert_eq!(g.use_count(z.as_ptr()), 0);
        assert!(z.flags & flag::COMPUTE != 0);
        // expanding again adds nothing
        g.get_mut().build_forward_expand(z);
        assert_eq!(g.n_nodes, 3);
        assert_eq!(g.tensor_named(b"leaf_1"), Some(b));
    }

    #[test]
    fn select_marks_only_the_chosen_branch() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4]);
        let p = op(&mut c, &[a]);
        let q = op(&mut c, &[a]);
        let g = new_graph_custom(&mut c, 16, false);
        let chosen = g.get_mut().build_forward_select(&[p, q], 1);
        assert_eq!(chosen, q);
        assert_eq!(g.n_nodes, 2);
        assert_eq!(p.flags & flag::COMPUTE, 0);
        assert!(q.flags & flag::COMPUTE != 0);
        // a later expand through p marks it
        g.get_mut().build_forward_expand(p);
        assert!(p.flags & flag::COMPUTE != 0);
        assert_eq!(g.n_nodes, 2);
    }

    #[test]
    fn long_chains_do_not_recurse() {
        let mut c = Context::new(InitParams { mem_size: 64 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let mut t = c.new_tensor(Type::F32, &[4]);
        for _ in 0..100_000 {
            t = op(&mut c, &[t]);
        }
        let g = new_graph_custom(&mut c, 100_001, false);
        g.get_mut().build_forward_expand(t);
        assert_eq!(g.n_nodes, 100_000);
        assert_eq!(g.n_leafs, 1);
    }
}
