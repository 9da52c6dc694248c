//! A backend (stream) on a server device: graphs are sent to the server and computed there;
//! a graph whose uid was the last one sent to the device is recomputed from the server's copy.

use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::buffer::{describe, download, upload, usage_of};
use super::connection::Connection;
use crate::backend::adapter::new_backend;
use crate::backend::backend::{BackendPtr, EventPtr};
use crate::backend::device::DevicePtr;
use crate::backend::guid::StaticGuid;
use crate::backend::traits::Backend;
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;
use crate::rpc::wire::{Command, WireTensor, Writer, address};

/// A backend on device `index` of a server.
struct RpcBackend {
    conn: Arc<Connection>,
    index: u32,
    /// Shared with the device and its other backends (see `RpcDevice`).
    last_graph_uid: Arc<AtomicU64>,
    name: CString,
}

/// The RPC backends' GUID (`ggml_backend_rpc_guid`).
static GUID: StaticGuid =
    StaticGuid::new([0x99, 0x68, 0x5b, 0x6c, 0xd2, 0x83, 0x3d, 0x24, 0x25, 0x36, 0x72, 0xe1, 0x5b, 0x0e, 0x14, 0x03]);

/// `ggml_backend_rpc_init`: a backend of `device`, device `index` of the server at `endpoint`;
/// `None` (logged) when the server cannot be reached.
pub fn new(device: DevicePtr, endpoint: &str, index: u32, last_graph_uid: Arc<AtomicU64>) -> Option<BackendPtr> {
    let conn = Connection::open(endpoint).ok()?;
    let name = CString::new(format!("RPC{index}[{endpoint}]")).unwrap_or_default();
    Some(new_backend(GUID.as_ptr(), device, Box::new(RpcBackend { conn, index, last_graph_uid, name })))
}

/// `ggml_backend_is_rpc`.
pub fn is_rpc(backend: BackendPtr) -> bool {
    GUID.names(backend)
}

impl Backend for RpcBackend {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn set_tensor_async(&mut self, tensor: TensorPtr, data: &[u8], offset: usize) -> bool {
        upload(&self.conn, &tensor, usage_of(&tensor), data, offset);
        true
    }

    fn get_tensor_async(&mut self, tensor: TensorPtr, data: &mut [u8], offset: usize) -> bool {
        download(&self.conn, &tensor, data, offset);
        true
    }

    /// Every call has completed on the connection by the time it returns (see `connection`).
    fn synchronize(&mut self) {}

    fn event_record(&mut self, _event: EventPtr) {}

    fn event_wait(&mut self, _event: EventPtr) {}

    fn graph_compute(&mut self, graph: &mut Graph) -> Status {
        if graph.n_nodes <= 0 {
            return Status::SUCCESS;
        }
        let last = self.last_graph_uid.swap(graph.uid, Ordering::Relaxed);
        if graph.uid != 0 && last == graph.uid {
            self.conn.send(Command::GraphRecompute, &self.index.to_le_bytes());
        } else {
            self.conn.send(Command::GraphCompute, &serialize_graph(self.index, graph, &self.conn));
        }
        Status::SUCCESS
    }
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
