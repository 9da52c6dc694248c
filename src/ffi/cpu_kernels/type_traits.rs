//! `struct ggml_type_traits_cpu`: each type's activation converter, dot product and the type
//! its dot product takes, the table `ggml_get_type_traits_cpu` returns (its converters and
//! dot products are C function pointers, so it lives at the C edge).

use crate::core::types::Type;
use crate::cpu::api::{fp32_to_bf16, fp32_to_fp16, fp32_to_i32};
use crate::cpu::features;
use crate::cpu::kernels::dot;
use crate::cpu::kernels::dot::{DotKernel, VecDot};
use crate::quants::formats::with_weight_format;
use crate::quants::half::Bf16;
use crate::quants::iq_grids::Grid;
use crate::quants::k_quants::BlockQ8K;
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};
use crate::quants::traits::FromFloatFn;
use crate::quants::{BlockFormat, blocks_mut};
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

/// `ggml_vec_dot_t`: `nrc`×`nrc` dot products of `n` values. Row `r` of `x` lies at
/// `x + r·bx`, row `c` of `y` at `y + c·by`; their product goes to `s[c·bs + r]`. With
/// `nrc == 1` the strides are unused.
pub type VecDotFn = unsafe extern "C" fn(
    n: c_int,
    s: *mut f32,
    bs: usize,
    x: *const c_void,
    bx: usize,
    y: *const c_void,
    by: usize,
    nrc: c_int,
);

/// `struct ggml_type_traits_cpu` (32 bytes): how the CPU backend converts activations for a
/// weight type (`from_float`, into `vec_dot_type`) and takes their dot products.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TypeTraitsCpu {
    pub from_float: Option<FromFloatFn>,
    pub vec_dot: Option<VecDotFn>,
    pub vec_dot_type: Type,
    /// Rows one `vec_dot` call handles (`nrc`); 0 for types without a dot product.
    pub nrows: i64,
}

const _: () = assert!(std::mem::size_of::<TypeTraitsCpu>() == 32);
const _: () = assert!(std::mem::offset_of!(TypeTraitsCpu, vec_dot_type) == 16);
const _: () = assert!(std::mem::offset_of!(TypeTraitsCpu, nrows) == 24);

/// A dot product this build has, through the C signature.
///
/// # Safety
/// As [`dot_rows`].
unsafe extern "C" fn vec_dot<T: VecDot>(
    n: c_int,
    s: *mut f32,
    bs: usize,
    x: *const c_void,
    bx: usize,
    y: *const c_void,
    by: usize,
    nrc: c_int,
) {
    let use_simd = features::features().has_avx2_fma();
    // SAFETY: passed on from the caller.
    unsafe { dot_rows(DotKernel::of::<T>(), use_simd, n, s, bs, x, bx, y, by, nrc) }
}

/// `ggml_vec_dot_t` over `kernel`: the `nrc`×`nrc` products of `n` values, on the SIMD path
/// when `simd` is set (and the processor has one), else on the scalar reference.
///
/// # Safety
/// `x` holds `nrc` rows of `n` values of the kernel's weight type (`bx` bytes apart), `y` as
/// many rows of its activation type (`by` bytes apart), and `s` room for the products at
/// `c·bs + r`; `n` is a whole number of blocks.
#[allow(clippy::too_many_arguments)]
pub unsafe fn dot_rows(
    kernel: DotKernel,
    simd: bool,
    n: c_int,
    s: *mut f32,
    bs: usize,
    x: *const c_void,
    bx: usize,
    y: *const c_void,
    by: usize,
    nrc: c_int,
) {
    let n = usize::try_from(n).unwrap_or(0);
    let (x_len, y_len) = (kernel.type_.row_size(n as i64), kernel.vec_dot_type.row_size(n as i64));
    let nrc = usize::try_from(nrc).unwrap_or(1).max(1);
    for c in 0..nrc {
        for r in 0..nrc {
            // SAFETY: the caller provides the rows and the output slots (the function's
            // contract); with one row the strides are not used.
            unsafe {
                let xr = std::slice::from_raw_parts(x.cast::<u8>().add(r * bx), x_len);
                let yc = std::slice::from_raw_parts(y.cast::<u8>().add(c * by), y_len);
                *s.add(c * bs + r) = kernel.dot(n, xr, yc, simd);
            }
        }
    }
}

/// Quantizes activations to Q8_0 as the CPU kernels do.
///
/// # Safety
/// As [`quantize_operands`].
unsafe extern "C" fn quantize_q8_0(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    if let Some((x, y)) = unsafe { quantize_operands::<BlockQ8_0>(x, y, k) } {
        dot::quantize_row_q8_0(x, blocks_mut::<BlockQ8_0>(y));
    }
}

/// Quantizes activations to Q8_1 as the CPU kernels do.
///
/// # Safety
/// As [`quantize_operands`].
unsafe extern "C" fn quantize_q8_1(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    if let Some((x, y)) = unsafe { quantize_operands::<BlockQ8_1>(x, y, k) } {
        dot::quantize_row_q8_1(x, blocks_mut::<BlockQ8_1>(y));
    }
}

/// Quantizes activations to Q8_K as the CPU kernels do (ggml's reference quantizer).
///
/// # Safety
/// As [`quantize_operands`].
unsafe extern "C" fn quantize_q8_k(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    if let Some((x, y)) = unsafe { quantize_operands::<BlockQ8K>(x, y, k) } {
        crate::quants::k_quants::quantize_row_q8_k(x, blocks_mut::<BlockQ8K>(y));
    }
}

/// The input and output of a quantizer as slices: None for an empty row.
///
/// # Safety
/// `x` holds `k` floats and `y` room for their blocks of `B`, not overlapping them.
unsafe fn quantize_operands<'a, B: BlockFormat>(
    x: *const f32,
    y: *mut c_void,
    k: i64,
) -> Option<(&'a [f32], &'a mut [u8])> {
    let k = usize::try_from(k).ok().filter(|&k| k > 0)?;
    crate::ggml_assert!(k.is_multiple_of(B::QK), "from_float: {} values are not whole {} blocks", k, B::TYPE.name());
    crate::ggml_assert!(!x.is_null() && !y.is_null(), "from_float: NULL row");
    // SAFETY: the caller provides `k` floats and room for their blocks.
    unsafe {
        Some((
            std::slice::from_raw_parts(x, k),
            std::slice::from_raw_parts_mut(y.cast::<u8>(), k / B::QK * std::mem::size_of::<B>()),
        ))
    }
}

/// `k` floats at `x` and room for `k` values of `T` at `y`, as slices (empty for `k <= 0`).
///
/// # Safety
/// `x` holds `k` floats and `y` room for `k` values of `T`, not overlapping them.
unsafe fn float_row_operands<'a, T>(x: *const f32, y: *mut c_void, k: i64) -> (&'a [f32], &'a mut [T]) {
    let k = usize::try_from(k).unwrap_or(0);
    if k == 0 {
        return (&[], &mut []);
    }
    crate::ggml_assert!(!x.is_null() && !y.is_null(), "from_float: NULL row");
    // SAFETY: the caller provides both rows.
    unsafe { (std::slice::from_raw_parts(x, k), std::slice::from_raw_parts_mut(y.cast::<T>(), k)) }
}

/// `from_float` of F32: a copy.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn f32_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<f32>(x, y, k) };
    y.copy_from_slice(x);
}

/// `from_float` of F16.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn f16_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<u16>(x, y, k) };
    fp32_to_fp16(x, y);
}

/// `from_float` of BF16.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn bf16_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<Bf16>(x, y, k) };
    fp32_to_bf16(x, y);
}

/// `from_float` of I32.
///
/// # Safety
/// As [`float_row_operands`].
unsafe extern "C" fn i32_from_float(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: passed on from the caller.
    let (x, y) = unsafe { float_row_operands::<i32>(x, y, k) };
    fp32_to_i32(x, y);
}

/// What ggml 0.25.1's table says of a type: its activation type, the rows one `vec_dot` call
/// handles, whether it has a dot product and whether it has a `from_float`.
#[derive(Clone, Copy)]
struct ReferenceEntry {
    vec_dot_type: Type,
    nrows: i64,
    has_dot: bool,
    has_from_float: bool,
}

fn reference_entry(ty: Type) -> ReferenceEntry {
    // every weight format: its dot product's activation type, and a `from_float` unless
    // quantizing needs the lattice-grid tables set up by ggml_quantize_init
    fn weights<T: VecDot>() -> ReferenceEntry {
        let has_from_float = Grid::of(T::TYPE).is_none();
        ReferenceEntry { vec_dot_type: T::VEC_DOT_TYPE, nrows: 1, has_dot: true, has_from_float }
    }
    match ty {
        Type::F32 | Type::F16 | Type::BF16 => {
            ReferenceEntry { vec_dot_type: ty, nrows: 1, has_dot: true, has_from_float: true }
        }
        Type::Q8_1 => ReferenceEntry { vec_dot_type: Type::Q8_1, nrows: 1, has_dot: false, has_from_float: true },
        Type::Q8_K | Type::I32 => {
            ReferenceEntry { vec_dot_type: Type::F32, nrows: 0, has_dot: false, has_from_float: true }
        }
        _ => with_weight_format!(ty, weights(), _ => ReferenceEntry {
            vec_dot_type: Type::F32,
            nrows: 0,
            has_dot: false,
            has_from_float: false
        }),
    }
}

/// The C face of the dot product of `ty`, for every type ggml has one for: the float types
/// and the weight formats.
fn dot_fn(ty: Type) -> Option<VecDotFn> {
    fn of<T: VecDot>() -> Option<VecDotFn> {
        Some(vec_dot::<T>)
    }
    match ty {
        Type::F32 => of::<f32>(),
        Type::F16 => of::<u16>(),
        Type::BF16 => of::<Bf16>(),
        _ => with_weight_format!(ty, of(), _ => None),
    }
}

/// The converter into `ty` this build has: the CPU kernels' own for the float types and the
/// activation formats, the reference quantizer for the others.
fn from_float_of(ty: Type) -> Option<FromFloatFn> {
    match ty {
        Type::F32 => Some(f32_from_float),
        Type::F16 => Some(f16_from_float),
        Type::BF16 => Some(bf16_from_float),
        Type::I32 => Some(i32_from_float),
        Type::Q8_0 => Some(quantize_q8_0),
        Type::Q8_1 => Some(quantize_q8_1),
        Type::Q8_K => Some(quantize_q8_k),
        _ => crate::quants::traits::type_traits(ty).from_float_ref,
    }
}

const N_TYPES: usize = Type::COUNT as usize;

/// The table: ggml 0.25.1's activation types and row counts for every type, with the
/// converters and dot products this build has. A type that should have a dot product but has
/// none here (or whose activation format cannot be made) gets no `from_float` either, so that
/// callers who test a type by its `from_float` (as ggml's test-quantize-fns does) skip it.
fn build_table() -> [TypeTraitsCpu; N_TYPES] {
    let mut table: [TypeTraitsCpu; N_TYPES] = std::array::from_fn(|t| {
        let ty = Type(t as i32);
        let r = reference_entry(ty);
        let vec_dot = if r.has_dot && dot::DotKernel::for_type(ty).is_some() { dot_fn(ty) } else { None };
        let from_float = if r.has_from_float { from_float_of(ty) } else { None };
        TypeTraitsCpu { from_float, vec_dot, vec_dot_type: r.vec_dot_type, nrows: r.nrows }
    });
    for t in 0..N_TYPES {
        let r = reference_entry(Type(t as i32));
        let activations = table[r.vec_dot_type.0 as usize].from_float.is_some();
        if r.has_dot && (table[t].vec_dot.is_none() || !activations) {
            table[t].from_float = None;
        }
    }
    table
}

/// `ggml_get_type_traits_cpu`: the entry of a valid type (aborts on other values).
pub fn type_traits_cpu(ty: Type) -> &'static TypeTraitsCpu {
    static TABLE: OnceLock<[TypeTraitsCpu; N_TYPES]> = OnceLock::new();
    match usize::try_from(ty.0).ok().and_then(|i| TABLE.get_or_init(build_table).get(i)) {
        Some(t) => t,
        None => crate::ggml_abort!("ggml_get_type_traits_cpu: invalid type {}", ty.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::types::Type;
    use crate::cpu::kernels::dot::vec_dot_type;

    #[test]
    fn type_traits_follow_the_reference_table() {
        assert_eq!(vec_dot_type(Type::Q4_0), Type::Q8_0);
        assert_eq!(vec_dot_type(Type::Q5_1), Type::Q8_1);
        assert_eq!(vec_dot_type(Type::Q4_K), Type::Q8_K);
        assert_eq!(vec_dot_type(Type::F16), Type::F16);
        assert_eq!(vec_dot_type(Type::I8), Type::F32);
        let f32_traits = type_traits_cpu(Type::F32);
        assert!(f32_traits.from_float.is_some() && f32_traits.vec_dot.is_some());
        assert_eq!(f32_traits.nrows, 1);
        let i32_traits = type_traits_cpu(Type::I32);
        assert!(i32_traits.from_float.is_some() && i32_traits.vec_dot.is_none());
        assert_eq!((type_traits_cpu(Type::Q8_K).nrows, vec_dot_type(Type::Q8_K)), (0, Type::F32));
        // a type is offered whole (converter, dot product, activation converter) or not at all
        for t in 0..Type::COUNT {
            let tr = type_traits_cpu(Type(t));
            if tr.from_float.is_some() && tr.nrows > 0 && Type(t) != Type::Q8_1 {
                assert!(tr.vec_dot.is_some() && type_traits_cpu(tr.vec_dot_type).from_float.is_some(), "type {t}");
            }
        }
        assert!(type_traits_cpu(Type::IQ2_XXS).from_float.is_none());
    }

    #[test]
    fn activation_types_are_ggml_s() {
        // ggml 0.25.1's table, written out: the activation type and rows per call of each type
        let by_q8_0 =
            [Type::Q4_0, Type::Q5_0, Type::Q8_0, Type::Q1_0, Type::Q2_0, Type::MXFP4, Type::NVFP4, Type::IQ4_NL];
        let by_q8_1 = [Type::Q4_1, Type::Q5_1];
        let grids = [Type::IQ2_XXS, Type::IQ2_XS, Type::IQ3_XXS, Type::IQ3_S, Type::IQ2_S, Type::IQ1_S, Type::IQ1_M];
        let by_q8_k =
            [Type::Q2_K, Type::Q3_K, Type::Q4_K, Type::Q5_K, Type::Q6_K, Type::IQ4_XS, Type::TQ1_0, Type::TQ2_0];
        for ty in (0..Type::COUNT).map(Type) {
            let expected = match ty {
                Type::F32 | Type::F16 | Type::BF16 | Type::Q8_1 => (ty, 1),
                _ if by_q8_0.contains(&ty) => (Type::Q8_0, 1),
                _ if by_q8_1.contains(&ty) => (Type::Q8_1, 1),
                _ if by_q8_k.contains(&ty) || grids.contains(&ty) => (Type::Q8_K, 1),
                _ => (Type::F32, 0),
            };
            let traits = type_traits_cpu(ty);
            assert_eq!((traits.vec_dot_type, traits.nrows), expected, "{}", ty.name());
            assert_eq!(traits.vec_dot.is_some(), expected.1 == 1 && ty != Type::Q8_1, "{}", ty.name());
            if grids.contains(&ty) {
                assert!(traits.from_float.is_none(), "{}", ty.name());
            }
        }
    }

    #[test]
    fn vec_dot_through_the_c_pointer() {
        let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.25).collect();
        let y: Vec<f32> = (0..64).map(|i| 1.0 - i as f32 * 0.01).collect();
        let expected: f32 = x.iter().zip(&y).map(|(a, b)| a * b).sum();

        let f32_traits = type_traits_cpu(Type::F32);
        let mut s = 0.0f32;
        // SAFETY: two rows of 64 floats and one output slot.
        unsafe {
            (f32_traits.vec_dot.unwrap())(64, &mut s, 0, x.as_ptr().cast(), 0, y.as_ptr().cast(), 0, 1);
        }
        assert!((s - expected).abs() < 1e-2 * expected.abs(), "{s} vs {expected}");

        // Q8_0 weights against Q8_0 activations, both made by the traits' from_float
        let q8 = type_traits_cpu(Type::Q8_0);
        let mut qx = vec![0u8; Type::Q8_0.row_size(64)];
        let mut qy = vec![0u8; Type::Q8_0.row_size(64)];
        // SAFETY: 64 floats in, two blocks' room out; then two rows of two blocks each.
        unsafe {
            (q8.from_float.unwrap())(x.as_ptr(), qx.as_mut_ptr().cast(), 64);
            (q8.from_float.unwrap())(y.as_ptr(), qy.as_mut_ptr().cast(), 64);
            (q8.vec_dot.unwrap())(64, &mut s, 0, qx.as_ptr().cast(), 0, qy.as_ptr().cast(), 0, 1);
        }
        assert!((s - expected).abs() < 2e-2 * expected.abs(), "{s} vs {expected}");
    }
}
