//! Row converters with C signatures (`ggml_to_float_t`, `ggml_from_float_t`): what the type
//! traits table (`traits`) hands to C and to the kernels that dequantize any type. The
//! exported `dequantize_row_<t>` and `quantize_row_<t>_ref` functions call the same code.

use std::ffi::c_void;

use super::half::{self, Bf16};
use super::{BlockFormat, dequantize_row, quantize_row};
use crate::core::log::abort_at_caller;

/// `len` elements at `ptr`, which may be NULL only when `len` is 0.
///
/// # Safety
/// A non-null `ptr` must point to `len` initialised elements that stay valid and unwritten
/// for `'a` (the C contract of every row function).
#[track_caller]
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: i64) -> &'a [T] {
    if len < 0 {
        abort_at_caller(&format!("negative element count {len}"));
    }
    if len == 0 {
        return &[];
    }
    if ptr.is_null() {
        abort_at_caller(&format!("NULL buffer of {len} elements"));
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }
}

/// Mutable counterpart of [`slice()`].
///
/// # Safety
/// As [`slice()`], and nothing else may read or write the elements during `'a` (C callers do
/// not let output buffers overlap inputs: `restrict`).
#[track_caller]
pub(crate) unsafe fn slice_mut<'a, T>(ptr: *mut T, len: i64) -> &'a mut [T] {
    if len < 0 {
        abort_at_caller(&format!("negative element count {len}"));
    }
    if len == 0 {
        return &mut [];
    }
    if ptr.is_null() {
        abort_at_caller(&format!("NULL buffer of {len} elements"));
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(ptr, len as usize) }
}

/// The number of `B` blocks that hold `k` values, aborting when `k` is not whole blocks.
#[track_caller]
pub fn blocks_for<B: BlockFormat>(k: i64) -> i64 {
    let qk = B::QK as i64;
    if !(k >= 0 && k % qk == 0) {
        abort_at_caller(&format!("{k} values are not whole {} blocks", B::TYPE.name()));
    }
    k / qk
}

/// `k` values quantized into blocks of `B` with the reference quantizer.
///
/// # Safety
/// `ggml_from_float_t`'s contract: `x` holds `k` values and `y` room for their blocks.
pub unsafe extern "C" fn quantize_row_ref<B: BlockFormat>(x: *const f32, y: *mut c_void, k: i64) {
    // SAFETY: `ggml_from_float_t`'s contract: `x` holds `k` values, `y` room for their blocks.
    let (x, y) = unsafe { (slice(x, k), slice_mut(y.cast::<B>(), blocks_for::<B>(k))) };
    quantize_row(x, y);
}

/// `k` values of blocks of `B` written out as `f32`.
///
/// # Safety
/// `ggml_to_float_t`'s contract: `x` holds the blocks of `k` values and `y` room for them.
pub unsafe extern "C" fn dequantize_row_to_f32<B: BlockFormat>(x: *const c_void, y: *mut f32, k: i64) {
    // SAFETY: `ggml_to_float_t`'s contract: `x` holds the blocks of `k` values, `y` room for them.
    let (x, y) = unsafe { (slice(x.cast::<B>(), blocks_for::<B>(k)), slice_mut(y, k)) };
    dequantize_row(x, y);
}

/// `n` values converted.
///
/// # Safety
/// `x` and `y` hold `n` values each.
pub unsafe extern "C" fn fp16_to_fp32_row(x: *const c_void, y: *mut f32, n: i64) {
    // SAFETY: `ggml_to_float_t`'s contract: `x` and `y` hold `n` values each.
    let (x, y) = unsafe { (slice(x.cast::<u16>(), n), slice_mut(y, n)) };
    half::fp16_to_fp32_row(x, y);
}

/// `n` values converted.
///
/// # Safety
/// `x` and `y` hold `n` values each.
pub unsafe extern "C" fn fp32_to_fp16_row(x: *const f32, y: *mut c_void, n: i64) {
    // SAFETY: `ggml_from_float_t`'s contract: `x` and `y` hold `n` values each.
    let (x, y) = unsafe { (slice(x, n), slice_mut(y.cast::<u16>(), n)) };
    half::fp32_to_fp16_row(x, y);
}

/// `n` values converted.
///
/// # Safety
/// `x` and `y` hold `n` values each.
pub unsafe extern "C" fn bf16_to_fp32_row(x: *const c_void, y: *mut f32, n: i64) {
    // SAFETY: `ggml_to_float_t`'s contract: `x` and `y` hold `n` values each.
    let (x, y) = unsafe { (slice(x.cast::<Bf16>(), n), slice_mut(y, n)) };
    half::bf16_to_fp32_row(x, y);
}

/// `n` values converted.
///
/// # Safety
/// `x` and `y` hold `n` values each.
pub unsafe extern "C" fn fp32_to_bf16_row(x: *const f32, y: *mut c_void, n: i64) {
    // SAFETY: `ggml_from_float_t`'s contract: `x` and `y` hold `n` values each.
    let (x, y) = unsafe { (slice(x, n), slice_mut(y.cast::<Bf16>(), n)) };
    half::fp32_to_bf16_row(x, y);
}
