//! Allocating and running the splits: re-planning the compute buffers when the assignment
//! moved tensors between buffer types, copying each split's inputs into its backend (waiting
//! on the events of the pipeline copy in use), running the split, and the evaluation
//! callback that lets the user look at chosen nodes as soon as they are computed.

use super::{BackendPtr, EventPtr, Sched, Split, cpy_tensor_async, own_buffer};
use crate::backend::buffer::{BufferTypePtr, tensor_copy};
use crate::backend::interface::BufferUsage;
use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;

impl Sched {
    fn buft_of(&self, id: i32) -> Option<BufferTypePtr> {
        usize::try_from(id).ok().and_then(|i| self.bufts.get(i).copied())
    }

    /// Whether some tensor now belongs to a backend with a different buffer type than the
    /// tensor at the same position of the previous graph.
    fn backend_ids_changed(&self, ids: &[i32], prev: &[i32], n: usize) -> bool {
        (0..n).any(|i| {
            let (now, before) = (ids[i], prev.get(i).copied().unwrap_or(0));
            now != before && self.buft_of(now) != self.buft_of(before)
        })
    }

    /// Gives the split graph its memory, planning the buffers again when needed.
    pub(super) fn alloc_splits(&mut self) -> bool {
        let (n_nodes, n_leafs) = (self.copy_nodes.len(), self.copy_leafs.len());
        let changed = self.backend_ids_changed(&self.node_backend_ids, &self.prev_node_backend_ids, n_nodes)
            || self.backend_ids_changed(&self.leaf_backend_ids, &self.prev_leaf_backend_ids, n_leafs);

        let graph = self.copy_graph();
        if !changed && self.galloc.alloc_graph(&graph) {
            return true;
        }
        if cfg!(debug_assertions) {
            crate::log_debug!(
                "ggml_backend_sched_alloc_splits: failed to allocate graph, reserving (backend_ids_changed = {})\n",
                i32::from(changed)
            );
        }

        if self.debug_realloc > 0 {
            // Of interest: a re-planning although the graph kept its size.
            let unexpected = !changed && self.debug_prev_graph_size == self.debug_graph_size;
            if unexpected || self.debug_realloc > 1 {
                crate::ggml_abort!(
                    "ggml_backend_sched_alloc_splits: unexpected graph reallocation (graph size = {}, nodes = {}, leafs = {}), debug_realloc = {}",
                    self.debug_graph_size,
                    n_nodes,
                    n_leafs,
                    self.debug_realloc
                );
            }
        }

        // Re-planning may move the split inputs; wait for every backend, without touching the
        // copy index as `synchronize` would.
        for b in &self.backends {
            b.synchronize();
        }
        if !self.reserve_copy_graph() {
            crate::log_error!("ggml_backend_sched_alloc_splits: failed to reserve graph buffers\n");
            return false;
        }
        let graph = self.copy_graph();
        if !self.galloc.alloc_graph(&graph) {
            crate::log_error!("ggml_backend_sched_alloc_splits: failed to allocate graph\n");
            return false;
        }
        true
    }

    fn event(&self, backend_id: usize, copy: usize) -> Option<EventPtr> {
        self.events.get(backend_id).and_then(|per_copy| per_copy[copy])
    }

    /// Waits on the host until `backend_id` has finished its work of the current copy.
    fn wait_for(&self, backend_id: usize) {
        match self.event(backend_id, self.cur_copy) {
            Some(event) => event.synchronize(),
            None => self.backends[backend_id].synchronize(),
        }
    }

    /// Runs every split in order.
    pub(super) fn compute_splits(&mut self) -> Status {
        let mut splits = std::mem::take(&mut self.splits);
        let status = self.run_splits(&mut splits);
        self.splits = splits;
        status
    }

    fn run_splits(&self, splits: &mut [Split]) -> Status {
        let mut experts = ExpertFilter::default();
        let mut prev_backend_id: Option<usize> = None;

        for split in splits.iter_mut() {
            let split_backend_id = split.backend_id;
            let split_backend = self.backends[split_backend_id];

            // The allocator may have reused memory across splits: a split without inputs on
            // another backend waits for the previous split's work.
            if split.inputs.is_empty()
                && let Some(prev) = prev_backend_id.filter(|&p| p != split_backend_id)
            {
                self.wait_for(prev);
            }

            for input_id in 0..split.inputs.len() {
                self.copy_input(split, input_id, &mut experts);
            }

            let status = match self.callback_eval {
                None => split_backend.graph_compute_async(&mut split.graph),
                Some(callback) => self.compute_observed(split_backend, split, callback),
            };
            if status != Status::SUCCESS {
                return status;
            }

            if let Some(event) = self.event(split_backend_id, self.cur_copy) {
                split_backend.event_record(event);
            }
            prev_backend_id = Some(split_backend_id);
        }
        Status::SUCCESS
    }

    /// Copies input `input_id` of `split` into the split's backend.
    fn copy_input(&self, split: &Split, input_id: usize, experts: &mut ExpertFilter) {
        let split_backend_id = split.backend_id;
        let split_backend = self.backends[split_backend_id];
        let input = split.inputs[input_id];
        let input_backend = self.backends[self.assigned(input)];
        let Some(input_cpy) = self.table.copy(input, split_backend_id, self.cur_copy) else {
            crate::ggml_abort!("split input {} has no copy", input.name())
        };

        if Sched::is_graph_input(input) {
            // The user may overwrite an input as soon as this returns: copy it now.
            self.wait_for(split_backend_id);
            tensor_copy(input, input_cpy);
            return;
        }

        // The split's backend may still be reading the previous contents of the copy.
        match self.event(split_backend_id, self.cur_copy) {
            Some(event) => split_backend.event_wait(event),
            None => split_backend.synchronize(),
        }

        if let Some(node) = self.expert_consumer(split, input, input_cpy) {
            experts.copy_used(self, split, input_id, node, input_backend);
            return;
        }

        // An asynchronous copy if the backend offers one; else a blocking one, which needs no
        // wait on the destination beyond the copy's event, pipeline copies and events
        // keeping the stages apart.
        if !cpy_tensor_async(input_backend, split_backend, input, input_cpy) {
            input_backend.synchronize();
            self.wait_for(split_backend_id);
            tensor_copy(input, input_cpy);
        }
    }

    /// The split's first node when it is a MUL_MAT_ID reading, as its expert weights, the
    /// copy of `input`, a weight in host memory: then only the experts in use are copied.
    fn expert_consumer(&self, split: &Split, input: TensorPtr, input_cpy: TensorPtr) -> Option<TensorPtr> {
        if split.graph.n_nodes <= 0 {
            return None;
        }
        let buffer = own_buffer(input)?;
        if buffer.usage() != BufferUsage::WEIGHTS || !buffer.is_host() {
            return None;
        }
        let node = split.graph.node(0);
        (node.op == Op::MUL_MAT_ID && node.src(0) == Some(input_cpy)).then_some(node)
    }

    /// Runs a split in pieces that end at the nodes the callback wants to see, showing it each
    /// of those once computed; stops early (successfully) when the callback says so.
    fn compute_observed(&self, backend: BackendPtr, split: &mut Split, callback: super::SchedEvalCallback) -> Status {
        let user_data = self.callback_eval_user_data;
        // SAFETY: the user's callback, called as ggml documents, with a live node.
        let ask = |t: TensorPtr, ask: bool| unsafe { callback(t.as_ptr(), ask, user_data) };
        let n = split.graph.node_slots().len();
        let mut j0 = 0;
        while j0 < n {
            let mut j1 = j0;
            let mut t = split.graph.node(j0);
            let mut need = ask(t, true);
            while !need && j1 + 1 < n {
                j1 += 1;
                t = split.graph.node(j1);
                need = ask(t, true);
            }

            let mut part = split.graph.view(j0 as i32, (j1 + 1) as i32);
            let status = backend.graph_compute_async(&mut part);
            if status != Status::SUCCESS {
                return status;
            }
            backend.synchronize();

            if need && !ask(t, false) {
                break;
            }
            j0 = j1 + 1;
        }
        Status::SUCCESS
    }
}

/// The experts a MUL_MAT_ID selects, remembered while consecutive splits use the same ids.
#[derive(Default)]
struct ExpertFilter {
    ids_tensor: Option<TensorPtr>,
    used: Vec<bool>,
}

impl ExpertFilter {
    /// Copies the experts of `split.inputs[input_id]` that `node` (a MUL_MAT_ID) uses into the
    /// copy, in runs of consecutive experts.
    fn copy_used(&mut self, sched: &Sched, split: &Split, input_id: usize, node: TensorPtr, input_backend: BackendPtr) {
        let split_backend = sched.backends[split.backend_id];
        let input = split.inputs[input_id];
        let Some(input_cpy) = node.src(0) else { return };
        let n_expert = usize::try_from(input.ne[2]).unwrap_or(0);
        let expert_size = input.nb[2];

        input_backend.synchronize();

        let Some(mut ids_tensor) = node.src(2) else { crate::ggml_abort!("MUL_MAT_ID without ids") };
        let mut ids_backend = split_backend;
        if ids_tensor.nelements() == 0 {
            return;
        }
        // The ids may be a later input of this split, not copied yet: read the original.
        for &later in &split.inputs[input_id + 1..] {
            if sched.table.copy(later, split.backend_id, sched.cur_copy) == Some(ids_tensor) {
                ids_tensor = later;
                ids_backend = sched.backends[sched.assigned(later)];
                break;
            }
        }

        if self.ids_tensor != Some(ids_tensor) {
            let mut bytes = vec![0u8; ids_tensor.nbytes() / 4 * 4];
            ids_backend.tensor_get_async(ids_tensor, &mut bytes, 0);
            ids_backend.synchronize();
            let at = |k: usize| {
                let b = &bytes[k * 4..k * 4 + 4];
                i32::from_ne_bytes([b[0], b[1], b[2], b[3]])
            };
            self.used = vec![false; n_expert];
            for i1 in 0..usize::try_from(ids_tensor.ne[1]).unwrap_or(0) {
                for i0 in 0..usize::try_from(ids_tensor.ne[0]).unwrap_or(0) {
                    let id = at(i1 * ids_tensor.nb[1] / 4 + i0 * ids_tensor.nb[0] / 4);
                    crate::ggml_assert!(
                        usize::try_from(id).is_ok_and(|id| id < n_expert),
                        "expert id {} out of range (0..{})",
                        id,
                        n_expert
                    );
                    self.used[id as usize] = true;
                }
            }
            self.ids_tensor = Some(ids_tensor);
        }

        // SAFETY: the input is a weight in host memory holding nbytes bytes at `data`, which
        // stay untouched while the copy is in flight.
        let host = unsafe { std::slice::from_raw_parts(input.data.cast::<u8>().cast_const(), input.nbytes()) };
        let copy_experts = |first: usize, last: usize| {
            let offset = first * expert_size;
            // A little more after the last expert of a run, so that the padding the CUDA
            // backend's matrix kernels read holds numbers, not garbage.
            let padding_end = if last + 1 < n_expert { expert_size.min(512) } else { 0 };
            let size = (last - first + 1) * expert_size + padding_end;
            split_backend.tensor_set_async(input_cpy, &host[offset..offset + size], offset);
        };

        let mut run: Option<(usize, usize)> = None;
        for id in (0..n_expert).filter(|&id| self.used[id]) {
            run = match run {
                Some((first, last)) if id == last + 1 => Some((first, id)),
                Some((first, last)) => {
                    copy_experts(first, last);
                    Some((id, id))
                }
                None => Some((id, id)),
            };
        }
        if let Some((first, last)) = run {
            copy_experts(first, last);
        }
    }
}
