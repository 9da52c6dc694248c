//! ROPE, normal and NeoX, with YaRN and frequency factors (kernels/rope.cu).

use super::{Queue, data, data_or_null, grid_for, launch, packed_rows, shape, src, src_opt};
use crate::core::ops::rope::{RopeParams, rope_type, rope_yarn_corr_dims};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{GpuResult, Kernel};

const ROPE: Kernel = Kernel { source: "rope", name: "rope" };

/// The op_params word of `rope_set_offset`'s window start, which the kernel does not take.
const PARAM_N_OFFS: usize = 15;

/// `struct rope_params` of kernels/rope.cu.
#[repr(C)]
struct KernelParams {
    n_dims: i32,
    mode: i32,
    theta_scale: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    corr_low: f32,
    corr_high: f32,
}

pub fn supports(node: &Tensor) -> bool {
    let (x, pos) = (src(node, 0), src(node, 1));
    let (p, _) = RopeParams::from_op_params(node);
    let factors_ok = src_opt(node, 2).is_none_or(|f| f.type_ == Type::F32 && f.is_contiguous());
    matches!(p.mode, rope_type::NORMAL | rope_type::NEOX)
        && matches!(x.type_, Type::F32 | Type::F16)
        && node.type_ == x.type_
        && packed_rows(x)
        && pos.type_ == Type::I32
        && pos.is_contiguous()
        && p.n_dims > 0
        && p.n_dims % 2 == 0
        && i64::from(p.n_dims) <= x.ne[0]
        && factors_ok
        && node.op_param_i32(PARAM_N_OFFS) == 0
}

pub fn rope(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (x, pos, factors) = (src(node, 0), src(node, 1), src_opt(node, 2));
    let (p, _) = RopeParams::from_op_params(node);
    let corr = rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow);
    let params = KernelParams {
        n_dims: p.n_dims,
        mode: p.mode,
        theta_scale: p.freq_base.powf(-2.0 / p.n_dims as f32),
        freq_scale: p.freq_scale,
        ext_factor: p.ext_factor,
        attn_factor: p.attn_factor,
        corr_low: corr[0],
        corr_high: corr[1],
    };
    let pairs = x.ne[0] / 2 * x.ne[1] * x.ne[2] * x.ne[3];
    launch!(q, ROPE, grid_for(pairs), super::ELEMENT_THREADS;
        params, shape(x), data(x), shape(node), data(node), x.type_.0, data(pos), data_or_null(factors))
}
