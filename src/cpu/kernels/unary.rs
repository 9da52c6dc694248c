//! Element-wise functions of one tensor: every `GGML_UNARY_OP_*` and the math ops `sqr`,
//! `sqrt`, `log`, `sin`, `cos`; the activations here are also the gates of `glu`.
//!
//! The formulas are the reference's, in `f32`: SiLU is `x / (1 + e^-x)`, GELU the tanh
//! approximation read from a table of binary16 results (as ggml's CPU backend does, so `f32`
//! inputs are rounded to binary16 first), GELU-erf uses the C library's `erff`. F16 and BF16
//! tensors are computed in `f32` and rounded once per element.

use std::sync::OnceLock;

use super::copy::{Elem, F16, extents, nrows, row_addr, row_coords, split, src, use_simd};
use crate::core::op::{Op, UnaryOp};
use crate::core::ops::unary::get_unary_op;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::quants::half::{Bf16, fp16_to_fp32, fp32_to_fp16};

unsafe extern "C" {
    /// The C library's single-precision error function (the reference's `erff`).
    fn erff(x: f32) -> f32;
}

const GELU_COEF_A: f32 = 0.044715;
const GELU_QUICK_COEF: f32 = -1.702;
const SQRT_2_OVER_PI: f32 = 0.797_884_6;
const SQRT_2_INV: f32 = std::f32::consts::FRAC_1_SQRT_2;

// ---- the scalar functions ----

pub(crate) fn erf(x: f32) -> f32 {
    // SAFETY: `erff` is a pure libm function of one float.
    unsafe { erff(x) }
}

/// The tanh approximation of GELU, computed directly.
pub(crate) fn gelu_formula(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x)).tanh())
}

pub(crate) fn gelu_quick_formula(x: f32) -> f32 {
    x * (1.0 / (1.0 + (GELU_QUICK_COEF * x).exp()))
}

pub(super) fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * SQRT_2_INV))
}

pub(crate) fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// A function of binary16 inputs tabulated as `f32` values of its binary16 results: the
/// reference's `ggml_table_gelu_f16` and `ggml_table_gelu_quick_f16`.
pub(super) struct Table(Vec<f32>);

impl Table {
    fn new(f: fn(f32) -> f32) -> Table {
        Table((0..=u16::MAX).map(|h| fp16_to_fp32(fp32_to_fp16(f(fp16_to_fp32(h))))).collect())
    }

    #[inline(always)]
    pub(super) fn get(&self, x: f32) -> f32 {
        self.0[fp32_to_fp16(x) as usize]
    }
}

pub(super) fn gelu_table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::new(gelu_formula))
}

pub(super) fn gelu_quick_table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::new(gelu_quick_formula))
}

/// GELU as the reference computes it for `f32`: 0 below -10, the identity above 10, the
/// binary16 table between.
pub(super) fn gelu_tabled(table: &Table, x: f32) -> f32 {
    if x <= -10.0 {
        0.0
    } else if x >= 10.0 {
        x
    } else {
        table.get(x)
    }
}

/// C's `x < y ? x : y` and `x > y ? x : y` (ggml's MIN and MAX).
pub(crate) fn c_min(x: f32, y: f32) -> f32 {
    if x < y { x } else { y }
}

pub(crate) fn c_max(x: f32, y: f32) -> f32 {
    if x > y { x } else { y }
}

/// `std::min(x, y)` and `std::clamp(v, lo, hi)` as C++ defines them.
pub(super) fn cpp_min(x: f32, y: f32) -> f32 {
    if y < x { y } else { x }
}

pub(super) fn cpp_clamp(v: f32, lo: f32, hi: f32) -> f32 {
    if v < lo {
        lo
    } else if hi < v {
        hi
    } else {
        v
    }
}

fn hard_sigmoid(x: f32) -> f32 {
    1.0f32.min(0.0f32.max((x + 3.0) / 6.0))
}

// ---- row mapping ----

/// A vectorised `y = f(x)` over `n` packed `f32`s (may be in place).
type FastRow = unsafe fn(n: usize, y: *mut f32, x: *const f32);

/// `y[i] = D(f(S(x[i])))` for `n` elements with byte strides `sx`, `sy`.
///
/// # Safety
/// `x` and `y` address `n` elements of their types at those strides; `y` may equal `x`.
unsafe fn map_row<S: Elem, D: Elem>(n: usize, y: *mut u8, sy: usize, x: *const u8, sx: usize, f: &impl Fn(f32) -> f32) {
    for i in 0..n {
        // SAFETY: element i of each row (caller's contract); each is read before written.
        unsafe {
            let v = x.add(i * sx).cast::<S>().read_unaligned().to_f32();
            y.add(i * sy).cast::<D>().write_unaligned(D::from_f32(f(v)));
        }
    }
}

/// Whether [`map_rows`] covers a source of type `from` into a result of type `to`.
pub(crate) fn map_types_supported(from: Type, to: Type) -> bool {
    matches!(
        (from, to),
        (Type::F32, Type::F32)
            | (Type::F16, Type::F16)
            | (Type::BF16, Type::BF16)
            | (Type::F16, Type::F32)
            | (Type::BF16, Type::F32)
    )
}

/// `dst = f(a)` element by element, over thread `ith`'s share of the rows. `fast` is used for
/// packed `f32` rows when the SIMD paths may run.
pub(crate) fn map_rows(params: &ComputeParams, a: &Tensor, d: &Tensor, fast: Option<FastRow>, f: impl Fn(f32) -> f32) {
    crate::ggml_assert!(a.same_shape(d), "{}: source and result shapes differ", d.op.name());
    let (from, to) = (a.type_, d.type_);
    let ne = extents(a);
    let (sx, sy) = (a.nb[0], d.nb[0]);
    let simd_row = fast.filter(|_| use_simd(params) && from == Type::F32 && to == Type::F32 && sx == 4 && sy == 4);
    for ir in split(nrows(a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        let (x, y) = (row_addr(a, r), row_addr(d, r));
        // SAFETY: row `r` exists in both tensors (same shape), with ne0 elements at strides
        // nb0; rows are split between threads; an in-place op has y == x.
        unsafe {
            if let Some(fast) = simd_row {
                fast(ne[0], y.cast(), x.cast());
                continue;
            }
            match (from, to) {
                (Type::F32, Type::F32) => map_row::<f32, f32>(ne[0], y, sy, x, sx, &f),
                (Type::F16, Type::F16) => map_row::<F16, F16>(ne[0], y, sy, x, sx, &f),
                (Type::BF16, Type::BF16) => map_row::<Bf16, Bf16>(ne[0], y, sy, x, sx, &f),
                (Type::F16, Type::F32) => map_row::<F16, f32>(ne[0], y, sy, x, sx, &f),
                (Type::BF16, Type::F32) => map_row::<Bf16, f32>(ne[0], y, sy, x, sx, &f),
                _ => crate::ggml_abort!("{}: unsupported types {} -> {}", d.op.name(), from.name(), to.name()),
            }
        }
    }
}

fn source_types_supported(node: &Tensor) -> bool {
    match node.source(0) {
        Some(a) => a.same_shape(node) && map_types_supported(a.type_, node.type_),
        None => false,
    }
}

// ---- GGML_OP_UNARY ----

/// UNARY's task count: the whole team for the GELUs, SiLU and xIELU, one thread for the
/// other unary ops. Aborts for a sub-op that does not exist, as the reference's planner does.
pub fn unary_tasks(node: &Tensor, n_threads: usize) -> usize {
    match get_unary_op(node) {
        UnaryOp::GELU | UnaryOp::GELU_ERF | UnaryOp::GELU_QUICK | UnaryOp::SILU | UnaryOp::XIELU => n_threads,
        u if (0..UnaryOp::COUNT).contains(&u.0) => 1,
        u => crate::ggml_abort!("unknown unary op {}", u.0),
    }
}

/// Whether [`unary`] covers `node`.
pub fn unary_supports(node: &Tensor) -> bool {
    node.op == Op::UNARY && (0..UnaryOp::COUNT).contains(&node.op_params[0]) && source_types_supported(node)
}

/// `GGML_OP_UNARY`: the function `op_params[0]` names, element by element.
pub fn unary(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let op = UnaryOp(dst.op_params[0]);
    let p = |i: usize| dst.op_param_f32(i);
    let is_f32 = a.type_ == Type::F32;
    let is_f16 = a.type_ == Type::F16;
    match op {
        UnaryOp::ABS => map_rows(params, &a, &dst, None, f32::abs),
        UnaryOp::SGN => map_rows(params, &a, &dst, None, |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
        UnaryOp::NEG => map_rows(params, &a, &dst, None, |x| -x),
        UnaryOp::STEP => map_rows(params, &a, &dst, None, |x| if x > 0.0 { 1.0 } else { 0.0 }),
        UnaryOp::TANH => map_rows(params, &a, &dst, None, f32::tanh),
        UnaryOp::ELU => map_rows(params, &a, &dst, None, |x| if x > 0.0 { x } else { x.exp_m1() }),
        UnaryOp::RELU => map_rows(params, &a, &dst, None, |x| if x > 0.0 { x } else { 0.0 }),
        UnaryOp::SIGMOID => map_rows(params, &a, &dst, None, |x| 1.0 / (1.0 + (-x).exp())),
        UnaryOp::GELU if is_f32 => {
            let t = gelu_table();
            map_rows(params, &a, &dst, Some(fast::gelu), |x| gelu_tabled(t, x))
        }
        UnaryOp::GELU if is_f16 => {
            let t = gelu_table();
            map_rows(params, &a, &dst, None, |x| t.get(x))
        }
        UnaryOp::GELU => map_rows(params, &a, &dst, None, gelu_formula),
        UnaryOp::GELU_QUICK if is_f32 || is_f16 => {
            let t = gelu_quick_table();
            map_rows(params, &a, &dst, Some(fast::gelu_quick), |x| t.get(x))
        }
        UnaryOp::GELU_QUICK => map_rows(params, &a, &dst, None, gelu_quick_formula),
        UnaryOp::GELU_ERF => map_rows(params, &a, &dst, None, gelu_erf),
        UnaryOp::SILU => map_rows(params, &a, &dst, Some(fast::silu), silu),
        UnaryOp::HARDSWISH => map_rows(params, &a, &dst, None, |x| x * hard_sigmoid(x)),
        UnaryOp::HARDSIGMOID => map_rows(params, &a, &dst, None, hard_sigmoid),
        // libm's expf element by element, as ggml's ggml_vec_exp_f32
        UnaryOp::EXP => map_rows(params, &a, &dst, None, f32::exp),
        // The reference computes expm1 as expf(x) - 1 here (ELU uses expm1f).
        UnaryOp::EXPM1 => map_rows(params, &a, &dst, None, |x| x.exp() - 1.0),
        UnaryOp::SOFTPLUS => map_rows(params, &a, &dst, None, |x| if x > 20.0 { x } else { (1.0 + x.exp()).ln() }),
        UnaryOp::FLOOR => map_rows(params, &a, &dst, None, f32::floor),
        UnaryOp::CEIL => map_rows(params, &a, &dst, None, f32::ceil),
        UnaryOp::ROUND => map_rows(params, &a, &dst, None, f32::round),
        UnaryOp::TRUNC => map_rows(params, &a, &dst, None, f32::trunc),
        UnaryOp::XIELU => {
            let (alpha_n, alpha_p, beta, eps) = (p(1), p(2), p(3), p(4));
            map_rows(params, &a, &dst, None, move |x| {
                if x > 0.0 { alpha_p * x * x + beta * x } else { (x.min(eps).exp_m1() - x) * alpha_n + beta * x }
            })
        }
        other => crate::ggml_abort!("unary: unknown op {}", other.0),
    }
}

// ---- sqr, sqrt, log, sin, cos ----

/// Whether [`sqr`], [`sqrt`], [`log`], [`sin`] and [`cos`] cover `node`.
pub fn math_supports(node: &Tensor) -> bool {
    matches!(node.op, Op::SQR | Op::SQRT | Op::LOG | Op::SIN | Op::COS) && source_types_supported(node)
}

/// `GGML_OP_SQR`: `x²`.
pub fn sqr(params: &ComputeParams, dst: TensorPtr) {
    map_rows(params, &src(dst, 0), &dst, Some(fast::sqr), |x| x * x);
}

/// `GGML_OP_SQRT`.
pub fn sqrt(params: &ComputeParams, dst: TensorPtr) {
    map_rows(params, &src(dst, 0), &dst, Some(fast::sqrt), f32::sqrt);
}

/// `GGML_OP_LOG`: the natural logarithm.
pub fn log(params: &ComputeParams, dst: TensorPtr) {
    map_rows(params, &src(dst, 0), &dst, None, f32::ln);
}

/// `GGML_OP_SIN`.
pub fn sin(params: &ComputeParams, dst: TensorPtr) {
    map_rows(params, &src(dst, 0), &dst, None, f32::sin);
}

/// `GGML_OP_COS`.
pub fn cos(params: &ComputeParams, dst: TensorPtr) {
    map_rows(params, &src(dst, 0), &dst, None, f32::cos);
}

// ---- the vectorised rows ----

/// The SIMD rows: AVX2 versions on x86-64, the scalar loops elsewhere (never chosen there, as
/// `use_simd` is false).
pub(crate) mod fast {
    #[cfg(not(target_arch = "x86_64"))]
    pub use super::scalar_rows::*;

    #[cfg(target_arch = "x86_64")]
    pub use super::avx2_rows::*;
}

#[cfg(not(target_arch = "x86_64"))]
mod scalar_rows {
    macro_rules! rows {
        ($($name:ident => $f:expr;)*) => {$(
            /// # Safety
            /// `x` and `y` address `n` packed floats (`y` may equal `x`).
            pub unsafe fn $name(n: usize, y: *mut f32, x: *const f32) {
                for i in 0..n {
                    // SAFETY: i < n (caller's contract).
                    unsafe { *y.add(i) = $f(*x.add(i)) };
                }
            }
        )*};
    }
    rows! {
        silu => super::silu;
        sqr => |x: f32| x * x;
        sqrt => f32::sqrt;
        gelu => |x| super::gelu_tabled(super::gelu_table(), x);
        gelu_quick => |x| super::gelu_quick_table().get(x);
    }

    /// # Safety
    /// The three rows hold `n` packed floats; `y` overlaps neither input.
    pub unsafe fn swiglu(n: usize, y: *mut f32, x: *const f32, g: *const f32) {
        for i in 0..n {
            // SAFETY: i < n (caller's contract).
            unsafe { *y.add(i) = super::silu(*x.add(i)) * *g.add(i) };
        }
    }

    /// # Safety
    /// As [`swiglu`].
    pub unsafe fn geglu(n: usize, y: *mut f32, x: *const f32, g: *const f32) {
        let t = super::gelu_table();
        for i in 0..n {
            // SAFETY: i < n (caller's contract).
            unsafe { *y.add(i) = super::gelu_tabled(t, *x.add(i)) * *g.add(i) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2_rows {
    use std::arch::x86_64::*;

    use super::{Table, gelu_quick_table, gelu_table, gelu_tabled};
    use crate::cpu::features::features;
    use crate::cpu::kernels::expf::{exp8, exp16};

    /// `x / (1 + e^-x)` in each lane.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn silu8(x: __m256) -> __m256 {
        let e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0), e))
    }

    /// `x / (1 + e^-x)` in each of sixteen lanes, with the AVX-512 form of `e^x`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma,f16c")]
    fn silu16(x: __m512) -> __m512 {
        let e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
        _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0), e))
    }

    /// SiLU of sixteen values at a time, `× g` when gated, and the rest one at a time: the
    /// shape of ggml's AVX-512 loops, whose `e^x` differs from the AVX2 form's in the last
    /// bit now and then.
    ///
    /// # Safety
    /// AVX-512 (F and DQ) is available; `x`, `y` and `g` (when given) address `n` packed
    /// floats; `y` may equal `x` but overlaps no gate.
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma,f16c")]
    unsafe fn silu_sixteens(n: usize, y: *mut f32, x: *const f32, g: Option<*const f32>) {
        let mut i = 0;
        // SAFETY: every access is below `n` (caller's contract); loads precede stores.
        unsafe {
            while i + 16 <= n {
                let mut v = silu16(_mm512_loadu_ps(x.add(i)));
                if let Some(g) = g {
                    v = _mm512_mul_ps(v, _mm512_loadu_ps(g.add(i)));
                }
                _mm512_storeu_ps(y.add(i), v);
                i += 16;
            }
            for i in i..n {
                *y.add(i) = super::silu(*x.add(i)) * g.map_or(1.0, |g| *g.add(i));
            }
        }
    }

    /// Each lane rounded to binary16 and looked up in `table`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn lookup8(table: &Table, x: __m256) -> __m256 {
        let h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x));
        // SAFETY: every index is a 16-bit value and the table has 65536 entries.
        unsafe { _mm256_i32gather_ps::<4>(table.0.as_ptr(), h) }
    }

    /// GELU with the reference's cut-offs: 0 at or below -10, `x` at or above 10.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn gelu8(table: &Table, x: __m256) -> __m256 {
        let v = lookup8(table, x);
        let high = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(10.0));
        let low = _mm256_cmp_ps::<_CMP_LE_OQ>(x, _mm256_set1_ps(-10.0));
        _mm256_andnot_ps(low, _mm256_blendv_ps(v, x, high))
    }

    /// Applies `f8` to whole vectors and `f1` to the tail.
    ///
    /// # Safety
    /// `x` and `y` address `n` packed floats (`y` may equal `x`).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn map(n: usize, y: *mut f32, x: *const f32, f8: impl Fn(__m256) -> __m256, f1: impl Fn(f32) -> f32) {
        let mut i = 0;
        // SAFETY: every access is below `n` (caller's contract); loads precede stores.
        unsafe {
            while i + 8 <= n {
                _mm256_storeu_ps(y.add(i), f8(_mm256_loadu_ps(x.add(i))));
                i += 8;
            }
            while i < n {
                *y.add(i) = f1(*x.add(i));
                i += 1;
            }
        }
    }

    /// # Safety
    /// AVX2, FMA and F16C are available; `x` and `y` address `n` packed floats.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn silu(n: usize, y: *mut f32, x: *const f32) {
        if features().has_avx512() {
            // SAFETY: AVX-512 was detected; the caller's contract.
            return unsafe { silu_sixteens(n, y, x, None) };
        }
        // SAFETY: the caller's contract.
        unsafe { map(n, y, x, |v| silu8(v), super::silu) }
    }

    /// # Safety
    /// As [`silu`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn sqr(n: usize, y: *mut f32, x: *const f32) {
        // SAFETY: the caller's contract.
        unsafe { map(n, y, x, |v| _mm256_mul_ps(v, v), |v| v * v) }
    }

    /// # Safety
    /// As [`silu`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn sqrt(n: usize, y: *mut f32, x: *const f32) {
        // SAFETY: the caller's contract.
        unsafe { map(n, y, x, |v| _mm256_sqrt_ps(v), f32::sqrt) }
    }

    /// # Safety
    /// As [`silu`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn gelu(n: usize, y: *mut f32, x: *const f32) {
        let t = gelu_table();
        // SAFETY: the caller's contract.
        unsafe { map(n, y, x, |v| gelu8(t, v), |v| gelu_tabled(t, v)) }
    }

    /// # Safety
    /// As [`silu`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn gelu_quick(n: usize, y: *mut f32, x: *const f32) {
        let t = gelu_quick_table();
        // SAFETY: the caller's contract.
        unsafe { map(n, y, x, |v| lookup8(t, v), |v| t.get(v)) }
    }

    /// Applies `f8(x, g)` to whole vectors and `f1` to the tail.
    ///
    /// # Safety
    /// The three rows hold `n` packed floats; `y` overlaps neither input.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn gated(
        n: usize,
        y: *mut f32,
        x: *const f32,
        g: *const f32,
        f8: impl Fn(__m256) -> __m256,
        f1: impl Fn(f32) -> f32,
    ) {
        let mut i = 0;
        // SAFETY: every access is below `n` (caller's contract).
        unsafe {
            while i + 8 <= n {
                let v = _mm256_mul_ps(f8(_mm256_loadu_ps(x.add(i))), _mm256_loadu_ps(g.add(i)));
                _mm256_storeu_ps(y.add(i), v);
                i += 8;
            }
            while i < n {
                *y.add(i) = f1(*x.add(i)) * *g.add(i);
                i += 1;
            }
        }
    }

    /// # Safety
    /// AVX2, FMA and F16C are available; the three rows hold `n` packed floats and `y`
    /// overlaps neither input.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn swiglu(n: usize, y: *mut f32, x: *const f32, g: *const f32) {
        if features().has_avx512() {
            // SAFETY: AVX-512 was detected; the caller's contract.
            return unsafe { silu_sixteens(n, y, x, Some(g)) };
        }
        // SAFETY: the caller's contract.
        unsafe { gated(n, y, x, g, |v| silu8(v), super::silu) }
    }

    /// # Safety
    /// As [`swiglu`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn geglu(n: usize, y: *mut f32, x: *const f32, g: *const f32) {
        let t = gelu_table();
        // SAFETY: the caller's contract.
        unsafe { gated(n, y, x, g, |v| gelu8(t, v), |v| gelu_tabled(t, v)) }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::core::ops::{elementwise, unary as unary_ops};
    use crate::cpu::kernels::testing::*;

    pub(crate) fn tol(ty: Type) -> f64 {
        match ty {
            Type::F16 => 2e-3,
            Type::BF16 => 1.6e-2,
            _ => 2e-6,
        }
    }

    /// The f64 reference of each unary op.
    pub(crate) fn reference(op: UnaryOp, x: f64) -> f64 {
        let gelu =
            |x: f64| 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * x * (1.0 + 0.044715 * x * x)).tanh());
        match op {
            UnaryOp::ABS => x.abs(),
            UnaryOp::SGN => x.signum() * f64::from(u8::from(x != 0.0)),
            UnaryOp::NEG => -x,
            UnaryOp::STEP => f64::from(u8::from(x > 0.0)),
            UnaryOp::TANH => x.tanh(),
            UnaryOp::ELU => {
                if x > 0.0 {
                    x
                } else {
                    x.exp_m1()
                }
            }
            UnaryOp::RELU => x.max(0.0),
            UnaryOp::SIGMOID => 1.0 / (1.0 + (-x).exp()),
            UnaryOp::GELU => gelu(x),
            UnaryOp::GELU_QUICK => x / (1.0 + (-1.702 * x).exp()),
            UnaryOp::SILU => x / (1.0 + (-x).exp()),
            UnaryOp::HARDSWISH => x * ((x + 3.0) / 6.0).clamp(0.0, 1.0),
            UnaryOp::HARDSIGMOID => ((x + 3.0) / 6.0).clamp(0.0, 1.0),
            UnaryOp::EXP => x.exp(),
            UnaryOp::EXPM1 => x.exp_m1(),
            UnaryOp::SOFTPLUS => {
                if x > 20.0 {
                    x
                } else {
                    x.exp().ln_1p()
                }
            }
            UnaryOp::GELU_ERF => 0.5 * x * (1.0 + f64::from(erf((x / std::f64::consts::SQRT_2) as f32))),
            UnaryOp::FLOOR => x.floor(),
            UnaryOp::CEIL => x.ceil(),
            UnaryOp::ROUND => x.round(),
            UnaryOp::TRUNC => x.trunc(),
            _ => unreachable!(),
        }
    }

    pub(crate) fn input(i: usize) -> f64 {
        noise(i, 3) * 4.0
    }

    #[test]
    fn every_unary_op_on_every_type() {
        for op in (0..UnaryOp::COUNT).map(UnaryOp).filter(|&o| o != UnaryOp::XIELU) {
            for ty in [Type::F32, Type::F16, Type::BF16] {
                for_each_team(|nth, use_ref| {
                    let mut c = ctx();
                    let a = c.new_tensor(ty, &[37, 3, 2]);
                    put(a, input);
                    let r = unary_ops::unary(&mut c, a, op);
                    assert!(unary_supports(&r));
                    run(&mut c, r, unary, nth, 0, use_ref);
                    let x = values(a);
                    let want: Vec<f64> = x.iter().map(|&v| reference(op, v)).collect();
                    // the binary16 tables round inputs and results
                    let t = if matches!(op, UnaryOp::GELU | UnaryOp::GELU_QUICK) { tol(ty).max(2e-3) } else { tol(ty) };
                    assert_close(&values(r), &want, t, &format!("{} {} nth={nth} ref={use_ref}", op.name(), ty.name()));
                });
            }
        }
    }

    #[test]
    fn in_place_and_f16_to_f32_and_xielu() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[41, 2]);
            put(a, input);
            let x = values(a);
            let r = unary_ops::silu_inplace(&mut c, a);
            run(&mut c, r, unary, nth, 0, use_ref);
            let want: Vec<f64> = x.iter().map(|&v| reference(UnaryOp::SILU, v)).collect();
            assert_close(&values(a), &want, 2e-6, "silu in place");

            let h = c.new_tensor(Type::F16, &[9, 2]);
            put(h, input);
            let out = c.new_tensor(Type::F32, &[9, 2]);
            let r = unary_ops::exp(&mut c, h);
            // retarget the result to an f32 tensor of the same shape
            let rr = r.get_mut();
            rr.type_ = Type::F32;
            rr.nb = out.nb;
            rr.data = out.data;
            assert!(unary_supports(&r));
            run(&mut c, r, unary, nth, 0, use_ref);
            let want: Vec<f64> = values(h).iter().map(|v| v.exp()).collect();
            assert_close(&values(out), &want, 2e-6, "f16 -> f32");

            let a = c.new_tensor(Type::F32, &[16]);
            put(a, input);
            let r = unary_ops::xielu(&mut c, a, 0.8, 0.8, 0.5, -1e-6);
            run(&mut c, r, unary, nth, 0, use_ref);
            let (an, ap, beta, eps) = (r.op_param_f32(1) as f64, r.op_param_f32(2) as f64, 0.5, -1e-6f32 as f64);
            let want: Vec<f64> = values(a)
                .iter()
                .map(|&x| if x > 0.0 { ap * x * x + beta * x } else { (x.min(eps).exp_m1() - x) * an + beta * x })
                .collect();
            assert_close(&values(r), &want, 1e-5, "xielu");
        });
    }

    #[test]
    fn gelu_matches_the_binary16_table_exactly() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4099]);
        put(a, |i| (i as f64 - 2049.0) / 150.0);
        let r = unary_ops::gelu(&mut c, a);
        run(&mut c, r, unary, 2, 0, false);
        let simd = values(r);
        let r2 = unary_ops::gelu(&mut c, a);
        run(&mut c, r2, unary, 1, 0, true);
        assert_eq!(simd, values(r2));
        for (x, y) in values(a).iter().zip(&simd) {
            let want = if *x <= -10.0 {
                0.0
            } else if *x >= 10.0 {
                *x
            } else {
                let h = fp16_to_fp32(fp32_to_fp16(*x as f32));
                f64::from(fp16_to_fp32(fp32_to_fp16(gelu_formula(h))))
            };
            assert_eq!(*y, want, "gelu({x})");
        }
    }

    #[test]
    fn math_ops() {
        type Make = fn(&mut crate::core::context::Context, TensorPtr) -> TensorPtr;
        type Kernel = fn(&ComputeParams, TensorPtr);
        type Reference = fn(f64) -> f64;
        let ops: [(Make, Kernel, Reference); 5] = [
            (elementwise::sqr, sqr, |x| x * x),
            (elementwise::sqrt, sqrt, f64::sqrt),
            (elementwise::log, log, f64::ln),
            (elementwise::sin, sin, f64::sin),
            (elementwise::cos, cos, f64::cos),
        ];
        for (make, kernel, f) in ops {
            for ty in [Type::F32, Type::F16, Type::BF16] {
                for_each_team(|nth, use_ref| {
                    let mut c = ctx();
                    let a = c.new_tensor(ty, &[33, 4]);
                    put(a, |i| noise(i, 5).abs() * 3.0 + 0.01);
                    let r = make(&mut c, a);
                    assert!(math_supports(&r));
                    run(&mut c, r, kernel, nth, 0, use_ref);
                    let want: Vec<f64> = values(a).iter().map(|&v| f(v)).collect();
                    assert_close(&values(r), &want, tol(ty), r.op.name());
                });
            }
        }
    }
}
