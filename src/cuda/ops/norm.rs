//! The row normalisations NORM, RMS_NORM and L2_NORM (kernels/norm.cu) and SOFT_MAX
//! (kernels/softmax.cu): a block per row.

use super::{Alibi, Queue, data, data_or_null, grid_for_rows, launch, packed_rows, shape, src};
use crate::core::op::Op;
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{GpuResult, Kernel};

const NORM: Kernel = Kernel { source: "norm", name: "norm_f32" };
const RMS_NORM: Kernel = Kernel { source: "norm", name: "rms_norm_f32" };
const L2_NORM: Kernel = Kernel { source: "norm", name: "l2_norm_f32" };
const SOFT_MAX: Kernel = Kernel { source: "softmax", name: "soft_max_f32" };

/// Threads of a block that reduces a row of `n` values: a warp for short rows, more for long.
fn row_threads(n: i64) -> u32 {
    if n < 1024 { 32 } else { 256 }
}

pub fn supports_norm(node: &Tensor) -> bool {
    let x = src(node, 0);
    x.type_ == Type::F32 && node.type_ == Type::F32 && packed_rows(x) && packed_rows(node)
}

pub fn norm(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let x = src(node, 0);
    let kernel = match node.op {
        Op::NORM => NORM,
        Op::RMS_NORM => RMS_NORM,
        _ => L2_NORM,
    };
    let eps = node.op_param_f32(0);
    launch!(q, kernel, grid_for_rows(x.nrows()), row_threads(x.ne[0]); shape(x), data(x), shape(node), data(node), eps)
}

pub fn supports_soft_max(node: &Tensor) -> bool {
    let x = src(node, 0);
    let mask_ok = node.source(1).is_none_or(|m| matches!(m.type_, Type::F32 | Type::F16) && packed_rows(m));
    let sinks_ok = node.source(2).is_none_or(|s| s.type_ == Type::F32);
    x.type_ == Type::F32 && node.type_ == Type::F32 && packed_rows(x) && packed_rows(node) && mask_ok && sinks_ok
}

pub fn soft_max(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (x, mask, sinks) = (src(node, 0), node.source(1), node.source(2));
    let (scale, max_bias) = (node.op_param_f32(0), node.op_param_f32(1));
    let alibi = Alibi::new(x.ne[2], max_bias);
    let mask_type = mask.map_or(Type::F32.0, |m| m.type_.0);
    let mask_shape = mask.map_or(shape(x), shape);
    launch!(q, SOFT_MAX, grid_for_rows(x.nrows()), row_threads(x.ne[0]);
        shape(x), data(x), mask_shape, data_or_null(mask), mask_type, data_or_null(sinks),
        shape(node), data(node), scale, max_bias, alibi.n_head_log2, alibi.m0, alibi.m1)
}
