//! The `gguf.h` API: 61 functions over an opaque `struct gguf_context` (a boxed
//! [`GgufContext`]).

use std::ffi::{c_char, c_void};

use crate::core::context::Context;
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::ffi::handle::arg;
use crate::gguf::context::strings;
use crate::gguf::reader::{self, Reader};
use crate::gguf::source::{CFile, CFileSource, CallbackSource, FileSource, ReadCallback, SliceSource, Source};
use crate::gguf::value::Scalar;
use crate::gguf::{GgufContext, GgufType, Kv, writer};

/// `struct gguf_init_params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GgufInitParams {
    pub no_alloc: bool,
    pub ctx: *mut *mut Context,
}

fn into_raw(ctx: GgufContext) -> *mut GgufContext {
    Box::into_raw(Box::new(ctx))
}

/// Runs the parser and hands the results over to C.
fn load<S: Source>(mut r: Reader<S>, params: GgufInitParams) -> *mut GgufContext {
    let tensors = (!params.ctx.is_null()).then_some(params.no_alloc);
    match reader::load(&mut r, tensors) {
        Ok(loaded) => {
            if let Some(ggml) = loaded.ggml {
                // SAFETY: `tensors` is Some only when params.ctx is non-null; the caller
                // passes a writable `struct ggml_context **`.
                unsafe { *params.ctx = Box::into_raw(ggml) };
            }
            into_raw(loaded.gguf)
        }
        Err(e) => {
            if e.ggml_ctx_reset {
                // SAFETY: as above (the reset only happens when tensors were requested).
                unsafe { *params.ctx = std::ptr::null_mut() };
            }
            std::ptr::null_mut()
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_init_empty() -> *mut GgufContext {
    into_raw(GgufContext::new())
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_init_from_file_ptr(file: *mut libc::FILE, params: GgufInitParams) -> *mut GgufContext {
    if file.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller passes an open stream and keeps it open during the call.
    let file = unsafe { CFile::new(file) };
    let Some(start) = file.tell() else { return std::ptr::null_mut() };
    let remain = file.remaining();
    load(Reader::new(CFileSource::new(file, start), usize::MAX, start, remain), params)
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_init_from_file(fname: *const c_char, params: GgufInitParams) -> *mut GgufContext {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let name = unsafe { arg!(fname) };
    let path = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name);
    match std::fs::File::open(path) {
        Ok(file) => {
            let src = FileSource::new(file);
            let len = src.size();
            load(Reader::new(src, usize::MAX, 0, len), params)
        }
        Err(e) => {
            crate::log_error!(
                "gguf_init_from_file: failed to open GGUF file '{}' ({e})\n",
                String::from_utf8_lossy(name)
            );
            std::ptr::null_mut()
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_init_from_buffer(data: *const c_void, size: usize, params: GgufInitParams) -> *mut GgufContext {
    if data.is_null() || size == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller passes `size` readable bytes at `data`, unchanged during the call.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    load(Reader::new(SliceSource(bytes), usize::MAX, 0, size as u64), params)
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_init_from_callback(
    callback: Option<ReadCallback>,
    userdata: *mut c_void,
    max_chunk_read: usize,
    max_expected_size: u64,
    params: GgufInitParams,
) -> *mut GgufContext {
    let Some(callback) = callback else { return std::ptr::null_mut() };
    // SAFETY: the caller's callback follows gguf_reader_callback_t's contract for `userdata`.
    let src = unsafe { CallbackSource::new(callback, userdata) };
    let chunk = if max_chunk_read == 0 { usize::MAX } else { max_chunk_read };
    load(Reader::new(src, chunk, 0, max_expected_size), params)
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_free(ctx: *mut GgufContext) {
    if !ctx.is_null() {
        // SAFETY: non-null contexts come from Box::into_raw in gguf_init_* and are freed once.
        drop(unsafe { Box::from_raw(ctx) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_type_name(ty: GgufType) -> *const c_char {
    ty.name().map_or(std::ptr::null(), super::static_c_str)
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_version(ctx: *const GgufContext) -> u32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).version() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_alignment(ctx: *const GgufContext) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).alignment() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_data_offset(ctx: *const GgufContext) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).data_offset() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_n_kv(ctx: *const GgufContext) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).n_kv() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_find_key(ctx: *const GgufContext, key: *const c_char) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).find_key(arg!(key)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_key(ctx: *const GgufContext, key_id: i64) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).kv(key_id).key().as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_kv_type(ctx: *const GgufContext, key_id: i64) -> GgufType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).kv(key_id).kv_type() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_arr_type(ctx: *const GgufContext, key_id: i64) -> GgufType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).arr_type(key_id) }
}

fn get_val<T: Scalar>(ctx: &GgufContext, key_id: i64) -> T {
    ctx.kv(key_id).get()
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_u8(ctx: *const GgufContext, key_id: i64) -> u8 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_i8(ctx: *const GgufContext, key_id: i64) -> i8 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_u16(ctx: *const GgufContext, key_id: i64) -> u16 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_i16(ctx: *const GgufContext, key_id: i64) -> i16 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_u32(ctx: *const GgufContext, key_id: i64) -> u32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_i32(ctx: *const GgufContext, key_id: i64) -> i32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_f32(ctx: *const GgufContext, key_id: i64) -> f32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_u64(ctx: *const GgufContext, key_id: i64) -> u64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_i64(ctx: *const GgufContext, key_id: i64) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_f64(ctx: *const GgufContext, key_id: i64) -> f64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_bool(ctx: *const GgufContext, key_id: i64) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { get_val(arg!(ctx), key_id) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_str(ctx: *const GgufContext, key_id: i64) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).kv(key_id).get_str().as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_val_data(ctx: *const GgufContext, key_id: i64) -> *const c_void {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let kv = unsafe { arg!(ctx).kv(key_id) };
    kv.check_single();
    kv.raw().as_ptr().cast()
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_arr_n(ctx: *const GgufContext, key_id: i64) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).kv(key_id).len() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_arr_data(ctx: *const GgufContext, key_id: i64) -> *const c_void {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let raw = unsafe { arg!(ctx).kv(key_id).raw() };
    if raw.is_empty() { std::ptr::null() } else { raw.as_ptr().cast() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_arr_str(ctx: *const GgufContext, key_id: i64, i: usize) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).kv(key_id).str_at(i).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_n_tensors(ctx: *const GgufContext) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).n_tensors() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_find_tensor(ctx: *const GgufContext, name: *const c_char) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).find_tensor(arg!(name)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_tensor_offset(ctx: *const GgufContext, tensor_id: i64) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).tensor(tensor_id).offset as usize }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_tensor_name(ctx: *const GgufContext, tensor_id: i64) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).tensor(tensor_id).t.name.as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_tensor_ne(ctx: *const GgufContext, tensor_id: i64) -> *const i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).tensor(tensor_id).t.ne.as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_tensor_type(ctx: *const GgufContext, tensor_id: i64) -> Type {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).tensor(tensor_id).t.type_ }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_tensor_size(ctx: *const GgufContext, tensor_id: i64) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).tensor(tensor_id).nbytes() }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_remove_key(ctx: *mut GgufContext, key: *const c_char) -> i64 {
    // Copied: the string may point into the context it updates.
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let key = unsafe { arg!(key).to_vec() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).remove_key(&key) }
}

fn set_val<T: Scalar>(ctx: &mut GgufContext, key: &[u8], val: T) {
    ctx.set(Kv::scalar(key, val));
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_u8(ctx: *mut GgufContext, key: *const c_char, val: u8) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_i8(ctx: *mut GgufContext, key: *const c_char, val: i8) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_u16(ctx: *mut GgufContext, key: *const c_char, val: u16) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_i16(ctx: *mut GgufContext, key: *const c_char, val: i16) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_u32(ctx: *mut GgufContext, key: *const c_char, val: u32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_i32(ctx: *mut GgufContext, key: *const c_char, val: i32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_f32(ctx: *mut GgufContext, key: *const c_char, val: f32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_u64(ctx: *mut GgufContext, key: *const c_char, val: u64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_i64(ctx: *mut GgufContext, key: *const c_char, val: i64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_f64(ctx: *mut GgufContext, key: *const c_char, val: f64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_bool(ctx: *mut GgufContext, key: *const c_char, val: bool) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { set_val(arg!(ctx), arg!(key), val) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_val_str(ctx: *mut GgufContext, key: *const c_char, val: *const c_char) {
    // Kv::string copies both strings before the context is touched.
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let kv = unsafe { Kv::string(arg!(key), arg!(val)) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).set(kv) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_arr_data(
    ctx: *mut GgufContext,
    key: *const c_char,
    ty: GgufType,
    data: *const c_void,
    n: usize,
) {
    crate::ggml_assert!(ty.is_plain(), "gguf_set_arr_data: type {} is not a fixed-size type", ty.describe());
    let Some(nbytes) = n.checked_mul(ty.size()) else {
        crate::ggml_abort!("gguf_set_arr_data: {} elements of {} overflow", n, ty.describe())
    };
    let bytes: &[u8] = if nbytes == 0 {
        &[]
    } else {
        crate::ggml_assert!(!data.is_null(), "gguf_set_arr_data: NULL data for {} elements", n);
        // SAFETY: the caller passes `n` elements of `ty`, i.e. `nbytes` readable bytes.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), nbytes) }
    };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let kv = unsafe { Kv::plain_array(arg!(key), ty, bytes) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).set(kv) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_arr_str(ctx: *mut GgufContext, key: *const c_char, data: *mut *const c_char, n: usize) {
    let ptrs: &[*const c_char] = if n == 0 {
        &[]
    } else {
        crate::ggml_assert!(!data.is_null(), "gguf_set_arr_str: NULL data for {} strings", n);
        // SAFETY: the caller passes an array of `n` string pointers.
        unsafe { std::slice::from_raw_parts(data, n) }
    };
    // Copied: the strings may point into the context they update.
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let values = unsafe { strings(ptrs.iter().map(|&p| arg!(p).to_vec())) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let kv = unsafe { Kv::string_array(arg!(key), values) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).set(kv) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_kv(ctx: *mut GgufContext, src: *const GgufContext) {
    // Copied first: `src` may be `ctx` itself.
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let pairs = unsafe { arg!(src).kvs().to_vec() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).set_all(&pairs) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_add_tensor(ctx: *mut GgufContext, tensor: *const Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(tensor) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).add_tensor(&t) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_tensor_type(ctx: *mut GgufContext, name: *const c_char, ty: Type) {
    // Copied: the string may point into the context it updates.
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let name = unsafe { arg!(name).to_vec() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).set_tensor_type(&name, ty) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_set_tensor_data(ctx: *mut GgufContext, name: *const c_char, data: *const c_void) {
    // Copied: the string may point into the context it updates.
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let name = unsafe { arg!(name).to_vec() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).set_tensor_data(&name, data) };
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_write_to_file_ptr(ctx: *const GgufContext, file: *mut libc::FILE, only_meta: bool) -> bool {
    crate::ggml_assert!(!file.is_null(), "gguf_write_to_file_ptr: NULL file");
    // SAFETY: the caller passes an open stream and keeps it open during the call.
    let mut file = unsafe { CFile::new(file) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        match writer::write_to(arg!(ctx), &mut file, only_meta) {
            Ok(()) => true,
            Err(e) => {
                crate::log_error!("gguf_write_to_file_ptr: failed to write GGUF data: {e}\n");
                false
            }
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_write_to_file(ctx: *const GgufContext, fname: *const c_char, only_meta: bool) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let ctx = unsafe { arg!(ctx) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let name = unsafe { arg!(fname) };
    let shown = String::from_utf8_lossy(name);
    let path = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name);
    let file = match std::fs::File::create(path) {
        Ok(f) => f,
        Err(e) => {
            crate::log_error!("gguf_write_to_file: failed to open file '{shown}' for writing GGUF data ({e})\n");
            return false;
        }
    };
    let mut out = std::io::BufWriter::new(file);
    let result = writer::write_to(ctx, &mut out, only_meta).and_then(|()| std::io::Write::flush(&mut out));
    match result {
        Ok(()) => true,
        Err(e) => {
            crate::log_error!("gguf_write_to_file: failed to write GGUF data into '{shown}': {e}\n");
            false
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_meta_size(ctx: *const GgufContext) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { writer::meta(arg!(ctx)).padded_len }
}

#[unsafe(no_mangle)]
pub extern "C" fn gguf_get_meta_data(ctx: *const GgufContext, data: *mut c_void) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let writer::Meta { bytes, padded_len } = unsafe { writer::meta(arg!(ctx)) };
    crate::ggml_assert!(!data.is_null(), "gguf_get_meta_data: NULL output buffer");
    // SAFETY: the caller provides gguf_get_meta_size() = `padded_len` writable bytes at
    // `data`; the metadata fills the first `bytes.len()`, zeros the rest.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.cast::<u8>(), bytes.len());
        std::ptr::write_bytes(data.cast::<u8>().add(bytes.len()), 0, padded_len - bytes.len());
    }
}

/// `size_t gguf_type_size(enum gguf_type)`: declared by ggml's internal C++ header and exported
/// by the reference under its C++ (Itanium-mangled) name, which ggml's own tests and tools link
/// against. Bytes of one element; 0 for strings, arrays and unknown types.
#[unsafe(export_name = "_Z14gguf_type_size9gguf_type")]
pub extern "C" fn gguf_type_size_cpp(type_: GgufType) -> usize {
    type_.size()
}
