//! C entry points of the losses and optimizer steps (`core::ops::loss`).

use crate::core::context::Context;
use crate::core::ops::loss;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cross_entropy_loss(ctx: *mut Context, a: *mut Tensor, b: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { loss::cross_entropy_loss(arg!(ctx), arg!(a), arg!(b)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_cross_entropy_loss_back(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    c: *mut Tensor,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { loss::cross_entropy_loss_back(arg!(ctx), arg!(a), arg!(b), arg!(c)).as_ptr() }
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
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { loss::opt_step_adamw(arg!(ctx), arg!(a), arg!(grad), arg!(m), arg!(v), arg!(adamw_params)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_step_sgd(
    ctx: *mut Context,
    a: *mut Tensor,
    grad: *mut Tensor,
    sgd_params: *mut Tensor,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { loss::opt_step_sgd(arg!(ctx), arg!(a), arg!(grad), arg!(sgd_params)).as_ptr() }
}
