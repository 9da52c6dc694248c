//! A reusable barrier for a team of threads: arrivals are counted, the last one to arrive
//! opens the barrier by bumping a generation number, and the others wait for that number to
//! change, first spinning with a pause hint, then asleep on a futex.
//!
//! Spinning keeps the hand-over fast when every thread has a core of its own. When the team
//! is larger than the machine, a spinning thread would only steal the time slice that the
//! thread everybody waits for needs, so waiters then yield their core a few times and go to
//! sleep. The same holds when other processes keep the cores busy, which the barrier cannot
//! see directly; it sees its spins fail instead, and halves its spin budget after each failed
//! spin and doubles it (up to the full budget) after each successful one. On a quiet machine
//! the budget stays full; on a loaded one waiters soon sleep almost at once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::futex;

/// How long a waiter spins before sleeping when the team fits on the machine's cores.
pub const SPIN_BUDGET: Duration = Duration::from_micros(1000);

/// The least a waiter spins while the adaptive budget is low: still enough for a hand-over
/// between two running threads (about a microsecond).
const MIN_SPIN: Duration = Duration::from_micros(16);

/// Spins between two looks at the clock in [`spin_until`].
const SPINS_PER_CLOCK_CHECK: u32 = 64;

/// A value on a cache line of its own, so that threads hammering one counter do not slow
/// down readers of its neighbours.
#[repr(align(64))]
#[derive(Default, Debug)]
pub struct CachePadded<T>(pub T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The number of CPUs this process may run on (cached).
pub fn available_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Spins with a pause hint until `done` returns true or `budget` has passed; returns whether
/// `done` came true.
pub fn spin_until(budget: Duration, mut done: impl FnMut() -> bool) -> bool {
    if budget.is_zero() {
        return done();
    }
    let start = Instant::now();
    loop {
        for _ in 0..SPINS_PER_CLOCK_CHECK {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= budget {
            return done();
        }
    }
}

/// A duration in whole nanoseconds, saturating at about 4 s.
fn nanos(d: Duration) -> u32 {
    u32::try_from(d.as_nanos()).unwrap_or(u32::MAX)
}

/// A barrier for teams of any size up to `u32::MAX`; the size is given at each wait, so one
/// barrier serves teams of different sizes one after the other (never at the same time).
#[derive(Debug)]
pub struct Barrier {
    /// Threads that have arrived at the current generation.
    arrived: CachePadded<AtomicU32>,
    /// Bumped by the last arrival to open the barrier; the futex word waiters sleep on.
    generation: CachePadded<AtomicU32>,
    /// Waiters asleep (or about to be) on `generation`; the opener skips the wake syscall
    /// when there are none.
    sleepers: CachePadded<AtomicU32>,
    /// How long a waiter spins at most when the team fits on the cores.
    spin_budget: Duration,
    /// The spin budget now, in nanoseconds: between [`MIN_SPIN`] and `spin_budget`, lowered
    /// by failed spins and raised by successful ones.
    spin_now_ns: CachePadded<AtomicU32>,
}

impl Default for Barrier {
    fn default() -> Self {
        Barrier::new()
    }
}

impl Barrier {
    pub fn new() -> Barrier {
        Barrier::with_spin_budget(SPIN_BUDGET)
    }

    /// A barrier whose waiters spin for `spin_budget` (when the team fits on the cores) before
    /// sleeping.
    pub fn with_spin_budget(spin_budget: Duration) -> Barrier {
        Barrier {
            arrived: CachePadded(AtomicU32::new(0)),
            generation: CachePadded(AtomicU32::new(0)),
            sleepers: CachePadded(AtomicU32::new(0)),
            spin_budget,
            spin_now_ns: CachePadded(AtomicU32::new(nanos(spin_budget))),
        }
    }

    /// Waits until all `n_threads` threads of the team have called `wait`. Everything a thread
    /// wrote before its call is visible to every thread after the barrier. Returns true in
    /// exactly one thread of the team (the last to arrive).
    pub fn wait(&self, n_threads: usize) -> bool {
        self.wait_then(n_threads, || ())
    }

    /// As [`Barrier::wait`], and the last thread to arrive runs `on_last` before any thread
    /// leaves: the place to reset shared state for the phase that follows.
    pub fn wait_then(&self, n_threads: usize, on_last: impl FnOnce()) -> bool {
        crate::ggml_assert!(n_threads >= 1, "a barrier needs at least one thread");
        if n_threads == 1 {
            on_last();
            return true;
        }
        let team = u32::try_from(n_threads).unwrap_or_else(|_| crate::ggml_abort!("team of {} threads", n_threads));

        // This thread cannot see a generation older than the one it is waiting in: it saw the
        // previous one open (or opened it).
        let generation = self.generation.load(Ordering::Relaxed);

        // Arrive. The read-modify-writes on `arrived` chain every arrival's writes to the last.
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 == team {
            // Reset before opening: a released thread may arrive at the next barrier at once.
            self.arrived.store(0, Ordering::Relaxed);
            on_last();
            self.generation.fetch_add(1, Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) != 0 {
                futex::wake_all(&self.generation);
            }
            return true;
        }

        let opened = || self.generation.load(Ordering::Acquire) != generation;
        // A team larger than the machine sleeps at once. Yielding instead (64 times) made
        // round trips 2.5x faster on an idle machine, but with other processes busy on every
        // core each yield hands the core to one of them for a whole time slice: a pool of 8 on
        // 2 cores beside 2 busy processes took 10 s for what takes 2 s sleeping at once, while
        // on an idle machine sleeping costs 7% (c-tests/test-threadpool-load.c).
        let spun = if n_threads <= available_cores() { self.adaptive_spin(opened) } else { opened() };
        if !spun {
            self.sleep_while(generation);
        }
        false
    }

    /// Spins for the current adaptive budget and adjusts it by the outcome. Racing updates
    /// from several waiters may lose one adjustment; the budget is a hint, not a count.
    fn adaptive_spin(&self, mut opened: impl FnMut() -> bool) -> bool {
        if self.spin_budget.is_zero() {
            return opened();
        }
        let (min, max) = (nanos(MIN_SPIN.min(self.spin_budget)), nanos(self.spin_budget));
        let now = self.spin_now_ns.load(Ordering::Relaxed);
        let spun = spin_until(Duration::from_nanos(u64::from(now)), opened);
        let next = if spun { now.saturating_mul(2).min(max) } else { (now / 2).max(min) };
        if next != now {
            self.spin_now_ns.store(next, Ordering::Relaxed);
        }
        spun
    }

    /// Sleeps until the generation differs from `generation`.
    fn sleep_while(&self, generation: u32) {
        loop {
            // Announce the sleep before the futex checks the word: the opener bumps the word
            // and then reads `sleepers` (both SeqCst), so either it sees this sleeper and wakes
            // it, or the futex sees the new generation and does not sleep.
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            futex::wait(&self.generation, generation);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            if self.generation.load(Ordering::Acquire) != generation {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// Every thread of a team adds to a per-round slot, then checks after the barrier that
    /// the whole team did: any thread leaving early sees a short count.
    fn rounds(n_threads: usize, n_rounds: usize, barrier: Barrier) {
        let barrier = Arc::new(barrier);
        let slots: Arc<Vec<AtomicUsize>> = Arc::new((0..n_rounds).map(|_| AtomicUsize::new(0)).collect());
        let lasts = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..n_threads)
            .map(|ith| {
                let (barrier, slots, lasts) = (Arc::clone(&barrier), Arc::clone(&slots), Arc::clone(&lasts));
                std::thread::spawn(move || {
                    for (r, slot) in slots.iter().enumerate() {
                        slot.fetch_add(ith + 1, Ordering::Relaxed);
                        if barrier.wait(n_threads) {
                            lasts.fetch_add(1, Ordering::Relaxed);
                        }
                        let expected = n_threads * (n_threads + 1) / 2;
                        assert_eq!(slot.load(Ordering::Relaxed), expected, "round {r}");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(lasts.load(Ordering::Relaxed), n_rounds);
    }

    #[test]
    fn teams_of_1_2_4_8_stay_in_step() {
        for n in [1, 2, 4, 8] {
            rounds(n, 2000, Barrier::new());
        }
    }

    #[test]
    fn sleeping_waiters_stay_in_step() {
        // No spinning at all: every waiter goes through the futex.
        for n in [2, 4, 8] {
            rounds(n, 500, Barrier::with_spin_budget(Duration::ZERO));
        }
    }

    #[test]
    fn last_thread_runs_the_reset_before_anyone_leaves() {
        let n = 4;
        let barrier = Arc::new(Barrier::new());
        let phase = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let (barrier, phase) = (Arc::clone(&barrier), Arc::clone(&phase));
                std::thread::spawn(move || {
                    for r in 0..500 {
                        assert_eq!(phase.load(Ordering::Relaxed), r);
                        barrier.wait(n);
                        barrier.wait_then(n, || {
                            phase.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(phase.load(Ordering::Relaxed), 500);
    }

    #[test]
    fn failed_spins_lower_the_budget_and_successful_ones_restore_it() {
        // Driven directly, so that the outcome of each spin does not depend on the load.
        let barrier = Barrier::new();
        let budget = || barrier.spin_now_ns.load(Ordering::Relaxed);
        assert_eq!(budget(), nanos(SPIN_BUDGET));
        assert!(!barrier.adaptive_spin(|| false));
        assert_eq!(budget(), nanos(SPIN_BUDGET) / 2);
        for _ in 0..16 {
            barrier.adaptive_spin(|| false);
        }
        assert_eq!(budget(), nanos(MIN_SPIN));
        assert!(barrier.adaptive_spin(|| true));
        assert_eq!(budget(), 2 * nanos(MIN_SPIN));
        for _ in 0..16 {
            barrier.adaptive_spin(|| true);
        }
        assert_eq!(budget(), nanos(SPIN_BUDGET));
        // a barrier that never spins keeps no budget
        assert!(!Barrier::with_spin_budget(Duration::ZERO).adaptive_spin(|| false));
    }

    #[test]
    fn spin_until_gives_up_after_its_budget() {
        assert!(!spin_until(Duration::from_micros(100), || false));
        assert!(spin_until(Duration::ZERO, || true));
    }

    /// Round trips of a team of `n` through `barrier`, in nanoseconds each.
    fn round_trip_ns(n: usize, barrier: Barrier, n_rounds: usize) -> f64 {
        let barrier = Arc::new(barrier);
        let start = Arc::new(std::sync::Barrier::new(n));
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let (barrier, start) = (Arc::clone(&barrier), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    let t0 = Instant::now();
                    for _ in 0..n_rounds {
                        barrier.wait(n);
                    }
                    t0.elapsed()
                })
            })
            .collect();
        let elapsed = handles.into_iter().map(|h| h.join().unwrap()).max().unwrap();
        elapsed.as_nanos() as f64 / n_rounds as f64
    }

    /// Barrier round trip for teams of 2 and 4, with the default spin budget and without
    /// spinning: `cargo test --lib cpu::barrier::tests::round_trip -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn round_trip_benchmark() {
        for n in [2, 4] {
            for (name, budget) in [("spin 1 ms", SPIN_BUDGET), ("no spin", Duration::ZERO)] {
                let mut runs: Vec<f64> =
                    (0..5).map(|_| round_trip_ns(n, Barrier::with_spin_budget(budget), 50_000)).collect();
                runs.sort_by(f64::total_cmp);
                eprintln!(
                    "barrier, {n} threads on {} cores, {name}: median {:.0} ns per round trip (best {:.0})",
                    available_cores(),
                    runs[2],
                    runs[0]
                );
            }
        }
    }
}
