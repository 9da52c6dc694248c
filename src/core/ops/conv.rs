//! Convolutions. The direct ones (`conv_2d_direct`, `conv_3d_direct`, `conv_2d_dw_direct`,
//! the transposed ones) are single ops; the classic ones are built from `im2col` (unfold the
//! input into columns) followed by a matrix product and reshapes, exactly as ggml builds
//! them, so graphs have the same nodes.
//!
//! Layouts use ggml's innermost-first order: a 2D kernel is [KW, KH, IC, OC], an image
//! [W, H, C, N].

use super::matmul::mul_mat;
use super::set_op;
use super::shape::{cont, permute, reshape_2d, reshape_3d, reshape_4d};
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// Output length of a convolution over `ins` inputs with kernel `ks`, stride `s`, padding `p`
/// and dilation `d`.
fn conv_output_size(ins: i64, ks: i64, s: i32, p: i32, d: i32) -> i64 {
    crate::ggml_assert!(s != 0, "convolution stride 0");
    (ins + 2 * p as i64 - d as i64 * (ks - 1) - 1) / s as i64 + 1
}

/// The type `im2col` produces for kernels of type `t` in the composite convolutions.
fn im2col_type(t: Type) -> Type {
    if t == Type::BF16 { Type::F32 } else { Type::F16 }
}

/// Unfolds `b` ([IW, IH, IC, N] for 2D, [IW, IC, N] for 1D) into one row per output position
/// holding the receptive field of kernel `a` ([KW, KH, IC, OC] or [KW, IC, OC]):
/// [IC*KH*KW, OW, OH, N] (2D) or [IC*KW, OW, N] (1D), of type `dst_type`.
#[allow(clippy::too_many_arguments)]
pub fn im2col(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    s0: i32,
    s1: i32,
    p0: i32,
    p1: i32,
    d0: i32,
    d1: i32,
    is_2d: bool,
    dst_type: Type,
) -> TensorPtr {
    if is_2d {
        crate::ggml_assert!(a.ne[2] == b.ne[2], "kernel and input channels differ");
    } else {
        crate::ggml_assert!(b.ne[1] == a.ne[1], "kernel and input channels differ");
        crate::ggml_assert!(b.ne[3] == 1);
    }
    let oh = if is_2d { conv_output_size(b.ne[1], a.ne[1], s1, p1, d1) } else { 0 };
    let ow = conv_output_size(b.ne[0], a.ne[0], s0, p0, d0);
    crate::ggml_assert!(!is_2d || oh > 0, "b too small compared to a");
    crate::ggml_assert!(ow > 0, "b too small compared to a");

    let ne = if is_2d { [a.ne[2] * a.ne[1] * a.ne[0], ow, oh, b.ne[3]] } else { [a.ne[1] * a.ne[0], ow, b.ne[2], 1] };
    let result = ctx.new_tensor(dst_type, &ne);
    result.get_mut().set_op_params_i32(&[s0, s1, p0, p1, d0, d1, is_2d as i32]);
    set_op(result, Op::IM2COL, &[a, b]);
    result
}

/// The gradient of [`im2col`]: folds the column gradient `b` back into an f32 tensor of the
/// im2col input's shape `ne`.
#[allow(clippy::too_many_arguments)]
pub fn im2col_back(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    ne: &[i64; 4],
    s0: i32,
    s1: i32,
    p0: i32,
    p1: i32,
    d0: i32,
    d1: i32,
    is_2d: bool,
) -> TensorPtr {
    let result = ctx.new_tensor(Type::F32, ne);
    result.get_mut().set_op_params_i32(&[s0, s1, p0, p1, d0, d1, is_2d as i32]);
    set_op(result, Op::IM2COL_BACK, &[a, b]);
    result
}

/// 3D [`im2col`]: kernel `a` [KW, KH, KD, OC*IC], input `b` [IW, IH, ID, N*IC], result
/// [IC*KD*KH*KW, OW, OH, OD*N].
#[allow(clippy::too_many_arguments)]
pub fn im2col_3d(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    ic: i64,
    s0: i32,
    s1: i32,
    s2: i32,
    p0: i32,
    p1: i32,
    p2: i32,
    d0: i32,
    d1: i32,
    d2: i32,
    dst_type: Type,
) -> TensorPtr {
    crate::ggml_assert!(ic != 0, "im2col_3d with 0 input channels");
    let n = b.ne[3] / ic;
    let [iw, ih, id, _] = b.ne;
    let [kw, kh, kd, _] = a.ne;
    let od = conv_output_size(id, kd, s2, p2, d2);
    let oh = conv_output_size(ih, kh, s1, p1, d1);
    let ow = conv_output_size(iw, kw, s0, p0, d0);
    crate::ggml_assert!(od > 0, "b too small compared to a");
    crate::ggml_assert!(oh > 0, "b too small compared to a");
    crate::ggml_assert!(ow > 0, "b too small compared to a");

    let result = ctx.new_tensor(dst_type, &[kw * kh * kd * ic, ow, oh, od * n]);
    result.get_mut().set_op_params_i32(&[s0, s1, s2, p0, p1, p2, d0, d1, d2, ic as i32]);
    set_op(result, Op::IM2COL_3D, &[a, b]);
    result
}

/// Folds columns `a` [K*OC, T_in] back into a signal [T_out, OC] by overlap-adding frames
/// placed `s0` apart, cropping `p0` from each end.
pub fn col2im_1d(ctx: &mut Context, a: TensorPtr, s0: i32, oc: i32, p0: i32) -> TensorPtr {
    crate::ggml_assert!(a.is_matrix());
    crate::ggml_assert!(a.is_contiguous());
    crate::ggml_assert!(a.type_ == Type::F32 || a.type_ == Type::F16 || a.type_ == Type::BF16);
    crate::ggml_assert!(s0 > 0);
    crate::ggml_assert!(oc > 0);
    crate::ggml_assert!(p0 >= 0);
    let k_oc = a.ne[0];
    let t_in = a.ne[1];
    let k = k_oc / oc as i64;
    let t_out = (t_in - 1) * s0 as i64 + k - 2 * p0 as i64;
    crate::ggml_assert!(k_oc == k * oc as i64, "{} columns are not a whole number of {} channels", k_oc, oc);
    crate::ggml_assert!(k > 0 && t_out > 0);

    let result = ctx.new_tensor(a.type_, &[t_out, oc as i64]);
    result.get_mut().set_op_params_i32(&[s0, oc, p0]);
    set_op(result, Op::COL2IM_1D, &[a]);
    result
}

/// Transposed 1D convolution of `b` [IW, IC, N] with kernel `a` [K, OC, IC]; only padding 0
/// and dilation 1 are supported.
pub fn conv_transpose_1d(ctx: &mut Context, a: TensorPtr, b: TensorPtr, s0: i32, p0: i32, d0: i32) -> TensorPtr {
    crate::ggml_assert!(b.is_matrix());
    crate::ggml_assert!(a.ne[2] == b.ne[1]);
    crate::ggml_assert!(a.ne[3] == 1);
    crate::ggml_assert!(p0 == 0);
    crate::ggml_assert!(d0 == 1);
    // (IW - 1) * s0 - 2 * p0 + d0 * (K - 1) + 1, with p0 = 0 and d0 = 1
    let ow = (b.ne[0] - 1) * s0 as i64 + (a.ne[0] - 1) + 1;
    let result = ctx.new_tensor(Type::F32, &[ow, a.ne[1], b.ne[2], 1]);
    result.get_mut().set_op_params_i32(&[s0, p0, d0]);
    set_op(result, Op::CONV_TRANSPOSE_1D, &[a, b]);
    result
}

/// Depthwise 2D convolution as one op: kernel `a` [KW, KH, 1, C], input `b` [W, H, C, N].
/// An input stored channels-innermost gives a result stored the same way.
#[allow(clippy::too_many_arguments)]
pub fn conv_2d_dw_direct(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    stride0: i32,
    stride1: i32,
    pad0: i32,
    pad1: i32,
    dilation0: i32,
    dilation1: i32,
) -> TensorPtr {
    crate::ggml_assert!(a.ne[2] == 1);
    crate::ggml_assert!(a.ne[3] == b.ne[2]);
    let ne = [
        conv_output_size(b.ne[0], a.ne[0], stride0, pad0, dilation0),
        conv_output_size(b.ne[1], a.ne[1], stride1, pad1, dilation1),
        b.ne[2],
        b.ne[3],
    ];
    let result = ctx.new_tensor(b.type_, &ne);
    if b.is_contiguous_channels() {
        // CWHN order, like the input.
        let r = result.get_mut();
        let type_size = r.type_.type_size();
        crate::ggml_assert!(r.type_.blck_size() == 1);
        r.nb[0] = r.ne[2] as usize * type_size;
        r.nb[1] = r.ne[0] as usize * r.nb[0];
        r.nb[2] = type_size;
    }
    result.get_mut().set_op_params_i32(&[stride0, stride1, pad0, pad1, dilation0, dilation1]);
    set_op(result, Op::CONV_2D_DW, &[a, b]);
    result
}

/// 2D convolution as one op: kernel `a` [KW, KH, IC, OC], input `b` [W, H, IC, N], result
/// [OW, OH, OC, N] of `b`'s type.
#[allow(clippy::too_many_arguments)]
pub fn conv_2d_direct(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    s0: i32,
    s1: i32,
    p0: i32,
    p1: i32,
    d0: i32,
    d1: i32,
) -> TensorPtr {
    crate::ggml_assert!(a.ne[2] == b.ne[2], "kernel and input channels differ");
    let ne = [
        conv_output_size(b.ne[0], a.ne[0], s0, p0, d0),
        conv_output_size(b.ne[1], a.ne[1], s1, p1, d1),
        a.ne[3],
        b.ne[3],
    ];
    let result = ctx.new_tensor(b.type_, &ne);
    result.get_mut().set_op_params_i32(&[s0, s1, p0, p1, d0, d1]);
    set_op(result, Op::CONV_2D, &[a, b]);
    result
}

/// 3D convolution as one op: kernel `a` [KW, KH, KD, c*oc], input `b` [W, H, D, c*n], result
/// f32 [OW, OH, OD, oc*n].
#[allow(clippy::too_many_arguments)]
pub fn conv_3d_direct(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    s0: i32,
    s1: i32,
    s2: i32,
    p0: i32,
    p1: i32,
    p2: i32,
    d0: i32,
    d1: i32,
    d2: i32,
    c: i32,
    n: i32,
    oc: i32,
) -> TensorPtr {
    crate::ggml_assert!(a.ne[3] == c as i64 * oc as i64);
    crate::ggml_assert!(b.ne[3] == c as i64 * n as i64);
    let ne = [
        conv_output_size(b.ne[0], a.ne[0], s0, p0, d0),
        conv_output_size(b.ne[1], a.ne[1], s1, p1, d1),
        conv_output_size(b.ne[2], a.ne[2], s2, p2, d2),
        oc as i64 * n as i64,
    ];
    let result = ctx.new_tensor(Type::F32, &ne);
    result.get_mut().set_op_params_i32(&[s0, s1, s2, p0, p1, p2, d0, d1, d2, c, n, oc]);
    set_op(result, Op::CONV_3D, &[a, b]);
    result
}

/// Transposed 2D convolution without padding: kernel `a` [KW, KH, OC, IC], input `b`
/// [W, H, IC, N], result f32 [(W-1)*stride + KW, (H-1)*stride + KH, OC, N].
pub fn conv_transpose_2d_p0(ctx: &mut Context, a: TensorPtr, b: TensorPtr, stride: i32) -> TensorPtr {
    crate::ggml_assert!(a.ne[3] == b.ne[2]);
    let out = |ins: i64, ks: i64| (ins - 1) * stride as i64 + ks;
    let result = ctx.new_tensor(Type::F32, &[out(b.ne[0], a.ne[0]), out(b.ne[1], a.ne[1]), a.ne[2], b.ne[3]]);
    result.get_mut().set_op_param_i32(0, stride);
    set_op(result, Op::CONV_TRANSPOSE_2D, &[a, b]);
    result
}

/// 1D convolution via [`im2col`]: kernel `a` [K, IC, OC], signal `b` [L, IC, N], result
/// [OL, OC, N].
pub fn conv_1d(ctx: &mut Context, a: TensorPtr, b: TensorPtr, s0: i32, p0: i32, d0: i32) -> TensorPtr {
    let cols = im2col(ctx, a, b, s0, 0, p0, 0, d0, 0, false, im2col_type(a.type_)); // [N, OL, IC*K]
    let kernel_2d = reshape_2d(ctx, a, a.ne[0] * a.ne[1], a.ne[2]); // [OC, IC*K]
    let cols_2d = reshape_2d(ctx, cols, cols.ne[0], cols.ne[2] * cols.ne[1]); // [N*OL, IC*K]
    // Kernel first: the reference creates the two reshapes as arguments of one call, which
    // GCC evaluates right to left; the same creation order keeps graph dumps identical.
    let result = mul_mat(ctx, cols_2d, kernel_2d);
    reshape_3d(ctx, result, cols.ne[1], a.ne[2], cols.ne[2]) // [N, OC, OL]
}

/// [`conv_1d`] with half-kernel ("same") padding.
pub fn conv_1d_ph(ctx: &mut Context, a: TensorPtr, b: TensorPtr, s: i32, d: i32) -> TensorPtr {
    conv_1d(ctx, a, b, s, (a.ne[0] / 2) as i32, d)
}

/// Depthwise 1D convolution via [`im2col`]: kernel `a` [K, 1, C], signal `b` [L, C, N].
pub fn conv_1d_dw(ctx: &mut Context, a: TensorPtr, b: TensorPtr, s0: i32, p0: i32, d0: i32) -> TensorPtr {
    let new_b = reshape_4d(ctx, b, b.ne[0], 1, b.ne[1], b.ne[2]);
    let cols = im2col(ctx, a, new_b, s0, 0, p0, 0, d0, 0, false, im2col_type(a.type_));
    let result = mul_mat(ctx, cols, a);
    reshape_3d(ctx, result, result.ne[0], result.ne[2], 1)
}

/// [`conv_1d_dw`] with half-kernel padding.
pub fn conv_1d_dw_ph(ctx: &mut Context, a: TensorPtr, b: TensorPtr, s0: i32, d0: i32) -> TensorPtr {
    conv_1d_dw(ctx, a, b, s0, (a.ne[0] / 2) as i32, d0)
}

/// 2D convolution via [`im2col`]: kernel `a` [KW, KH, IC, OC], image `b` [W, H, IC, N],
/// result [OW, OH, OC, N].
#[allow(clippy::too_many_arguments)]
pub fn conv_2d(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    s0: i32,
    s1: i32,
    p0: i32,
    p1: i32,
    d0: i32,
    d1: i32,
) -> TensorPtr {
    let cols = im2col(ctx, a, b, s0, s1, p0, p1, d0, d1, true, im2col_type(a.type_)); // [N, OH, OW, IC*KH*KW]
    let kernel_2d = reshape_2d(ctx, a, a.ne[0] * a.ne[1] * a.ne[2], a.ne[3]); // [OC, IC*KH*KW]
    let cols_2d = reshape_2d(ctx, cols, cols.ne[0], cols.ne[3] * cols.ne[2] * cols.ne[1]); // [N*OH*OW, IC*KH*KW]
    // Kernel first: the reference creates the two reshapes as arguments of one call, which
    // GCC evaluates right to left; the same creation order keeps graph dumps identical.
    let result = mul_mat(ctx, cols_2d, kernel_2d);
    let result = reshape_4d(ctx, result, cols.ne[1], cols.ne[2], cols.ne[3], a.ne[3]); // [OC, N, OH, OW]
    let result = permute(ctx, result, 0, 1, 3, 2);
    cont(ctx, result) // [N, OC, OH, OW]
}

/// [`conv_2d`] with stride equal to the kernel size and no padding (patch embedding).
pub fn conv_2d_sk_p0(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    conv_2d(ctx, a, b, a.ne[0] as i32, a.ne[1] as i32, 0, 0, 1, 1)
}

/// [`conv_2d`] with stride 1 and half-kernel padding.
pub fn conv_2d_s1_ph(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    conv_2d(ctx, a, b, 1, 1, (a.ne[0] / 2) as i32, (a.ne[1] / 2) as i32, 1, 1)
}

/// Depthwise 2D convolution via [`im2col`]: kernel `a` [KW, KH, 1, C], image `b`
/// [W, H, C, N], result [OW, OH, C, N].
#[allow(clippy::too_many_arguments)]
pub fn conv_2d_dw(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    s0: i32,
    s1: i32,
    p0: i32,
    p1: i32,
    d0: i32,
    d1: i32,
) -> TensorPtr {
    let new_a = reshape_4d(ctx, a, a.ne[0], a.ne[1], 1, a.ne[2] * a.ne[3]);
    let new_b = reshape_4d(ctx, b, b.ne[0], b.ne[1], 1, b.ne[2] * b.ne[3]);
    let cols = im2col(ctx, new_a, new_b, s0, s1, p0, p1, d0, d1, true, im2col_type(a.type_)); // [N*IC, OH, OW, KH*KW]
    let cols_4d = reshape_4d(ctx, cols, cols.ne[0], cols.ne[2] * cols.ne[1], b.ne[2], b.ne[3]); // [N, IC, OH*OW, KH*KW]
    let kernel = reshape_4d(ctx, new_a, new_a.ne[0] * new_a.ne[1], new_a.ne[2], new_a.ne[3], 1); // [1, OC, 1, KH*KW]
    let result = mul_mat(ctx, kernel, cols_4d);
    reshape_4d(ctx, result, cols.ne[1], cols.ne[2], b.ne[2], b.ne[3]) // [N, OC, OH, OW]
}

/// 3D convolution via [`im2col_3d`]: kernel `a` [KW, KH, KD, OC*IC], volume `b`
/// [W, H, D, N*IC], result [OW, OH, OD, OC*N].
#[allow(clippy::too_many_arguments)]
pub fn conv_3d(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    ic: i64,
    s0: i32,
    s1: i32,
    s2: i32,
    p0: i32,
    p1: i32,
    p2: i32,
    d0: i32,
    d1: i32,
    d2: i32,
) -> TensorPtr {
    let cols = im2col_3d(ctx, a, b, ic, s0, s1, s2, p0, p1, p2, d0, d1, d2, im2col_type(a.type_)); // [N*OD, OH, OW, IC*KD*KH*KW]
    let oc = a.ne[3] / ic;
    let n = b.ne[3] / ic;
    crate::ggml_assert!(n != 0, "conv_3d input has fewer than {} channels", ic);
    let kernel_2d = reshape_2d(ctx, a, a.ne[0] * a.ne[1] * a.ne[2] * ic, oc); // [OC, IC*KD*KH*KW]
    let cols_2d = reshape_2d(ctx, cols, cols.ne[0], cols.ne[3] * cols.ne[2] * cols.ne[1]); // [N*OD*OH*OW, IC*KD*KH*KW]
    // Kernel first: the reference creates the two reshapes as arguments of one call, which
    // GCC evaluates right to left; the same creation order keeps graph dumps identical.
    let result = mul_mat(ctx, cols_2d, kernel_2d);
    let od = cols.ne[3] / n;
    let result = reshape_4d(ctx, result, cols.ne[1] * cols.ne[2], od, n, oc); // [OC, N, OD, OH*OW]
    let result = permute(ctx, result, 0, 1, 3, 2);
    let result = cont(ctx, result); // [N, OC, OD, OH*OW]
    reshape_4d(ctx, result, cols.ne[1], cols.ne[2], od, oc * n) // [N*OC, OD, OH, OW]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn im2col_2d_and_1d() {
        let mut c = ctx();
        let k = c.new_tensor(Type::F16, &[3, 3, 4, 8]);
        let img = c.new_tensor(Type::F32, &[10, 9, 4, 2]);
        let cols = im2col(&mut c, k, img, 1, 2, 1, 0, 1, 1, true, Type::F16);
        // OW = (10 + 2 - 2 - 1) / 1 + 1 = 10, OH = (9 - 2 - 1) / 2 + 1 = 4
        assert_eq!((cols.ne, cols.type_, cols.op), ([36, 10, 4, 2], Type::F16, Op::IM2COL));
        assert_eq!(cols.op_params[..7], [1, 2, 1, 0, 1, 1, 1]);
        assert_eq!((cols.src(0), cols.src(1)), (Some(k), Some(img)));

        let k1 = c.new_tensor(Type::F32, &[5, 4, 6]);
        let sig = c.new_tensor(Type::F32, &[20, 4, 3]);
        let cols = im2col(&mut c, k1, sig, 2, 0, 2, 0, 1, 0, false, Type::F32);
        assert_eq!(cols.ne, [20, 10, 3, 1]);
        assert_eq!(cols.op_params[6], 0);

        let back = im2col_back(&mut c, k1, cols, &[20, 4, 3, 1], 2, 0, 2, 0, 1, 0, false);
        assert_eq!((back.ne, back.op, back.src(1)), ([20, 4, 3, 1], Op::IM2COL_BACK, Some(cols)));
    }

    #[test]
    fn im2col_3d_shape() {
        let mut c = ctx();
        let k = c.new_tensor(Type::F16, &[3, 3, 3, 2 * 4]);
        let vol = c.new_tensor(Type::F32, &[8, 8, 6, 3 * 4]);
        let cols = im2col_3d(&mut c, k, vol, 4, 1, 1, 1, 1, 1, 0, 1, 1, 1, Type::F16);
        assert_eq!(cols.ne, [27 * 4, 8, 8, 4 * 3]);
        assert_eq!(cols.op_params[..10], [1, 1, 1, 1, 1, 0, 1, 1, 1, 4]);
    }

    #[test]
    fn direct_convolutions() {
        let mut c = ctx();
        let k = c.new_tensor(Type::F16, &[3, 3, 4, 8]);
        let img = c.new_tensor(Type::F32, &[10, 9, 4, 2]);
        let r = conv_2d_direct(&mut c, k, img, 1, 1, 1, 1, 1, 1);
        assert_eq!((r.ne, r.type_, r.op), ([10, 9, 8, 2], Type::F32, Op::CONV_2D));
        assert_eq!(r.op_params[..6], [1, 1, 1, 1, 1, 1]);

        let kdw = c.new_tensor(Type::F32, &[3, 3, 1, 4]);
        let r = conv_2d_dw_direct(&mut c, kdw, img, 2, 2, 1, 1, 1, 1);
        assert_eq!((r.ne, r.op, r.nb), ([5, 5, 4, 2], Op::CONV_2D_DW, [4, 20, 100, 400]));
        // A channels-innermost input (a permuted view) gives a result strided the same way.
        let cwhn = c.new_tensor(Type::F32, &[4, 10, 9, 2]);
        let v = c.new_tensor_impl(Type::F32, &[10, 9, 4, 2], Some(cwhn), 0);
        v.get_mut().nb = [16, 160, 4, 1440];
        let r = conv_2d_dw_direct(&mut c, kdw, v, 2, 2, 1, 1, 1, 1);
        assert_eq!(r.nb, [16, 80, 4, 400]);

        let k3 = c.new_tensor(Type::F32, &[3, 3, 3, 2 * 5]);
        let vol = c.new_tensor(Type::F32, &[8, 8, 6, 2 * 3]);
        let r = conv_3d_direct(&mut c, k3, vol, 1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 3, 5);
        assert_eq!((r.ne, r.op), ([6, 6, 4, 15], Op::CONV_3D));
        assert_eq!(r.op_params[..12], [1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 3, 5]);
    }

    #[test]
    fn transposed_and_col2im() {
        let mut c = ctx();
        let k = c.new_tensor(Type::F16, &[4, 6, 3]);
        let sig = c.new_tensor(Type::F32, &[10, 3]);
        let r = conv_transpose_1d(&mut c, k, sig, 2, 0, 1);
        assert_eq!((r.ne, r.op_params[..3].to_vec()), ([22, 6, 1, 1], vec![2, 0, 1]));

        let k2 = c.new_tensor(Type::F16, &[3, 3, 5, 4]);
        let img = c.new_tensor(Type::F32, &[7, 6, 4, 2]);
        let r = conv_transpose_2d_p0(&mut c, k2, img, 2);
        assert_eq!((r.ne, r.op_params[0], r.op), ([15, 13, 5, 2], 2, Op::CONV_TRANSPOSE_2D));

        let cols = c.new_tensor(Type::F32, &[4 * 3, 10]);
        let r = col2im_1d(&mut c, cols, 2, 3, 1);
        assert_eq!((r.ne, r.op_params[..3].to_vec()), ([9 * 2 + 4 - 2, 3, 1, 1], vec![2, 3, 1]));
    }

    #[test]
    fn composite_convolutions() {
        let mut c = ctx();
        let k1 = c.new_tensor(Type::F16, &[3, 4, 6]);
        let sig = c.new_tensor(Type::F32, &[20, 4, 2]);
        let r = conv_1d_ph(&mut c, k1, sig, 1, 1);
        assert_eq!((r.ne, r.op), ([20, 6, 2, 1], Op::RESHAPE));
        let mm = r.view_source().unwrap();
        assert_eq!(mm.op, Op::MUL_MAT);
        let cols = mm.src(0).unwrap().view_source().unwrap();
        assert_eq!((cols.op, cols.type_, cols.ne), (Op::IM2COL, Type::F16, [12, 20, 2, 1]));

        let k2 = c.new_tensor(Type::BF16, &[3, 3, 4, 8]);
        let img = c.new_tensor(Type::F32, &[10, 9, 4, 2]);
        let r = conv_2d_s1_ph(&mut c, k2, img);
        assert_eq!((r.ne, r.op), ([10, 9, 8, 2], Op::CONT));
        let perm = r.src(0).unwrap();
        assert_eq!(perm.op, Op::PERMUTE);
        let r = conv_2d_sk_p0(&mut c, k2, img);
        assert_eq!(r.ne, [3, 3, 8, 2]);

        let kdw = c.new_tensor(Type::F32, &[3, 3, 1, 4]);
        let r = conv_2d_dw(&mut c, kdw, img, 1, 1, 1, 1, 1, 1);
        assert_eq!(r.ne, [10, 9, 4, 2]);

        let k1dw = c.new_tensor(Type::F32, &[3, 1, 4]);
        let sig1 = c.new_tensor(Type::F32, &[20, 4]);
        let r = conv_1d_dw_ph(&mut c, k1dw, sig1, 1, 1);
        assert_eq!(r.ne, [20, 4, 1, 1]);

        let k3 = c.new_tensor(Type::F16, &[3, 3, 3, 5 * 2]);
        let vol = c.new_tensor(Type::F32, &[8, 8, 6, 3 * 2]);
        let r = conv_3d(&mut c, k3, vol, 2, 1, 1, 1, 0, 0, 0, 1, 1, 1);
        assert_eq!((r.ne, r.op), ([6, 6, 4, 15], Op::RESHAPE));
    }
}
