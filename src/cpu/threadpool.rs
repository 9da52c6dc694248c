//! A pool of persistent worker threads that run one job at a time on a team of threads.
//!
//! The thread that calls [`Threadpool::run`] is member 0 of the team; workers 1..n take the
//! other places. Between jobs a worker polls for new work for a time set by the pool's `poll`
//! level, then sleeps on a futex, so an idle pool costs no CPU. A paused pool's workers sleep
//! until it is resumed, which the next job does by itself.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::barrier::{Barrier, CachePadded, available_cores, spin_until};
use super::futex;
use crate::core::threadpool_params::ThreadpoolParams;

/// `GGML_MAX_N_THREADS`: the length of a CPU mask.
pub const MAX_N_THREADS: usize = 512;

/// The most threads a pool may have.
pub const MAX_POOL_THREADS: usize = 0xffff;

/// Idle polling time per `poll` level: level 50 (the default) polls for 5 ms after each job.
const POLL_STEP: Duration = Duration::from_micros(100);

/// `enum ggml_sched_priority`.
pub mod prio {
    pub const LOW: i32 = -1;
    pub const NORMAL: i32 = 0;
    pub const MEDIUM: i32 = 1;
    pub const HIGH: i32 = 2;
    pub const REALTIME: i32 = 3;
}

/// A CPU mask as `ggml_threadpool_params` holds it: `mask[i]` allows CPU `i`.
pub type CpuMask = [bool; MAX_N_THREADS];

/// What a job runs on each member of the team.
type JobFn<'a> = dyn Fn(&Team) + Sync + 'a;

/// The place of one thread in a running job, and the team's shared tools: the barrier and the
/// chunk counter.
pub struct Team<'a> {
    ith: usize,
    nth: usize,
    shared: &'a Shared,
}

impl Team<'_> {
    /// This thread's index in the team, 0 for the thread that called [`Threadpool::run`].
    pub fn ith(&self) -> usize {
        self.ith
    }

    /// The number of threads in the team.
    pub fn nth(&self) -> usize {
        self.nth
    }

    /// Waits for the whole team; returns true in exactly one thread.
    pub fn barrier(&self) -> bool {
        self.shared.barrier.wait(self.nth)
    }

    /// Waits for the whole team; the last thread to arrive runs `on_last` before any leaves.
    pub fn barrier_then(&self, on_last: impl FnOnce()) -> bool {
        self.shared.barrier.wait_then(self.nth, on_last)
    }

    /// Sets the team's chunk counter (it is 0 when a job starts).
    pub fn chunk_set(&self, value: usize) {
        self.shared.chunk.store(value, Ordering::Relaxed);
    }

    /// Adds to the team's chunk counter and returns its previous value.
    pub fn chunk_add(&self, value: usize) -> usize {
        self.shared.chunk.fetch_add(value, Ordering::Relaxed)
    }
}

impl Threadpool {
    /// Member `ith` of a team of `nth` that its caller runs on threads of its own, as ggml-cpu's
    /// internal entry points let C code do (`ggml_barrier` with the pool from the compute
    /// params): the team shares this pool's barrier and chunk counter. The pool must not be
    /// running a job meanwhile, and all `nth` members must reach each barrier.
    pub fn member(&self, ith: usize, nth: usize) -> Team<'_> {
        crate::ggml_assert!(nth >= 1 && ith < nth, "thread {} of a team of {}", ith, nth);
        Team { ith, nth, shared: &self.shared }
    }

    /// `ggml_barrier`: waits for the team of the latest job (the whole pool before the
    /// first), for callers that know the pool but not their place in the team.
    pub fn barrier(&self) {
        self.shared.barrier.wait(self.shared.team_size.load(Ordering::Relaxed));
    }

    /// `ggml_threadpool_chunk_set`: sets the chunk counter of the pool's team.
    pub fn chunk_set(&self, value: usize) {
        self.shared.chunk.store(value, Ordering::Relaxed);
    }

    /// `ggml_threadpool_chunk_add`: adds to the chunk counter, returning its previous value.
    pub fn chunk_add(&self, value: usize) -> usize {
        self.shared.chunk.fetch_add(value, Ordering::Relaxed)
    }
}

/// Runs `f` as the only member of a team with its own barrier and chunk counter (for a
/// caller with no pool).
pub fn solo<R>(f: impl FnOnce(&Team) -> R) -> R {
    let shared = Shared::new(1, false, Duration::ZERO, prio::NORMAL);
    f(&Team { ith: 0, nth: 1, shared: &shared })
}

/// State the workers share with the pool.
struct Shared {
    /// Bumped whenever workers have something to look at (a job, a pause or resume, the
    /// stop); the futex word idle workers sleep on.
    signal: CachePadded<AtomicU32>,
    /// Workers asleep (or about to be) on `signal`.
    sleepers: CachePadded<AtomicU32>,
    /// The current job: its sequence number in the high half, its team size in the low half.
    job_word: CachePadded<AtomicU64>,
    /// The current job's function; written before `job_word` announces it, read only by the
    /// team's workers after they see the announcement, rewritten only after the team has met
    /// at the closing barrier.
    job: UnsafeCell<Option<*const JobFn<'static>>>,
    barrier: Barrier,
    /// The size of the latest job's team (the pool's size before the first job): the team
    /// that `ggml_barrier` on the pool waits for.
    team_size: AtomicUsize,
    chunk: CachePadded<AtomicUsize>,
    paused: AtomicBool,
    stop: AtomicBool,
    /// How long an idle worker polls before sleeping.
    poll_budget: Duration,
    prio: i32,
}

// SAFETY: every field but `job` is an atomic or immutable. `job` is written only by the thread
// holding the pool's control lock while no worker reads it (before the job is announced, or
// after the team met at the closing barrier), and read by workers only between the
// announcement (an acquire of `job_word`) and their arrival at that barrier. The pointee is
// `Sync`.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw pointer is only dereferenced under that protocol.
unsafe impl Send for Shared {}

impl Shared {
    /// The state of a team of `team_size` with no job yet.
    fn new(team_size: usize, paused: bool, poll_budget: Duration, prio: i32) -> Shared {
        Shared {
            signal: CachePadded(AtomicU32::new(0)),
            sleepers: CachePadded(AtomicU32::new(0)),
            job_word: CachePadded(AtomicU64::new(0)),
            job: UnsafeCell::new(None),
            barrier: Barrier::new(),
            team_size: AtomicUsize::new(team_size),
            chunk: CachePadded(AtomicUsize::new(0)),
            paused: AtomicBool::new(paused),
            stop: AtomicBool::new(false),
            poll_budget,
            prio,
        }
    }

    /// Wakes every worker to re-read the pool's state.
    fn notify(&self) {
        self.signal.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex::wake_all(&self.signal);
        }
    }

    /// Sleeps until `signal` moves on from `seen` (or spuriously).
    fn sleep_while(&self, seen: u32) {
        // Same handshake as the barrier's: announce, then let the futex check the word.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        futex::wait(&self.signal, seen);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Runs the announced job as member `ith` of a team of `nth`, then meets the team.
    fn run_job(&self, ith: usize, nth: usize) {
        // SAFETY: this worker saw the job's announcement (see `Shared`'s protocol): the cell
        // was written before it and is not rewritten before this thread reaches the barrier.
        let job = unsafe { *self.job.get() };
        let Some(job) = job else { crate::ggml_abort!("thread pool: job announced without a function") };
        // SAFETY: `Threadpool::run` keeps the closure alive until the whole team has passed
        // the closing barrier below.
        let job = unsafe { &*job };
        run_member(job, &Team { ith, nth, shared: self });
        self.barrier.wait(nth);
    }
}

/// Runs one member's part of a job. A panic cannot unwind out of a team of several threads
/// (the others would wait for this thread forever, or outlive the job's closure), so it ends
/// the process; a team of one is the caller alone, and its panic unwinds as usual.
fn run_member(job: &JobFn<'_>, team: &Team) {
    let Err(payload) = catch_unwind(AssertUnwindSafe(|| job(team))) else { return };
    if team.nth == 1 {
        std::panic::resume_unwind(payload);
    }
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    crate::ggml_abort!("thread pool: a job panicked in thread {} of {}: {}", team.ith, team.nth, message);
}

/// `struct ggml_threadpool`: worker threads 1..n_threads plus the caller as thread 0.
pub struct Threadpool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// The calling thread's CPU mask, applied when the pool starts or resumes.
    main_mask: Box<CpuMask>,
    /// Serialises jobs, pauses and resumes.
    control: Mutex<()>,
}

impl Threadpool {
    /// Starts `params.n_threads - 1` workers, each with its priority and CPU placement. Unless
    /// the pool starts paused, the calling thread takes the priority and placement of thread 0
    /// now; otherwise when the pool is resumed.
    pub fn new(params: &ThreadpoolParams) -> Threadpool {
        let n_threads = usize::try_from(params.n_threads).unwrap_or(0);
        crate::ggml_assert!(
            (1..=MAX_POOL_THREADS).contains(&n_threads),
            "thread pool size {} out of range",
            params.n_threads
        );
        let busy_pool = n_threads > available_cores();
        // A pool larger than the machine polls not at all: its pollers would take the cores
        // from the threads doing the work.
        let poll_budget = if busy_pool { Duration::ZERO } else { POLL_STEP * params.poll };
        let shared = Arc::new(Shared::new(n_threads, params.paused, poll_budget, params.prio));

        // Workers are placed first, the calling thread after them (on the later CPUs).
        let mut cursor = 0;
        let workers = (1..n_threads)
            .map(|ith| {
                let mask = next_cpumask(&params.cpumask, params.strict_cpu, &mut cursor);
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("ggml-cpu-{ith}"))
                    .spawn(move || worker_main(&shared, ith, &mask))
                    .unwrap_or_else(|e| crate::ggml_abort!("thread pool: cannot start a worker: {}", e))
            })
            .collect();
        let main_mask = Box::new(next_cpumask(&params.cpumask, params.strict_cpu, &mut cursor));

        let pool = Threadpool { shared, workers, main_mask, control: Mutex::new(()) };
        if !params.paused {
            pool.place_caller();
        }
        pool
    }

    /// `ggml_threadpool_get_n_threads`.
    pub fn n_threads(&self) -> usize {
        self.workers.len() + 1
    }

    pub fn is_paused(&self) -> bool {
        self.shared.paused.load(Ordering::Relaxed)
    }

    /// Puts the workers to sleep until [`Threadpool::resume`] or the next job.
    pub fn pause(&self) {
        let _control = self.lock();
        if !self.shared.paused.swap(true, Ordering::SeqCst) {
            self.shared.notify();
        }
    }

    /// Lets paused workers poll for work again.
    pub fn resume(&self) {
        let _control = self.lock();
        self.resume_locked();
    }

    /// Runs `job` on a team of `n_threads` (at most the pool's size): the calling thread as
    /// member 0, workers 1..n_threads as the others. Returns when every member has finished.
    /// The team's chunk counter starts at 0. A paused pool is resumed first.
    ///
    /// Jobs run one at a time; calling `run`, `pause` or `resume` from inside a job deadlocks.
    pub fn run<F: Fn(&Team) + Sync>(&self, n_threads: usize, job: F) {
        crate::ggml_assert!(
            (1..=self.n_threads()).contains(&n_threads),
            "team of {} threads in a pool of {}",
            n_threads,
            self.n_threads()
        );
        let _control = self.lock();
        let shared = &*self.shared;
        shared.chunk.store(0, Ordering::Relaxed);
        shared.team_size.store(n_threads, Ordering::Relaxed);
        self.resume_locked();

        let job: &JobFn<'_> = &job;
        if n_threads > 1 {
            // SAFETY: only the lifetime is erased. The pointer is dereferenced by workers
            // between the announcement below and the closing barrier, which this function
            // waits for before `job` goes out of scope.
            let erased: *const JobFn<'static> = unsafe { std::mem::transmute::<&JobFn<'_>, &JobFn<'static>>(job) };
            // SAFETY: the control lock is held and no worker is inside a job (the previous
            // one ended with the whole team at the barrier), so nobody reads the cell now.
            unsafe { *shared.job.get() = Some(erased) };
            let sequence = (shared.job_word.load(Ordering::Relaxed) >> 32).wrapping_add(1) & 0xffff_ffff;
            shared.job_word.store(sequence << 32 | n_threads as u64, Ordering::Release);
            shared.notify();
        }

        run_member(job, &Team { ith: 0, nth: n_threads, shared });

        if n_threads > 1 {
            shared.barrier.wait(n_threads);
            // SAFETY: the whole team has passed the barrier: no worker reads the cell.
            unsafe { *shared.job.get() = None };
        }
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        // Only a team of one unwinds from a panic (see `run_member`), leaving nothing half
        // done: a poisoned lock protects nothing broken.
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resumes a paused pool; the caller holds the control lock.
    fn resume_locked(&self) {
        if self.shared.paused.swap(false, Ordering::SeqCst) {
            self.place_caller();
            self.shared.notify();
        }
    }

    /// Gives the calling thread the priority and CPU mask of thread 0.
    fn place_caller(&self) {
        apply_priority(self.shared.prio);
        if self.main_mask.contains(&true) {
            apply_affinity(&self.main_mask);
        }
    }
}

impl Drop for Threadpool {
    fn drop(&mut self) {
        {
            let _control = self.lock();
            self.shared.stop.store(true, Ordering::SeqCst);
            self.shared.paused.store(false, Ordering::SeqCst);
            self.shared.notify();
        }
        for worker in self.workers.drain(..) {
            if worker.join().is_err() {
                crate::ggml_abort!("thread pool: a worker ended abnormally");
            }
        }
    }
}

/// A worker's life: wait for a job that includes it, run it, until the pool stops.
fn worker_main(shared: &Shared, ith: usize, mask: &CpuMask) {
    apply_priority(shared.prio);
    if mask.contains(&true) {
        apply_affinity(mask);
    }

    let mut last_job = 0u32;
    loop {
        // Read the signal before the state it announces: a change after this read makes the
        // futex wait below return at once.
        let seen = shared.signal.load(Ordering::SeqCst);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let job = shared.job_word.load(Ordering::Acquire);
        let (sequence, team) = ((job >> 32) as u32, (job & 0xffff_ffff) as usize);
        if sequence != last_job {
            last_job = sequence;
            if ith < team {
                shared.run_job(ith, team);
                continue;
            }
            // A job for a smaller team: this worker was woken with the others but has nothing
            // to do, so it goes back to sleep rather than polling beside the team.
            shared.sleep_while(seen);
            continue;
        }
        if shared.paused.load(Ordering::Acquire) {
            shared.sleep_while(seen);
            continue;
        }
        let moved = || shared.signal.load(Ordering::Acquire) != seen;
        if !spin_until(shared.poll_budget, moved) {
            shared.sleep_while(seen);
        }
    }
}

/// The CPU mask of the next thread: the whole mask, or with `strict` the next allowed CPU
/// after `cursor` (round robin).
fn next_cpumask(mask: &CpuMask, strict: bool, cursor: &mut usize) -> CpuMask {
    if !strict {
        return *mask;
    }
    let mut one = [false; MAX_N_THREADS];
    if let Some(cpu) = (0..MAX_N_THREADS).map(|i| (*cursor + i) % MAX_N_THREADS).find(|&cpu| mask[cpu]) {
        one[cpu] = true;
        *cursor = cpu + 1;
    }
    one
}

/// Restricts the calling thread to the CPUs of `mask`; warns and returns false on failure.
#[cfg(target_os = "linux")]
pub fn apply_affinity(mask: &CpuMask) -> bool {
    // SAFETY: cpu_set_t is a plain bit array for which all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in (0..MAX_N_THREADS).filter(|&cpu| mask[cpu]) {
        // SAFETY: cpu < 512 fits in cpu_set_t (CPU_SETSIZE is 1024).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        crate::log_warn!("warn: failed to set affinity mask: {}\n", std::io::Error::last_os_error());
        return false;
    }
    true
}

/// Thread placement is not supported here; the mask is ignored.
#[cfg(not(target_os = "linux"))]
pub fn apply_affinity(_mask: &CpuMask) -> bool {
    true
}

/// Gives the calling thread the scheduling class of a `GGML_SCHED_PRIO_*` level: low is a
/// batch thread, medium to realtime are FIFO threads of rising priority, normal (and any
/// unknown level) keeps what the thread inherited. Warns and returns false on failure (raising
/// priority usually needs privileges).
#[cfg(unix)]
pub fn apply_priority(level: i32) -> bool {
    #[cfg(target_os = "linux")]
    const LOW_POLICY: libc::c_int = libc::SCHED_BATCH;
    #[cfg(not(target_os = "linux"))]
    const LOW_POLICY: libc::c_int = libc::SCHED_OTHER;
    let (policy, priority) = match level {
        prio::LOW => (LOW_POLICY, 0),
        prio::MEDIUM => (libc::SCHED_FIFO, 40),
        prio::HIGH => (libc::SCHED_FIFO, 80),
        prio::REALTIME => (libc::SCHED_FIFO, 90),
        _ => return true,
    };
    // SAFETY: sched_param is a plain struct for which zeroes are valid.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = priority;
    // SAFETY: pthread_self() is the calling thread; `param` is a valid sched_param.
    let err = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
    if err != 0 {
        crate::log_warn!(
            "warn: failed to set thread priority {} : {} ({})\n",
            level,
            std::io::Error::from_raw_os_error(err),
            err
        );
        return false;
    }
    true
}

/// Thread priorities are not supported here; the level is ignored.
#[cfg(not(unix))]
pub fn apply_priority(_level: i32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;

    fn params(n_threads: i32, poll: u32) -> ThreadpoolParams {
        let mut p = ThreadpoolParams::new(n_threads);
        p.poll = poll;
        p
    }

    /// Total CPU time the pool's workers have used.
    #[cfg(target_os = "linux")]
    fn worker_cpu_time(pool: &Threadpool) -> Duration {
        use std::os::unix::thread::JoinHandleExt;
        pool.workers
            .iter()
            .map(|w| {
                let mut clock: libc::clockid_t = 0;
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: the worker thread is alive (not yet joined); both out-pointers are
                // valid for writes.
                unsafe {
                    assert_eq!(libc::pthread_getcpuclockid(w.as_pthread_t(), &mut clock), 0);
                    assert_eq!(libc::clock_gettime(clock, &mut ts), 0);
                }
                Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
            })
            .sum()
    }

    #[test]
    fn every_member_runs_once_per_job() {
        for (size, team) in [(1, 1), (2, 2), (4, 3), (8, 8)] {
            let pool = Threadpool::new(&params(size, 50));
            assert_eq!(pool.n_threads(), size as usize);
            for _ in 0..100 {
                let seen = AtomicUsize::new(0);
                pool.run(team, |t| {
                    assert_eq!(t.nth(), team);
                    seen.fetch_add(1 << t.ith(), Ordering::Relaxed);
                });
                assert_eq!(seen.into_inner(), (1 << team) - 1);
            }
        }
    }

    #[test]
    fn chunk_counter_hands_out_each_chunk_once() {
        let pool = Threadpool::new(&params(4, 10));
        let n_chunks = 1000;
        let taken: Vec<AtomicUsize> = (0..n_chunks).map(|_| AtomicUsize::new(0)).collect();
        pool.run(4, |t| {
            loop {
                let c = t.chunk_add(1);
                if c >= n_chunks {
                    break;
                }
                taken[c].fetch_add(1, Ordering::Relaxed);
            }
        });
        assert!(taken.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn paused_pool_runs_on_demand_and_pauses_again() {
        let pool = Threadpool::new(&ThreadpoolParams { paused: true, ..params(3, 0) });
        assert!(pool.is_paused());
        let sum = AtomicI64::new(0);
        pool.run(3, |t| {
            sum.fetch_add(t.ith() as i64 + 1, Ordering::Relaxed);
        });
        assert_eq!(sum.load(Ordering::Relaxed), 6);
        assert!(!pool.is_paused());
        pool.pause();
        pool.pause();
        assert!(pool.is_paused());
        pool.resume();
        pool.resume();
        assert!(!pool.is_paused());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn idle_pool_uses_no_cpu() {
        // Default polling (level 50): workers poll a few milliseconds after a job, then sleep
        // (a pool larger than the machine does not poll).
        for (size, paused) in [(2, false), (2, true), (8, false)] {
            let pool = Threadpool::new(&params(size, 50));
            pool.run(size as usize, |_| ());
            if paused {
                pool.pause();
            }
            std::thread::sleep(Duration::from_millis(50));
            let before = worker_cpu_time(&pool);
            std::thread::sleep(Duration::from_millis(200));
            let used = worker_cpu_time(&pool) - before;
            assert!(used < Duration::from_millis(2), "{size} idle workers used {used:?} (paused: {paused})");
        }
    }

    #[test]
    fn a_team_of_one_unwinds_from_a_panic() {
        let pool = Threadpool::new(&params(2, 0));
        let r = catch_unwind(AssertUnwindSafe(|| pool.run(1, |_| panic!("kernel failed"))));
        assert!(r.is_err());
        // the pool still works
        let seen = AtomicUsize::new(0);
        pool.run(2, |t| {
            seen.fetch_add(t.ith() + 1, Ordering::Relaxed);
        });
        assert_eq!(seen.into_inner(), 3);
    }

    #[test]
    fn strict_masks_go_round_robin() {
        let mut mask = [false; MAX_N_THREADS];
        mask[1] = true;
        mask[3] = true;
        let mut cursor = 0;
        let picks: Vec<usize> =
            (0..3).map(|_| next_cpumask(&mask, true, &mut cursor).iter().position(|&b| b).unwrap()).collect();
        assert_eq!(picks, [1, 3, 1]);
        assert_eq!(next_cpumask(&mask, false, &mut cursor), mask);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn strict_pool_pins_its_threads() {
        // Pin to the CPUs this process may use, one per thread.
        // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it for this thread.
        let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer and size.
        assert_eq!(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) }, 0);
        let mut p = params(2, 0);
        // SAFETY: reading bits of a valid set.
        (0..MAX_N_THREADS).for_each(|cpu| p.cpumask[cpu] = unsafe { libc::CPU_ISSET(cpu, &allowed) });
        p.strict_cpu = true;
        // Run on a thread of our own: thread 0 of the pool (the caller) gets pinned too.
        std::thread::spawn(move || {
            let pool = Threadpool::new(&p);
            let cpus = Mutex::new(Vec::new());
            pool.run(2, |_| {
                // SAFETY: a zeroed cpu_set_t is valid; the call fills it.
                let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
                // SAFETY: valid pointer and size.
                unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
                // SAFETY: CPU_COUNT reads a valid set.
                cpus.lock().unwrap().push(unsafe { libc::CPU_COUNT(&set) });
            });
            assert_eq!(cpus.into_inner().unwrap(), [1, 1]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn normal_priority_changes_nothing() {
        assert!(apply_priority(prio::NORMAL));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn low_priority_makes_a_batch_thread() {
        std::thread::spawn(|| {
            assert!(apply_priority(prio::LOW));
            // SAFETY: querying the calling thread's policy.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_BATCH);
        })
        .join()
        .unwrap();
    }
}
