//! The backends built into the library, in the order applications enumerate them. This is
//! the one place above the devices that names them: a new device backend adds its registry
//! here.

use crate::backend::reg::RegPtr;

/// The registries listed before any plugin is loaded.
pub fn regs() -> Vec<RegPtr> {
    // CUDA, where a GPU was found, comes first, as in ggml's CUDA build, whose device list
    // starts with the GPUs. The CPU comes next, first where there is no GPU, as on a stock
    // CPU-only ggml that programs built against it expect (ggml built with RPC lists RPC
    // before the CPU; the RPC registry has no devices of its own, so the device list is the
    // same either way). With no GPU, CUDA is not listed at all, as in a build without it.
    let mut regs: Vec<RegPtr> = crate::cuda::registry::listed().into_iter().collect();
    regs.extend([crate::cpu::device::cpu_reg(), crate::rpc::client::registry::base()]);
    regs
}
