//! C entry points of `arange` and `timestep_embedding` (`core::ops::sequence`).

use crate::core::context::Context;
use crate::core::ops::sequence;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_arange(ctx: *mut Context, start: f32, stop: f32, step: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { sequence::arange(arg!(ctx), start, stop, step).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_timestep_embedding(
    ctx: *mut Context,
    timesteps: *mut Tensor,
    dim: c_int,
    max_period: c_int,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { sequence::timestep_embedding(arg!(ctx), arg!(timesteps), dim, max_period).as_ptr() }
}
