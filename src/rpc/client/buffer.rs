//! A buffer on a server: the client holds its handle and connection, and every data operation
//! becomes one request. The base address is the server's, fetched once: tensor addresses
//! are computed from it locally and sent back as they are.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use super::connection::{Connection, same};
use crate::backend::buffer::BufferPtr;
use crate::backend::interface::BufferUsage;
use crate::backend::traits::Buffer;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::rpc::wire::{Command, HASH_THRESHOLD, WireTensor, Writer, fnv1a};

/// A buffer on a server.
pub struct RpcBuffer {
    pub conn: Arc<Connection>,
    /// The server's handle of the buffer.
    pub remote: u64,
    base: OnceLock<u64>,
}

impl RpcBuffer {
    pub fn new(conn: Arc<Connection>, remote: u64) -> RpcBuffer {
        RpcBuffer { conn, remote, base: OnceLock::new() }
    }
}

/// The RPC buffer `tensor` lives in, if it lives in one.
pub fn rpc_buffer_of<'a>(tensor: &Tensor) -> Option<&'a RpcBuffer> {
    // SAFETY: a tensor's buffer is null or live.
    unsafe { BufferPtr::from_raw(tensor.buffer.cast()) }?.downcast::<RpcBuffer>()
}

/// The usage of the buffer `tensor` lives in (`ANY` for none).
pub fn usage_of(tensor: &Tensor) -> BufferUsage {
    // SAFETY: a tensor's buffer is null or live.
    unsafe { BufferPtr::from_raw(tensor.buffer.cast()) }.map_or(BufferUsage::ANY, BufferPtr::usage)
}

/// Describes `tensor` for a request to `conn`'s server: its placement goes along when it lives
/// in a buffer of that server (any server when `conn` is `None`), else buffer and data are 0.
pub fn describe(tensor: &Tensor, conn: Option<&Arc<Connection>>) -> WireTensor {
    let placement = rpc_buffer_of(tensor)
        .filter(|ctx| conn.is_none_or(|c| same(c, &ctx.conn)))
        .map(|ctx| (ctx.remote, tensor.data as u64));
    WireTensor::describe(tensor, placement)
}

/// Quantized rows that are not a multiple of 512 values may need padding on the server (its
/// CUDA buffers pad them), so only those tensors are initialized there; the rest need nothing.
pub fn needs_remote_layout(tensor: &Tensor) -> bool {
    tensor.type_.is_quantized() && tensor.ne[0] % 512 != 0 && tensor.view_src.is_null()
}

/// Uploads `data` into `tensor` at `offset`. Weights above the threshold are offered by hash
/// first: a server with a file cache that holds them loads them itself.
pub fn upload(conn: &Arc<Connection>, tensor: &Tensor, usage: BufferUsage, data: &[u8], offset: usize) {
    let described = describe(tensor, None);
    let mut cache_flag = 0;
    if data.len() > HASH_THRESHOLD && usage == BufferUsage::WEIGHTS {
        let mut w = Writer::with_capacity(WireTensor::SIZE + 16);
        w.tensor(&described).u64(offset as u64).u64(fnv1a(data));
        let [found] = conn.call_for(Command::SetTensorHash, &w.into_bytes());
        if found != 0 {
            return;
        }
        // not in the server's cache: send the bytes and ask it to keep them
        cache_flag = 1;
    }
    let mut w = Writer::with_capacity(WireTensor::SIZE + 9);
    w.tensor(&described).u8(cache_flag).u64(offset as u64);
    conn.send_parts(Command::SetTensor, &[&w.into_bytes(), data]);
}

/// Reads `out.len()` bytes of `tensor` from `offset`.
pub fn download(conn: &Arc<Connection>, tensor: &Tensor, out: &mut [u8], offset: usize) {
    let mut w = Writer::with_capacity(WireTensor::SIZE + 16);
    w.tensor(&describe(tensor, None)).u64(offset as u64).u64(out.len() as u64);
    conn.call(Command::GetTensor, &w.into_bytes(), out);
}

impl Drop for RpcBuffer {
    fn drop(&mut self) {
        self.conn.send(Command::FreeBuffer, &self.remote.to_le_bytes());
    }
}

impl Buffer for RpcBuffer {
    /// The server's base address, asked once.
    fn get_base(&self) -> Option<NonNull<c_void>> {
        let base = *self
            .base
            .get_or_init(|| u64::from_le_bytes(self.conn.call_for(Command::BufferGetBase, &self.remote.to_le_bytes())));
        NonNull::new(base as *mut c_void)
    }

    fn init_tensor(&self, tensor: TensorPtr) -> Status {
        if needs_remote_layout(&tensor) {
            let mut w = Writer::with_capacity(WireTensor::SIZE);
            w.tensor(&describe(&tensor, None));
            self.conn.send(Command::InitTensor, &w.into_bytes());
        }
        Status::SUCCESS
    }

    fn memset_tensor(&self, tensor: TensorPtr, value: u8, offset: usize, size: usize) {
        let mut w = Writer::with_capacity(WireTensor::SIZE + 17);
        w.tensor(&describe(&tensor, None)).u64(offset as u64).u64(size as u64).u8(value);
        self.conn.send(Command::MemsetTensor, &w.into_bytes());
    }

    fn set_tensor(&self, tensor: TensorPtr, data: &[u8], offset: usize) {
        upload(&self.conn, &tensor, usage_of(&tensor), data, offset);
    }

    fn get_tensor(&self, tensor: TensorPtr, data: &mut [u8], offset: usize) {
        download(&self.conn, &tensor, data, offset);
    }

    /// Copies between two buffers of the same server happen there; anything else is the
    /// caller's to do through host memory.
    fn cpy_tensor(&self, src: TensorPtr, dst: TensorPtr) -> bool {
        let Some(from) = rpc_buffer_of(&src) else { return false };
        if !same(&from.conn, &self.conn) {
            return false;
        }
        let mut w = Writer::with_capacity(2 * WireTensor::SIZE);
        w.tensor(&describe(&src, None)).tensor(&describe(&dst, None));
        let [copied] = self.conn.call_for(Command::CopyTensor, &w.into_bytes());
        copied != 0
    }

    fn clear(&self, value: u8) {
        let mut w = Writer::with_capacity(9);
        w.u64(self.remote).u8(value);
        self.conn.send(Command::BufferClear, &w.into_bytes());
    }
}
