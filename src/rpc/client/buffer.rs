//! A buffer on a server: the client holds its handle and connection, and every data operation
//! becomes one request. The base address is the server's, fetched once: tensor addresses
//! are computed from it locally and sent back as they are.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use super::connection::{Connection, same};
use crate::backend::interface::{Buffer, BufferInterface, BufferUsage};
use crate::core::status::Status;
use crate::core::tensor::Tensor;
use crate::rpc::wire::{Command, HASH_THRESHOLD, WireTensor, Writer, fnv1a};

pub struct BufferContext {
    pub conn: Arc<Connection>,
    /// The server's handle of the buffer.
    pub remote: u64,
    base: OnceLock<u64>,
}

impl BufferContext {
    pub fn new(conn: Arc<Connection>, remote: u64) -> BufferContext {
        BufferContext { conn, remote, base: OnceLock::new() }
    }
}

pub const INTERFACE: BufferInterface = BufferInterface {
    free_buffer: Some(free_buffer),
    get_base: Some(get_base),
    init_tensor: Some(init_tensor),
    memset_tensor: Some(memset_tensor),
    set_tensor: Some(set_tensor),
    get_tensor: Some(get_tensor),
    set_tensor_2d: None,
    get_tensor_2d: None,
    cpy_tensor: Some(cpy_tensor),
    clear: Some(clear),
    reset: None,
};

/// The RPC context of `buffer`, when it is one of ours.
///
/// # Safety
/// `buffer` is null or a live buffer.
pub unsafe fn context<'a>(buffer: *const Buffer) -> Option<&'a BufferContext> {
    // SAFETY: the caller's contract; our buffers' context is the BufferContext made in
    // `buffer_type::alloc_buffer`, alive until `free_buffer`.
    unsafe { crate::backend::buffer::context_of(buffer, free_buffer) }
}

/// Describes `tensor` for a request to `conn`'s server: its placement goes along when it lives
/// in a buffer of that server (any server when `conn` is `None`), else buffer and data are 0.
pub fn describe(tensor: &Tensor, conn: Option<&Arc<Connection>>) -> WireTensor {
    // SAFETY: a tensor's buffer is null or live.
    let placement = unsafe { context(tensor.buffer.cast()) }
        .filter(|ctx| conn.is_none_or(|c| same(c, &ctx.conn)))
        .map(|ctx| (ctx.remote, tensor.data as u64));
    WireTensor::describe(tensor, placement)
}

/// # Safety
/// `buffer` is one of ours (the table is only installed on our buffers).
unsafe fn ours<'a>(buffer: *mut Buffer) -> &'a BufferContext {
    // SAFETY: the caller's contract.
    unsafe { context(buffer) }.unwrap_or_else(|| unreachable!("the RPC buffer table is only on RPC buffers"))
}

unsafe extern "C" fn free_buffer(buffer: *mut Buffer) {
    // SAFETY: called once, by the buffer's own table, while the buffer is live.
    let ctx = unsafe { Box::from_raw((*buffer).context.cast::<BufferContext>()) };
    ctx.conn.send(Command::FreeBuffer, &ctx.remote.to_le_bytes());
}

unsafe extern "C" fn get_base(buffer: *mut Buffer) -> *mut c_void {
    // SAFETY: called by the buffer's own table.
    let ctx = unsafe { ours(buffer) };
    let base = *ctx
        .base
        .get_or_init(|| u64::from_le_bytes(ctx.conn.call_for(Command::BufferGetBase, &ctx.remote.to_le_bytes())));
    base as *mut c_void
}

/// Quantized rows that are not a multiple of 512 values may need padding on the server (its
/// CUDA buffers pad them), so only those tensors are initialized there; the rest need nothing.
pub fn needs_remote_layout(tensor: &Tensor) -> bool {
    tensor.type_.is_quantized() && tensor.ne[0] % 512 != 0 && tensor.view_src.is_null()
}

unsafe extern "C" fn init_tensor(buffer: *mut Buffer, tensor: *mut Tensor) -> Status {
    // SAFETY: called by the buffer's own table with a live tensor.
    let (ctx, tensor) = unsafe { (ours(buffer), &*tensor) };
    if needs_remote_layout(tensor) {
        let mut w = Writer::with_capacity(WireTensor::SIZE);
        w.tensor(&describe(tensor, None));
        ctx.conn.send(Command::InitTensor, &w.into_bytes());
    }
    Status::SUCCESS
}

unsafe extern "C" fn memset_tensor(buffer: *mut Buffer, tensor: *mut Tensor, value: u8, offset: usize, size: usize) {
    // SAFETY: as in `init_tensor`.
    let (ctx, tensor) = unsafe { (ours(buffer), &*tensor) };
    let mut w = Writer::with_capacity(WireTensor::SIZE + 17);
    w.tensor(&describe(tensor, None)).u64(offset as u64).u64(size as u64).u8(value);
    ctx.conn.send(Command::MemsetTensor, &w.into_bytes());
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

unsafe extern "C" fn set_tensor(
    buffer: *mut Buffer,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: called by the buffer's own table with a live tensor and `size` readable bytes.
    let (ctx, tensor, data, usage) =
        unsafe { (ours(buffer), &*tensor, std::slice::from_raw_parts(data.cast::<u8>(), size), (*buffer).usage) };
    upload(&ctx.conn, tensor, usage, data, offset);
}

unsafe extern "C" fn get_tensor(
    buffer: *mut Buffer,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: called by the buffer's own table with a live tensor and `size` writable bytes.
    let (ctx, tensor, out) =
        unsafe { (ours(buffer), &*tensor, std::slice::from_raw_parts_mut(data.cast::<u8>(), size)) };
    download(&ctx.conn, tensor, out, offset);
}

/// Copies between two buffers of the same server happen there; anything else is the
/// caller's to do through host memory.
unsafe extern "C" fn cpy_tensor(buffer: *mut Buffer, src: *const Tensor, dst: *mut Tensor) -> bool {
    // SAFETY: called by the buffer's own table with live tensors, `dst` in this buffer.
    let (ctx, src, dst) = unsafe { (ours(buffer), &*src, &*dst) };
    // SAFETY: a tensor's buffer is null or live.
    let Some(src_ctx) = (unsafe { context(src.buffer.cast()) }) else { return false };
    if !same(&src_ctx.conn, &ctx.conn) {
        return false;
    }
    let mut w = Writer::with_capacity(2 * WireTensor::SIZE);
    w.tensor(&describe(src, None)).tensor(&describe(dst, None));
    let [copied] = ctx.conn.call_for(Command::CopyTensor, &w.into_bytes());
    copied != 0
}

unsafe extern "C" fn clear(buffer: *mut Buffer, value: u8) {
    // SAFETY: called by the buffer's own table.
    let ctx = unsafe { ours(buffer) };
    let mut w = Writer::with_capacity(9);
    w.u64(ctx.remote).u8(value);
    ctx.conn.send(Command::BufferClear, &w.into_bytes());
}
