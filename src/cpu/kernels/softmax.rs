//! Softmax kernels: `soft_max` (`softmax(x * scale + slope * mask)` per row, with ALiBi slopes
//! and attention sinks) and its gradient `soft_max_back`.
//!
//! The exponentials of a row are summed in `f64`; the SIMD paths evaluate them eight (AVX2)
//! or sixteen (AVX-512) at a time with ggml's polynomial for that width ([`super::expf`]) and
//! the leftover elements with libm's `expf`, as ggml's `ggml_vec_soft_max_f32` does
//! ([`exp_row`], which flash attention uses too).

use super::norm::{RowMath, row_index, row_ptr, source, use_avx2};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{extents, row_addr, src};
use crate::cpu::kernels::simd;
use crate::quants::half::fp16_to_fp32;

/// ALiBi's per-head slopes (`max_bias > 0`), or 1 for every head.
#[derive(Clone, Copy, Debug)]
pub(super) struct Alibi {
    max_bias: f32,
    n_head_log2: u32,
    m0: f32,
    m1: f32,
}

impl Alibi {
    /// The slopes for `n_head` heads: the largest power of two not above `n_head` gets the
    /// geometric series `m0^(h + 1)`, the heads beyond it the odd powers of `m1`.
    pub(super) fn new(max_bias: f32, n_head: i64) -> Alibi {
        let n_head_log2 = 1u32 << (n_head.max(1) as f64).log2().floor() as u32;
        Alibi {
            max_bias,
            n_head_log2,
            m0: 2.0f32.powf(-max_bias / n_head_log2 as f32),
            m1: 2.0f32.powf(-(max_bias / 2.0) / n_head_log2 as f32),
        }
    }

    pub(super) fn slope(&self, head: u32) -> f32 {
        if self.max_bias <= 0.0 {
            1.0
        } else if head < self.n_head_log2 {
            self.m0.powf((head + 1) as f32)
        } else {
            self.m1.powf((2 * (head - self.n_head_log2) + 1) as f32)
        }
    }
}

/// Replaces each `y[i]` with `exp(y[i] - max)` and returns their sum, accumulated in `f64`.
pub(crate) fn exp_row(y: &mut [f32], max: f32, avx2: bool) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        if crate::cpu::features::features().has_avx512() {
            // SAFETY: AVX-512 was detected just now.
            return unsafe { avx512::exp_row(y, max) };
        }
        // SAFETY: the caller asks for AVX2 only when it was detected (`use_avx2`).
        return unsafe { avx2::exp_row(y, max) };
    }
    let _ = avx2;
    y.iter_mut()
        .map(|v| {
            *v = (*v - max).exp();
            f64::from(*v)
        })
        .sum()
}

/// The largest element of `x` (`-inf` for an empty row). A NaN may or may not win, which
/// makes no difference to a softmax: its row comes out NaN either way.
pub(super) fn max_of(x: &[f32], avx2: bool) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: the caller asks for AVX2 only when it was detected (`use_avx2`).
        return unsafe { avx2::max_of(x) };
    }
    let _ = avx2;
    x.iter().fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v })
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    use crate::cpu::kernels::expf::exp8;
    use crate::cpu::kernels::simd::avx2::{hsum, load_f32};

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn max_of(x: &[f32]) -> f32 {
        let mut acc = _mm256_set1_ps(f32::NEG_INFINITY);
        let chunks = x.chunks_exact(8);
        let tail = chunks.remainder();
        for c in chunks {
            // SAFETY: `c` holds eight floats.
            acc = _mm256_max_ps(acc, unsafe { load_f32(c.as_ptr()) });
        }
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` has room for eight floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
        lanes.iter().chain(tail).fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v })
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn exp_row(y: &mut [f32], max: f32) -> f64 {
        let m = _mm256_set1_ps(max);
        let mut sum = 0.0f64;
        let mut chunks = y.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` holds eight floats.
            let v = exp8(_mm256_sub_ps(unsafe { load_f32(c.as_ptr()) }, m));
            // SAFETY: as above.
            unsafe { _mm256_storeu_ps(c.as_mut_ptr(), v) };
            sum += f64::from(hsum(v));
        }
        for v in chunks.into_remainder() {
            *v = (*v - max).exp();
            sum += f64::from(*v);
        }
        sum
    }

    /// `y[i] = y[i] * scale + slope * mask[i]` for an F32 or F16 mask.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn scale_add_mask(y: &mut [f32], scale: f32, slope: f32, mask: super::MaskRow) {
        let (s, k) = (_mm256_set1_ps(scale), _mm256_set1_ps(slope));
        let n = y.len();
        let py = y.as_mut_ptr();
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n, inside the row and the mask row (as long as the row).
            unsafe {
                let m = match mask {
                    super::MaskRow::F32(m) => load_f32(m.as_ptr().add(i)),
                    super::MaskRow::F16(m) => crate::cpu::kernels::simd::avx2::load_f16(m.as_ptr().add(i)),
                };
                let v = _mm256_fmadd_ps(k, m, _mm256_mul_ps(load_f32(py.add(i)), s));
                _mm256_storeu_ps(py.add(i), v);
            }
            i += 8;
        }
        for (j, v) in y.iter_mut().enumerate().skip(i) {
            *v = *v * scale + slope * mask.get(j);
        }
    }
}

/// The same exponentials sixteen at a time, each row summed per 16 lanes as ggml's AVX-512
/// build does.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use crate::cpu::kernels::expf::exp16;

    /// # Safety
    /// The processor has AVX-512 (F and DQ), AVX2 and FMA.
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub(super) unsafe fn exp_row(y: &mut [f32], max: f32) -> f64 {
        let m = _mm512_set1_ps(max);
        let mut sum = 0.0f64;
        let mut chunks = y.chunks_exact_mut(16);
        for c in &mut chunks {
            // SAFETY: `c` holds sixteen floats.
            let v = exp16(_mm512_sub_ps(unsafe { _mm512_loadu_ps(c.as_ptr()) }, m));
            // SAFETY: as above.
            unsafe { _mm512_storeu_ps(c.as_mut_ptr(), v) };
            sum += f64::from(_mm512_reduce_add_ps(v));
        }
        for v in chunks.into_remainder() {
            *v = (*v - max).exp();
            sum += f64::from(*v);
        }
        sum
    }
}

/// One row of a softmax mask.
#[derive(Clone, Copy)]
pub(super) enum MaskRow<'a> {
    F32(&'a [f32]),
    F16(&'a [u16]),
}

impl MaskRow<'_> {
    fn get(&self, i: usize) -> f32 {
        match self {
            MaskRow::F32(m) => m[i],
            MaskRow::F16(m) => fp16_to_fp32(m[i]),
        }
    }
}

/// SOFT_MAX's task count: a thread per row at most.
pub fn soft_max_tasks(node: &Tensor, n_threads: usize) -> usize {
    let rows = node.source(0).map_or(1, |a| usize::try_from(a.nrows()).unwrap_or(1));
    n_threads.min(rows.max(1))
}

/// SOFT_MAX: F32 input and result, mask absent, F16 or F32, sinks absent or F32.
pub fn soft_max_supports(node: &Tensor) -> bool {
    let input = node.source(0).is_some_and(|s| s.type_ == Type::F32) && node.type_ == Type::F32;
    let mask = node.source(1).is_none_or(|m| m.type_ == Type::F32 || m.type_ == Type::F16);
    let sinks = node.source(2).is_none_or(|s| s.type_ == Type::F32);
    input && mask && sinks
}

/// SOFT_MAX_BACK: F32 gradient and output, no ALiBi (`max_bias == 0`).
pub fn soft_max_back_supports(node: &Tensor) -> bool {
    let f32_src = |i| node.source(i).is_some_and(|s: &Tensor| s.type_ == Type::F32);
    f32_src(0) && f32_src(1) && node.type_ == Type::F32 && node.op_param_f32(1) == 0.0
}

/// The scratch the reference plans for SOFT_MAX: one row of floats per task. These kernels
/// work in the result rows and use none of it, but the plan's size is observable.
pub fn soft_max_work_size(node: &Tensor, n_tasks: usize) -> usize {
    std::mem::size_of::<f32>() * node.ne[0].max(0) as usize * n_tasks
}

/// SOFT_MAX: each row of `src[0]` becomes `softmax(x * scale + slope * mask)`, where the mask
/// `src[1]` (F16 or F32) is broadcast over rows of dimensions 2 and 3, the slope is ALiBi's
/// for the head (dimension 2) when `max_bias > 0`, and the optional sinks `src[2]` add one
/// logit per head to the normalisation. Threads take rows `ith, ith + nth, ...`.
pub fn soft_max(params: &ComputeParams, dst: TensorPtr) {
    let src = source(dst, 0);
    crate::ggml_assert!(src.type_ == Type::F32 && dst.type_ == Type::F32, "soft_max: only F32 is supported");
    crate::ggml_assert!(src.same_shape(&dst), "soft_max: source and result differ in shape");
    crate::ggml_assert!(src.nb[0] == 4 && dst.nb[0] == 4, "soft_max: rows must be contiguous");
    let mask = dst.src(1);
    let sinks = dst.src(2);
    let [ne0, ne1, ne2, ne3] = src.ne;
    if let Some(m) = mask {
        crate::ggml_assert!(m.type_ == Type::F32 || m.type_ == Type::F16, "soft_max: mask must be F16 or F32");
        crate::ggml_assert!(
            m.nb[0] == m.type_.type_size() && m.ne[0] >= ne0 && m.ne[1] >= ne1 && m.ne[2] > 0 && m.ne[3] > 0,
            "soft_max: mask {:?} does not cover rows of {:?}",
            m.ne,
            src.ne
        );
    }
    if let Some(s) = sinks {
        crate::ggml_assert!(s.type_ == Type::F32 && s.nelements() >= ne2, "soft_max: one F32 sink per head needed");
    }
    let scale = dst.op_param_f32(0);
    let alibi = Alibi::new(dst.op_param_f32(1), ne2);
    let avx2 = use_avx2(params);
    let math = RowMath::new(params);
    let n = ne0 as usize;

    let mut r = params.ith as i64;
    while r < ne1 * ne2 * ne3 {
        let (i1, i2, i3) = row_index(&src.ne, r);
        r += params.nth as i64;
        // SAFETY: the indices are inside the shared shape and rows hold `n` contiguous floats
        // (asserted); the copy tolerates an in-place result, after which only `y` is used.
        let y = unsafe {
            let y = row_ptr(&dst, i1, i2, i3).cast::<f32>();
            std::ptr::copy(row_ptr(&src, i1, i2, i3).cast::<f32>(), y, n);
            std::slice::from_raw_parts_mut(y, n)
        };
        let slope = alibi.slope(i2 as u32);
        match mask {
            Some(m) => {
                // SAFETY: the mask's rows cover index (i1, i2 % ne2, i3 % ne3) and hold at
                // least `n` contiguous elements (asserted above).
                let row = unsafe {
                    let p = row_ptr(&m, i1, i2 % m.ne[2], i3 % m.ne[3]);
                    if m.type_ == Type::F16 {
                        MaskRow::F16(std::slice::from_raw_parts(p.cast::<u16>(), n))
                    } else {
                        MaskRow::F32(std::slice::from_raw_parts(p.cast::<f32>(), n))
                    }
                };
                scale_add_mask(y, scale, slope, row, avx2);
            }
            None => math.scale(y, scale),
        }
        let mut max = max_of(y, avx2);
        // SAFETY: the sinks hold one float per head (asserted above).
        let sink = sinks.map(|s| unsafe { s.data.cast::<f32>().add(i2 as usize).read() });
        if let Some(s) = sink {
            max = if max > s { max } else { s };
        }
        let mut sum = exp_row(y, max, avx2);
        if let Some(s) = sink {
            sum += f64::from((s - max).exp());
        }
        math.scale(y, (1.0 / sum) as f32);
    }
}

fn scale_add_mask(y: &mut [f32], scale: f32, slope: f32, mask: MaskRow, avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: AVX2 was detected (`use_avx2`).
        return unsafe { avx2::scale_add_mask(y, scale, slope, mask) };
    }
    let _ = avx2;
    for (i, v) in y.iter_mut().enumerate() {
        *v = *v * scale + slope * mask.get(i);
    }
}

/// SOFT_MAX_BACK: `src[0]` is the gradient `dy` of a softmax output `y` (`src[1]`); the result
/// is `scale * y * (dy - dot(y, dy))` per row. Threads take contiguous blocks of rows.
pub fn soft_max_back(params: &ComputeParams, dst: TensorPtr) {
    let dy = source(dst, 0);
    let y = source(dst, 1);
    for t in [&*dy, &*y, &*dst] {
        crate::ggml_assert!(t.type_ == Type::F32, "soft_max_back: only F32 is supported");
        crate::ggml_assert!(t.is_contiguous(), "soft_max_back: tensors must be contiguous");
        crate::ggml_assert!(t.same_shape(&dst), "soft_max_back: shapes differ");
    }
    let scale = dst.op_param_f32(0);
    crate::ggml_assert!(dst.op_param_f32(1) == 0.0, "soft_max_back: ALiBi is not supported");
    let n = dst.ne[0] as usize;
    let rows = dst.nrows().max(0) as usize;
    let per_thread = rows.div_ceil(params.nth);
    let first = (per_thread * params.ith).min(rows);
    let last = (first + per_thread).min(rows);
    for r in first..last {
        // SAFETY: the tensors are contiguous with `rows` rows of `n` floats; the dot product's
        // slices end before the writes, which read each input element before overwriting the
        // same position (so an in-place gradient is fine).
        unsafe {
            let pdy = dy.data.cast::<f32>().add(r * n);
            let py = y.data.cast::<f32>().add(r * n);
            let pdx = dst.data.cast::<f32>().add(r * n);
            let dot = {
                let (a, b) = (std::slice::from_raw_parts(py, n), std::slice::from_raw_parts(pdy, n));
                if params.use_ref { simd::scalar::dot_f32(a, b) } else { simd::dot_f32(a, b) }
            };
            for i in 0..n {
                *pdx.add(i) = (*pdy.add(i) - dot) * *py.add(i) * scale;
            }
        }
    }
}

/// Whether [`diag_mask_inf`] / [`diag_mask_zero`] cover `node`.
pub fn diag_mask_supports(node: &Tensor) -> bool {
    let Some(a) = node.source(0) else { return false };
    a.type_ == Type::F32
        && node.type_ == Type::F32
        && a.nb[0] == 4
        && node.nb[0] == 4
        && node.op_params[0] >= 0
        && (a.data == node.data || (a.is_contiguous() && node.is_contiguous()))
}

/// `GGML_OP_DIAG_MASK_INF`: elements above the diagonal shifted right by `n_past`
/// (`op_params[0]`) become -inf.
pub fn diag_mask_inf(params: &ComputeParams, dst: TensorPtr) {
    diag_mask(params, dst, f32::NEG_INFINITY);
}

/// `GGML_OP_DIAG_MASK_ZERO`: as [`diag_mask_inf`], with zeros.
pub fn diag_mask_zero(params: &ComputeParams, dst: TensorPtr) {
    diag_mask(params, dst, 0.0);
}

fn diag_mask(params: &ComputeParams, dst: TensorPtr, value: f32) {
    let a = src(dst, 0);
    let n_past = dst.op_params[0];
    crate::ggml_assert!(n_past >= 0, "{}: n_past {} < 0", dst.op.name(), n_past);
    crate::ggml_assert!(a.type_ == Type::F32 && dst.type_ == Type::F32, "{}: only f32", dst.op.name());
    crate::ggml_assert!(a.nb[0] == 4 && dst.nb[0] == 4, "{}: rows must be packed", dst.op.name());
    if a.data != dst.data {
        if params.ith == 0 {
            crate::ggml_assert!(
                a.is_contiguous() && dst.is_contiguous(),
                "{}: tensors must be contiguous",
                dst.op.name()
            );
            // SAFETY: two contiguous tensors of the same size (the op keeps the shape).
            unsafe { std::ptr::copy(a.data.cast::<u8>(), dst.data.cast::<u8>(), dst.nbytes()) };
        }
        params.barrier();
    }
    let n_past = n_past as usize;
    let ne = extents(&dst);
    for i3 in 0..ne[3] {
        for i2 in 0..ne[2] {
            for j in (params.ith..ne[1]).step_by(params.nth.max(1)) {
                let row = row_addr(&dst, [j, i2, i3]).cast::<f32>();
                for i in (n_past + j + 1).max(n_past)..ne[0] {
                    // SAFETY: element i < ne0 of an in-bounds row of `dst`; rows j are split
                    // between threads.
                    unsafe { *row.add(i) = value };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::softmax as ops;
    use crate::cpu::kernels::testing::*;

    /// softmax(x * scale + slope(head) * mask) with optional sinks, in f64.
    fn reference(
        x: &[f64],
        ne: [usize; 4],
        mask: Option<(&[f64], [usize; 4])>,
        scale: f64,
        max_bias: f32,
        sinks: Option<&[f64]>,
    ) -> Vec<f64> {
        let alibi = Alibi::new(max_bias, ne[2] as i64);
        let mut out = Vec::new();
        for (r, row) in x.chunks(ne[0]).enumerate() {
            let (i1, i2, i3) = (r % ne[1], (r / ne[1]) % ne[2], r / ne[1] / ne[2]);
            let slope = f64::from(alibi.slope(i2 as u32));
            let logits: Vec<f64> = row
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let m = mask.map_or(0.0, |(m, mne)| {
                        m[i + mne[0] * (i1 + mne[1] * ((i2 % mne[2]) + mne[2] * (i3 % mne[3])))]
                    });
                    v * scale + slope * m
                })
                .collect();
            let sink = sinks.map(|s| s[i2]);
            let max = logits.iter().copied().chain(sink).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = logits.iter().map(|l| (l - max).exp()).sum::<f64>() + sink.map_or(0.0, |s| (s - max).exp());
            out.extend(logits.iter().map(|l| (l - max).exp() / sum));
        }
        out
    }

    #[test]
    fn soft_max_with_mask_alibi_and_sinks() {
        let ne = [19usize, 3, 6, 2];
        for use_ref in [false, true] {
            for mask_type in [None, Some(Type::F16), Some(Type::F32)] {
                for (max_bias, with_sinks) in [(0.0, false), (8.0, false), (0.0, true), (2.0, true)] {
                    if max_bias > 0.0 && mask_type.is_none() {
                        continue;
                    }
                    let mut c = ctx();
                    let mut rng = Rng::new(5);
                    let a = c.new_tensor(Type::F32, &ne.map(|n| n as i64));
                    let x = random(a, &mut rng, -4.0, 4.0);
                    let mne = [19usize, 5, 3, 1];
                    let mask = mask_type.map(|ty| {
                        let m = c.new_tensor(ty, &mne.map(|n| n as i64));
                        let mut vals: Vec<f32> = (0..m.nelements()).map(|_| rng.uniform(-1.0, 1.0)).collect();
                        vals[3] = f32::NEG_INFINITY;
                        vals[40] = f32::NEG_INFINITY;
                        put(m, |i| f64::from(vals[i]));
                        (m, values(m))
                    });
                    let t = ops::soft_max_ext(&mut c, a, mask.as_ref().map(|m| m.0), 0.7, max_bias);
                    let sink_vals = with_sinks.then(|| {
                        let s = c.new_tensor(Type::F32, &[6]);
                        let v = random(s, &mut rng, -2.0, 2.0);
                        ops::soft_max_add_sinks(t, Some(s));
                        v
                    });
                    run(&mut c, t, soft_max, 3, soft_max_work_size(&t, 3), use_ref);
                    let want = reference(
                        &x,
                        ne,
                        mask.as_ref().map(|m| (m.1.as_slice(), mne)),
                        0.7,
                        max_bias,
                        sink_vals.as_deref(),
                    );
                    let e = nmse(&values(t), &want);
                    assert!(e < 1e-12, "mask {mask_type:?} bias {max_bias} sinks {with_sinks}: {e}");
                }
            }
        }
    }

    #[test]
    fn soft_max_in_place() {
        let mut c = ctx();
        let mut rng = Rng::new(6);
        let a = c.new_tensor(Type::F32, &[40, 7]);
        let x = random(a, &mut rng, -10.0, 10.0);
        let t = ops::soft_max_inplace(&mut c, a);
        run(&mut c, t, soft_max, 2, soft_max_work_size(&t, 2), false);
        assert!(nmse(&values(a), &reference(&x, [40, 7, 1, 1], None, 1.0, 0.0, None)) < 1e-12);
    }

    #[test]
    fn soft_max_back_is_the_jacobian_product() {
        for use_ref in [false, true] {
            let mut c = ctx();
            let mut rng = Rng::new(7);
            let dy = c.new_tensor(Type::F32, &[13, 5]);
            let y = c.new_tensor(Type::F32, &[13, 5]);
            let dyv = random(dy, &mut rng, -1.0, 1.0);
            let yv = random(y, &mut rng, 0.0, 1.0);
            let t = ops::soft_max_ext_back(&mut c, dy, y, 0.5, 0.0);
            run(&mut c, t, soft_max_back, 2, 0, use_ref);
            let mut want = Vec::new();
            for (g, s) in dyv.chunks(13).zip(yv.chunks(13)) {
                let dot: f64 = g.iter().zip(s).map(|(a, b)| a * b).sum();
                want.extend(g.iter().zip(s).map(|(gi, si)| 0.5 * si * (gi - dot)));
            }
            assert!(nmse(&values(t), &want) < 1e-12);
        }
    }

    #[test]
    fn causal_masks() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            for inplace in [false, true] {
                let x = c.new_tensor(Type::F32, &[5, 3, 2]);
                put(x, |i| i as f64);
                let r = ops::diag_mask_inf_impl(&mut c, x, 1, inplace);
                assert!(diag_mask_supports(&r));
                run(&mut c, r, diag_mask_inf, nth, 0, use_ref);
                let got = values(r);
                for (k, &v) in got.iter().enumerate() {
                    let (i, j) = (k % 5, (k / 5) % 3);
                    if i > 1 + j {
                        assert_eq!(v, f64::NEG_INFINITY);
                    } else {
                        assert_eq!(v, k as f64);
                    }
                }
                let y = c.new_tensor(Type::F32, &[5, 3]);
                put(y, |i| i as f64 + 1.0);
                let r = ops::diag_mask_zero_impl(&mut c, y, 0, inplace);
                run(&mut c, r, diag_mask_zero, nth, 0, use_ref);
                let got = values(r);
                for (k, &v) in got.iter().enumerate() {
                    let (i, j) = (k % 5, k / 5);
                    assert_eq!(v, if i > j { 0.0 } else { k as f64 + 1.0 });
                }
            }
        });
    }
}
