//! Sleeping on a 32-bit atomic word and waking its sleepers: the futex syscall on Linux, a
//! yielding fallback elsewhere.
//!
//! A wait may return spuriously; callers re-check their condition in a loop.

use std::sync::atomic::AtomicU32;

/// Puts the calling thread to sleep while `word` still holds `expected`.
///
/// Returns at once if the word already differs, when woken by [`wake_all`] or [`wake_one`], or
/// spuriously (signals, the fallback's yield).
#[cfg(target_os = "linux")]
pub fn wait(word: &AtomicU32, expected: u32) {
    // SAFETY: the futex address is a live, aligned 32-bit atomic for the whole call; a null
    // timeout means "no timeout" and the unused trailing arguments are ignored by the kernel.
    // The kernel only reads the word, atomically with queueing the thread.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes every thread sleeping in [`wait`] on `word`.
#[cfg(target_os = "linux")]
pub fn wake_all(word: &AtomicU32) {
    wake(word, i32::MAX);
}

/// Wakes at most one thread sleeping in [`wait`] on `word`.
#[cfg(target_os = "linux")]
pub fn wake_one(word: &AtomicU32) {
    wake(word, 1);
}

#[cfg(target_os = "linux")]
fn wake(word: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE_PRIVATE only uses the word's address as a key; it neither reads nor
    // writes memory.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n);
    }
}

/// Fallback without futexes: give the CPU away once; the caller's loop re-checks the word.
#[cfg(not(target_os = "linux"))]
pub fn wait(word: &AtomicU32, expected: u32) {
    if word.load(std::sync::atomic::Ordering::Acquire) == expected {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// Fallback without futexes: sleepers poll, so there is nobody to wake.
#[cfg(not(target_os = "linux"))]
pub fn wake_all(_word: &AtomicU32) {}

/// Fallback without futexes: sleepers poll, so there is nobody to wake.
#[cfg(not(target_os = "linux"))]
pub fn wake_one(_word: &AtomicU32) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    #[test]
    fn wait_returns_at_once_when_the_word_differs() {
        let w = AtomicU32::new(1);
        wait(&w, 0);
    }

    #[test]
    fn wake_releases_a_sleeper() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                wait(&w2, 0);
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(10));
        w.store(1, Ordering::Release);
        wake_one(&w);
        t.join().unwrap();
        wake_all(&w);
    }
}
