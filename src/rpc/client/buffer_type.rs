//! One buffer type per server device (`"RPC<device>[<endpoint>]"`), made on first request and
//! kept for the life of the process, as the reference keeps them. Its alignment and largest
//! buffer are asked once, when it is made.

use std::collections::HashMap;
use std::ffi::{CString, c_char};
use std::sync::{LazyLock, Mutex};

use super::buffer::{BufferContext, INTERFACE, needs_remote_layout};
use super::connection::Connection;
use super::registry;
use crate::backend::buffer::{BufferPtr, BufferTypePtr, op_alloc_size_may_expand};
use crate::backend::interface::{Buffer, BufferType, BufferTypeInterface};
use crate::core::tensor::{MAX_DIMS, MAX_OP_PARAMS, MAX_SRC, Tensor};
use crate::rpc::wire::{Command, WireTensor, Writer};

struct TypeContext {
    endpoint: String,
    device: u32,
    name: CString,
    alignment: usize,
    max_size: usize,
}

const INTERFACE_TYPE: BufferTypeInterface = BufferTypeInterface {
    get_name: Some(get_name),
    alloc_buffer: Some(alloc_buffer),
    get_alignment: Some(get_alignment),
    get_max_size: Some(get_max_size),
    get_alloc_size: Some(get_alloc_size),
    is_host: None,
};

/// A buffer type handle, kept in a process-wide map (the types are never freed).
struct Leaked(BufferTypePtr);
// SAFETY: buffer types are immutable after they are made and may be used from any thread.
unsafe impl Send for Leaked {}

static TYPES: LazyLock<Mutex<HashMap<String, Leaked>>> = LazyLock::new(Mutex::default);

/// `ggml_backend_rpc_buffer_type`: the buffer type of `device` on the server at `endpoint`;
/// `None` (with the reason logged) when the server cannot be reached or has no such device.
pub fn buffer_type(endpoint: &str, device: u32) -> Option<BufferTypePtr> {
    let name = format!("RPC{device}[{endpoint}]");
    let mut types = TYPES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = types.get(&name) {
        return Some(t.0);
    }
    let dev = registry::device(endpoint, device)?;
    let conn = Connection::open(endpoint).ok()?;
    let request = device.to_le_bytes();
    let alignment = u64::from_le_bytes(conn.call_for(Command::GetAlignment, &request)) as usize;
    let max_size = u64::from_le_bytes(conn.call_for(Command::GetMaxSize, &request)) as usize;
    let context = Box::new(TypeContext {
        endpoint: endpoint.to_owned(),
        device,
        name: CString::new(name.clone()).unwrap_or_default(),
        alignment,
        max_size,
    });
    let buft = Box::new(BufferType { iface: INTERFACE_TYPE, device: dev, context: Box::into_raw(context).cast() });
    // SAFETY: just leaked; never freed.
    let handle = unsafe { BufferTypePtr::from_raw(Box::into_raw(buft)) }?;
    types.insert(name, Leaked(handle));
    Some(handle)
}

/// Whether `buft` is the buffer type of `device` at `endpoint`.
pub fn is_of(buft: BufferTypePtr, endpoint: &str, device: u32) -> bool {
    // SAFETY: a buffer type handle points to a live type.
    let iface = unsafe { (*buft.as_ptr()).iface };
    let ours = iface.get_name.is_some_and(|f| std::ptr::fn_addr_eq(f, get_name as unsafe extern "C" fn(_) -> _));
    // SAFETY: ours carry a TypeContext, alive for the process.
    ours && unsafe { context(buft.as_ptr()) }.is_some_and(|c| c.endpoint == endpoint && c.device == device)
}

/// # Safety
/// `buft` is one of this file's types.
unsafe fn context<'a>(buft: *mut BufferType) -> Option<&'a TypeContext> {
    // SAFETY: the caller's contract: the context is a leaked TypeContext.
    unsafe { (*buft).context.cast::<TypeContext>().as_ref() }
}

/// # Safety
/// As [`context`].
unsafe fn ours<'a>(buft: *mut BufferType) -> &'a TypeContext {
    // SAFETY: the caller's contract.
    unsafe { context(buft) }.unwrap_or_else(|| unreachable!("RPC buffer types always carry a context"))
}

unsafe extern "C" fn get_name(buft: *mut BufferType) -> *const c_char {
    // SAFETY: called by the type's own table.
    unsafe { ours(buft) }.name.as_ptr()
}

unsafe extern "C" fn get_alignment(buft: *mut BufferType) -> usize {
    // SAFETY: called by the type's own table.
    unsafe { ours(buft) }.alignment
}

unsafe extern "C" fn get_max_size(buft: *mut BufferType) -> usize {
    // SAFETY: called by the type's own table.
    unsafe { ours(buft) }.max_size
}

unsafe extern "C" fn alloc_buffer(buft: *mut BufferType, size: usize) -> *mut Buffer {
    // SAFETY: called by the type's own table.
    let ctx = unsafe { ours(buft) };
    let conn = match Connection::open(&ctx.endpoint) {
        Ok(conn) => conn,
        Err(e) => {
            crate::log_error!("rpc: cannot reach {} to allocate {} bytes: {}\n", ctx.endpoint, size, e);
            return std::ptr::null_mut();
        }
    };
    let mut w = Writer::with_capacity(12);
    w.u32(ctx.device).u64(size as u64);
    let reply: [u8; 16] = conn.call_for(Command::AllocBuffer, &w.into_bytes());
    let remote = u64::from_le_bytes(reply[..8].try_into().unwrap_or_default());
    let remote_size = u64::from_le_bytes(reply[8..].try_into().unwrap_or_default());
    if remote == 0 {
        return std::ptr::null_mut();
    }
    let context = Box::into_raw(Box::new(BufferContext::new(conn, remote)));
    BufferPtr::new(buft, INTERFACE, context.cast(), remote_size as usize).as_ptr()
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

unsafe extern "C" fn get_alloc_size(buft: *mut BufferType, tensor: *const Tensor) -> usize {
    // SAFETY: called by the type's own table with a live tensor.
    let (ctx, tensor) = unsafe { (ours(buft), &*tensor) };
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
    let size =
        u64::from_le_bytes(Connection::open_or_abort(&ctx.endpoint).call_for(Command::GetAllocSize, &w.into_bytes()))
            as usize;
    SIZES.lock().unwrap_or_else(|e| e.into_inner()).insert(key, size);
    size
}
