//! Backward graph construction (`ggml_build_backward_expand`): walks the forward nodes from
//! last to first and, for each node whose gradient is known, adds the ops that compute its
//! sources' gradients (reverse-mode differentiation, one rule per op).
//!
//! Gradients are kept in the graph's `grads` table, indexed by hash slot; tensors that have a
//! gradient accumulator (`grad_accs`, given by the caller or made for each loss) get their
//! contributions added in place. Which ops are created, in which order and with which names
//! ("grad for %s") follows ggml 0.25.1, since optimizers and tests look gradients up by them.

use super::cgraph::Graph;
use crate::core::context::Context;
use crate::core::op::{GluOp, Op, UnaryOp};
use crate::core::ops::{
    conv, elementwise as ew, glu, loss, matmul, norm, pool, reduce, rope, rows, shape, softmax, unary,
};
use crate::core::tensor::{MAX_DIMS, MAX_SRC, TensorPtr, flag};
use crate::core::types::Type;

impl Graph {
    /// The gradient in hash slot `slot`.
    fn grad_at(&self, slot: usize) -> Option<TensorPtr> {
        self.grad_slots()[slot]
    }

    /// The tensor in hash slot `slot`, which must be occupied.
    fn key_at(&self, slot: usize) -> TensorPtr {
        match self.visited_hash_set.key(slot) {
            Some(t) => t,
            None => crate::ggml_abort!("hash slot {} holds no tensor", slot),
        }
    }

    /// Stores `grad` as the gradient of the tensor in `slot`, names it after that tensor and
    /// adds it to the graph.
    fn store_grad(&mut self, slot: usize, grad: TensorPtr) {
        self.grad_slots_mut()[slot] = Some(grad);
        let src = self.key_at(slot);
        grad.get_mut().set_name_bytes(&[b"grad for ".as_slice(), src.name_bytes()].concat());
        self.build_forward_expand(grad);
    }

    /// Whether the tensor in `slot` accumulates its gradient in place.
    fn accumulates(&self, slot: usize) -> bool {
        self.grad_acc_slots()[slot].is_some()
    }

    /// Adds `t` to the gradient in `slot` (`ggml_add_or_set`).
    fn add_or_set(&mut self, ctx: &mut Context, slot: usize, t: TensorPtr) {
        let grad = match self.grad_at(slot) {
            Some(g) => ew::add_impl(ctx, g, t, self.accumulates(slot)),
            None => t,
        };
        self.store_grad(slot, grad);
    }

    /// Adds `t` into the part of the gradient in `slot` described by strides and offset
    /// (`ggml_acc_or_set`); a missing gradient starts as zeros.
    #[allow(clippy::too_many_arguments)]
    fn acc_or_set(
        &mut self,
        ctx: &mut Context,
        slot: usize,
        t: TensorPtr,
        nb1: usize,
        nb2: usize,
        nb3: usize,
        offset: usize,
    ) {
        let grad = match self.grad_at(slot) {
            Some(g) => ew::acc_impl(ctx, g, t, nb1, nb2, nb3, offset, self.accumulates(slot)),
            None => {
                // Like ggml, zeros are made by scaling the source (NaN if it holds inf/NaN).
                let zero = ew::scale(ctx, self.key_at(slot), 0.0);
                ew::acc_impl(ctx, zero, t, nb1, nb2, nb3, offset, false)
            }
        };
        self.store_grad(slot, grad);
    }

    /// Adds the scalar `t` to every element of the gradient in `slot` (`ggml_add1_or_set`).
    fn add1_or_set(&mut self, ctx: &mut Context, slot: usize, t: TensorPtr) {
        let grad = match self.grad_at(slot) {
            Some(g) => ew::add1_impl(ctx, g, t, self.accumulates(slot)),
            None => reduce::repeat(ctx, t, self.key_at(slot)),
        };
        self.store_grad(slot, grad);
    }

    /// Subtracts `t` from the gradient in `slot` (`ggml_sub_or_set`).
    fn sub_or_set(&mut self, ctx: &mut Context, slot: usize, t: TensorPtr) {
        let grad = match self.grad_at(slot) {
            Some(g) => ew::sub_impl(ctx, g, t, self.accumulates(slot)),
            None => unary::neg(ctx, t),
        };
        self.store_grad(slot, grad);
    }

    /// `ggml_build_backward_expand`: adds the gradient computation of every node that depends
    /// on a trainable parameter and leads to a loss. `grad_accs`, if given, holds per forward
    /// node an accumulator to use as that node's gradient.
    pub fn build_backward_expand(&mut self, ctx: &mut Context, grad_accs: Option<&[Option<TensorPtr>]>) {
        crate::ggml_assert!(self.n_nodes > 0, "backward pass of an empty graph");
        crate::ggml_assert!(self.has_grads(), "graph was made without gradient tables");
        let n_forward = self.node_slots().len();

        self.grad_slots_mut().fill(None);
        self.grad_acc_slots_mut().fill(None);
        let mut needed = vec![false; self.visited_hash_set.size];

        let any_params = self.nodes().any(|n| n.flags & flag::PARAM != 0);
        let any_loss = self.nodes().any(|n| n.flags & flag::LOSS != 0);
        crate::ggml_assert!(
            any_params,
            "ggml_build_backward_expand: no trainable parameters found, did you forget to call ggml_set_param?"
        );
        crate::ggml_assert!(
            any_loss,
            "ggml_build_backward_expand: no training loss found, did you forget to call ggml_set_loss?"
        );

        for i in 0..n_forward {
            let node = self.node(i);
            if node.type_ == Type::I32 {
                continue;
            }
            let mut needs_grad = node.flags & (flag::PARAM | flag::LOSS) != 0;
            let mut ignore = [false; MAX_SRC];
            match node.op {
                // Sources that do not influence the output's gradient.
                Op::IM2COL | Op::IM2COL_BACK => ignore[0] = true,
                Op::UNARY => {
                    let uop = unary::get_unary_op(&node);
                    if uop == UnaryOp::SGN || uop == UnaryOp::STEP {
                        ignore[0] = true;
                    }
                }
                Op::CPY | Op::GET_ROWS | Op::GET_ROWS_BACK | Op::ROPE => ignore[1] = true,
                _ => {}
            }
            for (j, &skip) in ignore.iter().enumerate() {
                let Some(src) = node.src(j) else { continue };
                let src_needed = self.visited_hash_set.find(src.as_ptr()).is_some_and(|s| needed[s]);
                if skip || !src_needed {
                    continue;
                }
                crate::ggml_assert!(
                    src.type_ == Type::F32 || src.type_ == Type::F16,
                    "gradients flow only through F32 and F16 tensors, not {}",
                    src.type_.name()
                );
                needs_grad = true;
                break;
            }
            if !needs_grad {
                continue;
            }

            crate::ggml_assert!(
                node.view_src.is_null()
                    || matches!(node.op, Op::CPY | Op::SET_ROWS | Op::VIEW | Op::RESHAPE | Op::PERMUTE | Op::TRANSPOSE),
                "in-place operations are not supported in the backward pass ({})",
                node.op.name()
            );

            let slot = self.node_slot_in_hash(node);
            let given = grad_accs.and_then(|accs| accs.get(i).copied().flatten());
            if let Some(acc) = given {
                self.grad_acc_slots_mut()[slot] = Some(acc);
                self.grad_slots_mut()[slot] = Some(acc);
            } else if node.flags & flag::LOSS != 0 {
                // Every loss gets an accumulator: ggml_graph_reset seeds it with 1.
                let acc = ctx.new_tensor(Type::F32, &node.ne[..MAX_DIMS]);
                self.grad_acc_slots_mut()[slot] = Some(acc);
                self.grad_slots_mut()[slot] = Some(acc);
            }
            needed[slot] = true;
        }

        for i in (0..n_forward).rev() {
            self.compute_backward(ctx, i, &needed);
        }
    }

    /// Adds the gradients of node `i`'s sources (`ggml_compute_backward`).
    fn compute_backward(&mut self, ctx: &mut Context, i: usize, needed: &[bool]) {
        let tensor = self.node(i);
        let Some(grad) = self.grad(tensor.as_ptr()) else { return };

        let srcs = [tensor.src(0), tensor.src(1), tensor.src(2)];
        let slots = srcs.map(|s| s.and_then(|s| self.visited_hash_set.find_existing(s.as_ptr())));
        let wants = slots.map(|s| s.is_some_and(|s| needed[s]));
        // A source that needs a gradient is present and has a slot.
        let src = |k: usize| match srcs[k] {
            Some(s) => s,
            None => crate::ggml_abort!("{} node has no source {}", tensor.op.name(), k),
        };
        let slot = |k: usize| match slots[k] {
            Some(s) => s,
            None => crate::ggml_abort!("source {} of a {} node is not in the graph", k, tensor.op.name()),
        };

        match tensor.op {
            Op::DUP => {
                if wants[0] {
                    self.add_or_set(ctx, slot(0), grad);
                }
            }
            Op::ADD => {
                if wants[0] {
                    self.add_or_set(ctx, slot(0), grad);
                }
                if wants[1] {
                    let t = if src(0).same_shape(&src(1)) { grad } else { reduce::repeat_back(ctx, grad, src(1)) };
                    self.add_or_set(ctx, slot(1), t);
                }
            }
            Op::ADD1 => {
                if wants[0] {
                    self.add_or_set(ctx, slot(0), grad);
                }
                if wants[1] {
                    let t = reduce::mean(ctx, grad);
                    self.add_or_set(ctx, slot(1), t);
                }
            }
            Op::ACC => {
                if wants[0] {
                    self.add_or_set(ctx, slot(0), grad);
                }
                if wants[1] {
                    let [nb1, nb2, nb3, offset] = view_params(&tensor);
                    let s1 = src(1);
                    let view = shape::view_4d(ctx, grad, s1.ne[0], s1.ne[1], s1.ne[2], s1.ne[3], nb1, nb2, nb3, offset);
                    let c = shape::cont(ctx, view);
                    let t = shape::reshape(ctx, c, s1);
                    self.add_or_set(ctx, slot(1), t);
                }
            }
            Op::SUB => {
                if wants[0] {
                    self.add_or_set(ctx, slot(0), grad);
                }
                if wants[1] {
                    self.sub_or_set(ctx, slot(1), grad);
                }
            }
            Op::MUL => {
                if wants[0] {
                    let t = ew::mul(ctx, grad, src(1));
                    self.add_or_set(ctx, slot(0), t);
                }
                if wants[1] {
                    let mut t = ew::mul(ctx, src(0), grad);
                    if !src(0).same_shape(&src(1)) {
                        t = reduce::repeat_back(ctx, t, src(1));
                    }
                    self.add_or_set(ctx, slot(1), t);
                }
            }
            Op::DIV => {
                if wants[0] {
                    let t = ew::div(ctx, grad, src(1));
                    self.add_or_set(ctx, slot(0), t);
                }
                if wants[1] {
                    let q = ew::div(ctx, tensor, src(1));
                    let t = ew::mul(ctx, grad, q);
                    self.sub_or_set(ctx, slot(1), t);
                }
            }
            Op::SQR => {
                if wants[0] {
                    let m = ew::mul(ctx, src(0), grad);
                    let t = ew::scale(ctx, m, 2.0);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::SQRT => {
                if wants[0] {
                    let d = ew::div(ctx, grad, tensor);
                    let t = ew::scale(ctx, d, 0.5);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::LOG => {
                if wants[0] {
                    let t = ew::div(ctx, grad, src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::SIN => {
                if wants[0] {
                    let c = ew::cos(ctx, src(0));
                    let t = ew::mul(ctx, grad, c);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::COS => {
                if wants[0] {
                    let s = ew::sin(ctx, src(0));
                    let t = ew::mul(ctx, grad, s);
                    self.sub_or_set(ctx, slot(0), t);
                }
            }
            Op::SUM => {
                if wants[0] {
                    self.add1_or_set(ctx, slot(0), grad);
                }
            }
            Op::SUM_ROWS => {
                if wants[0] {
                    let t = reduce::repeat(ctx, grad, src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::MEAN => {
                if wants[0] {
                    let t = ew::scale_impl(ctx, grad, 1.0 / src(0).ne[0] as f32, 0.0, false);
                    self.add1_or_set(ctx, slot(0), t);
                }
            }
            Op::REPEAT => {
                if wants[0] {
                    let t = reduce::repeat_back(ctx, grad, src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::REPEAT_BACK => {
                if wants[0] {
                    let t = reduce::repeat(ctx, grad, src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::RMS_NORM => {
                if wants[0] {
                    let eps = tensor.op_param_f32(0);
                    let t = norm::rms_norm_back(ctx, grad, src(0), eps);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::MUL_MAT => self.mul_mat_backward(ctx, grad, [src(0), src(1)], [slots[0], slots[1]], wants),
            Op::SCALE => {
                if wants[0] {
                    let s = tensor.op_param_f32(0);
                    let t = ew::scale_impl(ctx, grad, s, 0.0, false);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::SET => {
                let [nb1, nb2, nb3, offset] = view_params(&tensor);
                let mut grad_view = None;
                if wants[0] || wants[1] {
                    crate::ggml_assert!(src(0).type_ == tensor.type_, "SET: source and result types differ");
                    let g0 = self.grad_at(slot(0));
                    crate::ggml_assert!(g0.is_none_or(|g| g.type_ == grad.type_), "SET: gradient types differ");
                    let g1 = self.grad_at(slot(1));
                    crate::ggml_assert!(
                        g1.is_none_or(|g| !wants[1] || g.type_ == grad.type_),
                        "SET: gradient types differ"
                    );
                    let s1 = src(1);
                    grad_view =
                        Some(shape::view_4d(ctx, grad, s1.ne[0], s1.ne[1], s1.ne[2], s1.ne[3], nb1, nb2, nb3, offset));
                }
                if let Some(view) = grad_view {
                    if wants[0] {
                        let neg = unary::neg(ctx, view);
                        let t = ew::acc_impl(ctx, grad, neg, nb1, nb2, nb3, offset, false);
                        self.add_or_set(ctx, slot(0), t);
                    }
                    if wants[1] {
                        let c = shape::cont(ctx, view);
                        let t = shape::reshape(ctx, c, src(1));
                        self.add_or_set(ctx, slot(1), t);
                    }
                }
            }
            Op::CPY => {
                // The copy's target is overwritten: only the copied values get a gradient.
                if wants[0] {
                    let t = shape::reshape(ctx, grad, src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::CONT => {
                if wants[0] {
                    let s0 = src(0);
                    crate::ggml_assert!(
                        self.grad_at(slot(0)).is_none_or(|g| g.is_contiguous()),
                        "CONT: existing gradient must be contiguous"
                    );
                    crate::ggml_assert!(grad.is_contiguous(), "CONT: gradient must be contiguous");
                    crate::ggml_assert!(tensor.nelements() == s0.nelements(), "CONT: element counts differ");
                    let t = if tensor.same_shape(&s0) { grad } else { shape::reshape(ctx, grad, s0) };
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::RESHAPE => {
                if wants[0] {
                    let g = if grad.is_contiguous() { grad } else { shape::cont(ctx, grad) };
                    let t = shape::reshape(ctx, g, src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::VIEW => {
                if wants[0] {
                    let mut offset = view_offset(&tensor);
                    let [mut nb1, mut nb2, mut nb3] = [tensor.nb[1], tensor.nb[2], tensor.nb[3]];
                    let s0 = src(0);
                    if let Some(g) = self.grad_at(slot(0)).filter(|g| g.type_ != s0.type_) {
                        // The gradient (usually F32) has another element size than the source.
                        let ng = g.element_size();
                        let n0 = s0.element_size();
                        for v in [offset, nb1, nb2, nb3] {
                            crate::ggml_assert!(v % n0 == 0, "VIEW: stride or offset {} not a multiple of {}", v, n0);
                        }
                        offset = offset / n0 * ng;
                        nb1 = nb1 / n0 * ng;
                        nb2 = nb2 / n0 * ng;
                        nb3 = nb3 / n0 * ng;
                    }
                    self.acc_or_set(ctx, slot(0), grad, nb1, nb2, nb3, offset);
                }
            }
            Op::PERMUTE => {
                if wants[0] {
                    let mut back = [0i32; 4];
                    for (i, &axis) in tensor.op_params[..4].iter().enumerate() {
                        back[(axis & 3) as usize] = i as i32;
                    }
                    let t = shape::permute(ctx, grad, back[0], back[1], back[2], back[3]);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::TRANSPOSE => {
                if wants[0] {
                    let t = shape::transpose(ctx, grad);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::GET_ROWS => {
                // Row indices have no gradient.
                if wants[0] {
                    let t = rows::get_rows_back(ctx, grad, src(1), src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::DIAG_MASK_INF | Op::DIAG_MASK_ZERO => {
                if wants[0] {
                    let n_past = tensor.op_param_i32(0);
                    let t = softmax::diag_mask_zero_impl(ctx, grad, n_past, false);
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            Op::SOFT_MAX => {
                if wants[0] {
                    let scale = tensor.op_param_f32(0);
                    let max_bias = tensor.op_param_f32(1);
                    let t = softmax::soft_max_ext_back(ctx, grad, tensor, scale, max_bias);
                    self.add_or_set(ctx, slot(0), t);
                }
                crate::ggml_assert!(!wants[1], "backward pass for softmax mask not implemented");
            }
            Op::ROPE => {
                if wants[0] {
                    let (params, sections) = rope::RopeParams::from_op_params(&tensor);
                    let positions = src(1);
                    let t = if grad.ne[2] == positions.ne[0] {
                        rope::rope_ext_back(ctx, grad, positions, srcs[2], &params)
                    } else {
                        rope::rope_multi_back(ctx, grad, positions, srcs[2], &params, Some(&sections))
                    };
                    self.add_or_set(ctx, slot(0), t);
                }
                crate::ggml_assert!(!wants[2], "gradients for freq factors not implemented");
            }
            Op::IM2COL => {
                if wants[1] {
                    let p = |k: usize| tensor.op_param_i32(k);
                    let ne = src(1).ne;
                    let t = conv::im2col_back(ctx, grad, src(0), &ne, p(0), p(1), p(2), p(3), p(4), p(5), p(6) == 1);
                    self.add_or_set(ctx, slot(1), t);
                }
            }
            Op::POOL_2D => {
                if wants[0] {
                    let p = |k: usize| tensor.op_param_i32(k);
                    let t = pool::pool_2d_back(
                        ctx,
                        grad,
                        src(0),
                        pool::PoolOp(p(0)),
                        p(1),
                        p(2),
                        p(3),
                        p(4),
                        p(5) as f32,
                        p(6) as f32,
                    );
                    self.add_or_set(ctx, slot(0), t);
                }
            }
            // WIN_PART and WIN_UNPART share the unary rules in ggml (and are rejected there).
            Op::WIN_PART | Op::WIN_UNPART | Op::UNARY => {
                self.unary_backward(ctx, tensor, grad, src(0), slots[0], wants[0]);
            }
            Op::CROSS_ENTROPY_LOSS => {
                if wants[0] {
                    let t = loss::cross_entropy_loss_back(ctx, grad, src(0), src(1));
                    self.add_or_set(ctx, slot(0), t);
                }
                crate::ggml_assert!(!wants[1], "backward pass for labels not implemented");
            }
            Op::GLU => {
                let gop = glu::get_glu_op(&tensor);
                if gop != GluOp::SWIGLU {
                    crate::ggml_abort!("unsupported glu op for backward pass: {}", gop.name());
                }
                if wants[0] {
                    let Some(gate) = srcs[1] else {
                        crate::ggml_abort!("backward pass only implemented for split swiglu")
                    };
                    let m = ew::mul(ctx, grad, gate);
                    let t = unary::silu_back(ctx, m, src(0));
                    self.add_or_set(ctx, slot(0), t);
                }
                if wants[1] {
                    let s = unary::silu(ctx, src(0));
                    let t = ew::mul(ctx, s, grad);
                    self.add_or_set(ctx, slot(1), t);
                }
            }
            Op::NONE => {}
            op => crate::ggml_abort!("ggml_compute_backward: unsupported ggml op for backward pass: {}", op.name()),
        }

        for (k, _) in wants.iter().enumerate().filter(|&(_, &w)| w) {
            let g = self.grad_at(slot(k));
            crate::ggml_assert!(
                g.is_some_and(|g| g.same_shape(&src(k))),
                "gradient of source {} of {} has the wrong shape",
                k,
                tensor.op.name()
            );
        }
    }

    /// Gradients of `a @ b` (`MUL_MAT`, with `a` broadcast over `b`'s batch dimensions).
    fn mul_mat_backward(
        &mut self,
        ctx: &mut Context,
        grad: TensorPtr,
        [src0, src1]: [TensorPtr; 2],
        slots: [Option<usize>; 2],
        wants: [bool; 3],
    ) {
        if let (true, Some(slot0)) = (wants[0], slots[0]) {
            crate::ggml_assert!(grad.ne[2] == src1.ne[2], "MUL_MAT gradient batch mismatch");
            crate::ggml_assert!(grad.ne[3] == src1.ne[3], "MUL_MAT gradient batch mismatch");
            let mut t = matmul::out_prod(ctx, src1, grad);
            if !t.same_shape(&src0) {
                crate::ggml_assert!(t.ne[0] == src0.ne[0], "MUL_MAT broadcast gradient shape");
                crate::ggml_assert!(t.ne[1] == src0.ne[1], "MUL_MAT broadcast gradient shape");
                crate::ggml_assert!(t.ne[3] == 1, "MUL_MAT broadcast gradient shape");
                // Sum the broadcast copies: view them as a fourth dimension and reduce it.
                let nr2 = t.ne[2] / src0.ne[2];
                let nb2 = t.nb[2] * nr2 as usize;
                let nb3 = t.nb[2];
                t = shape::view_4d(ctx, t, src0.ne[0], src0.ne[1], src0.ne[2], nr2, t.nb[1], nb2, nb3, 0);
                t = reduce::repeat_back(ctx, t, src0);
            }
            self.add_or_set(ctx, slot0, t);
        }
        if let (true, Some(slot1)) = (wants[1], slots[1]) {
            // out_prod with the (small) transposed gradient instead of transposing src0.
            let gt = shape::transpose(ctx, grad);
            let t = matmul::out_prod(ctx, src0, gt);
            self.add_or_set(ctx, slot1, t);
        }
    }

    /// Gradients of the element-wise UNARY functions that have one.
    fn unary_backward(
        &mut self,
        ctx: &mut Context,
        tensor: TensorPtr,
        grad: TensorPtr,
        src0: TensorPtr,
        slot0: Option<usize>,
        wants: bool,
    ) {
        let uop = unary::get_unary_op(&tensor);
        let slot = || match slot0 {
            Some(s) => s,
            None => crate::ggml_abort!("source of a UNARY node is not in the graph"),
        };
        match uop {
            UnaryOp::SGN | UnaryOp::STEP => {}
            UnaryOp::ABS if wants => {
                let s = unary::sgn(ctx, src0);
                let t = ew::mul(ctx, s, grad);
                self.add_or_set(ctx, slot(), t);
            }
            UnaryOp::NEG if wants => self.sub_or_set(ctx, slot(), grad),
            UnaryOp::RELU if wants => {
                let s = unary::step(ctx, src0);
                let t = ew::mul(ctx, s, grad);
                self.add_or_set(ctx, slot(), t);
            }
            UnaryOp::SILU if wants => {
                let t = unary::silu_back(ctx, grad, src0);
                self.add_or_set(ctx, slot(), t);
            }
            UnaryOp::EXP if wants => {
                let t = ew::mul(ctx, tensor, grad);
                self.add_or_set(ctx, slot(), t);
            }
            UnaryOp::EXPM1 if wants => {
                let e = unary::exp(ctx, src0);
                let t = ew::mul(ctx, grad, e);
                self.add_or_set(ctx, slot(), t);
            }
            UnaryOp::SOFTPLUS if wants => {
                let s = unary::sigmoid(ctx, src0);
                let t = ew::mul(ctx, grad, s);
                self.add_or_set(ctx, slot(), t);
            }
            UnaryOp::ABS
            | UnaryOp::NEG
            | UnaryOp::RELU
            | UnaryOp::SILU
            | UnaryOp::EXP
            | UnaryOp::EXPM1
            | UnaryOp::SOFTPLUS => {}
            other => {
                crate::ggml_abort!("ggml_compute_backward: unsupported unary op for backward pass: {}", other.name())
            }
        }
    }
}

/// The strides and offset an ACC or SET node keeps in its first four op params, widened as
/// ggml widens them (sign-extending the stored `int32_t`s).
fn view_params(t: &TensorPtr) -> [usize; 4] {
    [0, 1, 2, 3].map(|i| t.op_param_i32(i) as isize as usize)
}

/// The byte offset a VIEW node keeps in its first eight op param bytes.
fn view_offset(t: &TensorPtr) -> usize {
    let lo = t.op_params[0] as u32 as u64;
    let hi = t.op_params[1] as u32 as u64;
    let bytes = if cfg!(target_endian = "little") { lo | (hi << 32) } else { (lo << 32) | hi };
    bytes as usize
}

#[cfg(test)]
mod tests {
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph::new_graph_custom;
    use crate::core::op::Op;
    use crate::core::ops::{elementwise as ew, matmul, reduce, unary};
    use crate::core::tensor::flag;
    use crate::core::types::Type;

    #[test]
    fn gradients_reach_the_parameters() {
        let mut c = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let w = c.new_tensor(Type::F32, &[4, 3]);
        let x = c.new_tensor(Type::F32, &[4, 2]);
        w.get_mut().flags |= flag::PARAM;
        w.get_mut().set_name("w");
        let y = matmul::mul_mat(&mut c, w, x);
        let r = unary::relu(&mut c, y);
        let s = ew::sqr(&mut c, r);
        let l = reduce::sum(&mut c, s);
        l.get_mut().flags |= flag::LOSS;

        let g = new_graph_custom(&mut c, 64, true);
        g.get_mut().build_forward_expand(l);
        let n_forward = g.n_nodes;
        g.get_mut().build_backward_expand(&mut c, None);

        assert!(g.n_nodes > n_forward);
        let gw = g.grad(w.as_ptr()).expect("w has a gradient");
        assert_eq!(gw.ne, w.ne);
        assert_eq!(gw.name(), "grad for w");
        assert_eq!(gw.op, Op::OUT_PROD);
        assert!(g.grad(x.as_ptr()).is_none());
        let gl = g.grad_acc(l.as_ptr()).expect("the loss has an accumulator");
        assert_eq!(gl.ne, [1, 1, 1, 1]);
        assert_eq!(g.tensor_named(b"grad for w"), Some(gw));
    }
}
