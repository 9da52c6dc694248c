//! The CPU device's extra buffer types as ggml-cpu's driver consults them
//! (`ggml_cpu_extra_compute_forward`, `ggml_cpu_extra_work_size`): an op whose weights lie in
//! one of them (ours: CPU_REPACK) and which that type's kernels take is computed, and its
//! scratch sized, by them; any other op is left to the plain kernels (false).

use std::ffi::c_int;

use super::params::{CComputeParams, with_params};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::cpu::OpTable;
use crate::cpu::kernels::{CpuKernels, run_op};
use crate::cpu::{device, repack};
use crate::ffi::handle::handle;

/// Whether an extra buffer type's kernels take `op`.
fn taken(op: &Tensor) -> bool {
    // SAFETY: graph nodes' source slots hold null or live tensors.
    let weights = unsafe { op.src[0].as_ref() };
    weights.is_some_and(repack::is_repacked) && device::repack_supports_op(op)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_extra_compute_forward(params: *mut CComputeParams, op: *mut Tensor) -> bool {
    let export = "ggml_cpu_extra_compute_forward";
    // SAFETY: the C caller's contract: a live node and valid compute params.
    unsafe {
        let node: TensorPtr = handle(op, export);
        if !taken(&node) {
            return false;
        }
        with_params(params, export, |p| run_op(node.op, p, node))
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_extra_work_size(n_threads: c_int, op: *const Tensor, size: *mut usize) -> bool {
    let export = "ggml_cpu_extra_work_size";
    // SAFETY: the C caller's contract: a live node.
    let node: TensorPtr = unsafe { handle(op, export) };
    if !taken(&node) {
        return false;
    }
    if size.is_null() {
        crate::ggml_abort!("{}: NULL size", export);
    }
    let n_threads = n_threads.max(1) as usize;
    let kernels = CpuKernels;
    // SAFETY: checked non-NULL; the caller's contract: room for one size.
    unsafe { *size = kernels.work_size(&node, kernels.n_tasks(&node, n_threads), n_threads) };
    true
}
