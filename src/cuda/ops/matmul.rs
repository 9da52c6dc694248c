//! MUL_MAT. Up to eight activation columns (token generation, small batches):
//! kernels/matvec.cu, a warp per weight row reading each weight once for every column. Wider
//! batches: a GEMM (cuBLAS on a GPU) of dense operands: F32, F16 and BF16 weights as they are,
//! quantized weights unpacked to F32; where the GPU has no cuBLAS, kernels/tiles.cu, which
//! decodes each weight once per tile of 32 columns.
//!
//! Activations are rounded as the CPU backend rounds them: converted to F16 or BF16 to meet
//! weights of that type, and to meet quantized weights rounded through the 8-bit blocks the CPU
//! backend quantizes them to (Q8_0/Q8_1, or Q8_K for the 256-value formats), as the
//! reference's CUDA kernels also quantize them. Each term of the product is then the CPU's
//! exactly (a quantized weight and a rounded activation are both exact in F32, not in F16),
//! and only the order of the sums differs. That matters more than it seems: a rounding to 8
//! bits turns any difference in its input into a whole step now and then, so the small errors
//! of F16 weights grow layer after layer into the size of the quantization noise.

use super::{ELEMENT_THREADS, Queue, data, grid_for, is_decodable, is_float, launch, packed_rows, shape, src};
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cuda::gpu::{DevicePtr, Gemm, GemmType, GpuResult, Kernel};
use crate::cuda::shape::Shape;

const MUL_MAT_VEC: Kernel = Kernel { source: "matvec", name: "mul_mat_vec" };
const MUL_MAT_TILES: Kernel = Kernel { source: "tiles", name: "mul_mat_tiles" };
const UNPACK_ROWS: Kernel = Kernel { source: "convert", name: "unpack_rows" };
const ROUND_ACTIVATIONS: Kernel = Kernel { source: "convert", name: "round_activations" };
const ROUND_TO_HALF: Kernel = Kernel { source: "convert", name: "round_to_half" };

/// Columns one launch of the vector product takes (the kernel's `MAX_COLS`); wider batches go
/// through the GEMM.
pub(super) const MAX_COLS: i64 = 8;
/// Threads per block of the vector products: four warps, a weight row each.
pub(super) const THREADS: u32 = 128;
pub(super) const WARPS: i64 = THREADS as i64 / 32;
/// A tile of kernels/tiles.cu: weight rows by columns, and its threads (`TILE_ROWS`,
/// `TILE_COLS`, `TILE_THREADS`).
pub(super) const TILE_ROWS: i64 = 64;
pub(super) const TILE_COLS: i64 = 32;
pub(super) const TILE_THREADS: u32 = 256;
/// Scratch operands start on this boundary, as cuBLAS prefers.
pub(super) const OPERAND_ALIGNMENT: usize = 256;

/// Weights the product kernels decode, packed: F32, F16 and BF16 rows of any length, and rows
/// of whole groups of 32 values (and of whole blocks) of the block types.
pub(super) fn weights_ok(w: &Tensor) -> bool {
    let whole_groups = is_float(w.type_) || (w.ne[0] % 32 == 0 && w.ne[0] % w.type_.blck_size() == 0);
    is_decodable(w.type_) && whole_groups && packed_rows(w)
}

/// Activations the kernels read: F32 columns with packed values.
pub(super) fn activations_ok(x: &Tensor) -> bool {
    x.type_ == Type::F32 && packed_rows(x)
}

pub fn supports_mul_mat(node: &Tensor) -> bool {
    let (w, x) = (src(node, 0), src(node, 1));
    let broadcast = x.ne[2] % w.ne[2] == 0 && x.ne[3] % w.ne[3] == 0;
    weights_ok(w) && activations_ok(x) && node.type_ == Type::F32 && broadcast && x.ne[2] * x.ne[3] <= 65535
}

pub fn mul_mat(q: &Queue, node: &Tensor) -> GpuResult<()> {
    if src(node, 1).ne[1] <= MAX_COLS {
        mul_mat_vec(q, node)
    } else if q.gpu.has_gemm() {
        mul_mat_gemm(q, node)
    } else {
        mul_mat_tiles(q, node)
    }
}

fn mul_mat_vec(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (w, x) = (src(node, 0), src(node, 1));
    let to = q.scratch(rounded_bytes(x, w.type_))?;
    let (sx, x_at) = activations_f32(q, x, w.type_, to)?;
    let grid = [((w.ne[1] + WARPS - 1) / WARPS) as u32, (x.ne[2] * x.ne[3]) as u32, 1];
    launch!(q, MUL_MAT_VEC, grid, THREADS; shape(w), data(w), w.type_.0, sx, x_at, shape(node), data(node))
}

fn mul_mat_tiles(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (w, x) = (src(node, 0), src(node, 1));
    let to = q.scratch(rounded_bytes(x, w.type_))?;
    let (sx, x_at) = activations_f32(q, x, w.type_, to)?;
    let tiles = |n: i64, size: i64| ((n + size - 1) / size) as u32;
    let grid = [tiles(w.ne[1], TILE_ROWS), tiles(x.ne[1], TILE_COLS), (x.ne[2] * x.ne[3]) as u32];
    launch!(q, MUL_MAT_TILES, grid, TILE_THREADS; shape(w), data(w), w.type_.0, sx, x_at, shape(node), data(node))
}

/// How the CPU backend rounds activations before it multiplies them by weights of a type (to
/// that type's `vec_dot_type`).
#[derive(Clone, Copy)]
enum Rounding {
    /// To F16 or BF16, the weights' own type.
    Half(Type),
    /// Through 8-bit blocks of this many values: 32 (Q8_0, Q8_1) or 256 (Q8_K).
    Blocks(i32),
}

/// The rounding of activations meeting weights of type `t`; `None` for F32 weights, whose
/// products take the activations as they are.
fn rounding(t: Type) -> Option<Rounding> {
    match t {
        Type::F32 => None,
        Type::F16 | Type::BF16 => Some(Rounding::Half(t)),
        Type::Q2_K | Type::Q3_K | Type::Q4_K | Type::Q5_K | Type::Q6_K | Type::IQ4_XS => Some(Rounding::Blocks(256)),
        _ => Some(Rounding::Blocks(32)),
    }
}

/// Queues the rounding of F32 activations `x` through 8-bit blocks of `block` values, written
/// packed as `ty` at `to` (which holds `x.nelements()` values of `ty`).
fn round_activations(q: &Queue, x: &Tensor, block: i32, ty: GemmType, to: DevicePtr) -> GpuResult<Operand> {
    let blocks = x.nelements() / i64::from(block);
    let td = ggml_type(ty).0;
    launch!(q, ROUND_ACTIVATIONS, grid_for(blocks), ELEMENT_THREADS; shape(x), data(x), block, to, td)?;
    Ok(Operand::packed(x, ty, to))
}

/// Bytes of scratch memory [`activations_f32`] writes for activations `x` meeting weights of
/// type `w_type`.
pub(super) fn rounded_bytes(x: &Tensor, w_type: Type) -> usize {
    rounding(w_type).map_or(0, |_| Operand::unpacked_bytes(x, GemmType::F32))
}

/// The F32 activations of a product as the vector and tile kernels read them: `x` itself, or
/// its rounded copy, queued at `to` ([`rounded_bytes`] of scratch memory).
pub(super) fn activations_f32(q: &Queue, x: &Tensor, w_type: Type, to: DevicePtr) -> GpuResult<(Shape, DevicePtr)> {
    let rounded = match rounding(w_type) {
        None => return Ok((shape(x), data(x))),
        Some(Rounding::Blocks(block)) => round_activations(q, x, block, GemmType::F32, to)?,
        Some(Rounding::Half(t)) => {
            launch!(q, ROUND_TO_HALF, grid_for(x.nelements()), ELEMENT_THREADS; shape(x), data(x), t.0, to)?;
            Operand::packed(x, GemmType::F32, to)
        }
    };
    Ok((rounded.shape(x), rounded.at))
}

/// The element type a GEMM multiplies weights of type `t` in: their own for the float types,
/// F32 for the quantized ones, whose values F16 cannot hold exactly.
fn gemm_type(t: Type) -> GemmType {
    match t {
        Type::F16 => GemmType::F16,
        Type::BF16 => GemmType::BF16,
        _ => GemmType::F32,
    }
}

fn ggml_type(t: GemmType) -> Type {
    match t {
        GemmType::F32 => Type::F32,
        GemmType::F16 => Type::F16,
        GemmType::BF16 => Type::BF16,
    }
}

/// A stack of matrices as a GEMM reads it: rows of packed values of one type, at byte
/// strides `nb` (ggml's) from `at`.
struct Operand {
    at: DevicePtr,
    nb: [usize; 4],
    ty: GemmType,
}

impl Operand {
    /// The tensor itself, when its rows are packed values of `ty`; `None` when it must be
    /// unpacked first.
    fn in_place(t: &Tensor, ty: GemmType) -> Option<Operand> {
        let fits = t.type_ == ggml_type(ty) && packed_rows(t) && t.nb.iter().all(|&n| n % ty.size() == 0);
        fits.then(|| Operand { at: data(t), nb: t.nb, ty })
    }

    /// Bytes of `t` unpacked into a dense stack of `ty`.
    fn unpacked_bytes(t: &Tensor, ty: GemmType) -> usize {
        t.nelements() as usize * ty.size()
    }

    /// Queues the unpacking of `t` into dense `ty` at `to`, which holds
    /// [`Operand::unpacked_bytes`].
    fn unpack(q: &Queue, t: &Tensor, ty: GemmType, to: DevicePtr) -> GpuResult<Operand> {
        let rows = t.ne[1] * t.ne[2] * t.ne[3];
        let td = ggml_type(ty).0;
        let groups = (t.ne[0] + 31) / 32;
        launch!(q, UNPACK_ROWS, grid_for(groups * rows), ELEMENT_THREADS; shape(t), data(t), t.type_.0, to, td)?;
        Ok(Operand::packed(t, ty, to))
    }

    /// A dense stack of `ty` shaped as `t`, at `at`.
    fn packed(t: &Tensor, ty: GemmType, at: DevicePtr) -> Operand {
        let size = ty.size();
        let ne = t.ne.map(|n| n as usize);
        let nb = [size, size * ne[0], size * ne[0] * ne[1], size * ne[0] * ne[1] * ne[2]];
        Operand { at, nb, ty }
    }

    /// The kernels' description of this stack, shaped as `t`.
    fn shape(&self, t: &Tensor) -> Shape {
        Shape { ne: t.ne, nb: self.nb.map(|n| n as i64) }
    }

    /// Where matrix (i2, i3) starts.
    fn matrix(&self, i2: i64, i3: i64) -> DevicePtr {
        self.at + (i2 as usize * self.nb[2] + i3 as usize * self.nb[3]) as DevicePtr
    }

    /// Elements from one row (cuBLAS's column) to the next.
    fn ld(&self) -> usize {
        self.nb[1] / self.ty.size()
    }

    /// Elements from one matrix to the next along dimension 2.
    fn stride(&self) -> usize {
        self.nb[2] / self.ty.size()
    }
}

/// The product as GEMMs: one per weight matrix, batched over the activation matrices that
/// share it (`r2` of them where ggml broadcasts the weights, as grouped-query attention
/// does), or one per i3 batched over all of dimension 2 where nothing is shared.
fn mul_mat_gemm(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (w, x) = (src(node, 0), src(node, 1));
    let ty = gemm_type(w.type_);
    // F16 and BF16 weights meet activations converted to their type, which rounds them
    let block = match rounding(w.type_) {
        Some(Rounding::Blocks(block)) => Some(block),
        _ => None,
    };
    let w_here = Operand::in_place(w, ty);
    let x_here = if block.is_none() { Operand::in_place(x, ty) } else { None };
    let w_bytes = if w_here.is_some() { 0 } else { Operand::unpacked_bytes(w, ty).next_multiple_of(OPERAND_ALIGNMENT) };
    let x_bytes = if x_here.is_some() { 0 } else { Operand::unpacked_bytes(x, ty) };
    let scratch = q.scratch(w_bytes + x_bytes)?;
    let a = match w_here {
        Some(a) => a,
        None => Operand::unpack(q, w, ty, scratch)?,
    };
    let x_at = scratch + w_bytes as DevicePtr;
    let b = match (x_here, block) {
        (Some(b), _) => b,
        (None, Some(block)) => round_activations(q, x, block, ty, x_at)?,
        (None, None) => Operand::unpack(q, x, ty, x_at)?,
    };
    let d = Operand { at: data(node), nb: node.nb, ty: GemmType::F32 };

    let (r2, r3) = (x.ne[2] / w.ne[2], x.ne[3] / w.ne[3]);
    let (products, batch, stride_a) = if r2 == 1 { (1, x.ne[2], a.stride()) } else { (w.ne[2], r2, 0) };
    for i13 in 0..x.ne[3] {
        for i02 in 0..products {
            let i12 = i02 * r2;
            let g = Gemm {
                m: w.ne[1] as usize,
                n: x.ne[1] as usize,
                k: w.ne[0] as usize,
                a: a.matrix(i02, i13 / r3),
                a_type: ty,
                lda: a.ld(),
                stride_a,
                x: b.matrix(i12, i13),
                x_type: ty,
                ldx: b.ld(),
                stride_x: b.stride(),
                d: d.matrix(i12, i13),
                ldd: d.ld(),
                stride_d: d.stride(),
                batch: batch as usize,
            };
            // SAFETY: the operands are this device's tensors, or their copies in scratch memory
            // sized for them; every matrix named lies within them.
            unsafe { q.gpu.gemm(q.stream, &g)? };
        }
    }
    Ok(())
}
