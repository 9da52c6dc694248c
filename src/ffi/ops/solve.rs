//! C entry point of the triangular solve (`core::ops::solve`).

use crate::core::context::Context;
use crate::core::ops::solve;
use crate::core::tensor::Tensor;
use crate::ffi::{context, tensor};

#[unsafe(no_mangle)]
pub extern "C" fn ggml_solve_tri(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    left: bool,
    lower: bool,
    uni: bool,
) -> *mut Tensor {
    solve::solve_tri(context(ctx), tensor(a), tensor(b), left, lower, uni).as_ptr()
}
