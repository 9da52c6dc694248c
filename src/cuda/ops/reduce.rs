//! SUM_ROWS and MEAN, ARGSORT and REPEAT of F32 data, and CONCAT of any type whose elements
//! are not blocks (kernels/rows.cu).

use super::{Queue, data, grid_for, grid_for_rows, launch, shape, src};
use crate::core::op::Op;
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{GpuResult, Kernel};

const SUM_ROWS: Kernel = Kernel { source: "rows", name: "sum_rows_f32" };
const ARGSORT: Kernel = Kernel { source: "rows", name: "argsort_f32" };
const REPEAT: Kernel = Kernel { source: "rows", name: "repeat_f32" };
const CONCAT: Kernel = Kernel { source: "rows", name: "concat" };

/// The longest row ARGSORT sorts in one block's shared memory (the kernel's `MAX_SORT`).
const MAX_SORT: i64 = 1024;

pub fn supports(node: &Tensor) -> bool {
    let x = src(node, 0);
    match node.op {
        Op::CONCAT => {
            let t = x.type_;
            let elements = t.blck_size() == 1 && matches!(t.type_size(), 1 | 2 | 4 | 8);
            elements && src(node, 1).type_ == t && node.type_ == t && (0..4).contains(&node.op_param_i32(0))
        }
        _ if x.type_ != Type::F32 => false,
        Op::ARGSORT => node.type_ == Type::I32 && x.ne[0] <= MAX_SORT,
        _ => node.type_ == Type::F32,
    }
}

pub fn sum_rows(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let x = src(node, 0);
    let mean = i32::from(node.op == Op::MEAN);
    launch!(q, SUM_ROWS, grid_for_rows(x.nrows()), 32; shape(x), data(x), shape(node), data(node), mean)
}

pub fn argsort(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let x = src(node, 0);
    let descending = node.op_param_i32(0);
    let threads = (x.ne[0].max(1) as u32).next_power_of_two();
    launch!(q, ARGSORT, grid_for_rows(x.nrows()), threads; shape(x), data(x), shape(node), data(node), descending)
}

pub fn repeat(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let x = src(node, 0);
    launch!(q, REPEAT, grid_for(node.nelements()), super::ELEMENT_THREADS; shape(x), data(x), shape(node), data(node))
}

pub fn concat(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (a, b) = (src(node, 0), src(node, 1));
    let dim = node.op_param_i32(0);
    let size = node.type_.type_size() as i32;
    launch!(q, CONCAT, grid_for(node.nelements()), super::ELEMENT_THREADS;
        shape(a), data(a), shape(b), data(b), shape(node), data(node), dim, size)
}
