//! Planning a CPU computation (`ggml_graph_plan`): how many threads each node can use and how
//! much scratch memory the graph needs, recorded in a `struct ggml_cplan`.
//!
//! What each op needs is the kernels' knowledge, so the planner asks an [`OpTable`]: the CPU
//! kernels answer from each op's entry (ggml 0.25.1's task counts and scratch sizes).

use std::ffi::{c_int, c_void};

use super::threadpool::Threadpool;
use crate::core::graph::Graph;
use crate::core::status::AbortCallback;
use crate::core::tensor::Tensor;

/// The cache line size that per-thread scratch is padded to (`CACHE_LINE_SIZE`).
#[cfg(target_arch = "powerpc64")]
pub const CACHE_LINE_SIZE: usize = 128;
/// The cache line size that per-thread scratch is padded to (`CACHE_LINE_SIZE`).
#[cfg(target_arch = "s390x")]
pub const CACHE_LINE_SIZE: usize = 256;
/// The cache line size that per-thread scratch is padded to (`CACHE_LINE_SIZE`).
#[cfg(not(any(target_arch = "powerpc64", target_arch = "s390x")))]
pub const CACHE_LINE_SIZE: usize = 64;

/// `GGML_DEFAULT_N_THREADS`: the team size when neither the caller nor a pool gives one.
pub const DEFAULT_N_THREADS: usize = 4;

/// `struct ggml_cplan` (56 bytes).
///
/// `threadpool` is null (a pool is made for each computation) or a pool that outlives the
/// computations using the plan; `work_data` is null when `work_size` is 0, else at least
/// `work_size` writable bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub work_size: usize,
    pub work_data: *mut u8,
    pub n_threads: c_int,
    pub threadpool: *mut Threadpool,
    pub abort_callback: AbortCallback,
    pub abort_callback_data: *mut c_void,
    pub use_ref: bool,
}

const _: () = assert!(std::mem::size_of::<Plan>() == 56);
const _: () = assert!(std::mem::offset_of!(Plan, work_data) == 8);
const _: () = assert!(std::mem::offset_of!(Plan, n_threads) == 16);
const _: () = assert!(std::mem::offset_of!(Plan, threadpool) == 24);
const _: () = assert!(std::mem::offset_of!(Plan, abort_callback) == 32);
const _: () = assert!(std::mem::offset_of!(Plan, abort_callback_data) == 40);
const _: () = assert!(std::mem::offset_of!(Plan, use_ref) == 48);

impl Plan {
    /// The pool the plan names, if any.
    ///
    /// # Safety
    /// `threadpool` is null or points to a live pool (the struct's contract).
    pub unsafe fn pool(&self) -> Option<&Threadpool> {
        // SAFETY: the caller vouches for the pointer.
        unsafe { self.threadpool.as_ref() }
    }
}

/// What the planner needs to know about each op. The CPU kernels implement it
/// (`kernels::CpuKernels`, from each op's entry); the default scratch size is none.
pub trait OpTable {
    /// How many threads `node` can keep busy, from 1 to `n_threads`.
    fn n_tasks(&self, node: &Tensor, n_threads: usize) -> usize;

    /// Scratch bytes `node` needs when run by `n_tasks` threads of a team of `n_threads`.
    fn work_size(&self, node: &Tensor, n_tasks: usize, n_threads: usize) -> usize {
        let _ = (node, n_tasks, n_threads);
        0
    }
}

/// A table for tests of the planner and the driver: every node that computes something keeps
/// the whole team busy, none needs scratch.
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultOps;

#[cfg(test)]
impl OpTable for DefaultOps {
    fn n_tasks(&self, node: &Tensor, n_threads: usize) -> usize {
        if node.is_empty() || node.op.is_empty() { 1 } else { n_threads }
    }
}

/// `ggml_graph_plan`: the team size and scratch size for computing `graph`.
///
/// `n_threads <= 0` means the pool's size, or [`DEFAULT_N_THREADS`] without a pool. The
/// team is no larger than the most threads any node can use. The scratch is the largest any
/// node asks for, plus a cache line per thread (so that threads' slices can be padded apart);
/// none at all when no node asks. The caller fills in `work_data` and the abort callback.
pub fn plan(graph: &Graph, n_threads: c_int, threadpool: Option<&Threadpool>, ops: &impl OpTable) -> Plan {
    let n_threads = match usize::try_from(n_threads) {
        Ok(n) if n > 0 => n,
        _ => threadpool.map_or(DEFAULT_N_THREADS, Threadpool::n_threads),
    };

    let mut max_tasks = 1;
    let mut work_size = 0;
    for node in graph.nodes() {
        let n_tasks = ops.n_tasks(&node, n_threads);
        crate::ggml_assert!(n_tasks >= 1, "{} node planned with no task", node.op.name());
        max_tasks = max_tasks.max(n_tasks);
        // a node without elements is never computed: no scratch for it, however long its
        // rows (ggml plans one; the graph fuzzer's SOFT_MAX of [1.5e9, 0] asked for 12 GB)
        if !node.is_empty() {
            work_size = work_size.max(ops.work_size(&node, n_tasks, n_threads));
        }
    }
    if work_size > 0 {
        work_size += CACHE_LINE_SIZE * n_threads;
    }

    Plan {
        work_size,
        work_data: std::ptr::null_mut(),
        n_threads: c_int::try_from(max_tasks.min(n_threads)).unwrap_or(c_int::MAX),
        threadpool: threadpool.map_or(std::ptr::null_mut(), |p| std::ptr::from_ref(p).cast_mut()),
        abort_callback: None,
        abort_callback_data: std::ptr::null_mut(),
        use_ref: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::tensor::TensorPtr;
    use crate::core::threadpool_params::ThreadpoolParams;
    use crate::core::types::Type;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    fn node(c: &mut Context, op: Op, src: &[TensorPtr]) -> TensorPtr {
        let t = c.new_tensor(Type::F32, &[8, 3]);
        t.get_mut().op = op;
        for (i, s) in src.iter().enumerate() {
            t.get_mut().src[i] = s.as_ptr();
        }
        t
    }

    /// Runs SQR on one thread and asks for 100 bytes per task for MUL nodes.
    struct MulScratch;

    impl OpTable for MulScratch {
        fn n_tasks(&self, node: &Tensor, n_threads: usize) -> usize {
            if node.op == Op::SQR { 1 } else { DefaultOps.n_tasks(node, n_threads) }
        }

        fn work_size(&self, node: &Tensor, n_tasks: usize, _n_threads: usize) -> usize {
            if node.op == Op::MUL { 100 * n_tasks } else { 0 }
        }
    }

    #[test]
    fn team_and_scratch_follow_the_nodes() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[8, 3]);
        let sq = node(&mut c, Op::SQR, &[a]);
        let g = new_graph_custom(&mut c, 16, false);
        g.get_mut().build_forward_expand(sq);

        // only single-task nodes: a team of one, no scratch
        let p = plan(&g, 8, None, &MulScratch);
        assert_eq!((p.n_threads, p.work_size), (1, 0));
        assert!(p.threadpool.is_null() && p.work_data.is_null() && p.abort_callback.is_none());

        let mul = node(&mut c, Op::MUL, &[sq, a]);
        let soft = node(&mut c, Op::SOFT_MAX, &[mul]);
        g.get_mut().build_forward_expand(soft);
        let p = plan(&g, 8, None, &MulScratch);
        assert_eq!(p.n_threads, 8);
        assert_eq!(p.work_size, 800 + CACHE_LINE_SIZE * 8);
        assert_eq!(plan(&g, 0, None, &DefaultOps).n_threads, DEFAULT_N_THREADS as c_int);

        // an empty MUL asks for nothing
        let none = c.new_tensor(Type::F32, &[1 << 30, 0]);
        let empty = node(&mut c, Op::MUL, &[none, none]);
        empty.get_mut().ne = none.ne;
        let g = new_graph_custom(&mut c, 16, false);
        g.get_mut().build_forward_expand(empty);
        assert_eq!(plan(&g, 8, None, &MulScratch).work_size, 0);
    }

    #[test]
    fn the_pool_sets_the_default_team() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[8, 3]);
        let add = node(&mut c, Op::ADD, &[a, a]);
        let g = new_graph_custom(&mut c, 16, false);
        g.get_mut().build_forward_expand(add);
        let pool = Threadpool::new(&ThreadpoolParams::new(3));
        let p = plan(&g, -1, Some(&pool), &DefaultOps);
        assert_eq!(p.n_threads, 3);
        assert_eq!(p.threadpool.cast_const(), std::ptr::from_ref(&pool));
        // SAFETY: the plan names `pool`, which is alive.
        assert_eq!(unsafe { p.pool() }.map(Threadpool::n_threads), Some(3));
    }
}
