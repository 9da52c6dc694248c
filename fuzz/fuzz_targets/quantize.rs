//! Quantization through the public API with shapes and values from the input: byte 0 picks the
//! type (among those `ggml_quantize_chunk` takes), byte 1 the row length in blocks (1 to 8),
//! byte 2 the rows (1 to 8) and whether the chunk starts at row 0 or 1, byte 3 the mode: bit 0
//! gives an importance matrix (always given to the types that require one), bit 1 reads the
//! values as raw f32 bits (NaN, infinities, huge values) instead of bounded ones. The rest fills
//! the rows, repeated to length. The chunk is quantized, its size checked, dequantized with the
//! type's `to_float`; from bounded values every block written must pass
//! `ggml_validate_row_data`. A crash, a wrong size or a refused block is a finding.
//!
//! Raw values skip the types that quantize onto a lattice (IQ1_*, IQ2_*, IQ3_*): from extreme
//! values (-3.3e35 beside 2.7e-39) their search finds no lattice point, and ggml asserts
//! (`grid_index >= 0`, ggml-quants.c); ours aborts with the same reason, as the first run of
//! this target found.

#![no_main]

use ggml_rs::core::types::Type;
use ggml_rs::ffi::quants::{
    ggml_get_type_traits, ggml_quantize_chunk, ggml_quantize_requires_imatrix, ggml_validate_row_data,
};
use ggml_rs::quants::iq_grids::Grid;
use libfuzzer_sys::fuzz_target;

/// The types `ggml_quantize_chunk` quantizes: the float types and every block type but the
/// activation-only Q8_1 and Q8_K (not the integer types, nor the removed types' placeholders,
/// which have no block size).
fn quantizable() -> Vec<Type> {
    (0..Type::COUNT)
        .map(Type)
        .filter(|t| {
            t.is_valid()
                && t.blck_size() > 0
                && !matches!(*t, Type::Q8_1 | Type::Q8_K | Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::F64)
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    ggml_rs_fuzz::quiet();
    let [ty, blocks, rows, mode, values @ ..] = data else { return };
    let types = quantizable();
    let ty = types[usize::from(*ty) % types.len()];
    let n_per_row = ty.blck_size() * i64::from(blocks % 8 + 1);
    let nrows = i64::from(rows % 8 + 1);
    let first_row = i64::from(rows >> 7);
    let raw = mode & 2 != 0;
    if raw && Grid::of(ty).is_some() {
        return;
    }

    // `ggml_quantize_chunk` reads the rows from `start` on of the whole matrix at `src`
    let n = (n_per_row * (first_row + nrows)) as usize;
    let src: Vec<f32> = if values.len() < 4 {
        vec![0.5; n]
    } else if raw {
        values.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).cycle().take(n).collect()
    } else {
        values.chunks_exact(2).map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 64.0).cycle().take(n).collect()
    };
    // one weight per column (a C caller's contract: a shorter importance matrix is over-read)
    let imatrix: Vec<f32> = if values.is_empty() {
        vec![1.0; n_per_row as usize]
    } else {
        values.iter().map(|&b| f32::from(b) / 16.0).cycle().take(n_per_row as usize).collect()
    };
    let with_imatrix = mode & 1 != 0 || ggml_quantize_requires_imatrix(ty);

    let row_size = ty.row_size(n_per_row);
    let mut dst = vec![0u8; row_size * (first_row + nrows) as usize];
    let start = first_row * n_per_row;
    // `src` and `dst` hold the rows up to `first_row + nrows`, the importance matrix one value
    // per column.
    let written = ggml_quantize_chunk(
        ty,
        src.as_ptr(),
        dst.as_mut_ptr().cast(),
        start,
        nrows,
        n_per_row,
        if with_imatrix { imatrix.as_ptr() } else { std::ptr::null() },
    );
    assert_eq!(written, row_size * nrows as usize, "{}: bytes written", ty.name());

    let chunk = &dst[row_size * first_row as usize..];
    if !raw {
        assert!(
            ggml_validate_row_data(ty, chunk.as_ptr().cast(), chunk.len()),
            "{}: a block from bounded values is refused",
            ty.name()
        );
    }
    // SAFETY: the type's traits are static; `to_float` reads the chunk's blocks and writes as many
    // floats.
    unsafe {
        let traits = &*ggml_get_type_traits(ty);
        if let Some(to_float) = traits.to_float {
            let chunk_values = (n_per_row * nrows) as usize;
            let mut back = vec![0f32; chunk_values];
            to_float(chunk.as_ptr().cast(), back.as_mut_ptr(), chunk_values as i64);
            std::hint::black_box(&back);
        }
    }
});
