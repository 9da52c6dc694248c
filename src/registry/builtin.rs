//! The backends built into the library, in the order applications enumerate them. This is
//! the one place above the devices that names them: a new device backend adds its registry
//! here.

use crate::backend::reg::RegPtr;

/// The registries listed before any plugin is loaded.
pub fn regs() -> Vec<RegPtr> {
    vec![crate::cpu::device::cpu_reg()]
}
