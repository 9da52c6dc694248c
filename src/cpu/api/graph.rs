//! Planning and computing a graph with this build's kernels (`ggml_graph_plan`,
//! `ggml_graph_compute`, `ggml_graph_compute_with_ctx`).

use super::settings::cpu_init;
use crate::core::context::{Context, ObjectType};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::cpu::compute;
use crate::cpu::kernels::CpuKernels;
use crate::cpu::plan::{self, Plan};
use crate::cpu::threadpool::Threadpool;
use std::ffi::c_int;

/// `ggml_graph_plan` with this build's kernels.
pub fn graph_plan(graph: &Graph, n_threads: c_int, threadpool: Option<&Threadpool>) -> Plan {
    plan::plan(graph, n_threads, threadpool, &CpuKernels)
}

/// `ggml_graph_compute` with this build's kernels.
///
/// # Safety
/// `plan` keeps the contract of [`Plan`]: a live pool or none, `work_size` bytes at
/// `work_data`, a callable abort callback.
pub unsafe fn graph_compute(graph: &Graph, plan: &Plan) -> Status {
    cpu_init();
    // SAFETY: passed on from the caller.
    unsafe { compute::compute(graph, plan, &CpuKernels) }
}

/// `ggml_graph_compute_with_ctx`: plans for `n_threads`, takes the scratch from the context's
/// memory (a work-buffer object, made even when empty) and computes on the pool kept for plans
/// that name none.
pub fn graph_compute_with_ctx(ctx: &mut Context, graph: &Graph, n_threads: c_int) -> Status {
    let mut plan = graph_plan(graph, n_threads, None);
    plan.work_data = ctx.new_object(ObjectType::WorkBuffer, plan.work_size).as_ptr();
    // SAFETY: no pool is named, the scratch was just reserved with the planned size, and no
    // abort callback is set.
    unsafe { graph_compute(graph, &plan) }
}

#[cfg(test)]
mod tests {
    use super::super::features::{CpuFeature, cpu_has};
    use super::*;
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::status::Status;
    use crate::core::types::Type;

    #[test]
    fn compute_with_ctx_takes_the_scratch_from_the_context() {
        let mut ctx = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false });
        let a = ctx.new_tensor(Type::F32, &[3]);
        let view = ctx.new_tensor(Type::F32, &[3]);
        view.get_mut().op = Op::RESHAPE;
        view.get_mut().src[0] = a.as_ptr();
        let g = new_graph_custom(&mut ctx, 16, false);
        g.get_mut().build_forward_expand(view);
        let before = ctx.objects().count();
        assert_eq!(graph_compute_with_ctx(&mut ctx, &g, 2), Status::SUCCESS);
        assert_eq!(ctx.objects().count(), before + 1);
        assert!(cpu_has(CpuFeature::Llamafile) == 0 && cpu_has(CpuFeature::Vsx) == 0);
    }
}
