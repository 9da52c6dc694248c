//! The "RPC" registry and one registry per server. The base registry is built in and has no
//! devices of its own; `add_server(endpoint)` asks the server how many devices it serves and
//! returns a registry `"RPC[endpoint]"` listing them, named `"RPC0"`, `"RPC1"`, ... across servers.
//! Every device's `reg` is the base registry, which is how llama.cpp recognizes them.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::{LazyLock, Mutex};

use super::connection::Connection;
use super::device;
use crate::backend::interface::{Device, GGML_BACKEND_API_VERSION, Reg, RegInterface};
use crate::backend::reg::{RegPtr, StaticReg};
use crate::rpc::wire::Command;

static BASE: StaticReg = StaticReg::new(INTERFACE);

const INTERFACE: RegInterface = RegInterface {
    get_name: Some(get_name),
    get_device_count: Some(get_device_count),
    get_device: Some(get_device),
    get_proc_address: Some(get_proc_address),
};

/// A server's registry: its name and devices (the base registry has no context).
struct ServerRegContext {
    name: CString,
    devices: Vec<*mut Device>,
}

/// `ggml_backend_rpc_reg`.
pub fn base() -> RegPtr {
    BASE.handle()
}

pub(super) fn base_ptr() -> *mut Reg {
    BASE.as_ptr()
}

struct Servers {
    regs: HashMap<String, RegPtr>,
    /// Devices are numbered across servers, in the order they were added.
    next_device: u32,
}

static SERVERS: LazyLock<Mutex<Servers>> =
    LazyLock::new(|| Mutex::new(Servers { regs: HashMap::new(), next_device: 0 }));

/// `ggml_backend_rpc_add_server`: the registry of the server at `endpoint`, made on the first
/// call; `None` (with the reason logged) when the server cannot be reached or has no device.
pub fn add_server(endpoint: &str) -> Option<RegPtr> {
    let mut servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&reg) = servers.regs.get(endpoint) {
        return Some(reg);
    }
    let conn = match Connection::open(endpoint) {
        Ok(conn) => conn,
        Err(e) => {
            crate::log_error!("rpc: cannot connect to the RPC server at {}: {}\n", endpoint, e);
            return None;
        }
    };
    let count = u32::from_le_bytes(conn.call_for(Command::DeviceCount, &[]));
    if count == 0 {
        crate::log_error!("rpc: the RPC server at {} serves no device\n", endpoint);
        return None;
    }
    let first = servers.next_device;
    servers.next_device += count;
    let devices = (0..count).map(|i| device::new(endpoint, i, first + i)).collect();
    let name = CString::new(format!("RPC[{endpoint}]")).unwrap_or_default();
    let context = Box::into_raw(Box::new(ServerRegContext { name, devices }));
    let reg = Box::new(Reg { api_version: GGML_BACKEND_API_VERSION, iface: INTERFACE, context: context.cast() });
    // SAFETY: just leaked: a server's registry lives for the process, as in the reference.
    let reg = unsafe { RegPtr::from_raw(Box::into_raw(reg)) }?;
    servers.regs.insert(endpoint.to_owned(), reg);
    Some(reg)
}

/// Device `index` of the server at `endpoint`; `None` (logged) when there is no such device.
pub fn device(endpoint: &str, index: u32) -> Option<*mut Device> {
    let reg = add_server(endpoint)?;
    if usize::try_from(index).is_ok_and(|i| i < reg.dev_count()) {
        return Some(reg.dev_get(index as usize));
    }
    crate::log_error!("rpc: the RPC server at {} has no device {}\n", endpoint, index);
    None
}

/// # Safety
/// `reg` is the base registry or one made by [`add_server`].
unsafe fn context<'a>(reg: *mut Reg) -> Option<&'a ServerRegContext> {
    // SAFETY: the caller's contract: the context is null or a leaked ServerRegContext.
    unsafe { (*reg).context.cast::<ServerRegContext>().as_ref() }
}

unsafe extern "C" fn get_name(reg: *mut Reg) -> *const c_char {
    // SAFETY: called by the registry's own table.
    unsafe { context(reg) }.map_or(c"RPC".as_ptr(), |c| c.name.as_ptr())
}

unsafe extern "C" fn get_device_count(reg: *mut Reg) -> usize {
    // SAFETY: called by the registry's own table.
    unsafe { context(reg) }.map_or(0, |c| c.devices.len())
}

unsafe extern "C" fn get_device(reg: *mut Reg, index: usize) -> *mut Device {
    // SAFETY: called by the registry's own table.
    match unsafe { context(reg) } {
        None => crate::ggml_abort!("the RPC registry lists no devices: add a server with ggml_backend_rpc_add_server"),
        Some(c) => match c.devices.get(index) {
            Some(&d) => d,
            None => {
                crate::ggml_abort!("{} has {} devices, not index {}", c.name.to_string_lossy(), c.devices.len(), index)
            }
        },
    }
}

/// `ggml_backend_rpc_add_server` with its C signature, for the registry's proc address.
///
/// # Safety
/// `endpoint` is NULL (which aborts) or a C string.
pub unsafe extern "C" fn add_server_c(endpoint: *const c_char) -> *mut Reg {
    // SAFETY: the function's contract.
    let endpoint = unsafe { crate::rpc::endpoint_arg(endpoint, "ggml_backend_rpc_add_server") };
    add_server(&endpoint).map_or(std::ptr::null_mut(), RegPtr::as_ptr)
}

unsafe extern "C" fn get_proc_address(_reg: *mut Reg, name: *const c_char) -> *mut c_void {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: non-null names are C strings.
    let name = unsafe { CStr::from_ptr(name) };
    if name == c"ggml_backend_rpc_add_server" {
        let f: unsafe extern "C" fn(*const c_char) -> *mut Reg = add_server_c;
        return f as *mut c_void;
    }
    if name == c"ggml_backend_rpc_start_server" {
        let f: unsafe extern "C" fn(*const c_char, *const c_char, usize, usize, *mut *mut Device) =
            crate::rpc::start::start_server_c;
        return f as *mut c_void;
    }
    std::ptr::null_mut()
}
