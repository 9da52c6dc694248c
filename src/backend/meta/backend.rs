//! The meta backend: one simple backend per device. A graph of meta tensors runs as, on every
//! device, the same nodes over that device's slices, cut into subgraphs after each node whose
//! result is a partial sum; between subgraphs the partial sums are all-reduced, through the
//! simple backends' own collective if their registry offers one, else by copying between
//! backends and adding (a butterfly over the devices).

use std::ffi::{CStr, CString, c_void};

use super::buffer::{meta_buffer, simple_tensor, split_state, tensor_is_meta};
use super::{SplitAxis, SplitState};
use crate::backend::adapter::new_backend;
use crate::backend::backend::{BackendPtr, tensor_copy_async};
use crate::backend::buffer::{self as bufops, BufferPtr};
use crate::backend::device::DevicePtr;
use crate::backend::guid::StaticGuid;
use crate::backend::interface::{Backend, CommAllreduceFn, CommFreeFn, CommInitFn};
use crate::backend::reg::RegPtr;
use crate::backend::traits::{self, Copy2d};
use crate::core::context::{Context, InitParams};
use crate::core::graph::{Graph, GraphPtr, cgraph};
use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr, flag};

/// A graph in a context of its own.
struct OwnedGraph {
    _ctx: Box<Context>,
    graph: GraphPtr,
}

impl OwnedGraph {
    fn new(size: usize) -> OwnedGraph {
        let mut ctx = Context::new(InitParams {
            mem_size: cgraph::overhead_custom(size, false),
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        });
        let graph = cgraph::new_graph_custom(&mut ctx, size, false);
        OwnedGraph { _ctx: ctx, graph }
    }
}

/// One simple backend and what it runs.
struct Device1 {
    backend: BackendPtr,
    /// This device's slice of every node of the current graph.
    nodes: Vec<TensorPtr>,
    /// Its subgraphs of the current graph (room for `max_nnodes` nodes each).
    subgraphs: Vec<OwnedGraph>,
    /// Scratch buffers receiving other devices' partial sums, one per reduction step.
    scratch: Vec<Option<BufferPtr>>,
}

struct Comm {
    ctx: *mut c_void,
    allreduce: CommAllreduceFn,
    free: Option<CommFreeFn>,
}

/// A meta backend: one simple backend per device.
pub struct MetaBackend {
    name: CString,
    devices: Vec<Device1>,
    /// Where each subgraph starts in the original graph.
    offsets: Vec<usize>,
    n_subgraphs: usize,
    max_nnodes: usize,
    max_tmp_size: usize,
    /// The original graph's uid when the subgraphs were built.
    uid: u64,
    // Boxed: simple backends hold the addresses while a run is under way.
    #[allow(clippy::vec_box)]
    aux_nodes: Vec<Box<Tensor>>,
    aux_graphs: Vec<OwnedGraph>,
    comm: Option<Comm>,
}

static GUID: StaticGuid =
    StaticGuid::new([0xf1, 0x0e, 0x34, 0xcf, 0x9c, 0x6f, 0x43, 0xcb, 0x96, 0x92, 0xbe, 0x8e, 0xbb, 0x71, 0x3f, 0xda]);

/// `ggml_backend_is_meta`.
pub fn backend_is_meta(backend: BackendPtr) -> bool {
    backend.downcast::<MetaBackend>().is_some()
}

#[track_caller]
fn meta_ctx<'a>(backend: BackendPtr) -> &'a mut MetaBackend {
    match backend.downcast::<MetaBackend>() {
        Some(m) => m,
        None => crate::ggml_abort!("GGML_ASSERT(ggml_backend_is_meta(backend)) failed"),
    }
}

/// `ggml_backend_meta_n_backends`.
pub fn meta_n_backends(backend: BackendPtr) -> usize {
    meta_ctx(backend).devices.len()
}

/// `ggml_backend_meta_simple_backend`: the backend of device `index`.
pub fn meta_simple_backend(backend: BackendPtr, index: usize) -> BackendPtr {
    let devices = &meta_ctx(backend).devices;
    crate::ggml_assert!(index < devices.len(), "meta backend has no simple backend {}", index);
    devices[index].backend
}

/// The meta device's `init_backend`: a backend of `device` with a simple backend on every one
/// of `simple`, each given `params`.
pub(super) fn init(device: DevicePtr, simple: &[DevicePtr], params: Option<&CStr>) -> BackendPtr {
    let n = simple.len();
    let n_reduce_steps = if n <= 1 { 0 } else { (usize::BITS - (n - 1).leading_zeros()) as usize };
    let mut backends = Vec::with_capacity(n);
    for d in simple {
        match d.init_backend(params) {
            Some(b) => backends.push(b),
            None => crate::ggml_abort!("failed to start a backend on {}", d.name_lossy()),
        }
    }
    let name = format!("Meta({})", simple.iter().map(|d| d.name_lossy()).collect::<Vec<_>>().join(","));
    let comm = if n > 1 { comm_init(&mut backends) } else { None };
    let meta = MetaBackend {
        name: CString::new(name).unwrap_or_default(),
        devices: backends
            .into_iter()
            .map(|backend| Device1 {
                backend,
                nodes: Vec::new(),
                subgraphs: Vec::new(),
                scratch: vec![None; n_reduce_steps],
            })
            .collect(),
        offsets: Vec::new(),
        n_subgraphs: 0,
        max_nnodes: 0,
        max_tmp_size: 0,
        uid: 0,
        aux_nodes: Vec::new(),
        aux_graphs: Vec::new(),
        comm,
    };
    new_backend(GUID.as_ptr(), device, Box::new(meta))
}

/// The registry of the first simple backend's device, if it has one.
fn first_reg(backends: &[BackendPtr]) -> Option<RegPtr> {
    // SAFETY: a device's registry pointer is null or a live registry.
    unsafe { RegPtr::from_raw(backends.first()?.device().reg()) }
}

fn comm_init(backends: &mut [BackendPtr]) -> Option<Comm> {
    let reg = first_reg(backends)?;
    let init = reg.proc_address(c"ggml_backend_comm_init");
    if init.is_null() {
        return None;
    }
    // SAFETY: a registry exports this name with the signature ggml-backend.h gives it.
    let init: CommInitFn = unsafe { std::mem::transmute::<*mut c_void, CommInitFn>(init) };
    let mut raw: Vec<*mut Backend> = backends.iter().map(|b| b.as_ptr()).collect();
    // SAFETY: the array holds `raw.len()` live backends.
    let ctx = unsafe { init(raw.as_mut_ptr(), raw.len()) };
    if ctx.is_null() {
        return None;
    }
    let allreduce = reg.proc_address(c"ggml_backend_comm_allreduce_tensor");
    crate::ggml_assert!(!allreduce.is_null(), "backend offers comm_init without comm_allreduce_tensor");
    // SAFETY: as for `init`.
    let allreduce = unsafe { std::mem::transmute::<*mut c_void, CommAllreduceFn>(allreduce) };
    let free = reg.proc_address(c"ggml_backend_comm_free");
    // SAFETY: as for `init`.
    let free = (!free.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, CommFreeFn>(free) });
    Some(Comm { ctx, allreduce, free })
}

impl Drop for MetaBackend {
    fn drop(&mut self) {
        if let Some(comm) = &self.comm {
            let Some(free) = comm.free else { crate::ggml_abort!("backend offers comm_init without comm_free") };
            // SAFETY: the context came from the same registry's comm_init and is freed once.
            unsafe { free(comm.ctx) };
        }
        for d in &self.devices {
            for b in d.scratch.iter().flatten() {
                b.free();
            }
            d.backend.free();
        }
    }
}

/// The state of a tensor for an asynchronous whole-tensor access, checked for support.
fn async_state(tensor: TensorPtr, offset: usize) -> SplitState {
    crate::ggml_assert!(offset == 0, "meta backends access whole tensors asynchronously");
    crate::ggml_assert!(tensor.is_contiguous(), "meta tensor {} is not contiguous", tensor.name());
    let state = split_state(tensor, false);
    crate::ggml_assert!(state.is_simple(), "asynchronous access to segmented meta tensor {}", tensor.name());
    state
}

/// The parts of an access of `size` bytes at `offset` to a tensor split along `axis` (0, 1 or
/// 2) over `n_devices`: for each device with a share, its index, its slice, where its bytes
/// start in a chunk of the caller's data, and the 2-D copy that moves them (a run of the
/// slice's chunk from every chunk of the tensor's).
fn split_parts(
    tensor: TensorPtr,
    axis: SplitAxis,
    offset: usize,
    size: usize,
    n_devices: usize,
) -> Vec<(usize, TensorPtr, usize, Copy2d)> {
    let dim = axis.0 as usize;
    let chunk = tensor.nb[dim + 1];
    crate::ggml_assert!(size.is_multiple_of(chunk), "access not aligned to the split");
    let mut parts = Vec::with_capacity(n_devices);
    let mut within = 0;
    for j in 0..n_devices {
        let slice = slice_of(&tensor, j);
        let chunk_j = slice.nb[dim + 1];
        if chunk_j == 0 {
            continue;
        }
        let c = Copy2d { offset, size: chunk_j, n_copies: size / chunk, stride_tensor: chunk_j, stride_data: chunk };
        parts.push((j, slice, within, c));
        within += chunk_j;
    }
    crate::ggml_assert!(within == chunk, "slices do not add up to the tensor");
    parts
}

#[track_caller]
fn slice_of(tensor: &Tensor, j: usize) -> TensorPtr {
    match simple_tensor(tensor, j) {
        Some(t) => t,
        None => crate::ggml_abort!("meta tensor {} has no slice for device {}", tensor.name(), j),
    }
}

impl traits::Backend for MetaBackend {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn set_tensor_async(&mut self, tensor: TensorPtr, data: &[u8], offset: usize) -> bool {
        let state = async_state(tensor, offset);
        match state.axis {
            SplitAxis::AXIS_0 | SplitAxis::AXIS_1 | SplitAxis::AXIS_2 => {
                for (j, slice, within, c) in split_parts(tensor, state.axis, offset, data.len(), self.devices.len()) {
                    self.devices[j].backend.tensor_set_2d_async(slice, &data[within..], c);
                }
            }
            SplitAxis::MIRRORED => {
                for (j, d) in self.devices.iter().enumerate() {
                    d.backend.tensor_set_async(slice_of(&tensor, j), data, offset);
                }
            }
            a => crate::ggml_abort!("cannot write meta tensor {} with split axis {}", tensor.name(), a.label()),
        }
        true
    }

    fn get_tensor_async(&mut self, tensor: TensorPtr, data: &mut [u8], offset: usize) -> bool {
        let state = async_state(tensor, offset);
        match state.axis {
            SplitAxis::AXIS_0 | SplitAxis::AXIS_1 | SplitAxis::AXIS_2 => {
                for (j, slice, within, c) in split_parts(tensor, state.axis, offset, data.len(), self.devices.len()) {
                    self.devices[j].backend.tensor_get_2d_async(slice, &mut data[within..], c);
                }
            }
            SplitAxis::MIRRORED => self.devices[0].backend.tensor_get_async(slice_of(&tensor, 0), data, offset),
            a => crate::ggml_abort!("cannot read meta tensor {} with split axis {}", tensor.name(), a.label()),
        }
        true
    }

    fn synchronize(&mut self) {
        for d in &self.devices {
            d.backend.synchronize();
        }
    }

    fn graph_compute(&mut self, graph: &mut Graph) -> Status {
        crate::ggml_assert!(!graph.has_grads(), "meta backends compute graphs without gradients");
        if graph.uid == 0 || graph.uid != self.uid {
            self.rebuild(graph);
        }
        self.run()
    }
}

// ---------------------------------------------------------------------------------------------
// Building the subgraphs

/// A node that views a host input tensor (not a meta tensor): it runs as it is everywhere.
fn is_host_view(node: &Tensor) -> bool {
    // SAFETY: view_src is null or a live tensor, whose buffer is null or live.
    let Some(vs) = (unsafe { TensorPtr::from_raw(node.view_src) }) else { return false };
    // SAFETY: as above.
    vs.op == Op::NONE && unsafe { BufferPtr::from_raw(vs.buffer.cast()) }.is_some_and(|b| b.is_host())
}

fn axis_of(t: TensorPtr) -> SplitAxis {
    if !tensor_is_meta(&t) {
        return SplitAxis::UNKNOWN;
    }
    split_state(t, false).axis
}

/// The original graph, for finding how far an all-reduce can be put off.
struct Plan<'a> {
    g: &'a Graph,
    n: usize,
}

impl Plan<'_> {
    fn node(&self, i: usize) -> TensorPtr {
        self.g.node(i)
    }

    fn uses(&self, i: usize) -> i64 {
        i64::from(self.g.use_count(self.node(i).as_ptr()))
    }

    /// Skips the mirrored nodes after `id` that do not depend on `node`.
    fn skip_unrelated(&self, id: &mut usize, node: TensorPtr) {
        while *id + 1 < self.n {
            let next = self.node(*id + 1);
            if axis_of(next) != SplitAxis::MIRRORED {
                break;
            }
            let unrelated =
                (0..MAX_SRC).filter_map(|s| next.src(s)).all(|src| src != node && axis_of(src) == SplitAxis::MIRRORED);
            if !unrelated {
                break;
            }
            *id += 1;
        }
    }

    /// The last node of the chain that partial node `i` starts and that can be computed on
    /// the partial sums just as well (an ADD_ID bias, MULs by mirrored factors, and the
    /// per-expert views and ADDs that sum a mixture of experts).
    fn delayed_branch(&self, i: usize) -> usize {
        let n = self.n;
        let mut id = i;
        let mut last_safe = i;
        let mut node = self.node(id);
        let mut n_used = self.uses(id);

        self.skip_unrelated(&mut id, node);
        if id + 1 >= n {
            return last_safe;
        }
        let next = self.node(id + 1);
        if next.op == Op::ADD_ID
            && next.src(0) == Some(node)
            && next.src(1).is_some_and(|s| axis_of(s) == SplitAxis::PARTIAL)
            && next.src(2).is_some_and(|s| axis_of(s) == SplitAxis::MIRRORED)
        {
            node = next;
            id += 1;
            last_safe = id;
            n_used = self.uses(id);
        }
        loop {
            self.skip_unrelated(&mut id, node);
            if id + 1 >= n {
                return last_safe;
            }
            let next = self.node(id + 1);
            if next.op == Op::MUL
                && next.src(0) == Some(node)
                && next.src(1).is_some_and(|s| axis_of(s) == SplitAxis::MIRRORED)
            {
                node = next;
                id += 1;
                last_safe = id;
                n_used = self.uses(id);
            } else {
                break;
            }
        }

        if n_used != node.ne[1] || n_used < 1 || id as i64 + 2 * n_used > n as i64 {
            return last_safe;
        }
        let at = |id: usize, back: i64| self.node((id as i64 - back) as usize);
        for k in 0..n_used as usize {
            let next = self.node(id + 1);
            if next.op != Op::VIEW
                || next.view_src != node.as_ptr()
                || next.view_offs != k * node.nb[1]
                || next.ne[0] != node.ne[0]
                || next.ne[1] != node.ne[2]
                || next.nb[1] != node.nb[2]
                || self.uses(id + 1) != 1
            {
                return last_safe;
            }
            id += 1;
        }
        if id + 1 >= n {
            return last_safe;
        }
        let next = self.node(id + 1);
        if next.op != Op::ADD
            || next.src(0) != Some(at(id, n_used - 1))
            || next.src(1) != Some(at(id, n_used - 2))
            || self.uses(id + 1) != 1
        {
            return last_safe;
        }
        id += 1;
        for _ in 0..(n_used - 2).max(0) {
            if id + 1 >= n {
                return last_safe;
            }
            let next = self.node(id + 1);
            if next.op != Op::ADD
                || next.src(0) != Some(self.node(id))
                || next.src(1) != Some(at(id, n_used - 2))
                || self.uses(id + 1) != 1
            {
                return last_safe;
            }
            id += 1;
        }
        id
    }

    /// Where the all-reduce of partial node `i` can go: after its delayable chain, or, since
    /// reduce(a) + reduce(b) == reduce(a + b), after the sum of it and an independent partial
    /// branch that follows.
    fn delayed(&self, i: usize, devices: &[Device1]) -> usize {
        let n = self.n;
        let i_delayed = self.delayed_branch(i);
        let node = self.node(i_delayed);
        if self.uses(i_delayed) != 1 {
            return i_delayed;
        }
        for id in i_delayed + 1..n {
            let next = self.node(id);
            if next.view_src == node.as_ptr() || (0..MAX_SRC).any(|s| next.src(s) == Some(node)) {
                return i_delayed;
            }
            if is_host_view(&next) || axis_of(next) != SplitAxis::PARTIAL {
                continue;
            }
            let other_delayed = self.delayed_branch(id);
            let other = self.node(other_delayed);
            if self.uses(other_delayed) != 1 || other_delayed + 1 >= n {
                return i_delayed;
            }
            let sum = self.node(other_delayed + 1);
            let operands = (sum.src(0), sum.src(1));
            if sum.op != Op::ADD
                || !node.same_shape(&other)
                || node.type_ != other.type_
                || sum.type_ != node.type_
                || !(operands == (Some(node), Some(other)) || operands == (Some(other), Some(node)))
                || axis_of(sum) != SplitAxis::MIRRORED
            {
                return i_delayed;
            }
            let computes = |t: TensorPtr| t.flags & flag::COMPUTE != 0;
            if devices.iter().any(|d| computes(d.nodes[i]) != computes(d.nodes[id])) {
                return i_delayed;
            }
            return other_delayed + 1;
        }
        i_delayed
    }
}

impl MetaBackend {
    fn rebuild(&mut self, g: &Graph) {
        let n_nodes = g.node_slots().len();
        let nodes_raised = n_nodes > self.max_nnodes;
        if nodes_raised {
            self.max_nnodes = n_nodes;
        }

        // Graph tensors initialised from now on get fresh slices; this graph's stay valid.
        let mut used: Vec<BufferPtr> = Vec::new();
        for t in g.leafs().chain(g.nodes()) {
            // SAFETY: a graph tensor's buffer is null or live.
            let Some(b) = (unsafe { BufferPtr::from_raw(t.buffer.cast()) }) else { continue };
            if !used.contains(&b) {
                used.push(b);
            }
        }
        for meta in used.into_iter().filter_map(meta_buffer) {
            meta.rotate_compute_set();
        }

        for (j, d) in self.devices.iter_mut().enumerate() {
            d.nodes.clear();
            for node in g.nodes() {
                // Views of host inputs are no meta tensors: every device runs them as they are.
                d.nodes.push(if is_host_view(&node) { node } else { slice_of(&node, j) });
            }
        }

        let plan = Plan { g, n: n_nodes };
        self.offsets.clear();
        let mut max_tmp_size = 0;
        let mut i_start = 0;
        let mut i = 0;
        while i < n_nodes {
            let node = g.node(i);
            if is_host_view(&node) {
                i += 1;
                continue;
            }
            let partial = split_state(node, false).axis == SplitAxis::PARTIAL;
            if partial {
                max_tmp_size = max_tmp_size.max(node.nbytes());
            }
            if !(partial || i + 1 == n_nodes) {
                i += 1;
                continue;
            }
            let i_delayed = plan.delayed(i, &self.devices);
            // A device that skips node i joins the all-reduce with zeros: with the reduction
            // put off, it must skip everything up to it as well.
            if i_delayed > i {
                for d in &self.devices {
                    if d.nodes[i].flags & flag::COMPUTE == 0 {
                        for t in &d.nodes[i + 1..=i_delayed] {
                            t.get_mut().flags &= !flag::COMPUTE;
                        }
                    }
                }
            }
            self.offsets.push(i_start);
            i = i_delayed + 1;
            i_start = i;
        }
        crate::ggml_assert!(i_start == n_nodes, "subgraphs do not cover the graph");
        self.uid = g.uid;
        self.n_subgraphs = self.offsets.len();

        if max_tmp_size > self.max_tmp_size {
            self.max_tmp_size = max_tmp_size;
            for d in &mut self.devices {
                for slot in &mut d.scratch {
                    if let Some(old) = slot.take() {
                        old.free();
                    }
                    *slot = d.backend.alloc_buffer(max_tmp_size);
                }
            }
        }

        for d in &mut self.devices {
            if nodes_raised {
                d.subgraphs.clear();
            }
            while d.subgraphs.len() < self.n_subgraphs {
                d.subgraphs.push(OwnedGraph::new(self.max_nnodes));
            }
            for k in 0..self.n_subgraphs {
                let start = self.offsets[k];
                let stop = self.offsets.get(k + 1).copied().unwrap_or(n_nodes);
                let sub = d.subgraphs[k].graph.get_mut();
                sub.n_nodes = 0;
                sub.visited_hash_set.reset();
                for idx in start..stop {
                    let node = d.nodes[idx];
                    sub.add_node(node);
                    let slot = sub.visited_hash_set.find_or_insert(node);
                    let uses = g.use_count(g.node(idx).as_ptr());
                    // SAFETY: the use-count table has one entry per hash slot.
                    unsafe { *sub.use_counts.add(slot) = uses };
                }
                sub.uid = cgraph::next_uid();
            }
        }
    }

    fn run(&mut self) -> Status {
        let n = self.devices.len();
        let mut aux = Aux { nodes: &mut self.aux_nodes, graphs: &mut self.aux_graphs, i_node: 0, i_graph: 0 };
        for k in 0..self.n_subgraphs {
            for d in &self.devices {
                let status = d.backend.graph_compute_async(d.subgraphs[k].graph.get_mut());
                if status != Status::SUCCESS {
                    return status;
                }
            }
            if n > 1 && k + 1 < self.n_subgraphs {
                let mut reduced = false;
                if let Some(comm) = &self.comm {
                    let mut lasts: Vec<*mut Tensor> = self.devices.iter().map(|d| last_node(d, k).as_ptr()).collect();
                    // SAFETY: the collective belongs to the simple backends' registry; the
                    // array holds one live tensor per backend.
                    reduced = unsafe { (comm.allreduce)(comm.ctx, lasts.as_mut_ptr()) };
                }
                if !reduced {
                    let status = allreduce_fallback(&mut self.devices, self.max_tmp_size, k, &mut aux);
                    if status != Status::SUCCESS {
                        return status;
                    }
                }
            }
        }
        Status::SUCCESS
    }
}

fn last_node(d: &Device1, k: usize) -> TensorPtr {
    let g = d.subgraphs[k].graph;
    g.node(g.n_nodes as usize - 1)
}

/// Scratch tensors and one-node graphs for the reductions, reused from run to run.
#[allow(clippy::vec_box)]
struct Aux<'a> {
    nodes: &'a mut Vec<Box<Tensor>>,
    graphs: &'a mut Vec<OwnedGraph>,
    i_node: usize,
    i_graph: usize,
}

impl Aux<'_> {
    /// A blank tensor of `like`'s type and shape.
    fn node(&mut self, like: &Tensor) -> TensorPtr {
        let blank = Tensor {
            type_: like.type_,
            buffer: std::ptr::null_mut(),
            ne: like.ne,
            nb: like.nb,
            op: Op::NONE,
            op_params: [0; 16],
            flags: 0,
            src: [std::ptr::null_mut(); MAX_SRC],
            view_src: std::ptr::null_mut(),
            view_offs: 0,
            data: std::ptr::null_mut(),
            name: [0; 64],
            extra: std::ptr::null_mut(),
            padding: [0; 8],
        };
        if self.i_node == self.nodes.len() {
            self.nodes.push(Box::new(blank));
        } else {
            *self.nodes[self.i_node] = blank;
        }
        let t: *mut Tensor = &mut *self.nodes[self.i_node];
        self.i_node += 1;
        // SAFETY: boxed in the backend's pool, which outlives the run that uses it.
        unsafe { TensorPtr::from_raw(t) }.expect("boxed tensor")
    }

    /// A graph of the single node `node`.
    fn graph(&mut self, node: TensorPtr) -> GraphPtr {
        if self.i_graph == self.graphs.len() {
            self.graphs.push(OwnedGraph::new(1));
        }
        let g = self.graphs[self.i_graph].graph;
        self.i_graph += 1;
        let graph = g.get_mut();
        graph.n_nodes = 0;
        graph.add_node(node);
        g
    }
}

/// Sums the last nodes of subgraph `k` over all devices, leaving the sum on every device.
fn allreduce_fallback(devices: &mut [Device1], tmp_size: usize, k: usize, aux: &mut Aux) -> Status {
    let n = devices.len();

    // Devices that skipped the node (an empty slice of a source) contribute zeros.
    for d in devices.iter() {
        let node = last_node(d, k);
        if node.flags & flag::COMPUTE != 0 {
            continue;
        }
        let zero = aux.node(&node);
        let z = zero.get_mut();
        z.op = Op::SCALE;
        z.src[0] = node.as_ptr();
        z.set_op_param_f32(0, 0.0);
        z.data = node.data;
        z.buffer = node.buffer;
        z.flags |= flag::COMPUTE;
        let g = aux.graph(zero);
        let status = d.backend.graph_compute_async(g.get_mut());
        if status != Status::SUCCESS {
            return status;
        }
    }

    // Copies device `from`'s sum into a scratch tensor on `to`, and makes the graph that adds
    // it to `to`'s sum.
    let mut push = |devices: &mut [Device1], from: usize, to: usize, step: usize| -> GraphPtr {
        let src = last_node(&devices[from], k);
        let dst = last_node(&devices[to], k);
        crate::ggml_assert!(src.is_contiguous() && dst.is_contiguous(), "partial sums must be contiguous");
        let tmp = aux.node(&dst);
        // A reduction put off past the partial node may move a larger tensor.
        let need = tmp_size.max(dst.nbytes());
        let slot = &mut devices[to].scratch[step];
        if slot.is_none_or(|b| b.size() < need) {
            if let Some(old) = slot.take() {
                old.free();
            }
            *slot = devices[to].backend.alloc_buffer(need);
        }
        let Some(scratch) = *slot else { crate::ggml_abort!("failed to allocate {} bytes of scratch", need) };
        tmp.get_mut().buffer = scratch.as_ptr().cast();
        tmp.get_mut().data = scratch.base();
        tensor_copy_async(Some(devices[from].backend), Some(devices[to].backend), src, tmp);

        let red = aux.node(&dst);
        let r = red.get_mut();
        r.view_src = if dst.view_src.is_null() { dst.as_ptr() } else { dst.view_src };
        r.view_offs = dst.view_offs;
        r.op = Op::ADD;
        r.src[0] = dst.as_ptr();
        r.src[1] = tmp.as_ptr();
        r.flags |= flag::COMPUTE;
        let status = bufops::view_init(red);
        crate::ggml_assert!(status == Status::SUCCESS, "failed to set up a reduction");
        aux.graph(red)
    };

    // The largest power of two not above n/2: devices past twice that fold in first.
    let mut offset = n / 2;
    while offset & (offset.wrapping_sub(1)) != 0 {
        offset -= 1;
    }
    let half = offset;
    let mut step = 0;
    for from in 2 * half..n {
        let to = from - 2 * half;
        let g = push(devices, from, to, step);
        let status = devices[to].backend.graph_compute_async(g.get_mut());
        if status != Status::SUCCESS {
            return status;
        }
        step = 1;
    }

    // Butterfly: at each step every device exchanges sums with the one `offset` away.
    while offset >= 1 {
        let mut graphs: Vec<Option<GraphPtr>> = vec![None; n];
        for j in 0..2 * half {
            let other = j ^ offset;
            if other >= n {
                continue;
            }
            graphs[other] = Some(push(devices, j, other, step));
        }
        for (j, g) in graphs.iter().enumerate().take(2 * half) {
            if let Some(g) = g {
                let status = devices[j].backend.graph_compute_async(g.get_mut());
                if status != Status::SUCCESS {
                    return status;
                }
            }
        }
        step += 1;
        offset /= 2;
    }
    debug_assert_eq!(step, devices[0].scratch.len(), "one scratch buffer per reduction step");

    // The folded-in devices get the result back.
    for to in 2 * half..n {
        let from = to - 2 * half;
        let (src, dst) = (last_node(&devices[from], k), last_node(&devices[to], k));
        tensor_copy_async(Some(devices[from].backend), Some(devices[to].backend), src, dst);
    }
    Status::SUCCESS
}
