//! Version, status strings, GUIDs, file opening and thread-pool parameter helpers.

use std::ffi::{c_char, c_int};

use super::c_str;

/// `struct ggml_threadpool_params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ThreadpoolParams {
    pub cpumask: [bool; 512],
    pub n_threads: c_int,
    pub prio: c_int,
    pub poll: u32,
    pub strict_cpu: bool,
    pub paused: bool,
}

const _: () = assert!(std::mem::size_of::<ThreadpoolParams>() == 528);

impl ThreadpoolParams {
    /// Normal priority, hybrid polling at 50, no affinity, not paused.
    pub fn new(n_threads: c_int) -> Self {
        ThreadpoolParams { cpumask: [false; 512], n_threads, prio: 0, poll: 50, strict_cpu: false, paused: false }
    }

    /// Equal for the purpose of reusing a pool (`paused` does not count).
    pub fn matches(&self, other: &Self) -> bool {
        self.n_threads == other.n_threads
            && self.prio == other.prio
            && self.poll == other.poll
            && self.strict_cpu == other.strict_cpu
            && self.cpumask == other.cpumask
    }
}

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
pub extern "C" fn ggml_guid_matches(a: *const [u8; 16], b: *const [u8; 16]) -> bool {
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
}
