//! Fused attention: `flash_attn_ext` (softmax(scale * Q K^T + mask) V in one op, with ALiBi,
//! logit soft-capping, sinks and a sparse-KV bound) and its settings; `flash_attn_back`.
//!
//! `op_params` of FLASH_ATTN_EXT: `[scale, max_bias, logit_softcap]` as f32, then the
//! precision (word 3) and `n_kv_max` (word 4) as i32.

use super::matmul::{FLASH_ATTN_PARAM_PREC, Prec, can_mul_mat};
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

const PARAM_N_KV_MAX: usize = 4;

/// `q` is `[d_k, n_batch, n_head, ne3]`, `k` is `[d_k, n_kv, n_head_kv, ne3]`, `v` is
/// `[d_v, n_kv, n_head_kv, ne3]` (not transposed), the optional F16 `mask` is
/// `[n_kv, n_batch, ne32, ne33]` (broadcast over heads and `ne3`). The F32 result is
/// permuted: `[d_v, n_head, n_batch, ne3]`.
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_ext(
    ctx: &mut Context,
    q: TensorPtr,
    k: TensorPtr,
    v: TensorPtr,
    mask: Option<TensorPtr>,
    scale: f32,
    max_bias: f32,
    logit_softcap: f32,
) -> TensorPtr {
    crate::ggml_assert!(can_mul_mat(&k, &q), "flash_attn_ext: K {:?} and Q {:?} cannot be multiplied", k.ne, q.ne);
    crate::ggml_assert!(q.ne[3] == k.ne[3], "flash_attn_ext: Q and K differ in dimension 3");
    crate::ggml_assert!(q.ne[3] == v.ne[3], "flash_attn_ext: Q and V differ in dimension 3");
    if let Some(mask) = mask {
        crate::ggml_assert!(mask.type_ == Type::F16, "flash_attn_ext: mask must be F16, not {}", mask.type_.name());
        crate::ggml_assert!(mask.is_contiguous(), "flash_attn_ext: mask must be contiguous");
        crate::ggml_assert!(q.ne[2] % mask.ne[2] == 0, "flash_attn_ext: mask cannot broadcast over heads");
        crate::ggml_assert!(q.ne[3] % mask.ne[3] == 0, "flash_attn_ext: mask cannot broadcast over dimension 3");
    }
    if max_bias > 0.0 {
        crate::ggml_assert!(mask.is_some(), "flash_attn_ext: ALiBi (max_bias > 0) needs a mask");
    }

    let result = ctx.new_tensor(Type::F32, &[v.ne[0], q.ne[2], q.ne[1], q.ne[3]]);
    let r = result.get_mut();
    r.set_op_param_f32(0, scale);
    r.set_op_param_f32(1, max_bias);
    r.set_op_param_f32(2, logit_softcap);
    r.op = Op::FLASH_ATTN_EXT;
    r.src[0] = q.as_ptr();
    r.src[1] = k.as_ptr();
    r.src[2] = v.as_ptr();
    r.src[3] = mask.map_or(std::ptr::null_mut(), TensorPtr::as_ptr);
    result
}

fn assert_flash_attn(a: TensorPtr, what: &str) {
    crate::ggml_assert!(a.op == Op::FLASH_ATTN_EXT, "{}: tensor is a {}, not a FLASH_ATTN_EXT", what, a.op.name());
}

/// Deprecated form of `prec_set_acc` for FLASH_ATTN_EXT.
pub fn flash_attn_ext_set_prec(a: TensorPtr, prec: Prec) {
    assert_flash_attn(a, "flash_attn_ext_set_prec");
    a.get_mut().set_op_param_i32(FLASH_ATTN_PARAM_PREC, prec.0);
}

pub fn flash_attn_ext_get_prec(a: TensorPtr) -> Prec {
    assert_flash_attn(a, "flash_attn_ext_get_prec");
    Prec(a.op_param_i32(FLASH_ATTN_PARAM_PREC))
}

/// Declares that every mask row has at most `n_kv_max` finite entries, so that only those
/// K/V rows need visiting; 0 disables it.
pub fn flash_attn_ext_set_n_kv_max(a: TensorPtr, n_kv_max: i32) {
    assert_flash_attn(a, "flash_attn_ext_set_n_kv_max");
    crate::ggml_assert!(n_kv_max >= 0, "flash_attn_ext_set_n_kv_max: negative bound {}", n_kv_max);
    a.get_mut().set_op_param_i32(PARAM_N_KV_MAX, n_kv_max);
}

/// Adds per-head attention sinks (F32, one per head of Q) in `src[4]`. `None` removes them,
/// whatever the node is.
pub fn flash_attn_ext_add_sinks(a: TensorPtr, sinks: Option<TensorPtr>) {
    let Some(sinks) = sinks else {
        a.get_mut().src[4] = std::ptr::null_mut();
        return;
    };
    assert_flash_attn(a, "flash_attn_ext_add_sinks");
    crate::ggml_assert!(a.src(4).is_none(), "flash_attn_ext_add_sinks: the node already has sinks");
    let heads = a.src(0).map_or(0, |q| q.ne[2]);
    crate::ggml_assert!(heads == sinks.ne[0], "flash_attn_ext_add_sinks: {} sinks for {} heads", sinks.ne[0], heads);
    crate::ggml_assert!(
        sinks.type_ == Type::F32,
        "flash_attn_ext_add_sinks: sinks must be F32, not {}",
        sinks.type_.name()
    );
    a.get_mut().src[4] = sinks.as_ptr();
}

/// The gradient of the old `flash_attn` op. ggml 0.25.1 has not adapted it to
/// `flash_attn_ext` and aborts on any call; so does this.
pub fn flash_attn_back(
    _ctx: &mut Context,
    _q: TensorPtr,
    _k: TensorPtr,
    _v: TensorPtr,
    _d: TensorPtr,
    _masked: bool,
) -> TensorPtr {
    crate::ggml_abort!("TODO: adapt to ggml_flash_attn_ext() changes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;
    use crate::core::ops::matmul::prec_set_acc;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn flash_attn_ext_is_permuted_and_parametrised() {
        let mut c = ctx();
        let q = c.new_tensor(Type::F32, &[128, 7, 32]);
        let k = c.new_tensor(Type::F16, &[128, 256, 8]);
        let v = c.new_tensor(Type::F16, &[64, 256, 8]);
        let mask = c.new_tensor(Type::F16, &[256, 7]);
        let r = flash_attn_ext(&mut c, q, k, v, Some(mask), 0.125, 0.0, 30.0);
        assert_eq!((r.type_, r.ne), (Type::F32, [64, 32, 7, 1]));
        assert_eq!(r.op, Op::FLASH_ATTN_EXT);
        assert_eq!((r.src(0), r.src(1), r.src(2), r.src(3), r.src(4)), (Some(q), Some(k), Some(v), Some(mask), None));
        assert_eq!((r.op_param_f32(0), r.op_param_f32(1), r.op_param_f32(2)), (0.125, 0.0, 30.0));

        assert_eq!(flash_attn_ext_get_prec(r), Prec::UNDEFINED);
        flash_attn_ext_set_prec(r, Prec::F32);
        assert_eq!(r.op_params[3], 10);
        assert!(prec_set_acc(r, Prec::F16));
        assert_eq!(flash_attn_ext_get_prec(r), Prec::F16);
        flash_attn_ext_set_n_kv_max(r, 64);
        assert_eq!(r.op_params[4], 64);

        let sinks = c.new_tensor(Type::F32, &[32]);
        flash_attn_ext_add_sinks(r, Some(sinks));
        assert_eq!(r.src(4), Some(sinks));
        flash_attn_ext_add_sinks(r, None);
        assert_eq!(r.src(4), None);
    }
}
