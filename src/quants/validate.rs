//! `ggml_validate_row_data`: rejects rows whose float values or block scales are NaN or
//! infinite (and MXFP4 blocks with the reserved exponent), reporting the first problem found.

use super::formats::with_block_format;
use super::half::Half;
use super::{BlockCheck, BlockFormat};
use crate::core::types::Type;

/// What has to be checked in a row of one type.
enum Check {
    /// Every value is an f32 / f64 / binary16 / bfloat16 to check.
    F32Values,
    F64Values,
    F16Values,
    Bf16Values,
    /// Each block, as its format says.
    Blocks(BlockCheck),
    /// Any bytes are valid.
    Nothing,
    /// Not a type ggml validates.
    Unknown,
}

fn check_for(ty: Type) -> Check {
    fn of<B: BlockFormat>() -> Check {
        match B::CHECK {
            BlockCheck::Rejected => Check::Unknown,
            check => Check::Blocks(check),
        }
    }
    match ty {
        Type::F32 => Check::F32Values,
        Type::F64 => Check::F64Values,
        Type::F16 => Check::F16Values,
        Type::BF16 => Check::Bf16Values,
        Type::I8 | Type::I16 | Type::I32 | Type::I64 => Check::Nothing,
        _ => with_block_format!(ty, of(), _ => Check::Unknown),
    }
}

const FUNC: &str = "ggml_validate_row_data";

/// True when `data` (a whole number of elements or blocks of `ty`) holds no NaN or infinity
/// where ggml looks for them. Problems are logged as errors.
pub fn validate_row_data(ty: Type, data: &[u8]) -> bool {
    // As in ggml: the type must exist, the size must fit it, and only then is a type without
    // checks (q8_1) rejected.
    let type_size = if ty.is_valid() { ty.type_size() } else { 0 };
    if type_size == 0 {
        crate::log_error!("{FUNC}: invalid type {}\n", ty.0);
        return false;
    }
    if !data.len().is_multiple_of(type_size) {
        crate::log_error!("{FUNC}: invalid size {} for type {} (type size = {})\n", data.len(), ty.name(), type_size);
        return false;
    }
    let check = check_for(ty);
    if matches!(check, Check::Unknown) {
        crate::log_error!("{FUNC}: invalid type {}\n", ty.0);
        return false;
    }
    let units = data.chunks_exact(type_size);
    match check {
        Check::F32Values => units.enumerate().all(|(i, v)| finite(i, f32::from_le_bytes(bytes_at(v, 0)))),
        // ggml checks f64 values after narrowing them to f32, so magnitudes beyond f32's range
        // count as infinite; that is kept.
        Check::F64Values => units.enumerate().all(|(i, v)| finite(i, f64::from_le_bytes(bytes_at(v, 0)) as f32)),
        Check::F16Values => units.enumerate().all(|(i, v)| finite_half(i, half_at(v, 0))),
        Check::Bf16Values => {
            let (mut nans, mut infs) = (0usize, 0usize);
            for v in units {
                let magnitude = u16::from_le_bytes(bytes_at(v, 0)) & 0x7fff;
                nans += usize::from(magnitude > 0x7f80);
                infs += usize::from(magnitude == 0x7f80);
            }
            let n = data.len() / type_size;
            if nans > 0 {
                crate::log_error!("{FUNC}: found {nans} NaNs in row of {n} BF16 values\n");
            } else if infs > 0 {
                crate::log_error!("{FUNC}: found {infs} infinities in row of {n} BF16 values\n");
            }
            nans == 0 && infs == 0
        }
        Check::Blocks(BlockCheck::HalfScales(offsets)) => {
            units.enumerate().all(|(i, block)| offsets.iter().all(|&at| finite_half(i, half_at(block, at))))
        }
        Check::Blocks(BlockCheck::F32Scale) => {
            units.enumerate().all(|(i, block)| finite(i, f32::from_le_bytes(bytes_at(block, 0))))
        }
        Check::Blocks(BlockCheck::E8m0Scale) => units.enumerate().all(|(i, block)| {
            let e = block[0];
            if e == 0xff {
                crate::log_error!("{FUNC}: found invalid e value {e} at block {i}\n");
            }
            e != 0xff
        }),
        Check::Blocks(BlockCheck::Iq1mScale) => units.enumerate().all(|(i, block)| {
            let word = |k: usize| u16::from_le_bytes(bytes_at(block, 48 + 2 * k));
            let bits = (word(0) >> 12) | ((word(1) >> 8) & 0x00f0) | ((word(2) >> 4) & 0x0f00) | (word(3) & 0xf000);
            finite_half(i, Half::from_bits(bits))
        }),
        Check::Nothing | Check::Blocks(BlockCheck::Nothing) => true,
        // (turned away above)
        Check::Unknown | Check::Blocks(BlockCheck::Rejected) => false,
    }
}

fn bytes_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    std::array::from_fn(|k| bytes[at + k])
}

fn half_at(bytes: &[u8], at: usize) -> Half {
    Half::from_bits(u16::from_le_bytes(bytes_at(bytes, at)))
}

fn finite(i: usize, x: f32) -> bool {
    if x.is_infinite() {
        crate::log_error!("{FUNC}: found inf value at block {i}\n");
        return false;
    }
    if x.is_nan() {
        crate::log_error!("{FUNC}: found nan value at block {i}\n");
        return false;
    }
    true
}

fn finite_half(i: usize, h: Half) -> bool {
    if h.is_inf() {
        crate::log_error!("{FUNC}: found inf value at block {i}\n");
        return false;
    }
    if h.is_nan() {
        crate::log_error!("{FUNC}: found nan value at block {i}\n");
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn float_rows() {
        assert!(validate_row_data(Type::F32, &f32_bytes(&[1.0, -2.0, 0.0])));
        assert!(!validate_row_data(Type::F32, &f32_bytes(&[1.0, f32::NAN])));
        assert!(!validate_row_data(Type::F32, &f32_bytes(&[f32::NEG_INFINITY])));
        assert!(!validate_row_data(Type::F32, &[0u8; 6]));
        assert!(!validate_row_data(Type::F64, &1.0e300f64.to_le_bytes()));
        assert!(validate_row_data(Type::F64, &1.0e30f64.to_le_bytes()));
        assert!(validate_row_data(Type::F16, &[0x00, 0x3c, 0xff, 0x7b]));
        assert!(!validate_row_data(Type::F16, &[0x00, 0x7c]));
        assert!(!validate_row_data(Type::F16, &[0x01, 0xfc]));
        assert!(validate_row_data(Type::BF16, &[0x7f, 0x7f]));
        assert!(!validate_row_data(Type::BF16, &[0x80, 0xff]));
        assert!(!validate_row_data(Type::BF16, &[0xc1, 0x7f]));
    }

    #[test]
    fn block_scales() {
        let mut block = [0u8; 20]; // q4_1: d at 0, m at 2
        assert!(validate_row_data(Type::Q4_1, &block));
        block[2..4].copy_from_slice(&0x7e00u16.to_le_bytes());
        assert!(!validate_row_data(Type::Q4_1, &block));
        let mut q6k = vec![0u8; 210];
        assert!(validate_row_data(Type::Q6_K, &q6k));
        q6k[208..210].copy_from_slice(&0x7c00u16.to_le_bytes());
        assert!(!validate_row_data(Type::Q6_K, &q6k));
        let mut mx = [0u8; 17];
        mx[0] = 0xff;
        assert!(!validate_row_data(Type::MXFP4, &mx));
        let mut iq1m = [0u8; 56];
        // scale 0x7c00 (inf): top nibbles 0x0, 0x0, 0xc, 0x7 in words 0..3
        iq1m[53] = 0xc0;
        iq1m[55] = 0x70;
        assert!(!validate_row_data(Type::IQ1_M, &iq1m));
    }

    #[test]
    fn half_scales_where_ggml_reads_them() {
        let d: &[usize] = &[0];
        let d_m: &[usize] = &[0, 2];
        let expected = [
            (Type::Q1_0, d),
            (Type::Q2_0, d),
            (Type::Q4_0, d),
            (Type::Q5_0, d),
            (Type::Q8_0, d),
            (Type::Q4_1, d_m),
            (Type::Q5_1, d_m),
            (Type::Q4_K, d_m),
            (Type::Q5_K, d_m),
            (Type::Q2_K, &[80, 82]),
            (Type::Q3_K, &[108]),
            (Type::Q6_K, &[208]),
            (Type::TQ1_0, &[52]),
            (Type::TQ2_0, &[64]),
            (Type::IQ1_S, d),
            (Type::IQ2_XXS, d),
            (Type::IQ2_XS, d),
            (Type::IQ2_S, d),
            (Type::IQ3_XXS, d),
            (Type::IQ3_S, d),
            (Type::IQ4_XS, d),
            (Type::IQ4_NL, d),
        ];
        for (ty, offsets) in expected {
            assert!(matches!(check_for(ty), Check::Blocks(BlockCheck::HalfScales(o)) if o == offsets), "{}", ty.name());
            let mut block = vec![0u8; ty.type_size()];
            assert!(validate_row_data(ty, &block), "{}", ty.name());
            for &at in offsets {
                block[at..at + 2].copy_from_slice(&0x7c00u16.to_le_bytes());
                assert!(!validate_row_data(ty, &block), "{} at {}", ty.name(), at);
                block[at..at + 2].fill(0);
            }
        }
    }

    #[test]
    fn types_without_checks() {
        assert!(validate_row_data(Type::I32, &[0xff; 8]));
        assert!(!validate_row_data(Type::Q8_1, &[0u8; 36]));
        assert!(!validate_row_data(Type(4), &[]));
        assert!(!validate_row_data(Type(77), &[]));
    }
}
