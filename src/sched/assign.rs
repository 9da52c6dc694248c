//! Backend assignment: which backend runs each node and holds each leaf.
//!
//! The passes, in order:
//! 1. tensors whose memory already exists (weights, pre-allocated inputs) go to the
//!    highest-priority backend that can use that memory and run the op; other graph inputs go
//!    to the CPU; ops reading a weight follow the weight, unless a higher-priority backend asks
//!    to take the op over (`offload_op`) from a weight in host memory;
//! 2. the accelerators' assignments spread to neighbouring unassigned nodes, downwards then
//!    upwards, skipping the CPU; then every backend's do, so that a node runs where the nodes
//!    around it run whenever that backend supports it;
//! 3. a node moves to a higher-priority backend that uses the same buffer type and can read
//!    all its sources; a node still unassigned goes to the backend able to read most of its
//!    sources;
//! 4. views follow their source, sources still unassigned follow their consumer, and a node
//!    still unassigned goes to the first backend that supports it.
//!
//! Assignments the user made with `set_tensor_backend` are never changed.

use super::{BackendPtr, Sched, own_buffer, storage_buffer};
use crate::backend::interface::BufferUsage;
use crate::core::graph::Graph;
use crate::core::op::Op;
use crate::core::tensor::{MAX_SRC, TensorPtr};

impl Sched {
    fn cpu_id(&self) -> usize {
        self.backends.len() - 1
    }

    /// The highest-priority backend that can use the memory `tensor` lives in and run `op`.
    fn backend_from_buffer(&self, tensor: TensorPtr, op: TensorPtr) -> Option<usize> {
        let buffer = storage_buffer(tensor)?;
        let buft = buffer.buft();
        let found = self.backends.iter().position(|b| b.supports_buft(buft) && b.supports_op(op));
        if found.is_none() && cfg!(debug_assertions) {
            crate::log_debug!(
                "ggml_backend_sched_backend_from_buffer: warning: no backend supports op {} with a weight with buffer type {} used in tensor {}, the weight will need to be copied\n",
                crate::core::ops::unary::op_desc(&tensor),
                buft.name_lossy(),
                tensor.name()
            );
        }
        found
    }

    /// Pass 1 for one tensor: the backend its current location dictates, if any.
    fn backend_from_location(&self, tensor: TensorPtr) -> Option<usize> {
        if let Some(id) = self.backend_from_buffer(tensor, tensor) {
            return Some(id);
        }
        if let Some(view_src) = tensor.view_source()
            && let Some(id) = self.backend_from_buffer(view_src, tensor)
        {
            return Some(id);
        }
        let has_memory = own_buffer(tensor).is_some() || tensor.view_source().is_some_and(|v| !v.buffer.is_null());
        if has_memory {
            // Pre-allocated memory cannot move to another backend.
            let buffer = storage_buffer(tensor).or_else(|| own_buffer(tensor));
            crate::ggml_abort!(
                "pre-allocated tensor ({}) in a buffer ({}) that cannot run the operation ({})",
                tensor.name(),
                buffer.map_or_else(|| String::from("NULL"), |b| b.buft().name_lossy()),
                tensor.op.name()
            );
        }

        // Graph inputs start on the CPU, which is assumed to be the last backend.
        if Sched::is_graph_input(tensor) {
            return Some(self.cpu_id());
        }

        // An op reading a weight runs where the weight is. ROPE's frequency table and
        // FLASH_ATTN_EXT's sinks are too small to decide anything, so those ops are skipped.
        if tensor.op == Op::ROPE || tensor.op == Op::FLASH_ATTN_EXT {
            return None;
        }
        for src in (0..MAX_SRC).filter_map(|j| tensor.src(j)) {
            let Some(buffer) = own_buffer(src) else { continue };
            if buffer.usage() != BufferUsage::WEIGHTS {
                continue;
            }
            let src_backend = self.backend_from_buffer(src, tensor);
            // A higher-priority backend may want the op even though the weight is in host
            // memory (it then copies the weight over).
            if self.op_offload && src_backend == Some(self.cpu_id()) && buffer.is_host() {
                let offload =
                    self.backends[..self.cpu_id()].iter().position(|b| b.supports_op(tensor) && b.offload_op(tensor));
                if offload.is_some() {
                    return offload;
                }
            }
            return src_backend;
        }
        None
    }

    /// Whether `backend_id` can read `t` where it lives (or, not allocated yet, where its
    /// assignment will put it).
    pub(super) fn buffer_supported(&self, t: TensorPtr, backend_id: usize) -> bool {
        let buft = match storage_buffer(t) {
            Some(buffer) => Some(buffer.buft()),
            None => {
                self.table.backend_of(t).or_else(|| self.table.backend_of_opt(t.view_source())).map(|id| self.bufts[id])
            }
        };
        buft.is_some_and(|buft| self.backends[backend_id].supports_buft(buft))
    }

    /// Assigns `node` to `backend_id` if that backend supports it.
    fn set_if_supported(&mut self, node: TensorPtr, backend_id: usize) {
        if self.backends[backend_id].supports_op(node) {
            self.table.set_backend(node, Some(backend_id));
        }
    }

    /// Passes 1 to 4: every node and every source of a node ends up with a backend.
    pub(super) fn assign_backends(&mut self, graph: &Graph) {
        // Pass 1: what the memory already in place dictates.
        for leaf in graph.leafs() {
            if self.table.backend_of(leaf).is_none() {
                let id = self.backend_from_location(leaf);
                self.table.set_backend(leaf, id);
            }
        }
        for node in graph.nodes() {
            if self.table.backend_of(node).is_none() {
                let id = self.backend_from_location(node);
                self.table.set_backend(node, id);
            }
        }

        // Pass 2: spread the accelerators' assignments (the CPU interrupts a run), then all.
        let order: Vec<TensorPtr> = graph.nodes().filter(|n| !n.op.is_view()).collect();
        self.expand(order.iter().copied(), true);
        self.expand(order.iter().rev().copied(), true);
        self.expand(order.iter().copied(), false);
        self.expand(order.iter().rev().copied(), false);

        // Pass 3: upgrades, and the nodes the expansion could not place.
        for &node in &order {
            match self.table.backend_of(node) {
                None => self.assign_most_supported(node),
                Some(id) => self.upgrade(node, id),
            }
        }

        // Pass 4: views and sources.
        for node in graph.nodes() {
            if node.view_source().is_some() && self.table.backend_of(node).is_none() {
                let id = self.table.backend_of_opt(node.view_source());
                self.table.set_backend(node, id);
            }
            let node_backend = self.table.backend_of(node);
            for src in (0..MAX_SRC).filter_map(|j| node.src(j)) {
                if self.table.backend_of(src).is_some() {
                    continue;
                }
                let id = match src.view_source() {
                    // A view lives where its source does.
                    Some(view_src) => self.table.backend_of(view_src),
                    None => node_backend,
                };
                self.table.set_backend(src, id);
            }
            for b in 0..self.backends.len() {
                if self.table.backend_of(node).is_some() {
                    break;
                }
                self.set_if_supported(node, b);
            }
            crate::ggml_assert!(
                self.table.backend_of(node).is_some(),
                "no backend supports node {} ({})",
                node.name(),
                node.op.name()
            );
        }
    }

    /// One sweep of pass 2 over the non-view nodes in `order`: each assigned node sets the
    /// backend that following unassigned nodes try; with `skip_cpu`, a CPU node stops it.
    fn expand(&mut self, order: impl Iterator<Item = TensorPtr>, skip_cpu: bool) {
        let mut current: Option<usize> = None;
        for node in order {
            match self.table.backend_of(node) {
                Some(id) => current = if skip_cpu && id == self.cpu_id() { None } else { Some(id) },
                None => {
                    if let Some(id) = current {
                        self.set_if_supported(node, id);
                    }
                }
            }
        }
    }

    /// Pass 3 for an unassigned node: the supporting backend that can read most sources
    /// (the highest-priority one among equals).
    fn assign_most_supported(&mut self, node: TensorPtr) {
        let mut best: Option<(usize, usize)> = None;
        for b in 0..self.backends.len() {
            if !self.backends[b].supports_op(node) {
                continue;
            }
            let n_supported = (0..MAX_SRC)
                .filter_map(|j| node.src(j))
                .filter(|&src| {
                    let assigned =
                        self.table.backend_of(src).is_some() || self.table.backend_of_opt(src.view_source()).is_some();
                    assigned && self.buffer_supported(src, b)
                })
                .count();
            if best.is_none_or(|(_, n)| n_supported > n) {
                best = Some((b, n_supported));
            }
        }
        if let Some((b, _)) = best {
            self.table.set_backend(node, Some(b));
        }
    }

    /// Pass 3 for an assigned node: the first higher-priority backend with the same buffer
    /// type that supports the op and can read every source.
    fn upgrade(&mut self, node: TensorPtr, id: usize) {
        for b in 0..id {
            if self.bufts[b] != self.bufts[id] || !self.backends[b].supports_op(node) {
                continue;
            }
            if (0..MAX_SRC).filter_map(|j| node.src(j)).all(|src| self.buffer_supported(src, b)) {
                self.table.set_backend(node, Some(b));
                return;
            }
        }
    }

    /// The backend assigned to `t`, which must have one by now.
    #[track_caller]
    pub(super) fn assigned(&self, t: TensorPtr) -> usize {
        match self.table.backend_of(t) {
            Some(id) => id,
            None => crate::ggml_abort!("tensor {} ({}) has no backend", t.name(), t.op.name()),
        }
    }

    pub(super) fn backend_ref(&self, id: usize) -> BackendPtr {
        self.backends[id]
    }
}
