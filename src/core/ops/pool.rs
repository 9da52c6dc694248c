//! Spatial resampling: pooling and its gradient, upscaling/interpolation, padding (constant,
//! circular, reflective) and rolling.

use super::set_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// `enum ggml_op_pool`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PoolOp(pub i32);

impl PoolOp {
    pub const MAX: PoolOp = PoolOp(0);
    pub const AVG: PoolOp = PoolOp(1);
    pub const COUNT: i32 = 2;
}

/// `enum ggml_scale_mode` values, and the `ggml_scale_flag` bits that may be or-ed into a
/// mode passed to [`interpolate`].
pub mod scale_mode {
    pub const NEAREST: u32 = 0;
    pub const BILINEAR: u32 = 1;
    pub const BICUBIC: u32 = 2;
    pub const COUNT: u32 = 3;
    pub const FLAG_ALIGN_CORNERS: u32 = 1 << 8;
    pub const FLAG_ANTIALIAS: u32 = 1 << 9;
}

/// Output length of a pooling window: computed in f32 and truncated, as the reference does
/// (the padding may be fractional).
fn pool_output_size(ins: i64, ks: i32, s: i32, p: f32) -> i64 {
    ((ins as f32 + 2.0 * p - ks as f32) / s as f32 + 1.0) as i64
}

/// Pools `k0`-wide windows along dimension 0 with stride `s0` and padding `p0`.
pub fn pool_1d(ctx: &mut Context, a: TensorPtr, op: PoolOp, k0: i32, s0: i32, p0: i32) -> TensorPtr {
    let ne0 = pool_output_size(a.ne[0], k0, s0, p0 as f32);
    crate::ggml_assert!(ne0 > 0, "pool_1d output length {}", ne0);
    let result = ctx.new_tensor(Type::F32, &[ne0, a.ne[1], a.ne[2], a.ne[3]]);
    result.get_mut().set_op_params_i32(&[op.0, k0, s0, p0]);
    set_op(result, Op::POOL_1D, &[a]);
    result
}

/// The `op_params` of the 2D pooling ops: the paddings are stored as integers (truncated).
fn pool_2d_params(op: PoolOp, k0: i32, k1: i32, s0: i32, s1: i32, p0: f32, p1: f32) -> [i32; 7] {
    [op.0, k0, k1, s0, s1, p0 as i32, p1 as i32]
}

/// Pools `k0`×`k1` windows over dimensions 0 and 1.
#[allow(clippy::too_many_arguments)]
pub fn pool_2d(
    ctx: &mut Context,
    a: TensorPtr,
    op: PoolOp,
    k0: i32,
    k1: i32,
    s0: i32,
    s1: i32,
    p0: f32,
    p1: f32,
) -> TensorPtr {
    let ne0 = pool_output_size(a.ne[0], k0, s0, p0);
    let ne1 = pool_output_size(a.ne[1], k1, s1, p1);
    crate::ggml_assert!(ne0 > 0, "pool_2d output width {}", ne0);
    crate::ggml_assert!(ne1 > 0, "pool_2d output height {}", ne1);
    let result = ctx.new_tensor(Type::F32, &[ne0, ne1, a.ne[2], a.ne[3]]);
    result.get_mut().set_op_params_i32(&pool_2d_params(op, k0, k1, s0, s1, p0, p1));
    set_op(result, Op::POOL_2D, &[a]);
    result
}

/// The gradient of [`pool_2d`]: `a` is the gradient of the pooled output, `af` the forward
/// pass's input (whose shape the result takes).
#[allow(clippy::too_many_arguments)]
pub fn pool_2d_back(
    ctx: &mut Context,
    a: TensorPtr,
    af: TensorPtr,
    op: PoolOp,
    k0: i32,
    k1: i32,
    s0: i32,
    s1: i32,
    p0: f32,
    p1: f32,
) -> TensorPtr {
    let result = ctx.new_tensor(Type::F32, &af.ne);
    result.get_mut().set_op_params_i32(&pool_2d_params(op, k0, k1, s0, s1, p0, p1));
    set_op(result, Op::POOL_2D_BACK, &[a, af]);
    result
}

/// Resizes `a` (f32) to the given extents with `mode` (a scale mode, optionally or-ed with
/// scale flags).
pub fn interpolate(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64, ne2: i64, ne3: i64, mode: u32) -> TensorPtr {
    crate::ggml_assert!((mode & 0xFF) < scale_mode::COUNT, "interpolate: unknown scale mode {}", mode & 0xFF);
    crate::ggml_assert!(
        mode & scale_mode::FLAG_ANTIALIAS == 0 || (mode & 0xFF) == scale_mode::BILINEAR,
        "antialiasing is only implemented for bilinear scaling"
    );
    crate::ggml_assert!(a.type_ == Type::F32);
    let result = ctx.new_tensor(a.type_, &[ne0, ne1, ne2, ne3]);
    result.get_mut().set_op_param_i32(0, mode as i32);
    set_op(result, Op::UPSCALE, &[a]);
    result
}

/// Scales dimensions 0 and 1 of `a` by an integer factor.
pub fn upscale(ctx: &mut Context, a: TensorPtr, scale_factor: i32, mode: u32) -> TensorPtr {
    crate::ggml_assert!(scale_factor > 1, "scale factor {}", scale_factor);
    let f = scale_factor as i64;
    interpolate(ctx, a, a.ne[0] * f, a.ne[1] * f, a.ne[2], a.ne[3], mode)
}

/// The older spelling of [`interpolate`] with `int` extents.
pub fn upscale_ext(ctx: &mut Context, a: TensorPtr, ne0: i32, ne1: i32, ne2: i32, ne3: i32, mode: u32) -> TensorPtr {
    interpolate(ctx, a, ne0 as i64, ne1 as i64, ne2 as i64, ne3 as i64, mode)
}

/// Pads each dimension with `lp*` elements before and `rp*` after: zeros, or with `circular`
/// the values wrapped around from the other side.
#[allow(clippy::too_many_arguments)]
fn pad_impl(
    ctx: &mut Context,
    a: TensorPtr,
    lp0: i32,
    rp0: i32,
    lp1: i32,
    rp1: i32,
    lp2: i32,
    rp2: i32,
    lp3: i32,
    rp3: i32,
    circular: bool,
) -> TensorPtr {
    let ne = [
        a.ne[0] + lp0 as i64 + rp0 as i64,
        a.ne[1] + lp1 as i64 + rp1 as i64,
        a.ne[2] + lp2 as i64 + rp2 as i64,
        a.ne[3] + lp3 as i64 + rp3 as i64,
    ];
    let result = ctx.new_tensor(a.type_, &ne);
    result.get_mut().set_op_params_i32(&[lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3, circular as i32]);
    set_op(result, Op::PAD, &[a]);
    result
}

#[allow(clippy::too_many_arguments)]
pub fn pad_ext(
    ctx: &mut Context,
    a: TensorPtr,
    lp0: i32,
    rp0: i32,
    lp1: i32,
    rp1: i32,
    lp2: i32,
    rp2: i32,
    lp3: i32,
    rp3: i32,
) -> TensorPtr {
    pad_impl(ctx, a, lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3, false)
}

#[allow(clippy::too_many_arguments)]
pub fn pad_ext_circular(
    ctx: &mut Context,
    a: TensorPtr,
    lp0: i32,
    rp0: i32,
    lp1: i32,
    rp1: i32,
    lp2: i32,
    rp2: i32,
    lp3: i32,
    rp3: i32,
) -> TensorPtr {
    pad_impl(ctx, a, lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3, true)
}

/// Zero-pads the end of each dimension.
pub fn pad(ctx: &mut Context, a: TensorPtr, p0: i32, p1: i32, p2: i32, p3: i32) -> TensorPtr {
    pad_ext(ctx, a, 0, p0, 0, p1, 0, p2, 0, p3)
}

/// Pads the end of each dimension with values wrapped around from its start.
pub fn pad_circular(ctx: &mut Context, a: TensorPtr, p0: i32, p1: i32, p2: i32, p3: i32) -> TensorPtr {
    pad_ext_circular(ctx, a, 0, p0, 0, p1, 0, p2, 0, p3)
}

/// Pads dimension 0 by mirroring `p0` values at its start and `p1` at its end.
pub fn pad_reflect_1d(ctx: &mut Context, a: TensorPtr, p0: i32, p1: i32) -> TensorPtr {
    crate::ggml_assert!(p0 >= 0, "pad_reflect_1d: p0 = {} is negative", p0);
    crate::ggml_assert!(p1 >= 0, "pad_reflect_1d: p1 = {} is negative", p1);
    // Each side's padding must be shorter than the dimension it mirrors.
    crate::ggml_assert!((p0 as i64) < a.ne[0], "pad_reflect_1d: p0 = {} is not below ne[0] = {}", p0, a.ne[0]);
    crate::ggml_assert!((p1 as i64) < a.ne[0], "pad_reflect_1d: p1 = {} is not below ne[0] = {}", p1, a.ne[0]);
    crate::ggml_assert!(a.is_contiguous(), "pad_reflect_1d: a must be contiguous");
    crate::ggml_assert!(a.type_ == Type::F32, "pad_reflect_1d: a must be F32, not {}", a.type_.name());
    let result = ctx.new_tensor(a.type_, &[a.ne[0] + p0 as i64 + p1 as i64, a.ne[1], a.ne[2], a.ne[3]]);
    result.get_mut().set_op_params_i32(&[p0, p1]);
    set_op(result, Op::PAD_REFLECT_1D, &[a]);
    result
}

/// Rotates `a` by `shift*` positions along each dimension (elements pushed off one end come
/// back at the other).
pub fn roll(ctx: &mut Context, a: TensorPtr, shift0: i32, shift1: i32, shift2: i32, shift3: i32) -> TensorPtr {
    crate::ggml_assert!(a.nb[0] == a.type_.type_size());
    for (i, shift) in [shift0, shift1, shift2, shift3].into_iter().enumerate() {
        crate::ggml_assert!(
            (shift.unsigned_abs() as i64) < a.ne[i],
            "roll: shift {} along dimension {} of {}",
            shift,
            i,
            a.ne[i]
        );
    }
    let result = ctx.dup_tensor(a);
    result.get_mut().set_op_params_i32(&[shift0, shift1, shift2, shift3]);
    set_op(result, Op::ROLL, &[a]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 16, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn pooling_shapes_and_params() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[10, 7, 3]);
        let p = pool_1d(&mut c, a, PoolOp::AVG, 3, 2, 1);
        assert_eq!((p.type_, p.ne, p.op), (Type::F32, [5, 7, 3, 1], Op::POOL_1D));
        assert_eq!(p.op_params[..4], [1, 3, 2, 1]);

        let p = pool_2d(&mut c, a, PoolOp::MAX, 2, 3, 2, 2, 0.5, 1.0);
        // (10 + 1 - 2) / 2 + 1 = 5.5 -> 5; (7 + 2 - 3) / 2 + 1 = 4
        assert_eq!(p.ne, [5, 4, 3, 1]);
        assert_eq!(p.op_params[..7], [0, 2, 3, 2, 2, 0, 1]);

        let b = pool_2d_back(&mut c, p, a, PoolOp::MAX, 2, 3, 2, 2, 0.5, 1.0);
        assert_eq!((b.ne, b.type_, b.src(0), b.src(1)), (a.ne, Type::F32, Some(p), Some(a)));
        assert_eq!(b.op_params[..7], p.op_params[..7]);
    }

    #[test]
    fn upscale_and_interpolate() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 3, 2]);
        let u = upscale(&mut c, a, 2, scale_mode::BILINEAR);
        assert_eq!((u.ne, u.op, u.op_params[0]), ([8, 6, 2, 1], Op::UPSCALE, 1));
        let i = interpolate(&mut c, a, 5, 5, 1, 1, scale_mode::BILINEAR | scale_mode::FLAG_ALIGN_CORNERS);
        assert_eq!((i.ne, i.op_params[0]), ([5, 5, 1, 1], 257));
    }

    #[test]
    fn padding_ops() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 3, 2, 1]);
        let p = pad(&mut c, a, 1, 2, 0, 3);
        assert_eq!(p.ne, [5, 5, 2, 4]);
        assert_eq!(p.op_params[..9], [0, 1, 0, 2, 0, 0, 0, 3, 0]);
        let p = pad_ext_circular(&mut c, a, 1, 1, 2, 0, 0, 0, 0, 0);
        assert_eq!((p.ne, p.op_params[8]), ([6, 5, 2, 1], 1));
        let r = pad_reflect_1d(&mut c, a, 2, 3);
        assert_eq!((r.ne, r.op_params[..2].to_vec(), r.op), ([9, 3, 2, 1], vec![2, 3], Op::PAD_REFLECT_1D));
        let r = roll(&mut c, a, -3, 2, 1, 0);
        assert_eq!((r.ne, r.op_params[..4].to_vec(), r.src(0)), (a.ne, vec![-3, 2, 1, 0], Some(a)));
    }
}
