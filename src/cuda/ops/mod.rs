//! The ops a CUDA device computes: for each, whether it can (`supports`, which the device's
//! `supports_op` answers with, so the scheduler leaves everything else on the CPU) and the
//! kernel launches that compute it (`compute`). One file per family of kernels.

mod attention;
mod elementwise;
mod experts;
mod matmul;
mod norm;
mod reduce;
pub(super) mod rope;
mod rows;

use std::ffi::c_void;

use super::gpu::{DevicePtr, Gpu, GpuResult, Kernel, Stream};
use super::scratch::Scratch;
use super::shape::Shape;
use crate::core::op::Op;
use crate::core::tensor::Tensor;
use crate::core::types::Type;

/// Where a graph's launches go: one GPU, one stream, and the stream's scratch memory.
pub struct Queue<'a> {
    pub gpu: &'a dyn Gpu,
    pub stream: Stream,
    pub scratch: &'a Scratch,
}

impl Queue<'_> {
    /// `bytes` of device memory for this op's launches, reused by the next op (no address
    /// when there is nothing to hold).
    fn scratch(&self, bytes: usize) -> GpuResult<DevicePtr> {
        if bytes == 0 {
            return Ok(0);
        }
        self.scratch.get(self.gpu, self.stream, bytes)
    }

    /// Queues `kernel` on `grid` blocks of `threads` threads.
    ///
    /// # Safety
    /// `args` are the kernel's parameters in order (see [`arg`]), with device addresses valid
    /// for what the kernel does with them.
    unsafe fn launch(&self, kernel: Kernel, grid: [u32; 3], threads: u32, args: &mut [*mut c_void]) -> GpuResult<()> {
        let f = self.gpu.function(kernel)?;
        // SAFETY: the caller's contract.
        unsafe { self.gpu.launch(self.stream, f, grid, [threads, 1, 1], args) }
    }
}

/// A pointer to `v`, as CUDA's argument array holds each parameter.
fn arg<T>(v: &T) -> *mut c_void {
    std::ptr::from_ref(v).cast_mut().cast()
}

/// Queues a kernel with its parameters listed in order; each parameter lives until the
/// launch has copied it.
macro_rules! launch {
    ($queue:expr, $kernel:expr, $grid:expr, $threads:expr; $($param:expr),* $(,)?) => {
        // SAFETY: each call site passes the kernel's parameters in order, typed as the
        // kernel declares them, with addresses of tensors the graph placed on this device.
        unsafe { $queue.launch($kernel, $grid, $threads, &mut [$($crate::cuda::ops::arg(&$param)),*]) }
    };
}
use launch;

/// Threads per block of the kernels that take one thread per element.
const ELEMENT_THREADS: u32 = 256;
/// Blocks of a grid-stride launch: enough to fill the largest GPUs, few enough that the
/// emulated device does not spend its time starting blocks.
const MAX_BLOCKS: i64 = 1024;

/// The grid of a kernel that walks `n` items with one thread per item and a grid-stride loop.
fn grid_for(n: i64) -> [u32; 3] {
    let blocks = (n + ELEMENT_THREADS as i64 - 1) / ELEMENT_THREADS as i64;
    [blocks.clamp(1, MAX_BLOCKS) as u32, 1, 1]
}

/// The grid of a kernel that takes a block per row and strides over the rest.
fn grid_for_rows(rows: i64) -> [u32; 3] {
    [rows.clamp(1, MAX_BLOCKS) as u32, 1, 1]
}

/// The device address of a tensor's data, as kernels take it.
fn data(t: &Tensor) -> u64 {
    t.data as u64
}

/// An optional source's address, or null.
fn data_or_null(t: Option<&Tensor>) -> u64 {
    t.map_or(0, data)
}

/// The shape of a tensor as kernels take it.
fn shape(t: &Tensor) -> Shape {
    Shape::of(t)
}

/// A source of `node`, which its op requires.
fn src(node: &Tensor, i: usize) -> &Tensor {
    match node.source(i) {
        Some(t) => t,
        None => crate::ggml_abort!("{} ({}) has no source {}", node.name(), node.op.name(), i),
    }
}

/// F32, F16 and BF16: the element types the element-wise kernels load and store.
fn is_float(t: Type) -> bool {
    matches!(t, Type::F32 | Type::F16 | Type::BF16)
}

/// The types of ggml's 32-value block formats the kernels decode and encode.
fn is_block32(t: Type) -> bool {
    matches!(t, Type::Q4_0 | Type::Q4_1 | Type::Q5_0 | Type::Q5_1 | Type::Q8_0)
}

/// Every type whose values the kernels read (the prelude's `row_value`): the floats, the
/// 32-value block formats, the K-quants, IQ4_NL, IQ4_XS and MXFP4.
fn is_decodable(t: Type) -> bool {
    is_float(t)
        || is_block32(t)
        || matches!(
            t,
            Type::Q2_K | Type::Q3_K | Type::Q4_K | Type::Q5_K | Type::Q6_K | Type::IQ4_NL | Type::IQ4_XS | Type::MXFP4
        )
}

/// ALiBi's constants for `n_head` heads, as the kernels' `alibi_slope` takes them: heads
/// below the largest power of two take powers of m0, the rest odd powers of m1.
#[repr(C)]
#[derive(Clone, Copy)]
struct Alibi {
    n_head_log2: i32,
    m0: f32,
    m1: f32,
}

impl Alibi {
    fn new(n_head: i64, max_bias: f32) -> Alibi {
        let n_head_log2: i32 = if n_head <= 0 { 1 } else { 1 << (n_head as u64).ilog2() };
        let m0 = 2f32.powf(-max_bias / n_head_log2 as f32);
        let m1 = 2f32.powf(-max_bias / 2.0 / n_head_log2 as f32);
        Alibi { n_head_log2, m0, m1 }
    }
}

/// Whether the values of each row of `t` lie next to each other.
fn packed_rows(t: &Tensor) -> bool {
    t.nb[0] == t.type_.type_size()
}

/// What the CUDA backend knows about one op: whether a device computes a node of it, and the
/// launches that do. The one table both [`supports`] and [`compute`] read, so an op the device
/// accepts always has its launches.
#[derive(Clone, Copy)]
struct Entry {
    supports: fn(&Tensor) -> bool,
    compute: fn(&Queue, &Tensor) -> GpuResult<()>,
}

/// The entry for `op`, or None for ops that stay on the CPU.
fn entry(op: Op) -> Option<Entry> {
    let entry = |supports, compute| Some(Entry { supports, compute });
    match op {
        Op::ADD | Op::SUB | Op::MUL | Op::DIV => entry(elementwise::supports_binary, elementwise::binary),
        Op::UNARY | Op::SQR | Op::SQRT | Op::LOG | Op::SIN | Op::COS | Op::SCALE | Op::CLAMP | Op::LEAKY_RELU => {
            entry(elementwise::supports_unary, elementwise::unary)
        }
        Op::GLU => entry(elementwise::supports_glu, elementwise::glu),
        Op::GET_ROWS => entry(rows::supports_get_rows, rows::get_rows),
        Op::SET_ROWS => entry(rows::supports_set_rows, rows::set_rows),
        Op::CPY | Op::DUP | Op::CONT => entry(rows::supports_copy, rows::copy),
        Op::NORM | Op::RMS_NORM | Op::L2_NORM => entry(norm::supports_norm, norm::norm),
        Op::SOFT_MAX => entry(norm::supports_soft_max, norm::soft_max),
        Op::ROPE => entry(rope::supports, rope::rope),
        Op::MUL_MAT => entry(matmul::supports_mul_mat, matmul::mul_mat),
        Op::MUL_MAT_ID => entry(experts::supports, experts::mul_mat_id),
        Op::SUM_ROWS | Op::MEAN => entry(reduce::supports, reduce::sum_rows),
        Op::ARGSORT => entry(reduce::supports, reduce::argsort),
        Op::REPEAT => entry(reduce::supports, reduce::repeat),
        Op::CONCAT => entry(reduce::supports, reduce::concat),
        Op::FLASH_ATTN_EXT => entry(attention::supports, attention::flash_attn_ext),
        _ => None,
    }
}

/// Whether a CUDA device computes `node`: the view ops always (there is nothing to compute),
/// the others when their entry accepts the node.
pub fn supports(node: &Tensor) -> bool {
    node.op.is_empty() || entry(node.op).is_some_and(|e| (e.supports)(node))
}

/// Queues the launches that compute `node`, which [`supports`] accepted.
pub fn compute(q: &Queue, node: &Tensor) -> GpuResult<()> {
    match entry(node.op) {
        Some(e) => (e.compute)(q, node),
        None => crate::ggml_abort!("the CUDA backend does not compute {}", node.op.name()),
    }
}
