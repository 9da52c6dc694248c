//! Scheduler tests over test backends defined through the C tables: an accelerator-like
//! device with its own (non-host) buffer type, CPU-like devices on the CPU buffer type, each
//! with its own set of supported ops. Their `graph_compute` evaluates a few f32 ops on the
//! tensors' memory (all of it host memory in truth), logs the nodes it was given and checks
//! that the scheduler only handed it ops it supports reading memory it can read.

use std::alloc::Layout;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::{CString, c_char, c_void};

use super::*;
use crate::backend::buffer::{BufferPtr, tensor_get, tensor_set};
use crate::backend::host_buffer::cpu_buffer_type;
use crate::backend::interface::{
    Backend, BackendInterface, Buffer, BufferInterface, BufferType, BufferTypeInterface, BufferUsage, DevType, Device,
    DeviceInterface, Event, GraphOptimizeParams,
};
use crate::backend::tallocr::alloc_ctx_tensors;
use crate::core::context::{Context, InitParams};
use crate::core::graph::GraphPtr;
use crate::core::graph::cgraph::new_graph_custom;
use crate::core::op::Op;
use crate::core::ops;
use crate::core::status::Status;
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr, flag};
use crate::core::types::Type;

// ---------------------------------------------------------------------------------------------
// Test devices

struct TestDevice {
    name: CString,
    dev_type: DevType,
    ops: Vec<Op>,
    offload: RefCell<Vec<Op>>,
    /// Buffer types this device can read besides its own.
    also_reads: Vec<BufferTypePtr>,
    /// Whether the device makes events (for pipeline parallelism).
    events: Cell<bool>,
    own_buft: Option<UnsafeCell<BufferType>>,
    buft_name: CString,
    device: UnsafeCell<Device>,
    backend: UnsafeCell<Backend>,
    /// Node names of each graph_compute call.
    log: RefCell<Vec<Vec<String>>>,
    /// Broken promises: ops or memory given to this device that it cannot handle.
    violations: RefCell<Vec<String>>,
    buffers_allocated: Cell<usize>,
    /// (tensor, until): an allocation dependency graph_optimize asks for, by names.
    keep_alive: RefCell<Option<(String, String)>>,
    events_alive: Cell<i64>,
    events_recorded: Cell<usize>,
    events_waited: Cell<usize>,
}

fn test_device(ptr: *mut c_void) -> &'static TestDevice {
    // SAFETY: every context pointer of the test tables is a leaked TestDevice.
    unsafe { &*ptr.cast::<TestDevice>() }
}

fn dev_of(dev: *mut Device) -> &'static TestDevice {
    // SAFETY: test devices are live for the whole test process.
    test_device(unsafe { (*dev).context })
}

impl TestDevice {
    /// A device named `name` supporting `ops` (views and NONE always); `own_buffers` gives it
    /// a non-host buffer type of its own, else it uses the CPU buffer type.
    fn new(name: &str, dev_type: DevType, ops: &[Op], own_buffers: bool) -> &'static TestDevice {
        let dev: &'static mut TestDevice = Box::leak(Box::new(TestDevice {
            name: CString::new(name).unwrap(),
            dev_type,
            ops: ops.to_vec(),
            offload: RefCell::new(Vec::new()),
            also_reads: Vec::new(),
            events: Cell::new(false),
            own_buft: None,
            buft_name: CString::new(format!("{name}_buf")).unwrap(),
            device: UnsafeCell::new(Device {
                iface: DeviceInterface {
                    get_name: Some(t_dev_name),
                    get_description: Some(t_dev_name),
                    get_memory: None,
                    get_type: Some(t_dev_type),
                    get_props: None,
                    init_backend: None,
                    get_buffer_type: Some(t_dev_buffer_type),
                    get_host_buffer_type: None,
                    buffer_from_host_ptr: None,
                    supports_op: Some(t_supports_op),
                    supports_buft: Some(t_supports_buft),
                    offload_op: Some(t_offload_op),
                    event_new: Some(t_event_new),
                    event_free: Some(t_event_free),
                    event_synchronize: Some(t_event_synchronize),
                },
                reg: std::ptr::null_mut(),
                context: std::ptr::null_mut(),
            }),
            backend: UnsafeCell::new(Backend {
                guid: std::ptr::null_mut(),
                iface: BackendInterface {
                    get_name: Some(t_backend_name),
                    free: None,
                    set_tensor_async: None,
                    get_tensor_async: None,
                    set_tensor_2d_async: None,
                    get_tensor_2d_async: None,
                    cpy_tensor_async: None,
                    synchronize: None,
                    graph_plan_create: None,
                    graph_plan_free: None,
                    graph_plan_update: None,
                    graph_plan_compute: None,
                    graph_compute: Some(t_graph_compute),
                    event_record: Some(t_event_record),
                    event_wait: Some(t_event_wait),
                    graph_optimize: Some(t_graph_optimize),
                },
                device: std::ptr::null_mut(),
                context: std::ptr::null_mut(),
            }),
            log: RefCell::new(Vec::new()),
            violations: RefCell::new(Vec::new()),
            buffers_allocated: Cell::new(0),
            keep_alive: RefCell::new(None),
            events_alive: Cell::new(0),
            events_recorded: Cell::new(0),
            events_waited: Cell::new(0),
        }));
        if own_buffers {
            dev.own_buft = Some(UnsafeCell::new(BufferType {
                iface: BufferTypeInterface {
                    get_name: Some(t_buft_name),
                    alloc_buffer: Some(t_buft_alloc),
                    get_alignment: Some(t_buft_alignment),
                    get_max_size: None,
                    get_alloc_size: None,
                    is_host: None,
                },
                device: std::ptr::null_mut(),
                context: std::ptr::null_mut(),
            }));
        }
        let this: *mut TestDevice = dev;
        let dev_ptr = dev.device.get();
        dev.device.get_mut().context = this.cast();
        dev.backend.get_mut().device = dev_ptr;
        dev.backend.get_mut().context = this.cast();
        if let Some(b) = dev.own_buft.as_mut() {
            b.get_mut().device = dev_ptr;
            b.get_mut().context = this.cast();
        }
        dev
    }

    fn backend(&self) -> BackendPtr {
        // SAFETY: the backend is embedded in a leaked TestDevice.
        unsafe { BackendPtr::from_raw(self.backend.get()) }.unwrap()
    }

    fn buft(&self) -> BufferTypePtr {
        match &self.own_buft {
            // SAFETY: as in `backend`.
            Some(b) => unsafe { BufferTypePtr::from_raw(b.get()) }.unwrap(),
            None => cpu_buffer_type(),
        }
    }

    fn supports(&self, op: Op) -> bool {
        op.is_empty() || self.ops.contains(&op)
    }

    fn reads(&self, buft: BufferTypePtr) -> bool {
        buft == self.buft() || self.also_reads.contains(&buft)
    }

    fn calls(&self) -> Vec<Vec<String>> {
        self.log.borrow().clone()
    }
}

unsafe extern "C" fn t_dev_name(dev: *mut Device) -> *const c_char {
    dev_of(dev).name.as_ptr()
}
unsafe extern "C" fn t_dev_type(dev: *mut Device) -> DevType {
    dev_of(dev).dev_type
}
unsafe extern "C" fn t_dev_buffer_type(dev: *mut Device) -> *mut BufferType {
    dev_of(dev).buft().as_ptr()
}
unsafe extern "C" fn t_supports_op(dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: the scheduler passes live tensors.
    dev_of(dev).supports(unsafe { (*op).op })
}
unsafe extern "C" fn t_supports_buft(dev: *mut Device, buft: *mut BufferType) -> bool {
    dev_of(dev).reads(BufferTypePtr::from_raw_unchecked(buft))
}
unsafe extern "C" fn t_offload_op(dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: as in t_supports_op.
    dev_of(dev).offload.borrow().contains(&unsafe { (*op).op })
}
unsafe extern "C" fn t_event_new(dev: *mut Device) -> *mut Event {
    let d = dev_of(dev);
    if !d.events.get() {
        return std::ptr::null_mut();
    }
    d.events_alive.set(d.events_alive.get() + 1);
    Box::into_raw(Box::new(Event { device: dev, context: std::ptr::null_mut() }))
}
unsafe extern "C" fn t_event_free(dev: *mut Device, event: *mut Event) {
    let d = dev_of(dev);
    d.events_alive.set(d.events_alive.get() - 1);
    // SAFETY: made by t_event_new.
    drop(unsafe { Box::from_raw(event) });
}
unsafe extern "C" fn t_event_synchronize(_dev: *mut Device, _event: *mut Event) {}
unsafe extern "C" fn t_event_record(backend: *mut Backend, _event: *mut Event) {
    // SAFETY: test backends are live.
    let d = test_device(unsafe { (*backend).context });
    d.events_recorded.set(d.events_recorded.get() + 1);
}
unsafe extern "C" fn t_event_wait(backend: *mut Backend, _event: *mut Event) {
    // SAFETY: as above.
    let d = test_device(unsafe { (*backend).context });
    d.events_waited.set(d.events_waited.get() + 1);
}
unsafe extern "C" fn t_graph_optimize(backend: *mut Backend, graph: *mut Graph, params: *mut GraphOptimizeParams) {
    // SAFETY: live test backend, graph and parameters.
    let (d, g, p) = unsafe { (test_device((*backend).context), &*graph, &*params) };
    let Some((keep, until)) = d.keep_alive.borrow().clone() else { return };
    let find = |name: &str| {
        g.nodes()
            .flat_map(|n| std::iter::once(n).chain((0..MAX_SRC).filter_map(move |j| n.src(j))))
            .find(|t| t.name() == name)
    };
    if let (Some(k), Some(u)) = (find(&keep), find(&until)) {
        // SAFETY: the scheduler's own callback with its user data.
        unsafe { (p.add_alloc_dep.unwrap())(p.user_data, k.as_ptr(), u.as_ptr()) };
    }
}

unsafe extern "C" fn t_backend_name(backend: *mut Backend) -> *const c_char {
    // SAFETY: as above.
    test_device(unsafe { (*backend).context }).name.as_ptr()
}

trait FromRawUnchecked {
    fn from_raw_unchecked(ptr: *mut BufferType) -> Self;
}
impl FromRawUnchecked for BufferTypePtr {
    fn from_raw_unchecked(ptr: *mut BufferType) -> Self {
        // SAFETY: buffer types in these tests are statics or leaked.
        unsafe { BufferTypePtr::from_raw(ptr) }.unwrap()
    }
}

// The device's own buffers: plain host memory that does not say so.

const ALIGN: usize = 64;

unsafe extern "C" fn t_buft_name(buft: *mut BufferType) -> *const c_char {
    // SAFETY: test buffer types are live and their context is their device.
    test_device(unsafe { (*buft).context }).buft_name.as_ptr()
}
unsafe extern "C" fn t_buft_alignment(_buft: *mut BufferType) -> usize {
    32
}
unsafe extern "C" fn t_buft_alloc(buft: *mut BufferType, size: usize) -> *mut Buffer {
    // SAFETY: as in t_buft_name.
    let d = test_device(unsafe { (*buft).context });
    d.buffers_allocated.set(d.buffers_allocated.get() + 1);
    let layout = Layout::from_size_align(size.max(1), ALIGN).unwrap();
    // SAFETY: non-zero size.
    let mem = unsafe { std::alloc::alloc_zeroed(layout) };
    let iface = BufferInterface {
        free_buffer: Some(t_buf_free),
        get_base: Some(t_buf_base),
        init_tensor: None,
        memset_tensor: Some(t_buf_memset),
        set_tensor: Some(t_buf_set),
        get_tensor: Some(t_buf_get),
        set_tensor_2d: None,
        get_tensor_2d: None,
        cpy_tensor: None,
        clear: Some(t_buf_clear),
        reset: None,
    };
    BufferPtr::new(buft, iface, mem.cast(), size).as_ptr()
}
unsafe extern "C" fn t_buf_free(buffer: *mut Buffer) {
    // SAFETY: allocated in t_buft_alloc with this layout.
    unsafe {
        let layout = Layout::from_size_align((*buffer).size.max(1), ALIGN).unwrap();
        std::alloc::dealloc((*buffer).context.cast(), layout);
    }
}
unsafe extern "C" fn t_buf_base(buffer: *mut Buffer) -> *mut c_void {
    // SAFETY: live buffer.
    unsafe { (*buffer).context }
}
unsafe extern "C" fn t_buf_memset(_b: *mut Buffer, t: *mut Tensor, value: u8, offset: usize, size: usize) {
    // SAFETY: the caller checked the range against the tensor.
    unsafe { std::ptr::write_bytes((*t).data.cast::<u8>().add(offset), value, size) }
}
unsafe extern "C" fn t_buf_set(_b: *mut Buffer, t: *mut Tensor, data: *const c_void, offset: usize, size: usize) {
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), (*t).data.cast::<u8>().add(offset), size) }
}
unsafe extern "C" fn t_buf_get(_b: *mut Buffer, t: *const Tensor, data: *mut c_void, offset: usize, size: usize) {
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping((*t).data.cast::<u8>().add(offset), data.cast::<u8>(), size) }
}
unsafe extern "C" fn t_buf_clear(buffer: *mut Buffer, value: u8) {
    // SAFETY: the buffer owns `size` bytes at its base.
    unsafe { std::ptr::write_bytes((*buffer).context.cast::<u8>(), value, (*buffer).size) }
}

// Computing: a few f32 ops over contiguous tensors.

fn read(t: TensorPtr) -> Vec<f32> {
    assert!(!t.data.is_null(), "tensor {} is not allocated", t.name());
    // SAFETY: test tensors are contiguous f32 tensors in host memory.
    unsafe { std::slice::from_raw_parts(t.data.cast::<f32>(), t.nelements() as usize) }.to_vec()
}

fn write(t: TensorPtr, v: &[f32]) {
    assert_eq!(v.len(), t.nelements() as usize);
    // SAFETY: as in `read`; nothing else references the memory during the copy.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), t.data.cast::<f32>(), v.len()) }
}

fn eval(node: TensorPtr) {
    let src = |i: usize| read(node.src(i).unwrap());
    let n = node.nelements() as usize;
    let out: Vec<f32> = match node.op {
        Op::ADD | Op::MUL => {
            let (a, b) = (src(0), src(1));
            (0..n).map(|i| if node.op == Op::ADD { a[i] + b[i % b.len()] } else { a[i] * b[i % b.len()] }).collect()
        }
        Op::SQR => src(0).iter().map(|v| v * v).collect(),
        Op::SCALE => {
            let (s, b) = (node.op_param_f32(0), node.op_param_f32(1));
            src(0).iter().map(|v| v * s + b).collect()
        }
        Op::MUL_MAT => {
            let k = node.src(0).unwrap().ne[0] as usize;
            matmul(&src(0), &src(1), k)
        }
        // Only the copy of the experts is of interest.
        Op::MUL_MAT_ID => vec![0.0; n],
        op => panic!("test backends cannot compute {}", op.name()),
    };
    write(node, &out);
}

unsafe extern "C" fn t_graph_compute(backend: *mut Backend, graph: *mut Graph) -> Status {
    // SAFETY: live test backend and graph.
    let (d, g) = unsafe { (test_device((*backend).context), &*graph) };
    let mut names = Vec::new();
    for node in g.nodes() {
        names.push(node.name().to_owned());
        if !d.supports(node.op) {
            d.violations.borrow_mut().push(format!("{} got unsupported {}", node.name(), node.op.name()));
        }
        for t in std::iter::once(node).chain((0..MAX_SRC).filter_map(|j| node.src(j))) {
            match storage_buffer(t) {
                Some(b) if d.reads(b.buft()) => {}
                Some(b) => d.violations.borrow_mut().push(format!(
                    "{} reads {} in {}",
                    node.name(),
                    t.name(),
                    b.buft().name_lossy()
                )),
                None => d.violations.borrow_mut().push(format!("{} reads unallocated {}", node.name(), t.name())),
            }
        }
        if !node.op.is_view() && node.op != Op::NONE {
            eval(node);
        }
    }
    d.log.borrow_mut().push(names);
    Status::SUCCESS
}

// ---------------------------------------------------------------------------------------------
// Helpers

const ACCEL_OPS: &[Op] = &[Op::MUL_MAT, Op::ADD, Op::MUL, Op::SCALE];
const CPU_OPS: &[Op] = &[Op::MUL_MAT, Op::ADD, Op::MUL, Op::SCALE, Op::SQR];

fn gpu() -> &'static TestDevice {
    TestDevice::new("GPU0", DevType::GPU, ACCEL_OPS, true)
}

fn cpu() -> &'static TestDevice {
    TestDevice::new("CPU", DevType::CPU, CPU_OPS, false)
}

fn ctx() -> Box<Context> {
    Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
}

fn named(t: TensorPtr, name: &str) -> TensorPtr {
    t.get_mut().set_name(name);
    t
}

fn input(c: &mut Context, name: &str, ne: &[i64]) -> TensorPtr {
    let t = named(c.new_tensor(Type::F32, ne), name);
    t.get_mut().flags |= flag::INPUT;
    t
}

/// Allocates the tensors of `c` in a weights buffer of `buft` and fills each with `values`.
fn weights(c: &Context, buft: BufferTypePtr, values: &[(TensorPtr, Vec<f32>)]) -> BufferPtr {
    let buffer = alloc_ctx_tensors(c, buft).expect("weights buffer");
    buffer.set_usage(BufferUsage::WEIGHTS);
    for (t, v) in values {
        set(*t, v);
    }
    buffer
}

fn set(t: TensorPtr, v: &[f32]) {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    tensor_set(t, &bytes, 0);
}

fn get(t: TensorPtr) -> Vec<f32> {
    let mut bytes = vec![0u8; t.nbytes()];
    tensor_get(t, &mut bytes, 0);
    bytes.chunks(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn graph_of(c: &mut Context, outs: &[TensorPtr]) -> GraphPtr {
    let g = new_graph_custom(c, 512, false);
    for &t in outs {
        g.get_mut().build_forward_expand(t);
    }
    g
}

fn sched_of(devs: &[&'static TestDevice], parallel: bool, op_offload: bool) -> Box<Sched> {
    let backends: Vec<BackendPtr> = devs.iter().map(|d| d.backend()).collect();
    Sched::new(&backends, None, 512, parallel, op_offload)
}

fn backend_name_of(s: &Sched, t: TensorPtr) -> String {
    s.tensor_backend(t).map_or_else(|| "NULL".to_owned(), backend_name)
}

fn no_violations(devs: &[&'static TestDevice]) {
    for d in devs {
        assert!(d.violations.borrow().is_empty(), "{:?}", d.violations.borrow());
    }
}

fn matmul(w: &[f32], x: &[f32], k: usize) -> Vec<f32> {
    let (m, n) = (w.len() / k, x.len() / k);
    let mut out = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            out[j * m + i] = (0..k).map(|l| w[i * k + l] * x[j * k + l]).sum();
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tests

/// w on the accelerator; x a CPU input; y = sqr(...) unsupported on the accelerator.
struct Chain {
    w: TensorPtr,
    x: TensorPtr,
    h: TensorPtr,
    h2: TensorPtr,
    y: TensorPtr,
    z: TensorPtr,
    g: GraphPtr,
    wv: Vec<f32>,
    _wbuf: BufferPtr,
}

fn chain(c: &mut Context, wctx: &mut Context, wbuft: BufferTypePtr) -> Chain {
    let w = named(wctx.new_tensor(Type::F32, &[4, 3]), "w");
    let wv: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
    let wbuf = weights(wctx, wbuft, &[(w, wv.clone())]);
    let x = input(c, "x", &[4, 2]);
    let h = named(ops::matmul::mul_mat(c, w, x), "h");
    let h2 = named(ops::elementwise::add(c, h, h), "h2");
    let y = named(ops::elementwise::sqr(c, h2), "y");
    let z = named(ops::elementwise::mul(c, y, h2), "z");
    let g = graph_of(c, &[z]);
    Chain { w, x, h, h2, y, z, g, wv, _wbuf: wbuf }
}

fn expected_z(wv: &[f32], xv: &[f32]) -> Vec<f32> {
    matmul(wv, xv, 4).iter().map(|h| (2.0 * h) * (2.0 * h) * (2.0 * h)).collect()
}

#[test]
fn assigns_splits_and_copies_around_an_unsupported_op() {
    let (g0, c0) = (gpu(), cpu());
    let mut s = sched_of(&[g0, c0], false, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let ch = chain(&mut c, &mut wc, g0.buft());

    assert!(s.alloc_graph(ch.g.get_mut()));
    let names: Vec<String> = [ch.h, ch.h2, ch.y, ch.z].iter().map(|&t| backend_name_of(&s, t)).collect();
    assert_eq!(names, ["GPU0", "GPU0", "CPU", "GPU0"]);
    assert_eq!(backend_name_of(&s, ch.w), "GPU0");
    assert_eq!(backend_name_of(&s, ch.x), "CPU");
    assert_eq!(s.n_splits(), 3);
    let inputs: Vec<Vec<String>> =
        s.splits().iter().map(|sp| sp.inputs.iter().map(|t| t.name().to_owned()).collect()).collect();
    assert_eq!(inputs, [vec!["x"], vec!["h2"], vec!["y"]]);
    // The nodes now read the copies.
    assert_eq!(ch.h.src(1).unwrap().name(), "GPU0#x#0");
    assert_eq!(ch.y.src(0).unwrap().name(), "CPU#h2#0");
    assert_eq!(ch.z.src(0).unwrap().name(), "GPU0#y#0");
    assert_eq!(ch.z.src(1).unwrap().name(), "h2");

    let xv: Vec<f32> = (0..8).map(|i| 1.0 - i as f32 * 0.25).collect();
    set(ch.x, &xv);
    assert_eq!(s.graph_compute(ch.g.get_mut()), Status::SUCCESS);
    assert_eq!(get(ch.z), expected_z(&ch.wv, &xv));
    assert_eq!(g0.calls(), [vec!["h", "h2"], vec!["z"]]);
    assert_eq!(c0.calls(), [vec!["y"]]);
    no_violations(&[g0, c0]);
    assert!(s.buffer_size(g0.backend().as_ptr()) > 0);
    assert!(s.buffer_size(c0.backend().as_ptr()) > 0);
}

#[test]
fn allocator_graph_holds_input_copies_with_their_backends() {
    let (g0, c0) = (gpu(), cpu());
    let mut s = sched_of(&[g0, c0], false, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let ch = chain(&mut c, &mut wc, g0.buft());
    s.split_graph(ch.g.get_mut());

    let nodes: Vec<(String, i32)> =
        s.copy_nodes.iter().zip(&s.node_backend_ids).map(|(t, &id)| (t.unwrap().name().to_owned(), id)).collect();
    let expect: Vec<(String, i32)> = [
        ("x (view)", 1),
        ("GPU0#x#0", 0),
        ("h", 0),
        ("h2", 0),
        ("h2 (view)", 0),
        ("CPU#h2#0", 1),
        ("y", 1),
        ("y (view)", 1),
        ("GPU0#y#0", 0),
        ("z", 0),
    ]
    .iter()
    .map(|(n, id)| (n.to_string(), *id))
    .collect();
    assert_eq!(nodes, expect);
    let leafs: Vec<(String, i32)> =
        s.copy_leafs.iter().zip(&s.leaf_backend_ids).map(|(t, &id)| (t.unwrap().name().to_owned(), id)).collect();
    assert_eq!(leafs, [("w".to_owned(), 0), ("x".to_owned(), 1)]);
}

#[test]
fn pipeline_copies_rotate_and_use_events() {
    let (g0, c0) = (gpu(), cpu());
    g0.events.set(true);
    c0.events.set(true);
    let mut s = sched_of(&[g0, c0], true, true);
    assert_eq!(s.n_copies(), MAX_COPIES);
    assert_eq!(g0.events_alive.get() + c0.events_alive.get(), 2 * MAX_COPIES as i64);

    let (mut c, mut wc) = (ctx(), ctx());
    let ch = chain(&mut c, &mut wc, g0.buft());
    for round in 0..3 {
        s.reset();
        assert!(s.alloc_graph(ch.g.get_mut()));
        // The input's copies for every stage are leafs of the allocator's graph.
        let leaf_names: Vec<String> = s.copy_leafs.iter().map(|t| t.unwrap().name().to_owned()).collect();
        assert!(leaf_names.iter().any(|n| n == "CPU#x#3"), "{leaf_names:?}");
        assert!(leaf_names.iter().any(|n| n == "GPU0#y#2"), "{leaf_names:?}");
        // This round's copy is the user's tensor itself.
        let x_now = s.table.copy(ch.x, 1, round).unwrap();
        assert_eq!(x_now, ch.x);
        assert_eq!(ch.h.src(1).unwrap().name(), format!("GPU0#x#{round}"));

        let xv: Vec<f32> = (0..8).map(|i| i as f32 - round as f32).collect();
        set(ch.x, &xv);
        assert_eq!(s.graph_compute_async(ch.g.get_mut()), Status::SUCCESS);
        assert_eq!(get(ch.z), expected_z(&ch.wv, &xv));
        // Rebuild the nodes' sources for the next round (as a new graph would have them).
        ch.h.get_mut().src[1] = ch.x.as_ptr();
        ch.y.get_mut().src[0] = ch.h2.as_ptr();
        ch.z.get_mut().src[0] = ch.y.as_ptr();
    }
    assert_eq!(g0.events_recorded.get(), 6);
    assert_eq!(c0.events_recorded.get(), 3);
    assert!(g0.events_waited.get() > 0);
    no_violations(&[g0, c0]);
    drop(s);
    assert_eq!(g0.events_alive.get() + c0.events_alive.get(), 0);
}

#[test]
fn synchronize_without_allocation_restarts_at_copy_zero() {
    let (g0, c0) = (gpu(), cpu());
    let mut s = sched_of(&[g0, c0], true, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let ch = chain(&mut c, &mut wc, g0.buft());
    assert!(s.alloc_graph(ch.g.get_mut()));
    assert_eq!((s.cur_copy, s.next_copy), (0, 1));
    s.reset();
    s.synchronize();
    assert_eq!(s.next_copy, 0);
}

#[test]
fn reassignment_to_another_buffer_type_replans_the_buffers() {
    let (g0, c0) = (gpu(), cpu());
    let mut s = sched_of(&[g0, c0], false, true);
    let build = |c: &mut Context| {
        let a = input(c, "a", &[16]);
        let b = named(ops::elementwise::scale(c, a, 2.0), "b");
        let d = named(ops::elementwise::add(c, b, a), "d");
        (a, b, d, graph_of(c, &[d]))
    };

    let mut c1 = ctx();
    let (a, _, d, g) = build(&mut c1);
    assert!(s.alloc_graph(g.get_mut()));
    assert_eq!(backend_name_of(&s, d), "CPU");
    assert_eq!(s.buffer_size(g0.backend().as_ptr()), 0);
    set(a, &[1.0; 16]);
    assert_eq!(s.graph_compute(g.get_mut()), Status::SUCCESS);
    assert_eq!(get(d), vec![3.0; 16]);

    // Same graph shape, but the user pins the scale to the accelerator.
    s.reset();
    let mut c2 = ctx();
    let (a, b, d, g) = build(&mut c2);
    s.set_tensor_backend(b, g0.backend().as_ptr());
    assert!(s.alloc_graph(g.get_mut()));
    assert_eq!(backend_name_of(&s, b), "GPU0");
    // The add follows the accelerator by expansion.
    assert_eq!(backend_name_of(&s, d), "GPU0");
    assert!(s.buffer_size(g0.backend().as_ptr()) > 0);
    set(a, &[2.0; 16]);
    assert_eq!(s.graph_compute(g.get_mut()), Status::SUCCESS);
    assert_eq!(get(d), vec![6.0; 16]);
    no_violations(&[g0, c0]);
}

#[test]
fn op_offload_moves_ops_on_host_weights_to_the_accelerator() {
    for offload in [true, false] {
        let (g0, c0) = (gpu(), cpu());
        g0.offload.replace(vec![Op::MUL_MAT]);
        let mut s = sched_of(&[g0, c0], false, offload);
        let (mut c, mut wc) = (ctx(), ctx());
        let w = named(wc.new_tensor(Type::F32, &[4, 3]), "w");
        let wv: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let _wbuf = weights(&wc, cpu_buffer_type(), &[(w, wv.clone())]);
        let x = input(&mut c, "x", &[4, 2]);
        let h = named(ops::matmul::mul_mat(&mut c, w, x), "h");
        let g = graph_of(&mut c, &[h]);
        assert!(s.alloc_graph(g.get_mut()));
        if offload {
            assert_eq!(backend_name_of(&s, h), "GPU0");
            let inputs: Vec<String> = s.splits()[0].inputs.iter().map(|t| t.name().to_owned()).collect();
            assert_eq!(inputs, ["w", "x"]);
            assert_eq!(h.src(0).unwrap().name(), "GPU0#w#0");
        } else {
            assert_eq!(backend_name_of(&s, h), "CPU");
            assert!(s.splits()[0].inputs.is_empty());
        }
        assert_eq!(s.n_splits(), 1);
        let xv: Vec<f32> = (0..8).map(|i| 0.5 * i as f32).collect();
        set(x, &xv);
        assert_eq!(s.graph_compute(g.get_mut()), Status::SUCCESS);
        assert_eq!(get(h), matmul(&wv, &xv, 4));
        no_violations(&[g0, c0]);
    }
}

#[test]
fn higher_priority_backend_on_the_same_buffer_type_takes_nodes_over() {
    // A BLAS-like backend: host memory, matrix products only.
    let blas = TestDevice::new("BLAS", DevType::ACCEL, &[Op::MUL_MAT], false);
    let c0 = cpu();
    let mut s = sched_of(&[blas, c0], false, true);
    let mut c = ctx();
    let xa = input(&mut c, "xa", &[4, 3]);
    let xb = input(&mut c, "xb", &[4, 2]);
    let p = named(ops::matmul::mul_mat(&mut c, xa, xb), "p");
    let q = named(ops::elementwise::sqr(&mut c, p), "q");
    let g = graph_of(&mut c, &[q]);
    // Even a user's CPU assignment is upgraded: same buffer type, every source readable.
    s.set_tensor_backend(p, c0.backend().as_ptr());
    assert!(s.alloc_graph(g.get_mut()));
    assert_eq!(backend_name_of(&s, p), "BLAS");
    assert_eq!(backend_name_of(&s, q), "CPU");
    assert_eq!(s.n_splits(), 2);
    assert!(s.splits().iter().all(|sp| sp.inputs.is_empty()));
    let (av, bv): (Vec<f32>, Vec<f32>) =
        ((0..12).map(|i| i as f32).collect(), (0..8).map(|i| 1.0 + i as f32).collect());
    set(xa, &av);
    set(xb, &bv);
    assert_eq!(s.graph_compute(g.get_mut()), Status::SUCCESS);
    assert_eq!(get(q), matmul(&av, &bv, 4).iter().map(|v| v * v).collect::<Vec<_>>());
    assert_eq!(blas.calls(), [vec!["p"]]);
    no_violations(&[blas, c0]);
}

#[test]
fn a_split_may_have_more_inputs_than_ggml_allows() {
    let (g0, c0) = (gpu(), cpu());
    let mut s = sched_of(&[g0, c0], false, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let w = named(wc.new_tensor(Type::F32, &[2, 2]), "w");
    let _wbuf = weights(&wc, g0.buft(), &[(w, vec![1.0, 0.0, 0.0, 1.0])]);
    let x = input(&mut c, "x", &[2, 1]);
    let mut acc = named(ops::matmul::mul_mat(&mut c, w, x), "acc");
    let n_extra = 45;
    let extras: Vec<TensorPtr> = (0..n_extra).map(|i| input(&mut c, &format!("in{i}"), &[2, 1])).collect();
    for (i, &e) in extras.iter().enumerate() {
        acc = named(ops::elementwise::add(&mut c, acc, e), &format!("acc{i}"));
    }
    let g = graph_of(&mut c, &[acc]);
    assert!(s.alloc_graph(g.get_mut()));
    assert_eq!(s.n_splits(), 1);
    assert_eq!(s.splits()[0].inputs.len(), n_extra + 1);
    set(x, &[1.0, 2.0]);
    for &e in &extras {
        set(e, &[1.0, 1.0]);
    }
    assert_eq!(s.graph_compute(g.get_mut()), Status::SUCCESS);
    assert_eq!(get(acc), vec![1.0 + n_extra as f32, 2.0 + n_extra as f32]);
    no_violations(&[g0, c0]);
}

struct Observed {
    want: &'static str,
    asked: Vec<String>,
    seen: Vec<String>,
    stop: bool,
}

unsafe extern "C" fn observe(t: *mut Tensor, ask: bool, user_data: *mut c_void) -> bool {
    // SAFETY: the tests pass an `Observed` and live tensors.
    let (o, t) = unsafe { (&mut *user_data.cast::<Observed>(), &*t) };
    if ask {
        o.asked.push(t.name().to_owned());
        t.name() == o.want
    } else {
        o.seen.push(t.name().to_owned());
        !o.stop
    }
}

#[test]
fn eval_callback_cuts_splits_at_observed_nodes() {
    for stop in [false, true] {
        let c0 = cpu();
        let mut s = sched_of(&[c0], false, true);
        let mut c = ctx();
        let a = input(&mut c, "a", &[4]);
        let b = named(ops::elementwise::scale(&mut c, a, 2.0), "b");
        let d = named(ops::elementwise::sqr(&mut c, b), "d");
        let e = named(ops::elementwise::add(&mut c, d, a), "e");
        let f = named(ops::elementwise::scale(&mut c, e, 0.5), "f");
        let g = graph_of(&mut c, &[f]);
        let mut o = Observed { want: "d", asked: Vec::new(), seen: Vec::new(), stop };
        s.set_eval_callback(Some(observe), (&raw mut o).cast());
        assert!(s.alloc_graph(g.get_mut()));
        set(a, &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.graph_compute(g.get_mut()), Status::SUCCESS);
        assert_eq!(o.seen, ["d"]);
        if stop {
            assert_eq!(c0.calls(), [vec!["b", "d"]]);
            assert_eq!(o.asked, ["b", "d"]);
        } else {
            assert_eq!(c0.calls(), [vec!["b", "d"], vec!["e", "f"]]);
            assert_eq!(o.asked, ["b", "d", "e", "f"]);
            assert_eq!(get(f), vec![2.5, 9.0, 19.5, 34.0]);
        }
    }
}

#[test]
fn views_follow_their_source_and_reserve_sizes_do_not_allocate() {
    let (g0, c0) = (gpu(), cpu());
    let mut s = sched_of(&[g0, c0], false, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let w = named(wc.new_tensor(Type::F32, &[4, 4]), "w");
    let _wbuf = weights(&wc, g0.buft(), &[(w, (0..16).map(|i| i as f32).collect())]);
    let x = input(&mut c, "x", &[4, 1]);
    let h = named(ops::matmul::mul_mat(&mut c, w, x), "h");
    let v = named(ops::shape::reshape_2d(&mut c, h, 2, 2), "v");
    let y = named(ops::elementwise::sqr(&mut c, v), "y");
    let g = graph_of(&mut c, &[y]);

    let allocated_before = g0.buffers_allocated.get();
    let sizes = s.reserve_size(g.get_mut());
    assert_eq!(sizes.len(), 2);
    assert!(sizes[0] > 0 && sizes[1] > 0, "{sizes:?}");
    assert_eq!(g0.buffers_allocated.get(), allocated_before);
    assert_eq!(backend_name_of(&s, v), "GPU0");
    assert_eq!(backend_name_of(&s, y), "CPU");
    // The reshape is skipped when splitting: the CPU split reads a copy of the view.
    assert_eq!(y.src(0).unwrap().name(), "CPU#v#0");
}

#[test]
fn reserve_then_compute_reuses_the_buffers() {
    let (g0, c0) = (gpu(), cpu());
    let mut s = sched_of(&[g0, c0], false, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let ch = chain(&mut c, &mut wc, g0.buft());
    let weights_only = g0.buffers_allocated.get();
    assert!(s.reserve(ch.g.get_mut()));
    assert!(g0.buffers_allocated.get() > weights_only);
    // reserve rewired the graph's sources; a fresh graph of the same shape computes with the
    // reserved buffers.
    let (mut c2, mut wc2) = (ctx(), ctx());
    let ch2 = chain(&mut c2, &mut wc2, g0.buft());
    let allocated = g0.buffers_allocated.get();
    assert!(s.alloc_graph(ch2.g.get_mut()));
    assert_eq!(g0.buffers_allocated.get(), allocated);
    let xv = vec![0.5; 8];
    set(ch2.x, &xv);
    assert_eq!(s.graph_compute(ch2.g.get_mut()), Status::SUCCESS);
    assert_eq!(get(ch2.z), expected_z(&ch2.wv, &xv));
    no_violations(&[g0, c0]);
}

#[test]
fn get_tensor_backend_of_an_unknown_tensor_is_none() {
    let c0 = cpu();
    let s = sched_of(&[c0], false, false);
    let mut c = ctx();
    let t = c.new_tensor(Type::F32, &[1]);
    assert!(s.tensor_backend(t).is_none());
    assert_eq!(s.n_backends(), 1);
    assert_eq!(s.buffer_type(c0.backend().as_ptr()), cpu_buffer_type());
}

#[test]
fn backends_may_keep_tensors_alive_through_graph_optimize() {
    let (g0, c0) = (gpu(), cpu());
    g0.keep_alive.replace(Some(("h2".to_owned(), "z".to_owned())));
    let mut s = sched_of(&[g0, c0], false, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let ch = chain(&mut c, &mut wc, g0.buft());
    s.split_graph(ch.g.get_mut());
    let names: Vec<String> = s.copy_nodes.iter().map(|t| t.unwrap().name().to_owned()).collect();
    let at = names.iter().position(|n| n == "z").unwrap();
    // A dependency node right after `z`, on z's backend, whose source is `h2`.
    assert_eq!(names.len(), at + 2);
    let dep = s.copy_nodes[at + 1].unwrap();
    assert_eq!(dep.name(), "h2 (view)");
    assert_eq!(dep.src(0), Some(ch.h2));
    assert_eq!(s.node_backend_ids[at + 1], 0);
}

#[test]
fn offloaded_expert_weights_copy_only_the_experts_in_use() {
    let c0 = cpu();
    let g0 = TestDevice::new("GPU0", DevType::GPU, &[Op::MUL_MAT_ID, Op::ADD], true);
    g0.offload.replace(vec![Op::MUL_MAT_ID]);
    let mut s = sched_of(&[g0, c0], false, true);
    let (mut c, mut wc) = (ctx(), ctx());
    let (k, m, n_expert) = (4usize, 2usize, 8usize);
    let experts = named(wc.new_tensor(Type::F32, &[k as i64, m as i64, n_expert as i64]), "experts");
    let values: Vec<f32> = (0..k * m * n_expert).map(|i| 1.0 + i as f32).collect();
    let _wbuf = weights(&wc, cpu_buffer_type(), &[(experts, values.clone())]);
    let b = input(&mut c, "b", &[k as i64, 1, 2]);
    let ids = named(c.new_tensor(Type::I32, &[1, 2]), "ids");
    ids.get_mut().flags |= flag::INPUT;
    let out = named(ops::matmul::mul_mat_id(&mut c, experts, b, ids), "out");
    let g = graph_of(&mut c, &[out]);
    assert!(s.alloc_graph(g.get_mut()));
    assert_eq!(backend_name_of(&s, out), "GPU0");
    let inputs: Vec<String> = s.splits()[0].inputs.iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(inputs, ["experts", "b", "ids"]);

    let copy = s.table.copy(experts, 0, 0).unwrap();
    set(copy, &vec![0.0; k * m * n_expert]);
    set(b, &[1.0; 8]);
    let id_bytes: Vec<u8> = [1i32, 5].iter().flat_map(|v| v.to_ne_bytes()).collect();
    tensor_set(ids, &id_bytes, 0);
    assert_eq!(s.graph_compute(g.get_mut()), Status::SUCCESS);

    // Experts 1 and 5, each followed by one expert's worth of padding (min(expert, 512 B)).
    let per = k * m;
    let got = get(copy);
    for e in 0..n_expert {
        let slice = &got[e * per..(e + 1) * per];
        if [1, 2, 5, 6].contains(&e) {
            assert_eq!(slice, &values[e * per..(e + 1) * per], "expert {e}");
        } else {
            assert!(slice.iter().all(|&v| v == 0.0), "expert {e} was copied: {slice:?}");
        }
    }
    no_violations(&[g0, c0]);
}
