//! `struct ggml_type_traits`: the per-type table C code reads through `ggml_get_type_traits`,
//! with the size facts from `core::types` and pointers to the row converters of `rows`.

use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

use super::fp4::{BlockMxfp4, BlockNvfp4};
use super::iq1::{BlockIq1M, BlockIq1S};
use super::iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
use super::iq3::{BlockIq3S, BlockIq3Xxs};
use super::iq4::{BlockIq4Nl, BlockIq4Xs};
use super::k_quants::{BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K};
use super::low_bit::{BlockQ1_0, BlockQ2_0};
use super::q4::{BlockQ4_0, BlockQ4_1};
use super::q5::{BlockQ5_0, BlockQ5_1};
use super::q8::{BlockQ8_0, BlockQ8_1};
use super::rows::{self, dequantize_row_to_f32 as to_f32, quantize_row_ref as from_f32};
use super::ternary::{BlockTq1_0, BlockTq2_0};
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

/// The row converters a type has so far: as in ggml, f32 has none and q8_1 only a quantizer.
fn converters(ty: Type) -> (Option<ToFloatFn>, Option<FromFloatFn>) {
    match ty {
        Type::F16 => (Some(rows::fp16_to_fp32_row), Some(rows::fp32_to_fp16_row)),
        Type::BF16 => (Some(rows::bf16_to_fp32_row), Some(rows::fp32_to_bf16_row)),
        Type::Q4_0 => (Some(to_f32::<BlockQ4_0>), Some(from_f32::<BlockQ4_0>)),
        Type::Q4_1 => (Some(to_f32::<BlockQ4_1>), Some(from_f32::<BlockQ4_1>)),
        Type::Q5_0 => (Some(to_f32::<BlockQ5_0>), Some(from_f32::<BlockQ5_0>)),
        Type::Q5_1 => (Some(to_f32::<BlockQ5_1>), Some(from_f32::<BlockQ5_1>)),
        Type::Q8_0 => (Some(to_f32::<BlockQ8_0>), Some(from_f32::<BlockQ8_0>)),
        Type::Q8_1 => (None, Some(from_f32::<BlockQ8_1>)),
        Type::Q2_K => (Some(to_f32::<BlockQ2K>), Some(from_f32::<BlockQ2K>)),
        Type::Q3_K => (Some(to_f32::<BlockQ3K>), Some(from_f32::<BlockQ3K>)),
        Type::Q4_K => (Some(to_f32::<BlockQ4K>), Some(from_f32::<BlockQ4K>)),
        Type::Q5_K => (Some(to_f32::<BlockQ5K>), Some(from_f32::<BlockQ5K>)),
        Type::Q6_K => (Some(to_f32::<BlockQ6K>), Some(from_f32::<BlockQ6K>)),
        Type::Q1_0 => (Some(to_f32::<BlockQ1_0>), Some(from_f32::<BlockQ1_0>)),
        Type::Q2_0 => (Some(to_f32::<BlockQ2_0>), Some(from_f32::<BlockQ2_0>)),
        Type::MXFP4 => (Some(to_f32::<BlockMxfp4>), Some(from_f32::<BlockMxfp4>)),
        Type::NVFP4 => (Some(to_f32::<BlockNvfp4>), Some(from_f32::<BlockNvfp4>)),
        Type::TQ1_0 => (Some(to_f32::<BlockTq1_0>), Some(from_f32::<BlockTq1_0>)),
        Type::TQ2_0 => (Some(to_f32::<BlockTq2_0>), Some(from_f32::<BlockTq2_0>)),
        Type::IQ4_NL => (Some(to_f32::<BlockIq4Nl>), Some(from_f32::<BlockIq4Nl>)),
        Type::IQ4_XS => (Some(to_f32::<BlockIq4Xs>), Some(from_f32::<BlockIq4Xs>)),
        // As in ggml, iq2_xxs, iq2_xs and iq1_s (which need an importance matrix) and iq1_m have
        // no reference row quantizer.
        Type::IQ2_XXS => (Some(to_f32::<BlockIq2Xxs>), None),
        Type::IQ2_XS => (Some(to_f32::<BlockIq2Xs>), None),
        Type::IQ2_S => (Some(to_f32::<BlockIq2S>), Some(from_f32::<BlockIq2S>)),
        Type::IQ3_XXS => (Some(to_f32::<BlockIq3Xxs>), Some(from_f32::<BlockIq3Xxs>)),
        Type::IQ3_S => (Some(to_f32::<BlockIq3S>), Some(from_f32::<BlockIq3S>)),
        Type::IQ1_S => (Some(to_f32::<BlockIq1S>), None),
        Type::IQ1_M => (Some(to_f32::<BlockIq1M>), None),
        _ => (None, None),
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
