//! MUL_MAT_ID: each (slot, token) column multiplied by the weights of the expert its id names.
//! Up to eight tokens (generation): kernels/matvec.cu's `mul_mat_id_vec`, a warp per weight row
//! and column. Wider batches: kernels/tiles.cu groups the columns by expert on the device
//! (so no host wait splits the graph) and multiplies each expert's columns in tiles, which
//! decode each weight once per 32 columns. The activations are rounded as for MUL_MAT
//! (`matmul`), so each term is the CPU's. A column whose id names no expert is left unwritten;
//! the CPU backend aborts on it.

use super::matmul::{
    MAX_COLS, OPERAND_ALIGNMENT, THREADS, TILE_COLS, TILE_ROWS, TILE_THREADS, WARPS, activations_f32, activations_ok,
    rounded_bytes, weights_ok,
};
use super::{Queue, data, launch, shape, src};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{DevicePtr, GpuResult, Kernel};

const MUL_MAT_ID_VEC: Kernel = Kernel { source: "matvec", name: "mul_mat_id_vec" };
const GROUP_BY_EXPERT: Kernel = Kernel { source: "tiles", name: "group_by_expert" };
const MUL_MAT_ID_TILES: Kernel = Kernel { source: "tiles", name: "mul_mat_id_tiles" };
/// Threads of `group_by_expert`'s one block, each taking every 256th expert.
const GROUP_THREADS: u32 = 256;
/// The most blocks along a grid's y.
const MAX_GRID_Y: i64 = 65535;

/// The columns of a MUL_MAT_ID (slots x tokens) and the tiles they can fill at most: every
/// expert's last tile may be partly empty.
fn columns_and_tiles(node: &Tensor) -> (i64, i64) {
    let (w, ids) = (src(node, 0), src(node, 2));
    let columns = ids.ne[0] * ids.ne[1];
    (columns, (columns + TILE_COLS - 1) / TILE_COLS + w.ne[2])
}

fn batched(node: &Tensor) -> bool {
    src(node, 2).ne[1] > MAX_COLS
}

pub fn supports(node: &Tensor) -> bool {
    let (w, x, ids) = (src(node, 0), src(node, 1), src(node, 2));
    let (columns, tiles) = columns_and_tiles(node);
    let grid_y = if batched(node) { tiles } else { columns };
    weights_ok(w)
        && activations_ok(x)
        && node.type_ == Type::F32
        && ids.type_ == Type::I32
        && x.ne[2] == ids.ne[1]
        && grid_y <= MAX_GRID_Y
}

pub fn mul_mat_id(q: &Queue, node: &Tensor) -> GpuResult<()> {
    if batched(node) { tiles(q, node) } else { vec(q, node) }
}

fn vec(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (w, x, ids) = (src(node, 0), src(node, 1), src(node, 2));
    let to = q.scratch(rounded_bytes(x, w.type_))?;
    let (sx, x_at) = activations_f32(q, x, w.type_, to)?;
    let grid = [((w.ne[1] + WARPS - 1) / WARPS) as u32, (ids.ne[0] * ids.ne[1]) as u32, 1];
    launch!(q, MUL_MAT_ID_VEC, grid, THREADS;
        shape(w), data(w), w.type_.0, sx, x_at, shape(ids), data(ids), shape(node), data(node))
}

fn tiles(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (w, x, ids) = (src(node, 0), src(node, 1), src(node, 2));
    let (columns, max_tiles) = columns_and_tiles(node);
    let experts = w.ne[2];
    // the tile count, three numbers a tile, the column list and a start per expert
    let table_bytes = (4 * (1 + 3 * max_tiles + columns + experts) as usize).next_multiple_of(OPERAND_ALIGNMENT);
    let table = q.scratch(table_bytes + rounded_bytes(x, w.type_))?;
    let (experts, max_tiles) = (experts as i32, max_tiles as i32);
    launch!(q, GROUP_BY_EXPERT, [1, 1, 1], GROUP_THREADS; shape(ids), data(ids), experts, max_tiles, table)?;
    let (sx, x_at) = activations_f32(q, x, w.type_, table + table_bytes as DevicePtr)?;
    let grid = [((w.ne[1] + TILE_ROWS - 1) / TILE_ROWS) as u32, max_tiles as u32, 1];
    let slots = ids.ne[0] as i32;
    launch!(q, MUL_MAT_ID_TILES, grid, TILE_THREADS;
        shape(w), data(w), w.type_.0, sx, x_at, slots, table, max_tiles, shape(node), data(node))
}
