//! The names of ops as C strings: `ggml_op_name`, `ggml_op_symbol` and a node's `ggml_op_desc`.

use crate::core::op::Op;
use crate::core::ops::unary;
use crate::core::tensor::Tensor;
use crate::ffi::handle::arg;
use crate::ffi::static_c_str;
use std::ffi::c_char;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_name(op: Op) -> *const c_char {
    static_c_str(op.name())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_symbol(op: Op) -> *const c_char {
    static_c_str(op.symbol())
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_desc(t: *const Tensor) -> *const c_char {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { static_c_str(unary::op_desc(&arg!(t))) }
}
