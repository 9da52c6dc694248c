//! The backend scheduler (`ggml_backend_sched`): runs one graph over several backends.
//!
//! Backends come in priority order, the last one being the CPU (the fallback that can run
//! anything). Running a graph takes four steps:
//! - assignment ([`assign`]): every node and leaf gets a backend, first from where its memory
//!   already is (weights, inputs), then by spreading the accelerators' assignments to their
//!   neighbours, upgrading to higher-priority backends that can read the same memory, and
//!   finally by giving the remaining sources their consumer's backend;
//! - splitting ([`split`]): runs of consecutive nodes on one backend become splits; a source
//!   that lives where the split's backend cannot read it gets a copy in the split's backend
//!   (one per pipeline copy), and the graph handed to the allocator lists those copies so that
//!   they get memory;
//! - allocation: the graph allocator places every tensor in its backend's compute buffer,
//!   planning again whenever the assignment moved a tensor to a different buffer type;
//! - computing ([`compute`]): each split copies its inputs in and runs on its backend, with
//!   events between backends when pipeline parallelism keeps several copies of the inputs.
//!
//! Unlike ggml, nothing here has a compile-time maximum: backends, splits, split inputs and
//! the scheduler's own tensors live in growable storage.

mod assign;
mod compute;
mod split;

use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};

use crate::alloc::Gallocr;
use crate::backend::backend::{BackendPtr, EventPtr, event_new};
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::interface::{Backend, DevType};
use crate::core::context::{Context, InitParams, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::graph::{EvalOrder, Graph, HashSet};
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr, flag};

/// `GGML_SCHED_MAX_COPIES`: the input copies kept for pipeline parallelism.
pub const MAX_COPIES: usize = 4;

/// `ggml_backend_sched_eval_callback`: asked (`ask` true) whether the user wants to see a
/// node, then shown it (`ask` false) once computed; returning false then stops the graph.
pub type SchedEvalCallback = unsafe extern "C" fn(t: *mut Tensor, ask: bool, user_data: *mut c_void) -> bool;

/// A backend's name, for copies' names and messages.
fn backend_name(b: BackendPtr) -> String {
    crate::backend::device::lossy(b.name())
}

/// A backend's own asynchronous copy of `src` (on `from`) into `dst` (on `to`), without
/// the blocking fallback of `ggml_backend_tensor_copy_async`: false when `to` has no such copy
/// or declines.
fn cpy_tensor_async(from: BackendPtr, to: BackendPtr, src: TensorPtr, dst: TensorPtr) -> bool {
    to.cpy_tensor_async(Some(from), src, dst)
}

/// The buffer holding a tensor's memory (its view source's, for a view).
fn storage_buffer(t: TensorPtr) -> Option<BufferPtr> {
    let buffer = match t.view_source() {
        Some(src) => src.buffer,
        None => t.buffer,
    };
    // SAFETY: a tensor's buffer field is null or a live buffer it was allocated in.
    unsafe { BufferPtr::from_raw(buffer.cast()) }
}

/// The tensor's own buffer field (not its view source's).
fn own_buffer(t: TensorPtr) -> Option<BufferPtr> {
    // SAFETY: as in `storage_buffer`.
    unsafe { BufferPtr::from_raw(t.buffer.cast()) }
}

// ---------------------------------------------------------------------------------------------
// Per-tensor state

/// Hashes tensor addresses (16-byte aligned, hence the shift) with one multiplication.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = ((n as u64) >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// What the scheduler knows about each tensor it has seen: the backend it runs on or lives in
/// and its copies in other backends (`[backend][copy]`). Grows with the graphs it is given.
struct TensorTable {
    index: HashMap<usize, usize, BuildHasherDefault<AddrHasher>>,
    backend: Vec<Option<usize>>,
    copies: Vec<Option<TensorPtr>>,
    per_tensor: usize,
    n_copies: usize,
}

impl TensorTable {
    fn new(capacity: usize, n_backends: usize, n_copies: usize) -> TensorTable {
        TensorTable {
            index: HashMap::with_capacity_and_hasher(capacity, Default::default()),
            backend: Vec::with_capacity(capacity),
            copies: Vec::new(),
            per_tensor: n_backends * n_copies,
            n_copies,
        }
    }

    fn clear(&mut self) {
        self.index.clear();
        self.backend.clear();
        self.copies.clear();
    }

    fn slot(&self, t: TensorPtr) -> Option<usize> {
        self.index.get(&(t.as_ptr() as usize)).copied()
    }

    fn slot_or_insert(&mut self, t: TensorPtr) -> usize {
        let next = self.backend.len();
        let slot = *self.index.entry(t.as_ptr() as usize).or_insert(next);
        if slot == next {
            self.backend.push(None);
            self.copies.resize(self.copies.len() + self.per_tensor, None);
        }
        slot
    }

    /// The backend assigned to `t`, if any.
    fn backend_of(&self, t: TensorPtr) -> Option<usize> {
        self.slot(t).and_then(|s| self.backend[s])
    }

    /// As `backend_of` for an optional tensor (a missing view source has no backend).
    fn backend_of_opt(&self, t: Option<TensorPtr>) -> Option<usize> {
        t.and_then(|t| self.backend_of(t))
    }

    fn set_backend(&mut self, t: TensorPtr, backend: Option<usize>) {
        if backend.is_none() && self.slot(t).is_none() {
            return;
        }
        let s = self.slot_or_insert(t);
        self.backend[s] = backend;
    }

    fn copy(&self, t: TensorPtr, backend: usize, copy: usize) -> Option<TensorPtr> {
        let s = self.slot(t)?;
        self.copies[s * self.per_tensor + backend * self.n_copies + copy]
    }

    fn set_copy(&mut self, t: TensorPtr, backend: usize, copy: usize, value: TensorPtr) {
        let s = self.slot_or_insert(t);
        self.copies[s * self.per_tensor + backend * self.n_copies + copy] = Some(value);
    }
}

/// Tensor headers the scheduler makes for itself (input copies and dependency views), in
/// metadata-only contexts that are added as needed and emptied at every split.
struct TensorArena {
    chunks: Vec<Context>,
    current: usize,
}

impl TensorArena {
    const TENSORS_PER_CHUNK: usize = 1024;

    fn new() -> TensorArena {
        TensorArena { chunks: Vec::new(), current: 0 }
    }

    /// Forgets every tensor made so far; their headers are reused.
    fn reset(&mut self) {
        for c in &mut self.chunks {
            c.reset();
        }
        self.current = 0;
    }

    /// A context with room for one more tensor header.
    fn context(&mut self) -> &mut Context {
        let need = OBJECT_SIZE + TENSOR_SIZE;
        while self.current < self.chunks.len()
            && self.chunks[self.current].mem_size() - self.chunks[self.current].used_mem() < need
        {
            self.current += 1;
        }
        if self.current == self.chunks.len() {
            self.chunks.push(*Context::new(InitParams {
                mem_size: Self::TENSORS_PER_CHUNK * need,
                mem_buffer: std::ptr::null_mut(),
                no_alloc: true,
            }));
        }
        &mut self.chunks[self.current]
    }

    /// A tensor of `src`'s type, shape and strides (`ggml_dup_tensor_layout`).
    fn dup_layout(&mut self, src: TensorPtr) -> TensorPtr {
        let t = self.context().dup_tensor(src);
        t.get_mut().nb = src.nb;
        t
    }

    /// A view of all of `src` (`ggml_view_tensor`).
    fn view(&mut self, src: TensorPtr) -> TensorPtr {
        crate::core::ops::view_tensor(self.context(), src)
    }
}

// ---------------------------------------------------------------------------------------------
// The scheduler

/// One run of consecutive nodes on one backend.
pub struct Split {
    pub backend_id: usize,
    pub i_start: usize,
    pub i_end: usize,
    /// Tensors computed or stored elsewhere that this split reads through copies.
    pub inputs: Vec<TensorPtr>,
    /// The split's nodes, as a view of the scheduled graph.
    pub graph: Graph,
}

/// `struct ggml_backend_sched`.
pub struct Sched {
    /// Nothing has been assigned since the last reset.
    is_reset: bool,
    /// The current graph is allocated and may be computed.
    is_alloc: bool,

    backends: Vec<BackendPtr>,
    bufts: Vec<BufferTypePtr>,
    galloc: Gallocr,

    table: TensorTable,

    /// The graph handed to the allocator: the nodes with the split inputs' copies, and the
    /// leafs with the pipeline copies.
    copy_nodes: Vec<Option<TensorPtr>>,
    copy_leafs: Vec<Option<TensorPtr>>,
    /// Backend ids of `copy_nodes` / `copy_leafs`, and of the previous split's; these only
    /// grow, so entries past the current graph keep older values, as ggml's arrays do.
    node_backend_ids: Vec<i32>,
    leaf_backend_ids: Vec<i32>,
    prev_node_backend_ids: Vec<i32>,
    prev_leaf_backend_ids: Vec<i32>,

    splits: Vec<Split>,

    n_copies: usize,
    cur_copy: usize,
    next_copy: usize,
    /// `[backend][copy]`; empty without pipeline parallelism.
    events: Vec<Vec<Option<EventPtr>>>,
    /// Graph inputs (tensors flagged INPUT) that have one copy per pipeline stage.
    graph_inputs: Vec<TensorPtr>,

    arena: TensorArena,

    callback_eval: Option<SchedEvalCallback>,
    callback_eval_user_data: *mut c_void,

    op_offload: bool,
    /// `GGML_SCHED_DEBUG`: 1 prints the splits, 2 every node too.
    debug: i32,
    /// `GGML_SCHED_DEBUG_REALLOC`: abort on a re-planning that the graph did not call for.
    debug_realloc: i32,
    debug_graph_size: usize,
    debug_prev_graph_size: usize,
}

fn env_int(name: &str) -> Option<i32> {
    let v = std::env::var(name).ok()?;
    // atoi: leading digits, anything else 0.
    let digits: String = v.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    Some(digits.parse().unwrap_or(0))
}

impl Sched {
    /// `ggml_backend_sched_new`: backends in priority order (the last one a CPU backend),
    /// with their compute buffer types (`None`: each backend's default). `graph_size` is a
    /// capacity hint: larger graphs are accepted too.
    pub fn new(
        backends: &[BackendPtr],
        bufts: Option<&[BufferTypePtr]>,
        graph_size: usize,
        parallel: bool,
        op_offload: bool,
    ) -> Box<Sched> {
        crate::ggml_assert!(!backends.is_empty(), "the scheduler needs at least one backend");
        let last = backends[backends.len() - 1];
        crate::ggml_assert!(
            last.device().dev_type() == DevType::CPU,
            "the last backend of a scheduler must be a CPU backend, not {}",
            backend_name(last)
        );
        let n_backends = backends.len();
        let n_copies = if parallel { MAX_COPIES } else { 1 };

        let bufts: Vec<BufferTypePtr> = match bufts {
            Some(b) => {
                crate::ggml_assert!(b.len() == n_backends, "one buffer type per backend");
                b.to_vec()
            }
            None => backends.iter().map(|b| b.default_buffer_type()).collect(),
        };
        for (b, buft) in backends.iter().zip(&bufts) {
            crate::ggml_assert!(
                b.supports_buft(*buft),
                "backend {} does not support buffer type {}",
                backend_name(*b),
                buft.name_lossy()
            );
        }
        let events = if n_copies > 1 {
            backends
                .iter()
                // events come from the backend's device and are freed in `drop`
                .map(|b| (0..n_copies).map(|_| event_new(Some(b.device()))).collect())
                .collect()
        } else {
            Vec::new()
        };

        let mut sched = Box::new(Sched {
            is_reset: false,
            is_alloc: false,
            backends: backends.to_vec(),
            galloc: Gallocr::new(&bufts),
            bufts,
            table: TensorTable::new(graph_size, n_backends, n_copies),
            copy_nodes: Vec::new(),
            copy_leafs: Vec::new(),
            node_backend_ids: Vec::new(),
            leaf_backend_ids: Vec::new(),
            prev_node_backend_ids: Vec::new(),
            prev_leaf_backend_ids: Vec::new(),
            splits: Vec::new(),
            n_copies,
            cur_copy: 0,
            next_copy: 0,
            events,
            graph_inputs: Vec::new(),
            arena: TensorArena::new(),
            callback_eval: None,
            callback_eval_user_data: std::ptr::null_mut(),
            op_offload,
            debug: env_int("GGML_SCHED_DEBUG").unwrap_or(0),
            debug_realloc: env_int("GGML_SCHED_DEBUG_REALLOC").unwrap_or(0),
            debug_graph_size: 0,
            debug_prev_graph_size: 0,
        });
        sched.reset();
        sched
    }

    pub fn n_backends(&self) -> usize {
        self.backends.len()
    }

    pub fn backend(&self, i: usize) -> BackendPtr {
        crate::ggml_assert!(i < self.backends.len(), "backend index {} out of range", i);
        self.backends[i]
    }

    pub fn n_splits(&self) -> usize {
        self.splits.len()
    }

    pub fn splits(&self) -> &[Split] {
        &self.splits
    }

    pub fn n_copies(&self) -> usize {
        self.n_copies
    }

    /// The priority of `backend` (its index), if it is one of ours.
    pub fn backend_id(&self, backend: *mut Backend) -> Option<usize> {
        self.backends.iter().position(|b| b.as_ptr() == backend)
    }

    #[track_caller]
    fn known_backend(&self, backend: *mut Backend) -> usize {
        match self.backend_id(backend) {
            Some(i) => i,
            None => crate::ggml_abort!("backend {:p} is not one of the scheduler's", backend),
        }
    }

    /// `ggml_backend_sched_get_buffer_type`.
    pub fn buffer_type(&self, backend: *mut Backend) -> BufferTypePtr {
        self.bufts[self.known_backend(backend)]
    }

    /// `ggml_backend_sched_get_buffer_size`.
    pub fn buffer_size(&self, backend: *mut Backend) -> usize {
        self.galloc.buffer_size(self.known_backend(backend))
    }

    /// `ggml_backend_sched_set_tensor_backend`: pins `node` to `backend` for the next split.
    pub fn set_tensor_backend(&mut self, node: TensorPtr, backend: *mut Backend) {
        let id = self.known_backend(backend);
        self.table.set_backend(node, Some(id));
        self.is_reset = false;
    }

    /// `ggml_backend_sched_get_tensor_backend`.
    pub fn tensor_backend(&self, node: TensorPtr) -> Option<BackendPtr> {
        self.table.backend_of(node).map(|i| self.backends[i])
    }

    /// `ggml_backend_sched_set_eval_callback`.
    pub fn set_eval_callback(&mut self, callback: Option<SchedEvalCallback>, user_data: *mut c_void) {
        self.callback_eval = callback;
        self.callback_eval_user_data = user_data;
    }

    /// `ggml_backend_sched_reset`: forgets the assignments (unless nothing was assigned since
    /// the last reset) and the allocation.
    pub fn reset(&mut self) {
        if !self.is_reset {
            self.table.clear();
            self.is_reset = true;
        }
        self.is_alloc = false;
    }

    /// `ggml_backend_sched_synchronize`.
    pub fn synchronize(&mut self) {
        for b in &self.backends {
            b.synchronize();
        }
        if !self.is_alloc {
            // Without an allocated graph, start again from copy 0, so that repeated runs
            // (token generation) always use the same copy and the same graph.
            self.next_copy = 0;
        }
    }

    /// `ggml_backend_sched_reserve_size`: the compute buffer bytes each backend would need
    /// for `graph`, without allocating them.
    pub fn reserve_size(&mut self, graph: &mut Graph) -> Vec<usize> {
        self.reset();
        self.synchronize();
        self.split_graph(graph);
        let g = self.copy_graph();
        let (n, l) = (self.copy_nodes.len(), self.copy_leafs.len());
        self.galloc.reserve_n_size(&g, Some(&self.node_backend_ids[..n]), Some(&self.leaf_backend_ids[..l]))
    }

    /// `ggml_backend_sched_reserve`: sizes the compute buffers for `graph` (a worst case).
    pub fn reserve(&mut self, graph: &mut Graph) -> bool {
        self.synchronize();
        self.split_graph(graph);
        if !self.reserve_copy_graph() {
            return false;
        }
        self.reset();
        true
    }

    fn reserve_copy_graph(&mut self) -> bool {
        let g = self.copy_graph();
        let (n, l) = (self.copy_nodes.len(), self.copy_leafs.len());
        self.galloc.reserve_n(&g, Some(&self.node_backend_ids[..n]), Some(&self.leaf_backend_ids[..l]))
    }

    /// `ggml_backend_sched_alloc_graph`: assigns, splits and allocates `graph`.
    pub fn alloc_graph(&mut self, graph: &mut Graph) -> bool {
        crate::ggml_assert!(!self.is_alloc, "the scheduler already holds an allocated graph (reset it first)");
        self.cur_copy = self.next_copy;
        self.next_copy = (self.next_copy + 1) % self.n_copies;
        self.split_graph(graph);
        if !self.alloc_splits() {
            return false;
        }
        self.is_alloc = true;
        true
    }

    /// `ggml_backend_sched_graph_compute_async`: allocates `graph` if needed and queues it.
    pub fn graph_compute_async(&mut self, graph: &mut Graph) -> Status {
        if !self.is_reset && !self.is_alloc {
            self.reset();
        }
        if !self.is_alloc && !self.alloc_graph(graph) {
            return Status::ALLOC_FAILED;
        }
        self.compute_splits()
    }

    /// `ggml_backend_sched_graph_compute`: as `graph_compute_async`, then waits for it.
    pub fn graph_compute(&mut self, graph: &mut Graph) -> Status {
        let status = self.graph_compute_async(graph);
        self.synchronize();
        status
    }

    /// The graph the allocator sees (`sched->graph`): our node and leaf lists, no hash set.
    fn copy_graph(&mut self) -> Graph {
        Graph {
            size: self.copy_nodes.len().max(self.copy_leafs.len()) as i32,
            n_nodes: self.copy_nodes.len() as i32,
            n_leafs: self.copy_leafs.len() as i32,
            nodes: self.copy_nodes.as_mut_ptr(),
            grads: std::ptr::null_mut(),
            grad_accs: std::ptr::null_mut(),
            leafs: self.copy_leafs.as_mut_ptr(),
            use_counts: std::ptr::null_mut(),
            visited_hash_set: HashSet { size: 0, used: std::ptr::null_mut(), keys: std::ptr::null_mut() },
            order: EvalOrder::LEFT_TO_RIGHT,
            uid: 0,
        }
    }

    fn is_graph_input(t: TensorPtr) -> bool {
        t.flags & flag::INPUT != 0
    }
}

impl Drop for Sched {
    fn drop(&mut self) {
        for event in self.events.iter().flatten().flatten() {
            event.free();
        }
    }
}

#[cfg(test)]
mod tests;
