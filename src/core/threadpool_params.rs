//! `struct ggml_threadpool_params`, declared in `ggml.h` and filled by ggml-base's
//! `ggml_threadpool_params_*`: how many threads a CPU thread pool runs, where and how eagerly.

use std::ffi::c_int;

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
