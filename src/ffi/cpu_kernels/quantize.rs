//! The row quantizers ggml-cpu exports by name (`quantize_row_*`, declared in the reference's
//! `quants.h`): each type's `from_float` in the CPU type traits, which the matrix product
//! uses to convert activations (`ggml_get_type_traits_cpu(type)->from_float`). For the
//! activation formats Q8_0 and Q8_1 that is the CPU kernels' own quantizer (scale `127/amax`,
//! as the reference's x86 code); the `_generic` twins are the portable reference quantizers
//! that libggml-base also exports as `quantize_row_*_ref`.

use std::ffi::c_void;

use super::type_traits::type_traits_cpu;
use crate::core::types::Type;
use crate::quants::k_quants::BlockQ8K;
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};
use crate::quants::rows;

/// Quantizes `k` floats at `x` into `y` with the CPU type traits' converter of `ty`.
///
/// # Safety
/// `x` holds `k` floats (a whole number of `ty`'s blocks) and `y` room for their row.
unsafe fn from_float(export: &str, ty: Type, x: *const f32, y: *mut c_void, k: i64) {
    let Some(convert) = type_traits_cpu(ty).from_float else {
        crate::ggml_abort!("{}: no CPU converter to {} in this build", export, ty.name())
    };
    // SAFETY: passed on from the caller.
    unsafe { convert(x, y, k) }
}

/// Exports each named quantizer as the CPU type traits' `from_float` of its type.
macro_rules! cpu_quantizers {
    ($($name:ident => $ty:ident,)*) => {$(
        #[unsafe(no_mangle)]
        #[allow(non_snake_case)]
        pub extern "C" fn $name(x: *const f32, y: *mut c_void, k: i64) {
            // SAFETY: this function's C contract is the converter's: `k` floats in, room for
            // their row out.
            unsafe { from_float(stringify!($name), Type::$ty, x, y, k) }
        }
    )*};
}

cpu_quantizers! {
    quantize_row_q1_0 => Q1_0,
    quantize_row_q2_0 => Q2_0,
    quantize_row_q4_0 => Q4_0,
    quantize_row_q4_1 => Q4_1,
    quantize_row_q5_0 => Q5_0,
    quantize_row_q5_1 => Q5_1,
    quantize_row_q8_0 => Q8_0,
    quantize_row_q8_1 => Q8_1,
    quantize_row_mxfp4 => MXFP4,
    quantize_row_nvfp4 => NVFP4,
    quantize_row_q2_K => Q2_K,
    quantize_row_q3_K => Q3_K,
    quantize_row_q4_K => Q4_K,
    quantize_row_q5_K => Q5_K,
    quantize_row_q6_K => Q6_K,
    quantize_row_q8_K => Q8_K,
    quantize_row_tq1_0 => TQ1_0,
    quantize_row_tq2_0 => TQ2_0,
    quantize_row_iq4_nl => IQ4_NL,
    quantize_row_iq4_xs => IQ4_XS,
}

#[unsafe(no_mangle)]
pub extern "C" fn quantize_row_q8_0_generic(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: this function's C contract is the reference quantizer's.
    unsafe { rows::quantize_row_ref::<BlockQ8_0>(x, y, k) };
}

#[unsafe(no_mangle)]
pub extern "C" fn quantize_row_q8_1_generic(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: this function's C contract is the reference quantizer's.
    unsafe { rows::quantize_row_ref::<BlockQ8_1>(x, y, k) };
}

#[unsafe(no_mangle)]
#[allow(non_snake_case)]
pub extern "C" fn quantize_row_q8_K_generic(x: *const f32, y: *mut c_void, k: i64) {
    // (Q8_K has one quantizer: the CPU traits' is the reference one)
    crate::ffi::quants::quantize_row_q8_K_ref(x, y.cast::<BlockQ8K>(), k);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantizers_are_the_cpu_converters() {
        let x: Vec<f32> = (0..512).map(|i| ((i * 41 % 113) as f32 - 56.0) * 0.013).collect();
        let run = |f: extern "C" fn(*const f32, *mut c_void, i64), ty: Type| {
            let mut out = vec![0u8; ty.row_size(512)];
            f(x.as_ptr(), out.as_mut_ptr().cast(), 512);
            out
        };
        let via_traits = |ty: Type| {
            let mut out = vec![0u8; ty.row_size(512)];
            // SAFETY: 512 floats in, room for their row out.
            unsafe { (type_traits_cpu(ty).from_float.unwrap())(x.as_ptr(), out.as_mut_ptr().cast(), 512) };
            out
        };
        assert_eq!(run(quantize_row_q4_K, Type::Q4_K), via_traits(Type::Q4_K));
        assert_eq!(run(quantize_row_q8_0, Type::Q8_0), via_traits(Type::Q8_0));
        assert_eq!(run(quantize_row_q8_K_generic, Type::Q8_K), via_traits(Type::Q8_K));
        // the generic Q8_0 quantizer is libggml-base's reference one
        let mut reference = vec![0u8; Type::Q8_0.row_size(512)];
        crate::ffi::quants::quantize_row_q8_0_ref(x.as_ptr(), reference.as_mut_ptr().cast(), 512);
        assert_eq!(run(quantize_row_q8_0_generic, Type::Q8_0), reference);
    }
}
