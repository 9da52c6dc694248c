//! ggml-cpu's "IQ panel" entry points (`iqp.h`): the batched MUL_MAT and MUL_MAT_ID path for the
//! grid-based IQ types, which ggml's product takes once it has converted the activations to
//! Q8_K rows in the scratch. The questions (which nodes qualify, how much per-thread panel
//! scratch they need) are answered as ggml answers them, so a caller sizes the same scratch;
//! the products are computed from the same inputs into the same outputs with our Q8_K dot
//! products, which need no decoded panel.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use super::params::{CComputeParams, with_params};
use super::type_traits::type_traits_cpu;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::ComputeParams;
use crate::cpu::api::{CpuFeature, cpu_has};
use crate::cpu::kernels::dot::vec_dot_type;
use crate::ffi::handle::handle;

/// Rows of `src[0]` that ggml decodes into one panel.
const PANEL_ROWS: i64 = 8;
/// Activation rows below which a product (or an expert's share) does not pay for the panel.
const MIN_BATCH: i64 = 8;
/// Values per Q8_K super-block.
const QK_K: i64 = 256;
/// Bytes of one decoded super-block of a panel: 8 scales, 8 biases, 16×8 sub-block scales and
/// 256×8 values.
const PANEL_BLOCK_BYTES: usize = 8 * 4 + 8 * 4 + 16 * 8 + 256 * 8;

/// `ggml_cpu_iqp_mul_mat_id_min_batch`: whether an expert with `cne1` rows takes the panel.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_iqp_mul_mat_id_min_batch(cne1: i64) -> bool {
    cne1 >= MIN_BATCH
}

/// `ggml_cpu_iqp_supports_mul_mat`: a batched product of 2-D weights of an IQ type.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_iqp_supports_mul_mat(dst: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: a live MUL_MAT node.
    let dst: TensorPtr = unsafe { handle(dst, "ggml_cpu_iqp_supports_mul_mat") };
    qualifies(&dst) && operand(&dst, 1).ne[1] >= MIN_BATCH && operand(&dst, 0).ne[2] == 1
}

/// `ggml_cpu_iqp_supports_mul_mat_id`: a MUL_MAT_ID node some expert of which may take the
/// panel.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_iqp_supports_mul_mat_id(dst: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: a live MUL_MAT_ID node.
    let dst: TensorPtr = unsafe { handle(dst, "ggml_cpu_iqp_supports_mul_mat_id") };
    let ids = operand(&dst, 2);
    qualifies(&dst) && ggml_cpu_iqp_mul_mat_id_min_batch(ids.ne[0] * ids.ne[1])
}

/// `ggml_cpu_iqp_scratch_size`: the panel scratch per thread, a multiple of 64 bytes.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_cpu_iqp_scratch_size(dst: *const Tensor) -> usize {
    // SAFETY: the C caller's contract: a live product node.
    let dst: TensorPtr = unsafe { handle(dst, "ggml_cpu_iqp_scratch_size") };
    scratch_size(&dst)
}

/// `ggml_compute_forward_mul_mat_iqp`: thread `ith`'s groups of eight weight rows of the
/// product, against every activation row; the activations are in the scratch as Q8_K rows
/// (one plane of `ne11` rows per `i12`), the panel scratches after them.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_compute_forward_mul_mat_iqp(params: *const CComputeParams, dst: *mut Tensor) {
    let export = "ggml_compute_forward_mul_mat_iqp";
    // SAFETY: the C caller's contract: a live MUL_MAT node that qualifies, with the scratch
    // holding its converted activations.
    unsafe {
        let dst: TensorPtr = handle(dst, export);
        with_params(params, export, |p| {
            let (src0, src1) = (operand(&dst, 0), operand(&dst, 1));
            let row = q8k_row_size(&dst);
            let panels_at = (row * (src1.ne[1] * src1.ne[2]) as usize).next_multiple_of(64);
            crate::ggml_assert!(
                panels_at + p.nth * scratch_size(&dst) <= p.wsize,
                "{}: {} bytes of scratch, {} needed",
                export,
                p.wsize,
                panels_at + p.nth * scratch_size(&dst)
            );
            for r in my_groups(p, src0.ne[1]) {
                for i12 in 0..src1.ne[2] {
                    for i11 in 0..src1.ne[1] {
                        let y = p.wdata.add((i11 + i12 * src1.ne[1]) as usize * row);
                        let out = dst.data.cast::<u8>().add(i11 as usize * dst.nb[1] + i12 as usize * dst.nb[2]);
                        dot_rows(src0, src0.data.cast(), r, y, out);
                    }
                }
            }
        });
    }
}

/// `ggml_compute_forward_mul_mat_id_iqp`: thread `ith`'s groups of eight rows of expert
/// `cur_a`'s weights against the `cne1` activation rows routed to it; `expert_rows` holds their
/// `(i1, i2)` pairs, naming both the Q8_K activation row in the scratch and the result column.
/// `panels` (the per-thread panel scratch) is not needed.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_compute_forward_mul_mat_id_iqp(
    params: *const CComputeParams,
    dst: *mut Tensor,
    cur_a: i64,
    cne1: i64,
    expert_rows: *const i32,
    _panels: *mut c_void,
) {
    let export = "ggml_compute_forward_mul_mat_id_iqp";
    // SAFETY: the C caller's contract: a live MUL_MAT_ID node that qualifies, the scratch
    // holding its converted activations, `expert_rows` holding `2·cne1` indices into them.
    unsafe {
        let dst: TensorPtr = handle(dst, export);
        with_params(params, export, |p| {
            let (src0, src1) = (operand(&dst, 0), operand(&dst, 1));
            crate::ggml_assert!((0..src0.ne[2]).contains(&cur_a), "{}: expert {} of {}", export, cur_a, src0.ne[2]);
            crate::ggml_assert!(cne1 >= 0 && (cne1 == 0 || !expert_rows.is_null()), "{}: no expert rows", export);
            let rows = std::slice::from_raw_parts(expert_rows, 2 * cne1 as usize);
            let row = q8k_row_size(&dst);
            let weights = src0.data.cast::<u8>().add(cur_a as usize * src0.nb[2]);
            for r in my_groups(p, src0.ne[1]) {
                for pair in rows.chunks_exact(2) {
                    let (i1, i2) = (i64::from(pair[0]), i64::from(pair[1]));
                    let y = p.wdata.add(((i1 % src1.ne[1]) + i2 * src1.ne[1]) as usize * row);
                    let out = dst.data.cast::<u8>().add(i1 as usize * dst.nb[1] + i2 as usize * dst.nb[2]);
                    dot_rows(src0, weights, r, y, out);
                }
            }
        });
    }
}

/// ggml's conditions common to both products.
fn qualifies(dst: &Tensor) -> bool {
    static DISABLED: OnceLock<bool> = OnceLock::new();
    let (src0, src1) = (operand(dst, 0), operand(dst, 1));
    matches!(
        src0.type_,
        Type::IQ2_XXS
            | Type::IQ2_XS
            | Type::IQ2_S
            | Type::IQ3_XXS
            | Type::IQ3_S
            | Type::IQ1_S
            | Type::IQ1_M
            | Type::IQ4_XS
    ) && vec_dot_type(src0.type_) == Type::Q8_K
        && !*DISABLED.get_or_init(|| std::env::var_os("GGML_NO_IQ_PANEL").is_some())
        && cpu_has(CpuFeature::Avx2) != 0
        && src1.type_ == Type::F32
        && src0.ne[0] % QK_K == 0
        && src0.ne[1] % PANEL_ROWS == 0
        && src0.ne[3] == 1
        && src1.ne[3] == 1
        && src0.is_contiguous()
        && dst.type_ == Type::F32
        && dst.nb[0] == 4
}

fn scratch_size(dst: &Tensor) -> usize {
    ((operand(dst, 0).ne[0] / QK_K) as usize * PANEL_BLOCK_BYTES).next_multiple_of(64)
}

fn q8k_row_size(dst: &Tensor) -> usize {
    Type::Q8_K.row_size(operand(dst, 1).ne[0])
}

/// Source `i` of a product node, which it must have.
fn operand(dst: &Tensor, i: usize) -> &Tensor {
    dst.source(i).unwrap_or_else(|| crate::ggml_abort!("IQ panel product: missing source {}", i))
}

/// The first weight rows of thread `ith`'s groups of eight, as ggml splits the groups.
fn my_groups(p: &ComputeParams, rows: i64) -> impl Iterator<Item = i64> {
    let groups = rows / PANEL_ROWS;
    let (ith, nth) = (p.ith as i64, p.nth as i64);
    (groups * ith / nth..groups * (ith + 1) / nth).map(|g| g * PANEL_ROWS)
}

/// Results `r..r + 8` of one column: weight rows `r..r + 8` from `weights` (the rows of
/// `src0`'s layout) dotted with the Q8_K row at `y`, written as floats at `out + 4·(r + j)`.
///
/// # Safety
/// `weights` holds `src0.ne[1]` rows of `src0.ne[0]` values at stride `nb[1]`, `y` a Q8_K row
/// of as many values, `out` room for the column.
unsafe fn dot_rows(src0: &Tensor, weights: *const u8, r: i64, y: *const u8, out: *mut u8) {
    let Some(dot) = type_traits_cpu(src0.type_).vec_dot else {
        crate::ggml_abort!("IQ panel product: no dot product for {}", src0.type_.name())
    };
    for j in r..r + PANEL_ROWS {
        // SAFETY: passed on from the caller; `j` is a row of `src0`.
        unsafe {
            let x = weights.add(j as usize * src0.nb[1]);
            dot(src0.ne[0] as c_int, out.cast::<f32>().add(j as usize), 0, x.cast(), 0, y.cast(), 0, 1);
        }
    }
}
