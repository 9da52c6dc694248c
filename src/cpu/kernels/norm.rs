//! Normalisation kernels: `norm` (zero mean, unit variance), `rms_norm` and its gradient,
//! `l2_norm` along rows, and `group_norm` over groups of channels (dimension 2).
//!
//! Sums are accumulated in `f64` from `f32` terms, as ggml does, so that long rows keep their
//! precision. Every row op first copies its source row into the destination row (a plain
//! overlapping-safe copy, which makes in-place nodes free) and then works on the destination
//! alone; rows whose elements are strided go through a small buffer instead.
//!
//! This file also holds the small helpers the other kernels of this family share: source
//! lookup, row addressing and the row reductions with their AVX2 forms.

use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::features::features;
use crate::cpu::kernels::simd;

/// Source `i` of `dst`, which the op requires.
pub(super) fn source(dst: TensorPtr, i: usize) -> TensorPtr {
    dst.src(i).unwrap_or_else(|| crate::ggml_abort!("{}: missing source {}", dst.op.name(), i))
}

/// Whether this run takes the AVX2 paths.
pub(super) fn use_avx2(params: &ComputeParams) -> bool {
    !params.use_ref && features().has_avx2_fma()
}

/// Byte offset of row `(i1, i2, i3)` of `t`.
pub(super) fn row_offset(t: &Tensor, i1: i64, i2: i64, i3: i64) -> usize {
    i1 as usize * t.nb[1] + i2 as usize * t.nb[2] + i3 as usize * t.nb[3]
}

/// The indices `(i1, i2, i3)` of flat row `r` of a tensor shaped `ne`.
pub(super) fn row_index(ne: &[i64; 4], r: i64) -> (i64, i64, i64) {
    (r % ne[1], (r / ne[1]) % ne[2], r / (ne[1] * ne[2]))
}

/// Pointer to the first byte of row `(i1, i2, i3)` of `t`.
///
/// # Safety
/// The indices are within `t`'s shape and `t`'s data is allocated.
pub(super) unsafe fn row_ptr(t: &Tensor, i1: i64, i2: i64, i3: i64) -> *mut u8 {
    // SAFETY: the caller keeps the indices inside the tensor, so the offset is inside its data.
    unsafe { t.data.cast::<u8>().add(row_offset(t, i1, i2, i3)) }
}

fn eps_param(dst: &Tensor, index: usize) -> f32 {
    let eps = dst.op_param_f32(index);
    crate::ggml_assert!((0.0..).contains(&eps), "{}: eps must be non-negative, got {}", dst.op.name(), eps);
    eps
}

fn assert_f32_same_shape(dst: &Tensor, src: &Tensor) {
    crate::ggml_assert!(
        src.type_ == Type::F32 && dst.type_ == Type::F32,
        "{}: only F32 is supported, not {} -> {}",
        dst.op.name(),
        src.type_.name(),
        dst.type_.name()
    );
    crate::ggml_assert!(src.same_shape(dst), "{}: source and result differ in shape", dst.op.name());
}

/// Runs `f` on each of thread `ith`'s rows of `dst` (rows `ith, ith + nth, ...`), holding a
/// copy of the matching row of `src` that `f` transforms in place.
fn for_each_row(params: &ComputeParams, src: &Tensor, dst: &Tensor, mut f: impl FnMut(&mut [f32])) {
    let n = src.ne[0] as usize;
    let packed = src.nb[0] == 4 && dst.nb[0] == 4;
    let mut buf = if packed { Vec::new() } else { vec![0.0f32; n] };
    let mut r = params.ith as i64;
    while r < dst.nrows() {
        let (i1, i2, i3) = row_index(&dst.ne, r);
        // SAFETY: the indices come from dst's shape, which src shares (asserted by callers);
        // both tensors are allocated F32 tensors, so each row holds `n` floats at stride nb[0].
        unsafe {
            let x = row_ptr(src, i1, i2, i3);
            let y = row_ptr(dst, i1, i2, i3);
            if packed {
                std::ptr::copy(x.cast::<f32>(), y.cast::<f32>(), n);
                f(std::slice::from_raw_parts_mut(y.cast::<f32>(), n));
            } else {
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = x.add(i * src.nb[0]).cast::<f32>().read_unaligned();
                }
                f(&mut buf);
                for (i, b) in buf.iter().enumerate() {
                    y.add(i * dst.nb[0]).cast::<f32>().write_unaligned(*b);
                }
            }
        }
        r += params.nth as i64;
    }
}

/// The row reductions and scaling, scalar or AVX2.
#[derive(Clone, Copy)]
pub(crate) struct RowMath {
    avx2: bool,
}

impl RowMath {
    pub(super) fn new(params: &ComputeParams) -> Self {
        RowMath { avx2: use_avx2(params) }
    }

    /// The fastest this processor has, for callers without compute params.
    pub(crate) fn native() -> Self {
        RowMath { avx2: features().has_avx2_fma() }
    }

    /// The sum of `x`, accumulated in f64.
    pub(super) fn sum(self, x: &[f32]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2, FMA and F16C were detected at run time.
            return unsafe { avx2::sum(x) };
        }
        x.iter().map(|&v| f64::from(v)).sum()
    }

    /// The sum of the (f32) squares of `x`, accumulated in f64.
    pub(super) fn sum_squares(self, x: &[f32]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: as in `sum`.
            return unsafe { avx2::sum_squares(x) };
        }
        x.iter().map(|&v| f64::from(v * v)).sum()
    }

    /// Subtracts `mean` from `y` and returns the sum of the (f32) squares of the results.
    pub(crate) fn center(self, y: &mut [f32], mean: f32) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: as in `sum`.
            return unsafe { avx2::center(y, mean) };
        }
        y.iter_mut()
            .map(|v| {
                *v -= mean;
                f64::from(*v * *v)
            })
            .sum()
    }

    /// Multiplies `y` by `s`.
    pub(super) fn scale(self, y: &mut [f32], s: f32) {
        if self.avx2 {
            simd::scale_f32(y, s);
        } else {
            simd::scalar::scale_f32(y, s);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    fn hsum_pd(v: __m256d) -> f64 {
        let pair = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
        _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)))
    }

    /// Adds the eight lanes of `v`, widened to f64, into the two accumulators.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn widen_add(acc: &mut [__m256d; 2], v: __m256) {
        acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn sum(x: &[f32]) -> f64 {
        let mut acc = [_mm256_setzero_pd(); 2];
        let chunks = x.chunks_exact(8);
        let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(v)).sum();
        for c in chunks {
            // SAFETY: `c` holds eight floats.
            let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            widen_add(&mut acc, v);
        }
        hsum_pd(_mm256_add_pd(acc[0], acc[1])) + tail
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn sum_squares(x: &[f32]) -> f64 {
        let mut acc = [_mm256_setzero_pd(); 2];
        let chunks = x.chunks_exact(8);
        let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(v * v)).sum();
        for c in chunks {
            // SAFETY: `c` holds eight floats.
            let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            widen_add(&mut acc, _mm256_mul_ps(v, v));
        }
        hsum_pd(_mm256_add_pd(acc[0], acc[1])) + tail
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn center(y: &mut [f32], mean: f32) -> f64 {
        let mut acc = [_mm256_setzero_pd(); 2];
        let m = _mm256_set1_ps(mean);
        let mut chunks = y.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` holds eight floats.
            let v = _mm256_sub_ps(unsafe { _mm256_loadu_ps(c.as_ptr()) }, m);
            // SAFETY: as above.
            unsafe { _mm256_storeu_ps(c.as_mut_ptr(), v) };
            widen_add(&mut acc, _mm256_mul_ps(v, v));
        }
        let tail: f64 = chunks
            .into_remainder()
            .iter_mut()
            .map(|v| {
                *v -= mean;
                f64::from(*v * *v)
            })
            .sum();
        hsum_pd(_mm256_add_pd(acc[0], acc[1])) + tail
    }
}

/// Whether `node` (NORM, RMS_NORM, L2_NORM, GROUP_NORM) is one these kernels compute: F32 in
/// and out.
pub fn norm_supports(node: &Tensor) -> bool {
    let src = node.source(0);
    src.is_some_and(|s| s.type_ == Type::F32) && node.type_ == Type::F32
}

/// As [`norm_supports`]: F32 everywhere.
pub fn rms_norm_supports(node: &Tensor) -> bool {
    norm_supports(node)
}

/// As [`norm_supports`]: F32 everywhere.
pub fn l2_norm_supports(node: &Tensor) -> bool {
    norm_supports(node)
}

/// As [`norm_supports`]: F32 everywhere.
pub fn group_norm_supports(node: &Tensor) -> bool {
    norm_supports(node)
}

/// RMS_NORM_BACK: the gradient and the forward input both F32, F32 out.
pub fn rms_norm_back_supports(node: &Tensor) -> bool {
    let src1 = node.source(1);
    norm_supports(node) && src1.is_some_and(|s| s.type_ == Type::F32)
}

/// NORM: each row shifted to zero mean and divided by `sqrt(variance + eps)`.
pub fn norm(params: &ComputeParams, dst: TensorPtr) {
    let src = source(dst, 0);
    assert_f32_same_shape(&dst, &src);
    let eps = eps_param(&dst, 0);
    let math = RowMath::new(params);
    let n = src.ne[0];
    for_each_row(params, &src, &dst, |y| {
        let mean = math.sum(y) as f32 / n as f32;
        let variance = (math.center(y, mean) / n as f64) as f32;
        math.scale(y, 1.0 / (variance + eps).sqrt());
    });
}

/// RMS_NORM: each row divided by `sqrt(mean(x^2) + eps)`.
pub fn rms_norm(params: &ComputeParams, dst: TensorPtr) {
    let src = source(dst, 0);
    assert_f32_same_shape(&dst, &src);
    let eps = eps_param(&dst, 0);
    let math = RowMath::new(params);
    let n = src.ne[0];
    for_each_row(params, &src, &dst, |y| {
        let mean = (math.sum_squares(y) / n as f64) as f32;
        math.scale(y, 1.0 / (mean + eps).sqrt());
    });
}

/// RMS_NORM and the MUL that follows it in one pass (ggml-cpu's
/// `ggml_compute_forward_rms_norm_mul_fused`): each row of `mul` becomes `x · scale · w`, where
/// `x` is the norm's source row, `scale` its RMS_NORM factor and `w` the MUL's other operand,
/// broadcast over rows. The norm's own result is not written.
pub fn rms_norm_mul(params: &ComputeParams, norm: TensorPtr, mul: TensorPtr) {
    let src = source(norm, 0);
    let w = match (mul.src[0] == norm.as_ptr(), mul.src[1] == norm.as_ptr()) {
        (true, _) => source(mul, 1),
        (_, true) => source(mul, 0),
        _ => crate::ggml_abort!("rms_norm_mul: the MUL node does not take the RMS_NORM node"),
    };
    assert_f32_same_shape(&mul, &src);
    crate::ggml_assert!(
        w.type_ == Type::F32 && w.ne[0] == src.ne[0] && w.nb[0] == 4 && w.can_repeat_to(&mul),
        "rms_norm_mul: the weight must be F32 rows of {} contiguous values that repeat onto the result",
        src.ne[0]
    );
    let eps = eps_param(&norm, 0);
    let math = RowMath::new(params);
    let n = src.ne[0];
    let mut r = params.ith as i64;
    for_each_row(params, &src, &mul, |y| {
        let (i1, i2, i3) = row_index(&mul.ne, r);
        let mean = (math.sum_squares(y) / n as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        // SAFETY: `w` is an F32 tensor of rows of `n` contiguous floats (asserted) that repeats
        // onto the result, so the broadcast row index is within it.
        let w = unsafe {
            let row = row_ptr(&w, i1 % w.ne[1], i2 % w.ne[2], i3 % w.ne[3]).cast::<f32>();
            std::slice::from_raw_parts(row, n as usize)
        };
        y.iter_mut().zip(w).for_each(|(v, &w)| *v = *v * scale * w);
        r += params.nth as i64;
    });
}

/// L2_NORM: each row divided by `max(|x|, eps)`.
pub fn l2_norm(params: &ComputeParams, dst: TensorPtr) {
    let src = source(dst, 0);
    assert_f32_same_shape(&dst, &src);
    let eps = eps_param(&dst, 0);
    let math = RowMath::new(params);
    for_each_row(params, &src, &dst, |y| {
        let norm = (math.sum_squares(y) as f32).sqrt();
        math.scale(y, 1.0 / norm.max(eps));
    });
}

/// RMS_NORM_BACK: `src[0]` is the gradient of the output, `src[1]` the forward input; the
/// result is `(dz - x * sum(x dz) / (sum(x^2) + n eps)) / sqrt(mean(x^2) + eps)`.
pub fn rms_norm_back(params: &ComputeParams, dst: TensorPtr) {
    let grad = source(dst, 0);
    let x = source(dst, 1);
    assert_f32_same_shape(&dst, &grad);
    crate::ggml_assert!(x.type_ == Type::F32 && x.same_shape(&grad), "rms_norm_back: input must match the gradient");
    crate::ggml_assert!(grad.nb[0] == 4 && x.nb[0] == 4 && dst.nb[0] == 4, "rms_norm_back: rows must be contiguous");
    let eps = dst.op_param_f32(0);
    let n = grad.ne[0] as usize;
    let mut r = params.ith as i64;
    while r < dst.nrows() {
        let (i1, i2, i3) = row_index(&dst.ne, r);
        // SAFETY: the three tensors share a shape (asserted) and hold F32 rows of `n`
        // contiguous elements; the reading slices end before the writes start, and the writes
        // read each input element before overwriting the same position, so aliasing rows
        // (an in-place gradient) give the same result.
        unsafe {
            let dz = row_ptr(&grad, i1, i2, i3).cast::<f32>();
            let xs = row_ptr(&x, i1, i2, i3).cast::<f32>();
            let dx = row_ptr(&dst, i1, i2, i3).cast::<f32>();
            let (sum_xx, sum_xdz) = {
                let dz = std::slice::from_raw_parts(dz, n);
                let xs = std::slice::from_raw_parts(xs, n);
                xs.iter()
                    .zip(dz)
                    .fold((0.0f64, 0.0f64), |(xx, xdz), (&a, &g)| (xx + f64::from(a * a), xdz + f64::from(a * g)))
            };
            let mean_eps = sum_xx as f32 / n as f32 + eps;
            let sum_eps = sum_xx as f32 + eps * n as f32;
            let rrms = 1.0 / mean_eps.sqrt();
            let scale_x = (-sum_xdz) as f32 / sum_eps;
            for i in 0..n {
                *dx.add(i) = (*dz.add(i) + *xs.add(i) * scale_x) * rrms;
            }
        }
        r += params.nth as i64;
    }
}

/// GROUP_NORM: the channels (dimension 2) are split into `op_params[0]` groups of
/// `ceil(channels / groups)`; each group of each sample (dimension 3) is normalised to zero
/// mean and unit variance over all its elements. Threads take whole groups.
pub fn group_norm(params: &ComputeParams, dst: TensorPtr) {
    let src = source(dst, 0);
    assert_f32_same_shape(&dst, &src);
    crate::ggml_assert!(src.nb[0] == 4 && dst.nb[0] == 4, "group_norm: rows must be contiguous");
    let n_groups = i64::from(dst.op_param_i32(0));
    let eps = dst.op_param_f32(1);
    crate::ggml_assert!(n_groups > 0, "group_norm: {} groups", n_groups);
    let math = RowMath::new(params);
    let [ne0, ne1, n_channels, ne3] = src.ne;
    let per_group = (n_channels + n_groups - 1) / n_groups;
    let n = ne0 as usize;

    // One row of the result as floats, borrowed briefly by each use below.
    let dst_row = |i1: i64, i2: i64, i3: i64| {
        // SAFETY: the loops below keep the indices inside the shape, rows are contiguous F32
        // (asserted), and no other reference to the row is alive while the slice is.
        unsafe { std::slice::from_raw_parts_mut(row_ptr(&dst, i1, i2, i3).cast::<f32>(), n) }
    };

    let mut g = params.ith as i64;
    while g < n_groups {
        let start = g * per_group;
        let end = (start + per_group).min(n_channels);
        g += params.nth as i64;
        if start >= end {
            continue;
        }
        let count = (ne0 * ne1 * (end - start)) as f64;
        for i3 in 0..ne3 {
            let mut sum = 0.0f64;
            for i2 in start..end {
                for i1 in 0..ne1 {
                    // SAFETY: the indices are inside the shared shape and rows hold `n` floats;
                    // the copy tolerates an in-place result.
                    unsafe {
                        std::ptr::copy(row_ptr(&src, i1, i2, i3).cast::<f32>(), row_ptr(&dst, i1, i2, i3).cast(), n)
                    };
                    sum += math.sum(dst_row(i1, i2, i3));
                }
            }
            let mean = (sum / count) as f32;
            let mut sum2 = 0.0f64;
            for i2 in start..end {
                for i1 in 0..ne1 {
                    sum2 += math.center(dst_row(i1, i2, i3), mean);
                }
            }
            let variance = (sum2 / count) as f32;
            let scale = 1.0 / (variance + eps).sqrt();
            for i2 in start..end {
                for i1 in 0..ne1 {
                    math.scale(dst_row(i1, i2, i3), scale);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::norm as ops;
    use crate::cpu::kernels::testing::*;

    fn rows(x: &[f64], n: usize) -> impl Iterator<Item = &[f64]> {
        x.chunks(n)
    }

    #[test]
    fn norm_rms_norm_and_l2_norm_match_f64() {
        for use_ref in [false, true] {
            for n_threads in [1, 3] {
                let mut c = ctx();
                let mut rng = Rng::new(1);
                let a = c.new_tensor(Type::F32, &[37, 5, 2]);
                let x = random(a, &mut rng, -2.0, 3.0);

                let t = ops::norm(&mut c, a, 1e-5);
                run(&mut c, t, norm, n_threads, 0, use_ref);
                let want: Vec<f64> = rows(&x, 37)
                    .flat_map(|r| {
                        let mean = r.iter().sum::<f64>() / 37.0;
                        let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 37.0;
                        r.iter().map(move |v| (v - mean) / (var + 1e-5).sqrt()).collect::<Vec<_>>()
                    })
                    .collect();
                assert!(nmse(&values(t), &want) < 1e-12);

                let t = ops::rms_norm(&mut c, a, 1e-6);
                run(&mut c, t, rms_norm, n_threads, 0, use_ref);
                let want: Vec<f64> = rows(&x, 37)
                    .flat_map(|r| {
                        let ms = r.iter().map(|v| v * v).sum::<f64>() / 37.0;
                        r.iter().map(move |v| v / (ms + 1e-6).sqrt()).collect::<Vec<_>>()
                    })
                    .collect();
                assert!(nmse(&values(t), &want) < 1e-12);

                let t = ops::l2_norm(&mut c, a, 1e-12);
                run(&mut c, t, l2_norm, n_threads, 0, use_ref);
                let want: Vec<f64> = rows(&x, 37)
                    .flat_map(|r| {
                        let len = r.iter().map(|v| v * v).sum::<f64>().sqrt();
                        r.iter().map(move |v| v / len).collect::<Vec<_>>()
                    })
                    .collect();
                assert!(nmse(&values(t), &want) < 1e-12);

                // in place, on the same data
                let t = ops::rms_norm_inplace(&mut c, a, 1e-6);
                run(&mut c, t, rms_norm, n_threads, 0, use_ref);
                let want: Vec<f64> = rows(&x, 37)
                    .flat_map(|r| {
                        let ms = r.iter().map(|v| v * v).sum::<f64>() / 37.0;
                        r.iter().map(move |v| v / (ms + 1e-6).sqrt()).collect::<Vec<_>>()
                    })
                    .collect();
                assert!(nmse(&values(a), &want) < 1e-12);
            }
        }
    }

    #[test]
    fn strided_rows_are_normalised() {
        let mut c = ctx();
        let mut rng = Rng::new(2);
        let a = c.new_tensor(Type::F32, &[6, 10]);
        let x = random(a, &mut rng, -1.0, 1.0);
        // the transpose: rows of 10 elements 24 bytes apart
        let at = c.new_tensor_impl(Type::F32, &[10, 6], Some(a), 0);
        at.get_mut().nb = [24, 4, 240, 240];
        let t = ops::norm(&mut c, at, 0.0);
        run(&mut c, t, norm, 2, 0, false);
        let got = values(t);
        for col in 0..6 {
            let r: Vec<f64> = (0..10).map(|i| x[i * 6 + col]).collect();
            let mean = r.iter().sum::<f64>() / 10.0;
            let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 10.0;
            let want: Vec<f64> = r.iter().map(|v| (v - mean) / var.sqrt()).collect();
            assert!(nmse(&got[col * 10..col * 10 + 10], &want) < 1e-12);
        }
    }

    #[test]
    fn rms_norm_back_is_the_gradient() {
        for use_ref in [false, true] {
            let mut c = ctx();
            let mut rng = Rng::new(3);
            let x = c.new_tensor(Type::F32, &[19, 4]);
            let dz = c.new_tensor(Type::F32, &[19, 4]);
            let xv = random(x, &mut rng, -1.0, 1.0);
            let dzv = random(dz, &mut rng, -1.0, 1.0);
            let eps = 1e-3;
            let t = ops::rms_norm_back(&mut c, dz, x, eps as f32);
            run(&mut c, t, rms_norm_back, 2, 0, use_ref);
            let mut want = Vec::new();
            for (xr, gr) in xv.chunks(19).zip(dzv.chunks(19)) {
                // d/dx_i of sum_j g_j x_j / r, with r = sqrt(mean(x^2) + eps)
                let r = (xr.iter().map(|v| v * v).sum::<f64>() / 19.0 + eps).sqrt();
                let gx: f64 = xr.iter().zip(gr).map(|(a, b)| a * b).sum();
                want.extend(xr.iter().zip(gr).map(|(xi, gi)| gi / r - xi * gx / (19.0 * r * r * r)));
            }
            assert!(nmse(&values(t), &want) < 1e-10);
        }
    }

    #[test]
    fn group_norm_normalises_channel_groups() {
        for use_ref in [false, true] {
            let mut c = ctx();
            let mut rng = Rng::new(4);
            // 7 channels in 3 groups of 3, 3 and 1
            let a = c.new_tensor(Type::F32, &[5, 3, 7, 2]);
            let x = random(a, &mut rng, -1.0, 2.0);
            let t = ops::group_norm(&mut c, a, 3, 1e-6);
            run(&mut c, t, group_norm, 2, 0, use_ref);
            let got = values(t);
            let plane = 15;
            for s in 0..2 {
                for (start, end) in [(0, 3), (3, 6), (6, 7)] {
                    let lo = s * 7 * plane + start * plane;
                    let hi = s * 7 * plane + end * plane;
                    let g = &x[lo..hi];
                    let mean = g.iter().sum::<f64>() / g.len() as f64;
                    let var = g.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / g.len() as f64;
                    let want: Vec<f64> = g.iter().map(|v| (v - mean) / (var + 1e-6).sqrt()).collect();
                    assert!(nmse(&got[lo..hi], &want) < 1e-12);
                }
            }
        }
    }
}
