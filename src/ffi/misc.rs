//! Version, status strings, GUIDs, file opening and thread-pool parameter helpers.

use std::ffi::{c_char, c_int};

use super::c_str;

use crate::core::threadpool_params::ThreadpoolParams;

#[unsafe(no_mangle)]
pub extern "C" fn ggml_version() -> *const c_char {
    c"0.25.1".as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_commit() -> *const c_char {
    concat!("ggml-rs ", env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_status_to_string(status: c_int) -> *const c_char {
    match status {
        -2 => c"GGML status: error (failed to allocate memory)",
        -1 => c"GGML status: error (operation failed)",
        0 => c"GGML status: success",
        1 => c"GGML status: warning (operation aborted)",
        _ => c"GGML status: unknown",
    }
    .as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_guid_matches(a: *mut [u8; 16], b: *mut [u8; 16]) -> bool {
    // SAFETY: GUID handles point to 16-byte arrays (ggml_guid).
    match unsafe { (a.as_ref(), b.as_ref()) } {
        (Some(a), Some(b)) => a == b,
        _ => crate::ggml_abort!("NULL guid passed to ggml_guid_matches"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_fopen(fname: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    c_str(fname);
    c_str(mode);
    // SAFETY: both are valid NUL-terminated strings (checked non-null above).
    unsafe { libc::fopen(fname, mode) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_params_init(p: *mut ThreadpoolParams, n_threads: c_int) {
    // SAFETY: callers pass a writable params struct.
    match unsafe { p.as_mut() } {
        Some(p) => *p = ThreadpoolParams::new(n_threads),
        None => crate::ggml_abort!("NULL params passed to ggml_threadpool_params_init"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_params_default(n_threads: c_int) -> ThreadpoolParams {
    ThreadpoolParams::new(n_threads)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_threadpool_params_match(p0: *const ThreadpoolParams, p1: *const ThreadpoolParams) -> bool {
    // SAFETY: callers pass two params structs.
    match unsafe { (p0.as_ref(), p1.as_ref()) } {
        (Some(a), Some(b)) => a.matches(b),
        _ => crate::ggml_abort!("NULL params passed to ggml_threadpool_params_match"),
    }
}

/// Cache-line aligned allocation for backends (`ggml_aligned_malloc`); NULL for 0 bytes.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_aligned_malloc(size: usize) -> *mut std::ffi::c_void {
    if size == 0 {
        crate::log_warn!("Behavior may be unexpected when allocating 0 bytes for ggml_aligned_malloc!\n");
        return std::ptr::null_mut();
    }
    let mut ptr = std::ptr::null_mut();
    // SAFETY: posix_memalign writes one pointer into `ptr`; 64 is a power of two multiple of
    // the pointer size.
    let result = unsafe { libc::posix_memalign(&mut ptr, 64, size) };
    if result != 0 {
        crate::log_error!("ggml_aligned_malloc: failed to allocate {:6.2} MB\n", size as f64 / (1024.0 * 1024.0));
        return std::ptr::null_mut();
    }
    ptr
}

/// Frees memory from [`ggml_aligned_malloc`]; the size is unused on Linux.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_aligned_free(ptr: *mut std::ffi::c_void, _size: usize) {
    // SAFETY: `ptr` is NULL or came from posix_memalign in ggml_aligned_malloc.
    unsafe { libc::free(ptr) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_ignores_pause() {
        let a = ThreadpoolParams::new(4);
        let mut b = a;
        b.paused = true;
        assert!(a.matches(&b));
        b.cpumask[3] = true;
        assert!(!a.matches(&b));
    }

    #[test]
    fn aligned_allocations_are_aligned() {
        let p = ggml_aligned_malloc(100);
        assert_eq!(p as usize % 64, 0);
        ggml_aligned_free(p, 100);
        assert!(ggml_aligned_malloc(0).is_null());
    }
}
