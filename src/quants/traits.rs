//! `struct ggml_type_traits`: the per-type table C code reads through `ggml_get_type_traits`,
//! with the size facts from `core::types` and pointers to the row converters of `rows`.

use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

use super::BlockFormat;
use super::formats::{is_weight_format, with_block_format};
use super::rows::{self, dequantize_row_to_f32, quantize_row_ref};
use crate::core::types::Type;

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
        type_name: crate::core::c_str::static_c_str(info.name),
        blck_size: info.blck_size,
        blck_size_interleave: 0,
        type_size: info.type_size,
        is_quantized: info.is_quantized,
        to_float,
        from_float_ref,
    }
}

/// The row converters of a type, as in ggml: f32 has none; every weight format a
/// dequantizer, and the reference row quantizer where its format says it has one
/// ([`BlockFormat::REF_QUANTIZER`]); the activation formats (q8_1, q8_K) no dequantizer.
fn converters(ty: Type) -> (Option<ToFloatFn>, Option<FromFloatFn>) {
    fn of<B: BlockFormat>() -> (Option<ToFloatFn>, Option<FromFloatFn>) {
        let (to_float, from_float): (ToFloatFn, FromFloatFn) = (dequantize_row_to_f32::<B>, quantize_row_ref::<B>);
        (is_weight_format(B::TYPE).then_some(to_float), B::REF_QUANTIZER.then_some(from_float))
    }
    match ty {
        Type::F16 => (Some(rows::fp16_to_fp32_row), Some(rows::fp32_to_fp16_row)),
        Type::BF16 => (Some(rows::bf16_to_fp32_row), Some(rows::fp32_to_bf16_row)),
        _ => with_block_format!(ty, of(), _ => (None, None)),
    }
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
