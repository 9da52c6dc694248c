//! MUL_MAT and MUL_MAT_ID (kernels/matvec.cu): a warp per weight row reads each weight once
//! for up to eight activation columns; wider batches are taken eight columns at a time.

use super::{Queue, data, is_decodable, launch, packed_rows, shape, src};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{GpuResult, Kernel};
use crate::cuda::shape::Shape;

const MUL_MAT_VEC: Kernel = Kernel { source: "matvec", name: "mul_mat_vec" };
const MUL_MAT_ID_VEC: Kernel = Kernel { source: "matvec", name: "mul_mat_id_vec" };

/// Columns one launch of the product takes (the kernel's `MAX_COLS`).
const MAX_COLS: i64 = 8;
/// Threads per block: four warps, a weight row each.
const THREADS: u32 = 128;
const WARPS: i64 = THREADS as i64 / 32;

/// Weights the product kernels decode: rows of whole groups of 32 values (and of whole
/// blocks), packed.
fn weights_ok(w: &Tensor) -> bool {
    is_decodable(w.type_) && w.ne[0] % 32 == 0 && w.ne[0] % w.type_.blck_size() == 0 && packed_rows(w)
}

/// Activations the kernels read: F32 columns with packed values.
fn activations_ok(x: &Tensor) -> bool {
    x.type_ == Type::F32 && packed_rows(x)
}

pub fn supports_mul_mat(node: &Tensor) -> bool {
    let (w, x) = (src(node, 0), src(node, 1));
    let broadcast = x.ne[2] % w.ne[2] == 0 && x.ne[3] % w.ne[3] == 0;
    weights_ok(w) && activations_ok(x) && node.type_ == Type::F32 && broadcast && x.ne[2] * x.ne[3] <= 65535
}

pub fn mul_mat(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (w, x) = (src(node, 0), src(node, 1));
    let grid = [((w.ne[1] + WARPS - 1) / WARPS) as u32, (x.ne[2] * x.ne[3]) as u32, 1];
    let (mut sx, mut sd) = (shape(x), shape(node));
    for first in (0..x.ne[1]).step_by(MAX_COLS as usize) {
        let cols = (x.ne[1] - first).min(MAX_COLS);
        (sx.ne[1], sd.ne[1]) = (cols, cols);
        let x_at = data(x) + (first * sx.nb[1]) as u64;
        let d_at = data(node) + (first * sd.nb[1]) as u64;
        launch!(q, MUL_MAT_VEC, grid, THREADS; shape(w), data(w), w.type_.0, sx, x_at, sd, d_at)?;
    }
    Ok(())
}

pub fn supports_mul_mat_id(node: &Tensor) -> bool {
    let (w, x, ids) = (src(node, 0), src(node, 1), src(node, 2));
    weights_ok(w)
        && activations_ok(x)
        && node.type_ == Type::F32
        && ids.type_ == Type::I32
        && x.ne[2] == ids.ne[1]
        && ids.ne[0] * ids.ne[1] <= 65535
}

pub fn mul_mat_id(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (w, x, ids) = (src(node, 0), src(node, 1), src(node, 2));
    let grid = [((w.ne[1] + WARPS - 1) / WARPS) as u32, (ids.ne[0] * ids.ne[1]) as u32, 1];
    let sw: Shape = shape(w);
    launch!(q, MUL_MAT_ID_VEC, grid, THREADS;
        sw, data(w), w.type_.0, shape(x), data(x), shape(ids), data(ids), shape(node), data(node))
}
