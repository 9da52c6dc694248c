//! A backend (stream) on a server device: graphs are sent to the server and computed there;
//! a graph whose uid was the last one sent to the device is recomputed from the server's copy.

use std::collections::HashSet;
use std::ffi::{CString, c_char, c_void};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::buffer::{describe, download, upload};
use super::connection::Connection;
use super::{device, registry};
use crate::backend::backend::BackendPtr;
use crate::backend::guid::StaticGuid;
use crate::backend::interface::{Backend, BackendInterface, BufferUsage, Event};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::rpc::wire::{Command, WireTensor, Writer, address};

struct BackendContext {
    conn: Arc<Connection>,
    device: *mut crate::backend::interface::Device,
    name: CString,
}

/// The RPC backends' GUID (`ggml_backend_rpc_guid`).
static GUID: StaticGuid =
    StaticGuid::new([0x99, 0x68, 0x5b, 0x6c, 0xd2, 0x83, 0x3d, 0x24, 0x25, 0x36, 0x72, 0xe1, 0x5b, 0x0e, 0x14, 0x03]);

const INTERFACE: BackendInterface = BackendInterface {
    get_name: Some(get_name),
    free: Some(free),
    set_tensor_async: Some(set_tensor_async),
    get_tensor_async: Some(get_tensor_async),
    set_tensor_2d_async: None,
    get_tensor_2d_async: None,
    cpy_tensor_async: None,
    synchronize: Some(synchronize),
    graph_plan_create: None,
    graph_plan_free: None,
    graph_plan_update: None,
    graph_plan_compute: None,
    graph_compute: Some(graph_compute),
    event_record: Some(event_record),
    event_wait: Some(event_wait),
    graph_optimize: None,
};

/// `ggml_backend_rpc_init`: a backend on device `index` of the server at `endpoint`; `None`
/// (logged) when the server cannot be reached or has no such device.
pub fn init(endpoint: &str, index: u32) -> Option<*mut Backend> {
    let device = registry::device(endpoint, index)?;
    let conn = Connection::open(endpoint).ok()?;
    let name = CString::new(format!("RPC{index}[{endpoint}]")).unwrap_or_default();
    let context = Box::into_raw(Box::new(BackendContext { conn, device, name }));
    let backend = Box::new(Backend { guid: GUID.as_ptr(), iface: INTERFACE, device, context: context.cast() });
    Some(Box::into_raw(backend))
}

/// `ggml_backend_is_rpc`.
pub fn is_rpc(backend: BackendPtr) -> bool {
    GUID.names(backend)
}

/// # Safety
/// `backend` is one made by [`init`] and not yet freed.
unsafe fn context<'a>(backend: *mut Backend) -> &'a BackendContext {
    // SAFETY: the caller's contract: the context is the boxed BackendContext.
    unsafe { &*(*backend).context.cast::<BackendContext>() }
}

unsafe extern "C" fn get_name(backend: *mut Backend) -> *const c_char {
    // SAFETY: called by the backend's own table.
    unsafe { context(backend) }.name.as_ptr()
}

unsafe extern "C" fn free(backend: *mut Backend) {
    // SAFETY: called once by the backend's own table; both boxes were made in `init`.
    unsafe {
        drop(Box::from_raw((*backend).context.cast::<BackendContext>()));
        drop(Box::from_raw(backend));
    }
}

unsafe extern "C" fn set_tensor_async(
    backend: *mut Backend,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: called by the backend's own table with a live, allocated tensor and `size`
    // readable bytes.
    let (ctx, tensor, data) =
        unsafe { (context(backend), &*tensor, std::slice::from_raw_parts(data.cast::<u8>(), size)) };
    // SAFETY: an allocated tensor's buffer is live.
    let usage = unsafe { tensor.buffer.cast::<crate::backend::interface::Buffer>().as_ref() }
        .map_or(BufferUsage::ANY, |b| b.usage);
    upload(&ctx.conn, tensor, usage, data, offset);
}

unsafe extern "C" fn get_tensor_async(
    backend: *mut Backend,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: called by the backend's own table with a live tensor and `size` writable bytes.
    let (ctx, tensor, out) =
        unsafe { (context(backend), &*tensor, std::slice::from_raw_parts_mut(data.cast::<u8>(), size)) };
    download(&ctx.conn, tensor, out, offset);
}

/// Every call has completed on the connection by the time it returns (see `connection`).
unsafe extern "C" fn synchronize(_backend: *mut Backend) {}

unsafe extern "C" fn event_record(_backend: *mut Backend, _event: *mut Event) {}

unsafe extern "C" fn event_wait(_backend: *mut Backend, _event: *mut Event) {}

unsafe extern "C" fn graph_compute(backend: *mut Backend, cgraph: *mut Graph) -> Status {
    // SAFETY: called by the backend's own table with a live graph; the device is ours.
    let (ctx, graph) = unsafe { (context(backend), &*cgraph) };
    // SAFETY: as above.
    let dev = unsafe { device::context(ctx.device) };
    if graph.n_nodes <= 0 {
        return Status::SUCCESS;
    }
    let last = dev.last_graph_uid.swap(graph.uid, Ordering::Relaxed);
    if graph.uid != 0 && last == graph.uid {
        ctx.conn.send(Command::GraphRecompute, &dev.index.to_le_bytes());
    } else {
        ctx.conn.send(Command::GraphCompute, &serialize_graph(dev.index, graph, &ctx.conn));
    }
    Status::SUCCESS
}

/// `device | n_nodes | node ids | n_tensors | tensors`: every tensor reachable from the nodes
/// through sources and view sources, once, sources before the tensors that use them. Tensors
/// living on another server go with buffer and data 0.
fn serialize_graph(index: u32, graph: &Graph, conn: &Arc<Connection>) -> Vec<u8> {
    let nodes: Vec<TensorPtr> = graph.nodes().collect();
    let mut seen = HashSet::new();
    let mut tensors = Vec::new();
    // depth-first, without recursion: a frame is a tensor and the next of its inputs to visit
    // (the sources in order, then the view source)
    let mut stack: Vec<(TensorPtr, usize)> = Vec::new();
    for &node in &nodes {
        if seen.insert(node) {
            stack.push((node, 0));
        }
        while let Some((tensor, next)) = stack.pop() {
            let inputs = tensor.src.iter().copied().chain(std::iter::once(tensor.view_src));
            // SAFETY: a graph tensor's sources and view source are null or live.
            match inputs.skip(next).enumerate().find_map(|(i, p)| unsafe { TensorPtr::from_raw(p) }.map(|t| (i, t))) {
                Some((i, input)) => {
                    stack.push((tensor, next + i + 1));
                    if seen.insert(input) {
                        stack.push((input, 0));
                    }
                }
                None => {
                    let mut described = describe(&tensor, Some(conn));
                    described.use_count = graph.use_count(tensor.as_ptr());
                    tensors.push(described);
                }
            }
        }
    }
    let mut w = Writer::with_capacity(12 + 8 * nodes.len() + WireTensor::SIZE * tensors.len());
    w.u32(index).u32(nodes.len() as u32);
    for node in &nodes {
        w.u64(address(node));
    }
    w.u32(tensors.len() as u32);
    for t in &tensors {
        w.tensor(t);
    }
    w.into_bytes()
}
