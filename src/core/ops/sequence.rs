//! Sequences: `arange` (evenly spaced values) and `timestep_embedding` (the sinusoidal
//! embeddings of diffusion models' timesteps).

use super::set_op;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// The values `start, start + step, ...` below `stop`, as f32.
pub fn arange(ctx: &mut Context, start: f32, stop: f32, step: f32) -> TensorPtr {
    let increasing = stop > start; // false for NaN too
    crate::ggml_assert!(increasing, "arange from {} to {}", start, stop);
    let steps = ((stop - start) / step).ceil() as i64;
    let result = ctx.new_tensor(Type::F32, &[steps]);
    let r = result.get_mut();
    r.set_op_param_f32(0, start);
    r.set_op_param_f32(1, stop);
    r.set_op_param_f32(2, step);
    r.op = Op::ARANGE;
    result
}

/// Sinusoidal embeddings of `dim` values for each timestep in `timesteps`.
pub fn timestep_embedding(ctx: &mut Context, timesteps: TensorPtr, dim: i32, max_period: i32) -> TensorPtr {
    let result = ctx.new_tensor(Type::F32, &[dim as i64, timesteps.ne[0]]);
    result.get_mut().set_op_params_i32(&[dim, max_period]);
    set_op(result, Op::TIMESTEP_EMBEDDING, &[timesteps]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::elementwise::tests::ctx;

    #[test]
    fn arange_counts_steps_and_stores_floats() {
        let mut c = ctx();
        let r = arange(&mut c, 0.0, 10.0, 3.0);
        assert_eq!(r.ne, [4, 1, 1, 1]);
        assert_eq!(r.op, Op::ARANGE);
        assert_eq!(r.op_params[..3], [0.0f32.to_bits() as i32, 10.0f32.to_bits() as i32, 3.0f32.to_bits() as i32]);
        assert!(r.src(0).is_none());
    }
}
