//! A device of a server, as the client sees it: a GPU-type device whose memory is the server's
//! report, whose buffer type allocates there and whose backends compute there. Every op is
//! offered (the server checks what it receives), as in the reference.
//!
//! Calls to a server complete in order on its one connection, so an event is complete when it
//! is recorded: the events exist because the scheduler asks for them, and waiting on one
//! returns at once.

use std::ffi::{CStr, CString};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::{backend, buffer_type};
use crate::backend::adapter::new_event;
use crate::backend::backend::{BackendPtr, EventPtr};
use crate::backend::buffer::BufferTypePtr;
use crate::backend::device::DevicePtr;
use crate::backend::interface::{DevCaps, DevProps, DevType};
use crate::backend::traits::{Device, Event};
use crate::core::tensor::TensorPtr;
use crate::rpc::wire::Command;

pub struct RpcDevice {
    pub endpoint: String,
    /// The device's index on its server.
    pub index: u32,
    name: CString,
    description: CString,
    /// The uid of the last graph sent to this device, shared with its backends: the same uid
    /// again is recomputed on the server from its stored copy instead of being sent.
    last_graph_uid: Arc<AtomicU64>,
}

impl RpcDevice {
    /// Device `index` of the server at `endpoint`, named `"RPC<number>"` and described by the
    /// endpoint.
    pub fn new(endpoint: &str, index: u32, number: u32) -> RpcDevice {
        RpcDevice {
            endpoint: endpoint.to_owned(),
            index,
            name: CString::new(format!("RPC{number}")).unwrap_or_default(),
            description: CString::new(endpoint).unwrap_or_default(),
            last_graph_uid: Arc::new(AtomicU64::new(0)),
        }
    }
}

/// An event of a server's device: complete when recorded (see above).
struct RpcEvent;

impl Event for RpcEvent {
    fn synchronize(&self) {}
}

/// `ggml_backend_rpc_get_device_memory`: the server's `(free, total)`, or zeros (logged) when
/// it cannot be reached.
pub fn memory(endpoint: &str, index: u32) -> (usize, usize) {
    let conn = match super::connection::Connection::open(endpoint) {
        Ok(conn) => conn,
        Err(e) => {
            crate::log_error!("rpc: cannot reach {} for its memory: {}\n", endpoint, e);
            return (0, 0);
        }
    };
    let reply: [u8; 16] = conn.call_for(Command::GetDeviceMemory, &index.to_le_bytes());
    let field = |at: usize| u64::from_le_bytes(reply[at..at + 8].try_into().unwrap_or_default()) as usize;
    (field(0), field(8))
}

impl Device for RpcDevice {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn get_description(&self) -> &CStr {
        &self.description
    }

    fn get_memory(&self) -> (usize, usize) {
        memory(&self.endpoint, self.index)
    }

    /// The protocol does not say what the remote device is; the reference reports a GPU.
    fn get_type(&self) -> DevType {
        DevType::GPU
    }

    fn get_props(&self) -> DevProps {
        let caps =
            DevCaps { async_: true, host_buffer: false, buffer_from_host_ptr: false, events: true, mmap_support: true };
        DevProps::describe(self, caps)
    }

    fn init_backend(&self, this: DevicePtr, _params: Option<&CStr>) -> Option<BackendPtr> {
        backend::new(this, &self.endpoint, self.index, Arc::clone(&self.last_graph_uid))
    }

    fn get_buffer_type(&self, this: DevicePtr) -> Option<BufferTypePtr> {
        buffer_type::buffer_type(&self.endpoint, self.index, this)
    }

    /// Every op: the server checks what it receives.
    fn supports_op(&self, _op: TensorPtr) -> bool {
        true
    }

    fn supports_buft(&self, buft: BufferTypePtr) -> bool {
        buffer_type::is_of(buft, &self.endpoint, self.index)
    }

    fn event_new(&self, this: DevicePtr) -> Option<EventPtr> {
        Some(new_event(this, Box::new(RpcEvent)))
    }
}
