//! `ggml_validate_row_data` on arbitrary bytes for every type: the first byte picks the type
//! (one past the last included, to cover the refusal of unknown types), the rest is the data,
//! once cut to whole blocks so that the checks of the blocks themselves run, and once as it
//! is. Any answer is fine; a crash is not.

#![no_main]

use ggml_rs::core::types::Type;
use ggml_rs::ffi::quants::ggml_validate_row_data;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ggml_rs_fuzz::quiet();
    let Some((&first, rest)) = data.split_first() else { return };
    let ty = Type(i32::from(first) % (Type::COUNT + 1));
    let block = if ty.is_valid() { ty.type_size().max(1) } else { 1 };
    let whole = &rest[..rest.len() / block * block];
    std::hint::black_box(ggml_validate_row_data(ty, whole.as_ptr().cast(), whole.len()));
    std::hint::black_box(ggml_validate_row_data(ty, rest.as_ptr().cast(), rest.len()));
});
