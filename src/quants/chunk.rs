//! `ggml_quantize_chunk` and its companions: converting whole rows of `f32` to any storage
//! type, optionally guided by an importance matrix.

use super::formats::{is_weight_format, with_weight_format};
use super::half::{fp32_to_bf16, fp32_to_fp16};
use super::{BlockFormat, blocks_mut, iq_grids};
use crate::core::types::Type;

/// Types whose quantizers cannot work without an importance matrix.
pub fn requires_imatrix(ty: Type) -> bool {
    fn needs<B: BlockFormat>() -> bool {
        B::NEEDS_IMATRIX
    }
    with_weight_format!(ty, needs(), _ => false)
}

/// Whether `ggml_quantize_chunk` converts to `ty`: the float types and the weight formats;
/// the rest are compute-only or activation-only types.
pub fn is_supported(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16) || is_weight_format(ty)
}

/// Aborts unless [`quantize_chunk`] can convert to `ty`.
pub fn check_supported(ty: Type) {
    if !is_supported(ty) {
        crate::ggml_abort!("ggml_quantize_chunk: {} is not a type that rows can be quantized to", ty.name());
    }
}

/// Prepares the lookup tables a type's quantizer needs (the neighbour lists of the 1-, 2- and
/// 3-bit lattice grids; nothing for other types). Calling it again is cheap.
pub fn init(ty: Type) {
    iq_grids::init(ty);
}

/// Releases what [`init`] built; quantizers rebuild it when next needed.
pub fn free() {
    iq_grids::free();
}

/// Converts `nrows` rows of `n_per_row` values from `src` into `dst` (exactly the bytes of
/// those rows) and returns the bytes written. `imatrix`, when given, has one weight per column.
pub fn quantize_chunk(ty: Type, src: &[f32], dst: &mut [u8], n_per_row: usize, imatrix: Option<&[f32]>) -> usize {
    check_supported(ty);
    init(ty);
    fn rows<B: BlockFormat>(src: &[f32], dst: &mut [u8], n_per_row: usize, imatrix: Option<&[f32]>) -> usize {
        B::quantize_chunk(src, blocks_mut(dst), n_per_row, imatrix)
    }
    let written = match ty {
        Type::F16 => store_elements(src, dst, |x| fp32_to_fp16(x).to_le_bytes()),
        Type::BF16 => store_elements(src, dst, |x| fp32_to_bf16(x).bits.to_le_bytes()),
        // (the rest is F32: `check_supported` let no other type through)
        _ => {
            with_weight_format!(ty, rows(src, dst, n_per_row, imatrix), _ => store_elements(src, dst, f32::to_le_bytes))
        }
    };
    let expected = ty.row_size(n_per_row as i64) * (src.len() / n_per_row.max(1));
    crate::ggml_assert!(written == expected, "wrote {} bytes of {} for {}", written, expected, ty.name());
    written
}

/// Writes each value of `src` as `N` bytes.
fn store_elements<const N: usize>(src: &[f32], dst: &mut [u8], convert: impl Fn(f32) -> [u8; N]) -> usize {
    crate::ggml_assert!(dst.len() == src.len() * N, "destination of {} bytes for {} values", dst.len(), src.len());
    for (out, &x) in dst.chunks_exact_mut(N).zip(src) {
        out.copy_from_slice(&convert(x));
    }
    dst.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imatrix_requirements_match_ggml() {
        let needs: Vec<i32> = (0..Type::COUNT).filter(|&t| requires_imatrix(Type(t))).collect();
        assert_eq!(needs, vec![16, 17, 19]);
    }

    #[test]
    fn float_targets_store_bytes() {
        let src = [1.0f32, -2.0, 0.5, 65504.0];
        let mut dst = [0u8; 8];
        assert_eq!(quantize_chunk(Type::F16, &src, &mut dst, 2, None), 8);
        assert_eq!(dst, [0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b]);
        assert_eq!(quantize_chunk(Type::BF16, &src, &mut dst, 4, None), 8);
        assert_eq!(&dst[..4], &[0x80, 0x3f, 0x00, 0xc0]);
        let mut dst = [0u8; 16];
        assert_eq!(quantize_chunk(Type::F32, &src, &mut dst, 4, None), 16);
        assert_eq!(&dst[4..8], &(-2.0f32).to_le_bytes());
    }

    #[test]
    fn quantized_rows_fill_the_destination() {
        let src: Vec<f32> = (0..128).map(|i| (i as f32 * 0.37).sin()).collect();
        let imatrix = vec![1.0f32; 64];
        for ty in [Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0] {
            let mut dst = vec![0u8; ty.row_size(128)];
            assert_eq!(quantize_chunk(ty, &src, &mut dst, 64, None), dst.len());
            assert_eq!(quantize_chunk(ty, &src, &mut dst, 64, Some(&imatrix)), dst.len());
        }
        let src: Vec<f32> = (0..1024).map(|i| (i as f32 * 0.37).sin()).collect();
        let imatrix = vec![1.0f32; 512];
        for ty in [
            Type::Q2_K,
            Type::Q3_K,
            Type::Q4_K,
            Type::Q5_K,
            Type::Q6_K,
            Type::Q1_0,
            Type::Q2_0,
            Type::MXFP4,
            Type::NVFP4,
            Type::TQ1_0,
            Type::TQ2_0,
            Type::IQ4_NL,
            Type::IQ4_XS,
        ] {
            let mut dst = vec![0u8; ty.row_size(1024)];
            assert_eq!(quantize_chunk(ty, &src, &mut dst, 512, None), dst.len());
            assert_eq!(quantize_chunk(ty, &src, &mut dst, 512, Some(&imatrix)), dst.len());
        }
    }
}
