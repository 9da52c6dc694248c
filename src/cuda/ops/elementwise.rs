//! ADD, SUB, MUL and DIV with broadcasting; the unary functions; the gated linear units
//! (kernels/elementwise.cu).

use super::{Queue, data, data_or_null, grid_for, is_float, launch, shape, src};
use crate::core::op::{GluOp, Op, UnaryOp};
use crate::core::tensor::Tensor;
use crate::cuda::gpu::{GpuResult, Kernel};

const BINARY: Kernel = Kernel { source: "elementwise", name: "binary" };
const UNARY: Kernel = Kernel { source: "elementwise", name: "unary" };
const GLU: Kernel = Kernel { source: "elementwise", name: "glu" };

pub fn supports_binary(node: &Tensor) -> bool {
    let (a, b) = (src(node, 0), src(node, 1));
    is_float(a.type_) && is_float(b.type_) && is_float(node.type_) && b.can_repeat_to(a) && a.same_shape(node)
}

pub fn binary(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let (a, b) = (src(node, 0), src(node, 1));
    let op: i32 = match node.op {
        Op::ADD => 0,
        Op::SUB => 1,
        Op::MUL => 2,
        _ => 3,
    };
    launch!(q, BINARY, grid_for(node.nelements()), super::ELEMENT_THREADS;
        op, shape(a), data(a), a.type_.0, shape(b), data(b), b.type_.0, shape(node), data(node), node.type_.0)
}

/// The kernel's code for a unary function and its two parameters, when it has the function.
fn unary_code(node: &Tensor) -> Option<(i32, f32, f32)> {
    let p = |i| node.op_param_f32(i);
    Some(match node.op {
        Op::UNARY => {
            let f = UnaryOp(node.op_param_i32(0));
            // XIELU takes four parameters the kernel does not have
            if f.0 < 0 || f.0 >= UnaryOp::COUNT || f == UnaryOp::XIELU {
                return None;
            }
            (f.0, 0.0, 0.0)
        }
        Op::SQR => (100, 0.0, 0.0),
        Op::SQRT => (101, 0.0, 0.0),
        Op::LOG => (102, 0.0, 0.0),
        Op::SIN => (103, 0.0, 0.0),
        Op::COS => (104, 0.0, 0.0),
        Op::SCALE => (105, p(0), p(1)),
        Op::CLAMP => (106, p(0), p(1)),
        Op::LEAKY_RELU => (107, p(0), 0.0),
        _ => return None,
    })
}

pub fn supports_unary(node: &Tensor) -> bool {
    let a = src(node, 0);
    unary_code(node).is_some() && is_float(a.type_) && is_float(node.type_) && a.same_shape(node)
}

pub fn unary(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let a = src(node, 0);
    let Some((f, p0, p1)) = unary_code(node) else { unreachable!("supports_unary checked the function") };
    launch!(q, UNARY, grid_for(node.nelements()), super::ELEMENT_THREADS;
        f, p0, p1, shape(a), data(a), a.type_.0, shape(node), data(node), node.type_.0)
}

pub fn supports_glu(node: &Tensor) -> bool {
    let a = src(node, 0);
    let f = node.op_param_i32(0);
    let one_type = node.source(1).is_none_or(|b| b.type_ == a.type_ && b.same_shape(node));
    (0..GluOp::COUNT).contains(&f) && is_float(a.type_) && node.type_ == a.type_ && one_type
}

pub fn glu(q: &Queue, node: &Tensor) -> GpuResult<()> {
    let a = src(node, 0);
    let b = node.source(1);
    let (f, swapped, alpha, limit) =
        (node.op_param_i32(0), node.op_param_i32(1), node.op_param_f32(2), node.op_param_f32(3));
    let sb = b.map_or(shape(a), shape);
    launch!(q, GLU, grid_for(node.nelements()), super::ELEMENT_THREADS;
        f, swapped, alpha, limit, shape(a), data(a), sb, data_or_null(b), a.type_.0, shape(node), data(node))
}
