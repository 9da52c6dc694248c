//! The backends built into the library, in the order applications enumerate them. This is
//! the one place above the devices that names them: a new device backend adds its registry
//! here.

use crate::backend::reg::RegPtr;

/// The registries listed before any plugin is loaded.
pub fn regs() -> Vec<RegPtr> {
    // ggml's order when RPC is built in: RPC before the CPU
    vec![crate::rpc::client::registry::base(), crate::cpu::device::cpu_reg()]
}
