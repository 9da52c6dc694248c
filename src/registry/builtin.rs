//! The backends built into the library, in the order applications enumerate them. This is
//! the one place above the devices that names them: a new device backend adds its registry
//! here.

use crate::backend::reg::RegPtr;

/// The registries listed before any plugin is loaded.
pub fn regs() -> Vec<RegPtr> {
    // The CPU stays first, as on a stock CPU-only ggml that programs built against it expect
    // (ggml built with RPC lists RPC first; the RPC registry has no devices of its own, so the
    // device list is the same either way).
    // CUDA joins only when a GPU was found, so a machine without one lists what a build
    // without CUDA lists.
    let mut regs = vec![crate::cpu::device::cpu_reg(), crate::rpc::client::registry::base()];
    regs.extend(crate::cuda::registry::listed());
    regs
}
