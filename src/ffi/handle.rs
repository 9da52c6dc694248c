//! The one place where C handles become Rust values: each kind of handle (tensor, context,
//! graph, buffer, backend, ...) says what a non-NULL pointer of its kind stands for, and
//! [`handle`] turns a pointer into it, aborting on NULL with one message that names the
//! exported function the C caller called.
//!
//! Exports call it through [`arg!`], which supplies that name, inside an `unsafe` block whose
//! SAFETY line is the C caller's contract: ggml trusts its callers to pass live handles, and
//! so does this layer; NULL is the one misuse it can see.

use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use crate::alloc::Gallocr;
use crate::backend::backend::{BackendPtr, EventPtr};
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::device::DevicePtr;
use crate::backend::interface::{Backend, Buffer, BufferType, Device, Event, Reg};
use crate::backend::reg::RegPtr;
use crate::backend::tallocr::Tallocr;
use crate::core::context::Context;
use crate::core::graph::{Graph, HashSet};
use crate::core::log::abort_at_caller;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::cpu::plan::Plan;
use crate::cpu::threadpool::Threadpool;
use crate::gguf::GgufContext;
use crate::opt::{Dataset, OptContext, OptResult};
use crate::sched::Sched;

/// A kind of C handle.
pub trait Handle {
    /// The handle's C type as ggml's headers spell it, for the NULL message.
    const C_NAME: &'static str;
    /// What a non-NULL handle stands for on the Rust side.
    type Target<'a>;

    /// # Safety
    /// `ptr` points to a live object of this kind that stays alive for `'a`, and that no one
    /// else uses meanwhile in a way the target's kind of reference forbids (the C API's
    /// contract for every handle it is given).
    unsafe fn target<'a>(ptr: NonNull<Self>) -> Self::Target<'a>;
}

/// The Rust value behind a handle the export requires to be non-NULL; `export` names the
/// exported function (the path of [`this_export!`]'s marker in it, or the name itself). On NULL, aborts through ggml's abort path with
/// the export's file and line (the location is the caller's: `#[track_caller]`).
///
/// # Safety
/// As [`Handle::target`], when `ptr` is not NULL.
#[track_caller]
pub unsafe fn handle<'a, H: Handle>(ptr: *const H, export: &'static str) -> H::Target<'a> {
    crate::core::log::enter_export(export);
    match NonNull::new(ptr.cast_mut()) {
        // SAFETY: passed on from the caller.
        Some(p) => unsafe { H::target(p) },
        None => null_argument(H::C_NAME, export),
    }
}

/// The Rust value behind a handle the export allows to be NULL.
///
/// # Safety
/// As [`handle`].
pub unsafe fn opt_handle<'a, H: Handle>(ptr: *const H) -> Option<H::Target<'a>> {
    // SAFETY: passed on from the caller.
    NonNull::new(ptr.cast_mut()).map(|p| unsafe { H::target(p) })
}

/// [`handle`] with the name of the enclosing exported function. A call of an `unsafe fn`:
/// the export writes the `unsafe` block and its SAFETY line.
macro_rules! arg {
    ($ptr:expr) => {
        $crate::ffi::handle::handle($ptr, $crate::ffi::handle::this_export!())
    };
}

/// The path of a marker function declared in the enclosing function, from which a NULL
/// message takes the exported function's name; for helpers that convert on an export's behalf.
macro_rules! this_export {
    () => {{
        fn here() {}
        std::any::type_name_of_val(&here)
    }};
}

/// [`opt_handle`], for symmetry with [`arg!`] at the call sites.
macro_rules! opt_arg {
    ($ptr:expr) => {
        $crate::ffi::handle::opt_handle($ptr)
    };
}

pub(crate) use {arg, opt_arg, this_export};

/// Aborts as ggml does on a NULL argument it requires: file, line, and what was wrong.
#[track_caller]
fn null_argument(c_name: &str, export: &'static str) -> ! {
    abort_at_caller(&format!("NULL {c_name} passed to {}", crate::core::log::export_name(export)))
}

/// `len` bytes of caller memory at `ptr` (which may be NULL when `len` is 0).
#[track_caller]
pub(crate) fn host_bytes<'a>(ptr: *const c_void, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    if ptr.is_null() {
        abort_at_caller(&format!("NULL data pointer for {} bytes", len));
    }
    // SAFETY: the caller provides `len` readable bytes at `ptr` (the API's contract), valid
    // for the call (and, for an asynchronous copy, until the backend is synchronized).
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
}

/// Mutable counterpart of [`host_bytes`].
#[track_caller]
pub(crate) fn host_bytes_mut<'a>(ptr: *mut c_void, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    if ptr.is_null() {
        abort_at_caller(&format!("NULL data pointer for {} bytes", len));
    }
    // SAFETY: the caller provides `len` writable bytes at `ptr`, not aliased during the call.
    unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len) }
}

/// Kinds whose Rust side is a handle type of the core (`TensorPtr`, `BackendPtr`, ...), made
/// by its `from_raw`.
macro_rules! pointer_handles {
    ($($kind:ty => $target:ty, $c_name:literal;)*) => {
        $(
            impl Handle for $kind {
                const C_NAME: &'static str = $c_name;
                type Target<'a> = $target;

                unsafe fn target<'a>(ptr: NonNull<Self>) -> Self::Target<'a> {
                    // SAFETY: passed on from the caller; `ptr` is not NULL.
                    match unsafe { <$target>::from_raw(ptr.as_ptr()) } {
                        Some(t) => t,
                        None => unreachable!("from_raw of a non-NULL pointer"),
                    }
                }
            }
        )*
    };
}

pointer_handles! {
    Tensor => TensorPtr, "struct ggml_tensor *";
    Buffer => BufferPtr, "ggml_backend_buffer_t";
    BufferType => BufferTypePtr, "ggml_backend_buffer_type_t";
    Backend => BackendPtr, "ggml_backend_t";
    Device => DevicePtr, "ggml_backend_dev_t";
    Reg => RegPtr, "ggml_backend_reg_t";
    Event => EventPtr, "ggml_backend_event_t";
}

/// Kinds that C uses from one thread at a time, so a handle is the object itself for the call.
macro_rules! exclusive_handles {
    ($($kind:ty, $c_name:literal;)*) => {
        $(
            impl Handle for $kind {
                const C_NAME: &'static str = $c_name;
                type Target<'a> = &'a mut $kind;

                unsafe fn target<'a>(mut ptr: NonNull<Self>) -> Self::Target<'a> {
                    // SAFETY: passed on from the caller.
                    unsafe { ptr.as_mut() }
                }
            }
        )*
    };
}

exclusive_handles! {
    Context, "struct ggml_context *";
    Graph, "struct ggml_cgraph *";
    HashSet, "struct ggml_hash_set *";
    Gallocr, "ggml_gallocr_t";
    Tallocr, "struct ggml_tallocr *";
    Sched, "ggml_backend_sched_t";
    GgufContext, "struct gguf_context *";
    Dataset, "ggml_opt_dataset_t";
    OptContext, "ggml_opt_context_t";
    OptResult, "ggml_opt_result_t";
}

/// A plan from `ggml_graph_plan`, which the caller owns and only reads through this handle.
impl Handle for Plan {
    const C_NAME: &'static str = "struct ggml_cplan *";
    type Target<'a> = &'a Plan;

    unsafe fn target<'a>(ptr: NonNull<Self>) -> Self::Target<'a> {
        // SAFETY: passed on from the caller.
        unsafe { ptr.as_ref() }
    }
}

/// A C string argument: its bytes, without the terminator.
impl Handle for c_char {
    const C_NAME: &'static str = "string";
    type Target<'a> = &'a [u8];

    unsafe fn target<'a>(ptr: NonNull<Self>) -> Self::Target<'a> {
        // SAFETY: passed on from the caller; C strings passed to ggml are NUL-terminated.
        unsafe { CStr::from_ptr(ptr.as_ptr()) }.to_bytes()
    }
}

/// A thread pool is shared with its workers: a handle is a shared reference.
impl Handle for Threadpool {
    const C_NAME: &'static str = "struct ggml_threadpool *";
    type Target<'a> = &'a Threadpool;

    unsafe fn target<'a>(ptr: NonNull<Self>) -> &'a Threadpool {
        // SAFETY: passed on from the caller.
        unsafe { ptr.as_ref() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;
    use crate::core::types::Type;

    fn marker_path() -> &'static str {
        fn here() {}
        std::any::type_name_of_val(&here)
    }

    #[test]
    fn the_export_is_the_function_around_the_marker() {
        assert_eq!(crate::core::log::export_name(marker_path()), "marker_path");
        assert_eq!(crate::core::log::export_name("ggml_rs::ffi::x::ggml_add::{{closure}}::here"), "ggml_add");
    }

    #[test]
    fn pointer_and_exclusive_kinds_wrap_what_they_point_to() {
        let mut ctx = Context::new(InitParams { mem_size: 1 << 16, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let t = ctx.new_tensor(Type::F32, &[3]);
        // SAFETY: a live tensor and a live context, used on this thread only.
        unsafe {
            assert_eq!(handle(t.as_ptr(), "test"), t);
            assert_eq!(opt_handle(t.as_ptr()), Some(t));
            assert_eq!(opt_handle::<Tensor>(std::ptr::null()), None);
            let c: &mut Context = handle(&mut *ctx as *mut Context, "test");
            assert_eq!(c.objects().count(), 1);
            assert!(opt_handle::<Graph>(std::ptr::null()).is_none());
        }
    }

    /// A NULL tensor passed to `ggml_nbytes` aborts the process, through ggml's abort path,
    /// with the export's name, file and line. The abort runs in a child: this test binary again,
    /// running only this test with the environment variable set.
    #[test]
    fn a_null_argument_aborts_naming_the_export() {
        if std::env::var_os("GGML_RS_NULL_ARGUMENT_CHILD").is_some() {
            crate::ffi::tensor::ggml_nbytes(std::ptr::null());
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "ffi::handle::tests::a_null_argument_aborts_naming_the_export", "--test-threads=1"])
            .env("GGML_RS_NULL_ARGUMENT_CHILD", "1")
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().find(|l| l.contains("NULL")).unwrap_or_default();
        assert!(first.starts_with("src/ffi/tensor.rs:"), "{stderr}");
        assert!(first.ends_with(": NULL struct ggml_tensor * passed to ggml_nbytes"), "{stderr}");
    }
}
