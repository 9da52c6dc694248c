//! Planning a CPU computation (`ggml_graph_plan`): how many threads each node can use and how
//! much scratch memory the graph needs, recorded in a `struct ggml_cplan`.
//!
//! What each op needs is the kernels' knowledge, so the planner asks an [`OpTable`]. Its
//! default task counts are ggml 0.25.1's split of ops into single-threaded and parallel ones;
//! its default scratch size is none.

use std::ffi::{c_int, c_void};

use super::pool::Threadpool;
use crate::core::graph::Graph;
use crate::core::op::{GluOp, Op, UnaryOp};
use crate::core::ops::custom::{CustomOpParamsAny, N_TASKS_MAX};
use crate::core::ops::glu::get_glu_op;
use crate::core::ops::unary::get_unary_op;
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

/// `ggml_abort_callback`: polled between nodes; returning true stops the computation.
pub type AbortCallback = Option<unsafe extern "C" fn(data: *mut c_void) -> bool>;

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

/// What the planner needs to know about each op. The CPU kernels implement it; the defaults
/// stand for ops whose kernels need no scratch.
pub trait OpTable {
    /// How many threads `node` can keep busy, from 1 to `n_threads`.
    fn n_tasks(&self, node: &Tensor, n_threads: usize) -> usize {
        reference_n_tasks(node, n_threads)
    }

    /// Scratch bytes `node` needs when run by `n_tasks` threads of a team of `n_threads`.
    fn work_size(&self, node: &Tensor, n_tasks: usize, n_threads: usize) -> usize {
        let _ = (node, n_tasks, n_threads);
        0
    }
}

/// The default table: reference task counts, no scratch.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultOps;

impl OpTable for DefaultOps {}

/// ggml 0.25.1's task count for `node`: 1 for empty tensors and for the ops it runs on one
/// thread, `n_threads` (or fewer, where the work has fewer parts) for the others, and what
/// the user asked for custom ops. Aborts for an op that does not exist.
pub fn reference_n_tasks(node: &Tensor, n_threads: usize) -> usize {
    if node.is_empty() {
        return 1;
    }
    let all = n_threads;
    match node.op {
        Op::NONE
        | Op::SUB
        | Op::SQR
        | Op::SQRT
        | Op::LOG
        | Op::SIN
        | Op::COS
        | Op::SUM
        | Op::SUM_ROWS
        | Op::MEAN
        | Op::ARGMAX
        | Op::REPEAT
        | Op::REPEAT_BACK
        | Op::LEAKY_RELU
        | Op::GET_ROWS
        | Op::SET_ROWS
        | Op::SCALE
        | Op::SET
        | Op::RESHAPE
        | Op::VIEW
        | Op::PERMUTE
        | Op::TRANSPOSE
        | Op::GET_ROWS_BACK
        | Op::DIAG
        | Op::CLAMP
        | Op::POOL_1D
        | Op::POOL_2D
        | Op::POOL_2D_BACK
        | Op::WIN_PART
        | Op::WIN_UNPART
        | Op::GET_REL_POS => 1,

        Op::DUP
        | Op::CPY
        | Op::CONT
        | Op::ADD
        | Op::ADD_ID
        | Op::ADD1
        | Op::ACC
        | Op::CUMSUM
        | Op::TRI
        | Op::FILL
        | Op::COUNT_EQUAL
        | Op::SOLVE_TRI
        | Op::GATED_DELTA_NET
        | Op::DSV4_HC_COMB
        | Op::DSV4_HC_PRE
        | Op::DSV4_HC_POST
        | Op::SILU_BACK
        | Op::MUL
        | Op::DIV
        | Op::NORM
        | Op::RMS_NORM
        | Op::RMS_NORM_BACK
        | Op::L2_NORM
        | Op::GROUP_NORM
        | Op::CONCAT
        | Op::MUL_MAT
        | Op::MUL_MAT_ID
        | Op::OUT_PROD
        | Op::DIAG_MASK_ZERO
        | Op::DIAG_MASK_INF
        | Op::SOFT_MAX_BACK
        | Op::ROPE
        | Op::ROPE_BACK
        | Op::ADD_REL_POS
        | Op::IM2COL
        | Op::IM2COL_BACK
        | Op::IM2COL_3D
        | Op::CONV_2D
        | Op::CONV_3D
        | Op::CONV_2D_DW
        | Op::COL2IM_1D
        | Op::CONV_TRANSPOSE_1D
        | Op::CONV_TRANSPOSE_2D
        | Op::UPSCALE
        | Op::PAD
        | Op::PAD_REFLECT_1D
        | Op::ROLL
        | Op::ARANGE
        | Op::TIMESTEP_EMBEDDING
        | Op::ARGSORT
        | Op::TOP_K
        | Op::FLASH_ATTN_EXT
        | Op::FLASH_ATTN_BACK
        | Op::SSM_CONV
        | Op::SSM_SCAN
        | Op::LIGHTNING_INDEXER
        | Op::CROSS_ENTROPY_LOSS
        | Op::CROSS_ENTROPY_LOSS_BACK
        | Op::OPT_STEP_ADAMW
        | Op::OPT_STEP_SGD => all,

        Op::SOFT_MAX => all.min(rows_of(node, 0)),
        // One task per head.
        Op::RWKV_WKV6 | Op::GATED_LINEAR_ATTN | Op::RWKV_WKV7 => {
            let heads = source(node, 1).ne[1];
            all.min(usize::try_from(heads).unwrap_or(1).max(1))
        }

        Op::UNARY => match get_unary_op(node) {
            UnaryOp::GELU | UnaryOp::GELU_ERF | UnaryOp::GELU_QUICK | UnaryOp::SILU | UnaryOp::XIELU => all,
            u if (0..UnaryOp::COUNT).contains(&u.0) => 1,
            u => crate::ggml_abort!("unknown unary op {}", u.0),
        },
        Op::GLU => match get_glu_op(node) {
            g if (0..GluOp::COUNT).contains(&g.0) => all,
            g => crate::ggml_abort!("unknown GLU op {}", g.0),
        },

        // The custom ops' params share one layout, n_tasks at the same offset.
        Op::MAP_CUSTOM1 | Op::MAP_CUSTOM2 | Op::MAP_CUSTOM3 | Op::CUSTOM => {
            match CustomOpParamsAny::from_op_params(node).n_tasks {
                N_TASKS_MAX => all,
                n => all.min(usize::try_from(n).unwrap_or(1).max(1)),
            }
        }

        op => crate::ggml_abort!("op not implemented: {}", if op.0 < Op::COUNT { op.name() } else { "unknown" }),
    }
}

fn source(node: &Tensor, i: usize) -> &Tensor {
    // SAFETY: graph nodes' sources are null or live tensors of the graph's contexts.
    match unsafe { node.src[i].as_ref() } {
        Some(src) => src,
        None => crate::ggml_abort!("{} node without source {}", node.op.name(), i),
    }
}

fn rows_of(node: &Tensor, i: usize) -> usize {
    usize::try_from(source(node, i).nrows()).unwrap_or(1).max(1)
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

    /// Asks for 100 bytes per task for MUL nodes.
    struct MulScratch;

    impl OpTable for MulScratch {
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
        let p = plan(&g, 8, None, &DefaultOps);
        assert_eq!((p.n_threads, p.work_size), (1, 0));
        assert!(p.threadpool.is_null() && p.work_data.is_null() && p.abort_callback.is_none());

        let mul = node(&mut c, Op::MUL, &[sq, a]);
        let soft = node(&mut c, Op::SOFT_MAX, &[mul]);
        g.get_mut().build_forward_expand(soft);
        let p = plan(&g, 8, None, &MulScratch);
        assert_eq!(p.n_threads, 8);
        assert_eq!(p.work_size, 800 + CACHE_LINE_SIZE * 8);
        // soft_max has three rows: three tasks at most
        assert_eq!(reference_n_tasks(&soft, 8), 3);
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

    #[test]
    fn custom_ops_take_the_tasks_they_ask_for() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[8, 3]);
        let t = node(&mut c, Op::CUSTOM, &[a]);
        t.get_mut().op_params[2] = 3;
        assert_eq!(reference_n_tasks(&t, 8), 3);
        assert_eq!(reference_n_tasks(&t, 2), 2);
        t.get_mut().op_params[2] = N_TASKS_MAX;
        assert_eq!(reference_n_tasks(&t, 8), 8);
        let e = c.new_tensor(Type::F32, &[0]);
        e.get_mut().op = Op::MUL_MAT;
        assert_eq!(reference_n_tasks(&e, 8), 1);
    }
}
