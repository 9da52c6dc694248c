//! The windowing and relative-position ops of SAM-style vision encoders: `win_part`,
//! `win_unpart`, `get_rel_pos` and `add_rel_pos`.

use super::set_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// Splits `a` ([C, W, H]) into `w`×`w` windows (zero-padded at the far edges): [C, w, w, n].
pub fn win_part(ctx: &mut Context, a: TensorPtr, w: i32) -> TensorPtr {
    crate::ggml_assert!(a.ne[3] == 1);
    crate::ggml_assert!(a.type_ == Type::F32);
    crate::ggml_assert!(w != 0, "window size 0");
    let w64 = w as i64;
    let px = ((w64 - a.ne[1] % w64) % w64) as i32;
    let py = ((w64 - a.ne[2] % w64) % w64) as i32;
    let npx = ((px as i64 + a.ne[1]) / w64) as i32;
    let npy = ((py as i64 + a.ne[2]) / w64) as i32;
    let np = npx.wrapping_mul(npy);
    let result = ctx.new_tensor(Type::F32, &[a.ne[0], w64, w64, np as i64]);
    result.get_mut().set_op_params_i32(&[npx, npy, w]);
    set_op(result, Op::WIN_PART, &[a]);
    result
}

/// Reassembles windows from [`win_part`] into a [C, w0, h0] image.
pub fn win_unpart(ctx: &mut Context, a: TensorPtr, w0: i32, h0: i32, w: i32) -> TensorPtr {
    crate::ggml_assert!(a.type_ == Type::F32);
    let result = ctx.new_tensor(Type::F32, &[a.ne[0], w0 as i64, h0 as i64]);
    result.get_mut().set_op_params_i32(&[w]);
    set_op(result, Op::WIN_UNPART, &[a]);
    result
}

/// Relative-position embeddings for `qh` query and `kh` key positions (f16).
pub fn get_rel_pos(ctx: &mut Context, a: TensorPtr, qh: i32, kh: i32) -> TensorPtr {
    crate::ggml_assert!(qh == kh);
    crate::ggml_assert!(2 * qh.max(kh) as i64 - 1 == a.ne[1]);
    let result = ctx.new_tensor(Type::F16, &[a.ne[0], kh as i64, qh as i64]);
    set_op(result, Op::GET_REL_POS, &[a]);
    result
}

fn add_rel_pos_impl(ctx: &mut Context, a: TensorPtr, pw: TensorPtr, ph: TensorPtr, inplace: bool) -> TensorPtr {
    crate::ggml_assert!(pw.same_shape(&ph));
    crate::ggml_assert!(a.is_contiguous());
    crate::ggml_assert!(pw.is_contiguous());
    crate::ggml_assert!(ph.is_contiguous());
    crate::ggml_assert!(ph.type_ == Type::F32);
    crate::ggml_assert!(pw.type_ == Type::F32);
    crate::ggml_assert!(pw.ne[3] == a.ne[2]);
    crate::ggml_assert!(pw.ne[0] * pw.ne[0] == a.ne[0]);
    crate::ggml_assert!(pw.ne[1] * pw.ne[2] == a.ne[1]);
    let result = super::view_or_dup(ctx, a, inplace);
    result.get_mut().set_op_param_i32(0, inplace as i32);
    set_op(result, Op::ADD_REL_POS, &[a, pw, ph]);
    result
}

/// Adds decomposed relative-position terms `pw` and `ph` to attention scores `a`.
pub fn add_rel_pos(ctx: &mut Context, a: TensorPtr, pw: TensorPtr, ph: TensorPtr) -> TensorPtr {
    add_rel_pos_impl(ctx, a, pw, ph, false)
}

pub fn add_rel_pos_inplace(ctx: &mut Context, a: TensorPtr, pw: TensorPtr, ph: TensorPtr) -> TensorPtr {
    add_rel_pos_impl(ctx, a, pw, ph, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;

    #[test]
    fn windows_and_rel_pos() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[8, 10, 7]);
        let p = win_part(&mut c, a, 4);
        assert_eq!(p.ne, [8, 4, 4, 6]);
        assert_eq!(p.op_params[..3], [3, 2, 4]);
        let u = win_unpart(&mut c, p, 10, 7, 4);
        assert_eq!((u.ne, u.op_params[0], u.op), ([8, 10, 7, 1], 4, Op::WIN_UNPART));

        let rp = c.new_tensor(Type::F32, &[16, 9]);
        let g = get_rel_pos(&mut c, rp, 5, 5);
        assert_eq!((g.type_, g.ne), (Type::F16, [16, 5, 5, 1]));

        let scores = c.new_tensor(Type::F32, &[16, 12, 3]);
        let pw = c.new_tensor(Type::F32, &[4, 3, 4, 3]);
        let ph = c.new_tensor(Type::F32, &[4, 3, 4, 3]);
        let r = add_rel_pos_inplace(&mut c, scores, pw, ph);
        assert_eq!((r.op, r.op_params[0], r.view_source()), (Op::ADD_REL_POS, 1, Some(scores)));
        assert_eq!((r.src(1), r.src(2)), (Some(pw), Some(ph)));
    }
}
