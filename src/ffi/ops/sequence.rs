//! C entry points of `arange` and `timestep_embedding` (`core::ops::sequence`).

use crate::core::context::Context;
use crate::core::ops::sequence;
use crate::core::tensor::Tensor;
use crate::ffi::{context, tensor};
use std::ffi::c_int;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_arange(ctx: *mut Context, start: f32, stop: f32, step: f32) -> *mut Tensor {
    sequence::arange(context(ctx), start, stop, step).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_timestep_embedding(
    ctx: *mut Context,
    timesteps: *mut Tensor,
    dim: c_int,
    max_period: c_int,
) -> *mut Tensor {
    sequence::timestep_embedding(context(ctx), tensor(timesteps), dim, max_period).as_ptr()
}
