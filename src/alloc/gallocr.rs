//! The graph allocator (`ggml_gallocr`): plans where every tensor of a graph lives in one or
//! more compute buffers, reusing memory as soon as a tensor's last consumer has run, then
//! allocates the buffers and points the tensors into them.
//!
//! Planning walks the graph once in execution order with a [`DynTallocr`] per buffer type:
//! - leafs and inputs are placed first, so nothing computed later overwrites them;
//! - a tensor that already has memory (`data` or `buffer` set) is left alone;
//! - a view takes no memory: it keeps its source alive until the view's own consumers are done;
//! - an op that can run in place (see [`op_can_inplace`]) takes over a source's memory when that
//!   source is ours, has the same layout, is not an output and this op is its only consumer;
//! - a tensor is freed once its last consumer and its last view's consumers have run, unless it
//!   is an output, which lives to the end.
//!
//! The plan is recorded per node and leaf, so that `alloc_graph` can replay it on the same
//! graph (or one of the same shape) without planning again.

use std::collections::HashMap;

use super::dyn_tallocr::{BufferAddress, DynTallocr};
use crate::backend::buffer::{self, BufferPtr, BufferTypePtr};
use crate::backend::interface::BufferUsage;
use crate::core::graph::Graph;
use crate::core::op::Op;
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr, flag};

/// Whether `op` may write its result over one of its sources (`ggml_op_can_inplace`). Backends
/// must not assume that such an op's source and destination do not alias.
pub fn op_can_inplace(op: Op) -> bool {
    matches!(
        op,
        Op::FILL
            | Op::SCALE
            | Op::DIAG_MASK_ZERO
            | Op::DIAG_MASK_INF
            | Op::ADD
            | Op::ADD_ID
            | Op::ADD1
            | Op::SUB
            | Op::MUL
            | Op::DIV
            | Op::SQR
            | Op::SQRT
            | Op::LOG
            | Op::UNARY
            | Op::ROPE
            | Op::ROPE_BACK
            | Op::SILU_BACK
            | Op::RMS_NORM
            | Op::RMS_NORM_BACK
            | Op::CLAMP
            | Op::SOFT_MAX
            | Op::SOFT_MAX_BACK
    )
}

/// Same type, shape and strides.
fn same_layout(a: &Tensor, b: &Tensor) -> bool {
    a.type_ == b.type_ && a.ne == b.ne && a.nb == b.nb
}

/// A virtual buffer: one backend buffer per chunk of the planning allocator.
struct VBuffer {
    chunks: Vec<BufferPtr>,
}

impl VBuffer {
    /// Allocates a buffer for each chunk `talloc` planned, sized to the chunk's high-water
    /// mark; `None` (after freeing what was allocated) when the buffer type fails.
    fn alloc(buft: BufferTypePtr, talloc: &DynTallocr, usage: BufferUsage) -> Option<VBuffer> {
        let mut vbuf = VBuffer { chunks: Vec::with_capacity(talloc.n_chunks()) };
        for c in 0..talloc.n_chunks() {
            let buffer = buft.alloc_buffer(talloc.max_size(c))?;
            buffer.set_usage(usage);
            vbuf.chunks.push(buffer);
        }
        Some(vbuf)
    }

    fn chunk_size(&self, chunk: usize) -> usize {
        self.chunks.get(chunk).map_or(0, |b| b.size())
    }

    fn size(&self) -> usize {
        self.chunks.iter().map(|b| b.size()).sum()
    }

    fn reset(&self) {
        for b in &self.chunks {
            b.reset();
        }
    }

    /// Points `tensor` at `addr` in its chunk.
    fn tensor_alloc(&self, tensor: TensorPtr, addr: BufferAddress) {
        let Some(buffer) = self.chunks.get(addr.chunk) else {
            crate::ggml_abort!("tensor {} placed in chunk {} that was not allocated", tensor.name(), addr.chunk)
        };
        // Like ggml, the status is not checked: the planned place is known to fit.
        buffer::tensor_alloc(*buffer, tensor, buffer.base().cast::<u8>().wrapping_add(addr.offset).cast());
    }
}

impl Drop for VBuffer {
    fn drop(&mut self) {
        for b in self.chunks.drain(..) {
            b.free();
        }
    }
}

/// What planning knows about one tensor.
#[derive(Clone, Copy, Default, Debug)]
struct TensorState {
    /// Consumers (nodes having it as a source) that have not run yet.
    n_children: i32,
    /// Views of it whose consumers have not all run yet.
    n_views: i32,
    buffer_id: usize,
    addr: BufferAddress,
    /// It holds memory of ours that is still to be freed.
    allocated: bool,
}

/// A planned place: the buffer, the address and the bytes reserved there. `place` is `None`
/// for a tensor with memory of its own, a view, or an absent source.
#[derive(Clone, Copy, Default, Debug)]
struct TensorAlloc {
    place: Option<(usize, BufferAddress)>,
    size_max: usize,
}

#[derive(Clone, Copy, Default, Debug)]
struct NodeAlloc {
    dst: TensorAlloc,
    src: [TensorAlloc; MAX_SRC],
}

/// One buffer type with its planner and its buffer (`None` until the first reservation, or
/// after a size query found it too small).
struct Pool {
    buft: BufferTypePtr,
    talloc: DynTallocr,
    buffer: Option<VBuffer>,
}

/// The graph allocator: buffer types, their planners and buffers, and the last plan.
pub struct Gallocr {
    /// One pool per distinct buffer type, in order of first use.
    pools: Vec<Pool>,
    /// The pool of each buffer id: ids with the same buffer type share a planner and a buffer.
    pool_of: Vec<usize>,
    states: HashMap<*const Tensor, TensorState>,
    node_allocs: Vec<NodeAlloc>,
    leaf_allocs: Vec<TensorAlloc>,
}

/// The buffer id from a per-tensor list, 0 when there is no list.
fn buffer_id_at(ids: Option<&[i32]>, i: usize) -> usize {
    let id = ids.map_or(0, |ids| ids[i]);
    crate::ggml_assert!(id >= 0, "negative buffer id {} for tensor {}", id, i);
    id as usize
}

impl Gallocr {
    /// An allocator for `bufts`; buffer id `i` allocates from `bufts[i]`.
    pub fn new(bufts: &[BufferTypePtr]) -> Gallocr {
        let mut pools: Vec<Pool> = Vec::new();
        let mut pool_of = Vec::with_capacity(bufts.len());
        for &buft in bufts {
            let pool = match pools.iter().position(|p| p.buft == buft) {
                Some(p) => p,
                None => {
                    let talloc = DynTallocr::new(buft.alignment(), buft.max_size());
                    pools.push(Pool { buft, talloc, buffer: None });
                    pools.len() - 1
                }
            };
            pool_of.push(pool);
        }
        Gallocr { pools, pool_of, states: HashMap::new(), node_allocs: Vec::new(), leaf_allocs: Vec::new() }
    }

    pub fn n_buffers(&self) -> usize {
        self.pool_of.len()
    }

    fn pool(&self, buffer_id: usize) -> &Pool {
        match self.pool_of.get(buffer_id) {
            Some(&p) => &self.pools[p],
            None => crate::ggml_abort!("buffer id {} out of range ({} buffers)", buffer_id, self.pool_of.len()),
        }
    }

    fn pool_mut(&mut self, buffer_id: usize) -> &mut Pool {
        match self.pool_of.get(buffer_id) {
            Some(&p) => &mut self.pools[p],
            None => crate::ggml_abort!("buffer id {} out of range ({} buffers)", buffer_id, self.pool_of.len()),
        }
    }

    fn alloc_size(&self, buffer_id: usize, t: TensorPtr) -> usize {
        self.pool(buffer_id).buft.alloc_size(t)
    }

    fn state(&mut self, t: TensorPtr) -> &mut TensorState {
        self.states.entry(t.as_ptr().cast_const()).or_default()
    }

    /// The tensor's memory is ours (planned here and not yet freed).
    fn is_own(&mut self, t: TensorPtr) -> bool {
        self.state(t).allocated
    }

    /// The tensor has memory already, or will get it from us.
    fn is_allocated(&mut self, t: TensorPtr) -> bool {
        !t.data.is_null() || !t.buffer.is_null() || self.is_own(t)
    }

    /// After `node` took over `parent`'s memory, returns what `node` does not need of it.
    fn free_extra_space(&mut self, node: TensorPtr, parent: TensorPtr) {
        let node_state = *self.state(node);
        let parent_state = *self.state(parent);
        let parent_size = self.alloc_size(parent_state.buffer_id, parent);
        let node_size = self.alloc_size(node_state.buffer_id, node);
        crate::ggml_assert!(
            parent_size >= node_size,
            "in-place result {} ({} bytes) larger than its source {} ({} bytes)",
            node.name(),
            node_size,
            parent.name(),
            parent_size
        );
        // Sizes rounded to the alignment, so that what stays free stays aligned.
        let talloc = &mut self.pool_mut(parent_state.buffer_id).talloc;
        let alignment = talloc.alignment();
        let parent_size = parent_size.next_multiple_of(alignment);
        let node_size = node_size.next_multiple_of(alignment);
        if parent_size > node_size {
            let addr = BufferAddress { chunk: parent_state.addr.chunk, offset: parent_state.addr.offset + node_size };
            talloc.free_bytes(addr, parent_size - node_size);
        }
    }

    /// Finds a source whose memory `node` can take over: returns it and the tensor whose
    /// memory that is (the source itself, or the tensor a view source views).
    fn inplace_parent(&mut self, node: TensorPtr) -> Option<(TensorPtr, TensorPtr)> {
        if !op_can_inplace(node.op) {
            return None;
        }
        for parent in (0..MAX_SRC).filter_map(|i| node.src(i)) {
            if !self.is_own(parent) {
                continue;
            }
            let is_output = |t: &Tensor| t.flags & flag::OUTPUT != 0;
            if is_output(&parent) || parent.view_source().is_some_and(|v| is_output(&v)) {
                continue;
            }
            if !same_layout(&node, &parent) {
                continue;
            }
            let p = *self.state(parent);
            if p.n_children != 1 || p.n_views != 0 {
                continue;
            }
            match parent.view_source() {
                None => return Some((parent, parent)),
                Some(view_src) => {
                    let v = *self.state(view_src);
                    if v.n_views == 1 && v.n_children == 0 && view_src.data == parent.data {
                        return Some((parent, view_src));
                    }
                }
            }
        }
        None
    }

    /// Plans memory for `node` in buffer `buffer_id`, unless it has some or is a view.
    fn allocate_node(&mut self, node: TensorPtr, buffer_id: usize) {
        if self.is_allocated(node) || node.is_view() {
            return;
        }
        self.state(node).allocated = true;

        if let Some((parent, owner)) = self.inplace_parent(node) {
            let p = *self.state(parent);
            let n = self.state(node);
            n.buffer_id = p.buffer_id;
            n.addr = p.addr;
            // The memory now belongs to `node`: freeing the parent must not release it.
            self.state(parent).allocated = false;
            self.state(owner).allocated = false;
            self.free_extra_space(node, owner);
            return;
        }

        let size = self.alloc_size(buffer_id, node);
        let addr = self.pool_mut(buffer_id).talloc.alloc(size, node.name());
        let n = self.state(node);
        n.buffer_id = buffer_id;
        n.addr = addr;
    }

    /// Releases `node`'s memory, unless it is an output.
    fn free_node(&mut self, node: TensorPtr) {
        if node.flags & flag::OUTPUT != 0 {
            return;
        }
        let s = *self.state(node);
        let size = self.alloc_size(s.buffer_id, node);
        self.pool_mut(s.buffer_id).talloc.free_bytes(s.addr, size);
        self.state(node).allocated = false;
    }

    /// Plans the whole graph into the planners (which must be reset).
    fn plan(&mut self, graph: &Graph, node_ids: Option<&[i32]>, leaf_ids: Option<&[i32]>) {
        self.states.clear();

        // Leafs first: the application may use them outside the graph too.
        for (i, leaf) in graph.leafs().enumerate() {
            self.allocate_node(leaf, buffer_id_at(leaf_ids, i));
        }

        // Count consumers and views; place inputs before anything computed can take their
        // place.
        for (i, node) in graph.nodes().enumerate() {
            // A NONE node that is a view only carries dependencies (ggml-backend adds such
            // nodes to order allocations): it does not keep its source alive.
            if let Some(view_src) = node.view_source()
                && node.op != Op::NONE
            {
                self.state(view_src).n_views += 1;
            }
            if node.flags & flag::INPUT != 0 {
                self.allocate_node(node, buffer_id_at(node_ids, i));
            }
            for src in (0..MAX_SRC).filter_map(|j| node.src(j)) {
                self.state(src).n_children += 1;
                if src.flags & flag::INPUT != 0 {
                    self.allocate_node(src, buffer_id_at(node_ids, i));
                }
            }
        }

        for (i, node) in graph.nodes().enumerate() {
            let buffer_id = buffer_id_at(node_ids, i);
            // Sources not placed yet (leafs outside the leaf list) go to the node's buffer.
            for parent in (0..MAX_SRC).filter_map(|j| node.src(j)) {
                self.allocate_node(parent, buffer_id);
            }
            self.allocate_node(node, buffer_id);

            // This node has run: sources it was the last consumer of can go.
            for parent in (0..MAX_SRC).filter_map(|j| node.src(j)) {
                let p = self.state(parent);
                p.n_children -= 1;
                if p.n_children != 0 || p.n_views != 0 {
                    continue;
                }
                let allocated = p.allocated;
                match parent.view_source() {
                    Some(view_src) => {
                        let v = self.state(view_src);
                        v.n_views -= 1;
                        if v.n_views == 0 && v.n_children == 0 && v.allocated {
                            self.free_node(view_src);
                        }
                    }
                    None if allocated => self.free_node(parent),
                    None => {}
                }
            }
        }
    }

    /// The plan for `t`, as replayed by `alloc_graph`.
    fn record(&mut self, t: Option<TensorPtr>) -> TensorAlloc {
        match t {
            Some(t) if !t.is_view() && t.data.is_null() => {
                let s = *self.state(t);
                TensorAlloc { place: Some((s.buffer_id, s.addr)), size_max: self.alloc_size(s.buffer_id, t) }
            }
            _ => TensorAlloc::default(),
        }
    }

    /// Plans `graph` and (unless `no_alloc`) grows the buffers to what the plan needs; with
    /// `no_alloc` buffers that are too small are dropped instead. False when a buffer could
    /// not be allocated.
    fn reserve_impl(
        &mut self,
        graph: &Graph,
        node_ids: Option<&[i32]>,
        leaf_ids: Option<&[i32]>,
        no_alloc: bool,
    ) -> bool {
        for pool in &mut self.pools {
            pool.talloc.reset();
        }
        self.plan(graph, node_ids, leaf_ids);

        self.node_allocs = graph
            .nodes()
            .map(|node| {
                let dst = self.record(Some(node));
                let src = std::array::from_fn(|j| self.record(node.src(j)));
                NodeAlloc { dst, src }
            })
            .collect();
        self.leaf_allocs = graph.leafs().map(|leaf| self.record(Some(leaf))).collect();

        for pool in &mut self.pools {
            let talloc = &pool.talloc;
            let current = pool.buffer.as_ref();
            // A buffer is made even when nothing is planned in it: views need one.
            let too_small = (0..talloc.n_chunks()).any(|c| talloc.max_size(c) > current.map_or(0, |b| b.chunk_size(c)));
            if current.is_some() && !too_small {
                continue;
            }
            pool.buffer = None;
            if no_alloc {
                continue;
            }
            match VBuffer::alloc(pool.buft, talloc, BufferUsage::COMPUTE) {
                Some(vbuf) => pool.buffer = Some(vbuf),
                None => {
                    crate::log_error!(
                        "ggml_gallocr_reserve_n_impl: failed to allocate {} buffer of size {}\n",
                        pool.buft.name_lossy(),
                        talloc.total_size()
                    );
                    return false;
                }
            }
        }
        true
    }

    /// `ggml_gallocr_reserve_n`: plans `graph` with the given buffer ids per node and leaf
    /// (all 0 when absent) and allocates buffers large enough for it.
    pub fn reserve_n(&mut self, graph: &Graph, node_ids: Option<&[i32]>, leaf_ids: Option<&[i32]>) -> bool {
        self.reserve_impl(graph, node_ids, leaf_ids, false)
    }

    /// `ggml_gallocr_reserve_n_size`: the bytes each buffer id would need for `graph`,
    /// without allocating anything (ids sharing a buffer type each report the shared size).
    pub fn reserve_n_size(&mut self, graph: &Graph, node_ids: Option<&[i32]>, leaf_ids: Option<&[i32]>) -> Vec<usize> {
        crate::ggml_assert!(self.reserve_impl(graph, node_ids, leaf_ids, true), "planning without allocation failed");
        (0..self.pool_of.len()).map(|i| self.pool(i).talloc.total_size()).collect()
    }

    /// `ggml_gallocr_reserve`: as `reserve_n`, everything in buffer 0.
    pub fn reserve(&mut self, graph: &Graph) -> bool {
        self.reserve_n(graph, None, None)
    }

    /// Whether the recorded plan still fits `t`.
    fn fits(&self, t: TensorPtr, rec: &TensorAlloc) -> bool {
        if !t.data.is_null() || t.is_view() {
            return true;
        }
        match rec.place {
            // It had memory of its own when planned, and has none now.
            None => false,
            Some((buffer_id, _)) => rec.size_max >= self.alloc_size(buffer_id, t),
        }
    }

    /// Whether `graph` differs from the planned one in a way the plan cannot absorb.
    fn needs_realloc(&self, graph: &Graph) -> bool {
        if self.node_allocs.len() != graph.node_slots().len() || self.leaf_allocs.len() != graph.leaf_slots().len() {
            return true;
        }
        graph.nodes().zip(&self.node_allocs).any(|(node, rec)| {
            !self.fits(node, &rec.dst)
                || (0..MAX_SRC).any(|j| node.src(j).is_some_and(|src| !self.fits(src, &rec.src[j])))
        })
    }

    /// Gives `t` the memory the plan recorded for it (or, for a view, its source's).
    fn init_tensor(&self, t: TensorPtr, rec: &TensorAlloc) {
        if let Some(view_src) = t.view_source() {
            // A view of a tensor allocated without ggml-backend has nothing to set up.
            if t.buffer.is_null() && !view_src.buffer.is_null() {
                buffer::view_init(t);
            }
            return;
        }
        if !t.data.is_null() {
            return;
        }
        let Some((buffer_id, addr)) = rec.place else {
            crate::ggml_abort!("tensor {} has no memory and none was planned for it", t.name())
        };
        crate::ggml_assert!(
            self.alloc_size(buffer_id, t) <= rec.size_max,
            "tensor {} grew since it was planned",
            t.name()
        );
        match self.pool(buffer_id).buffer.as_ref() {
            Some(vbuf) => vbuf.tensor_alloc(t, addr),
            None => crate::ggml_abort!("buffer {} was not allocated (reserve failed?)", buffer_id),
        }
    }

    /// `ggml_gallocr_alloc_graph`: gives every tensor of `graph` its memory, planning again
    /// first when the graph changed (possible only with a single buffer: with several, false
    /// is returned and `reserve_n` must be called).
    pub fn alloc_graph(&mut self, graph: &Graph) -> bool {
        if self.needs_realloc(graph) {
            if self.pool_of.len() != 1 {
                return false;
            }
            if !self.reserve(graph) {
                return false;
            }
        }

        for vbuf in self.pools.iter().filter_map(|p| p.buffer.as_ref()) {
            vbuf.reset();
        }
        for (leaf, rec) in graph.leafs().zip(&self.leaf_allocs) {
            self.init_tensor(leaf, rec);
        }
        for (node, rec) in graph.nodes().zip(&self.node_allocs) {
            for j in 0..MAX_SRC {
                if let Some(src) = node.src(j) {
                    self.init_tensor(src, &rec.src[j]);
                }
            }
            self.init_tensor(node, &rec.dst);
        }
        true
    }

    /// `ggml_gallocr_get_buffer_size`: the bytes of buffer `buffer_id`; 0 when it is not
    /// allocated, or when it is shared with an earlier id (so that sums count it once).
    pub fn buffer_size(&self, buffer_id: usize) -> usize {
        crate::ggml_assert!(buffer_id < self.pool_of.len(), "buffer id {} out of range", buffer_id);
        let pool = self.pool_of[buffer_id];
        if self.pool_of[..buffer_id].contains(&pool) {
            return 0;
        }
        self.pools[pool].buffer.as_ref().map_or(0, VBuffer::size)
    }
}

#[cfg(test)]
mod tests {
    //! The reference's allocator tests (tests/test-alloc.cpp) and a few graphs of our own, on a
    //! dummy buffer type whose buffers have no memory. Expected placements and sizes were
    //! printed by the same scenarios run against ggml 0.25.1.

    use std::cell::{RefCell, UnsafeCell};
    use std::ffi::{c_char, c_void};

    use super::*;
    use crate::backend::interface::{Buffer, BufferInterface, BufferTypeInterface};
    use crate::backend::tallocr::alloc_ctx_tensors;
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::{GraphPtr, cgraph};
    use crate::core::ops::{elementwise, matmul, norm, pool, reduce, rope, shape, softmax, unary};
    use crate::core::status::Status;
    use crate::core::types::Type;

    /// Where the dummy buffers claim their memory starts (never dereferenced).
    const BASE: usize = 16;

    /// A buffer type with a chosen alignment and max size that records its live buffers.
    struct Dummy {
        max_size: usize,
        alignment: usize,
        buffers: RefCell<Vec<*mut Buffer>>,
        /// C code gets a mutable pointer to it, hence the cell.
        buft: UnsafeCell<crate::backend::interface::BufferType>,
    }

    fn dummy_of(buft: *mut crate::backend::interface::BufferType) -> &'static Dummy {
        // SAFETY: the context of a dummy buffer type is its boxed Dummy, alive for the test.
        unsafe { &*(*buft).context.cast::<Dummy>() }
    }

    unsafe extern "C" fn dummy_name(_: *mut crate::backend::interface::BufferType) -> *const c_char {
        c"dummy_buffer_type".as_ptr()
    }

    unsafe extern "C" fn dummy_alloc(buft: *mut crate::backend::interface::BufferType, size: usize) -> *mut Buffer {
        let dummy = dummy_of(buft);
        let buffer = BufferPtr::new(buft, DUMMY_BUFFER, std::ptr::from_ref(dummy).cast_mut().cast(), size);
        dummy.buffers.borrow_mut().push(buffer.as_ptr());
        buffer.as_ptr()
    }

    unsafe extern "C" fn dummy_alignment(buft: *mut crate::backend::interface::BufferType) -> usize {
        dummy_of(buft).alignment
    }

    unsafe extern "C" fn dummy_max_size(buft: *mut crate::backend::interface::BufferType) -> usize {
        dummy_of(buft).max_size
    }

    unsafe extern "C" fn dummy_is_host(_: *mut crate::backend::interface::BufferType) -> bool {
        true
    }

    unsafe extern "C" fn dummy_free(buffer: *mut Buffer) {
        // SAFETY: called by BufferPtr::free on one of our live buffers.
        let dummy = unsafe { &*(*buffer).context.cast::<Dummy>() };
        let mut list = dummy.buffers.borrow_mut();
        let i = list.iter().position(|&b| b == buffer).expect("freeing a buffer twice");
        list.remove(i);
    }

    unsafe extern "C" fn dummy_base(_: *mut Buffer) -> *mut c_void {
        BASE as *mut c_void
    }

    unsafe extern "C" fn dummy_init_tensor(_: *mut Buffer, _: *mut Tensor) -> Status {
        Status::SUCCESS
    }

    const DUMMY_BUFFER: BufferInterface = BufferInterface {
        free_buffer: Some(dummy_free),
        get_base: Some(dummy_base),
        init_tensor: Some(dummy_init_tensor),
        ..BufferInterface::EMPTY
    };

    impl Dummy {
        fn new(max_size: usize, alignment: usize) -> Box<Dummy> {
            let iface = BufferTypeInterface {
                get_name: Some(dummy_name),
                alloc_buffer: Some(dummy_alloc),
                get_alignment: Some(dummy_alignment),
                get_max_size: Some(dummy_max_size),
                get_alloc_size: None,
                is_host: Some(dummy_is_host),
            };
            let mut d = Box::new(Dummy {
                max_size,
                alignment,
                buffers: RefCell::new(Vec::new()),
                buft: UnsafeCell::new(crate::backend::interface::BufferType {
                    iface,
                    device: std::ptr::null_mut(),
                    context: std::ptr::null_mut(),
                }),
            });
            let context = std::ptr::from_mut::<Dummy>(&mut d).cast();
            d.buft.get_mut().context = context;
            d
        }

        fn buft(&self) -> BufferTypePtr {
            // SAFETY: the dummy is boxed and outlives the allocators of its test.
            unsafe { BufferTypePtr::from_raw(self.buft.get()) }.unwrap()
        }

        fn sizes(&self) -> Vec<usize> {
            // SAFETY: the list holds live buffers.
            self.buffers.borrow().iter().map(|&b| unsafe { (*b).size }).collect()
        }

        fn total(&self) -> usize {
            self.sizes().iter().sum()
        }
    }

    fn context() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    fn input(ctx: &mut Context, bytes: usize) -> TensorPtr {
        let t = ctx.new_tensor(Type::F32, &[bytes as i64 / 4]);
        t.get_mut().flags |= flag::INPUT;
        t
    }

    fn assign_names(ctx: &Context, prefix: &str) {
        for (i, t) in ctx.tensors().enumerate() {
            t.get_mut().set_name(&format!("{prefix}{i}"));
        }
    }

    /// A graph computing `out`, marked as an output.
    fn graph_of(ctx: &mut Context, out: TensorPtr) -> GraphPtr {
        out.get_mut().flags |= flag::OUTPUT;
        let g = cgraph::new_graph(ctx);
        g.get_mut().build_forward_expand(out);
        g
    }

    /// Builds the graph of `out` and allocates it in a fresh allocator for `dummy`.
    fn allocate(ctx: &mut Context, out: TensorPtr, dummy: &Dummy) -> (Gallocr, GraphPtr) {
        let g = graph_of(ctx, out);
        let mut galloc = Gallocr::new(&[dummy.buft()]);
        assert!(galloc.alloc_graph(&g));
        (galloc, g)
    }

    /// The buffers of each dummy, then every tensor of `ctx` as `name:dummy.buffer@offset`:
    /// the format the reference run printed.
    fn layout(ctx: &Context, dummies: &[&Dummy]) -> String {
        let mut s = String::new();
        for d in dummies {
            s += " [";
            for size in d.sizes() {
                s += &format!(" {size}");
            }
            s += " ]";
        }
        s += " |";
        for t in ctx.tensors() {
            if t.buffer.is_null() {
                s += &format!(" {}:-", t.name());
                continue;
            }
            let (di, bi) = dummies
                .iter()
                .enumerate()
                .find_map(|(di, d)| d.buffers.borrow().iter().position(|&b| b.cast() == t.buffer).map(|bi| (di, bi)))
                .expect("tensor in a buffer of no dummy");
            s += &format!(" {}:{}.{}@{}", t.name(), di, bi, t.data as usize - BASE);
        }
        s
    }

    fn check_all_allocated(g: &Graph) {
        for t in g.nodes() {
            assert!(!t.buffer.is_null() && !t.data.is_null(), "{} not allocated", t.name());
        }
    }

    fn check_max_size(ctx: &Context) {
        for t in ctx.tensors() {
            // SAFETY: every tensor of these contexts is allocated in a live dummy buffer.
            let buffer = unsafe { BufferPtr::from_raw(t.buffer.cast()) }.unwrap();
            let offset = t.data as usize - buffer.base() as usize;
            assert!(offset + t.nbytes() <= buffer.buft().max_size(), "{} past the max size", t.name());
        }
    }

    fn view_root(mut t: TensorPtr) -> TensorPtr {
        while let Some(v) = t.view_source() {
            t = v;
        }
        t
    }

    /// Whether `other` is dead (or reused in place by `current`) from node `current_i` on.
    fn can_reuse_memory(g: &Graph, current_i: usize, current: TensorPtr, other: TensorPtr) -> bool {
        if other.flags & flag::OUTPUT != 0 {
            return false;
        }
        for t in g.nodes().skip(current_i) {
            if t == current && op_can_inplace(t.op) {
                continue;
            }
            for s in (0..MAX_SRC).filter_map(|j| t.src(j)) {
                if s == other || s.view_source() == Some(other) {
                    return false;
                }
            }
        }
        true
    }

    fn check_no_overlap(g: &Graph) {
        let nodes: Vec<TensorPtr> = g.nodes().collect();
        for (i, &t) in nodes.iter().enumerate() {
            for &o in &nodes[..i] {
                assert_ne!(t, o);
                if view_root(t) == view_root(o) || t.buffer != o.buffer {
                    continue;
                }
                let (a0, b0) = (t.data as usize, o.data as usize);
                let overlap = a0 + t.nbytes() > b0 && b0 + o.nbytes() > a0;
                if overlap {
                    assert!(can_reuse_memory(g, i, t, o), "{} overlaps live {}", t.name(), o.name());
                }
            }
        }
    }

    fn check_all(ctx: &Context, g: &Graph, max_size: bool) {
        check_all_allocated(g);
        check_no_overlap(g);
        if max_size {
            check_max_size(ctx);
        }
    }

    #[test]
    fn max_size_too_many_tensors() {
        let d = Dummy::new(16, 8);
        let mut c = context();
        let x0 = input(&mut c, 8);
        let x1 = input(&mut c, 8);
        let x2 = input(&mut c, 8);
        let x3 = elementwise::mul(&mut c, x0, x1);
        let x4 = elementwise::add(&mut c, x1, x2);
        let x5 = elementwise::add(&mut c, x3, x0);
        let x6 = elementwise::add(&mut c, x4, x5);
        assign_names(&c, "x");
        let (galloc, g) = allocate(&mut c, x6, &d);
        check_all(&c, &g, true);
        assert_eq!(layout(&c, &[&d]), " [ 16 8 ] | x0:0.1@0 x1:0.0@0 x2:0.0@8 x3:0.0@0 x4:0.0@8 x5:0.0@0 x6:0.0@8");
        assert_eq!(galloc.buffer_size(0), 24);
    }

    #[test]
    fn max_size_tensor_too_large() {
        let d = Dummy::new(32, 8);
        let mut c = context();
        let x0 = input(&mut c, 16);
        let x1 = input(&mut c, 8);
        let x2 = reduce::concat(&mut c, x0, x1, 0);
        assign_names(&c, "x");
        let (galloc, g) = allocate(&mut c, x2, &d);
        check_all(&c, &g, true);
        assert_eq!(layout(&c, &[&d]), " [ 24 24 ] | x0:0.0@0 x1:0.0@16 x2:0.1@0");
        assert_eq!(galloc.buffer_size(0), 48);
    }

    #[test]
    fn tensor_larger_than_max_size() {
        let d = Dummy::new(16, 8);
        let mut c = context();
        let x0 = input(&mut c, 24);
        let x1 = elementwise::scale(&mut c, x0, 2.0);
        assign_names(&c, "x");
        let (galloc, g) = allocate(&mut c, x1, &d);
        check_all(&c, &g, false);
        assert_eq!(layout(&c, &[&d]), " [ 24 ] | x0:0.0@0 x1:0.0@0");
        assert_eq!(galloc.buffer_size(0), 24);
    }

    #[test]
    fn not_enough_chunks() {
        let d = Dummy::new(8, 8);
        let mut c = context();
        let x: Vec<TensorPtr> = (0..17).map(|_| input(&mut c, 8)).collect();
        let mut acc = x[0];
        for &xi in &x[1..] {
            acc = elementwise::add(&mut c, acc, xi);
        }
        assign_names(&c, "x");
        let (galloc, g) = allocate(&mut c, acc, &d);
        check_all(&c, &g, false);
        let mut expected = String::from(" [ 8 8 8 8 8 8 8 8 8 8 8 8 8 8 8 16 ] |");
        for i in 0..16 {
            expected += &format!(" x{i}:0.{i}@0");
        }
        expected += " x16:0.15@8";
        for i in 17..33 {
            expected += &format!(" x{i}:0.0@0");
        }
        assert_eq!(layout(&c, &[&d]), expected);
        assert!(d.total() > 16 * 8);
        assert_eq!(galloc.buffer_size(0), 136);
    }

    #[test]
    fn fill_leftover_space() {
        let d = Dummy::new(16, 8);
        let mut c = context();
        let x0 = input(&mut c, 8);
        let x1 = pool::pad(&mut c, x0, 2, 0, 0, 0);
        let x2 = reduce::mean(&mut c, x1);
        assign_names(&c, "x");
        let (_galloc, g) = allocate(&mut c, x2, &d);
        check_all(&c, &g, true);
        assert_eq!(layout(&c, &[&d]), " [ 8 16 ] | x0:0.0@0 x1:0.1@0 x2:0.0@0");
    }

    #[test]
    fn view_inplace() {
        let d = Dummy::new(32, 8);
        let mut c = context();
        let x0 = input(&mut c, 16);
        let x1 = shape::reshape_2d(&mut c, x0, 2, 2);
        let x2 = shape::permute(&mut c, x1, 1, 0, 2, 3);
        let x3 = shape::view_1d(&mut c, x2, 2, 4);
        let x4 = input(&mut c, 8);
        let x5 = elementwise::add(&mut c, x3, x4);
        assign_names(&c, "x");
        let (_galloc, g) = allocate(&mut c, x5, &d);
        check_all(&c, &g, true);
        assert_eq!(layout(&c, &[&d]), " [ 24 ] | x0:0.0@0 x1:0.0@0 x2:0.0@0 x3:0.0@4 x4:0.0@16 x5:0.0@16");
    }

    #[test]
    fn reuse_and_free() {
        let d = Dummy::new(40, 8);
        let mut c = context();
        let x0 = input(&mut c, 24);
        let x1 = input(&mut c, 8);
        let x2 = input(&mut c, 8);
        let x3 = elementwise::add(&mut c, x1, x2);
        let x4 = pool::pad(&mut c, x0, 2, 0, 0, 0);
        let x5 = elementwise::scale(&mut c, x4, 2.0);
        let x6 = elementwise::add(&mut c, x4, x5);
        let x7 = shape::view_1d(&mut c, x6, 2, 8);
        let x8 = elementwise::add(&mut c, x3, x7);
        assign_names(&c, "x");
        let (_galloc, g) = allocate(&mut c, x8, &d);
        check_all(&c, &g, true);
        assert_eq!(
            layout(&c, &[&d]),
            " [ 40 32 ] | x0:0.0@16 x1:0.0@0 x2:0.0@8 x3:0.0@0 x4:0.1@0 x5:0.0@8 x6:0.1@0 x7:0.1@8 x8:0.0@0"
        );
    }

    fn merge_free_block(max_size: usize) -> String {
        let d = Dummy::new(max_size, 8);
        let mut c = context();
        let x0 = input(&mut c, 16);
        let x1 = input(&mut c, 16);
        let x2 = input(&mut c, 16);
        let x3 = reduce::mean(&mut c, x0);
        let x4 = reduce::mean(&mut c, x1);
        let x5 = pool::pad(&mut c, x2, 2, 0, 0, 0);
        let x6 = elementwise::add(&mut c, x3, x4);
        let x7 = pool::pad(&mut c, x6, 5, 0, 0, 0);
        let x8 = elementwise::add(&mut c, x5, x7);
        assign_names(&c, "x");
        let (galloc, g) = allocate(&mut c, x8, &d);
        check_all(&c, &g, true);
        assert_eq!(galloc.buffer_size(0), 72);
        layout(&c, &[&d])
    }

    #[test]
    fn merge_free_block_chunked() {
        assert_eq!(
            merge_free_block(32),
            " [ 32 16 24 ] | x0:0.0@16 x1:0.1@0 x2:0.0@0 x3:0.0@0 x4:0.0@8 x5:0.2@0 x6:0.0@0 x7:0.0@8 x8:0.2@0"
        );
    }

    #[test]
    fn merge_free_block_unbounded() {
        assert_eq!(
            merge_free_block(usize::MAX),
            " [ 72 ] | x0:0.0@16 x1:0.0@32 x2:0.0@0 x3:0.0@0 x4:0.0@8 x5:0.0@48 x6:0.0@0 x7:0.0@8 x8:0.0@48"
        );
    }

    #[test]
    fn prefer_already_allocated_memory() {
        let d = Dummy::new(32, 4);
        let mut c = context();
        let x0 = input(&mut c, 24);
        let x1 = reduce::mean(&mut c, x0);
        let x2 = reduce::mean(&mut c, x1);
        assign_names(&c, "x");
        let (_galloc, g) = allocate(&mut c, x2, &d);
        check_all(&c, &g, false);
        assert_eq!(layout(&c, &[&d]), " [ 28 ] | x0:0.0@0 x1:0.0@24 x2:0.0@0");
    }

    /// Buffer ids per node and leaf, looked up by name.
    fn ids_by_name(list: impl Iterator<Item = TensorPtr>, table: &[(&str, i32)]) -> Vec<i32> {
        list.map(|t| table.iter().find(|(n, _)| *n == t.name()).map(|&(_, id)| id).expect("unlisted tensor")).collect()
    }

    #[test]
    fn multiple_buffer_types() {
        let a = Dummy::new(32, 8);
        let b = Dummy::new(usize::MAX, 8);
        let mut ca = context();
        let mut cb = context();
        let mut c = context();
        let a0 = input(&mut ca, 16);
        let a1 = input(&mut ca, 16);
        assign_names(&ca, "a");
        let b0 = input(&mut cb, 24);
        let b1 = input(&mut cb, 4);
        assign_names(&cb, "b");
        let x0 = input(&mut c, 16);
        let x1 = elementwise::mul(&mut c, x0, a0);
        let x2 = pool::pad(&mut c, x1, 2, 0, 0, 0);
        let x3 = elementwise::mul(&mut c, x2, b0);
        let x4 = reduce::mean(&mut c, x3);
        let x5 = elementwise::add(&mut c, x4, b1);
        let x6 = pool::pad(&mut c, x5, 3, 0, 0, 0);
        let x7 = elementwise::add(&mut c, x6, a1);
        let x8 = elementwise::scale(&mut c, x7, 2.0);
        assign_names(&c, "x");
        let buf_a = alloc_ctx_tensors(&ca, a.buft()).unwrap();
        let buf_b = alloc_ctx_tensors(&cb, b.buft()).unwrap();

        let g = graph_of(&mut c, x8);
        assert_eq!((g.n_leafs, g.n_nodes), (5, 8));
        let leaf_ids = ids_by_name(g.leafs(), &[("a0", 0), ("a1", 0), ("b0", 1), ("b1", 1), ("x0", 0)]);
        let node_ids = ids_by_name(
            g.nodes(),
            &[("x1", 0), ("x2", 0), ("x3", 1), ("x4", 1), ("x5", 1), ("x6", 1), ("x7", 0), ("x8", 0)],
        );
        let mut galloc = Gallocr::new(&[a.buft(), b.buft()]);
        assert!(galloc.reserve_n(&g, Some(&node_ids), Some(&leaf_ids)));
        assert!(galloc.alloc_graph(&g));
        check_all(&c, &g, true);
        assert_eq!((a.total(), b.total()), (72, 56));
        assert_eq!(
            layout(&c, &[&a, &b]),
            " [ 32 16 24 ] [ 32 24 ] | x0:0.1@0 x1:0.1@0 x2:0.2@0 x3:0.2@0 x4:1.1@0 x5:1.1@0 x6:1.1@8 x7:1.1@8 x8:1.1@8"
        );
        drop(galloc);
        buf_a.free();
        buf_b.free();
        assert_eq!((a.total(), b.total()), (0, 0));
    }

    #[test]
    fn buffer_size_zero() {
        let a = Dummy::new(usize::MAX, 8);
        let b = Dummy::new(usize::MAX, 8);
        let mut c = context();
        let x0 = input(&mut c, 16);
        let x1 = elementwise::scale(&mut c, x0, 2.0);
        let g = graph_of(&mut c, x1);
        let mut galloc = Gallocr::new(&[a.buft(), b.buft()]);
        assert!(galloc.reserve_n(&g, Some(&[0]), Some(&[0])));
        assert!(galloc.alloc_graph(&g));
        check_all_allocated(&g);
        assert_eq!((a.total(), b.total()), (16, 0));
        assert_eq!((a.sizes().len(), b.sizes().len()), (1, 0));
        assert_eq!((galloc.buffer_size(0), galloc.buffer_size(1)), (16, 0));
    }

    #[test]
    fn reallocation() {
        let d = Dummy::new(32, 4);
        let mut galloc = Gallocr::new(&[d.buft()]);
        {
            let mut c = context();
            let x0 = input(&mut c, 24);
            let x1 = input(&mut c, 16);
            let x2 = shape::view_1d(&mut c, x0, 4, 0);
            let x3 = elementwise::add(&mut c, x2, x1);
            assign_names(&c, "x");
            let g = graph_of(&mut c, x3);
            assert!(galloc.alloc_graph(&g));
            check_all_allocated(&g);
            assert_eq!(layout(&c, &[&d]), " [ 24 16 ] | x0:0.0@0 x1:0.1@0 x2:0.0@0 x3:0.1@0");
        }
        {
            let mut c = context();
            let x0 = input(&mut c, 20);
            let x1 = input(&mut c, 20);
            let x2 = elementwise::add(&mut c, x0, x1);
            assign_names(&c, "x");
            let g = graph_of(&mut c, x2);
            assert!(galloc.alloc_graph(&g));
            check_all_allocated(&g);
            assert_eq!(layout(&c, &[&d]), " [ 20 20 ] | x0:0.0@0 x1:0.1@0 x2:0.0@0");
        }
        drop(galloc);
        assert_eq!(d.total(), 0);
    }

    #[test]
    fn inplace_chain_with_leafs_outputs_and_views() {
        let d = Dummy::new(usize::MAX, 32);
        let mut c = context();
        let x0 = input(&mut c, 64);
        let x1 = c.new_tensor(Type::F32, &[16]);
        let x2 = elementwise::scale(&mut c, x0, 2.0);
        let x3 = elementwise::sqr(&mut c, x2);
        let x4 = elementwise::add(&mut c, x3, x1);
        x4.get_mut().flags |= flag::OUTPUT;
        let x5 = elementwise::sqrt(&mut c, x4);
        let x6 = shape::view_1d(&mut c, x5, 8, 16);
        let x7 = shape::cont(&mut c, x6);
        let x8 = shape::reshape_2d(&mut c, x5, 4, 4);
        let x9 = shape::transpose(&mut c, x8);
        let x10 = shape::cont(&mut c, x9);
        let x11 = shape::reshape_2d(&mut c, x7, 4, 2);
        let x12 = reduce::concat(&mut c, x10, x11, 1);
        let x13 = softmax::soft_max(&mut c, x12);
        assign_names(&c, "x");
        let (galloc, g) = allocate(&mut c, x13, &d);
        check_all(&c, &g, true);
        assert_eq!(
            layout(&c, &[&d]),
            " [ 320 ] | x0:0.0@0 x1:0.0@64 x2:0.0@0 x3:0.0@0 x4:0.0@0 x5:0.0@64 x6:0.0@80 x7:0.0@192 \
             x8:0.0@64 x9:0.0@64 x10:0.0@128 x11:0.0@192 x12:0.0@224 x13:0.0@224"
        );
        assert_eq!(galloc.buffer_size(0), 320);
    }

    #[test]
    fn three_buffer_ids_over_two_types() {
        let a = Dummy::new(64, 8);
        let b = Dummy::new(usize::MAX, 16);
        let mut c = context();
        let x0 = input(&mut c, 32);
        let x1 = input(&mut c, 16);
        let x2 = elementwise::scale(&mut c, x0, 3.0);
        let x3 = elementwise::sqr(&mut c, x2);
        let x4 = shape::view_1d(&mut c, x3, 4, 0);
        let x5 = elementwise::add(&mut c, x4, x1);
        let x6 = reduce::concat(&mut c, x5, x3, 0);
        let x7 = reduce::mean(&mut c, x6);
        assign_names(&c, "x");
        let g = graph_of(&mut c, x7);
        let names: Vec<String> = g.nodes().chain(g.leafs()).map(|t| t.name().to_owned()).collect();
        assert_eq!(names, ["x2", "x3", "x4", "x5", "x6", "x7", "x0", "x1"]);
        let node_ids: Vec<i32> = (0..g.n_nodes).map(|i| i % 3).collect();
        let leaf_ids: Vec<i32> = (0..g.n_leafs).map(|i| (i + 1) % 3).collect();

        let mut galloc = Gallocr::new(&[a.buft(), b.buft(), a.buft()]);
        assert_eq!(galloc.reserve_n_size(&g, Some(&node_ids), Some(&leaf_ids)), [16, 80, 16]);
        assert_eq!((a.total(), b.total()), (0, 0));
        assert!(galloc.reserve_n(&g, Some(&node_ids), Some(&leaf_ids)));
        assert!(galloc.alloc_graph(&g));
        check_all(&c, &g, true);
        assert_eq!([0, 1, 2].map(|i| galloc.buffer_size(i)), [16, 80, 0]);
        assert_eq!(
            layout(&c, &[&a, &b]),
            " [ 16 ] [ 80 ] | x0:1.0@0 x1:0.0@0 x2:1.0@0 x3:1.0@0 x4:1.0@0 x5:0.0@0 x6:1.0@32 x7:0.0@0"
        );

        // A different graph is not re-planned automatically with several buffers.
        let g2 = cgraph::new_graph(&mut c);
        g2.get_mut().build_forward_expand(x5);
        assert!(!galloc.alloc_graph(&g2));
        drop(galloc);
        assert_eq!((a.total(), b.total()), (0, 0));
    }

    fn mul_concat(c: &mut Context, bytes: usize) -> GraphPtr {
        let x0 = input(c, bytes);
        let x1 = input(c, bytes);
        let x2 = elementwise::mul(c, x0, x1);
        let x3 = reduce::concat(c, x2, x0, 0);
        assign_names(c, "x");
        graph_of(c, x3)
    }

    #[test]
    fn reserved_buffers_serve_smaller_graphs_and_grow_for_larger_ones() {
        let d = Dummy::new(usize::MAX, 8);
        let mut galloc = Gallocr::new(&[d.buft()]);
        let mut c = context();
        let g = mul_concat(&mut c, 256);
        assert!(galloc.reserve(&g));
        assert_eq!((d.total(), d.sizes().len(), galloc.buffer_size(0)), (1024, 1, 1024));

        // Same shape of graph, smaller tensors: the reserved plan is replayed as is.
        let mut c = context();
        let g = mul_concat(&mut c, 64);
        assert!(galloc.alloc_graph(&g));
        assert_eq!(layout(&c, &[&d]), " [ 1024 ] | x0:0.0@0 x1:0.0@256 x2:0.0@256 x3:0.0@512");

        // Larger tensors: planned again and the buffer reallocated.
        let mut c = context();
        let g = mul_concat(&mut c, 512);
        assert!(galloc.alloc_graph(&g));
        assert_eq!(galloc.buffer_size(0), 2048);
        assert_eq!(layout(&c, &[&d]), " [ 2048 ] | x0:0.0@0 x1:0.0@512 x2:0.0@512 x3:0.0@1024");
    }

    /// The scale chain of the reference's `test_graph_optimize_alloc_dep`; with `keep_first`,
    /// a dependency node as ggml-backend's scheduler adds one (a NONE-op view of the first
    /// scale, with it as source, after the last node) keeps the first result alive to the end.
    fn scale_chain(keep_first: bool) -> [usize; 4] {
        let d = Dummy::new(usize::MAX, 8);
        let mut c = context();
        let x0 = input(&mut c, 16);
        let x1 = elementwise::scale(&mut c, x0, 2.0);
        let x2 = elementwise::scale(&mut c, x1, 2.0);
        let x3 = elementwise::scale(&mut c, x2, 2.0);
        let g = graph_of(&mut c, x3);
        if keep_first {
            let dep = crate::core::ops::view_tensor(&mut c, x1);
            dep.get_mut().src[0] = x1.as_ptr();
            g.get_mut().add_node(dep);
        }
        let mut galloc = Gallocr::new(&[d.buft()]);
        assert!(galloc.alloc_graph(&g));
        check_all(&c, &g, false);
        [x0, x1, x2, x3].map(|t| t.data as usize)
    }

    #[test]
    fn dependency_nodes_keep_tensors_alive() {
        let [x0, x1, x2, x3] = scale_chain(false);
        assert!(x0 == x1 && x1 == x2 && x2 == x3);
        let [x0, x1, x2, x3] = scale_chain(true);
        assert!(x0 == x1 && x1 != x2 && x2 == x3);
    }

    /// One block of a small transformer: attention with rope, permutes and soft_max, a gated
    /// feed-forward, residual adds, and a few views and concats.
    fn transformer_layer(c: &mut Context, x: TensorPtr, pos: TensorPtr, il: usize) -> TensorPtr {
        const E: i64 = 64;
        const H: i64 = 4;
        const D: i64 = 16;
        const T: i64 = 8;
        const F: i64 = 128;
        let w = |c: &mut Context, a: i64, b: i64| c.new_tensor(Type::F32, &[a, b]);
        let cur = norm::rms_norm(c, x, 1e-5);
        let wn = c.new_tensor(Type::F32, &[E]);
        let cur = elementwise::mul(c, cur, wn);
        let mut qkv = [cur; 3];
        for t in &mut qkv {
            let wt = w(c, E, E);
            let m = matmul::mul_mat(c, wt, cur);
            *t = shape::reshape_3d(c, m, D, H, T);
        }
        let [q, k, v] = qkv;
        let q = rope::rope(c, q, pos, D as i32, 0);
        let k = rope::rope(c, k, pos, D as i32, 0);
        let q = shape::permute(c, q, 0, 2, 1, 3);
        let k = shape::permute(c, k, 0, 2, 1, 3);
        let kq = matmul::mul_mat(c, k, q);
        let kq = elementwise::scale(c, kq, 0.25);
        let kq = softmax::soft_max(c, kq);
        let vp = shape::permute(c, v, 1, 2, 0, 3);
        let vt = shape::cont(c, vp);
        let kqv = matmul::mul_mat(c, vt, kq);
        let merged = shape::permute(c, kqv, 0, 2, 1, 3);
        let cur = shape::cont_2d(c, merged, E, T);
        if il == 0 {
            cur.get_mut().flags |= flag::OUTPUT;
        }
        let wo = w(c, E, E);
        let cur = matmul::mul_mat(c, wo, cur);
        let x = elementwise::add(c, x, cur);
        let cur = norm::rms_norm(c, x, 1e-5);
        let wu = w(c, E, F);
        let up = matmul::mul_mat(c, wu, cur);
        let wg = w(c, E, F);
        let gate = matmul::mul_mat(c, wg, cur);
        let gate = unary::silu(c, gate);
        let gu = elementwise::mul(c, gate, up);
        let wd = w(c, F, E);
        let cur = matmul::mul_mat(c, wd, gu);
        let top = shape::view_2d(c, cur, E, T / 2, cur.nb[1], 0);
        let half = shape::cont(c, top);
        let kview = shape::view_2d(c, k, D, T, k.nb[1], 0);
        let kv = shape::cont(c, kview);
        let kvv = shape::view_2d(c, kv, E, 2, E as usize * 4, 0);
        let rep = reduce::concat(c, kvv, kvv, 1);
        let extra = reduce::concat(c, half, rep, 1);
        let cur = elementwise::add(c, cur, extra);
        elementwise::add(c, x, cur)
    }

    /// 64-bit FNV-1a, to compare long layouts with the reference's.
    fn fnv1a(s: &str) -> u64 {
        s.bytes().fold(0xcbf29ce484222325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
    }

    /// A three-layer transformer graph in one allocator: the buffer size and a hash of every
    /// tensor's place, as the reference computed them.
    fn transformer(max_size: usize, alignment: usize) -> (usize, u64) {
        let d = Dummy::new(max_size, alignment);
        let mut c = context();
        let x = input(&mut c, 64 * 8 * 4);
        let mut x = shape::reshape_2d(&mut c, x, 64, 8);
        let pos = c.new_tensor(Type::I32, &[8]);
        pos.get_mut().flags |= flag::INPUT;
        for il in 0..3 {
            x = transformer_layer(&mut c, x, pos, il);
        }
        let n = norm::rms_norm(&mut c, x, 1e-5);
        let w = c.new_tensor(Type::F32, &[64, 100]);
        let out = matmul::mul_mat(&mut c, w, n);
        assign_names(&c, "x");
        let (galloc, g) = allocate(&mut c, out, &d);
        assert_eq!((g.n_nodes, g.n_leafs, c.tensors().count()), (114, 27, 141));
        check_all_allocated(&g);
        check_no_overlap(&g);
        let mut s = String::new();
        for size in d.sizes() {
            s += &format!(" {size}");
        }
        s += " |";
        for t in c.tensors() {
            if t.buffer.is_null() {
                s += &format!(" {}:-", t.name());
                continue;
            }
            let bi = d.buffers.borrow().iter().position(|&b| b.cast() == t.buffer).unwrap();
            s += &format!(" {}:{}@{}", t.name(), bi, t.data as usize - BASE);
        }
        (galloc.buffer_size(0), fnv1a(&s))
    }

    #[test]
    fn transformer_graph_matches_the_reference() {
        assert_eq!(transformer(usize::MAX, 32), (524064, 1461170284108208327));
        assert_eq!(transformer(16384, 64), (524096, 11550990973666098562));
        assert_eq!(transformer(2048, 16), (524064, 16739761976146989676));
    }

    #[test]
    fn ops_that_can_run_in_place() {
        assert!(op_can_inplace(Op::ADD) && op_can_inplace(Op::SOFT_MAX) && op_can_inplace(Op::FILL));
        assert!(!op_can_inplace(Op::MUL_MAT) && !op_can_inplace(Op::CPY) && !op_can_inplace(Op::NONE));
    }
}
