//! The process-wide lock of `ggml_critical_section_start`/`_end`.

/// The process-wide lock that backends take around one-time initialisation. A pthread mutex
/// rather than a Rust one because it is locked and unlocked in separate C calls.
static CRITICAL_SECTION: CriticalSection = CriticalSection(std::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));

struct CriticalSection(std::cell::UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads; it is only touched through
// pthread_mutex_lock/unlock.
unsafe impl Sync for CriticalSection {}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_critical_section_start() {
    // SAFETY: the mutex is statically initialised and never moved.
    unsafe { libc::pthread_mutex_lock(CRITICAL_SECTION.0.get()) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_critical_section_end() {
    // SAFETY: as above; callers pair this with ggml_critical_section_start.
    unsafe { libc::pthread_mutex_unlock(CRITICAL_SECTION.0.get()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_can_be_taken_and_released() {
        ggml_critical_section_start();
        ggml_critical_section_end();
    }
}
