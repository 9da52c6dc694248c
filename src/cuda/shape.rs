//! The tensor description every kernel takes (`struct shape` of kernels/prelude.cuh).

use crate::core::tensor::Tensor;

/// ggml's extents and byte strides, as the kernels read them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub ne: [i64; 4],
    pub nb: [i64; 4],
}

impl Shape {
    pub fn of(t: &Tensor) -> Shape {
        Shape { ne: t.ne, nb: t.nb.map(|n| n as i64) }
    }
}
