//! The CPU backend: a `ggml_backend` named "CPU" that computes graphs with this build's
//! kernels on a pool of threads.
//!
//! Each backend keeps its settings (team size, abort callback, reference kernels only), its
//! scratch memory between computations (grown when a graph needs more), and a pool of worker
//! threads: one it makes and keeps, sized to the team, unless the caller lends one with
//! `ggml_backend_cpu_set_threadpool`. The registry's extra functions (`get_proc_address`)
//! are the C entries of `ffi::cpu`.

use std::any::Any;
use std::ffi::{CStr, c_int, c_void};

use super::api;
use super::plan::{DEFAULT_N_THREADS, Plan};
use super::threadpool::Threadpool;
use crate::backend::adapter::new_backend;
use crate::backend::backend::BackendPtr;
use crate::backend::device::DevicePtr;
use crate::backend::guid::StaticGuid;
use crate::backend::traits;
use crate::core::graph::Graph;
use crate::core::status::AbortCallback;
use crate::core::status::Status;
use crate::core::threadpool_params::ThreadpoolParams;

/// The CPU backend's GUID (`ggml_backend_cpu_guid`).
static CPU_GUID: StaticGuid =
    StaticGuid::new([0xaa, 0x67, 0xc7, 0x43, 0x96, 0xe6, 0xa3, 0x8a, 0xe3, 0xaf, 0xea, 0x92, 0x36, 0xbc, 0xfc, 0x89]);

/// One cache line of scratch: the work buffer is a vector of these, so it starts aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct CacheLine([u8; 64]);

/// Scratch memory that keeps its allocation between computations.
#[derive(Default)]
struct WorkBuffer(Vec<CacheLine>);

impl WorkBuffer {
    /// At least `size` bytes (null for none), or None when the memory cannot be had.
    fn reserve(&mut self, size: usize) -> Option<*mut u8> {
        if size == 0 {
            return Some(std::ptr::null_mut());
        }
        let lines = size.div_ceil(std::mem::size_of::<CacheLine>());
        if self.0.len() < lines {
            self.0 = Vec::new();
            self.0.try_reserve_exact(lines).ok()?;
            self.0.resize(lines, CacheLine([0; 64]));
        }
        Some(self.0.as_mut_ptr().cast())
    }
}

/// The state behind a CPU backend (`ggml_backend_cpu_context`).
pub struct CpuBackend {
    /// The team size asked for; 0 or less means the lent pool's size, or the default.
    n_threads: c_int,
    /// A pool lent by the caller (null for none); it outlives its use here.
    lent_pool: *mut Threadpool,
    /// The pool this backend made, used when none is lent.
    own_pool: Option<Box<Threadpool>>,
    work: WorkBuffer,
    abort_callback: AbortCallback,
    abort_callback_data: *mut c_void,
    use_ref: bool,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend {
            n_threads: DEFAULT_N_THREADS as c_int,
            lent_pool: std::ptr::null_mut(),
            own_pool: None,
            work: WorkBuffer::default(),
            abort_callback: None,
            abort_callback_data: std::ptr::null_mut(),
            use_ref: false,
        }
    }
}

impl CpuBackend {
    /// The lent pool, if any.
    fn lent(&self) -> Option<&Threadpool> {
        // SAFETY: a lent pool stays alive while it is set (ggml_backend_cpu_set_threadpool's
        // contract).
        unsafe { self.lent_pool.as_ref() }
    }

    /// The team size computations ask for.
    fn team_size(&self) -> usize {
        match usize::try_from(self.n_threads) {
            Ok(n) if n > 0 => n,
            _ => self.lent().map_or(DEFAULT_N_THREADS, Threadpool::n_threads),
        }
    }

    /// The pool to run a team of `team` threads on: the lent one, or this backend's own, made
    /// anew when it has fewer threads than the team (or, with `exact`, a different number).
    fn pool(&mut self, team: usize, exact: bool) -> *mut Threadpool {
        if !self.lent_pool.is_null() {
            return self.lent_pool;
        }
        let fits = |p: &Threadpool| if exact { p.n_threads() == team } else { p.n_threads() >= team };
        if !self.own_pool.as_deref().is_some_and(fits) {
            // the old pool's workers are joined before the new ones start
            self.own_pool = None;
            let n = c_int::try_from(team).unwrap_or(c_int::MAX);
            self.own_pool = Some(Box::new(Threadpool::new(&ThreadpoolParams::new(n))));
        }
        match self.own_pool.as_deref_mut() {
            Some(p) => p,
            None => unreachable!("the pool was made above"),
        }
    }

    /// Copies the backend's callback and kernel choice into `plan`.
    fn configure(&self, plan: &mut Plan) {
        plan.abort_callback = self.abort_callback;
        plan.abort_callback_data = self.abort_callback_data;
        plan.use_ref = self.use_ref;
    }

    /// Computes `graph` (`graph_compute`).
    pub fn graph_compute(&mut self, graph: &Graph) -> Status {
        let team = self.team_size();
        let pool = self.pool(team, true);
        // SAFETY: `pool` is the lent pool or this backend's own, both alive.
        let mut plan = api::graph_plan(graph, team as c_int, unsafe { pool.as_ref() });
        let Some(work) = self.work.reserve(plan.work_size) else {
            crate::log_error!(
                "ggml_backend_cpu_graph_compute: failed to allocate {} bytes of work memory\n",
                plan.work_size
            );
            return Status::ALLOC_FAILED;
        };
        plan.work_data = work;
        self.configure(&mut plan);
        // SAFETY: the plan names a live pool, `work_size` bytes of scratch owned by this
        // backend, and the caller's abort callback, callable with its data.
        unsafe { api::graph_compute(graph, &plan) }
    }

    /// Plans `graph` for later computations (`graph_plan_create`). The plan holds its own
    /// scratch and a view of the graph's nodes; the graph must stay alive and unchanged.
    pub fn graph_plan(&mut self, graph: &Graph) -> Option<Box<CpuGraphPlan>> {
        let team = self.team_size();
        let pool = self.pool(team, false);
        // SAFETY: as in `graph_compute`.
        let mut plan = api::graph_plan(graph, team as c_int, unsafe { pool.as_ref() });
        let mut work = WorkBuffer::default();
        plan.work_data = work.reserve(plan.work_size)?;
        self.configure(&mut plan);
        Some(Box::new(CpuGraphPlan { plan, graph: graph.view(0, graph.n_nodes), _work: work }))
    }

    /// Computes a planned graph (`graph_plan_compute`) on the pool this backend uses now.
    pub fn graph_plan_compute(&mut self, planned: &mut CpuGraphPlan) -> Status {
        let team = usize::try_from(planned.plan.n_threads).unwrap_or(1).max(1);
        planned.plan.threadpool = self.pool(team, false);
        // SAFETY: the plan names a live pool, its own scratch, and the callback that was set
        // when it was made.
        unsafe { api::graph_compute(&planned.graph, &planned.plan) }
    }

    /// Sets the team size (`ggml_backend_cpu_set_n_threads`).
    pub fn set_n_threads(&mut self, n_threads: c_int) {
        self.n_threads = n_threads;
    }

    /// Lends a pool, or takes the loan back with null (`ggml_backend_cpu_set_threadpool`). A
    /// different pool lent before is paused; this backend's own pool is released while one
    /// is lent.
    ///
    /// # Safety
    /// `pool` is null or a live pool that stays alive while it is set.
    pub unsafe fn set_threadpool(&mut self, pool: *mut Threadpool) {
        if let Some(old) = self.lent()
            && self.lent_pool != pool
        {
            old.pause();
        }
        self.lent_pool = pool;
        if !pool.is_null() {
            self.own_pool = None;
        }
    }

    /// Sets the callback polled between nodes (`ggml_backend_cpu_set_abort_callback`).
    pub fn set_abort_callback(&mut self, callback: AbortCallback, data: *mut c_void) {
        self.abort_callback = callback;
        self.abort_callback_data = data;
    }

    /// Chooses the scalar reference kernels (`ggml_backend_cpu_set_use_ref`).
    pub fn set_use_ref(&mut self, use_ref: bool) {
        self.use_ref = use_ref;
    }
}

/// A graph planned by a CPU backend (`ggml_backend_plan_cpu`).
pub struct CpuGraphPlan {
    plan: Plan,
    graph: Graph,
    /// The plan's scratch (`plan.work_data` points into it).
    _work: WorkBuffer,
}

impl traits::Backend for CpuBackend {
    fn get_name(&self) -> &CStr {
        c"CPU"
    }

    fn graph_plan_create(&mut self, graph: &Graph) -> Option<Box<dyn Any>> {
        match self.graph_plan(graph) {
            Some(plan) => Some(plan as Box<dyn Any>),
            None => {
                crate::log_error!("ggml_backend_cpu_graph_plan_create: failed to allocate the work memory\n");
                None
            }
        }
    }

    fn graph_plan_free(&mut self, plan: Box<dyn Any>) {
        drop(plan);
    }

    fn graph_plan_compute(&mut self, plan: &mut dyn Any) -> Status {
        match plan.downcast_mut::<CpuGraphPlan>() {
            Some(plan) => CpuBackend::graph_plan_compute(self, plan),
            None => crate::ggml_abort!("a plan of another backend passed to the CPU backend"),
        }
    }

    fn graph_compute(&mut self, graph: &mut Graph) -> Status {
        CpuBackend::graph_compute(self, graph)
    }
}

/// A new CPU backend on `device`, with the default team size.
pub fn new(device: DevicePtr) -> BackendPtr {
    api::cpu_init();
    new_backend(CPU_GUID.as_ptr(), device, Box::new(CpuBackend::default()))
}

/// `ggml_backend_is_cpu`: whether `backend` is a CPU backend.
pub fn is_cpu(backend: BackendPtr) -> bool {
    CPU_GUID.names(backend)
}

/// The state of a CPU backend (aborts for any other backend), for the setters of
/// `ggml-cpu.h`.
#[track_caller]
pub fn cpu_backend<'a>(backend: BackendPtr) -> &'a mut CpuBackend {
    match backend.downcast::<CpuBackend>() {
        Some(b) => b,
        None => crate::ggml_abort!("not a CPU backend"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_are_recognised_by_guid() {
        let b = crate::cpu::device::init();
        assert!(is_cpu(b));
        // SAFETY: get_name returns a static C string.
        assert_eq!(unsafe { CStr::from_ptr(b.name()) }, c"CPU");
        assert_eq!(b.device(), crate::cpu::device::cpu_reg().dev_get(0));
        b.free();
    }
}
