//! Stand-ins for the optimization tests: schedulers that record what they are asked to do or
//! compute on host memory, a CPU-type device and backend defined through the C tables (so the
//! real backend scheduler can run optimization graphs), and the one-weight model of ggml's
//! test-opt.

use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::rc::Rc;

use super::context::{InitArgs, Scheduler};
use super::params::{
    AdamWParams, BuildType, LossType, OptimizerParams, OptimizerType, SgdParams, default_optimizer_params,
};
use crate::alloc::Gallocr;
use crate::backend::backend::BackendPtr;
use crate::backend::buffer::{self, BufferPtr, BufferTypePtr};
use crate::backend::interface::{Backend, BackendInterface, BufferType, DevProps, DevType, Device, DeviceInterface};
use crate::backend::{host_buffer, tallocr};
use crate::core::context::{Context, InitParams, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::graph::{DEFAULT_GRAPH_SIZE, Graph, GraphPtr, cgraph};
use crate::core::op::Op;
use crate::core::ops::elementwise as ew;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr, flag};
use crate::core::types::Type;

const TENSOR_OVERHEAD: usize = OBJECT_SIZE + TENSOR_SIZE;

fn named(t: TensorPtr, name: &[u8]) -> TensorPtr {
    t.get_mut().set_name_bytes(name);
    t
}

fn to_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// What the stand-in scheduler saw.
#[derive(Default)]
pub(crate) struct Log {
    pub resets: usize,
    pub allocated: Vec<GraphPtr>,
    pub computed: Vec<GraphPtr>,
}

/// A scheduler that allocates nothing (the tests' graphs need only their static tensors)
/// and "computes" by running `on_compute`.
pub(crate) struct FakeScheduler {
    pub log: Rc<RefCell<Log>>,
    pub on_compute: Box<dyn FnMut(GraphPtr)>,
}

impl Scheduler for FakeScheduler {
    fn reset(&mut self) {
        self.log.borrow_mut().resets += 1;
    }
    fn alloc_graph(&mut self, graph: GraphPtr) -> bool {
        self.log.borrow_mut().allocated.push(graph);
        true
    }
    fn compute(&mut self, graph: GraphPtr) -> Status {
        self.log.borrow_mut().computed.push(graph);
        (self.on_compute)(graph);
        Status::SUCCESS
    }
    fn static_buffer_type(&mut self) -> BufferTypePtr {
        host_buffer::cpu_buffer_type()
    }
}

/// A scheduler over host memory: the graph allocator places the tensors in CPU buffers
/// and `compute` evaluates the few ops that the test models' graphs use.
pub(crate) struct HostScheduler {
    galloc: Gallocr,
    pub computed: Rc<RefCell<usize>>,
}

impl HostScheduler {
    pub(crate) fn new() -> (HostScheduler, Rc<RefCell<usize>>) {
        let computed = Rc::new(RefCell::new(0));
        let galloc = Gallocr::new(&[host_buffer::cpu_buffer_type()]);
        (HostScheduler { galloc, computed: computed.clone() }, computed)
    }
}

fn host_f32<'a>(t: TensorPtr) -> &'a mut [f32] {
    assert!(t.type_ == Type::F32 && t.is_contiguous() && !t.data.is_null(), "{} is not host F32", t.name());
    // SAFETY: an allocated contiguous F32 tensor in host memory holds nelements floats;
    // the interpreter below holds one such slice at a time per tensor.
    unsafe { std::slice::from_raw_parts_mut(t.data.cast::<f32>(), t.nelements() as usize) }
}

/// Evaluates one node (F32, contiguous, broadcasting by repetition).
fn eval_node(node: TensorPtr) {
    let src = |i: usize| host_f32(node.src(i).unwrap()).to_vec();
    let dst = host_f32(node);
    match node.op {
        Op::ADD | Op::SUB | Op::MUL => {
            let (a, b) = (src(0), src(1));
            let f: fn(f32, f32) -> f32 = match node.op {
                Op::ADD => |x, y| x + y,
                Op::SUB => |x, y| x - y,
                _ => |x, y| x * y,
            };
            for (i, d) in dst.iter_mut().enumerate() {
                *d = f(a[i], b[i % b.len()]);
            }
        }
        Op::SQR => dst.iter_mut().zip(src(0)).for_each(|(d, a)| *d = a * a),
        Op::SCALE => {
            let (s, b) = (node.op_param_f32(0), node.op_param_f32(1));
            dst.iter_mut().zip(src(0)).for_each(|(d, a)| *d = a * s + b);
        }
        Op::SUM => dst[0] = src(0).iter().sum(),
        Op::REPEAT => {
            let a = src(0);
            dst.iter_mut().enumerate().for_each(|(i, d)| *d = a[i % a.len()]);
        }
        Op::REPEAT_BACK => {
            dst.fill(0.0);
            let n = dst.len();
            src(0).iter().enumerate().for_each(|(i, a)| dst[i % n] += a);
        }
        Op::OPT_STEP_SGD => {
            let (g, p) = (src(1), src(2));
            let keep = 1.0 - p[0] * p[1];
            let w = host_f32(node.src(0).unwrap());
            w.iter_mut().zip(g).for_each(|(w, g)| *w = *w * keep - p[0] * g);
        }
        Op::OPT_STEP_ADAMW => {
            let (g, p) = (src(1), src(4));
            let [alpha, beta1, beta2, eps, wd, beta1h, beta2h] = [p[0], p[1], p[2], p[3], p[4], p[5], p[6]];
            let keep = 1.0 - alpha * wd;
            let (w, m, v) = (node.src(0).unwrap(), node.src(2).unwrap(), node.src(3).unwrap());
            let (w, m, v) = (host_f32(w), host_f32(m), host_f32(v));
            for i in 0..g.len() {
                m[i] = m[i] * beta1 + g[i] * (1.0 - beta1);
                v[i] = v[i] * beta2 + g[i] * g[i] * (1.0 - beta2);
                let mh = m[i] * beta1h;
                let vh = (v[i] * beta2h).sqrt() + eps;
                w[i] = w[i] * keep - alpha * mh / vh;
            }
        }
        other => panic!("the host test scheduler cannot compute {}", other.name()),
    }
}

impl Scheduler for HostScheduler {
    fn reset(&mut self) {}
    fn alloc_graph(&mut self, graph: GraphPtr) -> bool {
        self.galloc.alloc_graph(&graph)
    }
    fn compute(&mut self, graph: GraphPtr) -> Status {
        *self.computed.borrow_mut() += 1;
        for node in graph.nodes().filter(|n| n.flags & flag::COMPUTE != 0 && n.op != Op::NONE) {
            eval_node(node);
        }
        Status::SUCCESS
    }
    fn static_buffer_type(&mut self) -> BufferTypePtr {
        host_buffer::cpu_buffer_type()
    }
}

// A CPU-type device and backend defined through the C tables, computing with `eval_node`,
// so that the real scheduler can run optimization graphs.

unsafe extern "C" fn host_name(_: *mut Device) -> *const c_char {
    c"opt-host".as_ptr()
}

unsafe extern "C" fn host_memory(_: *mut Device, free: *mut usize, total: *mut usize) {
    // SAFETY: callers pass valid out-pointers.
    unsafe {
        *free = 1 << 30;
        *total = 1 << 30;
    }
}

unsafe extern "C" fn host_type(_: *mut Device) -> DevType {
    DevType::CPU
}

unsafe extern "C" fn host_props(dev: *mut Device, props: *mut DevProps) {
    // SAFETY: callers pass a valid struct; the entries are this module's own.
    unsafe {
        let p = &mut *props;
        p.name = host_name(dev);
        p.description = host_name(dev);
        host_memory(dev, &mut p.memory_free, &mut p.memory_total);
        p.type_ = DevType::CPU;
    }
}

unsafe extern "C" fn host_buft(_: *mut Device) -> *mut BufferType {
    host_buffer::cpu_buffer_type().as_ptr()
}

unsafe extern "C" fn host_supports_op(_: *mut Device, _: *const Tensor) -> bool {
    true
}

unsafe extern "C" fn host_supports_buft(_: *mut Device, buft: *mut BufferType) -> bool {
    buft == host_buffer::cpu_buffer_type().as_ptr()
}

unsafe extern "C" fn host_backend_name(_: *mut Backend) -> *const c_char {
    c"opt-host".as_ptr()
}

unsafe extern "C" fn host_graph_compute(_: *mut Backend, graph: *mut Graph) -> Status {
    // SAFETY: the scheduler passes a live graph of allocated host tensors.
    let graph = unsafe { &*graph };
    for node in graph.nodes().filter(|n| n.op != Op::NONE && !n.is_empty()) {
        if !node.op.is_view() {
            eval_node(node);
        }
    }
    Status::SUCCESS
}

/// A leaked host device and a backend on it.
pub(crate) fn host_backend() -> BackendPtr {
    let device = Box::leak(Box::new(Device {
        iface: DeviceInterface {
            get_name: Some(host_name),
            get_description: Some(host_name),
            get_memory: Some(host_memory),
            get_type: Some(host_type),
            get_props: Some(host_props),
            init_backend: None,
            get_buffer_type: Some(host_buft),
            get_host_buffer_type: None,
            buffer_from_host_ptr: None,
            supports_op: Some(host_supports_op),
            supports_buft: Some(host_supports_buft),
            offload_op: None,
            event_new: None,
            event_free: None,
            event_synchronize: None,
        },
        reg: std::ptr::null_mut(),
        context: std::ptr::null_mut(),
    }));
    static GUID: [u8; 16] = *b"ggml-rs-opt-host";
    let backend = Box::leak(Box::new(Backend {
        guid: (&GUID as *const [u8; 16]).cast_mut(),
        iface: BackendInterface {
            get_name: Some(host_backend_name),
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
            graph_compute: Some(host_graph_compute),
            event_record: None,
            event_wait: None,
            graph_optimize: None,
        },
        device,
        context: std::ptr::null_mut(),
    }));
    // SAFETY: leaked, so alive for the rest of the process.
    unsafe { BackendPtr::from_raw(backend) }.unwrap()
}

/// Hyper-parameters under which AdamW and SGD both step by the sign of a unit gradient.
pub(crate) extern "C" fn unit_steps(_: *mut c_void) -> OptimizerParams {
    OptimizerParams {
        adamw: AdamWParams { alpha: 1.0, beta1: 0.0, beta2: 0.0, eps: 0.0, wd: 0.0 },
        sgd: SgdParams { alpha: 1.0, wd: 0.0 },
    }
}

/// The model of ggml's test-opt: outputs = scale(inputs + weights, 1), with static
/// inputs and weights.
pub(crate) struct Model {
    /// Owns the inputs and weights.
    pub _ctx_static: Box<Context>,
    pub ctx_compute: Box<Context>,
    pub buf: BufferPtr,
    pub inputs: TensorPtr,
    pub weights: TensorPtr,
    pub outputs: TensorPtr,
}

impl Model {
    pub(crate) fn new(batch: i64) -> Model {
        let mut ctx_static = Context::new(InitParams {
            mem_size: 8 * TENSOR_OVERHEAD,
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        });
        let mut ctx_compute = Context::new(InitParams {
            mem_size: DEFAULT_GRAPH_SIZE * TENSOR_OVERHEAD + 3 * cgraph::overhead_custom(DEFAULT_GRAPH_SIZE, true),
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        });
        let inputs = named(ctx_static.new_tensor(Type::F32, &[batch]), b"inputs");
        let weights = named(ctx_static.new_tensor(Type::F32, &[1]), b"weights");
        weights.get_mut().flags |= flag::PARAM;
        let sum = ew::add(&mut ctx_compute, inputs, weights);
        let outputs = named(ew::scale(&mut ctx_compute, sum, 1.0), b"outputs");
        let buf = tallocr::alloc_ctx_tensors(&ctx_static, host_buffer::cpu_buffer_type()).unwrap();
        Model::set(weights, &[3.0]);
        Model { _ctx_static: ctx_static, ctx_compute, buf, inputs, weights, outputs }
    }

    /// `ggml_backend_tensor_set` of the weights or inputs.
    pub(crate) fn set(t: TensorPtr, values: &[f32]) {
        buffer::tensor_set(t, &to_bytes(values), 0);
    }

    pub(crate) fn weight(&self) -> f32 {
        read_f32(self.weights)[0]
    }

    pub(crate) fn args(
        &mut self,
        scheduler: impl Scheduler + 'static,
        loss_type: LossType,
        optimizer: OptimizerType,
        opt_period: i32,
    ) -> InitArgs<'_> {
        InitArgs {
            scheduler: Box::new(scheduler),
            ctx_compute: Some(&mut self.ctx_compute),
            inputs: Some(self.inputs),
            outputs: Some(self.outputs),
            loss_type,
            build_type: BuildType::OPT,
            opt_period,
            get_opt_pars: Some(default_optimizer_params),
            get_opt_pars_ud: std::ptr::null_mut(),
            optimizer,
        }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        self.buf.free();
    }
}

pub(crate) fn fake(on_compute: impl FnMut(GraphPtr) + 'static) -> (FakeScheduler, Rc<RefCell<Log>>) {
    let log = Rc::new(RefCell::new(Log::default()));
    (FakeScheduler { log: log.clone(), on_compute: Box::new(on_compute) }, log)
}

pub(crate) fn read_f32(t: TensorPtr) -> Vec<f32> {
    let mut bytes = vec![0u8; t.nbytes()];
    buffer::tensor_get(t, &mut bytes, 0);
    bytes.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect()
}
