//! C entry points of the losses and optimizer steps (`core::ops::loss`).

use crate::core::context::Context;
use crate::core::ops::loss;
use crate::core::tensor::Tensor;
use crate::ffi::{context, tensor};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cross_entropy_loss(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    loss::cross_entropy_loss(context(ctx), tensor(a), tensor(b)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cross_entropy_loss_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
) -> *mut Tensor {
    loss::cross_entropy_loss_back(context(ctx), tensor(a), tensor(b), tensor(c)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_step_adamw(
    ctx: *mut Context,
    a: *mut Tensor,
    grad: *mut Tensor,
    m: *mut Tensor,
    v: *mut Tensor,
    adamw_params: *mut Tensor,
) -> *mut Tensor {
    loss::opt_step_adamw(context(ctx), tensor(a), tensor(grad), tensor(m), tensor(v), tensor(adamw_params)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_step_sgd(
    ctx: *mut Context,
    a: *mut Tensor,
    grad: *mut Tensor,
    sgd_params: *mut Tensor,
) -> *mut Tensor {
    loss::opt_step_sgd(context(ctx), tensor(a), tensor(grad), tensor(sgd_params)).as_ptr()
}
