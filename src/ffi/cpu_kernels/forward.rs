//! `ggml_compute_forward_*`: one op's share for one thread of a team, as ggml-cpu's graph
//! driver calls its kernels. Each entry point computes its op from `dst`'s sources into
//! `dst`, whatever op `dst` records (as ggml's do: `ggml_compute_forward_relu` on any node
//! computes a ReLU); a node recording another op is computed through a copy of its header
//! that records this one, so the kernels, which read the op and its parameters from the node,
//! see what they compute. The scratch in the params must be what our planner sizes for the
//! node (`ggml_graph_plan`).

use std::ptr::NonNull;

use super::params::{CComputeParams, with_params};
use crate::core::op::{Op, UnaryOp};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::cpu::kernels::{hadamard, norm, run_op};
use crate::ffi::handle::handle;

/// What an entry point computes.
#[derive(Clone, Copy)]
enum Computes {
    /// An op, under the node's own parameters.
    Op(Op),
    /// A unary op: UNARY with the op in `op_params[0]`, the node's other parameters kept.
    Unary(UnaryOp),
    /// The unary or gated op the node itself records (UNARY or GLU), which it must record.
    Recorded(Op),
}

/// Runs `what` for thread `params.ith` on `dst`.
///
/// # Safety
/// ggml-cpu's contract for these entry points: `params` as [`with_params`] requires, `dst` a
/// live tensor whose sources and data are allocated and shaped for the op.
unsafe fn forward(params: *const CComputeParams, dst: *mut Tensor, export: &'static str, what: Computes) {
    // SAFETY: passed on from the caller.
    let node: TensorPtr = unsafe { handle(dst, export) };
    let (op, unary) = match what {
        Computes::Op(op) => (op, None),
        Computes::Unary(u) => (Op::UNARY, Some(u.0)),
        Computes::Recorded(op) => {
            if node.op != op {
                crate::ggml_abort!("{}: the node records {}, not {}", export, node.op.name(), op.name());
            }
            (op, None)
        }
    };
    // SAFETY: passed on from the caller.
    unsafe {
        with_params(params, export, |p| {
            let ran = if node.op == op && unary.is_none_or(|u| node.op_params[0] == u) {
                run_op(op, p, node)
            } else {
                // A header copy on this thread's stack: same sources, data and parameters.
                // SAFETY: `Tensor` is plain C data; the copy is only read by the kernel, and
                // the data it points to is the node's.
                let mut copy = std::ptr::read(node.as_ptr());
                copy.op = op;
                if let Some(u) = unary {
                    copy.op_params[0] = u;
                }
                run_op(op, p, TensorPtr::new(NonNull::from(&mut copy)))
            };
            if !ran {
                crate::ggml_abort!("{}: this build has no CPU kernel for {}", export, op.name());
            }
        })
    }
}

/// Exports `ggml_compute_forward_NAME(params, dst)` for each `NAME => what`.
macro_rules! forward_entry_points {
    ($($name:ident => $what:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(params: *const CComputeParams, dst: *mut Tensor) {
            // SAFETY: the C caller's contract (see `forward`).
            unsafe { forward(params, dst, stringify!($name), $what) }
        }
    )*};
}

use Computes::{Op as O, Recorded, Unary as U};

forward_entry_points! {
    ggml_compute_forward_dup => O(Op::DUP);
    ggml_compute_forward_cpy => O(Op::CPY);
    ggml_compute_forward_cont => O(Op::CONT);
    ggml_compute_forward_set => O(Op::SET);
    ggml_compute_forward_get_rows => O(Op::GET_ROWS);
    ggml_compute_forward_get_rows_back => O(Op::GET_ROWS_BACK);
    ggml_compute_forward_set_rows => O(Op::SET_ROWS);
    ggml_compute_forward_diag => O(Op::DIAG);
    ggml_compute_forward_diag_mask_inf => O(Op::DIAG_MASK_INF);
    ggml_compute_forward_diag_mask_zero => O(Op::DIAG_MASK_ZERO);

    ggml_compute_forward_add => O(Op::ADD);
    // ggml splits ADD by whether the first operand is quantized; ours takes both
    ggml_compute_forward_add_non_quantized => O(Op::ADD);
    ggml_compute_forward_sub => O(Op::SUB);
    ggml_compute_forward_mul => O(Op::MUL);
    ggml_compute_forward_div => O(Op::DIV);
    ggml_compute_forward_add1 => O(Op::ADD1);
    ggml_compute_forward_acc => O(Op::ACC);
    ggml_compute_forward_add_id => O(Op::ADD_ID);
    ggml_compute_forward_scale => O(Op::SCALE);
    ggml_compute_forward_clamp => O(Op::CLAMP);
    ggml_compute_forward_leaky_relu => O(Op::LEAKY_RELU);
    ggml_compute_forward_fill => O(Op::FILL);
    ggml_compute_forward_tri => O(Op::TRI);
    ggml_compute_forward_silu_back => O(Op::SILU_BACK);

    ggml_compute_forward_sqr => O(Op::SQR);
    ggml_compute_forward_sqrt => O(Op::SQRT);
    ggml_compute_forward_log => O(Op::LOG);
    ggml_compute_forward_sin => O(Op::SIN);
    ggml_compute_forward_cos => O(Op::COS);
    ggml_compute_forward_unary => Recorded(Op::UNARY);
    ggml_compute_forward_glu => Recorded(Op::GLU);
    ggml_compute_forward_abs => U(UnaryOp::ABS);
    ggml_compute_forward_sgn => U(UnaryOp::SGN);
    ggml_compute_forward_neg => U(UnaryOp::NEG);
    ggml_compute_forward_step => U(UnaryOp::STEP);
    ggml_compute_forward_tanh => U(UnaryOp::TANH);
    ggml_compute_forward_elu => U(UnaryOp::ELU);
    ggml_compute_forward_relu => U(UnaryOp::RELU);
    ggml_compute_forward_sigmoid => U(UnaryOp::SIGMOID);
    ggml_compute_forward_hardsigmoid => U(UnaryOp::HARDSIGMOID);
    ggml_compute_forward_exp => U(UnaryOp::EXP);
    ggml_compute_forward_hardswish => U(UnaryOp::HARDSWISH);
    ggml_compute_forward_expm1 => U(UnaryOp::EXPM1);
    ggml_compute_forward_softplus => U(UnaryOp::SOFTPLUS);
    ggml_compute_forward_floor => U(UnaryOp::FLOOR);
    ggml_compute_forward_ceil => U(UnaryOp::CEIL);
    ggml_compute_forward_round => U(UnaryOp::ROUND);
    ggml_compute_forward_trunc => U(UnaryOp::TRUNC);
    ggml_compute_forward_xielu => U(UnaryOp::XIELU);

    ggml_compute_forward_norm => O(Op::NORM);
    ggml_compute_forward_rms_norm => O(Op::RMS_NORM);
    ggml_compute_forward_rms_norm_back => O(Op::RMS_NORM_BACK);
    ggml_compute_forward_group_norm => O(Op::GROUP_NORM);
    ggml_compute_forward_l2_norm => O(Op::L2_NORM);

    ggml_compute_forward_mul_mat => O(Op::MUL_MAT);
    ggml_compute_forward_out_prod => O(Op::OUT_PROD);

    ggml_compute_forward_soft_max => O(Op::SOFT_MAX);
    ggml_compute_forward_soft_max_ext_back => O(Op::SOFT_MAX_BACK);
    ggml_compute_forward_rope => O(Op::ROPE);
    ggml_compute_forward_rope_back => O(Op::ROPE_BACK);
    ggml_compute_forward_flash_attn_ext => O(Op::FLASH_ATTN_EXT);

    ggml_compute_forward_im2col => O(Op::IM2COL);
    ggml_compute_forward_im2col_back_f32 => O(Op::IM2COL_BACK);
    ggml_compute_forward_im2col_3d => O(Op::IM2COL_3D);
    ggml_compute_forward_col2im_1d => O(Op::COL2IM_1D);
    ggml_compute_forward_conv_transpose_1d => O(Op::CONV_TRANSPOSE_1D);
    ggml_compute_forward_conv_transpose_2d => O(Op::CONV_TRANSPOSE_2D);
    ggml_compute_forward_conv_2d => O(Op::CONV_2D);
    ggml_compute_forward_conv_3d => O(Op::CONV_3D);
    ggml_compute_forward_conv_2d_dw => O(Op::CONV_2D_DW);

    ggml_compute_forward_pool_1d => O(Op::POOL_1D);
    ggml_compute_forward_pool_2d => O(Op::POOL_2D);
    ggml_compute_forward_pool_2d_back => O(Op::POOL_2D_BACK);
    ggml_compute_forward_upscale => O(Op::UPSCALE);
    ggml_compute_forward_pad => O(Op::PAD);
    ggml_compute_forward_pad_reflect_1d => O(Op::PAD_REFLECT_1D);
    ggml_compute_forward_roll => O(Op::ROLL);

    ggml_compute_forward_sum => O(Op::SUM);
    ggml_compute_forward_sum_rows => O(Op::SUM_ROWS);
    ggml_compute_forward_mean => O(Op::MEAN);
    ggml_compute_forward_argmax => O(Op::ARGMAX);
    ggml_compute_forward_count_equal => O(Op::COUNT_EQUAL);
    ggml_compute_forward_cumsum => O(Op::CUMSUM);
    ggml_compute_forward_repeat => O(Op::REPEAT);
    ggml_compute_forward_repeat_back => O(Op::REPEAT_BACK);
    ggml_compute_forward_concat => O(Op::CONCAT);

    ggml_compute_forward_arange => O(Op::ARANGE);
    ggml_compute_forward_timestep_embedding => O(Op::TIMESTEP_EMBEDDING);
    ggml_compute_forward_argsort => O(Op::ARGSORT);
    ggml_compute_forward_top_k => O(Op::TOP_K);
    ggml_compute_forward_win_part => O(Op::WIN_PART);
    ggml_compute_forward_win_unpart => O(Op::WIN_UNPART);
    ggml_compute_forward_get_rel_pos => O(Op::GET_REL_POS);
    ggml_compute_forward_add_rel_pos => O(Op::ADD_REL_POS);
    ggml_compute_forward_solve_tri => O(Op::SOLVE_TRI);
    ggml_compute_forward_lightning_indexer => O(Op::LIGHTNING_INDEXER);
    ggml_compute_forward_dsv4_hc_comb => O(Op::DSV4_HC_COMB);
    ggml_compute_forward_dsv4_hc_pre => O(Op::DSV4_HC_PRE);
    ggml_compute_forward_dsv4_hc_post => O(Op::DSV4_HC_POST);

    ggml_compute_forward_ssm_conv => O(Op::SSM_CONV);
    ggml_compute_forward_ssm_scan => O(Op::SSM_SCAN);
    ggml_compute_forward_rwkv_wkv6 => O(Op::RWKV_WKV6);
    ggml_compute_forward_rwkv_wkv7 => O(Op::RWKV_WKV7);
    ggml_compute_forward_gla => O(Op::GATED_LINEAR_ATTN);
    ggml_compute_forward_gated_delta_net => O(Op::GATED_DELTA_NET);

    ggml_compute_forward_map_custom1 => O(Op::MAP_CUSTOM1);
    ggml_compute_forward_map_custom2 => O(Op::MAP_CUSTOM2);
    ggml_compute_forward_map_custom3 => O(Op::MAP_CUSTOM3);
    ggml_compute_forward_custom => O(Op::CUSTOM);

    ggml_compute_forward_cross_entropy_loss => O(Op::CROSS_ENTROPY_LOSS);
    ggml_compute_forward_cross_entropy_loss_back => O(Op::CROSS_ENTROPY_LOSS_BACK);
    ggml_compute_forward_opt_step_adamw => O(Op::OPT_STEP_ADAMW);
    ggml_compute_forward_opt_step_sgd => O(Op::OPT_STEP_SGD);
}

/// FLASH_ATTN_BACK, with the causal mask given as an argument (ggml's driver reads it from
/// `op_params[0]`, where our kernel looks for it).
#[unsafe(no_mangle)]
pub extern "C" fn ggml_compute_forward_flash_attn_back(params: *const CComputeParams, masked: bool, dst: *mut Tensor) {
    let export = "ggml_compute_forward_flash_attn_back";
    // SAFETY: the C caller's contract (see `forward`).
    let node: TensorPtr = unsafe { handle(dst, export) };
    // SAFETY: `Tensor` is plain C data; the copy records the mask and is only read.
    let mut copy = unsafe { std::ptr::read(node.as_ptr()) };
    copy.op = Op::FLASH_ATTN_BACK;
    copy.op_params[0] = i32::from(masked);
    // SAFETY: as `forward`: the copy points to the node's sources and data.
    unsafe { forward(params, &mut copy, export, O(Op::FLASH_ATTN_BACK)) }
}

/// The transform ggml runs for a MUL_MAT hinted with a Hadamard first operand.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_compute_forward_fwht(params: *const CComputeParams, dst: *mut Tensor) {
    let export = "ggml_compute_forward_fwht";
    // SAFETY: the C caller's contract (see `forward`).
    unsafe {
        let node: TensorPtr = handle(dst, export);
        with_params(params, export, |p| hadamard::fwht(p, node));
    }
}

/// RMS_NORM and the MUL that takes it, in one pass into the MUL's result.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_compute_forward_rms_norm_mul_fused(
    params: *const CComputeParams,
    dst_rms_norm: *mut Tensor,
    dst_mul: *mut Tensor,
) {
    let export = "ggml_compute_forward_rms_norm_mul_fused";
    // SAFETY: the C caller's contract (see `forward`), for both nodes.
    unsafe {
        let (rms_norm, mul): (TensorPtr, TensorPtr) = (handle(dst_rms_norm, export), handle(dst_mul, export));
        with_params(params, export, |p| norm::rms_norm_mul(p, rms_norm, mul));
    }
}
