//! `struct ggml_cgraph` and its memory: one graph object in a context holds the struct, the
//! node and leaf lists, the use counts, the hash set and (optionally) the gradient tables,
//! laid out as ggml 0.25.1 lays them out, so that `ggml_graph_overhead*` report the same sizes
//! and backends that read the struct find what they expect.

use std::ptr::NonNull;

use super::hash::{BitsetWord, HashSet, bitset_words, table_size};
use crate::core::context::{Context, MEM_ALIGN, OBJECT_SIZE, ObjectType, pad};
use crate::core::op::Op;
use crate::core::tensor::{Tensor, TensorPtr, flag};

/// `GGML_DEFAULT_GRAPH_SIZE`.
pub const DEFAULT_GRAPH_SIZE: usize = 2048;

/// `enum ggml_cgraph_eval_order`: the order in which a node's sources are visited.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EvalOrder(pub i32);

impl EvalOrder {
    pub const LEFT_TO_RIGHT: EvalOrder = EvalOrder(0);
    pub const RIGHT_TO_LEFT: EvalOrder = EvalOrder(1);
}

/// `struct ggml_cgraph` (96 bytes).
///
/// The array pointers address memory owned by the graph's context object (or, for a view,
/// by the graph it views): `nodes` and `leafs` hold `size` slots (a view: `n_nodes`), the
/// side tables `visited_hash_set.size` slots each; `grads` and `grad_accs` are null in a graph
/// made without gradients. The accessors rely on that.
#[repr(C)]
#[derive(Debug)]
pub struct Graph {
    pub size: i32,
    pub n_nodes: i32,
    pub n_leafs: i32,
    pub nodes: *mut Option<TensorPtr>,
    pub grads: *mut Option<TensorPtr>,
    pub grad_accs: *mut Option<TensorPtr>,
    pub leafs: *mut Option<TensorPtr>,
    pub use_counts: *mut i32,
    pub visited_hash_set: HashSet,
    pub order: EvalOrder,
    /// Non-zero values identify a graph whose structure has not changed (backends cache on it).
    pub uid: u64,
}

const _: () = assert!(std::mem::size_of::<Graph>() == 96);
const _: () = assert!(std::mem::offset_of!(Graph, nodes) == 16);
const _: () = assert!(std::mem::offset_of!(Graph, use_counts) == 48);
const _: () = assert!(std::mem::offset_of!(Graph, visited_hash_set) == 56);
const _: () = assert!(std::mem::offset_of!(Graph, order) == 80);
const _: () = assert!(std::mem::offset_of!(Graph, uid) == 88);

/// A graph handle: a pointer to a graph in a context's memory.
///
/// As with [`TensorPtr`], ggml's contract is that a graph lives as long as its context and
/// is not used after `ggml_free`/`ggml_reset`; the handle relies on it.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GraphPtr(NonNull<Graph>);

impl GraphPtr {
    /// # Safety
    /// `ptr` must point to a live, well-formed `ggml_cgraph` that outlives every use of the
    /// handle.
    pub unsafe fn new(ptr: NonNull<Graph>) -> GraphPtr {
        GraphPtr(ptr)
    }

    pub fn as_ptr(self) -> *mut Graph {
        self.0.as_ptr()
    }

    /// Mutable access for one graph operation.
    ///
    /// Crate-private, as [`TensorPtr::get_mut`](crate::core::tensor::TensorPtr::get_mut) and
    /// for the same reason: nothing in the type stops two handles to one graph from both
    /// calling it, so the contract is the caller's. Hold the reference for one operation and
    /// let it go before anything else reads or changes the graph.
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn get_mut(&self) -> &mut Graph {
        // SAFETY: the handle's contract keeps the graph alive; graph operations are short and
        // do not overlap with another borrow of the same graph.
        unsafe { &mut *self.0.as_ptr() }
    }
}

impl std::ops::Deref for GraphPtr {
    type Target = Graph;
    fn deref(&self) -> &Graph {
        // SAFETY: see the type's contract.
        unsafe { self.0.as_ref() }
    }
}

/// Where each table of a graph object lies, as byte offsets from the start of the struct.
struct GraphLayout {
    nodes: usize,
    leafs: usize,
    use_counts: usize,
    keys: usize,
    grads: Option<(usize, usize)>,
    used: usize,
    total: usize,
}

impl GraphLayout {
    /// The tables one after the other, each aligned for its element type (`ggml_graph_nbytes`).
    fn new(size: usize, hash_size: usize, grads: bool) -> GraphLayout {
        const PTR: usize = std::mem::size_of::<*mut Tensor>();
        let mut end = std::mem::size_of::<Graph>();
        let mut place = |bytes: usize, align: usize| {
            let at = pad(end, align);
            end = at + bytes;
            at
        };
        let nodes = place(size * PTR, PTR);
        let leafs = place(size * PTR, PTR);
        let use_counts = place(hash_size * 4, 4);
        let keys = place(hash_size * PTR, PTR);
        let grads = grads.then(|| (place(hash_size * PTR, PTR), place(hash_size * PTR, PTR)));
        let used = place(bitset_words(hash_size) * std::mem::size_of::<BitsetWord>(), 4);
        GraphLayout { nodes, leafs, use_counts, keys, grads, used, total: end }
    }
}

/// Bytes of the graph object for `size` nodes (`ggml_graph_nbytes`). The hash set is sized
/// for twice as many tensors, since it holds both nodes and leafs.
pub fn graph_nbytes(size: usize, grads: bool) -> usize {
    GraphLayout::new(size, table_size(size * 2), grads).total
}

/// Context memory a graph of `size` nodes takes, header included (`ggml_graph_overhead_custom`).
pub fn overhead_custom(size: usize, grads: bool) -> usize {
    OBJECT_SIZE + pad(graph_nbytes(size, grads), MEM_ALIGN)
}

/// `ggml_graph_overhead`: a default-size graph without gradients.
pub fn overhead() -> usize {
    overhead_custom(DEFAULT_GRAPH_SIZE, false)
}

/// A fresh process-wide graph identifier (`ggml_graph_next_uid`), starting at 1.
pub fn next_uid() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// `ggml_new_graph_custom`: an empty graph for up to `size` nodes and `size` leafs, with
/// gradient tables if `grads`.
pub fn new_graph_custom(ctx: &mut Context, size: usize, grads: bool) -> GraphPtr {
    crate::ggml_assert!(size <= i32::MAX as usize, "graph size {} does not fit an int", size);
    let hash_size = table_size(size * 2);
    let layout = GraphLayout::new(size, hash_size, grads);
    let base = ctx.new_object(ObjectType::Graph, layout.total);
    // SAFETY: the object holds layout.total bytes, 16-aligned; zeroing them makes every
    // table slot a valid `None`/0 before anything reads it.
    unsafe { std::ptr::write_bytes(base.as_ptr(), 0, layout.total) };
    // SAFETY: every offset plus its table's length lies within the object (GraphLayout).
    let at = |offs: usize| unsafe { base.as_ptr().add(offs) };
    let graph = base.cast::<Graph>();
    // SAFETY: the object starts with room for the struct, suitably aligned.
    unsafe {
        graph.as_ptr().write(Graph {
            size: size as i32,
            n_nodes: 0,
            n_leafs: 0,
            nodes: at(layout.nodes).cast(),
            grads: layout.grads.map_or(std::ptr::null_mut(), |(g, _)| at(g).cast()),
            grad_accs: layout.grads.map_or(std::ptr::null_mut(), |(_, a)| at(a).cast()),
            leafs: at(layout.leafs).cast(),
            use_counts: at(layout.use_counts).cast(),
            visited_hash_set: HashSet { size: hash_size, used: at(layout.used).cast(), keys: at(layout.keys).cast() },
            order: EvalOrder::LEFT_TO_RIGHT,
            uid: 0,
        });
    }
    // SAFETY: just written inside the context's pool.
    unsafe { GraphPtr::new(graph) }
}

/// `ggml_new_graph`: default size, no gradients.
pub fn new_graph(ctx: &mut Context) -> GraphPtr {
    new_graph_custom(ctx, DEFAULT_GRAPH_SIZE, false)
}

/// `ggml_graph_dup`: a new graph in `ctx` of the same size holding the same nodes, leafs,
/// use counts and gradients (gradient tables also when `force_grads`).
pub fn dup(ctx: &mut Context, src: &Graph, force_grads: bool) -> GraphPtr {
    let size = usize::try_from(src.size).unwrap_or(0);
    let result = new_graph_custom(ctx, size, !src.grads.is_null() || force_grads);
    src.copy_to(result.get_mut());
    result
}

/// Views `len` slots at `ptr` as a slice (empty for a null pointer or zero length).
///
/// # Safety
/// When `ptr` is non-null it must address `len` initialised slots that stay valid and are not
/// written through another path while the slice lives.
unsafe fn slots<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// # Safety
/// As [`slots`], with exclusive access for the slice's life.
unsafe fn slots_mut<'a, T>(ptr: *mut T, len: usize) -> &'a mut [T] {
    if ptr.is_null() || len == 0 {
        &mut []
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}

fn count(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl Graph {
    /// The node slots in use, in execution order.
    pub fn node_slots(&self) -> &[Option<TensorPtr>] {
        // SAFETY: `nodes` holds at least n_nodes slots (see the type).
        unsafe { slots(self.nodes, count(self.n_nodes)) }
    }

    /// The leaf slots in use.
    pub fn leaf_slots(&self) -> &[Option<TensorPtr>] {
        // SAFETY: `leafs` holds at least n_leafs slots (see the type).
        unsafe { slots(self.leafs, count(self.n_leafs)) }
    }

    /// Node `i` (`0 <= i < n_nodes`).
    pub fn node(&self, i: usize) -> TensorPtr {
        match self.node_slots().get(i) {
            Some(Some(t)) => *t,
            Some(None) => crate::ggml_abort!("graph node {} is NULL", i),
            None => crate::ggml_abort!("graph node index {} out of range (n_nodes = {})", i, self.n_nodes),
        }
    }

    /// Leaf `i` (`0 <= i < n_leafs`).
    pub fn leaf(&self, i: usize) -> TensorPtr {
        match self.leaf_slots().get(i) {
            Some(Some(t)) => *t,
            Some(None) => crate::ggml_abort!("graph leaf {} is NULL", i),
            None => crate::ggml_abort!("graph leaf index {} out of range (n_leafs = {})", i, self.n_leafs),
        }
    }

    /// The nodes, in execution order.
    pub fn nodes(&self) -> impl Iterator<Item = TensorPtr> + '_ {
        (0..self.node_slots().len()).map(|i| self.node(i))
    }

    /// The leafs, in the order they were found.
    pub fn leafs(&self) -> impl Iterator<Item = TensorPtr> + '_ {
        (0..self.leaf_slots().len()).map(|i| self.leaf(i))
    }

    /// `ggml_graph_node`: node `i`, counting from the end when `i` is negative.
    pub fn node_at(&self, i: i32) -> TensorPtr {
        if i < 0 {
            crate::ggml_assert!(self.n_nodes + i >= 0, "node index {} before the first of {} nodes", i, self.n_nodes);
            self.node((self.n_nodes + i) as usize)
        } else {
            crate::ggml_assert!(i < self.n_nodes, "node index {} past the last of {} nodes", i, self.n_nodes);
            self.node(i as usize)
        }
    }

    /// Appends `tensor` to the node list (`ggml_graph_add_node`), without touching the hash set.
    pub fn add_node(&mut self, tensor: TensorPtr) {
        crate::ggml_assert!(self.size > self.n_nodes, "graph is full ({} nodes)", self.size);
        // SAFETY: `nodes` holds `size` slots and n_nodes < size.
        unsafe { *self.nodes.add(count(self.n_nodes)) = Some(tensor) };
        self.n_nodes += 1;
    }

    pub(super) fn push_node(&mut self, tensor: TensorPtr) {
        crate::ggml_assert!(self.n_nodes < self.size, "graph has no room for more than {} nodes", self.size);
        self.add_node(tensor);
    }

    pub(super) fn push_leaf(&mut self, tensor: TensorPtr) {
        crate::ggml_assert!(self.n_leafs < self.size, "graph has no room for more than {} leafs", self.size);
        // SAFETY: `leafs` holds `size` slots and n_leafs < size.
        unsafe { *self.leafs.add(count(self.n_leafs)) = Some(tensor) };
        self.n_leafs += 1;
    }

    /// Use counts, indexed by hash slot (meaningful where the slot is occupied).
    pub fn use_counts(&self) -> &[i32] {
        // SAFETY: `use_counts` holds visited_hash_set.size entries (see the type).
        unsafe { slots(self.use_counts, self.visited_hash_set.size) }
    }

    pub(crate) fn use_counts_mut(&mut self) -> &mut [i32] {
        // SAFETY: as `use_counts`, exclusive through `&mut self`.
        unsafe { slots_mut(self.use_counts, self.visited_hash_set.size) }
    }

    /// How many nodes of this graph use `tensor` as a source (0 if not in the graph).
    pub fn use_count(&self, tensor: *const Tensor) -> i32 {
        self.visited_hash_set.find_existing(tensor).map_or(0, |slot| self.use_counts()[slot])
    }

    pub fn has_grads(&self) -> bool {
        !self.grads.is_null()
    }

    /// Gradient slots by hash slot (empty without gradient tables).
    pub fn grad_slots(&self) -> &[Option<TensorPtr>] {
        // SAFETY: `grads` is null or holds visited_hash_set.size slots (see the type).
        unsafe { slots(self.grads, self.visited_hash_set.size) }
    }

    pub fn grad_acc_slots(&self) -> &[Option<TensorPtr>] {
        // SAFETY: as `grad_slots`.
        unsafe { slots(self.grad_accs, self.visited_hash_set.size) }
    }

    pub(super) fn grad_slots_mut(&mut self) -> &mut [Option<TensorPtr>] {
        // SAFETY: as `grad_slots`, exclusive through `&mut self`.
        unsafe { slots_mut(self.grads, self.visited_hash_set.size) }
    }

    pub(super) fn grad_acc_slots_mut(&mut self) -> &mut [Option<TensorPtr>] {
        // SAFETY: as `grad_acc_slots`, exclusive through `&mut self`.
        unsafe { slots_mut(self.grad_accs, self.visited_hash_set.size) }
    }

    /// `ggml_graph_get_grad`: the gradient of `node`, if the graph has one for it.
    pub fn grad(&self, node: *const Tensor) -> Option<TensorPtr> {
        let slot = self.visited_hash_set.find_existing(node)?;
        self.grad_slots().get(slot).copied().flatten()
    }

    /// `ggml_graph_get_grad_acc`: the gradient accumulator of `node`, if any.
    pub fn grad_acc(&self, node: *const Tensor) -> Option<TensorPtr> {
        let slot = self.visited_hash_set.find_existing(node)?;
        self.grad_acc_slots().get(slot).copied().flatten()
    }

    /// `ggml_graph_get_tensor`: the first leaf, else the first node, named `name`.
    pub fn tensor_named(&self, name: &[u8]) -> Option<TensorPtr> {
        self.leafs().chain(self.nodes()).find(|t| t.name_bytes() == name)
    }

    /// `ggml_graph_clear`: forgets all nodes and leafs.
    pub fn clear(&mut self) {
        self.n_leafs = 0;
        self.n_nodes = 0;
        self.visited_hash_set.reset();
    }

    /// `ggml_graph_view`: nodes `i0..i1` of this graph, sharing its hash set and use counts,
    /// without leafs or gradients.
    pub fn view(&self, i0: i32, i1: i32) -> Graph {
        Graph {
            size: 0,
            n_nodes: i1 - i0,
            n_leafs: 0,
            nodes: self.nodes.wrapping_offset(i0 as isize),
            grads: std::ptr::null_mut(),
            grad_accs: std::ptr::null_mut(),
            leafs: std::ptr::null_mut(),
            use_counts: self.use_counts,
            visited_hash_set: self.visited_hash_set,
            order: self.order,
            uid: 0,
        }
    }

    /// `ggml_graph_cpy`: makes `dst` hold this graph's nodes, leafs, use counts and
    /// gradients. `dst` must be at least as large.
    pub fn copy_to(&self, dst: &mut Graph) {
        crate::ggml_assert!(dst.size >= self.n_leafs, "destination graph too small for {} leafs", self.n_leafs);
        crate::ggml_assert!(dst.size >= self.n_nodes, "destination graph too small for {} nodes", self.n_nodes);
        crate::ggml_assert!(
            dst.visited_hash_set.size >= self.visited_hash_set.size,
            "destination graph's hash set is smaller than the source's"
        );

        dst.n_leafs = self.n_leafs;
        dst.n_nodes = self.n_nodes;
        dst.order = self.order;
        // SAFETY: dst's lists hold dst.size >= n slots; the graphs are distinct objects.
        unsafe {
            slots_mut(dst.leafs, self.leaf_slots().len()).copy_from_slice(self.leaf_slots());
            slots_mut(dst.nodes, self.node_slots().len()).copy_from_slice(self.node_slots());
        }

        for (slot, key) in self.visited_hash_set.iter() {
            // A key already in dst keeps its old count, as in ggml.
            if let Some(new_slot) = dst.visited_hash_set.insert(key) {
                dst.use_counts_mut()[new_slot] = self.use_counts()[slot];
            }
        }

        dst.clear_grads();
        if self.has_grads() {
            crate::ggml_assert!(dst.has_grads(), "copying gradients into a graph without gradient tables");
            for i in 0..self.node_slots().len() {
                let from = self.node_slot_in_hash(self.node(i));
                let to = dst.node_slot_in_hash(dst.node(i));
                dst.grad_slots_mut()[to] = self.grad_slots()[from];
                dst.grad_acc_slots_mut()[to] = self.grad_acc_slots()[from];
            }
        }
    }

    /// Forgets all gradients and accumulators (if the graph has the tables).
    pub fn clear_grads(&mut self) {
        self.grad_slots_mut().fill(None);
        self.grad_acc_slots_mut().fill(None);
    }

    /// The hash slot of a tensor known to be in the graph.
    pub(super) fn node_slot_in_hash(&self, t: TensorPtr) -> usize {
        match self.visited_hash_set.find_existing(t.as_ptr()) {
            Some(slot) => slot,
            None => crate::ggml_abort!("tensor '{}' is not in the graph's hash set", t.name()),
        }
    }

    /// `ggml_graph_reset`: zeroes every gradient accumulator and the optimizer's momenta, and
    /// sets the gradient of each loss to 1.
    pub fn reset(&mut self) {
        crate::ggml_assert!(self.has_grads(), "ggml_graph_reset on a graph without gradients");
        for node in self.nodes() {
            if node.op == Op::OPT_STEP_ADAMW {
                for i in [2, 3] {
                    if let Some(m) = node.src(i) {
                        super::tensor_io::set_zero(m);
                    }
                }
            }
            let Some(acc) = self.grad_acc(node.as_ptr()) else { continue };
            if node.flags & flag::LOSS != 0 {
                crate::ggml_assert!(acc.type_ == crate::core::types::Type::F32, "loss gradient must be F32");
                crate::ggml_assert!(acc.is_scalar(), "loss gradient must be a scalar");
                super::tensor_io::set_bytes(acc, &1.0f32.to_ne_bytes());
            } else {
                super::tensor_io::set_zero(acc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx(size: usize) -> Box<Context> {
        Context::new(InitParams { mem_size: size, mem_buffer: std::ptr::null_mut(), no_alloc: false })
    }

    #[test]
    fn overheads_match_the_reference_layout() {
        // 96 + 2 * 2048 * 8 + 4099 * 4 (+4 to re-align) + 4099 * 8 + 129 * 4 bytes.
        assert_eq!(graph_nbytes(2048, false), 96 + 32768 + 16396 + 4 + 32792 + 516);
        assert_eq!(overhead(), OBJECT_SIZE + pad(graph_nbytes(2048, false), MEM_ALIGN));
        assert_eq!(graph_nbytes(1, true), 96 + 8 + 8 + 8 + 16 + 16 + 16 + 4);
    }

    #[test]
    fn graphs_take_their_overhead_from_the_context() {
        let mut c = ctx(1 << 20);
        let before = c.used_mem();
        let g = new_graph_custom(&mut c, 100, true);
        assert_eq!(c.used_mem() - before, overhead_custom(100, true));
        assert_eq!(g.size, 100);
        assert_eq!(g.visited_hash_set.size, 257);
        assert!(g.has_grads());
        assert_eq!(g.n_nodes, 0);
    }

    #[test]
    fn add_node_and_negative_indices() {
        let mut c = ctx(1 << 20);
        let a = c.new_tensor(crate::core::types::Type::F32, &[4]);
        let b = c.new_tensor(crate::core::types::Type::F32, &[4]);
        let g = new_graph_custom(&mut c, 4, false);
        g.get_mut().add_node(a);
        g.get_mut().add_node(b);
        assert_eq!(g.node_at(-1), b);
        assert_eq!(g.node_at(0), a);
        let v = g.view(1, 2);
        assert_eq!(v.n_nodes, 1);
        assert_eq!(v.node(0), b);
    }

    #[test]
    fn copies_keep_nodes_leafs_and_use_counts() {
        let mut c = ctx(1 << 20);
        let a = c.new_tensor(crate::core::types::Type::F32, &[4]);
        let b = c.new_tensor(crate::core::types::Type::F32, &[4]);
        b.get_mut().op = Op::ADD;
        b.get_mut().src[0] = a.as_ptr();
        b.get_mut().src[1] = a.as_ptr();
        let g = new_graph_custom(&mut c, 8, false);
        g.get_mut().build_forward_expand(b);
        assert_eq!(g.use_count(a.as_ptr()), 2);

        let d = dup(&mut c, &g, true);
        assert!(d.has_grads());
        assert_eq!(d.nodes().collect::<Vec<_>>(), vec![b]);
        assert_eq!(d.leafs().collect::<Vec<_>>(), vec![a]);
        assert_eq!(d.use_count(a.as_ptr()), 2);
        assert_eq!(d.grad(b.as_ptr()), None);

        let big = new_graph_custom(&mut c, 64, false);
        g.copy_to(big.get_mut());
        assert_eq!(big.use_count(a.as_ptr()), 2);
        assert_eq!(big.n_leafs, 1);
        big.get_mut().clear();
        assert_eq!(big.use_count(a.as_ptr()), 0);
        assert_eq!(big.n_nodes, 0);
    }
}
