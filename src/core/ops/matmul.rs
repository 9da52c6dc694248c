//! Matrix products: `mul_mat` (`a` times `b` transposed, with `a` broadcast over the outer
//! dimensions), its expert-routed form `mul_mat_id`, and the outer product; plus the
//! precision and hint settings that ride in their `op_params`.

use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr};
use crate::core::types::Type;

/// `enum ggml_prec`: the precision an op may compute or store an operand in.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Prec(pub i32);

impl Prec {
    pub const UNDEFINED: Prec = Prec(0);
    /// Deprecated alias of [`Prec::UNDEFINED`].
    pub const DEFAULT: Prec = Prec(0);
    pub const F32: Prec = Prec(10);
    pub const BF16: Prec = Prec(15);
    pub const F16: Prec = Prec(20);
    pub const Q8: Prec = Prec(30);
    pub const Q4: Prec = Prec(40);
}

/// `enum ggml_op_hint`: facts about an operand that an implementation may exploit.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct OpHint(pub i32);

impl OpHint {
    pub const NONE: OpHint = OpHint(0);
    pub const SRC0_IS_HADAMARD: OpHint = OpHint(1);
}

/// `op_params` slots of MUL_MAT and MUL_MAT_ID.
const MUL_MAT_PARAM_PREC_ACC: usize = 0;
const MUL_MAT_PARAM_HINT: usize = 1;
/// Slot of the source precision of `src[i]` is `MUL_MAT_PARAM_PREC_SRC + i`.
const MUL_MAT_PARAM_PREC_SRC: usize = 2;
/// Slot of FLASH_ATTN_EXT's precision (after scale, max_bias and logit_softcap).
pub const FLASH_ATTN_PARAM_PREC: usize = 3;

/// Whether `a` times `b` transposed is defined: same row length, and `a`'s outer dimensions
/// divide `b`'s (`a` is broadcast).
pub fn can_mul_mat(a: &Tensor, b: &Tensor) -> bool {
    a.ne[0] == b.ne[0] && b.ne[2] % a.ne[2] == 0 && b.ne[3] % a.ne[3] == 0
}

/// `a` is `[k, n, ...]`, `b` is `[k, m, ...]`; the F32 result is `[n, m, b.ne2, b.ne3]`.
pub fn mul_mat(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(can_mul_mat(&a, &b), "mul_mat: cannot multiply {:?} by {:?}", a.ne, b.ne);
    crate::ggml_assert!(!a.is_transposed(), "mul_mat: the first operand must not be transposed");

    let result = ctx.new_tensor(Type::F32, &[a.ne[1], b.ne[1], b.ne[2], b.ne[3]]);
    let r = result.get_mut();
    r.op = Op::MUL_MAT;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    result
}

/// Sets the accumulator precision of a MUL_MAT (deprecated form of [`prec_set_acc`]).
pub fn mul_mat_set_prec(a: TensorPtr, prec: Prec) {
    crate::ggml_assert!(a.op == Op::MUL_MAT, "mul_mat_set_prec: tensor is a {}, not a MUL_MAT", a.op.name());
    a.get_mut().set_op_param_i32(MUL_MAT_PARAM_PREC_ACC, prec.0);
}

pub fn mul_mat_set_hint(a: TensorPtr, hint: OpHint) {
    crate::ggml_assert!(a.op == Op::MUL_MAT, "mul_mat_set_hint: tensor is a {}, not a MUL_MAT", a.op.name());
    a.get_mut().set_op_param_i32(MUL_MAT_PARAM_HINT, hint.0);
}

/// Sets the minimum accumulator precision of a MUL_MAT, MUL_MAT_ID or FLASH_ATTN_EXT node.
/// Returns false (and changes nothing) for other ops.
pub fn prec_set_acc(a: TensorPtr, prec: Prec) -> bool {
    let slot = match a.op {
        Op::MUL_MAT | Op::MUL_MAT_ID => MUL_MAT_PARAM_PREC_ACC,
        Op::FLASH_ATTN_EXT => FLASH_ATTN_PARAM_PREC,
        _ => return false,
    };
    a.get_mut().set_op_param_i32(slot, prec.0);
    true
}

/// Sets the lowest precision that `src[idx]` may be converted to internally. Only `src[1]` of
/// MUL_MAT and MUL_MAT_ID can be set; returns false otherwise.
pub fn prec_set_src(a: TensorPtr, prec: Prec, idx: i32) -> bool {
    crate::ggml_assert!((0..MAX_SRC as i32).contains(&idx), "prec_set_src: source index {} out of range", idx);
    match a.op {
        Op::MUL_MAT | Op::MUL_MAT_ID if idx == 1 => {
            a.get_mut().set_op_param_i32(MUL_MAT_PARAM_PREC_SRC + idx as usize, prec.0);
            true
        }
        _ => false,
    }
}

/// Expert-routed product: for every token `t` and slot `e`, multiplies expert matrix
/// `as_[:, :, ids[e, t]]` by `b[:, e % b.ne1, t]`.
///
/// `as_` is `[k, n, n_expert]`, `b` is `[k, n_b, n_tokens]`, `ids` is I32
/// `[n_expert_used, n_tokens]`; the F32 result is `[n, n_expert_used, n_tokens]`.
pub fn mul_mat_id(ctx: &mut Context, as_: TensorPtr, b: TensorPtr, ids: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(!as_.is_transposed(), "mul_mat_id: expert matrices must not be transposed");
    crate::ggml_assert!(ids.type_ == Type::I32, "mul_mat_id: ids must be I32, not {}", ids.type_.name());
    crate::ggml_assert!(as_.ne[3] == 1, "mul_mat_id: expert matrices must be 3-d");
    crate::ggml_assert!(b.ne[3] == 1, "mul_mat_id: b must be 3-d");
    crate::ggml_assert!(ids.ne[2] == 1 && ids.ne[3] == 1, "mul_mat_id: ids must be 2-d");
    crate::ggml_assert!(ids.ne[1] == b.ne[2], "mul_mat_id: {} expert lists for {} rows of b", ids.ne[1], b.ne[2]);
    crate::ggml_assert!(as_.ne[0] == b.ne[0], "mul_mat_id: row lengths differ ({} and {})", as_.ne[0], b.ne[0]);
    crate::ggml_assert!(
        ids.ne[0] % b.ne[1] == 0,
        "mul_mat_id: {} expert slots cannot broadcast {} rows of b",
        ids.ne[0],
        b.ne[1]
    );

    let result = ctx.new_tensor(Type::F32, &[as_.ne[1], ids.ne[0], b.ne[2], 1]);
    let r = result.get_mut();
    r.op = Op::MUL_MAT_ID;
    r.src[0] = as_.as_ptr();
    r.src[1] = b.as_ptr();
    r.src[2] = ids.as_ptr();
    result
}

/// Whether the outer product of `a` and `b` is defined: same number of columns, and `a`'s
/// outer dimensions divide `b`'s.
fn can_out_prod(a: &Tensor, b: &Tensor) -> bool {
    a.ne[1] == b.ne[1] && b.ne[2] % a.ne[2] == 0 && b.ne[3] % a.ne[3] == 0
}

/// `a` is `[m, k, ...]`, `b` is `[n, k, ...]`; the F32 result is `[m, n, b.ne2, b.ne3]`.
pub fn out_prod(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(can_out_prod(&a, &b), "out_prod: shapes {:?} and {:?} do not match", a.ne, b.ne);
    crate::ggml_assert!(!a.is_transposed(), "out_prod: the first operand must not be transposed");

    let result = ctx.new_tensor(Type::F32, &[a.ne[0], b.ne[0], b.ne[2], b.ne[3]]);
    let r = result.get_mut();
    r.op = Op::OUT_PROD;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn mul_mat_broadcasts_a() {
        let mut c = ctx();
        let a = c.new_tensor(Type::Q4_0, &[64, 10, 2]);
        let b = c.new_tensor(Type::F32, &[64, 7, 6, 3]);
        let r = mul_mat(&mut c, a, b);
        assert_eq!((r.type_, r.ne), (Type::F32, [10, 7, 6, 3]));
        assert_eq!((r.op, r.src(0), r.src(1)), (Op::MUL_MAT, Some(a), Some(b)));
        assert!(!r.is_view());
    }

    #[test]
    fn precision_and_hint_slots() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[8, 4]);
        let b = c.new_tensor(Type::F32, &[8, 3]);
        let r = mul_mat(&mut c, a, b);
        mul_mat_set_prec(r, Prec::F32);
        mul_mat_set_hint(r, OpHint::SRC0_IS_HADAMARD);
        assert!(prec_set_src(r, Prec::Q8, 1));
        assert!(!prec_set_src(r, Prec::Q8, 0));
        assert_eq!(&r.op_params[..5], &[10, 1, 0, 30, 0]);
        assert!(prec_set_acc(r, Prec::BF16));
        assert_eq!(r.op_params[0], 15);
        assert!(!prec_set_acc(a, Prec::F32));
        assert_eq!(a.op_params, [0; 16]);
    }

    #[test]
    fn mul_mat_id_shape_and_sources() {
        let mut c = ctx();
        let experts = c.new_tensor(Type::F32, &[16, 32, 8]);
        let b = c.new_tensor(Type::F32, &[16, 1, 5]);
        let ids = c.new_tensor(Type::I32, &[2, 5]);
        let r = mul_mat_id(&mut c, experts, b, ids);
        assert_eq!(r.ne, [32, 2, 5, 1]);
        assert_eq!(r.op, Op::MUL_MAT_ID);
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(experts), Some(b), Some(ids)));
        assert!(prec_set_src(r, Prec::Q4, 1));
        assert_eq!(r.op_params[3], 40);
    }

    #[test]
    fn out_prod_shape() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[5, 4, 1]);
        let b = c.new_tensor(Type::F32, &[3, 4, 2]);
        let r = out_prod(&mut c, a, b);
        assert_eq!((r.type_, r.ne), (Type::F32, [5, 3, 2, 1]));
        assert_eq!((r.op, r.src(0), r.src(1)), (Op::OUT_PROD, Some(a), Some(b)));
    }
}
