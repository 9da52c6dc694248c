//! The CPU backend: a `ggml_backend` named "CPU" that computes graphs with this build's
//! kernels on a pool of threads.
//!
//! Each backend keeps its settings (team size, abort callback, reference kernels only), its
//! scratch memory between computations (grown when a graph needs more), and a pool of worker
//! threads: one it makes and keeps, sized to the team, unless the caller lends one with
//! `ggml_backend_cpu_set_threadpool`. The registry's extra functions (`get_proc_address`)
//! are listed in [`proc_address`].

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use super::api::{self, CpuFeature, cpu_has};
use super::plan::{AbortCallback, DEFAULT_N_THREADS, Plan};
use super::pool::Threadpool;
use crate::backend::backend::BackendPtr;
use crate::backend::guid::StaticGuid;
use crate::backend::interface::{Backend, BackendInterface, Device, GraphPlan, Reg};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::Tensor;
use crate::core::threadpool_params::ThreadpoolParams;
use crate::cpu::device::cpu_reg;

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

// ---------------------------------------------------------------------------------------------
// The C table

fn context<'a>(backend: *mut Backend) -> &'a mut CpuBackend {
    // SAFETY: a non-null backend handle points to a live backend (ggml's contract).
    let handle = unsafe { BackendPtr::from_raw(backend) };
    crate::ggml_assert!(handle.is_some_and(is_cpu), "not a CPU backend");
    // SAFETY: CPU backends carry a boxed CpuBackend as their context until freed, and a
    // backend is driven by one thread at a time.
    unsafe { &mut *(*backend).context.cast::<CpuBackend>() }
}

unsafe extern "C" fn get_name(_backend: *mut Backend) -> *const c_char {
    c"CPU".as_ptr()
}

unsafe extern "C" fn free(backend: *mut Backend) {
    if backend.is_null() {
        return;
    }
    // SAFETY: `init` made both boxes; the backend is not used after `free`.
    unsafe {
        let backend = Box::from_raw(backend);
        drop(Box::from_raw(backend.context.cast::<CpuBackend>()));
    }
}

unsafe extern "C" fn graph_plan_create(backend: *mut Backend, graph: *const Graph) -> GraphPlan {
    // SAFETY: callers pass a live graph (ggml_backend_graph_plan_create's contract).
    let Some(graph) = (unsafe { graph.as_ref() }) else { crate::ggml_abort!("NULL graph passed to graph_plan_create") };
    match context(backend).graph_plan(graph) {
        Some(plan) => Box::into_raw(plan).cast(),
        None => {
            crate::log_error!("ggml_backend_cpu_graph_plan_create: failed to allocate the work memory\n");
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn graph_plan_free(_backend: *mut Backend, plan: GraphPlan) {
    if !plan.is_null() {
        // SAFETY: CPU plans are boxes made by `graph_plan_create`, freed once.
        drop(unsafe { Box::from_raw(plan.cast::<CpuGraphPlan>()) });
    }
}

unsafe extern "C" fn graph_plan_compute(backend: *mut Backend, plan: GraphPlan) -> Status {
    // SAFETY: CPU plans are boxes made by `graph_plan_create`, alive until freed.
    let Some(plan) = (unsafe { plan.cast::<CpuGraphPlan>().as_mut() }) else {
        crate::ggml_abort!("NULL plan passed to graph_plan_compute")
    };
    context(backend).graph_plan_compute(plan)
}

unsafe extern "C" fn graph_compute(backend: *mut Backend, graph: *mut Graph) -> Status {
    // SAFETY: callers pass a live graph (ggml_backend_graph_compute's contract).
    let Some(graph) = (unsafe { graph.as_ref() }) else { crate::ggml_abort!("NULL graph passed to graph_compute") };
    context(backend).graph_compute(graph)
}

const CPU_BACKEND_INTERFACE: BackendInterface = BackendInterface {
    get_name: Some(get_name),
    free: Some(free),
    set_tensor_async: None,
    get_tensor_async: None,
    set_tensor_2d_async: None,
    get_tensor_2d_async: None,
    cpy_tensor_async: None,
    synchronize: None,
    graph_plan_create: Some(graph_plan_create),
    graph_plan_free: Some(graph_plan_free),
    graph_plan_update: None,
    graph_plan_compute: Some(graph_plan_compute),
    graph_compute: Some(graph_compute),
    event_record: None,
    event_wait: None,
    graph_optimize: None,
};

/// `ggml_backend_cpu_init`: a new CPU backend on the CPU device, with the default team size.
pub fn init() -> BackendPtr {
    api::cpu_init();
    let context = Box::into_raw(Box::new(CpuBackend::default()));
    let backend = Box::new(Backend {
        guid: CPU_GUID.as_ptr(),
        iface: CPU_BACKEND_INTERFACE,
        device: cpu_reg().dev_get(0),
        context: context.cast(),
    });
    // SAFETY: a fresh box is a live backend until `free`.
    match unsafe { BackendPtr::from_raw(Box::into_raw(backend)) } {
        Some(b) => b,
        None => unreachable!("boxes are never null"),
    }
}

/// `ggml_backend_is_cpu`: whether `backend` is a CPU backend.
pub fn is_cpu(backend: BackendPtr) -> bool {
    CPU_GUID.names(backend)
}

// ---------------------------------------------------------------------------------------------
// The registry's extra functions

/// `struct ggml_backend_feature`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BackendFeature {
    pub name: *const c_char,
    pub value: *const c_char,
}

struct FeatureList(Vec<BackendFeature>);

// SAFETY: built once, never written again; the strings are static.
unsafe impl Sync for FeatureList {}
// SAFETY: as above.
unsafe impl Send for FeatureList {}

/// The features `ggml_backend_get_features` lists for the CPU, as ggml names them, ending
/// with a null entry.
fn feature_list() -> &'static [BackendFeature] {
    static FEATURES: OnceLock<FeatureList> = OnceLock::new();
    &FEATURES
        .get_or_init(|| {
            api::cpu_init();
            let flags: [(&'static str, CpuFeature); 28] = [
                ("SSE3", CpuFeature::Sse3),
                ("SSSE3", CpuFeature::Ssse3),
                ("AVX", CpuFeature::Avx),
                ("AVX_VNNI", CpuFeature::AvxVnni),
                ("AVX2", CpuFeature::Avx2),
                ("F16C", CpuFeature::F16c),
                ("FMA", CpuFeature::Fma),
                ("BMI2", CpuFeature::Bmi2),
                ("AVX512", CpuFeature::Avx512),
                ("AVX512_VBMI", CpuFeature::Avx512Vbmi),
                ("AVX512_VNNI", CpuFeature::Avx512Vnni),
                ("AVX512_BF16", CpuFeature::Avx512Bf16),
                ("AMX_INT8", CpuFeature::AmxInt8),
                ("NEON", CpuFeature::Neon),
                ("ARM_FMA", CpuFeature::ArmFma),
                ("FP16_VA", CpuFeature::Fp16Va),
                ("MATMUL_INT8", CpuFeature::MatmulInt8),
                ("SVE", CpuFeature::Sve),
                ("DOTPROD", CpuFeature::Dotprod),
                ("SVE_CNT", CpuFeature::SveCnt),
                ("SME", CpuFeature::Sme),
                ("SME2", CpuFeature::Sme2),
                ("RISCV_V", CpuFeature::RiscvV),
                ("RVV_VLEN", CpuFeature::RvvVlen),
                ("VSX", CpuFeature::Vsx),
                ("VXE", CpuFeature::Vxe),
                ("WASM_SIMD", CpuFeature::WasmSimd),
                ("LLAMAFILE", CpuFeature::Llamafile),
            ];
            let sized = [CpuFeature::SveCnt, CpuFeature::RvvVlen];
            let mut list: Vec<BackendFeature> = flags
                .iter()
                .filter_map(|&(name, f)| {
                    let value = cpu_has(f);
                    (value > 0).then(|| {
                        let value: &'static str = if sized.contains(&f) { value.to_string().leak() } else { "1" };
                        BackendFeature {
                            name: crate::core::c_str::static_c_str(name),
                            value: crate::core::c_str::static_c_str(value),
                        }
                    })
                })
                .collect();
            list.push(BackendFeature { name: std::ptr::null(), value: std::ptr::null() });
            FeatureList(list)
        })
        .0
}

/// `ggml_backend_get_features_t` for the CPU registry.
unsafe extern "C" fn get_features(_reg: *mut Reg) -> *const BackendFeature {
    feature_list().as_ptr()
}

// The C entries behind the registry's extra functions; `ffi::cpu` exports the same calls
// under their public names.

/// `ggml_backend_cpu_set_n_threads`.
///
/// # Safety
/// `backend` is a live CPU backend (others abort), as for every setter below.
pub unsafe extern "C" fn set_n_threads_entry(backend: *mut Backend, n_threads: c_int) {
    context(backend).set_n_threads(n_threads);
}

/// `ggml_backend_cpu_set_abort_callback`.
///
/// # Safety
/// As [`set_n_threads_entry`].
pub unsafe extern "C" fn set_abort_callback_entry(backend: *mut Backend, callback: AbortCallback, data: *mut c_void) {
    context(backend).set_abort_callback(callback, data);
}

/// `ggml_backend_cpu_set_use_ref`.
///
/// # Safety
/// As [`set_n_threads_entry`].
pub unsafe extern "C" fn set_use_ref_entry(backend: *mut Backend, use_ref: bool) {
    context(backend).set_use_ref(use_ref);
}

/// `ggml_backend_cpu_set_threadpool`.
///
/// # Safety
/// As [`set_n_threads_entry`]; `pool` is null or a live pool that stays alive while set.
pub unsafe extern "C" fn set_threadpool_entry(backend: *mut Backend, pool: *mut Threadpool) {
    // SAFETY: passed on from the caller.
    unsafe { context(backend).set_threadpool(pool) };
}

/// `ggml_numa_init`.
pub extern "C" fn numa_init_entry(strategy: c_int) {
    api::numa_init(strategy);
}

/// `ggml_is_numa`.
pub extern "C" fn is_numa_entry() -> bool {
    api::is_numa()
}

/// `ggml_threadpool_new`.
///
/// # Safety
/// `params` is null (which aborts) or points to a params struct.
pub unsafe extern "C" fn threadpool_new_entry(params: *mut ThreadpoolParams) -> *mut Threadpool {
    // SAFETY: callers pass a params struct (ggml_threadpool_params_default fills one).
    let Some(params) = (unsafe { params.as_ref() }) else {
        crate::ggml_abort!("NULL params passed to ggml_threadpool_new")
    };
    Box::into_raw(Box::new(Threadpool::new(params)))
}

/// `ggml_threadpool_free`: null is ignored.
///
/// # Safety
/// `pool` is null or a pool made by [`threadpool_new_entry`], not used afterwards.
pub unsafe extern "C" fn threadpool_free_entry(pool: *mut Threadpool) {
    if !pool.is_null() {
        // SAFETY: pools are boxes made by `threadpool_new_entry`, freed once.
        drop(unsafe { Box::from_raw(pool) });
    }
}

/// The CPU device's `init_backend` entry: a new CPU backend (the parameters are unused).
///
/// # Safety
/// None beyond the table's: the arguments are not read.
pub unsafe extern "C" fn device_init_backend(_dev: *mut Device, _params: *const c_char) -> *mut Backend {
    init().as_ptr()
}

/// The CPU device's `supports_op` entry: whether this build's kernels compute `op`.
///
/// # Safety
/// `op` is null (which aborts) or a live tensor whose sources are live.
pub unsafe extern "C" fn device_supports_op(_dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: callers pass a live tensor (ggml_backend_dev_supports_op's contract).
    match unsafe { op.as_ref() } {
        Some(op) => super::kernels::supports_op(op),
        None => crate::ggml_abort!("NULL op passed to the CPU device's supports_op"),
    }
}

/// The CPU registry's extra functions by name, as ggml 0.25.1's `get_proc_address` offers
/// them, except `ggml_backend_dev_get_extra_bufts`, which belongs to the device; null for
/// other names.
pub fn proc_address(name: &CStr) -> *mut c_void {
    match name.to_bytes() {
        b"ggml_backend_set_n_threads" => {
            let f: unsafe extern "C" fn(*mut Backend, c_int) = set_n_threads_entry;
            f as *mut c_void
        }
        b"ggml_backend_get_features" => {
            let f: unsafe extern "C" fn(*mut Reg) -> *const BackendFeature = get_features;
            f as *mut c_void
        }
        b"ggml_backend_set_abort_callback" => {
            let f: unsafe extern "C" fn(*mut Backend, AbortCallback, *mut c_void) = set_abort_callback_entry;
            f as *mut c_void
        }
        b"ggml_backend_cpu_numa_init" => {
            let f: extern "C" fn(c_int) = numa_init_entry;
            f as *mut c_void
        }
        b"ggml_backend_cpu_is_numa" => {
            let f: extern "C" fn() -> bool = is_numa_entry;
            f as *mut c_void
        }
        b"ggml_backend_cpu_set_use_ref" => {
            let f: unsafe extern "C" fn(*mut Backend, bool) = set_use_ref_entry;
            f as *mut c_void
        }
        b"ggml_threadpool_new" => {
            let f: unsafe extern "C" fn(*mut ThreadpoolParams) -> *mut Threadpool = threadpool_new_entry;
            f as *mut c_void
        }
        b"ggml_threadpool_free" => {
            let f: unsafe extern "C" fn(*mut Threadpool) = threadpool_free_entry;
            f as *mut c_void
        }
        b"ggml_backend_cpu_set_threadpool" => {
            let f: unsafe extern "C" fn(*mut Backend, *mut Threadpool) = set_threadpool_entry;
            f as *mut c_void
        }
        _ => std::ptr::null_mut(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_end_with_a_null_entry() {
        let list = feature_list();
        assert!(list.last().is_some_and(|f| f.name.is_null() && f.value.is_null()));
        let names: Vec<String> = list[..list.len() - 1]
            .iter()
            // SAFETY: every entry but the last holds two static C strings.
            .map(|f| unsafe { CStr::from_ptr(f.name) }.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.contains(&"AVX2".to_string()), cpu_has(CpuFeature::Avx2) == 1);
        assert!(!names.contains(&"LLAMAFILE".to_string()));
    }

    #[test]
    fn proc_addresses_cover_the_reference_names() {
        for name in [
            c"ggml_backend_set_n_threads",
            c"ggml_backend_get_features",
            c"ggml_backend_set_abort_callback",
            c"ggml_backend_cpu_numa_init",
            c"ggml_backend_cpu_is_numa",
            c"ggml_backend_cpu_set_use_ref",
            c"ggml_threadpool_new",
            c"ggml_threadpool_free",
            c"ggml_backend_cpu_set_threadpool",
        ] {
            assert!(!proc_address(name).is_null(), "{name:?}");
        }
        assert!(proc_address(c"ggml_backend_cpu_no_such_thing").is_null());
    }

    use crate::core::context::{Context, InitParams};
    use crate::core::graph::GraphPtr;
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::ops::{elementwise, matmul};
    use crate::core::tensor::TensorPtr;
    use crate::core::types::Type;

    fn values<'a>(t: TensorPtr) -> &'a mut [f32] {
        // SAFETY: the test's tensors are contiguous F32 tensors allocated by their context.
        unsafe { std::slice::from_raw_parts_mut(t.data.cast::<f32>(), t.nelements() as usize) }
    }

    /// `mul_mat(a + a, b)` over 3x2 and 2x2 matrices of known values, and its expected result.
    fn model(c: &mut Context) -> (GraphPtr, TensorPtr, Vec<f32>) {
        let a = c.new_tensor(Type::F32, &[2, 3]);
        let b = c.new_tensor(Type::F32, &[2, 2]);
        values(a).copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        values(b).copy_from_slice(&[1.0, -1.0, 0.5, 2.0]);
        let sum = elementwise::add(c, a, a);
        let out = matmul::mul_mat(c, sum, b);
        let g = new_graph_custom(c, 16, false);
        g.get_mut().build_forward_expand(out);
        // out[j][i] = 2 a_i . b_j
        (g, out, vec![-2.0, -2.0, -2.0, 9.0, 19.0, 29.0])
    }

    unsafe extern "C" fn always_abort(data: *mut c_void) -> bool {
        // SAFETY: the test passes a pointer to a live counter.
        unsafe { *data.cast::<u32>() += 1 };
        true
    }

    #[test]
    fn computes_through_the_c_table() {
        let mut c = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false });
        let (g, out, expected) = model(&mut c);
        let b = init();
        let check = |want: Status| {
            values(out).fill(0.0);
            assert_eq!(b.graph_compute(g.get_mut()), want);
            if want == Status::SUCCESS {
                assert_eq!(values(out), &expected[..]);
            }
        };
        for n in [1, 2, 3, 0] {
            context(b.as_ptr()).set_n_threads(n);
            check(Status::SUCCESS);

            values(out).fill(0.0);
            let plan = b.graph_plan_create(&g);
            assert!(!plan.is_null());
            // SAFETY: the plan was just made by this backend for a live graph.
            unsafe {
                assert_eq!(b.graph_plan_compute(plan), Status::SUCCESS);
                b.graph_plan_free(plan);
            }
            assert_eq!(values(out), &expected[..]);
        }

        // the reference kernels, a lent pool, then the backend's own again
        context(b.as_ptr()).set_use_ref(true);
        check(Status::SUCCESS);
        context(b.as_ptr()).set_use_ref(false);
        let pool = Threadpool::new(&ThreadpoolParams::new(2));
        // SAFETY: the pool outlives its loan (taken back below).
        unsafe { context(b.as_ptr()).set_threadpool(std::ptr::from_ref(&pool).cast_mut()) };
        context(b.as_ptr()).set_n_threads(-1);
        check(Status::SUCCESS);
        // SAFETY: null takes the loan back.
        unsafe { context(b.as_ptr()).set_threadpool(std::ptr::null_mut()) };
        drop(pool);
        check(Status::SUCCESS);

        // the abort callback is polled after the first node
        let mut calls = 0u32;
        context(b.as_ptr()).set_abort_callback(Some(always_abort), std::ptr::from_mut(&mut calls).cast());
        check(Status::ABORTED);
        assert_eq!(calls, 1);
        context(b.as_ptr()).set_abort_callback(None, std::ptr::null_mut());
        check(Status::SUCCESS);
        b.free();
    }

    #[test]
    fn backends_are_recognised_by_guid() {
        let b = init();
        assert!(is_cpu(b));
        // SAFETY: get_name returns a static C string.
        assert_eq!(unsafe { CStr::from_ptr(b.name()) }, c"CPU");
        assert_eq!(b.device_ptr(), cpu_reg().dev_get(0));
        b.free();
    }
}
