//! GET_ROWS, SET_ROWS and the copies CPY, DUP and CONT between float types and into the
//! 32-value block formats (kernels/convert.cu).

use super::{Queue, data, grid_for, is_block32, is_decodable, is_float, launch, packed_rows, shape, src};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{GpuResult, Kernel};

const GET_ROWS: Kernel = Kernel { source: "convert", name: "get_rows" };
const SET_ROWS: Kernel = Kernel { source: "convert", name: "set_rows" };
const COPY_FLOAT: Kernel = Kernel { source: "convert", name: "copy_float" };
const COPY_TO_BLOCKS: Kernel = Kernel { source: "convert", name: "copy_to_blocks" };

/// The types the conversion kernels write a row of.
fn is_row_type(t: Type) -> bool {
    is_float(t) || is_block32(t)
}

pub fn supports_get_rows(node: &Tensor) -> bool {
    let (table, ids) = (src(node, 0), src(node, 1));
    is_decodable(table.type_) && packed_rows(table) && ids.type_ == Type::I32 && node.type_ == Type::F32
}

pub fn get_rows(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (table, ids) = (src(node, 0), src(node, 1));
    launch!(q, GET_ROWS, grid_for(node.nelements()), super::ELEMENT_THREADS;
        shape(table), data(table), table.type_.0, shape(ids), data(ids), shape(node), data(node))
}

pub fn supports_set_rows(node: &Tensor) -> bool {
    let (rows, ids) = (src(node, 0), src(node, 1));
    let whole_blocks = !is_block32(node.type_) || rows.ne[0] % 32 == 0;
    is_float(rows.type_)
        && packed_rows(rows)
        && matches!(ids.type_, Type::I32 | Type::I64)
        && is_row_type(node.type_)
        && packed_rows(node)
        && whole_blocks
}

pub fn set_rows(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (rows, ids) = (src(node, 0), src(node, 1));
    let per_row = if is_block32(node.type_) { rows.ne[0] / 32 } else { rows.ne[0] };
    let wide = i32::from(ids.type_ == Type::I64);
    launch!(q, SET_ROWS, grid_for(per_row * rows.nrows()), super::ELEMENT_THREADS;
        shape(rows), data(rows), rows.type_.0, shape(ids), data(ids), wide, shape(node), data(node), node.type_.0)
}

/// A copy of two contiguous tensors of one type is a memory copy.
fn is_plain_copy(from: &Tensor, to: &Tensor) -> bool {
    from.type_ == to.type_ && from.is_contiguous() && to.is_contiguous()
}

pub fn supports_copy(node: &Tensor) -> bool {
    let from = src(node, 0);
    if from.nelements() != node.nelements() {
        return false;
    }
    is_plain_copy(from, node)
        || (is_float(from.type_) && is_float(node.type_))
        || (is_decodable(from.type_) && is_float(node.type_) && packed_rows(from))
        || (from.type_ == Type::F32 && is_block32(node.type_) && node.ne[0] % 32 == 0 && packed_rows(node))
}

/// CPY writes its result over its second source; DUP and CONT into a tensor of their own.
/// Either way the result is `node`, laid out as ggml made it.
pub fn copy(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let from = src(node, 0);
    if is_plain_copy(from, node) {
        // SAFETY: both tensors are allocated on this device with nbytes of data.
        return unsafe { q.gpu.copy(q.stream, data(node), data(from), node.nbytes()) };
    }
    if is_block32(node.type_) {
        return launch!(q, COPY_TO_BLOCKS, grid_for(node.nelements() / 32), super::ELEMENT_THREADS;
            shape(from), data(from), shape(node), data(node), node.type_.0);
    }
    launch!(q, COPY_FLOAT, grid_for(node.nelements()), super::ELEMENT_THREADS;
        shape(from), data(from), from.type_.0, shape(node), data(node), node.type_.0)
}
