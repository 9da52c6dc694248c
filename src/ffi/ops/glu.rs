//! C entry points of the gated linear units (`core::ops::glu`).

use crate::core::context::Context;
use crate::core::op::GluOp;
use crate::core::ops::glu;
use crate::core::tensor::Tensor;
use crate::ffi::handle::{arg, opt_arg};
use crate::ffi::static_c_str;
use std::ffi::c_char;

export_one_operand! {
    ggml_reglu => glu::reglu;
    ggml_reglu_swapped => glu::reglu_swapped;
    ggml_geglu => glu::geglu;
    ggml_geglu_swapped => glu::geglu_swapped;
    ggml_swiglu => glu::swiglu;
    ggml_swiglu_swapped => glu::swiglu_swapped;
    ggml_geglu_erf => glu::geglu_erf;
    ggml_geglu_erf_swapped => glu::geglu_erf_swapped;
    ggml_geglu_quick => glu::geglu_quick;
    ggml_geglu_quick_swapped => glu::geglu_quick_swapped;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_glu(ctx: *mut Context, a: *mut Tensor, op: GluOp, swapped: bool) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { glu::glu(arg!(ctx), arg!(a), op, swapped).as_ptr() }
}

// The split forms accept a NULL gate as the reference does (it then acts as the fused form).
#[unsafe(no_mangle)]
pub extern "C" fn ggml_glu_split(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, op: GluOp) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { glu::glu_impl(arg!(ctx), arg!(a), opt_arg!(b), op, false).as_ptr() }
}

/// Exports the `_split` GLU constructors `(ctx, a, b)`.
macro_rules! export_glu_split {
    ($($c_name:ident => $op:ident;)*) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $c_name(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
                // SAFETY: the C caller's contract: handles passed to the API are live.
                unsafe { glu::glu_impl(arg!(ctx), arg!(a), opt_arg!(b), GluOp::$op, false).as_ptr() }
            }
        )*
    };
}

export_glu_split! {
    ggml_reglu_split => REGLU;
    ggml_geglu_split => GEGLU;
    ggml_swiglu_split => SWIGLU;
    ggml_geglu_erf_split => GEGLU_ERF;
    ggml_geglu_quick_split => GEGLU_QUICK;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_swiglu_oai(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    alpha: f32,
    limit: f32,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { glu::swiglu_oai(arg!(ctx), arg!(a), opt_arg!(b), alpha, limit).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_swiglu_clamp(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor, limit: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { glu::swiglu_clamp(arg!(ctx), arg!(a), opt_arg!(b), limit).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_glu_op(t: *const Tensor) -> GluOp {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { glu::get_glu_op(&arg!(t)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_glu_op_name(op: GluOp) -> *const c_char {
    static_c_str(op.name())
}
