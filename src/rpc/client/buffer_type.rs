//! One buffer type per server device (`"RPC<device>[<endpoint>]"`), made on first request and
//! kept for the life of the process, as the reference keeps them. Its alignment and largest
//! buffer are asked once, when it is made.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::{LazyLock, Mutex};

use super::buffer::{RpcBuffer, needs_remote_layout};
use super::connection::Connection;
use crate::backend::adapter::{leak_buffer_type, new_buffer};
use crate::backend::buffer::{BufferPtr, BufferTypePtr, op_alloc_size_may_expand};
use crate::backend::device::DevicePtr;
use crate::backend::traits::BufferType;
use crate::core::tensor::{MAX_DIMS, MAX_OP_PARAMS, MAX_SRC, TensorPtr};
use crate::rpc::wire::{Command, WireTensor, Writer};

pub struct RpcBufferType {
    endpoint: String,
    device: u32,
    name: CString,
    alignment: usize,
    max_size: usize,
}

/// A buffer type handle, kept in a process-wide map (the types are never freed).
struct Leaked(BufferTypePtr);
// SAFETY: buffer types are immutable after they are made and may be used from any thread.
unsafe impl Send for Leaked {}

static TYPES: LazyLock<Mutex<HashMap<String, Leaked>>> = LazyLock::new(Mutex::default);

/// `ggml_backend_rpc_buffer_type`: the buffer type of `device` on the server at `endpoint`,
/// belonging to `dev`, the client's device for it; `None` (with the reason logged) when the
/// server cannot be reached.
pub fn buffer_type(endpoint: &str, device: u32, dev: DevicePtr) -> Option<BufferTypePtr> {
    let name = format!("RPC{device}[{endpoint}]");
    let mut types = TYPES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = types.get(&name) {
        return Some(t.0);
    }
    let conn = Connection::open(endpoint).ok()?;
    let request = device.to_le_bytes();
    let alignment = u64::from_le_bytes(conn.call_for(Command::GetAlignment, &request)) as usize;
    let max_size = u64::from_le_bytes(conn.call_for(Command::GetMaxSize, &request)) as usize;
    let buft = RpcBufferType {
        endpoint: endpoint.to_owned(),
        device,
        name: CString::new(name.clone()).unwrap_or_default(),
        alignment,
        max_size,
    };
    let handle = leak_buffer_type(dev.as_ptr(), Box::new(buft));
    types.insert(name, Leaked(handle));
    Some(handle)
}

/// Whether `buft` is the buffer type of `device` at `endpoint`.
pub fn is_of(buft: BufferTypePtr, endpoint: &str, device: u32) -> bool {
    buft.downcast::<RpcBufferType>().is_some_and(|b| b.endpoint == endpoint && b.device == device)
}

/// What a remote allocation size depends on. Source shapes are left out on purpose, as the
/// reference leaves them out: the size a reservation graph gets is an upper bound for later
/// graphs, and keying on growing sources would make every batch ask the server again.
#[derive(PartialEq, Eq, Hash)]
struct SizeKey {
    endpoint: String,
    device: u32,
    type_: i32,
    op: i32,
    op_params: [i32; MAX_OP_PARAMS / 4],
    ne: [i64; MAX_DIMS],
}

static SIZES: LazyLock<Mutex<HashMap<SizeKey, usize>>> = LazyLock::new(Mutex::default);

impl BufferType for RpcBufferType {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn get_alignment(&self) -> usize {
        self.alignment
    }

    fn get_max_size(&self) -> usize {
        self.max_size
    }

    fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
        let conn = match Connection::open(&self.endpoint) {
            Ok(conn) => conn,
            Err(e) => {
                crate::log_error!("rpc: cannot reach {} to allocate {} bytes: {}\n", self.endpoint, size, e);
                return None;
            }
        };
        let mut w = Writer::with_capacity(12);
        w.u32(self.device).u64(size as u64);
        let reply: [u8; 16] = conn.call_for(Command::AllocBuffer, &w.into_bytes());
        let remote = u64::from_le_bytes(reply[..8].try_into().unwrap_or_default());
        let remote_size = u64::from_le_bytes(reply[8..].try_into().unwrap_or_default());
        if remote == 0 {
            return None;
        }
        Some(new_buffer(this, remote_size as usize, Box::new(RpcBuffer::new(conn, remote))))
    }

    fn get_alloc_size(&self, tensor: TensorPtr) -> usize {
        let (ctx, tensor): (&RpcBufferType, &crate::core::tensor::Tensor) = (self, &tensor);
        if !needs_remote_layout(tensor) && !op_alloc_size_may_expand(tensor.op) {
            return tensor.nbytes();
        }
        let key = SizeKey {
            endpoint: ctx.endpoint.clone(),
            device: ctx.device,
            type_: tensor.type_.0,
            op: tensor.op.0,
            op_params: tensor.op_params,
            ne: tensor.ne,
        };
        if let Some(&size) = SIZES.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return size;
        }
        // the size may depend on the sources, so they travel too
        let mut w = Writer::with_capacity(4 + (1 + MAX_SRC) * WireTensor::SIZE);
        w.u32(ctx.device).tensor(&super::buffer::describe(tensor, None));
        for src in tensor.src {
            // SAFETY: a tensor's sources are null or live.
            let described = unsafe { src.as_ref() }.map_or(WireTensor::NONE, |s| super::buffer::describe(s, None));
            w.tensor(&described);
        }
        let size = u64::from_le_bytes(
            Connection::open_or_abort(&ctx.endpoint).call_for(Command::GetAllocSize, &w.into_bytes()),
        ) as usize;
        SIZES.lock().unwrap_or_else(|e| e.into_inner()).insert(key, size);
        size
    }
}
