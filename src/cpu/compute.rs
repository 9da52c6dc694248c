//! Computing a graph on a team of threads (`ggml_graph_compute`): every thread walks the
//! nodes in order, runs its share of each through the kernel, and meets the others at the
//! barrier before the next node.
//!
//! The kernels decide how to split a node among `nth` threads: by `ith`, or dynamically with
//! the team's chunk counter, which is 0 whenever a node starts. Thread 0 polls the plan's
//! abort callback after each node; a kernel's failure or an abort stops every thread at the
//! next node boundary.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, TryLockError};

use super::plan::Plan;
use super::threadpool::{Team, Threadpool};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::{TensorPtr, flag};
use crate::core::threadpool_params::ThreadpoolParams;

/// `struct ggml_compute_params`: what a kernel knows about its thread's part of a node.
pub struct ComputeParams<'a> {
    /// This thread's index in the team.
    pub ith: usize,
    /// The team size.
    pub nth: usize,
    /// The plan's scratch: `wsize` bytes at `wdata` (null when `wsize` is 0), shared by the
    /// team; threads keep to their own slices, padded a cache line apart.
    pub wsize: usize,
    pub wdata: *mut u8,
    /// Run the scalar reference kernels only.
    pub use_ref: bool,
    team: &'a Team<'a>,
}

impl<'a> ComputeParams<'a> {
    /// The parameters of `team`'s member, with the scratch of `wsize` bytes at `wdata`.
    pub fn new(team: &'a Team<'a>, wsize: usize, wdata: *mut u8, use_ref: bool) -> ComputeParams<'a> {
        ComputeParams { ith: team.ith(), nth: team.nth(), wsize, wdata, use_ref, team }
    }

    /// Waits for the whole team (for kernels with phases, such as converting an operand into
    /// the scratch before using it).
    pub fn barrier(&self) -> bool {
        self.team.barrier()
    }

    /// Sets the team's chunk counter.
    pub fn chunk_set(&self, value: usize) {
        self.team.chunk_set(value);
    }

    /// Adds to the team's chunk counter, returning its previous value.
    pub fn chunk_add(&self, value: usize) -> usize {
        self.team.chunk_add(value)
    }

    /// The next chunk for a thread that started with chunk `ith`: chunks `nth`, `nth + 1`, ...
    /// go to whichever thread asks first, so fast threads take more. Relies on the counter
    /// being 0 at the start of the node.
    pub fn next_chunk(&self) -> usize {
        self.nth + self.chunk_add(1)
    }
}

/// The CPU kernels, as the compute driver calls them.
pub trait Kernel: Sync {
    /// Computes thread `params.ith`'s share of `node`.
    fn compute(&self, params: &ComputeParams, node: TensorPtr) -> Status;

    /// Computes node `index` of `graph` together with some of the nodes after it, if the
    /// kernels have a fused form for them; returns how many following nodes were covered and
    /// the status. The decision must depend on the graph only, so that every thread takes it
    /// alike.
    fn compute_fused(&self, params: &ComputeParams, graph: &Graph, index: usize) -> Option<(usize, Status)> {
        let _ = (params, graph, index);
        None
    }
}

impl<F> Kernel for F
where
    F: Fn(&ComputeParams, TensorPtr) -> Status + Sync,
{
    fn compute(&self, params: &ComputeParams, node: TensorPtr) -> Status {
        self(params, node)
    }
}

/// No node index: nothing has stopped the computation.
const RUNNING: usize = usize::MAX;

/// What the team shares while computing one graph.
struct Computation<'a, K> {
    graph: &'a Graph,
    plan: &'a Plan,
    kernel: &'a K,
    /// The node index at which every thread stops (after a failure or an abort).
    stop_at: AtomicUsize,
    status: AtomicI32,
}

// SAFETY: the graph and its tensors are only read by the driver; kernels write the nodes'
// data in disjoint parts per thread and meet at the barrier, as ggml's kernels do. The plan's
// scratch pointer and callback data are handed to kernels and to the callback as the C API
// intends (the callback is called from thread 0 only). The kernel is Sync.
unsafe impl<K: Kernel> Sync for Computation<'_, K> {}

impl<K: Kernel> Computation<'_, K> {
    /// Records the first non-success status and stops the team before node `next`.
    fn stop(&self, status: Status, next: usize) {
        let _ = self.status.compare_exchange(Status::SUCCESS.0, status.0, Ordering::Relaxed, Ordering::Relaxed);
        self.stop_at.store(next, Ordering::Relaxed);
    }

    fn abort_requested(&self) -> bool {
        match self.plan.abort_callback {
            // SAFETY: the plan's contract: the callback may be called with its data.
            Some(callback) => unsafe { callback(self.plan.abort_callback_data) },
            None => false,
        }
    }

    /// One thread's walk through the graph.
    fn run(&self, team: &Team) {
        let params = ComputeParams {
            ith: team.ith(),
            nth: team.nth(),
            wsize: self.plan.work_size,
            wdata: self.plan.work_data,
            use_ref: self.plan.use_ref,
            team,
        };
        let n_nodes = self.graph.node_slots().len();
        // `stop_at` only ever names the index after a node that has just been computed, and is
        // set before the barrier that follows that node, so every thread sees it at the same
        // index; a value set during the next node names a later index.
        let mut i = 0;
        while i < n_nodes && self.stop_at.load(Ordering::Relaxed) != i {
            let node = self.graph.node(i);
            // ggml computes no node without elements (kernels may divide by an extent).
            if node.op.is_empty() || node.is_empty() || node.flags & flag::COMPUTE == 0 {
                i += 1;
                continue;
            }
            let (covered, status) = match self.kernel.compute_fused(&params, self.graph, i) {
                Some((extra, status)) => (extra + 1, status),
                None => (1, self.kernel.compute(&params, node)),
            };
            i += covered;
            if status != Status::SUCCESS {
                self.stop(status, i);
            }
            if params.ith == 0 && self.abort_requested() {
                self.stop(Status::ABORTED, i);
            }
            // The pool's closing barrier follows the last node.
            if i < n_nodes {
                team.barrier_then(|| team.chunk_set(0));
            }
        }
    }
}

/// `ggml_graph_compute`: runs `kernel` over the nodes of `graph` as `plan` says, on the plan's
/// pool or on the one kept for plans that name none (`KEPT_POOL`). Nodes that compute nothing
/// (views, reshapes), nodes without elements and nodes not marked for computing are skipped. Returns SUCCESS, ABORTED
/// when the abort callback asked to stop, or the first failure a kernel reported.
///
/// # Safety
/// `plan` keeps its contract: `threadpool` null or a live pool not running another graph,
/// `work_data` valid for `work_size` bytes (checked non-null when the size is not 0), the
/// abort callback callable with its data from any thread.
pub unsafe fn compute<K: Kernel>(graph: &Graph, plan: &Plan, kernel: &K) -> Status {
    crate::ggml_assert!(plan.n_threads > 0, "plan with {} threads", plan.n_threads);
    crate::ggml_assert!(plan.work_size == 0 || !plan.work_data.is_null(), "plan without its work buffer");

    // SAFETY: the caller vouches for the plan's pool.
    match unsafe { plan.pool() } {
        Some(pool) => compute_on(pool, graph, plan, kernel),
        None => with_kept_pool(plan.n_threads, |pool| compute_on(pool, graph, plan, kernel)),
    }
}

/// The pool of the calls that name none, kept from one call to the next as OpenMP keeps its
/// threads in ggml's stock build (making one per call cost 50-90 µs with 2 threads), with the
/// process it was made in.
static KEPT_POOL: Mutex<Option<(u32, Threadpool)>> = Mutex::new(None);

/// Runs `f` on the kept pool, made anew when it is too small or was made before a `fork` (the
/// child has none of its workers); on a pool of its own while another thread computes on the
/// kept one. (A larger pool runs a smaller team; its other workers sleep.)
fn with_kept_pool<R>(n_threads: i32, f: impl FnOnce(&Threadpool) -> R) -> R {
    let mut kept = match KEPT_POOL.try_lock() {
        Ok(kept) => kept,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return f(&Threadpool::new(&ThreadpoolParams::new(n_threads))),
    };
    let pid = std::process::id();
    let stale = |(made_in, pool): &mut (u32, Threadpool)| *made_in != pid || pool.n_threads() < n_threads as usize;
    // a stale pool made here is stopped and joined as it drops; one made before a fork is
    // forgotten, its workers were not forked with the process
    if let Some((made_in, pool)) = kept.take_if(stale)
        && made_in != pid
    {
        std::mem::forget(pool);
    }
    let (_, pool) = kept.get_or_insert_with(|| (pid, Threadpool::new(&ThreadpoolParams::new(n_threads))));
    f(pool)
}

/// [`compute`] on `pool`.
fn compute_on<K: Kernel>(pool: &Threadpool, graph: &Graph, plan: &Plan, kernel: &K) -> Status {
    let n_threads = plan.n_threads as usize;
    let team = if n_threads > pool.n_threads() {
        crate::log_warn!("cplan requested more threads ({}) than available ({})\n", n_threads, pool.n_threads());
        pool.n_threads()
    } else {
        n_threads
    };

    let computation = Computation {
        graph,
        plan,
        kernel,
        stop_at: AtomicUsize::new(RUNNING),
        status: AtomicI32::new(Status::SUCCESS.0),
    };
    pool.run(team, |t| computation.run(t));
    Status(computation.status.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::GraphPtr;
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::types::Type;
    use crate::cpu::plan::{DefaultOps, plan};
    use std::sync::atomic::AtomicU64;

    const CHUNKS: usize = 16;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    /// A chain of `n` parallel nodes (ADD), each carrying its index in op_params[0], with a
    /// VIEW in the middle that must be skipped.
    fn chain(c: &mut Context, n: usize) -> GraphPtr {
        let mut t = c.new_tensor(Type::F32, &[4]);
        let g = new_graph_custom(c, 64, false);
        for k in 0..n {
            let next = c.new_tensor(Type::F32, &[4]);
            next.get_mut().op = if k == n / 2 { Op::VIEW } else { Op::ADD };
            next.get_mut().op_params[0] = k as i32;
            next.get_mut().src[0] = t.as_ptr();
            t = next;
        }
        g.get_mut().build_forward_expand(t);
        g
    }

    /// Per node: the sum of `ith + 1` over the threads that ran it, and the chunks handed out.
    struct Tally {
        sums: Vec<AtomicU64>,
        chunks: Vec<AtomicU64>,
    }

    impl Tally {
        fn new(n: usize) -> Tally {
            Tally {
                sums: (0..n).map(|_| AtomicU64::new(0)).collect(),
                chunks: (0..n).map(|_| AtomicU64::new(0)).collect(),
            }
        }

        fn reset(&self) {
            self.sums.iter().chain(&self.chunks).for_each(|a| a.store(0, Ordering::Relaxed));
        }

        /// The fake kernel: adds to its node's sum, checks that the node before it was finished
        /// by the whole team (the barrier held), and takes chunks until none are left.
        fn kernel(&self, p: &ComputeParams, node: TensorPtr) -> Status {
            let k = node.op_params[0] as usize;
            self.sums[k].fetch_add(p.ith as u64 + 1, Ordering::Relaxed);
            if k > 0 && k - 1 != self.sums.len() / 2 {
                let team = (p.nth * (p.nth + 1) / 2) as u64;
                assert_eq!(self.sums[k - 1].load(Ordering::Relaxed), team, "node {k} started early");
                assert_eq!(self.chunks[k - 1].load(Ordering::Relaxed), CHUNKS as u64, "node {k} started early");
            }
            let mut chunk = p.ith;
            while chunk < CHUNKS {
                self.chunks[k].fetch_add(1, Ordering::Relaxed);
                chunk = p.next_chunk();
            }
            Status::SUCCESS
        }

        /// Checks a finished computation by a team of `nth`, and resets for the next.
        fn check(&self, nth: usize) {
            let team = (nth * (nth + 1) / 2) as u64;
            let n_nodes = self.sums.len();
            for k in 0..n_nodes {
                let (sum, chunks) = (self.sums[k].load(Ordering::Relaxed), self.chunks[k].load(Ordering::Relaxed));
                if k == n_nodes / 2 {
                    assert_eq!((sum, chunks), (0, 0), "the VIEW node ran");
                } else {
                    assert_eq!((sum, chunks), (team, CHUNKS as u64), "node {k}, {nth} threads");
                }
            }
            self.reset();
        }
    }

    /// Computes a 5-node graph `n_graphs` times, the team size for each round given by
    /// `team`, pausing and resuming the pool now and then, checking every round.
    fn run_graphs(pool: &Threadpool, n_graphs: usize, team: impl Fn(usize) -> usize) {
        let mut c = ctx();
        let n_nodes = 5;
        let g = chain(&mut c, n_nodes);
        let tally = Tally::new(n_nodes);
        let kernel = |p: &ComputeParams, node: TensorPtr| tally.kernel(p, node);
        for round in 0..n_graphs {
            match round % 1000 {
                500 => pool.pause(),
                700 => pool.resume(),
                _ => {}
            }
            let nth = team(round);
            let plan = plan(&g, nth as i32, Some(pool), &DefaultOps);
            // SAFETY: the plan names a live pool and needs no work buffer.
            assert_eq!(unsafe { compute(&g, &plan, &kernel) }, Status::SUCCESS);
            tally.check(nth);
        }
    }

    #[test]
    fn ten_thousand_graphs_back_to_back() {
        for n in [1, 2, 8] {
            let pool = Threadpool::new(&ThreadpoolParams::new(n));
            run_graphs(&pool, 10_000, |_| n as usize);
        }
    }

    #[test]
    fn team_size_changes_between_graphs() {
        let pool = Threadpool::new(&ThreadpoolParams::new(4));
        run_graphs(&pool, 2000, |round| [1, 4, 3, 2, 4, 1][round % 6]);
    }

    #[test]
    fn without_a_pool_the_kept_one_or_a_new_one_runs_it() {
        // four callers at once, with teams of 1 to 4: one at a time on the kept pool (made
        // anew when too small), the others on pools of their own
        std::thread::scope(|s| {
            for caller in 0..4 {
                s.spawn(move || {
                    let mut c = ctx();
                    let g = chain(&mut c, 3);
                    let tally = Tally::new(3);
                    let kernel = |p: &ComputeParams, node: TensorPtr| tally.kernel(p, node);
                    for round in 0..100 {
                        let nth = 1 + (caller + round) % 4;
                        let plan = plan(&g, nth as i32, None, &DefaultOps);
                        assert!(plan.threadpool.is_null());
                        // SAFETY: no pool, no work buffer needed.
                        assert_eq!(unsafe { compute(&g, &plan, &kernel) }, Status::SUCCESS);
                        tally.check(nth);
                    }
                });
            }
        });
    }

    #[test]
    fn abort_callback_stops_the_computation() {
        let mut c = ctx();
        let g = chain(&mut c, 7);
        for n in [1, 2, 4] {
            let pool = Threadpool::new(&ThreadpoolParams::new(n));
            let ran = Tally::new(7);
            let kernel = |p: &ComputeParams, node: TensorPtr| ran.kernel(p, node);
            let calls = AtomicUsize::new(0);
            let mut plan = plan(&g, n, Some(&pool), &DefaultOps);
            plan.abort_callback = Some(crate::ffi::test_callbacks::abort_after_two);
            plan.abort_callback_data = std::ptr::from_ref(&calls).cast_mut().cast();
            // SAFETY: the pool is alive, no work buffer is needed, `calls` outlives the call.
            assert_eq!(unsafe { compute(&g, &plan, &kernel) }, Status::ABORTED);
            let done: Vec<bool> = ran.sums.iter().map(|s| s.load(Ordering::Relaxed) != 0).collect();
            assert_eq!(done, [true, true, false, false, false, false, false], "{n} threads");
            assert_eq!(calls.load(Ordering::Relaxed), 2);
            // the pool stays usable
            ran.reset();
            plan.abort_callback = None;
            // SAFETY: as above.
            assert_eq!(unsafe { compute(&g, &plan, &kernel) }, Status::SUCCESS);
        }
    }

    #[test]
    fn a_failing_kernel_stops_every_thread() {
        let mut c = ctx();
        let g = chain(&mut c, 6);
        let pool = Threadpool::new(&ThreadpoolParams::new(3));
        let ran = Tally::new(6);
        let kernel = |p: &ComputeParams, node: TensorPtr| {
            ran.kernel(p, node);
            if node.op_params[0] == 1 && p.ith == p.nth - 1 { Status::FAILED } else { Status::SUCCESS }
        };
        let plan = plan(&g, 3, Some(&pool), &DefaultOps);
        // SAFETY: the pool is alive and no work buffer is needed.
        assert_eq!(unsafe { compute(&g, &plan, &kernel) }, Status::FAILED);
        let sums: Vec<u64> = ran.sums.iter().map(|s| s.load(Ordering::Relaxed)).collect();
        assert_eq!(sums, [6, 6, 0, 0, 0, 0]);
    }

    /// Driver overhead per node (barrier-bound, as the reference's test-barrier measures it):
    /// `cargo test --lib cpu::compute::tests::per_node -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn per_node_overhead_benchmark() {
        let mut c = Context::new(InitParams { mem_size: 4 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let n_nodes = 2000;
        let mut t = c.new_tensor(Type::F32, &[4]);
        let g = new_graph_custom(&mut c, 4096, false);
        for _ in 0..n_nodes {
            let next = c.new_tensor(Type::F32, &[4]);
            next.get_mut().op = Op::ADD;
            next.get_mut().src[0] = t.as_ptr();
            t = next;
        }
        g.get_mut().build_forward_expand(t);
        let kernel = |_: &ComputeParams, _: TensorPtr| Status::SUCCESS;
        for n in [1, 2, 4] {
            let pool = Threadpool::new(&ThreadpoolParams::new(n));
            let plan = plan(&g, n, Some(&pool), &DefaultOps);
            let rounds = 50;
            let t0 = std::time::Instant::now();
            for _ in 0..rounds {
                // SAFETY: the plan names a live pool and needs no work buffer.
                unsafe { compute(&g, &plan, &kernel) };
            }
            let ns = t0.elapsed().as_nanos() as f64 / (rounds * n_nodes) as f64;
            eprintln!("compute, {n} threads: {ns:.0} ns per node");
        }
    }
}
