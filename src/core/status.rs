//! `enum ggml_status`, declared in `ggml.h`: what a computation, an allocation or a backend
//! call reports. Kernels, allocators and backends all return it, so it lives at the bottom.

use std::ffi::{c_int, c_void};

/// `ggml_abort_callback` (`ggml.h`): polled between a graph's nodes; returning true stops the
/// computation with [`Status::ABORTED`].
pub type AbortCallback = Option<unsafe extern "C" fn(data: *mut c_void) -> bool>;

/// `enum ggml_status`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Status(pub c_int);

impl Status {
    pub const ALLOC_FAILED: Status = Status(-2);
    pub const FAILED: Status = Status(-1);
    pub const SUCCESS: Status = Status(0);
    pub const ABORTED: Status = Status(1);
}
