//! Wall-clock helpers: `ggml_time_ms`/`us` read the monotonic clock (absolute, as in ggml),
//! `ggml_cycles` the process CPU clock.

/// Nothing to set up on Linux; kept so `ggml_time_init` has a body that matches its promise.
pub fn init() {}

fn monotonic() -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the pointer we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts
}

pub fn ms() -> i64 {
    let ts = monotonic();
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

pub fn us() -> i64 {
    let ts = monotonic();
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000
}

/// Process CPU time in `clock()` ticks (microseconds, as POSIX fixes CLOCKS_PER_SEC).
pub fn cycles() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the pointer we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1000
}

pub fn cycles_per_ms() -> i64 {
    // POSIX fixes CLOCKS_PER_SEC at one million.
    1_000_000 / 1000
}

#[cfg(test)]
mod tests {
    #[test]
    fn clocks_move_forward() {
        let a = super::us();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(super::us() - a >= 2000);
        assert!(super::ms() > 0);
    }
}
