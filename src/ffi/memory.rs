//! Aligned allocations for backends: `ggml_aligned_malloc` and `ggml_aligned_free`.

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
    fn aligned_allocations_are_aligned() {
        let p = ggml_aligned_malloc(100);
        assert_eq!(p as usize % 64, 0);
        ggml_aligned_free(p, 100);
        assert!(ggml_aligned_malloc(0).is_null());
    }
}
