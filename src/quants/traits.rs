//! `struct ggml_type_traits`: the per-type table C code reads through `ggml_get_type_traits`,
//! with the size facts from `core::types` and pointers to the exported row converters.

use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

use crate::core::types::Type;
use crate::ffi::quants as rows;

/// `ggml_to_float_t`.
pub type ToFloatFn = unsafe extern "C" fn(x: *const c_void, y: *mut f32, k: i64);
/// `ggml_from_float_t`.
pub type FromFloatFn = unsafe extern "C" fn(x: *const f32, y: *mut c_void, k: i64);

/// `struct ggml_type_traits` (56 bytes).
#[repr(C)]
pub struct TypeTraits {
    pub type_name: *const c_char,
    pub blck_size: i64,
    pub blck_size_interleave: i64,
    pub type_size: usize,
    pub is_quantized: bool,
    pub to_float: Option<ToFloatFn>,
    pub from_float_ref: Option<FromFloatFn>,
}

const _: () = assert!(std::mem::size_of::<TypeTraits>() == 56);
const _: () = assert!(std::mem::offset_of!(TypeTraits, to_float) == 40);

struct Table(Vec<TypeTraits>);

// SAFETY: the table is built once and never written again; its pointers are to static,
// immutable strings and to functions.
unsafe impl Sync for Table {}
// SAFETY: as above; nothing in it is tied to a thread.
unsafe impl Send for Table {}

/// The traits of a valid type (retired slots included), aborting on other values.
pub fn type_traits(ty: Type) -> &'static TypeTraits {
    crate::ggml_assert!(ty.is_valid(), "ggml_get_type_traits: invalid type {}", ty.0);
    static TABLE: OnceLock<Table> = OnceLock::new();
    let table = TABLE.get_or_init(|| Table((0..Type::COUNT).map(|t| build(Type(t))).collect()));
    &table.0[ty.0 as usize]
}

fn build(ty: Type) -> TypeTraits {
    let info = ty.traits();
    let (to_float, from_float_ref) = converters(ty);
    TypeTraits {
        type_name: crate::ffi::static_c_str(info.name),
        blck_size: info.blck_size,
        blck_size_interleave: 0,
        type_size: info.type_size,
        is_quantized: info.is_quantized,
        to_float,
        from_float_ref,
    }
}

/// The row converters a type has so far: as in ggml, f32 has none and q8_1 only a quantizer.
fn converters(ty: Type) -> (Option<ToFloatFn>, Option<FromFloatFn>) {
    match ty {
        Type::F16 => (Some(to_float(rows::ggml_fp16_to_fp32_row)), Some(from_float(rows::ggml_fp32_to_fp16_row))),
        Type::BF16 => (Some(to_float(rows::ggml_bf16_to_fp32_row)), Some(from_float(rows::ggml_fp32_to_bf16_row_ref))),
        Type::Q4_0 => (Some(to_float(rows::dequantize_row_q4_0)), Some(from_float(rows::quantize_row_q4_0_ref))),
        Type::Q4_1 => (Some(to_float(rows::dequantize_row_q4_1)), Some(from_float(rows::quantize_row_q4_1_ref))),
        Type::Q5_0 => (Some(to_float(rows::dequantize_row_q5_0)), Some(from_float(rows::quantize_row_q5_0_ref))),
        Type::Q5_1 => (Some(to_float(rows::dequantize_row_q5_1)), Some(from_float(rows::quantize_row_q5_1_ref))),
        Type::Q8_0 => (Some(to_float(rows::dequantize_row_q8_0)), Some(from_float(rows::quantize_row_q8_0_ref))),
        Type::Q8_1 => (None, Some(from_float(rows::quantize_row_q8_1_ref))),
        Type::Q2_K => (Some(to_float(rows::dequantize_row_q2_K)), Some(from_float(rows::quantize_row_q2_K_ref))),
        Type::Q3_K => (Some(to_float(rows::dequantize_row_q3_K)), Some(from_float(rows::quantize_row_q3_K_ref))),
        Type::Q4_K => (Some(to_float(rows::dequantize_row_q4_K)), Some(from_float(rows::quantize_row_q4_K_ref))),
        Type::Q5_K => (Some(to_float(rows::dequantize_row_q5_K)), Some(from_float(rows::quantize_row_q5_K_ref))),
        Type::Q6_K => (Some(to_float(rows::dequantize_row_q6_K)), Some(from_float(rows::quantize_row_q6_K_ref))),
        Type::Q1_0 => (Some(to_float(rows::dequantize_row_q1_0)), Some(from_float(rows::quantize_row_q1_0_ref))),
        Type::Q2_0 => (Some(to_float(rows::dequantize_row_q2_0)), Some(from_float(rows::quantize_row_q2_0_ref))),
        Type::MXFP4 => (Some(to_float(rows::dequantize_row_mxfp4)), Some(from_float(rows::quantize_row_mxfp4_ref))),
        Type::NVFP4 => (Some(to_float(rows::dequantize_row_nvfp4)), Some(from_float(rows::quantize_row_nvfp4_ref))),
        Type::TQ1_0 => (Some(to_float(rows::dequantize_row_tq1_0)), Some(from_float(rows::quantize_row_tq1_0_ref))),
        Type::TQ2_0 => (Some(to_float(rows::dequantize_row_tq2_0)), Some(from_float(rows::quantize_row_tq2_0_ref))),
        Type::IQ4_NL => (Some(to_float(rows::dequantize_row_iq4_nl)), Some(from_float(rows::quantize_row_iq4_nl_ref))),
        Type::IQ4_XS => (Some(to_float(rows::dequantize_row_iq4_xs)), Some(from_float(rows::quantize_row_iq4_xs_ref))),
        // As in ggml, iq2_xxs, iq2_xs and iq1_s (which need an importance matrix) and iq1_m have
        // no reference row quantizer.
        Type::IQ2_XXS => (Some(to_float(rows::dequantize_row_iq2_xxs)), None),
        Type::IQ2_XS => (Some(to_float(rows::dequantize_row_iq2_xs)), None),
        Type::IQ2_S => (Some(to_float(rows::dequantize_row_iq2_s)), Some(from_float(rows::quantize_row_iq2_s_ref))),
        Type::IQ3_XXS => {
            (Some(to_float(rows::dequantize_row_iq3_xxs)), Some(from_float(rows::quantize_row_iq3_xxs_ref)))
        }
        Type::IQ3_S => (Some(to_float(rows::dequantize_row_iq3_s)), Some(from_float(rows::quantize_row_iq3_s_ref))),
        Type::IQ1_S => (Some(to_float(rows::dequantize_row_iq1_s)), None),
        Type::IQ1_M => (Some(to_float(rows::dequantize_row_iq1_m)), None),
        _ => (None, None),
    }
}

/// A typed row converter as the untyped C function pointer.
fn to_float<T>(f: extern "C" fn(*const T, *mut f32, i64)) -> ToFloatFn {
    // SAFETY: data pointers of any type are passed identically in the C ABI, so a function
    // taking `*const T` can be called through a pointer declared with `*const c_void`.
    unsafe { std::mem::transmute::<extern "C" fn(*const T, *mut f32, i64), ToFloatFn>(f) }
}

fn from_float<T>(f: extern "C" fn(*const f32, *mut T, i64)) -> FromFloatFn {
    // SAFETY: as in `to_float`.
    unsafe { std::mem::transmute::<extern "C" fn(*const f32, *mut T, i64), FromFloatFn>(f) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_follows_type_facts() {
        let q4 = type_traits(Type::Q4_0);
        assert_eq!((q4.blck_size, q4.type_size, q4.is_quantized), (32, 18, true));
        assert!(q4.to_float.is_some() && q4.from_float_ref.is_some());
        let f32_traits = type_traits(Type::F32);
        assert!(f32_traits.to_float.is_none() && f32_traits.from_float_ref.is_none());
        assert!(type_traits(Type::Q8_1).to_float.is_none());
        assert!(type_traits(Type::IQ2_XXS).from_float_ref.is_none());
        assert!(type_traits(Type::Q8_K).from_float_ref.is_none());
        assert_eq!(type_traits(Type(4)).blck_size, 0);
    }

    #[test]
    fn table_converters_round_trip() {
        let x: Vec<f32> = (0..64).map(|i| i as f32 / 8.0 - 4.0).collect();
        for ty in [Type::F16, Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0] {
            let t = type_traits(ty);
            let mut bytes = vec![0u8; ty.row_size(64)];
            let mut y = vec![0.0f32; 64];
            // SAFETY: the buffers hold 64 values in each representation.
            unsafe {
                (t.from_float_ref.unwrap())(x.as_ptr(), bytes.as_mut_ptr().cast(), 64);
                (t.to_float.unwrap())(bytes.as_ptr().cast(), y.as_mut_ptr(), 64);
            }
            assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() <= 0.4), "{}", ty.name());
        }
    }
}
