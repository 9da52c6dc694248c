//! The process-wide lock of `ggml_critical_section_start`/`_end`, and the mutex itself, which
//! the reference's libggml-base exports as `ggml_critical_section_mutex` (ggml-impl.h).

/// `ggml_critical_section_mutex`: the process-wide lock that backends take around one-time
/// initialisation, exported under the reference's name as the `std::mutex` it is there (a
/// pthread mutex: libstdc++'s `std::mutex` is one, zero-initialised). A pthread mutex rather
/// than a Rust one because it is locked and unlocked in separate C calls.
#[unsafe(no_mangle)]
pub static ggml_critical_section_mutex: CriticalSection =
    CriticalSection(std::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));

#[repr(transparent)]
pub struct CriticalSection(std::cell::UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads; it is only touched through
// pthread_mutex_lock/unlock.
unsafe impl Sync for CriticalSection {}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_critical_section_start() {
    // SAFETY: the mutex is statically initialised and never moved.
    unsafe { libc::pthread_mutex_lock(ggml_critical_section_mutex.0.get()) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_critical_section_end() {
    // SAFETY: as above; callers pair this with ggml_critical_section_start.
    unsafe { libc::pthread_mutex_unlock(ggml_critical_section_mutex.0.get()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_critical_section_is_the_exported_mutex() {
        assert_eq!(std::mem::size_of_val(&ggml_critical_section_mutex), 40);
        ggml_critical_section_start();
        // SAFETY: the mutex is live; trylock on a held default mutex fails with EBUSY.
        assert_eq!(unsafe { libc::pthread_mutex_trylock(ggml_critical_section_mutex.0.get()) }, libc::EBUSY);
        ggml_critical_section_end();
        // SAFETY: as above; now free, so trylock takes it and we give it back.
        assert_eq!(unsafe { libc::pthread_mutex_trylock(ggml_critical_section_mutex.0.get()) }, 0);
        ggml_critical_section_end();
    }
}
