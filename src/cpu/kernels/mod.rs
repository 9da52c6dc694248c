//! The CPU kernels: one file per family of ops, each with its scalar reference and, where it
//! matters, a SIMD path chosen once at start-up ([`features`](crate::cpu::features)).
//!
//! Every kernel has the signature `fn(params: &ComputeParams, dst: TensorPtr)`: it computes
//! thread `params.ith`'s share of `dst` from `dst.src[..]` and `dst.op_params`.

pub mod attention;
pub mod conv;
pub mod copy;
pub mod custom;
pub mod deepseek;
pub mod dot;
pub mod elementwise;
pub mod expf;
pub mod ggml_repack;
pub mod glu;
pub mod hadamard;
pub mod loss;
pub mod matmul;
pub mod norm;
pub mod pool;
pub mod prefetch;
pub mod reduce;
pub mod rope;
pub mod rows;
pub mod sequence;
pub mod simd;
pub mod softmax;
pub mod solve;
pub mod sort;
pub mod ssm;
#[cfg(test)]
pub(crate) mod testing;
pub mod unary;
pub mod window;
#[cfg(target_arch = "x86_64")]
pub mod x86;

// ---------------------------------------------------------------------------------------------
// Dispatch: which kernel computes an op, whether it can, and the scratch it needs.

use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::{ComputeParams, Kernel};
use crate::cpu::plan::OpTable;
use crate::quants::iq_grids::Grid;

/// A kernel: thread `params.ith`'s share of a node.
type RunFn = fn(&ComputeParams, TensorPtr);
/// Whether a kernel covers a node's types and layout.
type SupportsFn = fn(&Tensor) -> bool;
/// Scratch bytes a node needs when run by `n_tasks` threads.
type WorkSizeFn = fn(&Tensor, usize) -> usize;
/// How many of a team of `n_threads` a node keeps busy, from 1 to `n_threads`.
type TasksFn = fn(&Tensor, usize) -> usize;

/// How many threads the planner gives a node of the op: ggml 0.25.1's split of the ops into
/// single-threaded and parallel ones, which sizes the team and the scratch.
#[derive(Clone, Copy)]
enum Tasks {
    /// One thread, whatever the team.
    One,
    /// The whole team.
    All,
    /// What the node itself allows (its rows, its heads, its sub-op, a user's request).
    Node(TasksFn),
}

/// What the dispatch knows about one op.
#[derive(Clone, Copy)]
struct Entry {
    run: RunFn,
    supports: SupportsFn,
    work_size: Option<WorkSizeFn>,
    tasks: Tasks,
}

impl Entry {
    /// An op whose kernel splits its work over the whole team and needs no scratch.
    const fn new(run: RunFn, supports: SupportsFn) -> Entry {
        Entry { run, supports, work_size: None, tasks: Tasks::All }
    }

    const fn scratch(self, work_size: WorkSizeFn) -> Entry {
        Entry { work_size: Some(work_size), ..self }
    }

    /// The reference runs this op on one thread.
    const fn single(self) -> Entry {
        Entry { tasks: Tasks::One, ..self }
    }

    const fn tasks(self, tasks: TasksFn) -> Entry {
        Entry { tasks: Tasks::Node(tasks), ..self }
    }
}

/// The kernel family entry for `op`, or None for ops this build cannot compute.
fn entry(op: Op) -> Option<Entry> {
    Some(match op {
        Op::DUP => Entry::new(copy::dup, copy::copy_supports).scratch(copy::copy_work_size),
        Op::CPY => Entry::new(copy::cpy, copy::copy_supports).scratch(copy::copy_work_size),
        Op::CONT => Entry::new(copy::cont, copy::copy_supports).scratch(copy::copy_work_size),
        Op::SET => Entry::new(copy::set, copy::set_supports).single(),
        Op::GET_ROWS => Entry::new(rows::get_rows, rows::get_rows_supports).single(),
        Op::GET_ROWS_BACK => Entry::new(rows::get_rows_back, rows::get_rows_back_supports).single(),
        Op::SET_ROWS => Entry::new(rows::set_rows, rows::set_rows_supports).scratch(set_rows_work_size).single(),
        Op::DIAG => Entry::new(rows::diag, rows::diag_supports).single(),
        Op::DIAG_MASK_INF => Entry::new(softmax::diag_mask_inf, softmax::diag_mask_supports),
        Op::DIAG_MASK_ZERO => Entry::new(softmax::diag_mask_zero, softmax::diag_mask_supports),

        Op::ADD => Entry::new(elementwise::add, elementwise::binary_supports).scratch(elementwise::add_work_size),
        Op::SUB => Entry::new(elementwise::sub, elementwise::binary_supports).single(),
        Op::MUL => Entry::new(elementwise::mul, elementwise::binary_supports),
        Op::DIV => Entry::new(elementwise::div, elementwise::binary_supports),
        Op::ADD1 => Entry::new(elementwise::add1, elementwise::add1_supports).scratch(elementwise::add_work_size),
        Op::ACC => Entry::new(elementwise::acc, elementwise::acc_supports).scratch(acc_work_size),
        Op::ADD_ID => Entry::new(elementwise::add_id, elementwise::add_id_supports).scratch(elementwise::add_work_size),
        Op::SCALE => Entry::new(elementwise::scale, elementwise::scale_supports).single(),
        Op::CLAMP => Entry::new(elementwise::clamp, elementwise::map_supports).single(),
        Op::LEAKY_RELU => Entry::new(elementwise::leaky_relu, elementwise::map_supports).single(),
        Op::FILL => Entry::new(elementwise::fill, elementwise::fill_supports),
        Op::TRI => Entry::new(elementwise::tri, elementwise::tri_supports),
        Op::SILU_BACK => Entry::new(elementwise::silu_back, elementwise::silu_back_supports),

        Op::SQR => Entry::new(unary::sqr, unary::math_supports).single(),
        Op::SQRT => Entry::new(unary::sqrt, unary::math_supports).single(),
        Op::LOG => Entry::new(unary::log, unary::math_supports).single(),
        Op::SIN => Entry::new(unary::sin, unary::math_supports).single(),
        Op::COS => Entry::new(unary::cos, unary::math_supports).single(),
        Op::UNARY => Entry::new(unary::unary, unary::unary_supports).tasks(unary::unary_tasks),
        Op::GLU => Entry::new(glu::glu, glu::glu_supports).tasks(glu::glu_tasks),

        Op::NORM => Entry::new(norm::norm, norm::norm_supports),
        Op::RMS_NORM => Entry::new(norm::rms_norm, norm::rms_norm_supports),
        Op::RMS_NORM_BACK => Entry::new(norm::rms_norm_back, norm::rms_norm_back_supports),
        Op::GROUP_NORM => Entry::new(norm::group_norm, norm::group_norm_supports),
        Op::L2_NORM => Entry::new(norm::l2_norm, norm::l2_norm_supports),

        Op::MUL_MAT => Entry::new(matmul::mul_mat, matmul::mul_mat_supports).scratch(matmul::mul_mat_work_size),
        Op::MUL_MAT_ID => {
            Entry::new(matmul::mul_mat_id, matmul::mul_mat_id_supports).scratch(matmul::mul_mat_id_work_size)
        }
        Op::OUT_PROD => Entry::new(matmul::out_prod, matmul::out_prod_supports).scratch(matmul::out_prod_work_size),

        Op::SOFT_MAX => Entry::new(softmax::soft_max, softmax::soft_max_supports)
            .scratch(softmax::soft_max_work_size)
            .tasks(softmax::soft_max_tasks),
        Op::SOFT_MAX_BACK => Entry::new(softmax::soft_max_back, softmax::soft_max_back_supports),
        Op::ROPE => Entry::new(rope::rope, rope::rope_supports).scratch(rope::rope_work_size),
        Op::ROPE_BACK => Entry::new(rope::rope_back, rope::rope_back_supports).scratch(rope::rope_work_size),
        Op::FLASH_ATTN_EXT => Entry::new(attention::flash_attn_ext, attention::flash_attn_ext_supports)
            .scratch(attention::flash_attn_ext_work_size),
        Op::FLASH_ATTN_BACK => Entry::new(attention::flash_attn_back, attention::flash_attn_back_supports)
            .scratch(attention::flash_attn_back_work_size),

        Op::IM2COL => Entry::new(conv::im2col, conv::im2col_supports),
        Op::IM2COL_BACK => Entry::new(conv::im2col_back, conv::im2col_back_supports),
        Op::IM2COL_3D => Entry::new(conv::im2col_3d, conv::im2col_3d_supports),
        Op::COL2IM_1D => Entry::new(conv::col2im_1d, conv::col2im_1d_supports),
        Op::CONV_TRANSPOSE_1D => Entry::new(conv::conv_transpose_1d, conv::conv_transpose_1d_supports)
            .scratch(conv::conv_transpose_1d_work_size),
        Op::CONV_TRANSPOSE_2D => Entry::new(conv::conv_transpose_2d, conv::conv_transpose_2d_supports)
            .scratch(conv::conv_transpose_2d_work_size),
        Op::CONV_2D => Entry::new(conv::conv_2d, conv::conv_2d_supports).scratch(conv::conv_2d_work_size),
        Op::CONV_3D => Entry::new(conv::conv_3d, conv::conv_3d_supports).scratch(conv::conv_3d_work_size),
        Op::CONV_2D_DW => Entry::new(conv::conv_2d_dw, conv::conv_2d_dw_supports),

        Op::POOL_1D => Entry::new(pool::pool_1d, pool::pool_supports).single(),
        Op::POOL_2D => Entry::new(pool::pool_2d, pool::pool_supports).single(),
        Op::POOL_2D_BACK => Entry::new(pool::pool_2d_back, pool::pool_2d_back_supports).single(),
        Op::UPSCALE => Entry::new(pool::upscale, pool::upscale_supports),
        Op::PAD => Entry::new(pool::pad, pool::pad_supports),
        Op::PAD_REFLECT_1D => Entry::new(pool::pad_reflect_1d, pool::pad_reflect_1d_supports),
        Op::ROLL => Entry::new(pool::roll, pool::roll_supports),

        Op::SUM => Entry::new(reduce::sum, reduce::sum_supports).single(),
        Op::SUM_ROWS => Entry::new(reduce::sum_rows, reduce::sum_rows_supports).single(),
        Op::MEAN => Entry::new(reduce::mean, reduce::sum_rows_supports).single(),
        Op::ARGMAX => Entry::new(reduce::argmax, reduce::argmax_supports).single(),
        Op::COUNT_EQUAL => {
            Entry::new(reduce::count_equal, reduce::count_equal_supports).scratch(reduce::count_equal_work_size)
        }
        Op::CUMSUM => Entry::new(reduce::cumsum, reduce::cumsum_supports),
        Op::REPEAT => Entry::new(reduce::repeat, reduce::repeat_supports).single(),
        Op::REPEAT_BACK => Entry::new(reduce::repeat_back, reduce::repeat_back_supports).single(),
        Op::CONCAT => Entry::new(reduce::concat, reduce::concat_supports),

        Op::ARANGE => Entry::new(sequence::arange, sequence::arange_supports),
        Op::TIMESTEP_EMBEDDING => Entry::new(sequence::timestep_embedding, sequence::timestep_embedding_supports),
        Op::ARGSORT => Entry::new(sort::argsort, sort::argsort_supports),
        Op::TOP_K => Entry::new(sort::top_k, sort::top_k_supports).scratch(sort::top_k_work_size),
        Op::WIN_PART => Entry::new(window::win_part, window::win_supports).single(),
        Op::WIN_UNPART => Entry::new(window::win_unpart, window::win_supports).single(),
        Op::GET_REL_POS => Entry::new(window::get_rel_pos, window::get_rel_pos_supports).single(),
        Op::ADD_REL_POS => Entry::new(window::add_rel_pos, window::add_rel_pos_supports),
        Op::SOLVE_TRI => Entry::new(solve::solve_tri, solve::solve_tri_supports),
        Op::LIGHTNING_INDEXER => Entry::new(deepseek::lightning_indexer, deepseek::lightning_indexer_supports)
            .scratch(deepseek::lightning_indexer_work_size),
        Op::DSV4_HC_COMB => Entry::new(deepseek::dsv4_hc_comb, deepseek::dsv4_hc_supports),
        Op::DSV4_HC_PRE => Entry::new(deepseek::dsv4_hc_pre, deepseek::dsv4_hc_supports),
        Op::DSV4_HC_POST => Entry::new(deepseek::dsv4_hc_post, deepseek::dsv4_hc_supports),

        Op::SSM_CONV => Entry::new(ssm::ssm_conv, ssm::ssm_conv_supports),
        Op::SSM_SCAN => Entry::new(ssm::ssm_scan, ssm::ssm_scan_supports),
        Op::RWKV_WKV6 => Entry::new(ssm::rwkv_wkv6, ssm::rwkv_wkv6_supports).tasks(ssm::per_head_tasks),
        Op::RWKV_WKV7 => Entry::new(ssm::rwkv_wkv7, ssm::rwkv_wkv7_supports).tasks(ssm::per_head_tasks),
        Op::GATED_LINEAR_ATTN => {
            Entry::new(ssm::gated_linear_attn, ssm::gated_linear_attn_supports).tasks(ssm::per_head_tasks)
        }
        Op::GATED_DELTA_NET => {
            Entry::new(ssm::gated_delta_net, ssm::gated_delta_net_supports).scratch(ssm::gated_delta_net_work_size)
        }

        Op::MAP_CUSTOM1 => Entry::new(custom::map_custom1, custom::custom_supports).tasks(custom::custom_tasks),
        Op::MAP_CUSTOM2 => Entry::new(custom::map_custom2, custom::custom_supports).tasks(custom::custom_tasks),
        Op::MAP_CUSTOM3 => Entry::new(custom::map_custom3, custom::custom_supports).tasks(custom::custom_tasks),
        Op::CUSTOM => Entry::new(custom::custom, custom::custom_supports).tasks(custom::custom_tasks),

        Op::CROSS_ENTROPY_LOSS => Entry::new(loss::cross_entropy_loss, loss::cross_entropy_loss_supports)
            .scratch(loss::cross_entropy_loss_work_size),
        Op::CROSS_ENTROPY_LOSS_BACK => {
            Entry::new(loss::cross_entropy_loss_back, loss::cross_entropy_loss_back_supports)
        }
        Op::OPT_STEP_ADAMW => Entry::new(loss::opt_step_adamw, loss::opt_step_adamw_supports),
        Op::OPT_STEP_SGD => Entry::new(loss::opt_step_sgd, loss::opt_step_sgd_supports),

        _ => return None,
    })
}

/// The reference's SET_ROWS scratch: a row of floats per task when F16 rows are written to
/// another type.
fn set_rows_work_size(node: &Tensor, n_tasks: usize) -> usize {
    match node.source(0) {
        Some(s) if s.type_ == Type::F16 && node.type_ != Type::F16 => 4 * extent(node.ne[0]) * n_tasks,
        _ => 0,
    }
}

/// The reference's ACC scratch: a row of `src[1]` as floats per task for a block-quantized
/// destination.
fn acc_work_size(node: &Tensor, n_tasks: usize) -> usize {
    match (node.source(0), node.source(1)) {
        (Some(a), Some(b)) if a.type_.is_quantized() => 4 * extent(b.ne[0]) * n_tasks,
        _ => 0,
    }
}

fn extent(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// `GGML_HINT_SRC0_IS_HADAMARD`, which MUL_MAT keeps in `op_params[1]`.
const HINT_SRC0_IS_HADAMARD: i32 = 1;

/// The limits ggml 0.25.1's CPU device states in its `supports_op`, whatever kernels exist.
fn reference_allows(node: &Tensor) -> bool {
    let src_type = |i: usize| node.source(i).map(|s| s.type_);
    match node.op {
        // no quantizer for destination types that quantize onto a lattice grid (that needs the
        // tables of ggml_quantize_init)
        Op::CPY | Op::SET_ROWS => Grid::of(node.type_).is_none(),
        Op::MUL_MAT => {
            let (Some(t0), Some(t1)) = (src_type(0), src_type(1)) else { return false };
            if node.op_param_i32(1) == HINT_SRC0_IS_HADAMARD && t0 == Type::F32 && node.type_ == Type::F32 {
                return t1 == Type::F32 || t1 == Type::F16;
            }
            t1 == Type::F32 || t1 == dot::vec_dot_type(t0)
        }
        Op::SOFT_MAX_BACK => {
            src_type(0) == Some(Type::F32) && src_type(1) == Some(Type::F32) && node.op_param_f32(1) == 0.0
        }
        Op::IM2COL_BACK => src_type(0) == Some(Type::F32) && matches!(src_type(1), Some(Type::F32 | Type::F16)),
        Op::GET_ROWS_BACK => matches!(src_type(0), Some(Type::F32 | Type::F16)),
        Op::OUT_PROD => match (node.source(0), node.source(1)) {
            (Some(a), Some(b)) => {
                let weights_ok = a.type_ == Type::F32
                    || ((a.type_ == Type::F16 || a.type_.is_quantized()) && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3]);
                weights_ok && b.type_ == Type::F32 && node.type_ == Type::F32
            }
            _ => false,
        },
        Op::CONV_2D => node.source(0).is_some_and(Tensor::is_contiguous),
        Op::SSM_SCAN => node.op_param_i32(0) == 1 || node.source(3).is_some_and(|s| s.ne[0] == 1),
        _ => true,
    }
}

/// Whether this build's CPU kernels compute `node`: the view ops always (they compute
/// nothing), other ops when a kernel exists for them, covers the node's types and layout,
/// and ggml's CPU backend would accept the node too.
pub fn supports_op(node: &Tensor) -> bool {
    if node.op.is_empty() {
        return true;
    }
    match entry(node.op) {
        Some(e) => reference_allows(node) && (e.supports)(node),
        None => false,
    }
}

/// `op`'s name for a message, "unknown" for a value that is no op of ggml's.
fn op_label(op: Op) -> &'static str {
    if (0..Op::COUNT).contains(&op.0) { op.name() } else { "unknown" }
}

/// ggml 0.25.1's task count for `node` in a team of `n_threads`: 1 for a node without
/// elements and for the ops that compute nothing, its entry's count for the others. Aborts
/// for an op that does not exist, as the reference's planner does.
pub fn n_tasks(node: &Tensor, n_threads: usize) -> usize {
    if node.is_empty() || node.op.is_empty() {
        return 1;
    }
    match entry(node.op).map(|e| e.tasks) {
        Some(Tasks::One) => 1,
        Some(Tasks::All) => n_threads,
        Some(Tasks::Node(tasks)) => tasks(node, n_threads),
        None => crate::ggml_abort!("op not implemented: {}", op_label(node.op)),
    }
}

/// Runs `op`'s kernel for thread `params.ith` on `node`, which must record `op` (ggml-cpu's
/// per-op entry points copy a node under another op before calling this); false when this
/// build has no kernel for `op`.
pub fn run_op(op: Op, params: &ComputeParams, node: TensorPtr) -> bool {
    crate::ggml_assert!(node.op == op, "kernel of {} run on a {} node", op.name(), node.op.name());
    entry(op).map(|e| (e.run)(params, node)).is_some()
}

/// The CPU kernels as the planner and the compute driver see them.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuKernels;

impl Kernel for CpuKernels {
    fn compute(&self, params: &ComputeParams, node: TensorPtr) -> Status {
        match entry(node.op) {
            Some(e) => {
                (e.run)(params, node);
                Status::SUCCESS
            }
            None => {
                if params.ith == 0 {
                    let name = op_label(node.op);
                    crate::log_error!(
                        "ggml_graph_compute: op {} (node '{}') has no CPU kernel in this build\n",
                        name,
                        node.name()
                    );
                }
                Status::FAILED
            }
        }
    }
}

impl OpTable for CpuKernels {
    fn n_tasks(&self, node: &Tensor, n_threads: usize) -> usize {
        n_tasks(node, n_threads)
    }

    fn work_size(&self, node: &Tensor, n_tasks: usize, _n_threads: usize) -> usize {
        entry(node.op).and_then(|e| e.work_size).map_or(0, |size| size(node, n_tasks))
    }
}

#[cfg(test)]
mod dispatch_tests {
    use super::*;
    use crate::core::context::Context;
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::ops::{elementwise, matmul as mm, softmax as sm};
    use crate::core::threadpool_params::ThreadpoolParams;
    use crate::cpu::kernels::testing::ctx;
    use crate::cpu::plan::plan;
    use crate::cpu::threadpool::Threadpool;

    fn filled(c: &mut Context, ne: &[i64], mut f: impl FnMut(usize) -> f32) -> TensorPtr {
        let t = c.new_tensor(Type::F32, ne);
        values_mut(t).iter_mut().enumerate().for_each(|(i, v)| *v = f(i));
        t
    }

    fn values_mut<'a>(t: TensorPtr) -> &'a mut [f32] {
        // SAFETY: the test's F32 tensors are contiguous and allocated by their context.
        unsafe { std::slice::from_raw_parts_mut(t.data.cast::<f32>(), t.nelements() as usize) }
    }

    /// Plans and computes `out`'s graph with `n_threads` on a pool, with scratch as planned.
    fn run(c: &mut Context, out: TensorPtr, n_threads: i32) -> Status {
        let g = new_graph_custom(c, 64, false);
        g.get_mut().build_forward_expand(out);
        let pool = Threadpool::new(&ThreadpoolParams::new(n_threads));
        let mut p = plan(&g, n_threads, Some(&pool), &CpuKernels);
        let mut work = vec![0u8; p.work_size];
        p.work_data = if work.is_empty() { std::ptr::null_mut() } else { work.as_mut_ptr() };
        // SAFETY: the plan names a live pool and `work_size` bytes of scratch.
        unsafe { crate::cpu::compute::compute(&g, &p, &CpuKernels) }
    }

    #[test]
    fn add_mul_mat_and_soft_max_on_one_and_two_threads() {
        for n_threads in [1, 2] {
            let mut c = ctx();
            // a: 3 rows of 4; b: 2 rows of 4
            let a = filled(&mut c, &[4, 3], |i| i as f32 * 0.5 - 1.0);
            let b = filled(&mut c, &[4, 2], |i| 1.0 + i as f32 * 0.25);
            let sum = elementwise::add(&mut c, a, a);
            let prod = mm::mul_mat(&mut c, sum, b); // [3, 2]
            let soft = sm::soft_max(&mut c, prod);
            assert_eq!(run(&mut c, soft, n_threads), Status::SUCCESS, "{n_threads} threads");

            let (av, bv) = (values_mut(a).to_vec(), values_mut(b).to_vec());
            let sums: Vec<f32> = av.iter().map(|x| 2.0 * x).collect();
            assert_eq!(values_mut(sum), &sums[..]);
            let mut expected = vec![0f32; 6];
            for j in 0..2 {
                for i in 0..3 {
                    expected[j * 3 + i] = (0..4).map(|k| sums[i * 4 + k] * bv[j * 4 + k]).sum();
                }
            }
            for (got, want) in values_mut(prod).iter().zip(&expected) {
                assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "mul_mat: {got} vs {want}");
            }
            for (row, got_row) in expected.chunks(3).zip(values_mut(soft).chunks(3)) {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let total: f32 = row.iter().map(|x| (x - max).exp()).sum();
                for (x, got) in row.iter().zip(got_row) {
                    let want = (x - max).exp() / total;
                    assert!((got - want).abs() < 1e-5, "soft_max: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn supports_follows_the_kernels_and_the_reference_limits() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 3]);
        let b = c.new_tensor(Type::F32, &[4, 2]);
        let p = mm::mul_mat(&mut c, a, b);
        assert!(supports_op(&p));
        // F16 activations for F32 weights: refused by the reference unless hinted
        let h = c.new_tensor(Type::F16, &[4, 2]);
        let ph = mm::mul_mat(&mut c, a, h);
        assert!(!supports_op(&ph));
        // views always, ops without a kernel never
        let v = c.new_tensor(Type::F32, &[4]);
        v.get_mut().op = Op::VIEW;
        assert!(supports_op(&v));
        let unknown = c.new_tensor(Type::F32, &[4]);
        unknown.get_mut().op = Op(Op::COUNT);
        assert!(!supports_op(&unknown));
    }

    /// One task for every node, known op or not.
    struct OneTask;

    impl OpTable for OneTask {
        fn n_tasks(&self, _node: &Tensor, _n_threads: usize) -> usize {
            1
        }
    }

    #[test]
    fn an_op_without_a_kernel_fails_the_computation() {
        let mut c = ctx();
        let a = filled(&mut c, &[4], |i| i as f32);
        let t = c.new_tensor(Type::F32, &[4]);
        t.get_mut().op = Op(Op::COUNT);
        t.get_mut().src[0] = a.as_ptr();
        let g = new_graph_custom(&mut c, 8, false);
        g.get_mut().build_forward_expand(t);
        let p = plan(&g, 2, None, &OneTask);
        // SAFETY: no pool, no scratch, no callback.
        assert_eq!(unsafe { crate::cpu::compute::compute(&g, &p, &CpuKernels) }, Status::FAILED);
    }

    #[test]
    fn every_op_has_an_entry() {
        // The entry is the one source of what the CPU runs: the planner, the supports answer
        // and the compute dispatch all read it, so an op of ggml's that neither computes
        // nothing (a view, or a leaf) nor has an entry would be missing from all three.
        let missing: Vec<&str> =
            (0..Op::COUNT).map(Op).filter(|&op| !op.is_empty() && entry(op).is_none()).map(Op::name).collect();
        assert!(missing.is_empty(), "ops without a CPU entry: {missing:?}");
    }

    #[test]
    fn task_counts_follow_the_reference() {
        use crate::core::op::UnaryOp;
        use crate::core::ops::custom::N_TASKS_MAX;
        let mut c = ctx();
        let a = filled(&mut c, &[8, 3], |i| i as f32);
        let node = |c: &mut Context, op: Op, param: i32| {
            let t = c.new_tensor(Type::F32, &[8, 3]);
            t.get_mut().op = op;
            t.get_mut().op_params[0] = param;
            t.get_mut().src[0] = a.as_ptr();
            t
        };
        let tasks = |t: TensorPtr, n: usize| CpuKernels.n_tasks(&t, n);
        assert_eq!(tasks(node(&mut c, Op::ADD, 0), 8), 8);
        assert_eq!(tasks(node(&mut c, Op::SQR, 0), 8), 1);
        assert_eq!(tasks(node(&mut c, Op::VIEW, 0), 8), 1);
        // soft_max has three rows: three tasks at most
        assert_eq!(tasks(node(&mut c, Op::SOFT_MAX, 0), 8), 3);
        assert_eq!(tasks(node(&mut c, Op::UNARY, UnaryOp::SILU.0), 8), 8);
        assert_eq!(tasks(node(&mut c, Op::UNARY, UnaryOp::ABS.0), 8), 1);

        // the custom ops take the tasks they ask for, at most the team
        let custom = node(&mut c, Op::CUSTOM, 0);
        custom.get_mut().op_params[2] = 3;
        assert_eq!((tasks(custom, 8), tasks(custom, 2)), (3, 2));
        custom.get_mut().op_params[2] = N_TASKS_MAX;
        assert_eq!(tasks(custom, 8), 8);

        // a node without elements runs on one thread, whatever its op
        let empty = c.new_tensor(Type::F32, &[0]);
        empty.get_mut().op = Op::MUL_MAT;
        assert_eq!(tasks(empty, 8), 1);
    }

    /// Builds one node of each of many ops over the same inputs.
    fn many_ops(c: &mut Context) -> Vec<TensorPtr> {
        use crate::core::op::UnaryOp;
        use crate::core::ops::{norm as nm, pool as pl, reduce, rows, shape, sort as st, unary as un};
        let mut seed = 0x2545_f491_u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32
        };
        let x = filled(c, &[16, 6, 2], |_| 0.1 + 2.0 * next());
        let y = filled(c, &[16, 6, 2], |_| 0.5 + next());
        let row = filled(c, &[16], |i| i as f32 * 0.1);
        let scalar = filled(c, &[1], |_| 0.25);
        let idx = c.new_tensor(Type::I32, &[4]);
        // SAFETY: a freshly allocated I32 tensor of 4 elements.
        unsafe { std::slice::from_raw_parts_mut(idx.data.cast::<i32>(), 4) }.copy_from_slice(&[5, 0, 3, 3]);
        let x2 = shape::reshape_2d(c, x, 16, 12);
        let xt = shape::transpose(c, x);
        vec![
            elementwise::add(c, x, y),
            elementwise::sub(c, x, y),
            elementwise::mul(c, x, row),
            elementwise::div(c, x, y),
            elementwise::sqr(c, x),
            elementwise::sqrt(c, x),
            elementwise::log(c, x),
            elementwise::sin(c, x),
            elementwise::cos(c, x),
            elementwise::scale(c, x, 0.75),
            elementwise::clamp(c, x, 0.5, 1.5),
            elementwise::add1(c, x, scalar),
            reduce::sum(c, x),
            reduce::sum_rows(c, x),
            reduce::mean(c, x),
            reduce::argmax(c, x2),
            reduce::cumsum(c, x),
            reduce::repeat(c, row, x),
            reduce::concat(c, x, y, 1),
            un::unary(c, x, UnaryOp::GELU),
            un::unary(c, x, UnaryOp::SILU),
            un::leaky_relu(c, x, 0.1, false),
            nm::norm(c, x, 1e-5),
            nm::rms_norm(c, x, 1e-6),
            sm::soft_max(c, x),
            sm::diag_mask_inf(c, x, 2),
            rows::get_rows(c, x2, idx),
            shape::cast(c, x, Type::F16),
            shape::cont(c, xt),
            pl::pad(c, x, 1, 2, 0, 0),
            st::argsort(c, x, st::SortOrder::DESC),
            mm::mul_mat(c, x, y),
        ]
    }

    #[test]
    fn one_thread_and_three_agree() {
        let mut c = ctx();
        let outs = many_ops(&mut c);
        let g = new_graph_custom(&mut c, 256, false);
        for &o in &outs {
            g.get_mut().build_forward_expand(o);
        }
        let snapshot = |t: TensorPtr| -> Vec<u8> {
            // SAFETY: every output is a contiguous tensor allocated by the context.
            unsafe { std::slice::from_raw_parts(t.data.cast::<u8>(), t.nbytes()) }.to_vec()
        };
        let mut results = Vec::new();
        for n_threads in [1, 3] {
            let pool = Threadpool::new(&ThreadpoolParams::new(n_threads));
            let mut p = plan(&g, n_threads, Some(&pool), &CpuKernels);
            let mut work = vec![0u8; p.work_size];
            p.work_data = work.as_mut_ptr();
            for &o in &outs {
                // SAFETY: as in `snapshot`; poisons the previous run's results.
                unsafe { std::ptr::write_bytes(o.data.cast::<u8>(), 0xff, o.nbytes()) };
            }
            // SAFETY: the plan names a live pool and `work_size` bytes of scratch.
            assert_eq!(unsafe { crate::cpu::compute::compute(&g, &p, &CpuKernels) }, Status::SUCCESS);
            results.push(outs.iter().map(|&o| snapshot(o)).collect::<Vec<_>>());
        }
        // the element-wise ones against their formulas (inputs are the sources)
        type Formula = fn(f32, f32) -> f32;
        let formulas: [Formula; 12] = [
            |a, b| a + b,
            |a, b| a - b,
            |a, b| a * b,
            |a, b| a / b,
            |a, _| a * a,
            |a, _| a.sqrt(),
            |a, _| a.ln(),
            |a, _| a.sin(),
            |a, _| a.cos(),
            |a, _| a * 0.75,
            |a, _| a.clamp(0.5, 1.5),
            |a, _| a + 0.25,
        ];
        for (k, f) in formulas.iter().enumerate() {
            let o = outs[k];
            let a = values_mut(o.src(0).expect("first operand"));
            let b = o.src(1).map(|b| values_mut(b).to_vec()).unwrap_or_default();
            for (i, got) in values_mut(o).iter().enumerate() {
                let want = f(a[i], if b.is_empty() { 0.0 } else { b[i % b.len()] });
                assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "{}: {got} vs {want}", o.op.name());
            }
        }
        let total: f32 = values_mut(outs[0].src(0).expect("x")).iter().sum();
        assert!((values_mut(outs[12])[0] - total).abs() <= 1e-4 * total, "sum");

        for (k, o) in outs.iter().enumerate() {
            let (one, three) = (&results[0][k], &results[1][k]);
            if o.type_ == Type::F32 {
                let as_f32 = |b: &[u8]| -> Vec<f32> {
                    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
                };
                for (a, b) in as_f32(one).iter().zip(as_f32(three)) {
                    let close = (a - b).abs() <= 1e-5 * a.abs().max(1.0) || (a.is_infinite() && a == &b);
                    assert!(close, "{} (node {k}): {a} with one thread, {b} with three", o.op.name());
                }
            } else {
                assert_eq!(one, three, "{} (node {k})", o.op.name());
            }
        }
    }

    #[test]
    fn the_plan_sizes_scratch_from_the_families() {
        let mut c = ctx();
        let a = c.new_tensor(Type::Q8_0, &[64, 4]);
        let b = c.new_tensor(Type::F32, &[64, 3]);
        let p = mm::mul_mat(&mut c, a, b);
        // the activations converted to Q8_0
        assert_eq!(CpuKernels.work_size(&p, 2, 2), Type::Q8_0.row_size(64 * 3));
        let s = sm::soft_max(&mut c, b);
        assert_eq!(CpuKernels.work_size(&s, 3, 4), 4 * 64 * 3);
    }
}
