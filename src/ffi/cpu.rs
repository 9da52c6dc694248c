//! `ggml-cpu.h`: start-up, NUMA, thread pools, planning and computing graphs, the CPU
//! feature queries, the per-type CPU traits, row conversions and the CPU backend's setters.
//! (`ggml_backend_cpu_reg` is in `ffi::backend`; the `ggml_set_*`/`ggml_get_*` element
//! accessors are in `ffi::tensor`.)

use std::ffi::{c_int, c_void};

use crate::backend::interface::Backend;
use crate::core::context::Context;
use crate::core::element;
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::threadpool_params::ThreadpoolParams;
use crate::core::types::Type;
use crate::cpu::api::{self, CpuFeature, TypeTraitsCpu, cpu_has};
use crate::cpu::backend;
use crate::cpu::plan::{AbortCallback, Plan};
use crate::cpu::pool::Threadpool;
use crate::ffi::handle::{arg, opt_arg};
use crate::quants::half::Bf16;

/// A row of `n` values at `ptr` (empty for `n <= 0`).
fn row<'a, T>(ptr: *const T, n: i64) -> &'a [T] {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 {
        return &[];
    }
    crate::ggml_assert!(!ptr.is_null(), "NULL row of {} values", n);
    // SAFETY: callers pass rows holding the count they pass with them.
    unsafe { std::slice::from_raw_parts(ptr, n) }
}

/// A writable row of `n` values at `ptr` (empty for `n <= 0`).
fn row_mut<'a, T>(ptr: *mut T, n: i64) -> &'a mut [T] {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 {
        return &mut [];
    }
    crate::ggml_assert!(!ptr.is_null(), "NULL row of {} values", n);
    // SAFETY: as in `row`; the output does not overlap the input (the functions' contract).
    unsafe { std::slice::from_raw_parts_mut(ptr, n) }
}

// ---- start-up and NUMA ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_init() {
    api::cpu_init();
}

/// `enum ggml_numa_strategy`, as C passes it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct NumaStrategy(pub c_int);

#[unsafe(no_mangle)]
pub extern "C" fn ggml_numa_init(numa: NumaStrategy) {
    api::numa_init(numa.0);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_is_numa() -> bool {
    api::is_numa()
}

// ---- scalar tensors ----

/// A new one-element tensor of `ty` in an allocating context.
fn new_scalar(ctx: &mut Context, ty: Type) -> TensorPtr {
    crate::ggml_assert!(!ctx.no_alloc, "ggml_new_{}: the context does not allocate tensor data", ty.name());
    ctx.new_tensor(ty, &[1])
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_i32(ctx: *mut Context, value: i32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { new_scalar(arg!(ctx), Type::I32) };
    element::set_all_i32(&t, value);
    t.as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_f32(ctx: *mut Context, value: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { new_scalar(arg!(ctx), Type::F32) };
    element::set_all_f32(&t, value);
    t.as_ptr()
}

// ---- thread pools ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_new(params: *mut ThreadpoolParams) -> *mut Threadpool {
    // SAFETY: callers pass a params struct (NULL aborts).
    unsafe { backend::threadpool_new_entry(params) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_free(pool: *mut Threadpool) {
    // SAFETY: callers pass NULL or a pool from ggml_threadpool_new that they no longer use.
    unsafe { backend::threadpool_free_entry(pool) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_pause(pool: *mut Threadpool) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(pool).pause() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_resume(pool: *mut Threadpool) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(pool).resume() };
}

// ---- planning and computing ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_plan(cgraph: *const Graph, n_threads: c_int, pool: *mut Threadpool) -> Plan {
    // SAFETY: the C caller's contract: handles passed to the API are live (a NULL pool means
    // none).
    unsafe { api::graph_plan(arg!(cgraph), n_threads, opt_arg!(pool)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_compute(cgraph: *mut Graph, cplan: *mut Plan) -> Status {
    // SAFETY: the C caller's contract: a live graph, and the plan ggml_graph_plan returned,
    // completed as its contract says (see `Plan`).
    unsafe { api::graph_compute(arg!(cgraph), arg!(cplan)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_compute_with_ctx(ctx: *mut Context, cgraph: *mut Graph, n_threads: c_int) -> Status {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { api::graph_compute_with_ctx(arg!(ctx), arg!(cgraph), n_threads) }
}

// ---- what the processor offers ----

macro_rules! cpu_queries {
    ($($name:ident => $feature:ident),* $(,)?) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $name() -> c_int {
                cpu_has(CpuFeature::$feature)
            }
        )*
    };
}

cpu_queries! {
    ggml_cpu_has_sse3 => Sse3,
    ggml_cpu_has_ssse3 => Ssse3,
    ggml_cpu_has_avx => Avx,
    ggml_cpu_has_avx_vnni => AvxVnni,
    ggml_cpu_has_avx2 => Avx2,
    ggml_cpu_has_bmi2 => Bmi2,
    ggml_cpu_has_f16c => F16c,
    ggml_cpu_has_fma => Fma,
    ggml_cpu_has_avx512 => Avx512,
    ggml_cpu_has_avx512_vbmi => Avx512Vbmi,
    ggml_cpu_has_avx512_vnni => Avx512Vnni,
    ggml_cpu_has_avx512_bf16 => Avx512Bf16,
    ggml_cpu_has_amx_int8 => AmxInt8,
    ggml_cpu_has_neon => Neon,
    ggml_cpu_has_arm_fma => ArmFma,
    ggml_cpu_has_fp16_va => Fp16Va,
    ggml_cpu_has_dotprod => Dotprod,
    ggml_cpu_has_matmul_int8 => MatmulInt8,
    ggml_cpu_has_sve => Sve,
    ggml_cpu_get_sve_cnt => SveCnt,
    ggml_cpu_has_sme => Sme,
    ggml_cpu_has_sme2 => Sme2,
    ggml_cpu_has_riscv_v => RiscvV,
    ggml_cpu_get_rvv_vlen => RvvVlen,
    ggml_cpu_has_vsx => Vsx,
    ggml_cpu_has_vxe => Vxe,
    ggml_cpu_has_wasm_simd => WasmSimd,
    ggml_cpu_has_llamafile => Llamafile,
}

// ---- per-type CPU traits and row conversions ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_type_traits_cpu(type_: Type) -> *const TypeTraitsCpu {
    api::type_traits_cpu(type_)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_fp32_to_fp32(x: *const f32, y: *mut f32, n: i64) {
    row_mut(y, n).copy_from_slice(row(x, n));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_fp32_to_i32(x: *const f32, y: *mut i32, n: i64) {
    api::fp32_to_i32(row(x, n), row_mut(y, n));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_fp32_to_fp16(x: *const f32, y: *mut u16, n: i64) {
    api::fp32_to_fp16(row(x, n), row_mut(y, n));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_fp16_to_fp32(x: *const u16, y: *mut f32, n: i64) {
    api::fp16_to_fp32(row(x, n), row_mut(y, n));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_fp32_to_bf16(x: *const f32, y: *mut Bf16, n: i64) {
    api::fp32_to_bf16(row(x, n), row_mut(y, n));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_bf16_to_fp32(x: *const Bf16, y: *mut f32, n: i64) {
    api::bf16_to_fp32(row(x, n), row_mut(y, n));
}

// ---- the CPU backend ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_init() -> *mut Backend {
    backend::init().as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_is_cpu(backend: *mut Backend) -> bool {
    // SAFETY: a non-null backend handle points to a live backend (ggml's contract).
    unsafe { opt_arg!(backend) }.is_some_and(backend::is_cpu)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_n_threads(backend_cpu: *mut Backend, n_threads: c_int) {
    // SAFETY: callers pass a live CPU backend (others abort).
    unsafe { backend::set_n_threads_entry(backend_cpu, n_threads) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_threadpool(backend_cpu: *mut Backend, pool: *mut Threadpool) {
    // SAFETY: as above; the caller keeps a lent pool alive while it is set.
    unsafe { backend::set_threadpool_entry(backend_cpu, pool) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_abort_callback(
    backend_cpu: *mut Backend,
    abort_callback: AbortCallback,
    abort_callback_data: *mut c_void,
) {
    // SAFETY: callers pass a live CPU backend (others abort).
    unsafe { backend::set_abort_callback_entry(backend_cpu, abort_callback, abort_callback_data) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_use_ref(backend_cpu: *mut Backend, use_ref: bool) {
    // SAFETY: callers pass a live CPU backend (others abort).
    unsafe { backend::set_use_ref_entry(backend_cpu, use_ref) };
}
