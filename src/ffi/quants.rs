//! Element conversions and quantization: fp16/bf16 helpers, `ggml_quantize_chunk`, the type
//! traits table, row validation, and the per-format row functions libggml-base exports.

use std::ffi::{c_int, c_void};

use crate::core::log::abort_at_caller;
use crate::core::types::Type;
use crate::quants::fp4::{BlockMxfp4, BlockNvfp4};
use crate::quants::half::{self, Bf16};
use crate::quants::iq_grids;
use crate::quants::iq1::{BlockIq1M, BlockIq1S};
use crate::quants::iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
use crate::quants::iq3::{BlockIq3S, BlockIq3Xxs};
use crate::quants::iq4::{self, BlockIq4Nl, BlockIq4Xs};
use crate::quants::k_quants::{self, BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};
use crate::quants::low_bit::{BlockQ1_0, BlockQ2_0};
use crate::quants::q4::{BlockQ4_0, BlockQ4_1};
use crate::quants::q5::{BlockQ5_0, BlockQ5_1};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};
use crate::quants::rows::{self, blocks_for, slice, slice_mut};
use crate::quants::ternary::{BlockTq1_0, BlockTq2_0};
use crate::quants::traits::TypeTraits;
use crate::quants::{self, BlockFormat, chunk, validate};

fn byte_len(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

// ---- fp16 / bf16 ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fp16_to_fp32(x: u16) -> f32 {
    half::fp16_to_fp32(x)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fp32_to_fp16(x: f32) -> u16 {
    half::fp32_to_fp16(x)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_bf16_to_fp32(x: Bf16) -> f32 {
    half::bf16_to_fp32(x)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fp32_to_bf16(x: f32) -> Bf16 {
    half::fp32_to_bf16(x)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fp16_to_fp32_row(x: *const u16, y: *mut f32, n: i64) {
    // SAFETY: this function's C contract is the converter's.
    unsafe { rows::fp16_to_fp32_row(x.cast(), y, n) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fp32_to_fp16_row(x: *const f32, y: *mut u16, n: i64) {
    // SAFETY: this function's C contract is the converter's.
    unsafe { rows::fp32_to_fp16_row(x, y.cast(), n) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_bf16_to_fp32_row(x: *const Bf16, y: *mut f32, n: i64) {
    // SAFETY: this function's C contract is the converter's.
    unsafe { rows::bf16_to_fp32_row(x.cast(), y, n) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fp32_to_bf16_row_ref(x: *const f32, y: *mut Bf16, n: i64) {
    // SAFETY: this function's C contract is the converter's.
    unsafe { rows::fp32_to_bf16_row(x, y.cast(), n) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fp32_to_bf16_row(x: *const f32, y: *mut Bf16, n: i64) {
    // SAFETY: this function's C contract is the converter's.
    unsafe { rows::fp32_to_bf16_row(x, y.cast(), n) };
}

// ---- type traits, quantization, validation ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_type_traits(type_: Type) -> *const TypeTraits {
    quants::traits::type_traits(type_)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_quantize_requires_imatrix(type_: Type) -> bool {
    chunk::requires_imatrix(type_)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_quantize_init(type_: Type) {
    chunk::init(type_);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_quantize_free() {
    chunk::free();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_quantize_chunk(
    type_: Type,
    src: *const f32,
    dst: *mut c_void,
    start: i64,
    nrows: i64,
    n_per_row: i64,
    imatrix: *const f32,
) -> usize {
    crate::ggml_assert!(type_.is_valid(), "ggml_quantize_chunk: invalid type {}", type_.0);
    if chunk::requires_imatrix(type_) {
        crate::ggml_assert!(!imatrix.is_null());
    }
    let blck_size = type_.blck_size();
    crate::ggml_assert!(blck_size > 0 && start % blck_size == 0);
    crate::ggml_assert!(n_per_row > 0 && start % n_per_row == 0);
    crate::ggml_assert!(start >= 0 && nrows >= 0);
    chunk::check_supported(type_);

    let row_size = type_.row_size(n_per_row);
    let start_row = (start / n_per_row) as usize;
    let n = nrows.checked_mul(n_per_row);
    let bytes = (nrows as usize).checked_mul(row_size);
    crate::ggml_assert!(
        n.is_some() && bytes.is_some(),
        "ggml_quantize_chunk: {} rows of {} overflow",
        nrows,
        n_per_row
    );
    // SAFETY: ggml_quantize_chunk's contract: `src` holds the rows from `start` on, `dst` room
    // for their blocks and `imatrix`, when given, one weight per column.
    let (src, dst, imatrix) = unsafe {
        (
            slice(src.wrapping_add(start as usize), n.unwrap_or(0)),
            slice_mut(dst.cast::<u8>().wrapping_add(start_row * row_size), byte_len(bytes.unwrap_or(0))),
            (!imatrix.is_null()).then(|| slice(imatrix, n_per_row)),
        )
    };
    chunk::quantize_chunk(type_, src, dst, n_per_row as usize, imatrix)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_validate_row_data(type_: Type, data: *const c_void, nbytes: usize) -> bool {
    // SAFETY: the caller's buffer holds `nbytes` bytes.
    validate::validate_row_data(type_, unsafe { slice(data.cast::<u8>(), byte_len(nbytes)) })
}

// ---- per-format row functions ----

/// `nrow` rows of `n_per_row` values through the format's `ggml_quantize_chunk` quantizer,
/// importance-weighted when `quant_weights` is not NULL.
#[track_caller]
fn quantize_weighted<B: BlockFormat>(
    src: *const f32,
    dst: *mut c_void,
    nrow: i64,
    n_per_row: i64,
    quant_weights: *const f32,
) -> usize {
    if nrow < 0 || n_per_row <= 0 {
        abort_at_caller(&format!("{nrow} rows of {n_per_row} values"));
    }
    let Some(n) = nrow.checked_mul(n_per_row) else {
        abort_at_caller(&format!("{nrow} rows of {n_per_row} values overflow"))
    };
    // SAFETY: the quantizer's contract: `src` holds `n` values, `dst` room for their blocks and
    // `quant_weights`, when given, one weight per column.
    let (src, blocks, weights) = unsafe {
        (
            slice(src, n),
            slice_mut(dst.cast::<B>(), blocks_for::<B>(n)),
            (!quant_weights.is_null()).then(|| slice(quant_weights, n_per_row)),
        )
    };
    B::quantize_chunk(src, blocks, n_per_row as usize, weights)
}

/// ggml's per-type row functions, exported under the reference's names: the reference
/// quantizer (`quantize_row_<t>_ref`), the dequantizer (`dequantize_row_<t>`) and the
/// importance-weighted quantizer (`quantize_<t>`), each a thin call into the block format.
macro_rules! ref_quantizers {
    ($($name:ident => $block:ty,)*) => {$(
        #[unsafe(no_mangle)]
        #[allow(non_snake_case)]
        pub extern "C" fn $name(x: *const f32, y: *mut $block, k: i64) {
            // SAFETY: this function's C contract is the converter's.
            unsafe { rows::quantize_row_ref::<$block>(x, y.cast(), k) };
        }
    )*};
}

macro_rules! dequantizers {
    ($($name:ident => $block:ty,)*) => {$(
        #[unsafe(no_mangle)]
        #[allow(non_snake_case)]
        pub extern "C" fn $name(x: *const $block, y: *mut f32, k: i64) {
            // SAFETY: this function's C contract is the converter's.
            unsafe { rows::dequantize_row_to_f32::<$block>(x.cast(), y, k) };
        }
    )*};
}

macro_rules! weighted_quantizers {
    ($($name:ident => $block:ty,)*) => {$(
        #[unsafe(no_mangle)]
        #[allow(non_snake_case)]
        pub extern "C" fn $name(
            src: *const f32,
            dst: *mut c_void,
            nrow: i64,
            n_per_row: i64,
            quant_weights: *const f32,
        ) -> usize {
            quantize_weighted::<$block>(src, dst, nrow, n_per_row, quant_weights)
        }
    )*};
}

ref_quantizers! {
    quantize_row_q4_0_ref => BlockQ4_0,
    quantize_row_q4_1_ref => BlockQ4_1,
    quantize_row_q5_0_ref => BlockQ5_0,
    quantize_row_q5_1_ref => BlockQ5_1,
    quantize_row_q8_0_ref => BlockQ8_0,
    quantize_row_q8_1_ref => BlockQ8_1,
    quantize_row_q2_K_ref => BlockQ2K,
    quantize_row_q3_K_ref => BlockQ3K,
    quantize_row_q4_K_ref => BlockQ4K,
    quantize_row_q5_K_ref => BlockQ5K,
    quantize_row_q6_K_ref => BlockQ6K,
    quantize_row_q1_0_ref => BlockQ1_0,
    quantize_row_q2_0_ref => BlockQ2_0,
    quantize_row_mxfp4_ref => BlockMxfp4,
    quantize_row_nvfp4_ref => BlockNvfp4,
    quantize_row_tq1_0_ref => BlockTq1_0,
    quantize_row_tq2_0_ref => BlockTq2_0,
    quantize_row_iq4_xs_ref => BlockIq4Xs,
    quantize_row_iq2_s_ref => BlockIq2S,
    quantize_row_iq3_xxs_ref => BlockIq3Xxs,
    quantize_row_iq3_s_ref => BlockIq3S,
}

dequantizers! {
    dequantize_row_q4_0 => BlockQ4_0,
    dequantize_row_q4_1 => BlockQ4_1,
    dequantize_row_q5_0 => BlockQ5_0,
    dequantize_row_q5_1 => BlockQ5_1,
    dequantize_row_q8_0 => BlockQ8_0,
    dequantize_row_q2_K => BlockQ2K,
    dequantize_row_q3_K => BlockQ3K,
    dequantize_row_q4_K => BlockQ4K,
    dequantize_row_q5_K => BlockQ5K,
    dequantize_row_q6_K => BlockQ6K,
    dequantize_row_q8_K => BlockQ8K,
    dequantize_row_q1_0 => BlockQ1_0,
    dequantize_row_q2_0 => BlockQ2_0,
    dequantize_row_mxfp4 => BlockMxfp4,
    dequantize_row_nvfp4 => BlockNvfp4,
    dequantize_row_tq1_0 => BlockTq1_0,
    dequantize_row_tq2_0 => BlockTq2_0,
    dequantize_row_iq4_nl => BlockIq4Nl,
    dequantize_row_iq4_xs => BlockIq4Xs,
    dequantize_row_iq2_xxs => BlockIq2Xxs,
    dequantize_row_iq2_xs => BlockIq2Xs,
    dequantize_row_iq2_s => BlockIq2S,
    dequantize_row_iq3_xxs => BlockIq3Xxs,
    dequantize_row_iq3_s => BlockIq3S,
    dequantize_row_iq1_s => BlockIq1S,
    dequantize_row_iq1_m => BlockIq1M,
}

weighted_quantizers! {
    quantize_q4_0 => BlockQ4_0,
    quantize_q4_1 => BlockQ4_1,
    quantize_q5_0 => BlockQ5_0,
    quantize_q5_1 => BlockQ5_1,
    quantize_q8_0 => BlockQ8_0,
    quantize_q2_K => BlockQ2K,
    quantize_q3_K => BlockQ3K,
    quantize_q4_K => BlockQ4K,
    quantize_q5_K => BlockQ5K,
    quantize_q6_K => BlockQ6K,
    quantize_q1_0 => BlockQ1_0,
    quantize_q2_0 => BlockQ2_0,
    quantize_mxfp4 => BlockMxfp4,
    quantize_nvfp4 => BlockNvfp4,
    quantize_tq1_0 => BlockTq1_0,
    quantize_tq2_0 => BlockTq2_0,
    quantize_iq4_nl => BlockIq4Nl,
    quantize_iq4_xs => BlockIq4Xs,
    quantize_iq2_xxs => BlockIq2Xxs,
    quantize_iq2_xs => BlockIq2Xs,
    quantize_iq2_s => BlockIq2S,
    quantize_iq3_xxs => BlockIq3Xxs,
    quantize_iq3_s => BlockIq3S,
    quantize_iq1_s => BlockIq1S,
    quantize_iq1_m => BlockIq1M,
}

// ---- row functions that differ from the generic ones ----

/// Unlike the generic row quantizer, keeps the `bsums` of all-zero blocks as they were (ggml
/// leaves them unwritten).
#[unsafe(no_mangle)]
#[allow(non_snake_case)]
pub extern "C" fn quantize_row_q8_K_ref(x: *const f32, y: *mut BlockQ8K, k: i64) {
    // SAFETY: the quantizer's contract: `x` holds `k` values, `y` room for their blocks.
    let (x, blocks) = unsafe { (slice(x, k), slice_mut(y, blocks_for::<BlockQ8K>(k))) };
    k_quants::quantize_row_q8_k(x, blocks);
}

/// Not the generic row quantizer: an all-zero block repeats the codes of the block before it.
#[unsafe(no_mangle)]
pub extern "C" fn quantize_row_iq4_nl_ref(x: *const f32, y: *mut BlockIq4Nl, k: i64) {
    // SAFETY: as above.
    let (x, blocks) = unsafe { (slice(x, k), slice_mut(y, blocks_for::<BlockIq4Nl>(k))) };
    iq4::quantize_row_nl_ref(x, blocks);
}

// ---- the lattice-grid tables that ggml_quantize_init builds ----

#[unsafe(no_mangle)]
pub extern "C" fn iq2xs_init_impl(type_: Type) {
    iq_grids::init_grid(iq_grids::grid8_of(type_));
}

#[unsafe(no_mangle)]
pub extern "C" fn iq2xs_free_impl(type_: Type) {
    iq_grids::free_grid(iq_grids::grid8_of(type_));
}

#[unsafe(no_mangle)]
pub extern "C" fn iq3xs_init_impl(grid_size: c_int) {
    iq_grids::init_grid(iq_grids::grid4_of(grid_size));
}

#[unsafe(no_mangle)]
pub extern "C" fn iq3xs_free_impl(grid_size: c_int) {
    iq_grids::free_grid(iq_grids::grid4_of(grid_size));
}
