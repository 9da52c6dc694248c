//! Rotary position embedding kernels: ROPE and its gradient ROPE_BACK (the same rotation
//! with the sine negated), for F32 and F16 rows, in every layout ggml knows:
//!
//! - normal: dimensions `(2i, 2i + 1)` rotate together;
//! - NeoX, M-RoPE and interleaved M-RoPE: dimensions `(i, i + n_dims / 2)`;
//! - vision: dimensions `(i, i + n_dims)` over the whole row (`n_dims = ne0 / 2`).
//!
//! Pair `i` turns by `theta_i = p * base^(-2i / n_dims)` (divided by the optional frequency
//! factor `i`), blended between interpolation and extrapolation by YaRN and scaled by its
//! magnitude correction. The M-RoPE modes take four positions per token and give each pair
//! the position of its section (time, height, width, extra). The rotated dimensions start at
//! `n_offs` (`rope_set_offset`); the others are copied.
//!
//! As in ggml, each thread keeps the cosines and sines of the token it is on in its slice of
//! the scratch, recomputing them only when the token changes; `theta_i` is built by repeated
//! multiplication so that the angles are ggml's to the last bit.

use super::norm::{row_ptr, source, use_avx2};
use super::simd;
use crate::core::ops::rope::{MROPE_SECTIONS, RopeParams, rope_offset, rope_type, rope_yarn_corr_dims};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::plan::CACHE_LINE_SIZE;

/// C's `MAX` and `MIN` (which keep the second operand when the comparison fails, NaN included).
fn c_max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

fn c_min(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// How the rotated pairs sit in a row.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// `(2i, 2i + 1)`.
    Adjacent,
    /// `(i, i + n_pairs)`.
    Halves,
}

/// YaRN's blend of interpolated and extrapolated angles and its magnitude correction.
struct Yarn {
    freq_scale: f32,
    ext_factor: f32,
    mscale: f32,
    corr_dims: [f32; 2],
}

impl Yarn {
    /// The cosine and sine (times the magnitude scale) of pair `i0 / 2`'s angle, given its
    /// extrapolated angle.
    fn cos_sin(&self, theta_extrap: f32, i0: usize) -> (f32, f32) {
        let theta_interp = self.freq_scale * theta_extrap;
        let mut theta = theta_interp;
        let mut mscale = self.mscale;
        if self.ext_factor != 0.0 {
            let [low, high] = self.corr_dims;
            let y = ((i0 / 2) as f32 - low) / c_max(0.001, high - low);
            let ramp_mix = (1.0 - c_min(1.0, c_max(0.0, y))) * self.ext_factor;
            theta = theta_interp * (1.0 - ramp_mix) + theta_extrap * ramp_mix;
            mscale *= 1.0 + 0.1 * (1.0 / self.freq_scale).ln();
        }
        (theta.cos() * mscale, theta.sin() * mscale)
    }
}

/// The M-RoPE section bookkeeping: which of the four positions each pair uses.
struct Sections {
    sizes: [i32; MROPE_SECTIONS],
    interleaved: bool,
    /// Vision: each section restarts its angle at the section's first pair.
    independent: bool,
}

impl Sections {
    /// The position slot (0 time, 1 height, 2 width, 3 extra) of `sector`.
    fn slot(&self, sector: i32) -> usize {
        let s = self.sizes;
        if self.interleaved {
            match sector % 3 {
                1 if sector < 3 * s[1] => 1,
                2 if sector < 3 * s[2] => 2,
                0 if sector < 3 * s[0] => 0,
                _ => 3,
            }
        } else if sector >= s[0] && sector < s[0] + s[1] {
            1
        } else if sector >= s[0] + s[1] && sector < s[0] + s[1] + s[2] {
            2
        } else if sector >= s[0] + s[1] + s[2] {
            3
        } else {
            0
        }
    }

    /// The slot whose angle restarts at `sector` (vision only).
    fn restart(&self, sector: i32) -> Option<usize> {
        let s = self.sizes;
        if sector == 0 {
            Some(0)
        } else if sector == s[0] {
            Some(1)
        } else if sector == s[0] + s[1] {
            Some(2)
        } else if sector == s[0] + s[1] + s[2] {
            Some(3)
        } else {
            None
        }
    }
}

/// Everything about a ROPE node that does not depend on the row.
struct Rope<'a> {
    n_offs: usize,
    layout: Layout,
    /// Pairs rotated per row.
    n_pairs: usize,
    theta_scale: f32,
    sin_sign: f32,
    yarn: Yarn,
    sections: Option<Sections>,
    freq_factors: Option<&'a [f32]>,
}

impl Rope<'_> {
    /// Fills `cos` and `sin` (`n_pairs` each) for a token at `positions` (one, or four in
    /// the M-RoPE modes).
    fn fill_cache(&self, positions: [i32; 4], cos: &mut [f32], sin: &mut [f32]) {
        let factor = |i: usize| self.freq_factors.map_or(1.0, |f| f[i]);
        match &self.sections {
            None => {
                let mut theta = positions[0] as f32;
                for i in 0..self.n_pairs {
                    let (c, s) = self.yarn.cos_sin(theta / factor(i), 2 * i);
                    cos[i] = c;
                    sin[i] = s * self.sin_sign;
                    theta *= self.theta_scale;
                }
            }
            Some(sections) => {
                let base = positions.map(|p| p as f32);
                let mut thetas = base;
                let sect_dims: i32 = sections.sizes.iter().sum();
                for i in 0..self.n_pairs {
                    let sector = i as i32 % sect_dims;
                    if sections.independent
                        && let Some(slot) = sections.restart(sector)
                    {
                        thetas[slot] = base[slot];
                    }
                    let theta = thetas[sections.slot(sector)];
                    let (c, s) = self.yarn.cos_sin(theta / factor(i), 2 * i);
                    cos[i] = c;
                    sin[i] = s * self.sin_sign;
                    for t in &mut thetas {
                        *t *= self.theta_scale;
                    }
                }
            }
        }
    }
}

/// ROPE and ROPE_BACK: F32 or F16 rows rotated into the same type, I32 positions, optional F32
/// frequency factors, and a mode ggml knows (normal, NeoX, M-RoPE, interleaved M-RoPE,
/// vision).
pub fn rope_supports(node: &Tensor) -> bool {
    let mode = node.op_param_i32(2);
    let data = node.source(0).is_some_and(|s| (s.type_ == Type::F32 || s.type_ == Type::F16) && s.type_ == node.type_);
    let positions = node.source(1).is_some_and(|p| p.type_ == Type::I32);
    let factors = node.source(2).is_none_or(|f| f.type_ == Type::F32);
    data && positions && factors && rope_type::ALL.contains(&mode)
}

/// As [`rope_supports`].
pub fn rope_back_supports(node: &Tensor) -> bool {
    rope_supports(node)
}

/// The reference's scratch for ROPE and ROPE_BACK: a row of floats per task, which holds the
/// thread's cosines and sines.
pub fn rope_work_size(node: &Tensor, n_tasks: usize) -> usize {
    std::mem::size_of::<f32>() * node.ne[0].max(0) as usize * n_tasks
}

/// ROPE: rotates the rows of `src[0]` by the positions in `src[1]`.
pub fn rope(params: &ComputeParams, dst: TensorPtr) {
    rope_any(params, dst, true);
}

/// ROPE_BACK: the inverse rotation (the gradient of [`rope`]).
pub fn rope_back(params: &ComputeParams, dst: TensorPtr) {
    rope_any(params, dst, false);
}

fn rope_any(params: &ComputeParams, dst: TensorPtr, forward: bool) {
    let src = source(dst, 0);
    let pos = source(dst, 1);
    let (p, sizes) = RopeParams::from_op_params(&dst);
    let n_offs = rope_offset(&dst);
    let [ne0, ne1, ne2, ne3] = dst.ne;
    let ty = src.type_;
    let name = dst.op.name();

    crate::ggml_assert!(ty == Type::F32 || ty == Type::F16, "{}: unsupported type {}", name, ty.name());
    crate::ggml_assert!(dst.type_ == ty && dst.same_shape(&src), "{}: result must match the source", name);
    crate::ggml_assert!(
        src.nb[0] == ty.type_size() && dst.nb[0] == ty.type_size(),
        "{}: rows must be contiguous",
        name
    );
    crate::ggml_assert!(pos.type_ == Type::I32, "{}: positions must be I32", name);
    crate::ggml_assert!(
        p.n_dims >= 0 && i64::from(p.n_dims) <= ne0 && p.n_dims % 2 == 0,
        "{}: bad n_dims {}",
        name,
        p.n_dims
    );
    crate::ggml_assert!(
        n_offs >= 0 && n_offs % 2 == 0 && i64::from(n_offs + p.n_dims) <= ne0,
        "{}: bad offset {}",
        name,
        n_offs
    );

    let mode = p.mode;
    let multi = mode & rope_type::MROPE != 0;
    let vision = mode == rope_type::VISION;
    let layout = match mode {
        rope_type::NORMAL => Layout::Adjacent,
        rope_type::NEOX | rope_type::MROPE | rope_type::IMROPE | rope_type::VISION => Layout::Halves,
        _ => crate::ggml_abort!("{}: rope type {} not supported", name, mode),
    };
    if vision {
        crate::ggml_assert!(i64::from(p.n_dims) == ne0 / 2 && n_offs == 0, "{}: vision RoPE rotates half-rows", name);
    }
    let n_pairs = if vision { ne0 as usize / 2 } else { p.n_dims as usize / 2 };

    let sections = multi.then(|| {
        crate::ggml_assert!(sizes[0] > 0 || sizes[1] > 0 || sizes[2] > 0, "{}: M-RoPE needs sections", name);
        let total: i32 = sizes.iter().sum();
        crate::ggml_assert!(total > 0 && i64::from(total) <= ne0, "{}: bad sections {:?}", name, sizes);
        Sections { sizes, interleaved: mode == rope_type::IMROPE, independent: vision }
    });
    let per_token = if multi { 4 } else { 1 };
    crate::ggml_assert!(pos.nelements() >= ne2 * per_token, "{}: too few positions", name);
    // SAFETY: the positions tensor is a contiguous I32 vector (the constructor's contract) of
    // at least ne2 * per_token elements (asserted).
    let positions = unsafe { std::slice::from_raw_parts(pos.data.cast::<i32>(), (ne2 * per_token) as usize) };

    let freq_factors = dst.src(2).map(|f| {
        crate::ggml_assert!(f.type_ == Type::F32, "{}: frequency factors must be F32", name);
        crate::ggml_assert!(f.nelements() >= n_pairs as i64, "{}: too few frequency factors", name);
        // SAFETY: a contiguous F32 vector with at least n_pairs elements (asserted).
        unsafe { std::slice::from_raw_parts(f.data.cast::<f32>(), n_pairs) }
    });

    let rope = Rope {
        n_offs: n_offs as usize,
        layout,
        n_pairs,
        theta_scale: p.freq_base.powf(-2.0 / p.n_dims as f32),
        sin_sign: if forward { 1.0 } else { -1.0 },
        yarn: Yarn {
            freq_scale: p.freq_scale,
            ext_factor: p.ext_factor,
            mscale: p.attn_factor,
            corr_dims: rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow),
        },
        sections,
        freq_factors,
    };

    // this thread's cosines and sines, in its slice of the scratch
    let stride = ne0 as usize + CACHE_LINE_SIZE / 4;
    crate::ggml_assert!(
        params.wsize >= stride * 4 * params.nth && (params.wdata as usize).is_multiple_of(4),
        "{}: work buffer too small ({} bytes)",
        name,
        params.wsize
    );
    // SAFETY: the scratch holds nth slices of `stride` floats (asserted); each thread uses
    // only its own, and 2 * n_pairs <= ne0 < stride.
    let (cos, sin) = unsafe {
        let cache = std::slice::from_raw_parts_mut(params.wdata.cast::<f32>().add(stride * params.ith), 2 * n_pairs);
        cache.split_at_mut(n_pairs)
    };

    let avx2 = use_avx2(params);
    let rows = (ne1 * ne2 * ne3) as usize;
    let per_thread = rows.div_ceil(params.nth);
    let first = (per_thread * params.ith).min(rows);
    let last = (first + per_thread).min(rows);
    let mut cached_token = None;
    // F16 rows are rotated as F32 (exact widening, the same F32 arithmetic, one rounding back)
    let mut widened = if ty == Type::F16 { vec![0.0f32; ne0 as usize] } else { Vec::new() };
    for r in first..last {
        let r = r as i64;
        let (i1, i2, i3) = (r % ne1, (r / ne1) % ne2, r / (ne1 * ne2));
        if cached_token != Some(i2) {
            let at = |k: i64| positions[(i2 + k * ne2) as usize];
            let token = if multi { [at(0), at(1), at(2), at(3)] } else { [at(0), 0, 0, 0] };
            rope.fill_cache(token, cos, sin);
            cached_token = Some(i2);
        }
        let n = ne0 as usize;
        // SAFETY: the indices are inside the shared shape; rows hold `n` contiguous elements
        // of the type (asserted); the copy tolerates an in-place result, after which only the
        // destination row is used.
        unsafe {
            let x = row_ptr(&src, i1, i2, i3);
            let y = row_ptr(&dst, i1, i2, i3);
            if ty == Type::F32 {
                std::ptr::copy(x.cast::<f32>(), y.cast::<f32>(), n);
                rotate_f32(&rope, std::slice::from_raw_parts_mut(y.cast::<f32>(), n), cos, sin, avx2);
            } else {
                std::ptr::copy(x.cast::<u16>(), y.cast::<u16>(), n);
                let row = std::slice::from_raw_parts_mut(y.cast::<u16>(), n);
                rotate_f16(&rope, row, &mut widened, cos, sin, avx2);
            }
        }
    }
}

/// The distance between the two elements of a pair.
fn partner_distance(rope: &Rope) -> usize {
    match rope.layout {
        Layout::Adjacent => 1,
        Layout::Halves => rope.n_pairs,
    }
}

/// Index of the first element of pair `i` in the row.
fn pair_start(rope: &Rope, i: usize) -> usize {
    match rope.layout {
        Layout::Adjacent => rope.n_offs + 2 * i,
        Layout::Halves => rope.n_offs + i,
    }
}

fn rotate_f32(rope: &Rope, row: &mut [f32], cos: &[f32], sin: &[f32], avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: AVX2 was detected (`use_avx2`).
        return unsafe { avx2::rotate_f32(rope, row, cos, sin) };
    }
    let _ = avx2;
    rotate_f32_from(rope, row, cos, sin, 0, false);
}

/// Rotates pairs `from..n_pairs` of an F32 row; with `fused`, each result's first product
/// is fused into its sum, as ggml's FMA builds compile its scalar rotation.
fn rotate_f32_from(rope: &Rope, row: &mut [f32], cos: &[f32], sin: &[f32], from: usize, fused: bool) {
    let distance = partner_distance(rope);
    for i in from..rope.n_pairs {
        let a = pair_start(rope, i);
        let (x0, x1) = (row[a], row[a + distance]);
        if fused {
            row[a] = x0.mul_add(cos[i], -(x1 * sin[i]));
            row[a + distance] = x0.mul_add(sin[i], x1 * cos[i]);
        } else {
            row[a] = x0 * cos[i] - x1 * sin[i];
            row[a + distance] = x0 * sin[i] + x1 * cos[i];
        }
    }
}

/// Rotates an F16 row through `widened` (a row of floats as long): widened, rotated as an
/// F32 row, rounded back. The untouched elements come back unchanged (the widening is exact).
fn rotate_f16(rope: &Rope, row: &mut [u16], widened: &mut [f32], cos: &[f32], sin: &[f32], simd: bool) {
    let widened = &mut widened[..row.len()];
    if simd {
        simd::fp16_to_f32_row(row, widened);
        rotate_f32(rope, widened, cos, sin, true);
        simd::f32_to_fp16_row(widened, row);
    } else {
        simd::scalar::fp16_to_f32_row(row, widened);
        rotate_f32(rope, widened, cos, sin, false);
        simd::scalar::f32_to_fp16_row(widened, row);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Layout, Rope, rotate_f32_from};
    use crate::cpu::kernels::simd::avx2::load_f32;

    /// Eight pairs at a time for split halves, four for adjacent pairs; the rest scalar.
    ///
    /// The roundings are those of ggml's x86 build with FMA, where the compiler fuses one
    /// product of each result into its sum: `x0·c − (x1·s)` and `x0·s + (x1·c)`, the
    /// parenthesized products rounded. Its vectorized loop over adjacent pairs leaves up to
    /// three pairs to two-lane steps without fused products, and so does this one; a row of
    /// adjacent pairs shorter than its vectors, or rotated in place, takes other code there
    /// and may differ in the last bit.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn rotate_f32(rope: &Rope, row: &mut [f32], cos: &[f32], sin: &[f32]) {
        let n = rope.n_pairs;
        assert!(cos.len() >= n && sin.len() >= n);
        let (pc, ps) = (cos.as_ptr(), sin.as_ptr());
        let mut i = 0;
        match rope.layout {
            Layout::Halves => {
                assert!(rope.n_offs + 2 * n <= row.len());
                let x = row[rope.n_offs..].as_mut_ptr();
                while i + 8 <= n {
                    // SAFETY: i + 8 <= n, so both halves' lanes lie inside the row
                    // (n_offs + 2n <= len) and inside the cache (n entries each).
                    unsafe {
                        let (a, b) = (load_f32(x.add(i)), load_f32(x.add(i + n)));
                        let (c, s) = (load_f32(pc.add(i)), load_f32(ps.add(i)));
                        _mm256_storeu_ps(x.add(i), _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
                        _mm256_storeu_ps(x.add(i + n), _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
                    }
                    i += 8;
                }
            }
            Layout::Adjacent => {
                assert!(rope.n_offs + 2 * n <= row.len());
                let x = row[rope.n_offs..].as_mut_ptr();
                let dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
                while i + 4 <= n {
                    // SAFETY: i + 4 <= n: the eight values 2i..2i + 8 are inside the row and
                    // the four cache entries inside the cache.
                    unsafe {
                        let v = load_f32(x.add(2 * i));
                        let c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(pc.add(i))), dup);
                        let s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(ps.add(i))), dup);
                        // (c, s) and (s, c) per pair: even lanes x0 c − x1 s, odd lanes
                        // x0 s + x1 c, the x0 products fused
                        let (cs, sc) = (_mm256_blend_ps::<0b1010_1010>(c, s), _mm256_blend_ps::<0b1010_1010>(s, c));
                        let x1_sc = _mm256_mul_ps(_mm256_movehdup_ps(v), sc);
                        let r = _mm256_fmaddsub_ps(_mm256_moveldup_ps(v), cs, x1_sc);
                        _mm256_storeu_ps(x.add(2 * i), r);
                    }
                    i += 4;
                }
            }
        }
        // the rest as ggml's build takes it: pairs of the halves with its scalar loop,
        // adjacent pairs with its two-lane steps (no fused products there)
        rotate_f32_from(rope, row, cos, sin, i, rope.layout == Layout::Halves);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::rope as ops;
    use crate::cpu::kernels::testing::*;

    /// The f64 reference: ggml's angle formulas (YaRN included) evaluated in f64 per element.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        x: &[f64],
        ne: [usize; 4],
        positions: &[i32],
        ff: Option<&[f64]>,
        p: &RopeParams,
        sections: [i32; 4],
        n_offs: usize,
        forward: bool,
    ) -> Vec<f64> {
        let n_dims = p.n_dims as usize;
        let vision = p.mode == rope_type::VISION;
        let multi = p.mode & rope_type::MROPE != 0;
        let n_pairs = if vision { ne[0] / 2 } else { n_dims / 2 };
        let [low, high] = rope_yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow);
        let mut out = x.to_vec();
        for (r, row) in out.chunks_mut(ne[0]).enumerate() {
            let i2 = (r / ne[1]) % ne[2];
            for i in 0..n_pairs {
                // which position this pair uses, and from which pair its exponent counts
                let (slot, first) = if !multi {
                    (0, 0)
                } else {
                    let s = sections;
                    let total: i32 = s.iter().sum();
                    let sector = i as i32 % total;
                    let slot = if p.mode == rope_type::IMROPE {
                        match sector % 3 {
                            1 if sector < 3 * s[1] => 1,
                            2 if sector < 3 * s[2] => 2,
                            0 if sector < 3 * s[0] => 0,
                            _ => 3,
                        }
                    } else if sector < s[0] {
                        0
                    } else if sector < s[0] + s[1] {
                        1
                    } else if sector < s[0] + s[1] + s[2] {
                        2
                    } else {
                        3
                    };
                    let restart = [0, s[0], s[0] + s[1], s[0] + s[1] + s[2]][slot];
                    // vision restarts the exponent at each section of each period
                    let first = if vision { (i as i32 - sector + restart) as usize } else { 0 };
                    (slot, first)
                };
                let pos = f64::from(positions[i2 + slot * ne[2]]);
                let exponent = -2.0 * (i - first) as f64 / n_dims as f64;
                let theta_extrap = pos * f64::from(p.freq_base).powf(exponent) / ff.map_or(1.0, |f| f[i]);
                let fs = f64::from(p.freq_scale);
                let mut theta = fs * theta_extrap;
                let mut mscale = f64::from(p.attn_factor);
                if p.ext_factor != 0.0 {
                    let y = ((i as f64) - f64::from(low)) / f64::from(high - low).max(0.001);
                    let mix = (1.0 - y.clamp(0.0, 1.0)) * f64::from(p.ext_factor);
                    theta = theta * (1.0 - mix) + theta_extrap * mix;
                    mscale *= 1.0 + 0.1 * (1.0 / fs).ln();
                }
                let (c, s) = (theta.cos() * mscale, theta.sin() * mscale * if forward { 1.0 } else { -1.0 });
                let (a, b) = match p.mode {
                    rope_type::NORMAL => (n_offs + 2 * i, n_offs + 2 * i + 1),
                    _ => (n_offs + i, n_offs + i + n_pairs),
                };
                let (x0, x1) = (row[a], row[b]);
                row[a] = x0 * c - x1 * s;
                row[b] = x0 * s + x1 * c;
            }
        }
        out
    }

    struct Case {
        ty: Type,
        ne: [usize; 4],
        n_dims: i32,
        mode: i32,
        yarn: bool,
        ff: bool,
        n_offs: usize,
    }

    fn check(case: &Case, forward: bool, use_ref: bool, n_threads: usize) {
        let mut c = ctx();
        let mut rng = Rng::new(11);
        let ne = case.ne;
        let a = c.new_tensor(case.ty, &ne.map(|n| n as i64));
        let x = random(a, &mut rng, -1.0, 1.0);
        let multi = case.mode & rope_type::MROPE != 0;
        let n_pos = ne[2] * if multi { 4 } else { 1 };
        let pos = c.new_tensor(Type::I32, &[n_pos as i64]);
        let positions: Vec<i32> = (0..n_pos).map(|i| (i as i32 * 37) % 101 - 5).collect();
        put(pos, |i| f64::from(positions[i]));
        let vision = case.mode == rope_type::VISION;
        let n_ff = if vision { ne[0] / 2 } else { case.n_dims as usize / 2 };
        let ff = case.ff.then(|| {
            let f = c.new_tensor(Type::F32, &[n_ff as i64]);
            (f, random(f, &mut rng, 0.5, 2.0))
        });
        let mut p = RopeParams::new(case.n_dims, case.mode);
        if case.yarn {
            p.n_ctx_orig = 512;
            p.freq_scale = 0.25;
            p.ext_factor = 1.0;
            p.attn_factor = 1.2;
            p.beta_fast = 32.0;
            p.beta_slow = 1.0;
        }
        let sections = if vision { [case.n_dims / 2, case.n_dims / 2, 0, 0] } else { [3, 2, 3, 0] };
        let fnode = ff.as_ref().map(|f| f.0);
        let t = match (multi, forward) {
            (true, true) => ops::rope_multi(&mut c, a, pos, fnode, &p, Some(&sections)),
            (true, false) => ops::rope_multi_back(&mut c, a, pos, fnode, &p, Some(&sections)),
            (false, true) => ops::rope_ext(&mut c, a, pos, fnode, &p),
            (false, false) => ops::rope_ext_back(&mut c, a, pos, fnode, &p),
        };
        if case.n_offs > 0 {
            ops::rope_set_offset(t, case.n_offs as i32);
        }
        assert!(rope_supports(&t));
        let kernel = if forward { rope } else { rope_back };
        run(&mut c, t, kernel, n_threads, rope_work_size(&t, n_threads), use_ref);
        let secs = if multi { sections } else { [0; 4] };
        let want = reference(&x, ne, &positions, ff.as_ref().map(|f| f.1.as_slice()), &p, secs, case.n_offs, forward);
        let e = nmse(&values(t), &want);
        let tolerance = if case.ty == Type::F16 { 1e-6 } else { 1e-11 };
        assert!(
            e < tolerance,
            "{} mode {} yarn {} ff {} offs {} forward {forward} ref {use_ref}: nmse {e}",
            case.ty.name(),
            case.mode,
            case.yarn,
            case.ff,
            case.n_offs
        );
    }

    #[test]
    fn every_mode_type_and_option_matches_f64() {
        let mut cases = Vec::new();
        for ty in [Type::F32, Type::F16] {
            for (mode, n_dims, ne0) in [
                (rope_type::NORMAL, 32, 40),
                (rope_type::NEOX, 32, 40),
                (rope_type::MROPE, 32, 32),
                (rope_type::IMROPE, 24, 30),
                (rope_type::VISION, 16, 32),
            ] {
                for (yarn, ff) in [(false, false), (true, false), (false, true), (true, true)] {
                    cases.push(Case { ty, ne: [ne0, 3, 5, 2], n_dims, mode, yarn, ff, n_offs: 0 });
                }
            }
            cases.push(Case {
                ty,
                ne: [48, 2, 3, 1],
                n_dims: 16,
                mode: rope_type::NORMAL,
                yarn: true,
                ff: false,
                n_offs: 6,
            });
            cases.push(Case {
                ty,
                ne: [48, 2, 3, 1],
                n_dims: 16,
                mode: rope_type::NEOX,
                yarn: false,
                ff: true,
                n_offs: 30,
            });
        }
        for case in &cases {
            for forward in [true, false] {
                check(case, forward, false, 3);
            }
            check(case, true, true, 2);
        }
    }

    #[test]
    fn in_place_rope_copies_the_untouched_dimensions() {
        let mut c = ctx();
        let mut rng = Rng::new(12);
        let a = c.new_tensor(Type::F32, &[12, 2, 3]);
        let x = random(a, &mut rng, -1.0, 1.0);
        let pos = c.new_tensor(Type::I32, &[3]);
        put(pos, |i| i as f64);
        let t = ops::rope_inplace(&mut c, a, pos, 8, rope_type::NEOX);
        run(&mut c, t, rope, 2, rope_work_size(&t, 2), false);
        let got = values(a);
        let p = RopeParams::new(8, rope_type::NEOX);
        let want = reference(&x, [12, 2, 3, 1], &[0, 1, 2], None, &p, [0; 4], 0, true);
        assert!(nmse(&got, &want) < 1e-12);
        // token 0 is not rotated, dimensions 8.. never are
        assert_eq!(&got[..12], &x[..12]);
        assert_eq!(&got[20..24], &x[20..24]);
    }

    /// The AVX2 rotation against the scalar roundings it stands for: every pair of the
    /// halves fused, adjacent pairs fused four at a time and the last ones (10 = 2·4 + 2)
    /// plain.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn simd_rotation_rounds_as_ggml_builds_do() {
        if !crate::cpu::features::features().has_avx2_fma() {
            return;
        }
        let mut rng = Rng::new(12);
        let n_pairs = 10;
        let cos: Vec<f32> = (0..n_pairs).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let sin: Vec<f32> = (0..n_pairs).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let row: Vec<f32> = (0..2 * n_pairs).map(|_| rng.uniform(-3.0, 3.0)).collect();
        for layout in [Layout::Adjacent, Layout::Halves] {
            let rope = Rope {
                n_offs: 0,
                layout,
                n_pairs,
                theta_scale: 1.0,
                sin_sign: 1.0,
                yarn: Yarn { freq_scale: 1.0, ext_factor: 0.0, mscale: 1.0, corr_dims: [0.0; 2] },
                sections: None,
                freq_factors: None,
            };
            let mut got = row.clone();
            // SAFETY: AVX2 and FMA were detected.
            unsafe { avx2::rotate_f32(&rope, &mut got, &cos, &sin) };
            let (mut fused, mut plain) = (row.clone(), row.clone());
            rotate_f32_from(&rope, &mut fused, &cos, &sin, 0, true);
            rotate_f32_from(&rope, &mut plain, &cos, &sin, 0, false);
            let fused_pairs = if layout == Layout::Halves { n_pairs } else { 8 };
            for i in 0..n_pairs {
                let a = pair_start(&rope, i);
                let want = if i < fused_pairs { &fused } else { &plain };
                let b = a + partner_distance(&rope);
                assert_eq!(
                    (got[a].to_bits(), got[b].to_bits()),
                    (want[a].to_bits(), want[b].to_bits()),
                    "{layout:?} pair {i}"
                );
            }
            assert_ne!(fused, plain, "the two roundings should differ somewhere in this row");
        }
    }
}
