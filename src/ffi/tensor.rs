//! Tensor creation, names, flags and shape predicates.

use std::ffi::{c_char, c_int, c_void};

use crate::core::context::Context;
use crate::core::element;
use crate::core::tensor::{Tensor, flag};
use crate::core::types::Type;
use crate::ffi::handle::arg;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor(ctx: *mut Context, type_: Type, n_dims: c_int, ne: *const i64) -> *mut Tensor {
    crate::ggml_assert!(!ne.is_null() && (1..=4).contains(&n_dims), "ggml_new_tensor: bad n_dims {n_dims}");
    // SAFETY: the caller passes n_dims extents.
    let ne = unsafe { std::slice::from_raw_parts(ne, n_dims as usize) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).new_tensor(type_, ne).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_1d(ctx: *mut Context, type_: Type, ne0: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).new_tensor(type_, &[ne0]).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_2d(ctx: *mut Context, type_: Type, ne0: i64, ne1: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).new_tensor(type_, &[ne0, ne1]).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_3d(ctx: *mut Context, type_: Type, ne0: i64, ne1: i64, ne2: i64) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).new_tensor(type_, &[ne0, ne1, ne2]).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_tensor_4d(
    ctx: *mut Context,
    type_: Type,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).new_tensor(type_, &[ne0, ne1, ne2, ne3]).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_dup_tensor(ctx: *mut Context, src: *const Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ctx).dup_tensor(arg!(src)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_name(t: *const Tensor) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).name.as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_name(t: *mut Tensor, name: *const c_char) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { t.get_mut().set_name_bytes(arg!(name)) };
    t.as_ptr()
}

/// The name field that `ggml_format_name` (variadic.c) prints into.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_rs_tensor_name_buffer(t: *mut Tensor) -> *mut c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).get_mut().name.as_mut_ptr() }
}

// ---- shape facts ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_nelements(t: *const Tensor) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).nelements() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_nrows(t: *const Tensor) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).nrows() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_nbytes(t: *const Tensor) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).nbytes() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_nbytes_pad(t: *const Tensor) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { crate::core::context::pad(arg!(t).nbytes(), crate::core::context::MEM_ALIGN) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_element_size(t: *const Tensor) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).element_size() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_n_dims(t: *const Tensor) -> c_int {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).n_dims() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_tensor_overhead() -> usize {
    crate::core::context::OBJECT_SIZE + crate::core::context::TENSOR_SIZE
}

// ---- types ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_type_name(type_: Type) -> *const c_char {
    super::static_c_str(type_.name())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_blck_size(type_: Type) -> i64 {
    type_.blck_size()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_type_size(type_: Type) -> usize {
    type_.type_size()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_type_sizef(type_: Type) -> f64 {
    type_.type_size() as f64 / type_.blck_size() as f64
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_row_size(type_: Type, ne: i64) -> usize {
    type_.row_size(ne)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_is_quantized(type_: Type) -> bool {
    type_.is_quantized()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_ftype_to_ggml_type(ftype: c_int) -> Type {
    let t = crate::core::types::ftype_to_type(ftype);
    crate::ggml_assert!(t.is_valid(), "ftype {ftype} has no single tensor type");
    t
}

// ---- predicates ----

macro_rules! tensor_predicates {
    ($($name:ident => $method:ident $(($arg:expr))?),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(t: *const Tensor) -> bool {
            // SAFETY: the C caller's contract: handles passed to the API are live.
            unsafe { arg!(t).$method($($arg)?) }
        }
    )*};
}

tensor_predicates! {
    ggml_is_transposed => is_transposed,
    ggml_is_permuted => is_permuted,
    ggml_is_empty => is_empty,
    ggml_is_scalar => is_scalar,
    ggml_is_vector => is_vector,
    ggml_is_matrix => is_matrix,
    ggml_is_3d => is_3d,
    ggml_is_view => is_view,
    ggml_is_contiguous => is_contiguous,
    ggml_is_contiguous_0 => is_contiguous,
    ggml_is_contiguous_1 => is_contiguous_n(1),
    ggml_is_contiguous_2 => is_contiguous_n(2),
    ggml_is_contiguous_to_1 => is_contiguous_to(1),
    ggml_is_contiguous_to_2 => is_contiguous_to(2),
    ggml_is_contiguous_to_3 => is_contiguous_to(3),
    ggml_is_contiguously_allocated => is_contiguously_allocated,
    ggml_is_contiguous_channels => is_contiguous_channels,
    ggml_is_contiguous_rows => is_contiguous_rows,
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_are_same_shape(t0: *const Tensor, t1: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t0).same_shape(&arg!(t1)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_are_same_stride(t0: *const Tensor, t1: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t0).same_stride(&arg!(t1)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_can_repeat(t0: *const Tensor, t1: *const Tensor) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t0).can_repeat_to(&arg!(t1)) }
}

// ---- flags ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_input(t: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).get_mut().flags |= flag::INPUT };
}

/// Marks the tensor and every tensor it views as outputs, so their memory is kept.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_output(t: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let mut cur = unsafe { Some(arg!(t)) };
    while let Some(t) = cur {
        t.get_mut().flags |= flag::OUTPUT;
        cur = t.view_source();
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_param(t: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    crate::ggml_assert!(t.op == crate::core::op::Op::NONE, "only leaf tensors can be parameters");
    t.get_mut().flags |= flag::PARAM;
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_loss(t: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    crate::ggml_assert!(t.is_scalar(), "the loss must be a scalar");
    crate::ggml_assert!(t.type_ == Type::F32, "the loss must be F32");
    t.get_mut().flags |= flag::LOSS;
}

// ---- data ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_data(t: *const Tensor) -> *mut c_void {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(t).data }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_data_f32(t: *const Tensor) -> *mut f32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    crate::ggml_assert!(t.type_ == Type::F32, "ggml_get_data_f32 on a {} tensor", t.type_.name());
    t.data.cast()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_unravel_index(t: *const Tensor, i: i64, i0: *mut i64, i1: *mut i64, i2: *mut i64, i3: *mut i64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let idx = unsafe { element::unravel(&arg!(t), i) };
    for (out, v) in [i0, i1, i2, i3].into_iter().zip(idx) {
        // SAFETY: each out-pointer is written only when the caller provided it.
        if let Some(out) = unsafe { out.as_mut() } {
            *out = v;
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_zero(t: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    crate::core::graph::tensor_io::set_zero(t);
    t.as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_f32(t: *mut Tensor, value: f32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    element::set_all_f32(&t, value);
    t.as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_i32(t: *mut Tensor, value: i32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let t = unsafe { arg!(t) };
    element::set_all_i32(&t, value);
    t.as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_f32_1d(t: *const Tensor, i: c_int) -> f32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::get_f32_1d(&arg!(t), i as i64) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_f32_1d(t: *const Tensor, i: c_int, value: f32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::set_f32_1d(&arg!(t), i as i64, value) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_i32_1d(t: *const Tensor, i: c_int) -> i32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::get_i32_1d(&arg!(t), i as i64) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_i32_1d(t: *const Tensor, i: c_int, value: i32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::set_i32_1d(&arg!(t), i as i64, value) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_f32_nd(t: *const Tensor, i0: c_int, i1: c_int, i2: c_int, i3: c_int) -> f32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::get_f32_nd(&arg!(t), [i0 as i64, i1 as i64, i2 as i64, i3 as i64]) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_f32_nd(t: *const Tensor, i0: c_int, i1: c_int, i2: c_int, i3: c_int, value: f32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::set_f32_nd(&arg!(t), [i0 as i64, i1 as i64, i2 as i64, i3 as i64], value) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_get_i32_nd(t: *const Tensor, i0: c_int, i1: c_int, i2: c_int, i3: c_int) -> i32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::get_i32_nd(&arg!(t), [i0 as i64, i1 as i64, i2 as i64, i3 as i64]) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_set_i32_nd(t: *const Tensor, i0: c_int, i1: c_int, i2: c_int, i3: c_int, value: i32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { element::set_i32_nd(&arg!(t), [i0 as i64, i1 as i64, i2 as i64, i3 as i64], value) };
}
