//! `ggml-cpu.h` in Rust terms: start-up, NUMA discovery, what the processor offers, the
//! per-type CPU traits (`ggml_type_traits_cpu`), row conversions, and planning and computing
//! a graph with the CPU kernels. `ffi::cpu` exports these to C.

use std::ffi::{c_int, c_void};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use super::compute;
use super::kernels::{CpuKernels, dot, features, simd};
use super::plan::{self, Plan};
use super::pool::Threadpool;
use crate::backend::interface::Status;
use crate::core::context::{Context, ObjectType};
use crate::core::graph::Graph;
use crate::core::types::Type;
use crate::quants::half::Bf16;
use crate::quants::k_quants::BlockQ8K;
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};
use crate::quants::traits::FromFloatFn;
use crate::quants::{BlockFormat, blocks_mut};

// ---------------------------------------------------------------------------------------------
// Start-up

/// Settings read once at start-up.
#[derive(Clone, Copy, Debug)]
struct Settings {
    /// `GGML_CPU_DISABLE_FUSION=1`: compute every node on its own.
    fusion_disabled: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// `ggml_cpu_init`: detects the processor's features and reads the environment, once per
/// process; later calls return at once.
pub fn cpu_init() {
    settings();
}

fn settings() -> &'static Settings {
    SETTINGS.get_or_init(|| {
        crate::core::time::init();
        features::features();
        let fusion_disabled = std::env::var("GGML_CPU_DISABLE_FUSION").is_ok_and(|v| v.trim().parse() == Ok(1));
        Settings { fusion_disabled }
    })
}

/// Whether kernels may compute several nodes as one (not when `GGML_CPU_DISABLE_FUSION=1`).
pub fn fusion_enabled() -> bool {
    !settings().fusion_disabled
}

// ---------------------------------------------------------------------------------------------
// NUMA

/// `enum ggml_numa_strategy`.
pub mod numa_strategy {
    pub const DISABLED: i32 = 0;
    pub const DISTRIBUTE: i32 = 1;
    pub const ISOLATE: i32 = 2;
    pub const NUMACTL: i32 = 3;
    pub const MIRROR: i32 = 4;
}

/// `GGML_NUMA_MAX_NODES` and `GGML_NUMA_MAX_CPUS`: how far discovery looks.
const NUMA_MAX_NODES: usize = 8;
const NUMA_MAX_CPUS: usize = 512;

/// What `ggml_numa_init` found.
#[derive(Clone, Debug, Default)]
pub struct NumaTopology {
    pub strategy: i32,
    /// The CPUs of each node, by node number.
    pub nodes: Vec<Vec<usize>>,
    pub total_cpus: usize,
    /// The node the initialising thread ran on.
    pub current_node: usize,
}

static NUMA: Mutex<Option<NumaTopology>> = Mutex::new(None);

/// Counts the directories `prefix0`, `prefix1`, ... (at most `max`) that exist.
fn count_numbered(prefix: &str, max: usize) -> usize {
    (0..max).take_while(|i| Path::new(&format!("{prefix}{i}")).exists()).count()
}

/// The CPU and NUMA node the calling thread runs on.
#[cfg(target_os = "linux")]
fn current_cpu_and_node() -> Option<(usize, usize)> {
    let (mut cpu, mut node) = (0u32, 0u32);
    // SAFETY: getcpu writes two unsigned ints through the pointers given; the third argument
    // (a cache, unused since Linux 2.6.24) may be null.
    let rc = unsafe {
        libc::syscall(libc::SYS_getcpu, &mut cpu as *mut u32, &mut node as *mut u32, std::ptr::null_mut::<c_void>())
    };
    (rc == 0).then_some((cpu as usize, node as usize))
}

#[cfg(not(target_os = "linux"))]
fn current_cpu_and_node() -> Option<(usize, usize)> {
    None
}

/// Reads the machine's NUMA layout from sysfs; None where it cannot be read.
fn discover_numa(strategy: i32) -> Option<NumaTopology> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let n_nodes = count_numbered("/sys/devices/system/node/node", NUMA_MAX_NODES);
    let total_cpus = count_numbered("/sys/devices/system/cpu/cpu", NUMA_MAX_CPUS);
    let (_cpu, current_node) = current_cpu_and_node()?;
    if n_nodes < 1 || total_cpus < 1 {
        return None;
    }
    let nodes = (0..n_nodes)
        .map(|n| {
            (0..total_cpus)
                .filter(|c| Path::new(&format!("/sys/devices/system/node/node{n}/cpu{c}")).exists())
                .collect()
        })
        .collect();
    Some(NumaTopology { strategy, nodes, total_cpus, current_node })
}

/// `ggml_numa_init`: discovers the NUMA nodes and their CPUs once. A second call (after a
/// successful first) only says so; a failed discovery leaves the system seen as one node.
pub fn numa_init(strategy: i32) {
    let mut numa = NUMA.lock().unwrap_or_else(|e| e.into_inner());
    if numa.as_ref().is_some_and(|t| !t.nodes.is_empty()) {
        crate::log_warn!("ggml_numa_init: NUMA already initialized\n");
        return;
    }
    *numa = discover_numa(strategy);
    let multi_node = numa.as_ref().is_some_and(|t| t.nodes.len() > 1);
    drop(numa);
    if multi_node {
        let balancing = std::fs::read_to_string("/proc/sys/kernel/numa_balancing").unwrap_or_else(|_| "0\n".into());
        if balancing != "0\n" {
            crate::log_warn!(
                "/proc/sys/kernel/numa_balancing is enabled, this has been observed to impair performance\n"
            );
        }
    }
}

/// `ggml_is_numa`: true when `ggml_numa_init` found more than one node.
pub fn is_numa() -> bool {
    NUMA.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|t| t.nodes.len() > 1)
}

/// The layout `ggml_numa_init` found, if it ran and succeeded.
pub fn numa_topology() -> Option<NumaTopology> {
    NUMA.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

// ---------------------------------------------------------------------------------------------
// What the processor offers

/// One `ggml_cpu_has_*` / `ggml_cpu_get_*` query.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CpuFeature {
    Sse3,
    Ssse3,
    Avx,
    AvxVnni,
    Avx2,
    Bmi2,
    F16c,
    Fma,
    Avx512,
    Avx512Vbmi,
    Avx512Vnni,
    Avx512Bf16,
    AmxInt8,
    Neon,
    ArmFma,
    Fp16Va,
    Dotprod,
    MatmulInt8,
    Sve,
    /// The SVE vector length in bytes.
    SveCnt,
    Sme,
    Sme2,
    RiscvV,
    /// The RISC-V vector length in bytes.
    RvvVlen,
    Vsx,
    Vxe,
    WasmSimd,
    Llamafile,
}

#[cfg(target_arch = "aarch64")]
fn arm_feature(f: CpuFeature) -> c_int {
    use std::arch::is_aarch64_feature_detected as has;
    let on = match f {
        CpuFeature::Neon | CpuFeature::ArmFma => has!("neon"),
        CpuFeature::Fp16Va => has!("fp16"),
        CpuFeature::Dotprod => has!("dotprod"),
        CpuFeature::MatmulInt8 => has!("i8mm"),
        CpuFeature::Sve => has!("sve"),
        CpuFeature::Sme => has!("sme"),
        _ => false,
    };
    c_int::from(on)
}

#[cfg(not(target_arch = "aarch64"))]
fn arm_feature(_f: CpuFeature) -> c_int {
    0
}

/// The answer to one `ggml_cpu_has_*` query: 1 or 0 (a size in bytes for the two lengths).
/// x86 and ARM answers come from the processor itself, as the kernels pick their paths; this
/// build has no AMX, SVE, SME, RISC-V, POWER, s390x, WebAssembly or llamafile code paths.
pub fn cpu_has(f: CpuFeature) -> c_int {
    let x = features::features();
    let on = match f {
        CpuFeature::Sse3 => x.sse3,
        CpuFeature::Ssse3 => x.ssse3,
        CpuFeature::Avx => x.avx,
        CpuFeature::AvxVnni => x.avx_vnni,
        CpuFeature::Avx2 => x.avx2,
        CpuFeature::Bmi2 => x.bmi2,
        CpuFeature::F16c => x.f16c,
        CpuFeature::Fma => x.fma,
        CpuFeature::Avx512 => x.avx512f,
        CpuFeature::Avx512Vbmi => x.avx512vbmi,
        CpuFeature::Avx512Vnni => x.avx512vnni,
        CpuFeature::Avx512Bf16 => x.avx512bf16,
        CpuFeature::Neon
        | CpuFeature::ArmFma
        | CpuFeature::Fp16Va
        | CpuFeature::Dotprod
        | CpuFeature::MatmulInt8
        | CpuFeature::Sve
        | CpuFeature::Sme => return arm_feature(f),
        CpuFeature::AmxInt8
        | CpuFeature::SveCnt
        | CpuFeature::Sme2
        | CpuFeature::RiscvV
        | CpuFeature::RvvVlen
        | CpuFeature::Vsx
        | CpuFeature::Vxe
        | CpuFeature::WasmSimd
        | CpuFeature::Llamafile => false,
    };
    c_int::from(on)
}

// ---------------------------------------------------------------------------------------------
// Row conversions (`ggml_cpu_fp32_to_fp16` and friends), on the lengths of the shorter side

/// Rounds to binary16, to nearest even.
pub fn fp32_to_fp16(x: &[f32], y: &mut [u16]) {
    simd::f32_to_fp16_row(x, y);
}

/// Expands binary16 values (exact).
pub fn fp16_to_fp32(x: &[u16], y: &mut [f32]) {
    simd::fp16_to_f32_row(x, y);
}

/// Rounds to bfloat16, to nearest even.
pub fn fp32_to_bf16(x: &[f32], y: &mut [Bf16]) {
    simd::f32_to_bf16_row(x, y);
}

/// Expands bfloat16 values (exact).
pub fn bf16_to_fp32(x: &[Bf16], y: &mut [f32]) {
    simd::bf16_to_f32_row(x, y);
}

/// Truncates toward zero (saturating where C's conversion would be undefined).
pub fn fp32_to_i32(x: &[f32], y: &mut [i32]) {
    for (d, &s) in y.iter_mut().zip(x) {
        *d = s as i32;
    }
}

// ---------------------------------------------------------------------------------------------
// `struct ggml_type_traits_cpu`

/// `ggml_vec_dot_t`: `nrc`×`nrc` dot products of `n` values. Row `r` of `x` lies at
/// `x + r·bx`, row `c` of `y` at `y + c·by`; their product goes to `s[c·bs + r]`. With
/// `nrc == 1` the strides are unused.
pub type VecDotFn = unsafe extern "C" fn(
    n: c_int,
    s: *mut f32,
    bs: usize,
    x: *const c_void,
    bx: usize,
    y: *const c_void,
    by: usize,
    nrc: c_int,
);

/// `struct ggml_type_traits_cpu` (32 bytes): how the CPU backend converts activations for a
/// weight type (`from_float`, into `vec_dot_type`) and takes their dot products.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TypeTraitsCpu {
    pub from_float: Option<FromFloatFn>,
    pub vec_dot: Option<VecDotFn>,
    pub vec_dot_type: Type,
    /// Rows one `vec_dot` call handles (`nrc`); 0 for types without a dot product.
    pub nrows: i64,
}

const _: () = assert!(std::mem::size_of::<TypeTraitsCpu>() == 32);
const _: () = assert!(std::mem::offset_of!(TypeTraitsCpu, vec_dot_type) == 16);
const _: () = assert!(std::mem::offset_of!(TypeTraitsCpu, nrows) == 24);

/// A dot product this build has, through the C signature.
///
/// # Safety
/// `x` holds `nrc` rows of `n` values of weight type `T` (`bx` bytes apart), `y` as many rows
/// of its activation type (`by` bytes apart), and `s` room for the products at `c·bs + r`.
unsafe extern "C" fn vec_dot<const T: i32>(
    n: c_int,
    s: *mut f32,
    bs: usize,
    x: *const c_void,
    bx: usize,
    y: *const c_void,
    by: usize,
    nrc: c_int,
) {
    let ty = Type(T);
    let Some(kernel) = dot::DotKernel::for_type(ty) else {
        crate::ggml_abort!("vec_dot: no dot product for {}", ty.name())
    };
    let n = usize::try_from(n).unwrap_or(0);
    let (x_len, y_len) = (ty.row_size(n as i64), kernel.vec_dot_type.row_size(n as i64));
    let nrc = usize::try_from(nrc).unwrap_or(1).max(1);
    let use_simd = features::features().has_avx2_fma();
    for c in 0..nrc {
        for r in 0..nrc {
            // SAFETY: the caller provides the rows and the output slots (the function's
            // contract); with one row the strides are not used.
            unsafe {
                let xr = std::slice::from_raw_parts(x.cast::<u8>().add(r * bx), x_len);
                let yc = std::slice::from_raw_parts(y.cast::<u8>().add(c * by), y_len);
                *s.add(c * bs + r) = kernel.dot(n, xr, yc, use_simd);
            }
        }
    }
}

/// Quantizes activations to Q8_0 as the CPU kernels do.
///
/// # Safety
/// As [`quantize_blocks`].
unsafe extern "C" fn quantize_q8_0(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    if let Some((x, y)) = unsafe { quantize_operands::<BlockQ8_0>(x, y, k) } {
        dot::quantize_row_q8_0(x, blocks_mut::<BlockQ8_0>(y));
    }
}

/// Quantizes activations to Q8_1 as the CPU kernels do.
///
/// # Safety
/// As [`quantize_blocks`].
unsafe extern "C" fn quantize_q8_1(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    if let Some((x, y)) = unsafe { quantize_operands::<BlockQ8_1>(x, y, k) } {
        dot::quantize_row_q8_1(x, blocks_mut::<BlockQ8_1>(y));
    }
}

/// Quantizes activations to Q8_K as the CPU kernels do (ggml's reference quantizer).
///
/// # Safety
/// As [`quantize_blocks`].
unsafe extern "C" fn quantize_q8_k(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    if let Some((x, y)) = unsafe { quantize_operands::<BlockQ8K>(x, y, k) } {
        crate::quants::k_quants::quantize_row_q8_k(x, blocks_mut::<BlockQ8K>(y));
    }
}

/// The input and output of a quantizer as slices: None for an empty row.
///
/// # Safety
/// As [`quantize_blocks`].
unsafe fn quantize_operands<'a, B: BlockFormat>(
    x: *const f32,
    y: *mut c_void,
    k: i64,
) -> Option<(&'a [f32], &'a mut [u8])> {
    let k = usize::try_from(k).ok().filter(|&k| k > 0)?;
    crate::ggml_assert!(k.is_multiple_of(B::QK), "from_float: {} values are not whole {} blocks", k, B::TYPE.name());
    crate::ggml_assert!(!x.is_null() && !y.is_null(), "from_float: NULL row");
    // SAFETY: the caller provides `k` floats and room for their blocks.
    unsafe {
        Some((
            std::slice::from_raw_parts(x, k),
            std::slice::from_raw_parts_mut(y.cast::<u8>(), k / B::QK * std::mem::size_of::<B>()),
        ))
    }
}

/// `k` floats at `x` and room for `k` values of `T` at `y`, as slices (empty for `k <= 0`).
///
/// # Safety
/// `x` holds `k` floats and `y` room for `k` values of `T`, not overlapping them.
unsafe fn float_row_operands<'a, T>(x: *const f32, y: *mut c_void, k: i64) -> (&'a [f32], &'a mut [T]) {
    let k = usize::try_from(k).unwrap_or(0);
    if k == 0 {
        return (&[], &mut []);
    }
    crate::ggml_assert!(!x.is_null() && !y.is_null(), "from_float: NULL row");
    // SAFETY: the caller provides both rows.
    unsafe { (std::slice::from_raw_parts(x, k), std::slice::from_raw_parts_mut(y.cast::<T>(), k)) }
}

/// `from_float` of F32: a copy.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn f32_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<f32>(x, y, k) };
    y.copy_from_slice(x);
}

/// `from_float` of F16.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn f16_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<u16>(x, y, k) };
    fp32_to_fp16(x, y);
}

/// `from_float` of BF16.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn bf16_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<Bf16>(x, y, k) };
    fp32_to_bf16(x, y);
}

/// `from_float` of I32.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn i32_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<i32>(x, y, k) };
    fp32_to_i32(x, y);
}

/// What ggml 0.25.1's table says of a type: its activation type, the rows one `vec_dot` call
/// handles, whether it has a dot product and whether it has a `from_float`.
#[derive(Clone, Copy)]
struct ReferenceEntry {
    vec_dot_type: Type,
    nrows: i64,
    has_dot: bool,
    has_from_float: bool,
}

fn reference_entry(ty: Type) -> ReferenceEntry {
    let entry = |vec_dot_type, has_from_float| ReferenceEntry { vec_dot_type, nrows: 1, has_dot: true, has_from_float };
    match ty {
        Type::F32 | Type::F16 | Type::BF16 => entry(ty, true),
        Type::Q4_0 | Type::Q5_0 | Type::Q8_0 | Type::Q1_0 | Type::Q2_0 | Type::MXFP4 | Type::NVFP4 | Type::IQ4_NL => {
            entry(Type::Q8_0, true)
        }
        Type::Q4_1 | Type::Q5_1 => entry(Type::Q8_1, true),
        Type::Q2_K | Type::Q3_K | Type::Q4_K | Type::Q5_K | Type::Q6_K | Type::IQ4_XS | Type::TQ1_0 | Type::TQ2_0 => {
            entry(Type::Q8_K, true)
        }
        // quantizing these needs tables set up by ggml_quantize_init: no from_float
        Type::IQ2_XXS | Type::IQ2_XS | Type::IQ3_XXS | Type::IQ3_S | Type::IQ2_S | Type::IQ1_S | Type::IQ1_M => {
            entry(Type::Q8_K, false)
        }
        Type::Q8_1 => ReferenceEntry { vec_dot_type: Type::Q8_1, nrows: 1, has_dot: false, has_from_float: true },
        Type::Q8_K | Type::I32 => {
            ReferenceEntry { vec_dot_type: Type::F32, nrows: 0, has_dot: false, has_from_float: true }
        }
        _ => ReferenceEntry { vec_dot_type: Type::F32, nrows: 0, has_dot: false, has_from_float: false },
    }
}

/// The C face of the dot product of `ty`, for every type ggml has one for.
fn dot_fn(ty: Type) -> Option<VecDotFn> {
    macro_rules! dots {
        ($($t:ident),*) => {
            match ty {
                $(Type::$t => Some(vec_dot::<{ Type::$t.0 }>),)*
                _ => None,
            }
        };
    }
    dots!(
        F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q1_0, Q2_0, MXFP4, NVFP4, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
        IQ4_XS, TQ1_0, TQ2_0, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ3_S, IQ2_S, IQ1_S, IQ1_M
    )
}

/// The converter into `ty` this build has: the CPU kernels' own for the float types and the
/// activation formats, the reference quantizer for the others.
fn from_float_of(ty: Type) -> Option<FromFloatFn> {
    match ty {
        Type::F32 => Some(f32_from_float),
        Type::F16 => Some(f16_from_float),
        Type::BF16 => Some(bf16_from_float),
        Type::I32 => Some(i32_from_float),
        Type::Q8_0 => Some(quantize_q8_0),
        Type::Q8_1 => Some(quantize_q8_1),
        Type::Q8_K => Some(quantize_q8_k),
        _ => crate::quants::traits::type_traits(ty).from_float_ref,
    }
}

const N_TYPES: usize = Type::COUNT as usize;

/// The table: ggml 0.25.1's activation types and row counts for every type, with the
/// converters and dot products this build has. A type that should have a dot product but has
/// none here (or whose activation format cannot be made) gets no `from_float` either, so that
/// callers who test a type by its `from_float` (as ggml's test-quantize-fns does) skip it.
fn build_table() -> [TypeTraitsCpu; N_TYPES] {
    let mut table: [TypeTraitsCpu; N_TYPES] = std::array::from_fn(|t| {
        let ty = Type(t as i32);
        let r = reference_entry(ty);
        let vec_dot = if r.has_dot && dot::DotKernel::for_type(ty).is_some() { dot_fn(ty) } else { None };
        let from_float = if r.has_from_float { from_float_of(ty) } else { None };
        TypeTraitsCpu { from_float, vec_dot, vec_dot_type: r.vec_dot_type, nrows: r.nrows }
    });
    for t in 0..N_TYPES {
        let r = reference_entry(Type(t as i32));
        let activations = table[r.vec_dot_type.0 as usize].from_float.is_some();
        if r.has_dot && (table[t].vec_dot.is_none() || !activations) {
            table[t].from_float = None;
        }
    }
    table
}

/// `ggml_get_type_traits_cpu`: the entry of a valid type (aborts on other values).
pub fn type_traits_cpu(ty: Type) -> &'static TypeTraitsCpu {
    static TABLE: OnceLock<[TypeTraitsCpu; N_TYPES]> = OnceLock::new();
    match usize::try_from(ty.0).ok().and_then(|i| TABLE.get_or_init(build_table).get(i)) {
        Some(t) => t,
        None => crate::ggml_abort!("ggml_get_type_traits_cpu: invalid type {}", ty.0),
    }
}

/// The type the CPU matrix product converts activations to for weights of type `ty` (F32 for
/// types without a dot product).
pub fn vec_dot_type(ty: Type) -> Type {
    type_traits_cpu(ty).vec_dot_type
}

// ---------------------------------------------------------------------------------------------
// Planning and computing

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
    use super::*;
    use crate::core::context::InitParams;
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;

    #[test]
    fn type_traits_follow_the_reference_table() {
        assert_eq!(vec_dot_type(Type::Q4_0), Type::Q8_0);
        assert_eq!(vec_dot_type(Type::Q5_1), Type::Q8_1);
        assert_eq!(vec_dot_type(Type::Q4_K), Type::Q8_K);
        assert_eq!(vec_dot_type(Type::F16), Type::F16);
        assert_eq!(vec_dot_type(Type::I8), Type::F32);
        let f32_traits = type_traits_cpu(Type::F32);
        assert!(f32_traits.from_float.is_some() && f32_traits.vec_dot.is_some());
        assert_eq!(f32_traits.nrows, 1);
        let i32_traits = type_traits_cpu(Type::I32);
        assert!(i32_traits.from_float.is_some() && i32_traits.vec_dot.is_none());
        assert_eq!((type_traits_cpu(Type::Q8_K).nrows, vec_dot_type(Type::Q8_K)), (0, Type::F32));
        // a type is offered whole (converter, dot product, activation converter) or not at all
        for t in 0..Type::COUNT {
            let tr = type_traits_cpu(Type(t));
            if tr.from_float.is_some() && tr.nrows > 0 && Type(t) != Type::Q8_1 {
                assert!(tr.vec_dot.is_some() && type_traits_cpu(tr.vec_dot_type).from_float.is_some(), "type {t}");
            }
        }
        assert!(type_traits_cpu(Type::IQ2_XXS).from_float.is_none());
    }

    #[test]
    fn vec_dot_through_the_c_pointer() {
        let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.25).collect();
        let y: Vec<f32> = (0..64).map(|i| 1.0 - i as f32 * 0.01).collect();
        let expected: f32 = x.iter().zip(&y).map(|(a, b)| a * b).sum();

        let f32_traits = type_traits_cpu(Type::F32);
        let mut s = 0.0f32;
        // SAFETY: two rows of 64 floats and one output slot.
        unsafe {
            (f32_traits.vec_dot.unwrap())(64, &mut s, 0, x.as_ptr().cast(), 0, y.as_ptr().cast(), 0, 1);
        }
        assert!((s - expected).abs() < 1e-2 * expected.abs(), "{s} vs {expected}");

        // Q8_0 weights against Q8_0 activations, both made by the traits' from_float
        let q8 = type_traits_cpu(Type::Q8_0);
        let mut qx = vec![0u8; Type::Q8_0.row_size(64)];
        let mut qy = vec![0u8; Type::Q8_0.row_size(64)];
        // SAFETY: 64 floats in, two blocks' room out; then two rows of two blocks each.
        unsafe {
            (q8.from_float.unwrap())(x.as_ptr(), qx.as_mut_ptr().cast(), 64);
            (q8.from_float.unwrap())(y.as_ptr(), qy.as_mut_ptr().cast(), 64);
            (q8.vec_dot.unwrap())(64, &mut s, 0, qx.as_ptr().cast(), 0, qy.as_ptr().cast(), 0, 1);
        }
        assert!((s - expected).abs() < 2e-2 * expected.abs(), "{s} vs {expected}");
    }

    #[test]
    fn row_conversions() {
        let x = [1.5f32, -2.25, 65504.0, 0.1];
        let mut h = [0u16; 4];
        fp32_to_fp16(&x, &mut h);
        let mut back = [0f32; 4];
        fp16_to_fp32(&h, &mut back);
        assert_eq!(&back[..3], &x[..3]);
        let mut b = [Bf16::default(); 4];
        fp32_to_bf16(&x, &mut b);
        bf16_to_fp32(&b, &mut back);
        assert_eq!(&back[..2], &x[..2]);
        let mut i = [0i32; 4];
        fp32_to_i32(&[1.9, -1.9, 3.0, 0.0], &mut i);
        assert_eq!(i, [1, -1, 3, 0]);
    }

    #[test]
    fn numa_queries_are_consistent() {
        numa_init(numa_strategy::DISTRIBUTE);
        let topology = numa_topology();
        assert_eq!(is_numa(), topology.as_ref().is_some_and(|t| t.nodes.len() > 1));
        // a second call changes nothing
        numa_init(numa_strategy::ISOLATE);
        assert_eq!(numa_topology().map(|t| t.nodes.len()), topology.map(|t| t.nodes.len()));
    }

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
