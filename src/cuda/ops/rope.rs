//! ROPE in every mode ggml knows (normal, NeoX, M-RoPE, interleaved M-RoPE, vision), with
//! YaRN, frequency factors and `rope_set_offset`'s offset (kernels/rope.cu).

use super::{Queue, data, data_or_null, grid_for, launch, packed_rows, shape, src};
use crate::core::ops::rope::{MROPE_SECTIONS, RopeParams, rope_offset, rope_type, rope_yarn_corr_dims};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{GpuResult, Kernel};

const ROPE: Kernel = Kernel { source: "rope", name: "rope" };

/// `struct rope_params` of kernels/rope.cu.
#[repr(C)]
pub(in crate::cuda) struct KernelParams {
    n_dims: i32,
    mode: i32,
    n_offs: i32,
    n_pairs: i32,
    sections: [i32; MROPE_SECTIONS],
    theta_scale: f32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    corr_low: f32,
    corr_high: f32,
}

impl KernelParams {
    /// The kernel's parameters for a ROPE node.
    pub(in crate::cuda) fn of(node: &Tensor) -> KernelParams {
        let (p, sections) = RopeParams::from_op_params(node);
        let corr = rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow);
        // vision RoPE turns pairs (i, i + n_dims) across the whole row
        let n_pairs = if p.mode == rope_type::VISION { src(node, 0).ne[0] as i32 / 2 } else { p.n_dims / 2 };
        KernelParams {
            n_dims: p.n_dims,
            mode: p.mode,
            n_offs: rope_offset(node),
            n_pairs,
            sections,
            theta_scale: p.freq_base.powf(-2.0 / p.n_dims as f32),
            freq_scale: p.freq_scale,
            ext_factor: p.ext_factor,
            attn_factor: p.attn_factor,
            corr_low: corr[0],
            corr_high: corr[1],
        }
    }
}

pub fn supports(node: &Tensor) -> bool {
    let (x, pos) = (src(node, 0), src(node, 1));
    let (p, sections) = RopeParams::from_op_params(node);
    let n_offs = rope_offset(node);
    let factors_ok = node.source(2).is_none_or(|f| f.type_ == Type::F32 && f.is_contiguous());
    let multi = p.mode & rope_type::MROPE != 0;
    // the layouts' own rules, as the CPU checks them
    let layout_ok = if p.mode == rope_type::VISION {
        i64::from(p.n_dims) == x.ne[0] / 2 && n_offs == 0
    } else {
        n_offs >= 0 && n_offs % 2 == 0 && i64::from(n_offs) + i64::from(p.n_dims) <= x.ne[0]
    };
    let sections_ok = !multi || (sections.iter().all(|&s| s >= 0) && sections.iter().sum::<i32>() > 0);
    let positions = if multi { 4 } else { 1 } * x.ne[2];
    rope_type::ALL.contains(&p.mode)
        && matches!(x.type_, Type::F32 | Type::F16)
        && node.type_ == x.type_
        && packed_rows(x)
        && pos.type_ == Type::I32
        && pos.is_contiguous()
        && pos.nelements() >= positions
        && p.n_dims > 0
        && p.n_dims % 2 == 0
        && i64::from(p.n_dims) <= x.ne[0]
        && layout_ok
        && sections_ok
        && factors_ok
}

pub fn rope(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (x, pos, factors) = (src(node, 0), src(node, 1), node.source(2));
    let params = KernelParams::of(node);
    let threads = (x.ne[0] - i64::from(params.n_pairs)) * x.ne[1] * x.ne[2] * x.ne[3];
    launch!(q, ROPE, grid_for(threads), super::ELEMENT_THREADS;
        params, shape(x), data(x), shape(node), data(node), x.type_.0, data(pos), data_or_null(factors))
}
