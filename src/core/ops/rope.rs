//! Rotary position embeddings: plain, NeoX-style, multi-section (M-RoPE, interleaved M-RoPE,
//! vision) and their gradients, with the YaRN context-extension parameters.
//!
//! Every variant builds the same node: `src = [a, positions, freq_factors]` and sixteen
//! `op_params` words laid out as
//! `[n_past = 0, n_dims, mode, n_ctx = 0, n_ctx_orig, freq_base, freq_scale, ext_factor,
//! attn_factor, beta_fast, beta_slow, sections[4], n_offs]` (the six in the middle are f32).

use super::view_or_dup;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::{MAX_OP_PARAMS, Tensor, TensorPtr};
use crate::core::types::Type;

/// `GGML_ROPE_TYPE_*`: the `mode` argument.
pub mod rope_type {
    pub const NORMAL: i32 = 0;
    pub const NEOX: i32 = 2;
    pub const MROPE: i32 = 8;
    pub const VISION: i32 = 24;
    pub const IMROPE: i32 = 40;
    /// Every mode ggml knows.
    pub const ALL: [i32; 5] = [NORMAL, NEOX, MROPE, VISION, IMROPE];
}

/// `GGML_MROPE_SECTIONS`.
pub const MROPE_SECTIONS: usize = 4;

const PARAM_N_DIMS: usize = 1;
const PARAM_MODE: usize = 2;
const PARAM_N_CTX_ORIG: usize = 4;
const PARAM_FREQ_BASE: usize = 5;
const PARAM_SECTIONS: usize = 11;
const PARAM_N_OFFS: usize = 15;

/// The scalar arguments shared by every RoPE constructor. [`RopeParams::new`] gives those of
/// plain `ggml_rope` (no YaRN scaling); [`RopeParams::from_op_params`] reads them back from a
/// node, as the backward pass does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeParams {
    pub n_dims: i32,
    pub mode: i32,
    pub n_ctx_orig: i32,
    pub freq_base: f32,
    pub freq_scale: f32,
    pub ext_factor: f32,
    pub attn_factor: f32,
    pub beta_fast: f32,
    pub beta_slow: f32,
}

impl RopeParams {
    pub fn new(n_dims: i32, mode: i32) -> Self {
        RopeParams {
            n_dims,
            mode,
            n_ctx_orig: 0,
            freq_base: 10000.0,
            freq_scale: 1.0,
            ext_factor: 0.0,
            attn_factor: 1.0,
            beta_fast: 0.0,
            beta_slow: 0.0,
        }
    }

    /// The parameters of a ROPE or ROPE_BACK node, and its sections.
    pub fn from_op_params(t: &Tensor) -> (Self, [i32; MROPE_SECTIONS]) {
        let f = |i| t.op_param_f32(PARAM_FREQ_BASE + i);
        let params = RopeParams {
            n_dims: t.op_param_i32(PARAM_N_DIMS),
            mode: t.op_param_i32(PARAM_MODE),
            n_ctx_orig: t.op_param_i32(PARAM_N_CTX_ORIG),
            freq_base: f(0),
            freq_scale: f(1),
            ext_factor: f(2),
            attn_factor: f(3),
            beta_fast: f(4),
            beta_slow: f(5),
        };
        let mut sections = [0; MROPE_SECTIONS];
        sections.copy_from_slice(&t.op_params[PARAM_SECTIONS..PARAM_SECTIONS + MROPE_SECTIONS]);
        (params, sections)
    }

    /// The node's sixteen `op_params` words (sections zero unless given, offset zero).
    fn to_op_params(self, sections: Option<&[i32; MROPE_SECTIONS]>) -> [i32; MAX_OP_PARAMS / 4] {
        let mut words = [0i32; MAX_OP_PARAMS / 4];
        words[PARAM_N_DIMS] = self.n_dims;
        words[PARAM_MODE] = self.mode;
        words[PARAM_N_CTX_ORIG] = self.n_ctx_orig;
        let floats =
            [self.freq_base, self.freq_scale, self.ext_factor, self.attn_factor, self.beta_fast, self.beta_slow];
        for (w, v) in words[PARAM_FREQ_BASE..].iter_mut().zip(floats) {
            *w = v.to_bits() as i32;
        }
        if let Some(s) = sections {
            words[PARAM_SECTIONS..PARAM_SECTIONS + MROPE_SECTIONS].copy_from_slice(s);
        }
        words
    }
}

/// Rotates `a` (`[head_dim, n_head, n_tokens, ne3]`) by the I32 positions `b` (one per token,
/// four per token in M-RoPE modes), dividing frequencies by the optional F32 `c`.
/// `sections` are used only in M-RoPE modes.
pub fn rope_impl(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: Option<TensorPtr>,
    params: &RopeParams,
    sections: Option<&[i32; MROPE_SECTIONS]>,
    inplace: bool,
) -> TensorPtr {
    crate::ggml_assert!(params.mode & 1 == 0, "rope: mode & 1 == 1 is no longer supported");
    crate::ggml_assert!(b.is_vector(), "rope: positions must be a vector");
    crate::ggml_assert!(b.type_ == Type::I32, "rope: positions must be I32, not {}", b.type_.name());

    let mrope = params.mode & rope_type::MROPE != 0;
    let positions_per_token = if mrope { 4 } else { 1 };
    crate::ggml_assert!(
        a.ne[2] * positions_per_token == b.ne[0],
        "rope: {} tokens need {} positions, got {}",
        a.ne[2],
        a.ne[2] * positions_per_token,
        b.ne[0]
    );
    if let Some(c) = c {
        crate::ggml_assert!(c.type_ == Type::F32, "rope: frequency factors must be F32, not {}", c.type_.name());
        crate::ggml_assert!(
            c.ne[0] >= (params.n_dims / 2) as i64,
            "rope: {} frequency factors for {} dimensions",
            c.ne[0],
            params.n_dims
        );
    }

    let result = view_or_dup(ctx, a, inplace);
    let r = result.get_mut();
    r.set_op_params_i32(&params.to_op_params(if mrope { sections } else { None }));
    r.op = Op::ROPE;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    r.src[2] = c.map_or(std::ptr::null_mut(), TensorPtr::as_ptr);
    result
}

pub fn rope(ctx: &mut Context, a: TensorPtr, b: TensorPtr, n_dims: i32, mode: i32) -> TensorPtr {
    rope_impl(ctx, a, b, None, &RopeParams::new(n_dims, mode), None, false)
}

pub fn rope_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr, n_dims: i32, mode: i32) -> TensorPtr {
    rope_impl(ctx, a, b, None, &RopeParams::new(n_dims, mode), None, true)
}

pub fn rope_ext(ctx: &mut Context, a: TensorPtr, b: TensorPtr, c: Option<TensorPtr>, params: &RopeParams) -> TensorPtr {
    rope_impl(ctx, a, b, c, params, None, false)
}

pub fn rope_ext_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: Option<TensorPtr>,
    params: &RopeParams,
) -> TensorPtr {
    rope_impl(ctx, a, b, c, params, None, true)
}

pub fn rope_multi(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: Option<TensorPtr>,
    params: &RopeParams,
    sections: Option<&[i32; MROPE_SECTIONS]>,
) -> TensorPtr {
    rope_impl(ctx, a, b, c, params, sections, false)
}

pub fn rope_multi_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: Option<TensorPtr>,
    params: &RopeParams,
    sections: Option<&[i32; MROPE_SECTIONS]>,
) -> TensorPtr {
    rope_impl(ctx, a, b, c, params, sections, true)
}

/// Deprecated form of [`rope_ext`] without frequency factors.
pub fn rope_custom(ctx: &mut Context, a: TensorPtr, b: TensorPtr, params: &RopeParams) -> TensorPtr {
    rope_impl(ctx, a, b, None, params, None, false)
}

pub fn rope_custom_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr, params: &RopeParams) -> TensorPtr {
    rope_impl(ctx, a, b, None, params, None, true)
}

/// Gradient of [`rope_ext`]: `a` is the gradient of its output.
pub fn rope_ext_back(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: Option<TensorPtr>,
    params: &RopeParams,
) -> TensorPtr {
    let result = rope_ext(ctx, a, b, c, params);
    result.get_mut().op = Op::ROPE_BACK;
    result
}

/// Gradient of [`rope_multi`]: `a` is the gradient of its output.
pub fn rope_multi_back(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: Option<TensorPtr>,
    params: &RopeParams,
    sections: Option<&[i32; MROPE_SECTIONS]>,
) -> TensorPtr {
    let result = rope_multi(ctx, a, b, c, params, sections);
    result.get_mut().op = Op::ROPE_BACK;
    result
}

/// The first rotated element of a ROPE or ROPE_BACK node (0 unless [`rope_set_offset`] moved it).
pub fn rope_offset(t: &Tensor) -> i32 {
    t.op_param_i32(PARAM_N_OFFS)
}

/// Rotates the `n_dims` dimensions starting at `n_offs` instead of at 0 (not for vision RoPE).
pub fn rope_set_offset(a: TensorPtr, n_offs: i32) -> TensorPtr {
    crate::ggml_assert!(
        a.op == Op::ROPE || a.op == Op::ROPE_BACK,
        "rope_set_offset: tensor is a {}, not a ROPE or ROPE_BACK",
        a.op.name()
    );
    crate::ggml_assert!(n_offs >= 0, "rope_set_offset: negative offset {}", n_offs);
    crate::ggml_assert!(
        a.op_param_i32(PARAM_MODE) != rope_type::VISION,
        "rope_set_offset: vision RoPE takes no offset"
    );
    a.get_mut().set_op_param_i32(PARAM_N_OFFS, n_offs);
    a
}

/// The dimension whose wavelength makes `n_rot` full turns over `n_ctx_orig` positions:
/// `n_dims * ln(n_ctx_orig / (2 pi n_rot)) / (2 ln base)`.
fn yarn_corr_dim(n_dims: i32, n_ctx_orig: i32, n_rot: f32, base: f32) -> f32 {
    n_dims as f32 * (n_ctx_orig as f32 / (n_rot * 2.0 * std::f32::consts::PI)).ln() / (2.0 * base.ln())
}

/// The first and last dimensions that YaRN blends between interpolation and extrapolation,
/// clamped to `[0, n_dims - 1]` (a NaN bound stays NaN, as in ggml).
pub fn rope_yarn_corr_dims(n_dims: i32, n_ctx_orig: i32, freq_base: f32, beta_fast: f32, beta_slow: f32) -> [f32; 2] {
    let start = yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base).floor();
    let end = yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base).ceil();
    let last = (n_dims - 1) as f32;
    [if 0.0 > start { 0.0 } else { start }, if last < end { last } else { end }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    #[test]
    fn rope_ext_op_params_layout() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[64, 8, 5]);
        let pos = c.new_tensor(Type::I32, &[5]);
        let ff = c.new_tensor(Type::F32, &[16]);
        let p = RopeParams {
            n_dims: 32,
            mode: rope_type::NEOX,
            n_ctx_orig: 4096,
            freq_base: 500000.0,
            freq_scale: 0.25,
            ext_factor: 1.0,
            attn_factor: 1.5,
            beta_fast: 32.0,
            beta_slow: 1.0,
        };
        let r = rope_ext(&mut c, a, pos, Some(ff), &p);
        assert_eq!(r.op, Op::ROPE);
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(a), Some(pos), Some(ff)));
        assert_eq!(&r.op_params[..5], &[0, 32, 2, 0, 4096]);
        let floats: Vec<f32> = (5..11).map(|i| r.op_param_f32(i)).collect();
        assert_eq!(floats, [500000.0, 0.25, 1.0, 1.5, 32.0, 1.0]);
        assert_eq!(&r.op_params[11..], &[0; 5]);
        assert_eq!(RopeParams::from_op_params(&r), (p, [0; 4]));

        rope_set_offset(r, 3);
        assert_eq!(r.op_params[15], 3);
    }

    #[test]
    fn plain_rope_defaults_and_inplace() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[8, 2, 3]);
        a.get_mut().set_name("k");
        let pos = c.new_tensor(Type::I32, &[3]);
        let r = rope_inplace(&mut c, a, pos, 8, rope_type::NORMAL);
        assert_eq!((r.view_source(), r.name()), (Some(a), "k (view)"));
        assert_eq!(RopeParams::from_op_params(&r).0, RopeParams::new(8, 0));
        assert_eq!(r.src(2), None);
    }

    #[test]
    fn multi_sections_only_in_mrope_modes() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[16, 2, 3]);
        let pos4 = c.new_tensor(Type::I32, &[12]);
        let sections = [4, 2, 2, 0];
        let p = RopeParams::new(16, rope_type::MROPE);
        let r = rope_multi(&mut c, a, pos4, None, &p, Some(&sections));
        assert_eq!(&r.op_params[11..15], &sections);

        let pos = c.new_tensor(Type::I32, &[3]);
        let r = rope_multi(&mut c, a, pos, None, &RopeParams::new(16, rope_type::NEOX), Some(&sections));
        assert_eq!(&r.op_params[11..15], &[0; 4]);

        let r = rope_multi_back(&mut c, a, pos4, None, &p, Some(&sections));
        assert_eq!(r.op, Op::ROPE_BACK);
        assert_eq!(RopeParams::from_op_params(&r), (p, sections));
        let r = rope_ext_back(&mut c, a, pos, None, &RopeParams::new(16, rope_type::NEOX));
        assert_eq!(r.op, Op::ROPE_BACK);
    }

    #[test]
    fn yarn_corr_dims_are_clamped() {
        let [lo, hi] = rope_yarn_corr_dims(128, 4096, 10000.0, 32.0, 1.0);
        let dim = |rot: f32| 128.0 * (4096.0f32 / (rot * 2.0 * std::f32::consts::PI)).ln() / (2.0 * 10000f32.ln());
        assert_eq!(lo, dim(32.0).floor().max(0.0));
        assert_eq!(hi, dim(1.0).ceil().min(127.0));
        assert_eq!(rope_yarn_corr_dims(4, 10, 10000.0, 1000.0, 1e-9), [0.0, 3.0]);
        assert_eq!(rope_yarn_corr_dims(4, 10, 10000.0, 1000.0, 0.001), [0.0, 2.0]);
        assert!(rope_yarn_corr_dims(4, 10, 10000.0, f32::NAN, 1.0)[0].is_nan());
    }
}
