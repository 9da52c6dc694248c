//! The dot products ggml-cpu exports by name (`ggml_vec_dot_*`, declared in the reference's
//! `vec.h` and `quants.h`): one per weight type, over rows of its activation type, with the
//! `ggml_vec_dot_t` signature its CPU type traits hold. Each is our dot kernel of that type;
//! the `_generic` twins, the reference's portable scalar code, are our kernels' scalar path,
//! which computes the same sums.
//!
//! As in ggml, `n` is a whole number of the weight type's blocks, and with `nrc > 1` the
//! `nrc`×`nrc` products of rows `bx`/`by` bytes apart go to `s[c·bs + r]` (the reference's x86
//! build computes only `nrc == 1`; ours computes every `nrc`).

use std::ffi::{c_int, c_void};

use super::type_traits::dot_rows;
use crate::core::types::Type;
use crate::cpu::kernels::dot::DotKernel;
use crate::quants::half::Bf16;

/// The products of `ty`'s weight rows with activation rows, on its SIMD path where `simd`
/// allows one, else on its scalar path.
///
/// # Safety
/// As for [`dot_rows`].
#[allow(clippy::too_many_arguments)]
unsafe fn dot(
    export: &str,
    ty: Type,
    simd: bool,
    n: c_int,
    s: *mut f32,
    bs: usize,
    vx: *const c_void,
    bx: usize,
    vy: *const c_void,
    by: usize,
    nrc: c_int,
) {
    let Some(kernel) = DotKernel::for_type(ty) else {
        crate::ggml_abort!("{}: no dot product of {} in this build", export, ty.name())
    };
    if n > 0 && (s.is_null() || vx.is_null() || vy.is_null()) {
        crate::ggml_abort!("{}: NULL row or result", export);
    }
    // SAFETY: passed on from the caller.
    unsafe { dot_rows(kernel, simd, n, s, bs, vx, bx, vy, by, nrc) }
}

/// Exports each named dot product, the SIMD one (`name`) and, where given, the scalar twin.
/// The rows are `const void *` unless a pointer type follows in parentheses: vec.h declares
/// the float types' products over their element pointers.
macro_rules! vec_dots {
    (@rows) => { *const c_void };
    (@rows $rows:ty) => { $rows };
    ($($name:ident $(/ $generic:ident)? => $ty:ident $(($rows:ty))?,)*) => {$(
        #[unsafe(no_mangle)]
        #[allow(non_snake_case)]
        pub extern "C" fn $name(
            n: c_int,
            s: *mut f32,
            bs: usize,
            vx: vec_dots!(@rows $($rows)?),
            bx: usize,
            vy: vec_dots!(@rows $($rows)?),
            by: usize,
            nrc: c_int,
        ) {
            let (vx, vy) = (vx as *const c_void, vy as *const c_void);
            // SAFETY: this function's C contract is `ggml_vec_dot_t`'s (see `dot_rows`).
            unsafe { dot(stringify!($name), Type::$ty, true, n, s, bs, vx, bx, vy, by, nrc) }
        }
        $(
            #[unsafe(no_mangle)]
            #[allow(non_snake_case)]
            pub extern "C" fn $generic(
                n: c_int, s: *mut f32, bs: usize, vx: *const c_void, bx: usize, vy: *const c_void, by: usize, nrc: c_int,
            ) {
                // SAFETY: as for the SIMD twin.
                unsafe { dot(stringify!($generic), Type::$ty, false, n, s, bs, vx, bx, vy, by, nrc) }
            }
        )?
    )*};
}

vec_dots! {
    ggml_vec_dot_f32 => F32(*const f32),
    // ggml_fp16_t is a uint16_t; vec.h takes these two's rows as non-const
    ggml_vec_dot_f16 => F16(*mut u16),
    ggml_vec_dot_bf16 => BF16(*mut Bf16),
    ggml_vec_dot_q1_0_q8_0 / ggml_vec_dot_q1_0_q8_0_generic => Q1_0,
    // (the reference's x86 build has no SIMD Q2_0 product, so it exports no twin)
    ggml_vec_dot_q2_0_q8_0 => Q2_0,
    ggml_vec_dot_q4_0_q8_0 / ggml_vec_dot_q4_0_q8_0_generic => Q4_0,
    ggml_vec_dot_q4_1_q8_1 / ggml_vec_dot_q4_1_q8_1_generic => Q4_1,
    ggml_vec_dot_q5_0_q8_0 / ggml_vec_dot_q5_0_q8_0_generic => Q5_0,
    ggml_vec_dot_q5_1_q8_1 / ggml_vec_dot_q5_1_q8_1_generic => Q5_1,
    ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q8_0_q8_0_generic => Q8_0,
    ggml_vec_dot_mxfp4_q8_0 / ggml_vec_dot_mxfp4_q8_0_generic => MXFP4,
    ggml_vec_dot_nvfp4_q8_0 / ggml_vec_dot_nvfp4_q8_0_generic => NVFP4,
    ggml_vec_dot_iq4_nl_q8_0 / ggml_vec_dot_iq4_nl_q8_0_generic => IQ4_NL,
    ggml_vec_dot_q2_K_q8_K / ggml_vec_dot_q2_K_q8_K_generic => Q2_K,
    ggml_vec_dot_q3_K_q8_K / ggml_vec_dot_q3_K_q8_K_generic => Q3_K,
    ggml_vec_dot_q4_K_q8_K / ggml_vec_dot_q4_K_q8_K_generic => Q4_K,
    ggml_vec_dot_q5_K_q8_K / ggml_vec_dot_q5_K_q8_K_generic => Q5_K,
    ggml_vec_dot_q6_K_q8_K / ggml_vec_dot_q6_K_q8_K_generic => Q6_K,
    ggml_vec_dot_tq1_0_q8_K / ggml_vec_dot_tq1_0_q8_K_generic => TQ1_0,
    ggml_vec_dot_tq2_0_q8_K / ggml_vec_dot_tq2_0_q8_K_generic => TQ2_0,
    ggml_vec_dot_iq4_xs_q8_K / ggml_vec_dot_iq4_xs_q8_K_generic => IQ4_XS,
    ggml_vec_dot_iq2_xxs_q8_K / ggml_vec_dot_iq2_xxs_q8_K_generic => IQ2_XXS,
    ggml_vec_dot_iq2_xs_q8_K / ggml_vec_dot_iq2_xs_q8_K_generic => IQ2_XS,
    ggml_vec_dot_iq2_s_q8_K / ggml_vec_dot_iq2_s_q8_K_generic => IQ2_S,
    ggml_vec_dot_iq3_xxs_q8_K / ggml_vec_dot_iq3_xxs_q8_K_generic => IQ3_XXS,
    ggml_vec_dot_iq3_s_q8_K / ggml_vec_dot_iq3_s_q8_K_generic => IQ3_S,
    ggml_vec_dot_iq1_s_q8_K / ggml_vec_dot_iq1_s_q8_K_generic => IQ1_S,
    ggml_vec_dot_iq1_m_q8_K / ggml_vec_dot_iq1_m_q8_K_generic => IQ1_M,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::cpu_kernels::type_traits::{VecDotFn, type_traits_cpu};

    #[test]
    fn exports_agree_with_the_type_traits() {
        let x: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.02).collect();
        let y: Vec<f32> = (0..256).map(|i| ((i * 53 % 97) as f32 - 48.0) * 0.03).collect();
        let quantize = |ty: Type, v: &[f32]| {
            let mut out = vec![0u8; ty.row_size(v.len() as i64)];
            let from_float = type_traits_cpu(ty).from_float.expect("from_float");
            // SAFETY: 256 floats in, room for their row out.
            unsafe { from_float(v.as_ptr(), out.as_mut_ptr().cast(), v.len() as i64) };
            out
        };
        let cases: [(Type, VecDotFn, Option<VecDotFn>); 3] = [
            (Type::Q4_0, ggml_vec_dot_q4_0_q8_0, Some(ggml_vec_dot_q4_0_q8_0_generic)),
            (Type::Q5_1, ggml_vec_dot_q5_1_q8_1, Some(ggml_vec_dot_q5_1_q8_1_generic)),
            (Type::Q6_K, ggml_vec_dot_q6_K_q8_K, Some(ggml_vec_dot_q6_K_q8_K_generic)),
        ];
        for (ty, simd, scalar) in cases {
            let traits = type_traits_cpu(ty);
            let (qx, qy) = (quantize(ty, &x), quantize(traits.vec_dot_type, &y));
            let run = |f: VecDotFn| {
                let mut s = f32::NAN;
                // SAFETY: one row of 256 values each, one result.
                unsafe { f(256, &mut s, 0, qx.as_ptr().cast(), 0, qy.as_ptr().cast(), 0, 1) };
                s
            };
            let want = run(traits.vec_dot.unwrap());
            assert_eq!(run(simd), want, "{}", ty.name());
            if let Some(scalar) = scalar {
                let got = run(scalar);
                assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0), "{}: {got} vs {want}", ty.name());
            }
        }

        // the float products take their element pointers, as vec.h declares them
        let mut want = f32::NAN;
        let mut got = f32::NAN;
        // SAFETY: one row of 256 floats each, one result.
        unsafe {
            type_traits_cpu(Type::F32).vec_dot.unwrap()(
                256,
                &mut want,
                0,
                x.as_ptr().cast(),
                0,
                y.as_ptr().cast(),
                0,
                1,
            );
            ggml_vec_dot_f32(256, &mut got, 0, x.as_ptr(), 0, y.as_ptr(), 0, 1);
        }
        assert_eq!(got, want, "f32");
    }
}
