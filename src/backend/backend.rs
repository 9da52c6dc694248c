//! Backends (streams) and events: what a backend handle asks of its object (`adapter` gives
//! the Rust object or the C struct behind it), with ggml's fallbacks where a backend answers
//! that it has no such operation (asynchronous data access becomes a synchronize followed by
//! the blocking buffer operation).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

use super::buffer::{self, BufferPtr, BufferTypePtr};
use super::device::DevicePtr;
pub use super::handle::{BackendPtr, EventPtr};
use super::interface::{Buffer, GraphOptimizeParams};
use super::tallocr;
use super::traits::{Copy2d, CopySource};
use crate::core::context::{Context, InitParams, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::graph::cgraph::{new_graph_custom, overhead_custom};
use crate::core::graph::hash::table_size;
use crate::core::graph::{Graph, GraphPtr};
use crate::core::status::Status;
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr};

impl BackendPtr {
    pub fn name(self) -> *const c_char {
        self.object().get_name().as_ptr()
    }

    pub fn name_lossy(self) -> String {
        self.object().get_name().to_string_lossy().into_owned()
    }

    /// Releases the backend; the handle and its copies are dangling afterwards.
    pub fn free(self) {
        let Some(f) = self.raw().iface.free else { crate::ggml_abort!("backend interface has no free function") };
        // SAFETY: the backend's own entry, called with it, once.
        unsafe { f(self.as_ptr()) }
    }

    /// The device the backend runs on.
    #[track_caller]
    pub fn device(self) -> DevicePtr {
        // SAFETY: devices outlive the backends started on them.
        match unsafe { DevicePtr::from_raw(self.device_ptr()) } {
            Some(d) => d,
            None => crate::ggml_abort!("backend has no device"),
        }
    }

    pub fn default_buffer_type(self) -> BufferTypePtr {
        self.device().buffer_type()
    }

    pub fn alloc_buffer(self, size: usize) -> Option<BufferPtr> {
        self.default_buffer_type().alloc_buffer(size)
    }

    pub fn alignment(self) -> usize {
        self.default_buffer_type().alignment()
    }

    pub fn max_size(self) -> usize {
        self.default_buffer_type().max_size()
    }

    /// Waits for every queued operation; nothing to do for synchronous backends.
    pub fn synchronize(self) {
        self.object().synchronize();
    }

    /// Queues a write of `data` into `tensor` at `offset`; blocking when the backend has no
    /// asynchronous path.
    pub fn tensor_set_async(self, tensor: TensorPtr, data: &[u8], offset: usize) {
        check_allocated_range(tensor, offset.checked_add(data.len()), "write");
        let backend = self.object();
        // `data` stays valid until the caller synchronizes (ggml's contract for async writes).
        if !backend.set_tensor_async(tensor, data, offset) {
            backend.synchronize();
            buffer::tensor_set(tensor, data, offset);
        }
    }

    /// Queues a read of `tensor` at `offset` into `data`; blocking without an async path.
    pub fn tensor_get_async(self, tensor: TensorPtr, data: &mut [u8], offset: usize) {
        check_allocated_range(tensor, offset.checked_add(data.len()), "read");
        let backend = self.object();
        if !backend.get_tensor_async(tensor, data, offset) {
            backend.synchronize();
            buffer::tensor_get(tensor, data, offset);
        }
    }

    /// The 2-D form of [`BackendPtr::tensor_set_async`]: one async write per run unless the
    /// backend has a 2-D write.
    pub fn tensor_set_2d_async(self, tensor: TensorPtr, data: &[u8], c: Copy2d) {
        crate::ggml_assert!(!tensor.data.is_null(), "tensor not allocated");
        crate::ggml_assert!(data.len() >= data_span(&c), "2-D write source is too short");
        if c.n_copies > 1 && c.size > 0 {
            check_allocated_range(tensor, c.tensor_end(), "write");
            if self.object().set_tensor_2d_async(tensor, data, c) {
                return;
            }
        }
        for (at_data, at_tensor) in c.runs() {
            self.tensor_set_async(tensor, &data[at_data..][..c.size], at_tensor);
        }
    }

    /// The 2-D form of [`BackendPtr::tensor_get_async`].
    pub fn tensor_get_2d_async(self, tensor: TensorPtr, data: &mut [u8], c: Copy2d) {
        crate::ggml_assert!(!tensor.data.is_null(), "tensor not allocated");
        crate::ggml_assert!(data.len() >= data_span(&c), "2-D read destination is too short");
        if c.n_copies > 1 && c.size > 0 {
            check_allocated_range(tensor, c.tensor_end(), "read");
            if self.object().get_tensor_2d_async(tensor, data, c) {
                return;
            }
        }
        for (at_data, at_tensor) in c.runs() {
            self.tensor_get_async(tensor, &mut data[at_data..][..c.size], at_tensor);
        }
    }

    /// Starts computing `graph` (asynchronously where the backend can).
    pub fn graph_compute_async(self, graph: &mut Graph) -> Status {
        self.object().graph_compute(graph)
    }

    /// Computes `graph` and waits for the result.
    pub fn graph_compute(self, graph: &mut Graph) -> Status {
        let status = self.graph_compute_async(graph);
        self.synchronize();
        status
    }

    /// Lets the backend reorder `graph` for itself (a no-op for backends without the entry).
    pub fn graph_optimize(self, graph: &mut Graph, params: &mut GraphOptimizeParams) {
        self.object().graph_optimize(graph, params);
    }

    /// The backend's own asynchronous copy of `src` (on `from`) into `dst` (on this backend),
    /// without the blocking fallback of `ggml_backend_tensor_copy_async`: false when it has no
    /// such copy or declines.
    pub fn cpy_tensor_async(self, from: Option<BackendPtr>, src: TensorPtr, dst: TensorPtr) -> bool {
        let from = match from {
            Some(b) if b == self => CopySource::This,
            Some(b) => CopySource::Other(b),
            None => CopySource::Unknown,
        };
        self.object().cpy_tensor_async(from, src, dst)
    }

    pub fn supports_op(self, op: TensorPtr) -> bool {
        self.device().supports_op(op)
    }

    pub fn supports_buft(self, buft: BufferTypePtr) -> bool {
        self.device().supports_buft(buft)
    }

    pub fn offload_op(self, op: TensorPtr) -> bool {
        self.device().offload_op(op)
    }

    /// Records `event` on this backend's stream.
    pub fn event_record(self, event: EventPtr) {
        self.object().event_record(event);
    }

    /// Makes this backend's stream wait for `event`.
    pub fn event_wait(self, event: EventPtr) {
        self.object().event_wait(event);
    }
}

fn data_span(c: &Copy2d) -> usize {
    match c.host_span() {
        Some(n) => n,
        None => crate::ggml_abort!("2-D copy of {} rows overflows the address space", c.n_copies),
    }
}

#[track_caller]
fn check_allocated_range(tensor: TensorPtr, end: Option<usize>, what: &str) {
    crate::ggml_assert!(!tensor.data.is_null(), "tensor not allocated");
    crate::ggml_assert!(end.is_some_and(|e| e <= tensor.nbytes()), "tensor {what} out of bounds");
}

fn same_layout(a: &Tensor, b: &Tensor) -> bool {
    a.type_ == b.type_ && a.ne == b.ne && a.nb == b.nb
}

/// `ggml_backend_tensor_copy_async`: copies `src` into `dst` once `src_backend`'s queued work
/// is done, asynchronously if `dst_backend` can; otherwise both backends are synchronized and
/// the copy is a blocking one.
/// A backend is only required where it is used: none for a copy onto itself, the source one
/// only for the blocking fallback.
pub fn tensor_copy_async(
    src_backend: Option<BackendPtr>,
    dst_backend: Option<BackendPtr>,
    src: TensorPtr,
    dst: TensorPtr,
) {
    crate::ggml_assert!(same_layout(&src, &dst), "cannot copy tensors with different layouts");
    if src == dst {
        return;
    }
    let Some(dst_backend) = dst_backend else { crate::ggml_abort!("GGML_ASSERT(backend_dst) failed") };
    if dst_backend.cpy_tensor_async(src_backend, src, dst) {
        return;
    }
    let Some(src_backend) = src_backend else { crate::ggml_abort!("GGML_ASSERT(backend) failed") };
    src_backend.synchronize();
    dst_backend.synchronize();
    buffer::tensor_copy(src, dst);
}

// ---------------------------------------------------------------------------------------------
// Events

impl EventPtr {
    #[track_caller]
    pub fn device(self) -> DevicePtr {
        // SAFETY: an event's device outlives it.
        match unsafe { DevicePtr::from_raw(self.device_ptr()) } {
            Some(d) => d,
            None => crate::ggml_abort!("event has no device"),
        }
    }

    /// Releases the event through the device that made it; the handle is dangling afterwards.
    pub fn free(self) {
        let device = self.device();
        let Some(f) = device.raw().iface.event_free else {
            crate::ggml_abort!("device interface has no event_free function")
        };
        // SAFETY: the device's own entry, called with it and an event it made, once.
        unsafe { f(device.as_ptr(), self.as_ptr()) }
    }

    /// Blocks until every operation recorded before the event has completed.
    pub fn synchronize(self) {
        self.object().synchronize();
    }
}

/// `ggml_backend_event_new`: none for a missing device or one without events.
pub fn event_new(device: Option<DevicePtr>) -> Option<EventPtr> {
    device.and_then(DevicePtr::event_new)
}

// ---------------------------------------------------------------------------------------------
// Graph copies and backend comparison

/// `struct ggml_backend_graph_copy`: a graph duplicated onto another backend. `ctx_allocated`
/// holds the tensors that own memory (in `buffer`) and the copied graph, `ctx_unallocated`
/// the views into them. All fields are NULL when the copy failed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GraphCopy {
    pub buffer: *mut Buffer,
    pub ctx_allocated: *mut Context,
    pub ctx_unallocated: *mut Context,
    pub graph: *mut Graph,
}

impl GraphCopy {
    const FAILED: GraphCopy = GraphCopy {
        buffer: std::ptr::null_mut(),
        ctx_allocated: std::ptr::null_mut(),
        ctx_unallocated: std::ptr::null_mut(),
        graph: std::ptr::null_mut(),
    };

    /// Releases the buffer and both contexts (each may be NULL).
    pub fn free(self) {
        // SAFETY: a copy's buffer comes from the allocator and is freed once, here.
        if let Some(buffer) = unsafe { BufferPtr::from_raw(self.buffer) } {
            buffer.free();
        }
        for ctx in [self.ctx_allocated, self.ctx_unallocated] {
            if !ctx.is_null() {
                // SAFETY: the contexts were leaked from Boxes by `graph_copy` and are freed once.
                drop(unsafe { Box::from_raw(ctx) });
            }
        }
    }
}

/// Duplicates tensors of a graph (with their views and sources) into two contexts.
struct Duplicator<'a> {
    allocated: &'a mut Context,
    unallocated: &'a mut Context,
    copies: HashMap<*mut Tensor, TensorPtr>,
    initialized: std::collections::HashSet<*mut Tensor>,
}

impl Duplicator<'_> {
    /// The copy of `src`, made (with everything it refers to) if not made yet: same type,
    /// shape, strides, op, flags, op_params and name; views stay views of the copies.
    fn dup(&mut self, src: TensorPtr) -> TensorPtr {
        crate::ggml_assert!(!src.data.is_null(), "graph must be allocated (tensor '{}' is not)", src.name());
        if let Some(&copy) = self.copies.get(&src.as_ptr()) {
            return copy;
        }
        let ctx = if src.view_src.is_null() { &mut *self.allocated } else { &mut *self.unallocated };
        let dst = ctx.dup_tensor(src);
        dst.get_mut().nb = src.nb;
        // Known before its sources are copied: ggml_cast's result names itself as src[1],
        // and the copy keeps that self-reference.
        self.copies.insert(src.as_ptr(), dst);
        if let Some(view_src) = src.view_source() {
            let base = self.dup(view_src);
            let d = dst.get_mut();
            d.view_src = base.as_ptr();
            d.view_offs = src.view_offs;
        }
        {
            let d = dst.get_mut();
            d.op = src.op;
            d.flags = src.flags;
            d.op_params = src.op_params;
            d.set_name_bytes(src.name_bytes());
        }
        for i in 0..MAX_SRC {
            if let Some(s) = src.src(i) {
                let s_copy = self.dup(s);
                dst.get_mut().src[i] = s_copy.as_ptr();
            }
        }
        dst
    }

    /// Gives the copy of `src` its data: views are pointed into their (initialized) base,
    /// other tensors get `src`'s bytes; then the same for its sources.
    fn init(&mut self, src: TensorPtr) {
        if !self.initialized.insert(src.as_ptr()) {
            return;
        }
        let dst = self.copies[&src.as_ptr()];
        if dst.view_src.is_null() {
            buffer::tensor_copy(src, dst);
        } else {
            let Some(view_src) = src.view_source() else {
                crate::ggml_abort!("copy of '{}' is a view but the tensor is not", src.name())
            };
            self.init(view_src);
            let status = buffer::view_init(dst);
            crate::ggml_assert!(status == Status::SUCCESS, "failed to initialize view '{}'", dst.name());
        }
        for i in 0..MAX_SRC {
            if let Some(s) = src.src(i) {
                self.init(s);
            }
        }
    }
}

/// `ggml_backend_graph_copy`: a copy of the (allocated) `graph` whose tensors live in a new
/// buffer of `backend`'s default type, with the data of every node and source copied over.
pub fn graph_copy(backend: BackendPtr, graph: &Graph) -> GraphCopy {
    let hash_size = table_size(graph.visited_hash_set.size);
    let params = InitParams {
        mem_size: (OBJECT_SIZE + TENSOR_SIZE) * hash_size + overhead_custom(count(graph.size), false),
        mem_buffer: std::ptr::null_mut(),
        no_alloc: true,
    };
    let mut allocated = Context::new(params);
    let mut unallocated = Context::new(params);

    let mut dup = Duplicator {
        allocated: &mut allocated,
        unallocated: &mut unallocated,
        copies: HashMap::new(),
        initialized: Default::default(),
    };
    for node in graph.nodes() {
        dup.dup(node);
    }

    let Some(buffer) = tallocr::alloc_ctx_tensors(dup.allocated, backend.default_buffer_type()) else {
        crate::log_error!("ggml_backend_graph_copy: failed to allocate buffer for graph copy\n");
        return GraphCopy::FAILED;
    };

    for node in graph.nodes() {
        dup.init(node);
    }

    let copy = new_graph_custom(dup.allocated, count(graph.size), false);
    for node in graph.nodes() {
        copy.get_mut().add_node(dup.copies[&node.as_ptr()]);
    }

    GraphCopy {
        buffer: buffer.as_ptr(),
        ctx_allocated: Box::into_raw(allocated),
        ctx_unallocated: Box::into_raw(unallocated),
        graph: copy.as_ptr(),
    }
}

fn count(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// `ggml_backend_eval_callback`: sees node `node_index` as computed by both backends; false
/// stops the comparison.
pub type EvalCallback =
    Option<unsafe extern "C" fn(node_index: c_int, t1: *mut Tensor, t2: *mut Tensor, user_data: *mut c_void) -> bool>;

/// `ggml_backend_compare_graph_backend`: computes `graph` on `backend1` and a copy of it on
/// `backend2`, and shows `callback` each pair of results. With `test_nodes`, both graphs are
/// computed whole and only those nodes are shown; otherwise the graphs are computed one node
/// at a time and every node that is not a view is shown, until the callback returns false.
/// False when the copy could not be made.
///
/// # Safety
/// `callback` must be safe to call with graph nodes and `user_data`.
pub unsafe fn compare_graph_backend(
    backend1: BackendPtr,
    backend2: BackendPtr,
    graph: GraphPtr,
    callback: EvalCallback,
    user_data: *mut c_void,
    test_nodes: &[*const Tensor],
) -> bool {
    let copy = graph_copy(backend2, &graph);
    if copy.buffer.is_null() {
        return false;
    }
    let g1 = graph;
    // SAFETY: a successful copy has a graph in its own context, alive until `copy.free()`.
    let g2 = unsafe { GraphPtr::new(NonNull::new_unchecked(copy.graph)) };
    crate::ggml_assert!(g1.n_nodes == g2.n_nodes, "graph copy has {} nodes, not {}", g2.n_nodes, g1.n_nodes);
    let Some(callback) = callback else { crate::ggml_abort!("compare_graph_backend needs a callback") };

    if !test_nodes.is_empty() {
        backend1.graph_compute(g1.get_mut());
        backend2.graph_compute(g2.get_mut());
        let mut verified = false;
        for i in 0..g1.node_slots().len() {
            let (t1, t2) = (g1.node(i), g2.node(i));
            for &wanted in test_nodes {
                if std::ptr::eq(t1.as_ptr(), wanted) {
                    // SAFETY: the caller vouches for the callback and its data; both tensors are live.
                    unsafe { callback(i as c_int, t1.as_ptr(), t2.as_ptr(), user_data) };
                    verified = true;
                }
            }
        }
        crate::ggml_assert!(verified, "none of the test nodes is in the graph");
    } else {
        for i in 0..g1.node_slots().len() {
            let (t1, t2) = (g1.node(i), g2.node(i));
            crate::ggml_assert!(
                t1.op == t2.op && same_layout(&t1, &t2),
                "node {} of the graph copy differs from the original",
                i
            );
            let mut g1v = g1.view(i as i32, i as i32 + 1);
            let mut g2v = g2.view(i as i32, i as i32 + 1);
            backend1.graph_compute(&mut g1v);
            backend2.graph_compute(&mut g2v);
            if t1.op.is_view() {
                continue;
            }
            // SAFETY: as above.
            if !unsafe { callback(i as c_int, t1.as_ptr(), t2.as_ptr(), user_data) } {
                break;
            }
        }
    }
    copy.free();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host_buffer::cpu_buffer_type;
    use crate::backend::interface::DevType;
    use crate::backend::test_backend::{DeviceSpec, counters, n, new_reg};
    use crate::core::graph::cgraph::new_graph;
    use crate::core::ops::elementwise::{add, mul};
    use crate::core::ops::shape::view_1d;
    use crate::core::types::Type;
    use crate::registry;
    use std::ffi::CStr;

    fn spec(name: &'static str, async_: bool, events: bool) -> DeviceSpec {
        DeviceSpec { name, dev_type: DevType::ACCEL, async_, events }
    }

    /// A backend on a fresh test device named `name`.
    fn test_backend(name: &'static str, async_: bool, events: bool, params: &CStr) -> BackendPtr {
        let reg = new_reg(&format!("{name}-reg"), &[spec(name, async_, events)]);
        registry::register_backend(reg, None);
        let dev = registry::dev_by_name(name.as_bytes()).expect("registered device");
        dev.init_backend(Some(params)).expect("backend")
    }

    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    fn floats(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    fn read(t: TensorPtr) -> Vec<f32> {
        let mut out = vec![0u8; t.nbytes()];
        buffer::tensor_get(t, &mut out, 0);
        floats(&out)
    }

    struct Fixture {
        _ctx: Box<Context>,
        buffer: BufferPtr,
        a: TensorPtr,
        b: TensorPtr,
        sum: TensorPtr,
        prod: TensorPtr,
        graph: GraphPtr,
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            self.buffer.free();
        }
    }

    /// a, b = [1 2 3 4], [10 20 30 40]; sum = a + b; prod = sum * a; all in a CPU buffer.
    fn fixture() -> Fixture {
        let mut ctx = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let a = ctx.new_tensor(Type::F32, &[4]);
        let b = ctx.new_tensor(Type::F32, &[4]);
        let sum = add(&mut ctx, a, b);
        let prod = mul(&mut ctx, sum, a);
        let graph = new_graph(&mut ctx);
        graph.get_mut().build_forward_expand(prod);
        let buffer = tallocr::alloc_ctx_tensors(&ctx, cpu_buffer_type()).expect("buffer");
        buffer::tensor_set(a, &bytes(&[1.0, 2.0, 3.0, 4.0]), 0);
        buffer::tensor_set(b, &bytes(&[10.0, 20.0, 30.0, 40.0]), 0);
        Fixture { _ctx: ctx, buffer, a, b, sum, prod, graph }
    }

    #[test]
    fn backend_queries_go_through_the_device() {
        let be = test_backend("TestQueries", false, false, c"");
        assert_eq!(crate::backend::device::lossy(be.name()), "TestQueries");
        assert_eq!(be.device().name_lossy(), "TestQueries");
        assert!(!be.guid().is_null());
        assert_eq!(be.default_buffer_type(), cpu_buffer_type());
        assert_eq!(be.alignment(), 32);
        assert_eq!(be.max_size(), usize::MAX);
        assert!(be.supports_buft(cpu_buffer_type()));
        let f = fixture();
        assert!(be.supports_op(f.sum));
        assert!(!be.offload_op(f.sum));
        let buf = be.alloc_buffer(100).expect("buffer");
        assert_eq!(buf.size(), 100);
        buf.free();
        be.free();
    }

    #[test]
    fn async_access_falls_back_to_synchronize_and_blocking_calls() {
        let be = test_backend("TestSyncOnly", false, false, c"");
        let f = fixture();
        be.tensor_set_async(f.sum, &bytes(&[5.0, 6.0]), 4);
        assert_eq!(n(&counters(be).syncs), 1);
        assert_eq!(read(f.sum)[1..3], [5.0, 6.0]);
        let mut out = vec![0u8; 8];
        be.tensor_get_async(f.sum, &mut out, 4);
        assert_eq!(n(&counters(be).syncs), 2);
        assert_eq!(floats(&out), [5.0, 6.0]);

        // Two runs without a 2-D entry: one async write (here: sync + set) per run.
        let c = Copy2d { offset: 0, size: 4, n_copies: 2, stride_tensor: 8, stride_data: 4 };
        be.tensor_set_2d_async(f.b, &bytes(&[7.0, 8.0]), c);
        assert_eq!(n(&counters(be).syncs), 4);
        assert_eq!(read(f.b), [7.0, 20.0, 8.0, 40.0]);
        let mut out = vec![0u8; 8];
        be.tensor_get_2d_async(f.b, &mut out, c);
        assert_eq!(floats(&out), [7.0, 8.0]);
        assert_eq!(n(&counters(be).async_sets), 0);
        be.free();
    }

    #[test]
    fn async_access_uses_the_backend_entries_when_present() {
        let be = test_backend("TestAsync", true, false, c"");
        let f = fixture();
        be.tensor_set_async(f.a, &bytes(&[9.0]), 0);
        let mut out = vec![0u8; 4];
        be.tensor_get_async(f.a, &mut out, 0);
        assert_eq!(floats(&out), [9.0]);
        let c = Copy2d { offset: 4, size: 4, n_copies: 3, stride_tensor: 4, stride_data: 4 };
        be.tensor_set_2d_async(f.a, &bytes(&[1.5, 2.5, 3.5]), c);
        assert_eq!(read(f.a), [9.0, 1.5, 2.5, 3.5]);
        assert_eq!(n(&counters(be).async_sets), 4);
        assert_eq!(n(&counters(be).async_gets), 1);
        assert_eq!(n(&counters(be).syncs), 0);
        be.free();
    }

    #[test]
    fn copy_async_prefers_the_destination_backend() {
        let async_be = test_backend("TestCopyAsync", true, false, c"");
        let sync_be = test_backend("TestCopySync", false, false, c"");
        let f = fixture();

        tensor_copy_async(Some(sync_be), Some(async_be), f.a, f.sum);
        assert_eq!(n(&counters(async_be).async_copies), 1);
        assert_eq!(read(f.sum), [1.0, 2.0, 3.0, 4.0]);

        tensor_copy_async(Some(async_be), Some(sync_be), f.b, f.prod);
        assert_eq!(n(&counters(sync_be).syncs), 1);
        assert_eq!(n(&counters(async_be).syncs), 1);
        assert_eq!(read(f.prod), [10.0, 20.0, 30.0, 40.0]);

        // A copy onto itself needs no backend at all.
        tensor_copy_async(None, None, f.a, f.a);
        async_be.free();
        sync_be.free();
    }

    #[test]
    fn events_dispatch_to_device_and_backend() {
        let be = test_backend("TestEvents", false, true, c"");
        let handle = event_new(Some(be.device())).expect("event");
        be.event_record(handle);
        handle.synchronize();
        be.event_wait(handle);
        assert_eq!(n(&counters(be).records), 1);
        assert_eq!(n(&counters(be).waits), 1);
        handle.free();

        let plain = test_backend("TestNoEvents", false, false, c"");
        assert!(event_new(Some(plain.device())).is_none());
        assert!(event_new(None).is_none());
        be.free();
        plain.free();
    }

    #[test]
    fn graph_compute_dispatches_and_synchronizes() {
        let be = test_backend("TestCompute", false, false, c"");
        let f = fixture();
        assert_eq!(be.graph_compute(f.graph.get_mut()), Status::SUCCESS);
        assert_eq!(n(&counters(be).computes), 1);
        assert_eq!(n(&counters(be).syncs), 1);
        assert_eq!(read(f.sum), [11.0, 22.0, 33.0, 44.0]);
        assert_eq!(read(f.prod), [11.0, 44.0, 99.0, 176.0]);

        assert_eq!(be.graph_compute_async(f.graph.get_mut()), Status::SUCCESS);
        assert_eq!(n(&counters(be).syncs), 1);

        let plan = be.graph_plan_create(&f.graph);
        // SAFETY: the plan was just made by this backend, for a graph that outlives it.
        unsafe {
            be.graph_plan_update(plan, &f.graph);
            assert_eq!(be.graph_plan_compute(plan), Status::SUCCESS);
            be.graph_plan_free(plan);
        }
        assert_eq!(n(&counters(be).plan_computes), 1);

        let mut params = GraphOptimizeParams { add_alloc_dep: None, user_data: std::ptr::null_mut() };
        be.graph_optimize(f.graph.get_mut(), &mut params);
        assert_eq!(n(&counters(be).optimizes), 1);
        be.free();
    }

    #[test]
    fn graph_copy_duplicates_data_onto_the_backend() {
        let be = test_backend("TestGraphCopy", false, false, c"");
        let f = fixture();
        let copy = graph_copy(be, &f.graph);
        assert!(!copy.buffer.is_null() && !copy.graph.is_null());
        // SAFETY: a successful copy's graph lives until copy.free().
        let g = unsafe { GraphPtr::new(NonNull::new_unchecked(copy.graph)) };
        assert_eq!(g.n_nodes, f.graph.n_nodes);
        for (orig, dup) in f.graph.nodes().zip(g.nodes()) {
            assert_ne!(orig, dup);
            assert_eq!(orig.op, dup.op);
            assert!(same_layout(&orig, &dup));
            assert_eq!(orig.name_bytes(), dup.name_bytes());
        }
        let sum_copy = g.node(0);
        let a_copy = sum_copy.src(0).expect("src");
        assert_eq!(read(a_copy), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(a_copy.buffer, copy.buffer.cast());
        copy.free();
        be.free();
    }

    #[test]
    fn graph_copy_keeps_the_self_reference_of_a_cast() {
        let be = test_backend("TestGraphCopyCast", false, false, c"");
        let mut ctx = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let a = ctx.new_tensor(Type::F32, &[4]);
        let cast = crate::core::ops::shape::cast(&mut ctx, a, Type::F16);
        assert_eq!(cast.src[1], cast.as_ptr());
        let graph = new_graph(&mut ctx);
        graph.get_mut().build_forward_expand(cast);
        let buffer = tallocr::alloc_ctx_tensors(&ctx, cpu_buffer_type()).expect("buffer");
        let copy = graph_copy(be, &graph);
        // SAFETY: a successful copy's graph lives until copy.free().
        let g = unsafe { GraphPtr::new(NonNull::new_unchecked(copy.graph)) };
        let cast_copy = g.node(0);
        assert_ne!(cast_copy, cast);
        assert_eq!(cast_copy.src[1], cast_copy.as_ptr());
        copy.free();
        buffer.free();
        be.free();
    }

    #[test]
    fn graph_copy_keeps_views_as_views_of_the_copies() {
        let be = test_backend("TestGraphCopyViews", false, false, c"");
        let mut ctx = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let a = ctx.new_tensor(Type::F32, &[4]);
        let b = ctx.new_tensor(Type::F32, &[4]);
        let tail = view_1d(&mut ctx, a, 2, 8);
        let head = view_1d(&mut ctx, b, 2, 0);
        let sum = add(&mut ctx, tail, head);
        let graph = new_graph(&mut ctx);
        graph.get_mut().build_forward_expand(sum);
        let buffer = tallocr::alloc_ctx_tensors(&ctx, cpu_buffer_type()).expect("buffer");
        buffer::tensor_set(a, &bytes(&[1.0, 2.0, 3.0, 4.0]), 0);
        buffer::tensor_set(b, &bytes(&[10.0, 20.0, 30.0, 40.0]), 0);

        let copy = graph_copy(be, &graph);
        assert!(!copy.buffer.is_null());
        // SAFETY: a successful copy's graph lives until copy.free().
        let g = unsafe { GraphPtr::new(NonNull::new_unchecked(copy.graph)) };
        let sum_copy = g.node(g.node_slots().len() - 1);
        let tail_copy = sum_copy.src(0).expect("view");
        let a_copy = tail_copy.view_source().expect("view of the copy of a");
        assert_ne!(a_copy, a);
        assert_eq!(tail_copy.view_offs, 8);
        assert_eq!(tail_copy.data, a_copy.data.wrapping_byte_add(8));
        assert_eq!(read(tail_copy), [3.0, 4.0]);
        assert_eq!(read(sum_copy.src(1).expect("view")), [10.0, 20.0]);

        assert_eq!(be.graph_compute(g.get_mut()), Status::SUCCESS);
        assert_eq!(read(sum_copy), [13.0, 24.0]);
        copy.free();
        buffer.free();
        be.free();
    }

    struct Seen {
        nodes: Vec<i32>,
        max_diff: f32,
    }

    unsafe extern "C" fn compare_cb(i: c_int, t1: *mut Tensor, t2: *mut Tensor, user_data: *mut c_void) -> bool {
        // SAFETY: user_data is the test's `Seen`; the tensors are live graph nodes.
        let (seen, t1, t2) = unsafe { (&mut *user_data.cast::<Seen>(), &*t1, &*t2) };
        seen.nodes.push(i);
        // SAFETY: both nodes are contiguous F32 in host memory.
        let (v1, v2) = unsafe {
            (std::slice::from_raw_parts(t1.data.cast::<f32>(), 4), std::slice::from_raw_parts(t2.data.cast::<f32>(), 4))
        };
        for (x, y) in v1.iter().zip(v2) {
            seen.max_diff = seen.max_diff.max((x - y).abs());
        }
        true
    }

    #[test]
    fn compare_graph_backend_runs_both_backends_node_by_node() {
        let be1 = test_backend("TestCompare1", false, false, c"");
        let be2 = test_backend("TestCompare2", false, false, c"");
        let f = fixture();
        let mut seen = Seen { nodes: vec![], max_diff: 0.0 };
        // SAFETY: compare_cb reads the nodes and writes to `seen`, which outlives the call.
        let ok =
            unsafe { compare_graph_backend(be1, be2, f.graph, Some(compare_cb), (&mut seen as *mut Seen).cast(), &[]) };
        assert!(ok);
        assert_eq!(seen.nodes, [0, 1]);
        assert_eq!(seen.max_diff, 0.0);
        assert_eq!(n(&counters(be1).computes), 2);
        assert_eq!(n(&counters(be2).computes), 2);
        be1.free();
        be2.free();
    }

    #[test]
    fn compare_graph_backend_sees_differences_and_test_nodes() {
        let be1 = test_backend("TestCompare3", false, false, c"");
        let be2 = test_backend("TestCompare4", false, false, c"bias=0.5");
        let f = fixture();
        let mut seen = Seen { nodes: vec![], max_diff: 0.0 };
        let wanted = [f.prod.as_ptr().cast_const()];
        // SAFETY: as in the node-by-node test.
        let ok = unsafe {
            compare_graph_backend(be1, be2, f.graph, Some(compare_cb), (&mut seen as *mut Seen).cast(), &wanted)
        };
        assert!(ok);
        assert_eq!(seen.nodes, [1]);
        // be2: (a + b + 0.5) * a + 0.5 against (a + b) * a: differs by 0.5 * a + 0.5, at most 2.5.
        assert_eq!(seen.max_diff, 2.5);
        assert_eq!(n(&counters(be1).computes), 1);
        assert_eq!(n(&counters(be2).computes), 1);
        be1.free();
        be2.free();
    }
}
