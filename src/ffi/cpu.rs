//! `ggml-cpu.h`: start-up, NUMA, thread pools, planning and computing graphs, the CPU
//! feature queries, the per-type CPU traits, row conversions and the CPU backend's setters.
//! (`ggml_backend_cpu_reg` is in `ffi::backend`; the `ggml_set_*`/`ggml_get_*` element
//! accessors are in `ffi::tensor`.)

use std::ffi::{CStr, c_int, c_void};
use std::ptr::NonNull;

use super::cpu_kernels::type_traits::{TypeTraitsCpu, type_traits_cpu};
use crate::backend::interface::{Backend, BackendFeature, BufferType, Device, Reg};
use crate::core::context::Context;
use crate::core::element;
use crate::core::graph::Graph;
use crate::core::status::AbortCallback;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::threadpool_params::ThreadpoolParams;
use crate::core::types::Type;
use crate::cpu::api::{self, CpuFeature, cpu_has};
use crate::cpu::backend::{self, cpu_backend};
use crate::cpu::device;
use crate::cpu::plan::Plan;
use crate::cpu::threadpool::Threadpool;
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
    // SAFETY: the C caller's contract: a params struct (ggml_threadpool_params_default fills one).
    let Some(params) = (unsafe { params.as_ref() }) else {
        crate::ggml_abort!("NULL params passed to ggml_threadpool_new")
    };
    Box::into_raw(Box::new(Threadpool::new(params)))
}

/// NULL is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_free(pool: *mut Threadpool) {
    if !pool.is_null() {
        // SAFETY: pools are boxes made by `ggml_threadpool_new`, freed once (the caller no
        // longer uses it).
        drop(unsafe { Box::from_raw(pool) });
    }
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
    type_traits_cpu(type_)
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
    device::init().as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_is_cpu(backend: *mut Backend) -> bool {
    // SAFETY: a non-null backend handle points to a live backend (ggml's contract).
    unsafe { opt_arg!(backend) }.is_some_and(backend::is_cpu)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_n_threads(backend_cpu: *mut Backend, n_threads: c_int) {
    // SAFETY: the C caller's contract: a live CPU backend (others abort).
    cpu_backend(unsafe { arg!(backend_cpu) }).set_n_threads(n_threads);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_threadpool(backend_cpu: *mut Backend, pool: *mut Threadpool) {
    // SAFETY: as above; the caller keeps a lent pool alive while it is set.
    unsafe { cpu_backend(arg!(backend_cpu)).set_threadpool(pool) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_abort_callback(
    backend_cpu: *mut Backend,
    abort_callback: AbortCallback,
    abort_callback_data: *mut c_void,
) {
    // SAFETY: the C caller's contract: a live CPU backend (others abort).
    cpu_backend(unsafe { arg!(backend_cpu) }).set_abort_callback(abort_callback, abort_callback_data);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_cpu_set_use_ref(backend_cpu: *mut Backend, use_ref: bool) {
    // SAFETY: the C caller's contract: a live CPU backend (others abort).
    cpu_backend(unsafe { arg!(backend_cpu) }).set_use_ref(use_ref);
}

// ---- the CPU registry's extra functions ----

/// `ggml_backend_get_features_t` for the CPU registry.
unsafe extern "C" fn get_features(_reg: *mut Reg) -> *const BackendFeature {
    api::backend_features().as_ptr()
}

/// `ggml_backend_dev_get_extra_bufts_t` for the CPU device: its extra buffer types, NULL
/// terminated.
unsafe extern "C" fn dev_get_extra_bufts(_dev: *mut Device) -> *mut *mut BufferType {
    struct List(Vec<*mut BufferType>);
    // SAFETY: the list is never written after it is made; the pointers are of types that
    // live for the process.
    unsafe impl Send for List {}
    // SAFETY: as above.
    unsafe impl Sync for List {}
    static LIST: std::sync::LazyLock<List> = std::sync::LazyLock::new(|| {
        let mut list: Vec<*mut BufferType> = device::extra_buffer_types().iter().map(|b| b.as_ptr()).collect();
        list.push(std::ptr::null_mut());
        List(list)
    });
    // (callers read the list only, as ggml's own; the pointer is mutable in the C signature)
    LIST.0.as_ptr().cast_mut()
}

/// The CPU registry's extra functions by name, as ggml 0.25.1's `get_proc_address` offers
/// them: the exports of this file under the names the registry gives them.
pub fn proc_address(name: &CStr) -> Option<NonNull<c_void>> {
    let f: *mut c_void = match name.to_bytes() {
        b"ggml_backend_set_n_threads" => ggml_backend_cpu_set_n_threads as *mut c_void,
        b"ggml_backend_get_features" => get_features as *mut c_void,
        b"ggml_backend_set_abort_callback" => ggml_backend_cpu_set_abort_callback as *mut c_void,
        b"ggml_backend_cpu_numa_init" => ggml_numa_init as *mut c_void,
        b"ggml_backend_cpu_is_numa" => ggml_is_numa as *mut c_void,
        b"ggml_backend_cpu_set_use_ref" => ggml_backend_cpu_set_use_ref as *mut c_void,
        b"ggml_threadpool_new" => ggml_threadpool_new as *mut c_void,
        b"ggml_threadpool_free" => ggml_threadpool_free as *mut c_void,
        b"ggml_backend_cpu_set_threadpool" => ggml_backend_cpu_set_threadpool as *mut c_void,
        b"ggml_backend_dev_get_extra_bufts" => dev_get_extra_bufts as *mut c_void,
        _ => return None,
    };
    NonNull::new(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_end_with_a_null_entry() {
        let list = api::backend_features();
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
            c"ggml_backend_dev_get_extra_bufts",
        ] {
            assert!(proc_address(name).is_some(), "{name:?}");
        }
        assert!(proc_address(c"ggml_backend_cpu_no_such_thing").is_none());
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
    fn computes_through_the_c_setters() {
        let mut c = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false });
        let (g, out, expected) = model(&mut c);
        let b = device::init();
        let check = |want: Status| {
            values(out).fill(0.0);
            assert_eq!(b.graph_compute(g.get_mut()), want);
            if want == Status::SUCCESS {
                assert_eq!(values(out), &expected[..]);
            }
        };
        for n in [1, 2, 3, 0] {
            ggml_backend_cpu_set_n_threads(b.as_ptr(), n);
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
        ggml_backend_cpu_set_use_ref(b.as_ptr(), true);
        check(Status::SUCCESS);
        ggml_backend_cpu_set_use_ref(b.as_ptr(), false);
        let pool = Threadpool::new(&ThreadpoolParams::new(2));
        // the pool outlives its loan (taken back below)
        ggml_backend_cpu_set_threadpool(b.as_ptr(), std::ptr::from_ref(&pool).cast_mut());
        ggml_backend_cpu_set_n_threads(b.as_ptr(), -1);
        check(Status::SUCCESS);
        // null takes the loan back
        ggml_backend_cpu_set_threadpool(b.as_ptr(), std::ptr::null_mut());
        drop(pool);
        check(Status::SUCCESS);

        // the abort callback is polled after the first node
        let mut calls = 0u32;
        ggml_backend_cpu_set_abort_callback(b.as_ptr(), Some(always_abort), std::ptr::from_mut(&mut calls).cast());
        check(Status::ABORTED);
        assert_eq!(calls, 1);
        ggml_backend_cpu_set_abort_callback(b.as_ptr(), None, std::ptr::null_mut());
        check(Status::SUCCESS);
        b.free();
    }
}
