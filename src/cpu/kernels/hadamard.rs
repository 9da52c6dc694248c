//! The fast Walsh-Hadamard transform that ggml-cpu runs for a MUL_MAT whose first operand is
//! hinted to be the normalised Hadamard matrix (`ggml_compute_forward_fwht`): each row of
//! `src[1]` (F32 or F16), of a power-of-two length `n`, transformed by butterflies and scaled
//! by `1/√n`, written to the F32 result. `src[0]` is not read.
//!
//! Each butterfly rounds `u + v` and `u - v` once, in the same order of passes as ggml's, so the
//! result is the reference's bit for bit.

use super::norm::{row_index, row_ptr, source};
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::quants::half::Half;

/// Thread `ith`'s rows of the transform, in contiguous ranges as ggml splits them.
pub fn fwht(params: &ComputeParams, dst: TensorPtr) {
    let src = source(dst, 1);
    let n = src.ne[0];
    crate::ggml_assert!(
        matches!(src.type_, Type::F32 | Type::F16) && dst.type_ == Type::F32,
        "fwht: F32 or F16 rows into F32, got {} into {}",
        src.type_.name(),
        dst.type_.name()
    );
    crate::ggml_assert!(n > 0 && n & (n - 1) == 0, "fwht: row length {} is not a power of two", n);
    crate::ggml_assert!(
        src.nb[0] == src.type_.type_size() && dst.nb[0] == 4 && dst.ne[0] == n && dst.ne[1..] == src.ne[1..],
        "fwht: rows must be contiguous and the result shaped as the source"
    );
    let rows = src.ne[1] * src.ne[2] * src.ne[3];
    let per_thread = (rows + params.nth as i64 - 1) / params.nth as i64;
    let first = per_thread * params.ith as i64;
    let scale = 1.0 / (n as f32).sqrt();
    for r in first..rows.min(first + per_thread) {
        let (i1, i2, i3) = row_index(&src.ne, r);
        // SAFETY: the row index is within both tensors' shapes (asserted equal), and each row
        // holds `n` contiguous values of its type.
        let y = unsafe {
            let x = row_ptr(&src, i1, i2, i3);
            let y = std::slice::from_raw_parts_mut(row_ptr(&dst, i1, i2, i3).cast::<f32>(), n as usize);
            if src.type_ == Type::F32 {
                let x = std::slice::from_raw_parts(x.cast::<f32>(), n as usize);
                y.iter_mut().zip(x).for_each(|(y, &x)| *y = x * scale);
            } else {
                let x = std::slice::from_raw_parts(x.cast::<Half>(), n as usize);
                y.iter_mut().zip(x).for_each(|(y, &x)| *y = x.to_f32() * scale);
            }
            y
        };
        transform(y);
    }
}

/// The butterflies, in place, on a row of power-of-two length.
fn transform(y: &mut [f32]) {
    let mut len = 1;
    while len < y.len() {
        for pair in y.chunks_exact_mut(2 * len) {
            let (lo, hi) = pair.split_at_mut(len);
            for (u, v) in lo.iter_mut().zip(hi) {
                (*u, *v) = (*u + *v, *u - *v);
            }
        }
        len *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::transform;

    #[test]
    fn transforms_as_the_hadamard_matrix_multiplies() {
        let n = 8;
        let x: Vec<f32> = (0..n).map(|i| (i * i) as f32 - 3.0).collect();
        let mut y = x.clone();
        transform(&mut y);
        // H[i][j] = (-1)^popcount(i & j)
        for (i, &yi) in y.iter().enumerate() {
            let want: f32 =
                x.iter().enumerate().map(|(j, &xj)| if (i & j).count_ones() % 2 == 0 { xj } else { -xj }).sum();
            assert_eq!(yi, want, "row {i}");
        }
    }
}
