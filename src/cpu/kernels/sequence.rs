//! Kernels of the sequence ops: `arange` and `timestep_embedding`.

use super::conv::{at, load, store};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::src;

fn all_f32(node: &Tensor, n_src: usize) -> bool {
    node.type_ == Type::F32 && (0..n_src).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

/// ARANGE: F32 out.
pub fn arange_supports(node: &Tensor) -> bool {
    node.type_ == Type::F32
}

/// ARANGE: `start + step*i`. Threads take every `nth`-th element.
pub fn arange(params: &ComputeParams, dst: TensorPtr) {
    crate::ggml_assert!(arange_supports(&dst) && dst.nb[0] == 4, "arange: F32 only");
    let (start, stop, step) = (dst.op_param_f32(0), dst.op_param_f32(1), dst.op_param_f32(2));
    let steps = ((stop - start) / step).ceil() as i64;
    crate::ggml_assert!(dst.nelements() == steps, "arange: {} elements for {} steps", dst.nelements(), steps);
    let mut i = params.ith as i64;
    while i < steps {
        // SAFETY: `i` is below the element count of the packed vector.
        unsafe { store(&dst, i as usize * 4, start + step * i as f32) };
        i += params.nth as i64;
    }
}

/// TIMESTEP_EMBEDDING: F32 timesteps, F32 out.
pub fn timestep_embedding_supports(node: &Tensor) -> bool {
    all_f32(node, 1)
}

/// TIMESTEP_EMBEDDING: for timestep `t` and `j < dim/2`, `cos(t*f_j)` at `j` and `sin(t*f_j)`
/// at `j + dim/2` with `f_j = max_period^(-j/half)`; an odd `dim` ends in 0. Threads split `j`.
pub fn timestep_embedding(params: &ComputeParams, dst: TensorPtr) {
    let ts = src(dst, 0);
    crate::ggml_assert!(timestep_embedding_supports(&dst), "timestep_embedding: F32 only");
    let dim = i64::from(dst.op_params[0]);
    let max_period = dst.op_params[1] as f32;
    let half = dim / 2;
    for i in 0..ts.ne[0] {
        // SAFETY: `i` is inside the timesteps vector.
        let t = unsafe { load(&ts, at(&ts, i, 0, 0, 0)) };
        let mut j = params.ith as i64;
        while j < half {
            let freq = (-max_period.ln() * j as f32 / half as f32).exp();
            let arg = t * freq;
            // SAFETY: `j` and `j + half` are below dim = dst.ne[0]; `j` is this thread's.
            unsafe {
                store(&dst, at(&dst, j, i, 0, 0), arg.cos());
                store(&dst, at(&dst, j + half, i, 0, 0), arg.sin());
            }
            j += params.nth as i64;
        }
        if dim % 2 != 0 && params.ith == 0 {
            // SAFETY: 2*half = dim - 1 is inside the row; only thread 0 writes it.
            unsafe { store(&dst, at(&dst, 2 * half, i, 0, 0), 0.0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::sequence as ops;
    use crate::cpu::kernels::testing::*;

    #[test]
    fn sequences() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let r = ops::arange(&mut c, 1.5, 10.0, 0.75);
            run(&mut c, r, arange, nth, 0, use_ref);
            let want: Vec<f64> = (0..12).map(|i| f64::from(1.5f32 + 0.75 * i as f32)).collect();
            assert_close(&values(r), &want, 0.0, "arange");

            let ts = c.new_tensor(Type::F32, &[3]);
            put(ts, |i| [0.0, 1.0, 250.0][i]);
            for dim in [8, 7] {
                let r = ops::timestep_embedding(&mut c, ts, dim, 10000);
                run(&mut c, r, timestep_embedding, nth, 0, use_ref);
                let half = dim / 2;
                let mut want = Vec::new();
                for t in [0.0f64, 1.0, 250.0] {
                    for j in 0..dim {
                        let k = j % half;
                        let arg = t * (-(10000f64).ln() * f64::from(k) / f64::from(half)).exp();
                        want.push(if j == 2 * half {
                            0.0
                        } else if j < half {
                            arg.cos()
                        } else {
                            arg.sin()
                        });
                    }
                }
                assert_close(&values(r), &want, 2e-4, "timestep_embedding");
            }
        });
    }
}
