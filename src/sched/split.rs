//! Splitting an assigned graph: runs of nodes on one backend, the copies each run needs of
//! tensors that live where its backend cannot read them, and the graph the allocator plans
//! (the nodes with those copies placed at the start of their split, and the pipeline copies
//! as leafs so that they are allocated first and never overwritten).

use std::collections::HashMap;
use std::ffi::c_void;

use super::{Sched, Split, own_buffer};
use crate::backend::interface::{BufferUsage, GraphOptimizeParams};
use crate::core::graph::{Graph, cgraph};
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr, flag};

/// Tensors a backend asked to keep alive until a node has run, by that node.
type AllocDeps = HashMap<usize, Vec<TensorPtr>>;

/// `add_alloc_dep` of the optimize parameters: records that `tensor` must stay allocated
/// until `until` has been computed.
unsafe extern "C" fn add_alloc_dep(user_data: *mut c_void, tensor: *mut Tensor, until: *mut Tensor) {
    // SAFETY: `user_data` is the `AllocDeps` that `split_graph` passes along with this
    // function, alive and otherwise unused during the backend's `graph_optimize` call.
    let deps = unsafe { &mut *user_data.cast::<AllocDeps>() };
    // SAFETY: backends pass tensors of the graph being optimized.
    let (Some(tensor), Some(_)) = (unsafe { TensorPtr::from_raw(tensor) }, unsafe { TensorPtr::from_raw(until) })
    else {
        crate::ggml_abort!("graph_optimize added an allocation dependency on a NULL tensor")
    };
    let keep = deps.entry(until as usize).or_default();
    if !keep.contains(&tensor) {
        keep.push(tensor);
    }
}

/// A split while it is being built.
struct Pending {
    backend_id: usize,
    i_start: usize,
    inputs: Vec<TensorPtr>,
}

/// Writes `value` at `i`, growing the list (with zeros, as ggml's zeroed arrays) if needed.
fn put(ids: &mut Vec<i32>, i: usize, value: i32) {
    if ids.len() <= i {
        ids.resize(i + 1, 0);
    }
    ids[i] = value;
}

fn as_id(id: Option<usize>) -> i32 {
    id.map_or(-1, |i| i as i32)
}

impl Sched {
    /// `ggml_backend_sched_split_graph`: assigns backends to `graph`, splits it, points the
    /// nodes at the copies of their foreign inputs and builds the graph to allocate.
    pub fn split_graph(&mut self, graph: &mut Graph) {
        let previous_first_backend = self.splits.first().map_or(0, |s| s.backend_id);
        self.splits.clear();
        self.graph_inputs.clear();
        self.is_reset = false;
        self.arena.reset();

        graph.uid = cgraph::next_uid();

        self.assign_backends(graph);
        let splits = self.make_splits(graph, previous_first_backend);

        if self.debug > 0 {
            self.print_assignments(graph, &splits);
        }

        std::mem::swap(&mut self.node_backend_ids, &mut self.prev_node_backend_ids);
        std::mem::swap(&mut self.leaf_backend_ids, &mut self.prev_leaf_backend_ids);

        // Backends may reorder their splits and ask for tensors to be kept alive longer;
        // this happens before the allocator's graph is built so that both agree.
        let mut deps = AllocDeps::new();
        let mut params =
            GraphOptimizeParams { add_alloc_dep: Some(add_alloc_dep), user_data: (&raw mut deps).cast::<c_void>() };
        let n_nodes = graph.node_slots().len();
        let ends: Vec<usize> = splits.iter().skip(1).map(|p| p.i_start).chain(std::iter::once(n_nodes)).collect();
        self.splits = splits
            .into_iter()
            .zip(ends)
            .map(|(p, i_end)| Split {
                backend_id: p.backend_id,
                i_start: p.i_start,
                i_end,
                inputs: p.inputs,
                graph: graph.view(p.i_start as i32, i_end as i32),
            })
            .collect();
        for i in 0..self.splits.len() {
            let backend = self.backend_ref(self.splits[i].backend_id);
            backend.graph_optimize(&mut self.splits[i].graph, &mut params);
        }

        self.build_copy_graph(graph, &deps);

        for split in &mut self.splits {
            split.graph.uid = cgraph::next_uid();
        }
    }

    /// Pass 5: cuts the graph where the backend changes (or where a weight from another,
    /// incompatible backend would make a split's inputs pile up), and gives each split copies
    /// of the sources its backend cannot read.
    fn make_splits(&mut self, graph: &Graph, previous_first_backend: usize) -> Vec<Pending> {
        let nodes: Vec<TensorPtr> = graph.nodes().collect();
        let first = nodes.iter().position(|n| !n.op.is_view());
        let first_backend = first.map_or(previous_first_backend, |i| self.assigned(nodes[i]));

        let mut splits = Vec::new();
        let mut split = Pending { backend_id: first_backend, i_start: 0, inputs: Vec::new() };
        let mut cur = first_backend;

        for (i, &node) in nodes.iter().enumerate().skip(first.unwrap_or(nodes.len())) {
            if node.op.is_view() {
                continue;
            }
            let node_backend = self.assigned(node);

            // A weight on another backend that this one cannot read starts a new split, so
            // that the memory of the weights copied so far can be reused.
            let mut need_new_split = false;
            if node_backend == cur && !split.inputs.is_empty() {
                need_new_split = (0..MAX_SRC).filter_map(|j| node.src(j)).any(|src| {
                    own_buffer(src).is_some_and(|b| b.usage() == BufferUsage::WEIGHTS)
                        && self.table.backend_of(src) != Some(cur)
                        && !self.buffer_supported(src, cur)
                });
            }

            if node_backend != cur || need_new_split {
                let done =
                    std::mem::replace(&mut split, Pending { backend_id: node_backend, i_start: i, inputs: Vec::new() });
                splits.push(done);
                cur = node_backend;
            }

            for j in 0..MAX_SRC {
                let Some(src) = node.src(j) else { continue };
                let src_backend = self.assigned(src);

                if Sched::is_graph_input(src) && self.n_copies > 1 && self.table.copy(src, src_backend, 0).is_none() {
                    self.make_input_copies(src, src_backend);
                }

                if src_backend != cur && !self.buffer_supported(src, cur) {
                    if self.table.copy(src, cur, 0).is_none() {
                        self.make_split_input_copies(src, cur);
                        split.inputs.push(src);
                    }
                    let copy = self.table.copy(src, cur, self.cur_copy);
                    node.get_mut().src[j] = copy.map_or(std::ptr::null_mut(), TensorPtr::as_ptr);
                }
            }
        }
        splits.push(split);
        splits
    }

    /// A copy's name: `<backend>#<tensor>#<copy>` (truncated as tensor names are).
    fn copy_name(&self, backend_id: usize, src: TensorPtr, c: usize) -> String {
        format!("{}#{}#{}", super::backend_name(self.backend_ref(backend_id)), src.name(), c)
    }

    /// One copy per pipeline stage of the graph input `src` (the current stage uses `src`
    /// itself), all kept by the allocator for the whole graph.
    fn make_input_copies(&mut self, src: TensorPtr, backend_id: usize) {
        for c in 0..self.n_copies {
            let copy = if c == self.cur_copy {
                src
            } else {
                let t = self.arena.dup_layout(src);
                t.get_mut().set_name(&self.copy_name(backend_id, src, c));
                t
            };
            // Inputs and outputs are never overwritten by the allocator.
            copy.get_mut().flags |= flag::INPUT | flag::OUTPUT;
            self.table.set_copy(src, backend_id, c, copy);
        }
        self.graph_inputs.push(src);
    }

    /// The copies of `src` that a split on `backend_id` reads instead of it.
    fn make_split_input_copies(&mut self, src: TensorPtr, backend_id: usize) {
        for c in 0..self.n_copies {
            let copy = self.arena.dup_layout(src);
            copy.get_mut().set_name(&self.copy_name(backend_id, src, c));
            if self.n_copies > 1 {
                copy.get_mut().flags |= flag::INPUT | flag::OUTPUT;
            }
            self.table.set_copy(src, backend_id, c, copy);
        }
    }

    /// Appends a node to the allocator's graph.
    fn push_copy_node(&mut self, t: TensorPtr, backend_id: i32) {
        put(&mut self.node_backend_ids, self.copy_nodes.len(), backend_id);
        self.copy_nodes.push(Some(t));
    }

    fn push_copy_leaf(&mut self, t: TensorPtr, backend_id: i32) {
        put(&mut self.leaf_backend_ids, self.copy_leafs.len(), backend_id);
        self.copy_leafs.push(Some(t));
    }

    /// The graph the allocator plans (`sched->graph`): per split, for each input a view that
    /// keeps the input's source alive until the copy is made and the copy itself, then the
    /// split's nodes with the dependency nodes the backends asked for; leafs are the pipeline
    /// copies (with several copies) and then the graph's own leafs.
    fn build_copy_graph(&mut self, graph: &Graph, deps: &AllocDeps) {
        let n_dep_nodes: usize = deps.values().map(|keep| keep.len().div_ceil(MAX_SRC)).sum();
        let total_inputs = self.graph_inputs.len() + self.splits.iter().map(|s| s.inputs.len()).sum::<usize>();
        self.debug_prev_graph_size = self.debug_graph_size;
        self.debug_graph_size =
            graph.node_slots().len().max(graph.leaf_slots().len()) + total_inputs * 2 * self.n_copies + n_dep_nodes;

        self.copy_nodes.clear();
        self.copy_leafs.clear();
        let mut n_dep_nodes_added = 0;

        let splits = std::mem::take(&mut self.splits);
        for split in &splits {
            for &input in &split.inputs {
                let Some(input_cpy) = self.table.copy(input, split.backend_id, self.cur_copy) else {
                    crate::ggml_abort!("split input {} has no copy", input.name())
                };
                // Keeps the input alive until it has been copied.
                let input_dep = self.arena.view(input);
                input_dep.get_mut().src[0] = input.as_ptr();
                let input_backend = as_id(self.table.backend_of(input));
                self.push_copy_node(input_dep, input_backend);
                // Allocates the copy at the start of the split.
                self.push_copy_node(input_cpy, split.backend_id as i32);
            }

            for j in split.i_start..split.i_end {
                let node = graph.node(j);
                let node_backend = as_id(self.table.backend_of(node));
                self.push_copy_node(node, node_backend);

                let Some(keep) = deps.get(&(node.as_ptr() as usize)) else { continue };
                for group in keep.chunks(MAX_SRC) {
                    let dep = self.arena.view(group[0]);
                    for (s, t) in group.iter().enumerate() {
                        dep.get_mut().src[s] = t.as_ptr();
                    }
                    self.push_copy_node(dep, split.backend_id as i32);
                    n_dep_nodes_added += 1;
                }
            }
        }
        // A mismatch means a backend named as `until` a tensor that is not one of its nodes.
        crate::ggml_assert!(
            n_dep_nodes_added == n_dep_nodes,
            "allocation dependencies on {} nodes, {} of them found in the graph",
            n_dep_nodes,
            n_dep_nodes_added
        );

        if self.n_copies > 1 {
            for i in 0..self.graph_inputs.len() {
                let input = self.graph_inputs[i];
                let backend_id = self.assigned(input);
                for c in 0..self.n_copies {
                    let copy = self.pipeline_copy(input, backend_id, c);
                    self.push_copy_leaf(copy, backend_id as i32);
                }
            }
            for split in &splits {
                for &input in &split.inputs {
                    for c in 0..self.n_copies {
                        let copy = self.pipeline_copy(input, split.backend_id, c);
                        self.push_copy_leaf(copy, split.backend_id as i32);
                    }
                }
            }
        }
        self.splits = splits;

        for leaf in graph.leafs() {
            let id = as_id(self.table.backend_of(leaf));
            self.push_copy_leaf(leaf, id);
        }
    }

    #[track_caller]
    fn pipeline_copy(&self, t: TensorPtr, backend_id: usize, c: usize) -> TensorPtr {
        match self.table.copy(t, backend_id, c) {
            Some(copy) => copy,
            None => crate::ggml_abort!("tensor {} has no copy {} on backend {}", t.name(), c, backend_id),
        }
    }

    /// `GGML_SCHED_DEBUG`: the splits with their inputs and, at level 2, each node with the
    /// backends of its sources.
    fn print_assignments(&self, graph: &Graph, splits: &[Pending]) {
        let size = |t: TensorPtr| {
            let n = t.nbytes();
            if n >= 1024 * 1024 { format!("{}M", n / 1024 / 1024) } else { format!("{}K", n / 1024) }
        };
        let backend_name = |t: TensorPtr| {
            self.table.backend_of(t).map_or_else(|| String::from("NULL"), |b| super::backend_name(self.backend_ref(b)))
        };
        let mut cur_split = 0;
        for (i, node) in graph.nodes().enumerate() {
            if let Some(split) = splits.get(cur_split).filter(|s| s.i_start == i) {
                let mut line = format!(
                    "\n## SPLIT #{}: {} # {} inputs",
                    cur_split,
                    super::backend_name(self.backend_ref(split.backend_id)),
                    split.inputs.len()
                );
                for (j, input) in split.inputs.iter().enumerate() {
                    if j == 0 {
                        line.push_str(": ");
                    }
                    line.push_str(&format!("[{} ({:>5.5})] ", input.name(), size(*input)));
                }
                crate::log_debug!("{}\n", line);
                cur_split += 1;
            }
            if node.op.is_view() || self.debug <= 1 {
                continue;
            }
            let slot = graph.visited_hash_set.find_existing(node.as_ptr());
            let use_count = slot.map_or(0, |s| graph.use_counts().get(s).copied().unwrap_or(0));
            let mut line = format!(
                "node #{:3} ({:>10.10}): {:>20.20} ({:>5.5}) [{:>5.5} {:>8.8}] use={},c={}:",
                i,
                crate::core::ops::unary::op_desc(&node),
                node.name(),
                size(node),
                backend_name(node),
                "",
                use_count,
                i32::from(node.flags & flag::COMPUTE != 0)
            );
            for src in (0..MAX_SRC).filter_map(|j| node.src(j)) {
                line.push_str(&format!(
                    " {:>20.20} ({:>5.5}) [{:>5.5} {:>8.8}]",
                    src.name(),
                    size(src),
                    backend_name(src),
                    ""
                ));
            }
            crate::log_debug!("{}\n", line);
        }
    }
}
