//! What the kernels' tests share: a context, a driver that computes one node on a real team
//! of threads, team sizes worth testing, filling and reading plain tensors as f64 in logical
//! order, seeded values, and the comparisons.

use std::ffi::c_int;

use crate::core::context::{Context, InitParams};
use crate::core::element::{get_f32_nd, set_f32_nd, unravel};
use crate::core::graph::cgraph::new_graph_custom;
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;
use crate::core::threadpool_params::ThreadpoolParams;
use crate::cpu::compute::{ComputeParams, compute};
use crate::cpu::plan::{CACHE_LINE_SIZE, DefaultOps, plan};
use crate::cpu::threadpool::Threadpool;

/// A context large enough for the biggest case (mul_mat's); only the pages used are touched.
pub fn ctx() -> Box<Context> {
    Context::new(InitParams { mem_size: 64 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false })
}

/// Computes `node` alone with `kernel` on exactly `nth` threads (other nodes of its graph are
/// skipped), with `work` bytes of scratch plus the plan's per-thread padding, on the SIMD
/// paths or (with `use_ref`) the scalar ones.
pub fn run(
    c: &mut Context,
    node: TensorPtr,
    kernel: fn(&ComputeParams, TensorPtr),
    nth: usize,
    work: usize,
    use_ref: bool,
) {
    let g = new_graph_custom(c, 64, false);
    g.get_mut().build_forward_expand(node);
    let pool = Threadpool::new(&ThreadpoolParams::new(nth as c_int));
    let mut p = plan(&g, nth as c_int, Some(&pool), &DefaultOps);
    // The plan may shrink the team to the op's task count; the kernel must cope with any.
    p.n_threads = nth as c_int;
    p.use_ref = use_ref;
    let mut buf = vec![0u64; (work + CACHE_LINE_SIZE * nth).div_ceil(8)];
    if work > 0 {
        p.work_size = buf.len() * 8;
        p.work_data = buf.as_mut_ptr().cast();
    }
    let target = node.as_ptr() as usize;
    let k = move |params: &ComputeParams, t: TensorPtr| {
        if t.as_ptr() as usize == target {
            kernel(params, t);
        }
        Status::SUCCESS
    };
    // SAFETY: the plan names a live pool and a work buffer of its size.
    assert_eq!(unsafe { compute(&g, &p, &k) }, Status::SUCCESS);
}

/// Runs `check` for every team size and path worth testing.
pub fn for_each_team(mut check: impl FnMut(usize, bool)) {
    for (nth, use_ref) in [(1, true), (1, false), (3, false), (4, true)] {
        check(nth, use_ref);
    }
}

/// Writes `f(i)` to the `i`-th element (logical order) of a plain tensor.
pub fn put(t: TensorPtr, mut f: impl FnMut(usize) -> f64) {
    for i in 0..t.nelements() {
        set_f32_nd(&t, unravel(&t, i), f(i as usize) as f32);
    }
}

/// The elements of a plain tensor in logical order.
pub fn values(t: TensorPtr) -> Vec<f64> {
    (0..t.nelements()).map(|i| f64::from(get_f32_nd(&t, unravel(&t, i)))).collect()
}

/// A deterministic pseudo-random value in [-1, 1) for index `i` and seed `s`.
pub fn noise(i: usize, s: u64) -> f64 {
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ s.wrapping_mul(0xd1b5_4a32_d192_ed03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 29;
    (x % 2_000_001) as f64 / 1_000_000.0 - 1.0
}

/// A small deterministic generator (xorshift).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + (hi - lo) * ((self.0 >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// Fills a plain tensor with uniform values in `[lo, hi)` and returns what it then holds
/// (rounded to its type).
pub fn random(t: TensorPtr, rng: &mut Rng, lo: f32, hi: f32) -> Vec<f64> {
    put(t, |_| f64::from(rng.uniform(lo, hi)));
    values(t)
}

/// The normalised mean squared error of `got` against `want`.
pub fn nmse(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let err: f64 = got.iter().zip(want).map(|(g, w)| (g - w) * (g - w)).sum();
    let norm: f64 = want.iter().map(|w| w * w).sum();
    err / norm.max(f64::MIN_POSITIVE)
}

/// Asserts that `got` is within `tol` (relative to max(1, |want|)) of `want`; equal
/// infinities and NaN against NaN count as matching.
pub fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= tol * w.abs().max(1.0) || (g.is_nan() && w.is_nan()) || g == w;
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}
