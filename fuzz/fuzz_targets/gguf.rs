//! The GGUF reader on arbitrary bytes, through the C API as a caller would use it: parse from
//! memory without a ggml context and with one (tensors with and without data), then ask every
//! getter about everything the parse returned, and free. A parse may fail; nothing may crash.
//! What parses must also survive a round trip: its serialised metadata parses again to the
//! same keys and tensors.

#![no_main]

use std::ffi::{CStr, c_char, c_void};

use ggml_rs::core::context::Context;
use ggml_rs::ffi::context::{ggml_free, ggml_get_first_tensor, ggml_get_next_tensor};
use ggml_rs::ffi::gguf::*;
use ggml_rs::ffi::tensor::{ggml_get_data, ggml_nbytes};
use ggml_rs::gguf::{GgufContext, GgufType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ggml_rs_fuzz::quiet();
    let Some(n_kv) = parse(data, None) else { return };
    for no_alloc in [true, false] {
        parse(data, Some(no_alloc));
    }
    round_trip(data, n_kv);
});

/// Parses `data` (with a ggml context when `tensors` is Some, holding data unless it says
/// no_alloc), walks the result and frees it; returns the number of keys when it parsed.
fn parse(data: &[u8], tensors: Option<bool>) -> Option<i64> {
    let mut ggml: *mut Context = std::ptr::null_mut();
    let params = GgufInitParams {
        no_alloc: tensors.unwrap_or(true),
        ctx: if tensors.is_some() { &raw mut ggml } else { std::ptr::null_mut() },
    };
    let ctx = gguf_init_from_buffer(data.as_ptr().cast(), data.len(), params);
    if ctx.is_null() {
        assert!(ggml.is_null(), "a failed parse left a ggml context");
        return None;
    }
    walk_kvs(ctx);
    walk_tensors(ctx);
    if !ggml.is_null() {
        walk_ggml(ggml, tensors == Some(false));
        ggml_free(ggml);
    }
    let n_kv = gguf_get_n_kv(ctx);
    gguf_free(ctx);
    Some(n_kv)
}

fn walk_kvs(ctx: *const GgufContext) {
    std::hint::black_box((gguf_get_version(ctx), gguf_get_alignment(ctx), gguf_get_data_offset(ctx)));
    for id in 0..gguf_get_n_kv(ctx) {
        let key = gguf_get_key(ctx, id);
        // keys are unique as bytes, but found as C strings: "a" and "a\0b" are both found as
        // the first of them
        let found = gguf_find_key(ctx, key);
        assert!((0..=id).contains(&found), "key {id} found as {found}");
        assert_eq!(c_str(gguf_get_key(ctx, found)), c_str(key));
        let ty = gguf_get_kv_type(ctx, id);
        touch_c_str(gguf_type_name(ty));
        if ty == GgufType::ARRAY {
            walk_array(ctx, id);
        } else {
            walk_value(ctx, id, ty);
        }
    }
}

fn walk_value(ctx: *const GgufContext, id: i64, ty: GgufType) {
    use std::hint::black_box;
    match ty {
        GgufType::UINT8 => _ = black_box(gguf_get_val_u8(ctx, id)),
        GgufType::INT8 => _ = black_box(gguf_get_val_i8(ctx, id)),
        GgufType::UINT16 => _ = black_box(gguf_get_val_u16(ctx, id)),
        GgufType::INT16 => _ = black_box(gguf_get_val_i16(ctx, id)),
        GgufType::UINT32 => _ = black_box(gguf_get_val_u32(ctx, id)),
        GgufType::INT32 => _ = black_box(gguf_get_val_i32(ctx, id)),
        GgufType::FLOAT32 => _ = black_box(gguf_get_val_f32(ctx, id)),
        GgufType::BOOL => _ = black_box(gguf_get_val_bool(ctx, id)),
        GgufType::UINT64 => _ = black_box(gguf_get_val_u64(ctx, id)),
        GgufType::INT64 => _ = black_box(gguf_get_val_i64(ctx, id)),
        GgufType::FLOAT64 => _ = black_box(gguf_get_val_f64(ctx, id)),
        GgufType::STRING => return touch_c_str(gguf_get_val_str(ctx, id)),
        _ => panic!("key {id} has type {ty:?}, outside the enumeration"),
    }
    touch(gguf_get_val_data(ctx, id), gguf_type_size_cpp(ty));
}

fn walk_array(ctx: *const GgufContext, id: i64) {
    let ty = gguf_get_arr_type(ctx, id);
    let n = gguf_get_arr_n(ctx, id);
    if ty == GgufType::STRING {
        (0..n).for_each(|i| touch_c_str(gguf_get_arr_str(ctx, id, i)));
    } else {
        assert!(ty.is_plain(), "array {id} of type {ty:?}");
        touch(gguf_get_arr_data(ctx, id), n * gguf_type_size_cpp(ty));
    }
}

fn walk_tensors(ctx: *const GgufContext) {
    let data_offset = gguf_get_data_offset(ctx);
    for id in 0..gguf_get_n_tensors(ctx) {
        let name = gguf_get_tensor_name(ctx, id);
        let found = gguf_find_tensor(ctx, name);
        assert!((0..=id).contains(&found), "tensor {id} found as {found}");
        assert_eq!(c_str(gguf_get_tensor_name(ctx, found)), c_str(name));
        touch(gguf_get_tensor_ne(ctx, id).cast(), 4 * size_of::<i64>());
        std::hint::black_box((gguf_get_tensor_type(ctx, id), data_offset + gguf_get_tensor_offset(ctx, id)));
        std::hint::black_box(gguf_get_tensor_size(ctx, id));
    }
}

/// The ggml context's tensors; their data, every byte, when the parse was to load it.
fn walk_ggml(ggml: *mut Context, with_data: bool) {
    let mut t = ggml_get_first_tensor(ggml);
    while !t.is_null() {
        let n = ggml_nbytes(t);
        if with_data {
            touch(ggml_get_data(t), n);
        }
        t = ggml_get_next_tensor(ggml, t);
    }
}

/// Serialises the parsed metadata and parses that again: the same keys must come back.
fn round_trip(data: &[u8], n_kv: i64) {
    let params = GgufInitParams { no_alloc: true, ctx: std::ptr::null_mut() };
    let ctx = gguf_init_from_buffer(data.as_ptr().cast(), data.len(), params);
    // a file may ask for an alignment of up to 2 GiB, and the metadata is padded to it: a
    // caller's buffer that large is the caller's choice, not one this harness makes
    let size = gguf_get_meta_size(ctx);
    if size > (1 << 20) {
        gguf_free(ctx);
        return;
    }
    let mut meta = vec![0u8; size];
    gguf_get_meta_data(ctx, meta.as_mut_ptr().cast());
    let n_tensors = gguf_get_n_tensors(ctx);
    // The writer keeps ggml_n_dims dimensions, as ggml's does, and that count stops at the last
    // one above 1: a zero-sized dimension behind it is dropped, and the tensor comes back larger.
    let empty = (0..n_tensors).any(|id| {
        // SAFETY: gguf_get_tensor_ne points at the tensor's 4 dimensions.
        unsafe { std::slice::from_raw_parts(gguf_get_tensor_ne(ctx, id), 4) }.contains(&0)
    });
    gguf_free(ctx);
    if empty {
        return;
    }
    let again = gguf_init_from_buffer(meta.as_ptr().cast(), meta.len(), params);
    assert!(!again.is_null(), "written metadata does not parse");
    assert_eq!(gguf_get_n_kv(again), n_kv);
    assert_eq!(gguf_get_n_tensors(again), n_tensors);
    gguf_free(again);
}

/// Reads `n` bytes at `p`, so that a dangling or short pointer is caught here.
fn touch(p: *const c_void, n: usize) {
    if n == 0 {
        return;
    }
    assert!(!p.is_null(), "null data for {n} bytes");
    // SAFETY: the getters promise `n` readable bytes at `p` while the context lives.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
    std::hint::black_box(bytes.iter().fold(0u8, |a, &b| a ^ b));
}

fn touch_c_str(p: *const c_char) {
    std::hint::black_box(c_str(p).len());
}

fn c_str<'a>(p: *const c_char) -> &'a [u8] {
    assert!(!p.is_null(), "a null string");
    // SAFETY: the getters hand out NUL-terminated strings that live with the context, which
    // outlives every use of the slice here.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}
