//! The "RPC" registry and one registry per server. The base registry is built in and has no
//! devices of its own; `add_server(endpoint)` asks the server how many devices it serves and
//! returns a registry `"RPC[endpoint]"` listing them, named `"RPC0"`, `"RPC1"`, ... across servers.
//! Every device's `reg` is the base registry, which is how llama.cpp recognizes them.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_void};
use std::ptr::NonNull;
use std::sync::{LazyLock, Mutex};

use super::connection::Connection;
use super::device::RpcDevice;
use crate::backend::adapter::{StaticReg, leak_device, leak_reg};
use crate::backend::device::DevicePtr;
use crate::backend::reg::RegPtr;
use crate::backend::traits::Reg;
use crate::rpc::wire::Command;

/// The base registry, "RPC": no devices of its own.
struct BaseReg;

/// A server's registry, `"RPC[endpoint]"`.
struct ServerReg {
    name: CString,
    devices: Vec<DevicePtr>,
}

static BASE_OBJECT: &dyn Reg = &BaseReg;
static BASE: StaticReg = StaticReg::new(&BASE_OBJECT);

/// `ggml_backend_rpc_reg`.
pub fn base() -> RegPtr {
    BASE.handle()
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
    // every device's `reg` is the base registry, which is how llama.cpp recognizes them
    let devices =
        (0..count).map(|i| leak_device(BASE.as_ptr(), |_| Box::new(RpcDevice::new(endpoint, i, first + i)))).collect();
    let name = CString::new(format!("RPC[{endpoint}]")).unwrap_or_default();
    // a server's registry lives for the process, as in the reference
    let reg = leak_reg(Box::new(ServerReg { name, devices }));
    servers.regs.insert(endpoint.to_owned(), reg);
    Some(reg)
}

/// Device `index` of the server at `endpoint`; `None` (logged) when there is no such device.
pub fn device(endpoint: &str, index: u32) -> Option<DevicePtr> {
    let reg = add_server(endpoint)?;
    if usize::try_from(index).is_ok_and(|i| i < reg.dev_count()) {
        return Some(reg.dev_get(index as usize));
    }
    crate::log_error!("rpc: the RPC server at {} has no device {}\n", endpoint, index);
    None
}

impl Reg for BaseReg {
    fn get_name(&self) -> &CStr {
        c"RPC"
    }

    fn get_device_count(&self) -> usize {
        0
    }

    fn get_device(&self, _index: usize) -> DevicePtr {
        crate::ggml_abort!("the RPC registry lists no devices: add a server with ggml_backend_rpc_add_server")
    }

    /// The registry's extra functions, which are C functions of `ffi` (a seam of `lib.rs`).
    fn get_proc_address(&self, name: &CStr) -> Option<NonNull<c_void>> {
        crate::ffi::rpc::proc_address(name)
    }
}

impl Reg for ServerReg {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn get_device_count(&self) -> usize {
        self.devices.len()
    }

    fn get_device(&self, index: usize) -> DevicePtr {
        match self.devices.get(index) {
            Some(&d) => d,
            None => crate::ggml_abort!(
                "{} has {} devices, not index {}",
                self.name.to_string_lossy(),
                self.devices.len(),
                index
            ),
        }
    }

    fn get_proc_address(&self, name: &CStr) -> Option<NonNull<c_void>> {
        crate::ffi::rpc::proc_address(name)
    }
}
