//! A registry, devices and backends built only from the C tables, for tests: they behave as a
//! plugin written in C would, count every call that reaches them, and compute ADD and MUL of
//! contiguous F32 tensors in host memory (plus a constant bias chosen at init, so that two
//! backends can be made to disagree).

use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::backend::BackendPtr;
use super::buffer;
use super::host_buffer::cpu_buffer_type;
use super::interface::{
    Backend, BackendInterface, BufferType, DevCaps, DevProps, DevType, Device, DeviceInterface, Event,
    GGML_BACKEND_API_VERSION, GraphPlan, Reg, RegInterface,
};
use super::reg::RegPtr;
use crate::core::graph::Graph;
use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;

/// What a test device offers.
#[derive(Clone, Copy)]
pub struct DeviceSpec {
    pub name: &'static str,
    pub dev_type: DevType,
    /// Asynchronous set/get/copy entries in its backends.
    pub async_: bool,
    /// Events on the device and in its backends.
    pub events: bool,
}

struct RegCtx {
    name: CString,
    devices: Vec<*mut Device>,
}

struct DevCtx {
    name: CString,
    description: CString,
    spec: DeviceSpec,
}

/// Calls that reached one test backend.
#[derive(Default)]
pub struct Counters {
    pub syncs: AtomicUsize,
    pub computes: AtomicUsize,
    pub async_sets: AtomicUsize,
    pub async_gets: AtomicUsize,
    pub async_copies: AtomicUsize,
    pub plan_computes: AtomicUsize,
    pub records: AtomicUsize,
    pub waits: AtomicUsize,
    pub optimizes: AtomicUsize,
}

struct BackendCtx {
    bias: f32,
    counters: Counters,
}

struct EventCtx {
    recorded: AtomicBool,
}

struct Plan {
    graph: *const Graph,
}

fn dev_ctx<'a>(dev: *mut Device) -> &'a DevCtx {
    // SAFETY: test devices carry a leaked DevCtx as their context.
    unsafe { &*(*dev).context.cast::<DevCtx>() }
}

fn backend_ctx<'a>(backend: *mut Backend) -> &'a BackendCtx {
    // SAFETY: test backends carry a boxed BackendCtx as their context until freed.
    unsafe { &*(*backend).context.cast::<BackendCtx>() }
}

/// The counters of a backend made by a test device.
pub fn counters<'a>(backend: BackendPtr) -> &'a Counters {
    &backend_ctx(backend.as_ptr()).counters
}

/// Loads a counter.
pub fn n(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}

fn bump(c: &AtomicUsize) {
    c.fetch_add(1, Ordering::SeqCst);
}

/// Makes a registry named `name` with the given devices (leaked, as a plugin's statics are).
pub fn new_reg(name: &str, specs: &[DeviceSpec]) -> RegPtr {
    let reg = Box::leak(Box::new(Reg {
        api_version: GGML_BACKEND_API_VERSION,
        iface: RegInterface {
            get_name: Some(reg_get_name),
            get_device_count: Some(reg_get_device_count),
            get_device: Some(reg_get_device),
            get_proc_address: None,
        },
        context: std::ptr::null_mut(),
    }));
    let devices = specs
        .iter()
        .map(|spec| {
            let ctx = Box::leak(Box::new(DevCtx {
                name: CString::new(spec.name).expect("device name"),
                description: CString::new(format!("test device {}", spec.name)).expect("description"),
                spec: *spec,
            }));
            let dev: *mut Device = Box::leak(Box::new(Device {
                iface: device_iface(spec.events),
                reg: &mut *reg,
                context: (ctx as *mut DevCtx).cast(),
            }));
            dev
        })
        .collect();
    let ctx = Box::leak(Box::new(RegCtx { name: CString::new(name).expect("registry name"), devices }));
    reg.context = (ctx as *mut RegCtx).cast();
    // SAFETY: leaked, so alive for the rest of the process.
    unsafe { RegPtr::from_raw(reg) }.expect("leaked registry")
}

fn device_iface(events: bool) -> DeviceInterface {
    DeviceInterface {
        get_name: Some(dev_get_name),
        get_description: Some(dev_get_description),
        get_memory: Some(dev_get_memory),
        get_type: Some(dev_get_type),
        get_props: Some(dev_get_props),
        init_backend: Some(dev_init_backend),
        get_buffer_type: Some(dev_get_buffer_type),
        get_host_buffer_type: None,
        buffer_from_host_ptr: None,
        supports_op: Some(dev_supports_op),
        supports_buft: Some(dev_supports_buft),
        offload_op: None,
        event_new: if events { Some(dev_event_new) } else { None },
        event_free: if events { Some(dev_event_free) } else { None },
        event_synchronize: if events { Some(dev_event_synchronize) } else { None },
    }
}

unsafe extern "C" fn reg_get_name(reg: *mut Reg) -> *const c_char {
    // SAFETY: test registries carry a leaked RegCtx.
    unsafe { (*(*reg).context.cast::<RegCtx>()).name.as_ptr() }
}

unsafe extern "C" fn reg_get_device_count(reg: *mut Reg) -> usize {
    // SAFETY: as in `reg_get_name`.
    unsafe { (*(*reg).context.cast::<RegCtx>()).devices.len() }
}

unsafe extern "C" fn reg_get_device(reg: *mut Reg, index: usize) -> *mut Device {
    // SAFETY: as in `reg_get_name`.
    let devices = unsafe { &(*(*reg).context.cast::<RegCtx>()).devices };
    crate::ggml_assert!(index < devices.len(), "test registry has no device {}", index);
    devices[index]
}

unsafe extern "C" fn dev_get_name(dev: *mut Device) -> *const c_char {
    dev_ctx(dev).name.as_ptr()
}

unsafe extern "C" fn dev_get_description(dev: *mut Device) -> *const c_char {
    dev_ctx(dev).description.as_ptr()
}

unsafe extern "C" fn dev_get_memory(_dev: *mut Device, free: *mut usize, total: *mut usize) {
    // SAFETY: callers pass valid out-pointers.
    unsafe {
        *free = 1 << 20;
        *total = 2 << 20;
    }
}

unsafe extern "C" fn dev_get_type(dev: *mut Device) -> DevType {
    dev_ctx(dev).spec.dev_type
}

unsafe extern "C" fn dev_get_props(dev: *mut Device, props: *mut DevProps) {
    let spec = dev_ctx(dev).spec;
    // SAFETY: callers pass a valid struct; the entries are this file's own.
    unsafe {
        let p = &mut *props;
        p.name = dev_get_name(dev);
        p.description = dev_get_description(dev);
        dev_get_memory(dev, &mut p.memory_free, &mut p.memory_total);
        p.type_ = spec.dev_type;
        p.caps = DevCaps {
            async_: spec.async_,
            host_buffer: false,
            buffer_from_host_ptr: false,
            events: spec.events,
            mmap_support: false,
        };
    }
}

/// `params` may be "bias=<float>": the value added to every computed element.
unsafe extern "C" fn dev_init_backend(dev: *mut Device, params: *const c_char) -> *mut Backend {
    let bias = if params.is_null() {
        0.0
    } else {
        // SAFETY: non-null params are C strings.
        let p = unsafe { CStr::from_ptr(params) }.to_string_lossy();
        p.strip_prefix("bias=").and_then(|v| v.parse().ok()).unwrap_or(0.0)
    };
    let spec = dev_ctx(dev).spec;
    static GUID: [u8; 16] = *b"ggml-rs-testback";
    let ctx = Box::new(BackendCtx { bias, counters: Counters::default() });
    let backend = Box::new(Backend {
        guid: (&GUID as *const [u8; 16]).cast_mut(),
        iface: BackendInterface {
            get_name: Some(backend_get_name),
            free: Some(backend_free),
            set_tensor_async: if spec.async_ { Some(backend_set_tensor_async) } else { None },
            get_tensor_async: if spec.async_ { Some(backend_get_tensor_async) } else { None },
            set_tensor_2d_async: None,
            get_tensor_2d_async: None,
            cpy_tensor_async: if spec.async_ { Some(backend_cpy_tensor_async) } else { None },
            synchronize: Some(backend_synchronize),
            graph_plan_create: Some(backend_plan_create),
            graph_plan_free: Some(backend_plan_free),
            graph_plan_update: Some(backend_plan_update),
            graph_plan_compute: Some(backend_plan_compute),
            graph_compute: Some(backend_graph_compute),
            event_record: if spec.events { Some(backend_event_record) } else { None },
            event_wait: if spec.events { Some(backend_event_wait) } else { None },
            graph_optimize: Some(backend_graph_optimize),
        },
        device: dev,
        context: Box::into_raw(ctx).cast(),
    });
    Box::into_raw(backend)
}

unsafe extern "C" fn dev_get_buffer_type(_dev: *mut Device) -> *mut BufferType {
    cpu_buffer_type().as_ptr()
}

unsafe extern "C" fn dev_supports_op(_dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: callers pass a live tensor.
    let op = unsafe { &*op };
    op.op.is_empty() || matches!(op.op, Op::ADD | Op::MUL)
}

unsafe extern "C" fn dev_supports_buft(_dev: *mut Device, buft: *mut BufferType) -> bool {
    buft == cpu_buffer_type().as_ptr()
}

unsafe extern "C" fn dev_event_new(dev: *mut Device) -> *mut Event {
    let ctx = Box::new(EventCtx { recorded: AtomicBool::new(false) });
    Box::into_raw(Box::new(Event { device: dev, context: Box::into_raw(ctx).cast() }))
}

unsafe extern "C" fn dev_event_free(_dev: *mut Device, event: *mut Event) {
    // SAFETY: events come from dev_event_new and are freed once.
    unsafe {
        let event = Box::from_raw(event);
        drop(Box::from_raw(event.context.cast::<EventCtx>()));
    }
}

unsafe extern "C" fn dev_event_synchronize(_dev: *mut Device, event: *mut Event) {
    // SAFETY: a live event from dev_event_new.
    let ctx = unsafe { &*(*event).context.cast::<EventCtx>() };
    assert!(ctx.recorded.load(Ordering::SeqCst), "synchronizing an event that was never recorded");
}

unsafe extern "C" fn backend_get_name(backend: *mut Backend) -> *const c_char {
    // SAFETY: a live test backend, whose device is a test device.
    dev_ctx(unsafe { (*backend).device }).name.as_ptr()
}

unsafe extern "C" fn backend_free(backend: *mut Backend) {
    // SAFETY: test backends come from dev_init_backend and are freed once.
    unsafe {
        let backend = Box::from_raw(backend);
        drop(Box::from_raw(backend.context.cast::<BackendCtx>()));
    }
}

unsafe extern "C" fn backend_set_tensor_async(
    backend: *mut Backend,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    bump(&backend_ctx(backend).counters.async_sets);
    // SAFETY: the dispatcher checked the range; `data` holds `size` bytes.
    let (t, bytes) =
        unsafe { (TensorPtr::from_raw(tensor).expect("tensor"), std::slice::from_raw_parts(data.cast::<u8>(), size)) };
    buffer::tensor_set(t, bytes, offset);
}

unsafe extern "C" fn backend_get_tensor_async(
    backend: *mut Backend,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    bump(&backend_ctx(backend).counters.async_gets);
    // SAFETY: as in `backend_set_tensor_async`, with `data` writable.
    let (t, bytes) = unsafe {
        (
            TensorPtr::from_raw(tensor.cast_mut()).expect("tensor"),
            std::slice::from_raw_parts_mut(data.cast::<u8>(), size),
        )
    };
    buffer::tensor_get(t, bytes, offset);
}

unsafe extern "C" fn backend_cpy_tensor_async(
    _src_backend: *mut Backend,
    dst_backend: *mut Backend,
    src: *const Tensor,
    dst: *mut Tensor,
) -> bool {
    bump(&backend_ctx(dst_backend).counters.async_copies);
    // SAFETY: live tensors passed by the dispatcher.
    let (s, d) = unsafe { (TensorPtr::from_raw(src.cast_mut()).expect("src"), TensorPtr::from_raw(dst).expect("dst")) };
    buffer::tensor_copy(s, d);
    true
}

unsafe extern "C" fn backend_synchronize(backend: *mut Backend) {
    bump(&backend_ctx(backend).counters.syncs);
}

unsafe extern "C" fn backend_plan_create(_backend: *mut Backend, graph: *const Graph) -> GraphPlan {
    Box::into_raw(Box::new(Plan { graph })).cast()
}

unsafe extern "C" fn backend_plan_free(_backend: *mut Backend, plan: GraphPlan) {
    // SAFETY: plans come from backend_plan_create and are freed once.
    drop(unsafe { Box::from_raw(plan.cast::<Plan>()) });
}

unsafe extern "C" fn backend_plan_update(_backend: *mut Backend, plan: GraphPlan, graph: *const Graph) {
    // SAFETY: a live plan from backend_plan_create.
    unsafe { (*plan.cast::<Plan>()).graph = graph };
}

unsafe extern "C" fn backend_plan_compute(backend: *mut Backend, plan: GraphPlan) -> Status {
    bump(&backend_ctx(backend).counters.plan_computes);
    // SAFETY: a live plan whose graph is still alive (the test keeps it).
    unsafe { compute(backend, &*(*plan.cast::<Plan>()).graph) }
}

unsafe extern "C" fn backend_graph_compute(backend: *mut Backend, graph: *mut Graph) -> Status {
    bump(&backend_ctx(backend).counters.computes);
    // SAFETY: a live graph passed by the dispatcher.
    unsafe { compute(backend, &*graph) }
}

unsafe extern "C" fn backend_graph_optimize(
    backend: *mut Backend,
    _graph: *mut Graph,
    _params: *mut super::interface::GraphOptimizeParams,
) {
    bump(&backend_ctx(backend).counters.optimizes);
}

unsafe extern "C" fn backend_event_record(backend: *mut Backend, event: *mut Event) {
    bump(&backend_ctx(backend).counters.records);
    // SAFETY: a live event from dev_event_new.
    unsafe { (*(*event).context.cast::<EventCtx>()).recorded.store(true, Ordering::SeqCst) };
}

unsafe extern "C" fn backend_event_wait(backend: *mut Backend, _event: *mut Event) {
    bump(&backend_ctx(backend).counters.waits);
}

fn f32s<'a>(t: &Tensor) -> &'a mut [f32] {
    assert!(t.type_ == Type::F32 && t.is_contiguous(), "test backends compute contiguous F32 only");
    // SAFETY: an allocated contiguous F32 tensor in host memory holds nelements floats.
    unsafe { std::slice::from_raw_parts_mut(t.data.cast::<f32>(), t.nelements() as usize) }
}

/// ADD and MUL of same-shaped tensors, plus the backend's bias; other ops are metadata only.
///
/// # Safety
/// `backend` is a live test backend and every node's sources are allocated in host memory.
unsafe fn compute(backend: *mut Backend, graph: &Graph) -> Status {
    let bias = backend_ctx(backend).bias;
    for node in graph.nodes() {
        let f: fn(f32, f32) -> f32 = match node.op {
            Op::ADD => |a, b| a + b,
            Op::MUL => |a, b| a * b,
            _ => continue,
        };
        let (a, b) = (node.src(0).expect("src0"), node.src(1).expect("src1"));
        let (a, b) = (f32s(&a).to_vec(), f32s(&b).to_vec());
        for ((d, a), b) in f32s(&node).iter_mut().zip(a).zip(b) {
            *d = f(a, b) + bias;
        }
    }
    Status::SUCCESS
}
