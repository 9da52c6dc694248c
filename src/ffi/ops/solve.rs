//! C entry point of the triangular solve (`core::ops::solve`).

use crate::core::context::Context;
use crate::core::ops::solve;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_solve_tri(
    ctx: *mut Context,
    a: *mut Tensor,
    b: *mut Tensor,
    left: bool,
    lower: bool,
    uni: bool,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { solve::solve_tri(arg!(ctx), arg!(a), arg!(b), left, lower, uni).as_ptr() }
}
