//! FLASH_ATTN_EXT (kernels/attention.cu): a block per query row walks the keys with an online
//! softmax.

use super::{Alibi, Queue, data, data_or_null, grid_for_rows, is_decodable, launch, packed_rows, shape, src};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{GpuResult, Kernel};

const FLASH_ATTN_EXT: Kernel = Kernel { source: "attention", name: "flash_attn_ext" };

/// The largest head size of K and of V the kernel holds in shared memory (`ATTN_MAX_D`).
const MAX_HEAD_SIZE: i64 = 576;
const THREADS: u32 = 128;

/// `struct attention_params` of kernels/attention.cu.
#[repr(C)]
struct KernelParams {
    scale: f32,
    max_bias: f32,
    logit_softcap: f32,
    alibi: Alibi,
}

pub fn supports(node: &Tensor) -> bool {
    let (q, k, v) = (src(node, 0), src(node, 1), src(node, 2));
    let mask_ok = node.source(3).is_none_or(|m| m.type_ == Type::F16 && packed_rows(m));
    let sinks_ok = node.source(4).is_none_or(|s| s.type_ == Type::F32 && s.is_contiguous());
    let heads_ok = k.ne[2] > 0 && v.ne[2] > 0 && q.ne[2] % k.ne[2] == 0 && q.ne[2] % v.ne[2] == 0;
    let seqs_ok = k.ne[3] > 0 && v.ne[3] > 0 && q.ne[3] % k.ne[3] == 0 && q.ne[3] % v.ne[3] == 0;
    q.type_ == Type::F32
        && node.type_ == Type::F32
        && [k, v].iter().all(|t| is_decodable(t.type_) && packed_rows(t))
        && k.ne[0] <= MAX_HEAD_SIZE
        && v.ne[0] <= MAX_HEAD_SIZE
        && mask_ok
        && sinks_ok
        && heads_ok
        && seqs_ok
}

pub fn flash_attn_ext(q_: &Queue, node: &Tensor) -> GpuResult<()> {
    let (q, k, v, mask, sinks) = (src(node, 0), src(node, 1), src(node, 2), node.source(3), node.source(4));
    let max_bias = node.op_param_f32(1);
    let params = KernelParams {
        scale: node.op_param_f32(0),
        max_bias,
        logit_softcap: node.op_param_f32(2),
        alibi: Alibi::new(q.ne[2], max_bias),
    };
    let mask_shape = mask.map_or(shape(q), shape);
    launch!(q_, FLASH_ATTN_EXT, grid_for_rows(q.nrows()), THREADS;
        params, shape(q), data(q), shape(k), data(k), k.type_.0, shape(v), data(v), v.type_.0,
        mask_shape, data_or_null(mask), data_or_null(sinks), shape(node), data(node))
}
