//! Convolution kernels: `im2col` (2D and 1D, and its gradient), `im2col_3d`, `col2im_1d`, the
//! transposed convolutions and the direct 2D, 3D and depthwise convolutions.
//!
//! The direct convolutions unfold one output position at a time into a row of the kernel's
//! type (f32 or binary16, as the reference's im2col + matrix product does) and take its dot
//! product with every output channel's kernel; each thread owns a range of output positions,
//! so no phase needs the whole team. The transposed convolutions likewise let each thread
//! gather the operands it needs (rounded to the kernel's type, as the reference's permuted
//! copies are) and accumulate into the output channels it owns.
//!
//! The small element helpers at the top are shared by the other kernels of this batch
//! (pooling, misc, the recurrent ops).

use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src, use_simd};
use crate::cpu::kernels::simd;
use crate::quants::half::{Bf16, bf16_to_fp32, fp16_to_fp32, fp32_to_bf16, fp32_to_fp16};

/// `ggml_op_params` reading for the convolution family.
fn param(dst: &Tensor, i: usize) -> i64 {
    i64::from(dst.op_params[i])
}

/// Byte offset of element `(i0, i1, i2, i3)` of `t`; the indices are in range.
#[inline]
pub(super) fn at(t: &Tensor, i0: i64, i1: i64, i2: i64, i3: i64) -> usize {
    i0 as usize * t.nb[0] + i1 as usize * t.nb[1] + i2 as usize * t.nb[2] + i3 as usize * t.nb[3]
}

/// Reads the element at byte offset `off` of `t` (F32, F16 or BF16) as f32.
///
/// # Safety
/// `off` addresses an element inside `t`'s allocated data.
#[inline]
pub(super) unsafe fn load(t: &Tensor, off: usize) -> f32 {
    // SAFETY: the caller keeps the offset inside the data; reads are unaligned-safe.
    unsafe {
        let p = t.data.cast::<u8>().add(off);
        match t.type_ {
            Type::F32 => p.cast::<f32>().read_unaligned(),
            Type::F16 => fp16_to_fp32(p.cast::<u16>().read_unaligned()),
            Type::BF16 => bf16_to_fp32(Bf16 { bits: p.cast::<u16>().read_unaligned() }),
            other => crate::ggml_abort!("cannot read {} elements as f32", other.name()),
        }
    }
}

/// Writes `v` to the element at byte offset `off` of `t` (F32, F16 or BF16).
///
/// # Safety
/// `off` addresses an element inside `t`'s allocated data that no other thread touches now.
#[inline]
pub(super) unsafe fn store(t: &Tensor, off: usize, v: f32) {
    // SAFETY: the caller keeps the offset inside the data and owns the element.
    unsafe {
        let p = t.data.cast::<u8>().add(off);
        match t.type_ {
            Type::F32 => p.cast::<f32>().write_unaligned(v),
            Type::F16 => p.cast::<u16>().write_unaligned(fp32_to_fp16(v)),
            Type::BF16 => p.cast::<u16>().write_unaligned(fp32_to_bf16(v).bits),
            other => crate::ggml_abort!("cannot write f32 into {} elements", other.name()),
        }
    }
}

/// Adds `v` to the f32 at byte offset `off` of `t`.
///
/// # Safety
/// As [`store`], for an F32 tensor.
#[inline]
unsafe fn add_f32(t: &Tensor, off: usize, v: f32) {
    // SAFETY: the caller keeps the offset inside the F32 data and owns the element.
    unsafe {
        let p = t.data.cast::<u8>().add(off).cast::<f32>();
        p.write_unaligned(p.read_unaligned() + v);
    }
}

fn is_plain_float(t: Type) -> bool {
    matches!(t, Type::F32 | Type::F16 | Type::BF16)
}

/// The element types the dot products of the convolutions run in: f32, or binary16 bits
/// when the kernel is F16 (the reference rounds the unfolded input to the kernel's type).
trait DotElem: Copy + Default {
    fn from_f32(x: f32) -> Self;
    fn dot(x: &[Self], y: &[Self], simd: bool) -> f32;
}

impl DotElem for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn dot(x: &[f32], y: &[f32], simd: bool) -> f32 {
        if simd { simd::dot_f32(x, y) } else { simd::scalar::dot_f32(x, y) }
    }
}

impl DotElem for u16 {
    fn from_f32(x: f32) -> Self {
        fp32_to_fp16(x)
    }
    fn dot(x: &[u16], y: &[u16], simd: bool) -> f32 {
        if simd { simd::dot_f16(x, y) } else { simd::scalar::dot_f16(x, y) }
    }
}

// ---------------------------------------------------------------------------------------------
// im2col

/// IM2COL: F16 or F32 out, from an F32, F16 or BF16 input whose rows are packed.
pub fn im2col_supports(node: &Tensor) -> bool {
    let input = node.source(1);
    matches!(node.type_, Type::F32 | Type::F16) && input.is_some_and(|b| is_plain_float(b.type_))
}

/// The geometry shared by `im2col` and its gradient.
struct Unfold {
    s0: i64,
    s1: i64,
    p0: i64,
    p1: i64,
    d0: i64,
    d1: i64,
    is_2d: bool,
}

impl Unfold {
    fn from_params(dst: &Tensor) -> Unfold {
        Unfold {
            s0: param(dst, 0),
            s1: param(dst, 1),
            p0: param(dst, 2),
            p1: param(dst, 3),
            d0: param(dst, 4),
            d1: param(dst, 5),
            is_2d: dst.op_params[6] == 1,
        }
    }
}

/// IM2COL: unfolds image `src1` ([IW, IH, IC, N], or [IW, IC, N] in 1D) into rows
/// `[IC*KH*KW]` per output position of kernel `src0`; positions outside the image read 0.
/// Threads split the input channels.
pub fn im2col(params: &ComputeParams, dst: TensorPtr) {
    let (a, b) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(im2col_supports(&dst), "im2col: {} -> {} is not supported", b.type_.name(), dst.type_.name());
    crate::ggml_assert!(b.nb[0] == b.type_.type_size(), "im2col: input rows must be packed");
    crate::ggml_assert!(dst.is_contiguous(), "im2col: result must be contiguous");
    let u = Unfold::from_params(&dst);
    let (n, ic, ih, iw) = if u.is_2d { (b.ne[3], b.ne[2], b.ne[1], b.ne[0]) } else { (b.ne[2], b.ne[1], 1, b.ne[0]) };
    let (kh, kw) = (if u.is_2d { a.ne[1] } else { 1 }, a.ne[0]);
    let (oh, ow) = (if u.is_2d { dst.ne[2] } else { 1 }, dst.ne[1]);
    let (ofs_n, ofs_c) = if u.is_2d { (b.nb[3], b.nb[2]) } else { (b.nb[2], b.nb[1]) };
    let row_stride = if u.is_2d { b.nb[1] } else { 0 };
    let row_len = ic * kh * kw;
    let esize = dst.type_.type_size();

    for inn in 0..n {
        for ioh in 0..oh {
            for iow in 0..ow {
                let row = (inn * oh * ow + ioh * ow + iow) * row_len;
                let mut iic = params.ith as i64;
                while iic < ic {
                    let base = inn as usize * ofs_n + iic as usize * ofs_c;
                    for ikh in 0..kh {
                        for ikw in 0..kw {
                            let iiw = iow * u.s0 + ikw * u.d0 - u.p0;
                            let iih = ioh * u.s1 + ikh * u.d1 - u.p1;
                            let out = (row + iic * kh * kw + ikh * kw + ikw) as usize * esize;
                            let inside = (0..ih).contains(&iih) && (0..iw).contains(&iiw);
                            // SAFETY: the indices are inside the image (checked) and the output
                            // element is inside dst; input channel `iic` is this thread's.
                            unsafe {
                                let v = if inside {
                                    load(&b, base + iih as usize * row_stride + iiw as usize * b.nb[0])
                                } else {
                                    0.0
                                };
                                store(&dst, out, v);
                            }
                        }
                    }
                    iic += params.nth as i64;
                }
            }
        }
    }
}

/// IM2COL_BACK: an F32 column gradient, an F32 or F16 kernel (shape only), F32 out.
pub fn im2col_back_supports(node: &Tensor) -> bool {
    let grad = node.source(0);
    let kernel = node.source(1);
    node.type_ == Type::F32
        && grad.is_some_and(|g| g.type_ == Type::F32)
        && kernel.is_some_and(|k| matches!(k.type_, Type::F32 | Type::F16))
}

/// IM2COL_BACK: folds the gradient of im2col's output (`src0`, contiguous) back onto the
/// image: each input element sums the column entries that read it. Threads split channels.
pub fn im2col_back(params: &ComputeParams, dst: TensorPtr) {
    let (grad, kernel) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(im2col_back_supports(&dst), "im2col_back: unsupported types");
    crate::ggml_assert!(dst.nb[0] == 4, "im2col_back: result rows must be packed");
    crate::ggml_assert!(grad.is_contiguous(), "im2col_back: gradient must be contiguous");
    let u = Unfold::from_params(&dst);
    let (n, ic, ih, iw) =
        if u.is_2d { (dst.ne[3], dst.ne[2], dst.ne[1], dst.ne[0]) } else { (dst.ne[2], dst.ne[1], 1, dst.ne[0]) };
    let (kh, kw) = (if u.is_2d { kernel.ne[1] } else { 1 }, kernel.ne[0]);
    let (oh, ow) = (if u.is_2d { grad.ne[2] } else { 1 }, grad.ne[1]);
    let (ofs_n, ofs_c) = if u.is_2d { (dst.nb[3], dst.nb[2]) } else { (dst.nb[2], dst.nb[1]) };
    let row_stride = if u.is_2d { dst.nb[1] } else { 0 };
    let g = grad.data.cast::<f32>().cast_const();

    for inn in 0..n {
        let mut iic = params.ith as i64;
        while iic < ic {
            for iih in 0..ih {
                for iiw in 0..iw {
                    let mut sum = 0.0f32;
                    for ikh in 0..kh {
                        for ikw in 0..kw {
                            // Positions skipped by the stride in the forward pass get nothing.
                            let tw = iiw + u.p0 - ikw * u.d0;
                            if tw % u.s0 != 0 {
                                continue;
                            }
                            let iow = tw / u.s0;
                            let ioh = if u.is_2d {
                                let th = iih + u.p1 - ikh * u.d1;
                                if th % u.s1 != 0 {
                                    continue;
                                }
                                th / u.s1
                            } else {
                                0
                            };
                            if !(0..ow).contains(&iow) || !(0..oh).contains(&ioh) {
                                continue;
                            }
                            let idx =
                                (inn * oh * ow + ioh * ow + iow) * (ic * kh * kw) + iic * kh * kw + ikh * kw + ikw;
                            // SAFETY: the index is inside the contiguous gradient (all terms
                            // are within its extents).
                            sum += unsafe { *g.add(idx as usize) };
                        }
                    }
                    let off =
                        inn as usize * ofs_n + iic as usize * ofs_c + iih as usize * row_stride + iiw as usize * 4;
                    // SAFETY: the element is inside dst and in this thread's channel.
                    unsafe { store(&dst, off, sum) };
                }
            }
            iic += params.nth as i64;
        }
    }
}

/// IM2COL_3D: F16 or F32 out from an F32, F16 or BF16 volume.
pub fn im2col_3d_supports(node: &Tensor) -> bool {
    im2col_supports(node)
}

/// IM2COL_3D: unfolds volume `src1` ([IW, IH, ID, N*IC]) into rows `[IC*KD*KH*KW]` per
/// output position ([OW, OH, OD*N]). Threads split the input channels.
pub fn im2col_3d(params: &ComputeParams, dst: TensorPtr) {
    let (a, b) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(
        im2col_3d_supports(&dst),
        "im2col_3d: {} -> {} is not supported",
        b.type_.name(),
        dst.type_.name()
    );
    crate::ggml_assert!(dst.is_contiguous(), "im2col_3d: result must be contiguous");
    let [s0, s1, s2, p0, p1, p2, d0, d1, d2, ic] = std::array::from_fn(|i| param(&dst, i));
    crate::ggml_assert!(ic > 0, "im2col_3d: {} input channels", ic);
    let n = b.ne[3] / ic;
    let (id, ih, iw) = (b.ne[2], b.ne[1], b.ne[0]);
    let (kd, kh, kw) = (a.ne[2], a.ne[1], a.ne[0]);
    if n == 0 {
        // Fewer input planes than channels: the result is empty, as in the reference.
        return;
    }
    let od = dst.ne[3] / n;
    let (oh, ow) = (dst.ne[2], dst.ne[1]);
    let row_len = ic * kd * kh * kw;
    let esize = dst.type_.type_size();

    for inn in 0..n {
        for iod in 0..od {
            for ioh in 0..oh {
                for iow in 0..ow {
                    let row = (inn * od * oh * ow + iod * oh * ow + ioh * ow + iow) * row_len;
                    let mut iic = params.ith as i64;
                    while iic < ic {
                        let c = inn * ic + iic;
                        for ikd in 0..kd {
                            for ikh in 0..kh {
                                for ikw in 0..kw {
                                    let iiw = iow * s0 + ikw * d0 - p0;
                                    let iih = ioh * s1 + ikh * d1 - p1;
                                    let iid = iod * s2 + ikd * d2 - p2;
                                    let inside =
                                        (0..id).contains(&iid) && (0..ih).contains(&iih) && (0..iw).contains(&iiw);
                                    let out =
                                        (row + iic * kd * kh * kw + ikd * kh * kw + ikh * kw + ikw) as usize * esize;
                                    // SAFETY: input indices are checked against the volume;
                                    // the output element is inside dst and in this thread's
                                    // channel.
                                    unsafe {
                                        let v = if inside { load(&b, at(&b, iiw, iih, iid, c)) } else { 0.0 };
                                        store(&dst, out, v);
                                    }
                                }
                            }
                        }
                        iic += params.nth as i64;
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// col2im_1d

/// COL2IM_1D: F32, F16 or BF16 columns, the same type out, both contiguous.
pub fn col2im_1d_supports(node: &Tensor) -> bool {
    node.source(0).is_some_and(|s| is_plain_float(s.type_) && s.type_ == node.type_)
}

/// COL2IM_1D: overlap-adds columns `[K*OC, T_in]` into a signal `[T_out, OC]`: output `t`
/// of channel `oc` sums column entries `(oc*K + k, t_in)` with `t_in*s + k == t + p`, in f32.
/// Threads split the time axis.
pub fn col2im_1d(params: &ComputeParams, dst: TensorPtr) {
    let cols = src(dst, 0);
    crate::ggml_assert!(col2im_1d_supports(&dst), "col2im_1d: unsupported type {}", cols.type_.name());
    crate::ggml_assert!(cols.is_contiguous() && dst.is_contiguous(), "col2im_1d: tensors must be contiguous");
    let (s0, oc, p0) = (param(&dst, 0), param(&dst, 1), param(&dst, 2));
    let k_oc = cols.ne[0];
    let t_in = cols.ne[1];
    let k = k_oc / oc;
    let t_out = dst.ne[0];
    let es = cols.type_.type_size();

    let range = split(t_out as usize, params.ith, params.nth);
    for c in 0..oc {
        for t in range.clone() {
            let t_abs = t as i64 + p0;
            let lo = ((t_abs - k + 1 + s0 - 1) / s0).max(0);
            let hi = (t_abs / s0).min(t_in - 1);
            let mut sum = 0.0f32;
            for ti in lo..=hi {
                let kk = t_abs - ti * s0;
                if (0..k).contains(&kk) {
                    // SAFETY: `(c*K + kk, ti)` is inside the contiguous columns.
                    sum += unsafe { load(&cols, ((c * k + kk) + ti * k_oc) as usize * es) };
                }
            }
            // SAFETY: `(t, c)` is inside dst and `t` is in this thread's range.
            unsafe { store(&dst, (t as i64 + c * t_out) as usize * es, sum) };
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Transposed convolutions

/// CONV_TRANSPOSE_1D: F32 or F16 kernel, F32 input and output.
pub fn conv_transpose_1d_supports(node: &Tensor) -> bool {
    let (k, x) = (node.source(0), node.source(1));
    node.type_ == Type::F32
        && k.is_some_and(|k| matches!(k.type_, Type::F32 | Type::F16))
        && x.is_some_and(|x| x.type_ == Type::F32)
}

/// The reference plan's scratch for CONV_TRANSPOSE_1D: the permuted kernel and input, in
/// binary16 for 16-bit kernels and f32 for f32 ones.
pub fn conv_transpose_1d_work_size(node: &Tensor, _n_tasks: usize) -> usize {
    let (Some(k), Some(x)) = (node.source(0), node.source(1)) else {
        crate::ggml_abort!("conv_transpose_1d without sources")
    };
    crate::ggml_assert!(k.ne[3] == 1);
    crate::ggml_assert!(x.ne[2] == 1);
    crate::ggml_assert!(x.ne[3] == 1);
    let elems = (k.ne[0] * k.ne[1] * k.ne[2] + x.ne[0] * x.ne[1]) as usize;
    match (k.type_, x.type_) {
        (Type::F16 | Type::BF16, Type::F32) => 2 * elems,
        (Type::F32, Type::F32) => 4 * elems,
        _ => crate::ggml_abort!("conv_transpose_1d: {} kernel with {} input", k.type_.name(), x.type_.name()),
    }
}

/// CONV_TRANSPOSE_1D: kernel `[K, OC, IC]`, input `[L, IC]`, output `[(L-1)*s + K, OC]`:
/// `out[l*s + k, oc] += Σ_ic x[l, ic] * w[k, oc, ic]`. Threads split the output channels.
pub fn conv_transpose_1d(params: &ComputeParams, dst: TensorPtr) {
    let k = src(dst, 0);
    crate::ggml_assert!(conv_transpose_1d_supports(&dst), "conv_transpose_1d: unsupported types");
    match k.type_ {
        Type::F16 => conv_transpose_1d_typed::<u16>(params, dst),
        _ => conv_transpose_1d_typed::<f32>(params, dst),
    }
}

fn conv_transpose_1d_typed<T: DotElem>(params: &ComputeParams, dst: TensorPtr) {
    let (w, x) = (src(dst, 0), src(dst, 1));
    let (kw, ic) = (w.ne[0] as usize, w.ne[2] as usize);
    let len = x.ne[0] as usize;
    let s0 = param(&dst, 0) as usize;
    let simd = use_simd(params);
    let rows = split(dst.ne[1] as usize, params.ith, params.nth);
    if rows.is_empty() {
        return;
    }

    // The input as [L][IC], in the kernel's type.
    let mut xt = vec![T::default(); len * ic];
    for c in 0..ic {
        for l in 0..len {
            // SAFETY: `(l, c)` is inside the input.
            xt[l * ic + c] = T::from_f32(unsafe { load(&x, at(&x, l as i64, c as i64, 0, 0)) });
        }
    }
    let mut wt = vec![T::default(); kw * ic];
    for o in rows {
        // This channel's kernel as [K][IC].
        for c in 0..ic {
            for kk in 0..kw {
                // SAFETY: `(kk, o, c)` is inside the kernel.
                wt[kk * ic + c] = T::from_f32(unsafe { load(&w, at(&w, kk as i64, o as i64, c as i64, 0)) });
            }
        }
        for i0 in 0..dst.ne[0] {
            // SAFETY: the element is inside dst, in this thread's row.
            unsafe { store(&dst, at(&dst, i0, o as i64, 0, 0), 0.0) };
        }
        for l in 0..len {
            for kk in 0..kw {
                let v = T::dot(&xt[l * ic..(l + 1) * ic], &wt[kk * ic..(kk + 1) * ic], simd);
                // SAFETY: `l*s + kk` < (L-1)*s + K = dst.ne[0]; the row is this thread's.
                unsafe { add_f32(&dst, at(&dst, (l * s0 + kk) as i64, o as i64, 0, 0), v) };
            }
        }
    }
}

/// CONV_TRANSPOSE_2D: F32 or F16 kernel, F32 input and output.
pub fn conv_transpose_2d_supports(node: &Tensor) -> bool {
    conv_transpose_1d_supports(node)
}

/// The reference plan's scratch for CONV_TRANSPOSE_2D: permuted kernel and input in the
/// kernel's type.
pub fn conv_transpose_2d_work_size(node: &Tensor, _n_tasks: usize) -> usize {
    let (Some(k), Some(x)) = (node.source(0), node.source(1)) else {
        crate::ggml_abort!("conv_transpose_2d without sources")
    };
    crate::ggml_assert!(matches!(k.type_, Type::F16 | Type::F32));
    crate::ggml_assert!(x.type_ == Type::F32);
    let es = k.type_.type_size();
    es * (k.ne.iter().product::<i64>() as usize) + es * (x.ne.iter().product::<i64>() as usize)
}

/// CONV_TRANSPOSE_2D: kernel `[KW, KH, OC, IC]`, input `[W, H, IC, N]`, output
/// `[(W-1)*s + KW, (H-1)*s + KH, OC, N]`. Threads split the output channels.
pub fn conv_transpose_2d(params: &ComputeParams, dst: TensorPtr) {
    let k = src(dst, 0);
    crate::ggml_assert!(conv_transpose_2d_supports(&dst), "conv_transpose_2d: unsupported types");
    match k.type_ {
        Type::F16 => conv_transpose_2d_typed::<u16>(params, dst),
        _ => conv_transpose_2d_typed::<f32>(params, dst),
    }
}

fn conv_transpose_2d_typed<T: DotElem>(params: &ComputeParams, dst: TensorPtr) {
    let (w, x) = (src(dst, 0), src(dst, 1));
    let [kw, kh, _, ic] = w.ne.map(|n| n as usize);
    let [iw, ih, _, nb] = x.ne.map(|n| n as usize);
    let stride = param(&dst, 0) as usize;
    let simd = use_simd(params);
    let chans = split(dst.ne[2] as usize, params.ith, params.nth);
    if chans.is_empty() {
        return;
    }

    // The input as [N][H][W][IC], in the kernel's type.
    let mut xt = vec![T::default(); nb * ih * iw * ic];
    for b in 0..nb {
        for c in 0..ic {
            for y in 0..ih {
                for xx in 0..iw {
                    // SAFETY: the indices are inside the input.
                    let v = unsafe { load(&x, at(&x, xx as i64, y as i64, c as i64, b as i64)) };
                    xt[((b * ih + y) * iw + xx) * ic + c] = T::from_f32(v);
                }
            }
        }
    }
    let mut wt = vec![T::default(); kh * kw * ic];
    for o in chans {
        // This channel's kernel as [KH][KW][IC].
        for c in 0..ic {
            for ky in 0..kh {
                for kx in 0..kw {
                    // SAFETY: the indices are inside the kernel.
                    let v = unsafe { load(&w, at(&w, kx as i64, ky as i64, o as i64, c as i64)) };
                    wt[(ky * kw + kx) * ic + c] = T::from_f32(v);
                }
            }
        }
        for b in 0..nb {
            for y in 0..dst.ne[1] {
                for xx in 0..dst.ne[0] {
                    // SAFETY: inside dst, in this thread's channel.
                    unsafe { store(&dst, at(&dst, xx, y, o as i64, b as i64), 0.0) };
                }
            }
            for y in 0..ih {
                for xx in 0..iw {
                    let xrow = &xt[((b * ih + y) * iw + xx) * ic..][..ic];
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let v = T::dot(xrow, &wt[(ky * kw + kx) * ic..][..ic], simd);
                            let (ox, oy) = ((xx * stride + kx) as i64, (y * stride + ky) as i64);
                            // SAFETY: ox < (W-1)*s + KW and oy < (H-1)*s + KH, dst's extents;
                            // the channel is this thread's.
                            unsafe { add_f32(&dst, at(&dst, ox, oy, o as i64, b as i64), v) };
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Direct convolutions

/// `GGML_IM2COL_WORK_SIZE`: the scratch the reference plans for the direct convolutions.
const IM2COL_WORK_SIZE: usize = 16 * 1024 * 1024;

/// CONV_2D: a contiguous F32 or F16 kernel, F32 input and output.
pub fn conv_2d_supports(node: &Tensor) -> bool {
    let (k, x) = (node.source(0), node.source(1));
    node.type_ == Type::F32
        && k.is_some_and(|k| matches!(k.type_, Type::F32 | Type::F16) && k.is_contiguous())
        && x.is_some_and(|x| x.type_ == Type::F32)
}

/// The reference plan's scratch for CONV_2D (a fixed 16 MiB).
pub fn conv_2d_work_size(_node: &Tensor, _n_tasks: usize) -> usize {
    IM2COL_WORK_SIZE
}

/// CONV_3D: as [`conv_2d_supports`].
pub fn conv_3d_supports(node: &Tensor) -> bool {
    conv_2d_supports(node)
}

/// The reference plan's scratch for CONV_3D (a fixed 16 MiB).
pub fn conv_3d_work_size(_node: &Tensor, _n_tasks: usize) -> usize {
    IM2COL_WORK_SIZE
}

/// CONV_2D: kernel `[KW, KH, IC, OC]`, input `[W, H, IC, N]`, output `[OW, OH, OC, N]`.
/// Threads split the output positions.
pub fn conv_2d(params: &ComputeParams, dst: TensorPtr) {
    let k = src(dst, 0);
    crate::ggml_assert!(conv_2d_supports(&dst), "conv_2d: unsupported types or layout");
    crate::ggml_assert!(k.ne[2] == src(dst, 1).ne[2], "conv_2d: kernel and input channels differ");
    match k.type_ {
        Type::F16 => conv_nd_typed::<u16>(params, dst, false),
        _ => conv_nd_typed::<f32>(params, dst, false),
    }
}

/// CONV_3D: kernel `[KW, KH, KD, IC*OC]`, input `[W, H, D, IC*N]`, output
/// `[OW, OH, OD, OC*N]`. Threads split the output positions.
pub fn conv_3d(params: &ComputeParams, dst: TensorPtr) {
    let k = src(dst, 0);
    crate::ggml_assert!(conv_3d_supports(&dst), "conv_3d: unsupported types or layout");
    match k.type_ {
        Type::F16 => conv_nd_typed::<u16>(params, dst, true),
        _ => conv_nd_typed::<f32>(params, dst, true),
    }
}

/// The direct 2D/3D convolution: for each output position, unfold its receptive field into
/// `patch` (in the kernel's type, zero outside the input) and take the dot product with each
/// output channel's (contiguous) kernel.
fn conv_nd_typed<T: DotElem>(params: &ComputeParams, dst: TensorPtr, three_d: bool) {
    let (k, x) = (src(dst, 0), src(dst, 1));
    // Strides, paddings, dilations along x, y, z; channel and batch counts.
    let (s, p, d, c_in, n, c_out) = if three_d {
        let v: [i64; 12] = std::array::from_fn(|i| param(&dst, i));
        ([v[0], v[1], v[2]], [v[3], v[4], v[5]], [v[6], v[7], v[8]], v[9], v[10], v[11])
    } else {
        let v: [i64; 6] = std::array::from_fn(|i| param(&dst, i));
        ([v[0], v[1], 1], [v[2], v[3], 0], [v[4], v[5], 1], x.ne[2], dst.ne[3], k.ne[3])
    };
    let (kw, kh, kd) = (k.ne[0], k.ne[1], if three_d { k.ne[2] } else { 1 });
    let (iw, ih, id) = (x.ne[0], x.ne[1], if three_d { x.ne[2] } else { 1 });
    let (ow, oh, od) = (dst.ne[0], dst.ne[1], if three_d { dst.ne[2] } else { 1 });
    let knl_n = (c_in * kd * kh * kw) as usize;
    if knl_n == 0 || dst.is_empty() {
        return;
    }
    let simd = use_simd(params);

    // SAFETY: the kernel is contiguous (checked by the caller's support test) and holds
    // `c_out` rows of `knl_n` elements of T's size: f32 for F32, binary16 bits for F16.
    let kernel = unsafe { std::slice::from_raw_parts(k.data.cast::<T>().cast_const(), knl_n * c_out as usize) };
    let mut patch = vec![T::default(); knl_n];

    let total = (n * od * oh * ow) as usize;
    for pos in split(total, params.ith, params.nth) {
        let pos = pos as i64;
        let (ox, oy, oz, b) = (pos % ow, (pos / ow) % oh, (pos / (ow * oh)) % od, pos / (ow * oh * od));
        let mut idx = 0;
        for c in 0..c_in {
            // 2D: channel c of image b is plane (c, b); 3D: volume (b*c_in + c).
            for kz in 0..kd {
                for ky in 0..kh {
                    for kx in 0..kw {
                        let sx = ox * s[0] + kx * d[0] - p[0];
                        let sy = oy * s[1] + ky * d[1] - p[1];
                        let sz = oz * s[2] + kz * d[2] - p[2];
                        let inside = (0..iw).contains(&sx) && (0..ih).contains(&sy) && (0..id).contains(&sz);
                        let v = if !inside {
                            0.0
                        } else if three_d {
                            // SAFETY: the coordinates are inside the input (checked).
                            unsafe { load(&x, at(&x, sx, sy, sz, b * c_in + c)) }
                        } else {
                            // SAFETY: as above.
                            unsafe { load(&x, at(&x, sx, sy, c, b)) }
                        };
                        patch[idx] = T::from_f32(v);
                        idx += 1;
                    }
                }
            }
        }
        for o in 0..c_out {
            let v = T::dot(&patch, &kernel[o as usize * knl_n..][..knl_n], simd);
            let off = if three_d { at(&dst, ox, oy, oz, b * c_out + o) } else { at(&dst, ox, oy, o, b) };
            // SAFETY: the element is inside dst and its position is this thread's.
            unsafe { store(&dst, off, v) };
        }
    }
}

/// CONV_2D_DW: F32 or F16 kernel, F32 input and output; the input contiguous (WHCN) or
/// channels-innermost (CWHN).
pub fn conv_2d_dw_supports(node: &Tensor) -> bool {
    let (k, x) = (node.source(0), node.source(1));
    node.type_ == Type::F32
        && k.is_some_and(|k| matches!(k.type_, Type::F32 | Type::F16))
        && x.is_some_and(|x| x.type_ == Type::F32 && (x.is_contiguous() || x.is_contiguous_channels()))
}

/// CONV_2D_DW: depthwise convolution of input `[W, H, C, N]` with kernel `[KW, KH, 1, C]`.
/// A contiguous input is split by planes, a channels-innermost one by output rows.
pub fn conv_2d_dw(params: &ComputeParams, dst: TensorPtr) {
    let (k, x) = (src(dst, 0), src(dst, 1));
    crate::ggml_assert!(conv_2d_dw_supports(&dst), "conv_2d_dw: unsupported types or layout");
    crate::ggml_assert!(k.ne[3] == x.ne[2], "conv_2d_dw: kernel has {} channels, input {}", k.ne[3], x.ne[2]);
    crate::ggml_assert!(dst.ne[3] == x.ne[3]);
    let [sx, sy, px, py, dx, dy] = std::array::from_fn(|i| param(&dst, i));
    let (c, batch) = (x.ne[2], x.ne[3]);
    let (iw, ih, ow, oh, kw, kh) = (x.ne[0], x.ne[1], dst.ne[0], dst.ne[1], k.ne[0], k.ne[1]);

    // One output element: Σ over the kernel taps inside the input of kernel * input.
    let conv = |ox: i64, oy: i64, ch: i64, b: i64| -> f32 {
        let mut sum = 0.0f32;
        for ky in 0..kh {
            let y = oy * sy + ky * dy - py;
            if !(0..ih).contains(&y) {
                continue;
            }
            for kx in 0..kw {
                let xx = ox * sx + kx * dx - px;
                if !(0..iw).contains(&xx) {
                    continue;
                }
                // SAFETY: kernel and input coordinates are inside their tensors.
                sum += unsafe { load(&k, at(&k, kx, ky, 0, ch)) * load(&x, at(&x, xx, y, ch, b)) };
            }
        }
        sum
    };

    if x.is_contiguous() {
        for plane in split((c * batch) as usize, params.ith, params.nth) {
            let (ch, b) = (plane as i64 % c, plane as i64 / c);
            for oy in 0..oh {
                for ox in 0..ow {
                    // SAFETY: inside dst, in this thread's plane.
                    unsafe { store(&dst, at(&dst, ox, oy, ch, b), conv(ox, oy, ch, b)) };
                }
            }
        }
    } else {
        for row in split((oh * batch) as usize, params.ith, params.nth) {
            let (oy, b) = (row as i64 % oh, row as i64 / oh);
            for ox in 0..ow {
                for ch in 0..c {
                    // SAFETY: inside dst, in this thread's row.
                    unsafe { store(&dst, at(&dst, ox, oy, ch, b), conv(ox, oy, ch, b)) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::{conv as ops, shape};
    use crate::cpu::kernels::testing::*;

    /// Value of a plain tensor at `(i0, i1, i2, i3)` from its logical-order values.
    fn get(v: &[f64], ne: [i64; 4], i: [i64; 4]) -> f64 {
        v[(i[0] + ne[0] * (i[1] + ne[1] * (i[2] + ne[2] * i[3]))) as usize]
    }

    /// Naive direct convolution: input `[W, H, D, C*N]` planes addressed by `plane(c, n)`,
    /// kernel `[KW, KH, KD, ...]` addressed by `kplane(c, o)`, output by `oidx`.
    #[allow(clippy::too_many_arguments)]
    fn naive_conv(
        x: &[f64],
        xne: [i64; 4],
        k: &[f64],
        kne: [i64; 4],
        out_ne: [i64; 3],
        (c_in, c_out, n): (i64, i64, i64),
        s: [i64; 3],
        p: [i64; 3],
        d: [i64; 3],
        plane: impl Fn(i64, i64) -> [i64; 2],
        kplane: impl Fn(i64, i64) -> [i64; 2],
    ) -> Vec<f64> {
        let kd = if out_ne[2] > 1 { kne[2] } else { 1 };
        let mut out = Vec::new();
        for b in 0..n {
            for o in 0..c_out {
                for oz in 0..out_ne[2] {
                    for oy in 0..out_ne[1] {
                        for ox in 0..out_ne[0] {
                            let mut sum = 0.0;
                            for c in 0..c_in {
                                for kz in 0..kd {
                                    for ky in 0..kne[1] {
                                        for kx in 0..kne[0] {
                                            let (sx, sy, sz) = (
                                                ox * s[0] + kx * d[0] - p[0],
                                                oy * s[1] + ky * d[1] - p[1],
                                                oz * s[2] + kz * d[2] - p[2],
                                            );
                                            if sx < 0 || sy < 0 || sz < 0 || sx >= xne[0] || sy >= xne[1] {
                                                continue;
                                            }
                                            let [xi2, xi3] = plane(c, b);
                                            if out_ne[2] > 1 && sz >= xne[2] {
                                                continue;
                                            }
                                            let xv = if out_ne[2] > 1 {
                                                get(x, xne, [sx, sy, sz, xi3])
                                            } else {
                                                get(x, xne, [sx, sy, xi2, xi3])
                                            };
                                            let [k2, k3] = kplane(c, o);
                                            let kv = if out_ne[2] > 1 {
                                                get(k, kne, [kx, ky, kz, k3])
                                            } else {
                                                get(k, kne, [kx, ky, k2, k3])
                                            };
                                            sum += xv * kv;
                                        }
                                    }
                                }
                            }
                            out.push(sum);
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn im2col_unfolds_2d_and_1d() {
        for_each_team(|nth, use_ref| {
            for out_ty in [Type::F32, Type::F16] {
                let mut c = ctx();
                let k = c.new_tensor(Type::F16, &[3, 2, 4, 5]);
                let img = c.new_tensor(Type::F32, &[7, 6, 4, 2]);
                put(img, |i| noise(i, 1));
                let x = values(img);
                let r = ops::im2col(&mut c, k, img, 2, 1, 1, 0, 1, 2, true, out_ty);
                assert!(im2col_supports(&r));
                run(&mut c, r, im2col, nth, 0, use_ref);
                let got = values(r);
                let [_, ow, oh, _] = r.ne;
                let mut want = Vec::new();
                for n in 0..2 {
                    for oy in 0..oh {
                        for ox in 0..ow {
                            for ch in 0..4 {
                                for ky in 0..2 {
                                    for kx in 0..3 {
                                        let (ix, iy) = (ox * 2 + kx - 1, oy + ky * 2);
                                        let inside = (0..7).contains(&ix) && (0..6).contains(&iy);
                                        want.push(if inside { get(&x, img.ne, [ix, iy, ch, n]) } else { 0.0 });
                                    }
                                }
                            }
                        }
                    }
                }
                assert_close(&got, &want, if out_ty == Type::F16 { 1e-3 } else { 0.0 }, "im2col 2d");

                // 1D: kernel [K, IC, OC], signal [L, IC, N]
                let k1 = c.new_tensor(Type::F32, &[3, 2, 4]);
                let sig = c.new_tensor(Type::F16, &[9, 2, 3]);
                put(sig, |i| noise(i, 2));
                let xs = values(sig);
                let r = ops::im2col(&mut c, k1, sig, 2, 0, 1, 0, 2, 0, false, Type::F16);
                run(&mut c, r, im2col, nth, 0, use_ref);
                let ow = r.ne[1];
                let mut want = Vec::new();
                for n in 0..3 {
                    for ox in 0..ow {
                        for ch in 0..2 {
                            for kx in 0..3 {
                                let ix = ox * 2 + kx * 2 - 1;
                                want.push(if (0..9).contains(&ix) { get(&xs, sig.ne, [ix, ch, n, 0]) } else { 0.0 });
                            }
                        }
                    }
                }
                assert_close(&values(r), &want, 1e-3, "im2col 1d");
            }
        });
    }

    #[test]
    fn im2col_back_is_the_adjoint() {
        for_each_team(|nth, use_ref| {
            for is_2d in [true, false] {
                let mut c = ctx();
                let (k, img) = if is_2d {
                    (c.new_tensor(Type::F32, &[3, 3, 2, 1]), c.new_tensor(Type::F32, &[6, 5, 2, 2]))
                } else {
                    (c.new_tensor(Type::F32, &[3, 2, 1]), c.new_tensor(Type::F32, &[8, 2, 2]))
                };
                put(img, |i| noise(i, 3));
                // 1D im2col ignores dimension 1's stride and dilation but not its padding
                let p1 = if is_2d { 1 } else { 0 };
                let cols = ops::im2col(&mut c, k, img, 2, 2, 1, p1, 1, 1, is_2d, Type::F32);
                run(&mut c, cols, im2col, nth, 0, use_ref);
                let g = c.new_tensor(Type::F32, &cols.ne);
                put(g, |i| noise(i, 4));
                let back = ops::im2col_back(&mut c, g, k, &img.ne, 2, 2, 1, p1, 1, 1, is_2d);
                assert!(im2col_back_supports(&back));
                run(&mut c, back, im2col_back, nth, 0, use_ref);
                let lhs: f64 = values(cols).iter().zip(values(g)).map(|(a, b)| a * b).sum();
                let rhs: f64 = values(img).iter().zip(values(back)).map(|(a, b)| a * b).sum();
                assert!((lhs - rhs).abs() < 1e-4 * lhs.abs().max(1.0), "2d {is_2d}: {lhs} vs {rhs}");
            }
        });
    }

    #[test]
    fn im2col_3d_matches_the_direct_unfold() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let (ic, n) = (2, 2);
            let k = c.new_tensor(Type::F16, &[2, 2, 2, 3 * ic]);
            let vol = c.new_tensor(Type::F32, &[5, 4, 3, n * ic]);
            put(vol, |i| noise(i, 5));
            let x = values(vol);
            let r = ops::im2col_3d(&mut c, k, vol, ic, 1, 2, 1, 1, 0, 1, 1, 1, 2, Type::F32);
            run(&mut c, r, im2col_3d, nth, 0, use_ref);
            let [_, ow, oh, odn] = r.ne;
            let od = odn / n;
            let mut want = Vec::new();
            for b in 0..n {
                for oz in 0..od {
                    for oy in 0..oh {
                        for ox in 0..ow {
                            for ch in 0..ic {
                                for kz in 0..2 {
                                    for ky in 0..2 {
                                        for kx in 0..2 {
                                            let (sx, sy, sz) = (ox + kx - 1, oy * 2 + ky, oz + kz * 2 - 1);
                                            let inside =
                                                (0..5).contains(&sx) && (0..4).contains(&sy) && (0..3).contains(&sz);
                                            want.push(if inside {
                                                get(&x, vol.ne, [sx, sy, sz, b * ic + ch])
                                            } else {
                                                0.0
                                            });
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            assert_close(&values(r), &want, 0.0, "im2col_3d");
        });
    }

    #[test]
    fn direct_convolutions_match_the_naive_sum() {
        for_each_team(|nth, use_ref| {
            for kty in [Type::F32, Type::F16] {
                let tol = if kty == Type::F16 { 1e-2 } else { 1e-5 };
                let mut c = ctx();
                let k = c.new_tensor(kty, &[3, 2, 3, 4]);
                let img = c.new_tensor(Type::F32, &[7, 6, 3, 2]);
                put(k, |i| noise(i, 6));
                put(img, |i| noise(i, 7));
                let r = ops::conv_2d_direct(&mut c, k, img, 2, 1, 1, 1, 1, 2);
                assert!(conv_2d_supports(&r));
                run(&mut c, r, conv_2d, nth, conv_2d_work_size(&r, nth), use_ref);
                let want = naive_conv(
                    &values(img),
                    img.ne,
                    &values(k),
                    k.ne,
                    [r.ne[0], r.ne[1], 1],
                    (3, 4, 2),
                    [2, 1, 1],
                    [1, 1, 0],
                    [1, 2, 1],
                    |ch, b| [ch, b],
                    |ch, o| [ch, o],
                );
                assert_close(&values(r), &want, tol, "conv_2d");

                // 3D: kernel [KW, KH, KD, IC*OC], input [W, H, D, IC*N]
                let (ic, oc, n) = (2, 3, 2);
                let k3 = c.new_tensor(kty, &[2, 2, 2, ic * oc]);
                let vol = c.new_tensor(Type::F32, &[5, 4, 4, ic * n]);
                put(k3, |i| noise(i, 8));
                put(vol, |i| noise(i, 9));
                let r = ops::conv_3d_direct(&mut c, k3, vol, 1, 2, 1, 1, 0, 1, 1, 1, 2, ic as i32, n as i32, oc as i32);
                run(&mut c, r, conv_3d, nth, conv_3d_work_size(&r, nth), use_ref);
                let want = naive_conv(
                    &values(vol),
                    vol.ne,
                    &values(k3),
                    k3.ne,
                    [r.ne[0], r.ne[1], r.ne[2]],
                    (ic, oc, n),
                    [1, 2, 1],
                    [1, 0, 1],
                    [1, 1, 2],
                    |ch, b| [0, b * ic + ch],
                    |ch, o| [0, o * ic + ch],
                );
                assert_close(&values(r), &want, tol, "conv_3d");
            }
        });
    }

    #[test]
    fn depthwise_convolution_in_both_layouts() {
        for_each_team(|nth, use_ref| {
            for kty in [Type::F32, Type::F16] {
                let mut c = ctx();
                let k = c.new_tensor(kty, &[3, 3, 1, 4]);
                let img = c.new_tensor(Type::F32, &[6, 5, 4, 2]);
                put(k, |i| noise(i, 10));
                put(img, |i| noise(i, 11));
                let r = ops::conv_2d_dw_direct(&mut c, k, img, 2, 1, 1, 1, 1, 2);
                run(&mut c, r, conv_2d_dw, nth, 0, use_ref);
                let x = values(img);
                let kv = values(k);
                let mut dw = Vec::new();
                for b in 0..2 {
                    for ch in 0..4 {
                        for oy in 0..r.ne[1] {
                            for ox in 0..r.ne[0] {
                                let mut sum = 0.0;
                                for ky in 0..3 {
                                    for kx in 0..3 {
                                        let (sx, sy) = (ox * 2 + kx - 1, oy + ky * 2 - 1);
                                        if (0..6).contains(&sx) && (0..5).contains(&sy) {
                                            sum += get(&x, img.ne, [sx, sy, ch, b]) * get(&kv, k.ne, [kx, ky, 0, ch]);
                                        }
                                    }
                                }
                                dw.push(sum);
                            }
                        }
                    }
                }
                assert_close(&values(r), &dw, 1e-5, "conv_2d_dw whcn");

                // the same image stored channels-innermost
                let cwhn = c.new_tensor(Type::F32, &[4, 6, 5, 2]);
                let perm = shape::permute(&mut c, cwhn, 2, 0, 1, 3);
                put(perm, |i| x[i]);
                assert!(perm.is_contiguous_channels());
                let r = ops::conv_2d_dw_direct(&mut c, k, perm, 2, 1, 1, 1, 1, 2);
                assert!(conv_2d_dw_supports(&r));
                run(&mut c, r, conv_2d_dw, nth, 0, use_ref);
                assert_close(&values(r), &dw, 1e-5, "conv_2d_dw cwhn");
            }
        });
    }

    #[test]
    fn transposed_convolutions_scatter_the_kernel() {
        for_each_team(|nth, use_ref| {
            for kty in [Type::F32, Type::F16] {
                let tol = if kty == Type::F16 { 1e-2 } else { 1e-5 };
                let mut c = ctx();
                // 1D: kernel [K, OC, IC], input [L, IC]
                let k = c.new_tensor(kty, &[3, 4, 5]);
                let sig = c.new_tensor(Type::F32, &[6, 5]);
                put(k, |i| noise(i, 12));
                put(sig, |i| noise(i, 13));
                let r = ops::conv_transpose_1d(&mut c, k, sig, 2, 0, 1);
                assert!(conv_transpose_1d_supports(&r));
                run(&mut c, r, conv_transpose_1d, nth, conv_transpose_1d_work_size(&r, nth), use_ref);
                let (kv, xv) = (values(k), values(sig));
                let mut want = vec![0.0; (r.ne[0] * r.ne[1]) as usize];
                for o in 0..4 {
                    for l in 0..6 {
                        for kk in 0..3 {
                            for ch in 0..5 {
                                want[(o * r.ne[0] + l * 2 + kk) as usize] +=
                                    get(&xv, sig.ne, [l, ch, 0, 0]) * get(&kv, k.ne, [kk, o, ch, 0]);
                            }
                        }
                    }
                }
                assert_close(&values(r), &want, tol, "conv_transpose_1d");

                // 2D: kernel [KW, KH, OC, IC], input [W, H, IC, N]
                let k2 = c.new_tensor(kty, &[2, 3, 3, 4]);
                let img = c.new_tensor(Type::F32, &[4, 3, 4, 2]);
                put(k2, |i| noise(i, 14));
                put(img, |i| noise(i, 15));
                let r = ops::conv_transpose_2d_p0(&mut c, k2, img, 2);
                run(&mut c, r, conv_transpose_2d, nth, conv_transpose_2d_work_size(&r, nth), use_ref);
                let (kv, xv) = (values(k2), values(img));
                let [ow, oh, _, _] = r.ne;
                let mut want = vec![0.0; r.nelements() as usize];
                for b in 0..2 {
                    for o in 0..3 {
                        for y in 0..3 {
                            for x in 0..4 {
                                for ky in 0..3 {
                                    for kx in 0..2 {
                                        for ch in 0..4 {
                                            let idx = ((b * 3 + o) * oh + y * 2 + ky) * ow + x * 2 + kx;
                                            want[idx as usize] +=
                                                get(&xv, img.ne, [x, y, ch, b]) * get(&kv, k2.ne, [kx, ky, o, ch]);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                assert_close(&values(r), &want, tol, "conv_transpose_2d");
            }
        });
    }

    #[test]
    fn col2im_overlap_adds_frames() {
        for_each_team(|nth, use_ref| {
            for ty in [Type::F32, Type::F16, Type::BF16] {
                let mut c = ctx();
                let (k, oc, t_in, s, p) = (4i64, 3i64, 5i64, 2i64, 1i64);
                let cols = c.new_tensor(ty, &[k * oc, t_in]);
                put(cols, |i| noise(i, 16));
                let r = ops::col2im_1d(&mut c, cols, s as i32, oc as i32, p as i32);
                assert!(col2im_1d_supports(&r));
                run(&mut c, r, col2im_1d, nth, 0, use_ref);
                let cv = values(cols);
                let t_out = r.ne[0];
                let mut want = vec![0.0; (t_out * oc) as usize];
                for o in 0..oc {
                    for ti in 0..t_in {
                        for kk in 0..k {
                            let t = ti * s + kk - p;
                            if (0..t_out).contains(&t) {
                                want[(o * t_out + t) as usize] += cv[(ti * k * oc + o * k + kk) as usize];
                            }
                        }
                    }
                }
                let tol = match ty {
                    Type::F16 => 2e-3,
                    Type::BF16 => 1e-2,
                    _ => 1e-6,
                };
                assert_close(&values(r), &want, tol, "col2im_1d");
            }
        });
    }
}
