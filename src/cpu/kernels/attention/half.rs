//! Arithmetic on binary16 rows the way ggml does it when built for the processor it runs on
//! (`-march=native`): `ggml_vec_dot_f16` for F16 keys, `ggml_vec_mad_f16` and
//! `ggml_vec_scale_f16` for the binary16 accumulator of F16 values.
//!
//! The rounding of these is what flash attention's small-batch results are made of, and it
//! depends on the instruction set ggml was compiled for:
//!
//! * AVX512-FP16 ([`HalfMath::Fp16`]): whole blocks of 128 values are computed in binary16
//!   itself. A dot product keeps four 32-lane binary16 accumulators of fused multiply-adds
//!   (so every partial sum is rounded to binary16) and adds them up in a fixed tree; `mad`
//!   and `scale` first round the factor to binary16, then fuse or multiply in binary16. The
//!   rest of a row (below a multiple of 128) goes element by element: products summed in
//!   `f64` for the dot product, `f32` arithmetic rounded to binary16 for `mad` and `scale`.
//! * AVX-512F without AVX512-FP16 ([`HalfMath::Wide`]): values are widened to `f32`; a dot
//!   product keeps four 16-lane `f32` accumulators over blocks of 64 values (the rest in
//!   `f64`), `mad` is one `f32` fused multiply-add and `scale` one `f32` product per element,
//!   rounded to binary16.
//! * Otherwise ([`HalfMath::Lanes`], F16C): the same with four 8-lane accumulators over blocks
//!   of 32 values.
//!
//! Each operation has a scalar model and a SIMD version, bit for bit the same; the SIMD
//! version is taken when asked for and the processor has it.

#[cfg(target_arch = "x86_64")]
use crate::cpu::features::features;
use crate::quants::half::{fp16_to_fp32, fp32_to_fp16};

/// Values per block computed in binary16 arithmetic under AVX512-FP16 (`GGML_F16_STEP`).
const FP16_BLOCK: usize = 128;
/// Lanes of one AVX512-FP16 register.
const FP16_LANES: usize = 32;
/// Values per block of the `f32`-lane dot product (`GGML_F16_STEP` with F16C).
const LANES_BLOCK: usize = 32;
/// Lanes of one AVX register.
const LANES: usize = 8;
/// Values per block of the 16-lane dot product (`GGML_F16_STEP` with AVX-512F).
const WIDE_BLOCK: usize = 64;
/// Lanes of one AVX-512 register of `f32`.
const WIDE_LANES: usize = 16;

/// How binary16 rows are computed (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HalfMath {
    /// Blocks of 128 values in binary16 arithmetic (AVX512-FP16).
    Fp16,
    /// Widened to 16 `f32` lanes (AVX-512F).
    Wide,
    /// Widened to 8 `f32` lanes (F16C, and the scalar build).
    Lanes,
}

impl HalfMath {
    /// What ggml built for this processor does.
    pub(super) fn native() -> HalfMath {
        if fp16_hardware() {
            HalfMath::Fp16
        } else if wide_hardware() {
            HalfMath::Wide
        } else {
            HalfMath::Lanes
        }
    }

    /// Where the SIMD blocks of an `n`-value dot product end; the rest is summed in `f64`, one
    /// product at a time.
    fn dot_blocks_end(self, n: usize) -> usize {
        match self {
            HalfMath::Fp16 => n - n % FP16_BLOCK,
            HalfMath::Wide => n - n % WIDE_BLOCK,
            HalfMath::Lanes => n - n % LANES_BLOCK,
        }
    }

    /// Where the binary16 blocks of an `n`-value `mad` or `scale` end (`Fp16`); the lane
    /// formulas apply from there on.
    fn fp16_blocks_end(self, n: usize) -> usize {
        match self {
            HalfMath::Fp16 => n - n % FP16_BLOCK,
            HalfMath::Wide | HalfMath::Lanes => 0,
        }
    }
}

/// Binary16 row arithmetic of one kind, on its SIMD version or on its scalar model (bit for
/// bit the same).
#[derive(Clone, Copy, Debug)]
pub(super) struct Half {
    pub math: HalfMath,
    simd: bool,
}

impl Half {
    /// `math` on the SIMD version when `simd` asks for it and the processor has it.
    pub(super) fn new(math: HalfMath, simd: bool) -> Half {
        let here = crate::cpu::features::features().has_avx2_fma()
            && match math {
                HalfMath::Fp16 => fp16_hardware(),
                HalfMath::Wide => wide_hardware(),
                HalfMath::Lanes => true,
            };
        Half { math, simd: simd && here }
    }

    /// `Σ x[i]·y[i]` of two binary16 rows of the same length (one row of
    /// [`Half::dot_rows`]).
    #[cfg(test)]
    pub(super) fn dot(self, x: &[u16], y: &[u16]) -> f32 {
        crate::ggml_assert!(x.len() == y.len(), "vec_dot_f16: rows of different lengths");
        let split = self.math.dot_blocks_end(x.len());
        let start = self.dot_blocks(&x[..split], &y[..split]);
        dot_tail(start, &x[split..], &y[split..])
    }

    /// [`Half::dot_blocks`] of the key `x` with each of `queries` (as long or longer) into
    /// `sums`.
    fn dot_blocks_rows(self, x: &[u16], queries: &[&[u16]], sums: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if self.simd && self.math == HalfMath::Wide && !x.is_empty() {
            // SAFETY: AVX-512F (`Half::new`); the key is whole blocks, no row shorter.
            return unsafe { wide::dot_rows(x, queries, sums) };
        }
        for (s, q) in sums.iter_mut().zip(queries) {
            *s = self.dot_blocks(x, &q[..x.len()]);
        }
    }

    /// The SIMD blocks of a dot product, reduced as ggml reduces them (0 for no blocks).
    fn dot_blocks(self, x: &[u16], y: &[u16]) -> f64 {
        if x.is_empty() {
            return 0.0;
        }
        #[cfg(target_arch = "x86_64")]
        if self.simd {
            // SAFETY: the processor has what each version needs (`Half::new`); the rows are
            // whole blocks of the same length.
            return unsafe {
                match self.math {
                    HalfMath::Fp16 => avx512::dot_blocks(x, y),
                    HalfMath::Wide => wide::dot_blocks(x, y),
                    HalfMath::Lanes => avx2::dot_blocks(x, y),
                }
            };
        }
        match self.math {
            HalfMath::Fp16 => model::dot_blocks_fp16(x, y),
            HalfMath::Wide => model::dot_blocks_wide(x, y),
            HalfMath::Lanes => model::dot_blocks_lanes(x, y),
        }
    }

    /// `out[k][r] = dot(keys[k], queries[r])` for up to [`GROUP`] query rows, bit for bit as
    /// `Half::dot` (the tests' one row at a time), with the products beyond the blocks summed for all rows and up to
    /// [`TAIL_KEYS`] keys at once (the rows' and keys' `f64` chains interleaved). `tails`
    /// holds the queries' last values ([`Half::query_tails`]).
    pub(super) fn dot_rows(self, keys: &[&[u16]], queries: &[&[u16]], tails: &QueryTails, out: &mut [[f32; GROUP]]) {
        let Some(n) = keys.first().map(|k| k.len()) else { return };
        let split = self.math.dot_blocks_end(n);
        crate::ggml_assert!(
            queries.len() <= GROUP && out.len() >= keys.len() && tails.len == n - split,
            "vec_dot_f16: bad row group"
        );
        crate::ggml_assert!(queries.iter().chain(keys).all(|r| r.len() == n), "vec_dot_f16: rows of different lengths");
        for (keys, out) in keys.chunks(TAIL_KEYS).zip(out.chunks_mut(TAIL_KEYS)) {
            let mut sums = [[0.0f64; GROUP]; TAIL_KEYS];
            for (s, key) in sums.iter_mut().zip(keys) {
                self.dot_blocks_rows(&key[..split], queries, s);
            }
            #[cfg(target_arch = "x86_64")]
            if self.simd {
                if split < n {
                    // SAFETY: AVX2, FMA and F16C are present (`Half::new`); the tails are
                    // shorter than a block (`QueryTails`), at most TAIL_KEYS keys.
                    unsafe { avx2::tail_rows(&mut sums, keys, split, tails) };
                }
                for (o, s) in out.iter_mut().zip(&sums) {
                    for (o, s) in o.iter_mut().zip(&s[..queries.len()]) {
                        *o = *s as f32;
                    }
                }
                continue;
            }
            for ((o, s), key) in out.iter_mut().zip(sums).zip(keys) {
                for ((o, s), q) in o.iter_mut().zip(s).zip(queries) {
                    *o = dot_tail(s, &key[split..], &q[split..]);
                }
            }
        }
    }

    /// The values of up to [`GROUP`] query rows that [`Half::dot_rows`] sums one product at a
    /// time, widened to `f32` and transposed.
    pub(super) fn query_tails(self, queries: &[&[u16]]) -> QueryTails {
        let mut tails = QueryTails { len: 0, values: [[0.0; GROUP]; FP16_BLOCK] };
        if let Some(first) = queries.first() {
            let split = self.math.dot_blocks_end(first.len());
            tails.len = first.len() - split;
            for (r, q) in queries.iter().enumerate().take(GROUP) {
                for (row, &h) in tails.values.iter_mut().zip(&q[split..]) {
                    row[r] = fp16_to_fp32(h);
                }
            }
        }
        tails
    }

    /// `y[i] += x[i]·v`, `y` a binary16 accumulator.
    pub(super) fn mad(self, y: &mut [u16], x: &[u16], v: f32) {
        crate::ggml_assert!(x.len() >= y.len(), "vec_mad_f16: source row too short");
        let split = self.math.fp16_blocks_end(y.len());
        let (head, tail) = y.split_at_mut(split);
        let (x_head, x_tail) = x[..split + tail.len()].split_at(split);
        #[cfg(target_arch = "x86_64")]
        if self.simd {
            // SAFETY: the processor has what each version needs (`Half::new`); `head` is a
            // whole number of blocks.
            unsafe {
                if !head.is_empty() {
                    avx512::mad(head, x_head, fp32_to_fp16(v));
                }
                if self.math == HalfMath::Wide {
                    wide::mad(tail, x_tail, v);
                } else if !tail.is_empty() {
                    avx2::mad(tail, x_tail, v);
                }
            }
            return;
        }
        model::mad_fp16(head, x_head, fp32_to_fp16(v));
        model::mad_lanes(tail, x_tail, v);
    }

    /// [`Half::mad`] of the value row `x` into each of `rows`, given as (accumulator, factor):
    /// accumulator `a` is the `n` halves at `ys[a * stride..]`.
    pub(super) fn mad_rows(self, ys: &mut [u16], stride: usize, n: usize, x: &[u16], rows: &[(usize, f32)]) {
        crate::ggml_assert!(
            x.len() >= n && rows.iter().all(|&(a, _)| a * stride + n <= ys.len()),
            "vec_mad_f16: accumulator or source row out of range"
        );
        #[cfg(target_arch = "x86_64")]
        if self.simd && self.math == HalfMath::Wide {
            // SAFETY: AVX-512F (`Half::new`); every accumulator and the row hold n values
            // (asserted).
            return unsafe { wide::mad_rows(ys.as_mut_ptr(), stride, n, x, rows) };
        }
        for &(a, v) in rows {
            self.mad(&mut ys[a * stride..][..n], x, v);
        }
    }

    /// `y[i] *= v`, `y` a binary16 accumulator.
    pub(super) fn scale(self, y: &mut [u16], v: f32) {
        let split = self.math.fp16_blocks_end(y.len());
        let (head, tail) = y.split_at_mut(split);
        #[cfg(target_arch = "x86_64")]
        if self.simd {
            // SAFETY: as in `mad`.
            unsafe {
                if !head.is_empty() {
                    avx512::scale(head, fp32_to_fp16(v));
                }
                if self.math == HalfMath::Wide {
                    wide::scale(tail, v);
                } else if !tail.is_empty() {
                    avx2::scale(tail, v);
                }
            }
            return;
        }
        model::scale_fp16(head, fp32_to_fp16(v));
        model::scale_lanes(tail, v);
    }
}

/// The most query rows [`Half::dot_rows`] takes at once.
pub(super) const GROUP: usize = 8;
/// Keys whose tails [`Half::dot_rows`] sums side by side: a key's chains are as long as its
/// tail (the whole row of a head of 64 values under AVX512-FP16) and each `f64` addition
/// waits for the last, so one key at a time ran at the adder's latency, not its rate.
const TAIL_KEYS: usize = 4;

/// Query values summed one product at a time (fewer than a block per row), as `f32`:
/// `values[i][r]` is value `i` of the tail of query `r`.
pub(super) struct QueryTails {
    len: usize,
    values: [[f32; GROUP]; FP16_BLOCK],
}

/// Whether this processor computes in binary16 (AVX512-FP16, with the AVX-512 subsets the
/// SIMD version uses).
fn fp16_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let f = features();
        f.avx512f && f.avx512bw && f.avx512vl && f.avx512fp16
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this processor has AVX-512F (with the subsets the SIMD version uses).
fn wide_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        features().has_avx512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The tail of a dot product: `start + Σ x[i]·y[i]`, each product exact in `f32`, summed in
/// `f64`.
fn dot_tail(start: f64, x: &[u16], y: &[u16]) -> f32 {
    x.iter().zip(y).fold(start, |s, (&a, &b)| s + f64::from(fp16_to_fp32(a) * fp16_to_fp32(b))) as f32
}

/// Scalar models of both kinds of arithmetic, bit for bit what the SIMD versions compute.
pub(super) mod model {
    use super::*;

    /// Rounds to binary16, to nearest even, through `f32` rounded to odd: `f32` has more
    /// than twice binary16's precision plus two bits, so the second rounding is exact.
    pub(in super::super) fn f64_to_fp16(x: f64) -> u16 {
        let near = x as f32;
        if x.is_nan() || near.is_infinite() || f64::from(near) == x || near.to_bits() & 1 == 1 {
            return fp32_to_fp16(near);
        }
        // the neighbour of `near` on the side of `x`, whose last bit is odd
        let odd = if f64::from(near).abs() < x.abs() { near.to_bits() + 1 } else { near.to_bits() - 1 };
        fp32_to_fp16(f32::from_bits(odd))
    }

    /// `a·b + c` rounded once to binary16. The product of two binary16 values is exact in
    /// `f64`, so the sum is rounded once, to `f64`; rounding that to binary16 is exact too
    /// whenever the result is in binary16's range: a sum that `f64` cannot hold has a term
    /// below 2^-31 of the other, too small to move it onto a binary16 halfway point.
    pub(in super::super) fn fma16(a: u16, b: u16, c: u16) -> u16 {
        let (a, b, c) = (fp16_to_fp32(a), fp16_to_fp32(b), fp16_to_fp32(c));
        f64_to_fp16(f64::from(a) * f64::from(b) + f64::from(c))
    }

    /// `a + b` in binary16 (the `f32` sum rounds exactly to binary16, the precision being
    /// more than twice binary16's plus two bits).
    pub(in super::super) fn add16(a: u16, b: u16) -> u16 {
        fp32_to_fp16(fp16_to_fp32(a) + fp16_to_fp32(b))
    }

    /// The binary16 blocks of a dot product (whole blocks of 128 values).
    pub(in super::super) fn dot_blocks_fp16(x: &[u16], y: &[u16]) -> f64 {
        let mut acc = [[0u16; FP16_LANES]; 4];
        for (xb, yb) in x.chunks_exact(FP16_BLOCK).zip(y.chunks_exact(FP16_BLOCK)) {
            for (j, a) in acc.iter_mut().enumerate() {
                for (l, s) in a.iter_mut().enumerate() {
                    let i = FP16_LANES * j + l;
                    *s = fma16(xb[i], yb[i], *s);
                }
            }
        }
        // ggml's reduction: accumulators 0+2 and 1+3, then their sum; the register's halves,
        // quarters and eighths; the last four lanes as (0+2) + (1+3)
        let v: [u16; 32] = std::array::from_fn(|l| add16(add16(acc[0][l], acc[2][l]), add16(acc[1][l], acc[3][l])));
        let h: [u16; 16] = std::array::from_fn(|l| add16(v[l], v[l + 16]));
        let q: [u16; 8] = std::array::from_fn(|l| add16(h[l], h[l + 8]));
        let p: [u16; 4] = std::array::from_fn(|l| add16(q[l], q[l + 4]));
        f64::from(fp16_to_fp32(add16(add16(p[0], p[2]), add16(p[1], p[3]))))
    }

    /// The 16-lane `f32` blocks of a dot product (whole blocks of 64 values).
    pub(in super::super) fn dot_blocks_wide(x: &[u16], y: &[u16]) -> f64 {
        let mut acc = [[0.0f32; WIDE_LANES]; 4];
        for (xb, yb) in x.chunks_exact(WIDE_BLOCK).zip(y.chunks_exact(WIDE_BLOCK)) {
            for (j, a) in acc.iter_mut().enumerate() {
                for (l, s) in a.iter_mut().enumerate() {
                    let i = WIDE_LANES * j + l;
                    // the product is exact, so the fused multiply-add is this one rounding
                    *s += fp16_to_fp32(xb[i]) * fp16_to_fp32(yb[i]);
                }
            }
        }
        // accumulators 0+2 and 1+3, their sum, then the register's halves, quarters, lanes
        // two apart and the last two (`_mm512_reduce_add_ps`)
        let v: [f32; 16] = std::array::from_fn(|l| (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]));
        let h: [f32; 8] = std::array::from_fn(|l| v[l] + v[l + 8]);
        let q: [f32; 4] = std::array::from_fn(|l| h[l] + h[l + 4]);
        f64::from((q[0] + q[2]) + (q[1] + q[3]))
    }

    /// The `f32`-lane blocks of a dot product (whole blocks of 32 values).
    pub(in super::super) fn dot_blocks_lanes(x: &[u16], y: &[u16]) -> f64 {
        let mut acc = [[0.0f32; LANES]; 4];
        for (xb, yb) in x.chunks_exact(LANES_BLOCK).zip(y.chunks_exact(LANES_BLOCK)) {
            for (j, a) in acc.iter_mut().enumerate() {
                for (l, s) in a.iter_mut().enumerate() {
                    let i = LANES * j + l;
                    // the product is exact, so the fused multiply-add is this one rounding
                    *s += fp16_to_fp32(xb[i]) * fp16_to_fp32(yb[i]);
                }
            }
        }
        // accumulators 0+2 and 1+3, their sum, the halves, then two horizontal adds
        let v: [f32; 8] = std::array::from_fn(|l| (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]));
        let t: [f32; 4] = std::array::from_fn(|l| v[l] + v[l + 4]);
        f64::from((t[0] + t[1]) + (t[2] + t[3]))
    }

    pub(in super::super) fn mad_fp16(y: &mut [u16], x: &[u16], v: u16) {
        for (a, &b) in y.iter_mut().zip(x) {
            *a = fma16(b, v, *a);
        }
    }

    pub(in super::super) fn mad_lanes(y: &mut [u16], x: &[u16], v: f32) {
        for (a, &b) in y.iter_mut().zip(x) {
            *a = fp32_to_fp16(fp16_to_fp32(b).mul_add(v, fp16_to_fp32(*a)));
        }
    }

    pub(in super::super) fn scale_fp16(y: &mut [u16], v: u16) {
        // the product of two binary16 values is exact in f32
        let v = fp16_to_fp32(v);
        for a in y {
            *a = fp32_to_fp16(fp16_to_fp32(*a) * v);
        }
    }

    pub(in super::super) fn scale_lanes(y: &mut [u16], v: f32) {
        for a in y {
            *a = fp32_to_fp16(fp16_to_fp32(*a) * v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{FP16_BLOCK, GROUP, LANES, LANES_BLOCK, QueryTails, TAIL_KEYS};
    use crate::cpu::kernels::simd::avx2::load_f16;
    use crate::cpu::kernels::simd::fp16_to_f32_row;

    /// 8 `f32` rounded to binary16 (to nearest even) and stored at `p`.
    ///
    /// # Safety
    /// `p` is valid for writing 8 `u16`; the processor supports AVX2, FMA and F16C.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn store_f16(p: *mut u16, v: __m256) {
        // SAFETY: the caller's contract.
        unsafe { _mm_storeu_si128(p.cast(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) };
    }

    /// [`super::model::dot_blocks_lanes`].
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C; the rows are whole blocks of the same
    /// length.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn dot_blocks(x: &[u16], y: &[u16]) -> f64 {
        let mut acc = [_mm256_setzero_ps(); 4];
        for i in (0..x.len() - x.len() % LANES_BLOCK).step_by(LANES_BLOCK) {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: i + 8j + 8 <= the length of both rows.
                let (xv, yv) =
                    unsafe { (load_f16(x.as_ptr().add(i + LANES * j)), load_f16(y.as_ptr().add(i + LANES * j))) };
                *a = _mm256_fmadd_ps(xv, yv, *a);
            }
        }
        let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
        let t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let t = _mm_hadd_ps(t, t);
        f64::from(_mm_cvtss_f32(_mm_hadd_ps(t, t)))
    }

    /// The tails of [`super::Half::dot_rows`]: `sums[k][r] += Σ_i keys[k][from + i]·tails[i][r]`
    /// in order of `i`, each product exact in `f32` and added in `f64`, the eight rows' chains
    /// of up to [`TAIL_KEYS`] keys side by side.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn tail_rows(
        sums: &mut [[f64; GROUP]; TAIL_KEYS],
        keys: &[&[u16]],
        from: usize,
        tails: &QueryTails,
    ) {
        // SAFETY: in each arm, the processor's features are the caller's contract.
        unsafe {
            match keys.len() {
                4 => tail_rows_of::<4>(sums, keys, from, tails),
                3 => tail_rows_of::<3>(sums, keys, from, tails),
                2 => tail_rows_of::<2>(sums, keys, from, tails),
                _ => tail_rows_of::<1>(sums, keys, from, tails),
            }
        }
    }

    /// [`tail_rows`] for `K` keys (the first `K` of `keys` and `sums`).
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tail_rows_of<const K: usize>(
        sums: &mut [[f64; GROUP]; TAIL_KEYS],
        keys: &[&[u16]],
        from: usize,
        tails: &QueryTails,
    ) {
        crate::ggml_assert!(K <= keys.len() && K <= TAIL_KEYS, "vec_dot_f16: too many keys");
        let n = keys.iter().take(K).map(|k| k.len().saturating_sub(from)).fold(tails.len, usize::min);
        // the keys' tails widened first (exactly, as one value at a time would be)
        let mut widened = [[0.0f32; FP16_BLOCK]; K];
        for (w, key) in widened.iter_mut().zip(keys) {
            fp16_to_f32_row(&key[from..from + n], &mut w[..n]);
        }
        // SAFETY: each row of sums holds 8 f64.
        let mut acc: [[__m256d; 2]; K] = std::array::from_fn(|k| unsafe {
            [_mm256_loadu_pd(sums[k].as_ptr()), _mm256_loadu_pd(sums[k].as_ptr().add(4))]
        });
        for (i, q) in tails.values[..n].iter().enumerate() {
            // SAFETY: a row of the tails holds 8 f32.
            let qv = unsafe { _mm256_loadu_ps(q.as_ptr()) };
            for (a, w) in acc.iter_mut().zip(&widened) {
                let p = _mm256_mul_ps(_mm256_set1_ps(w[i]), qv);
                a[0] = _mm256_add_pd(a[0], _mm256_cvtps_pd(_mm256_castps256_ps128(p)));
                a[1] = _mm256_add_pd(a[1], _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(p)));
            }
        }
        for (s, a) in sums.iter_mut().zip(&acc) {
            // SAFETY: as for the loads.
            unsafe {
                _mm256_storeu_pd(s.as_mut_ptr(), a[0]);
                _mm256_storeu_pd(s.as_mut_ptr().add(4), a[1]);
            }
        }
    }

    /// [`super::model::mad_lanes`].
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C; `x` is at least as long as `y`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn mad(y: &mut [u16], x: &[u16], v: f32) {
        let n = y.len();
        let vv = _mm256_set1_ps(v);
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let mut i = 0;
        while i + LANES <= n {
            // SAFETY: i + 8 <= n, inside both rows.
            unsafe { store_f16(py.add(i), _mm256_fmadd_ps(load_f16(px.add(i)), vv, load_f16(py.add(i)))) };
            i += LANES;
        }
        super::model::mad_lanes(&mut y[i..], &x[i..n], v);
    }

    /// [`super::model::scale_lanes`].
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn scale(y: &mut [u16], v: f32) {
        let n = y.len();
        let vv = _mm256_set1_ps(v);
        let py = y.as_mut_ptr();
        let mut i = 0;
        while i + LANES <= n {
            // SAFETY: i + 8 <= n, inside the row.
            unsafe { store_f16(py.add(i), _mm256_mul_ps(load_f16(py.add(i)), vv)) };
            i += LANES;
        }
        super::model::scale_lanes(&mut y[i..], v);
    }
}

/// The 16-lane `f32` arithmetic under AVX-512F.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::*;

    use super::{WIDE_BLOCK, WIDE_LANES};

    /// 16 binary16 values at `p`, widened.
    ///
    /// # Safety
    /// `p` is valid for reading 16 `u16`; AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    unsafe fn load(p: *const u16) -> __m512 {
        // SAFETY: the caller's contract.
        _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p.cast()) })
    }

    /// 16 `f32` rounded to binary16 (to nearest even) and stored at `p`.
    ///
    /// # Safety
    /// `p` is valid for writing 16 `u16`; AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    unsafe fn store(p: *mut u16, v: __m512) {
        // SAFETY: the caller's contract.
        unsafe { _mm256_storeu_si256(p.cast(), _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) };
    }

    /// [`super::model::dot_blocks_wide`].
    ///
    /// # Safety
    /// AVX-512F (with the subsets of [`has_avx512`](crate::cpu::features::Features::has_avx512));
    /// the rows are whole blocks of the same length.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    pub(super) unsafe fn dot_blocks(x: &[u16], y: &[u16]) -> f64 {
        // SAFETY: the caller's contract.
        let [sum] = unsafe { dot_blocks_rows(x, [y]) };
        sum
    }

    /// [`dot_blocks`] of the key `x` with each of the `R` rows `ys`: each block of the key is
    /// widened once for all of them, and each row's sums are those of [`dot_blocks`].
    ///
    /// # Safety
    /// As for [`dot_blocks`]; each of `ys` is at least as long as `x`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    pub(super) unsafe fn dot_blocks_rows<const R: usize>(x: &[u16], ys: [&[u16]; R]) -> [f64; R] {
        let mut acc = [[_mm512_setzero_ps(); 4]; R];
        for i in (0..x.len() - x.len() % WIDE_BLOCK).step_by(WIDE_BLOCK) {
            for j in 0..4 {
                let at = i + WIDE_LANES * j;
                // SAFETY: at + 16 <= the length of the key, and of each row.
                let xv = unsafe { load(x.as_ptr().add(at)) };
                for (a, y) in acc.iter_mut().zip(ys) {
                    // SAFETY: as above.
                    a[j] = _mm512_fmadd_ps(xv, unsafe { load(y.as_ptr().add(at)) }, a[j]);
                }
            }
        }
        acc.map(|a| reduce(a))
    }

    /// [`dot_blocks_rows`] of the key `x` with each of `ys` into `sums`, four rows at a time:
    /// their 16 accumulators and the key's block fit the registers.
    ///
    /// # Safety
    /// As for [`dot_blocks_rows`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    pub(super) unsafe fn dot_rows(x: &[u16], ys: &[&[u16]], sums: &mut [f64]) {
        for (s, y) in sums.chunks_mut(4).zip(ys.chunks(4)) {
            // SAFETY: the caller's contract.
            unsafe {
                match *y {
                    [a] => s[..1].copy_from_slice(&dot_blocks_rows(x, [a])),
                    [a, b] => s[..2].copy_from_slice(&dot_blocks_rows(x, [a, b])),
                    [a, b, c] => s[..3].copy_from_slice(&dot_blocks_rows(x, [a, b, c])),
                    [a, b, c, d] => s[..4].copy_from_slice(&dot_blocks_rows(x, [a, b, c, d])),
                    _ => unreachable!("chunks of one to four rows"),
                }
            }
        }
    }

    /// The four accumulators of a dot product, added up as ggml does.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    fn reduce(acc: [__m512; 4]) -> f64 {
        let v = _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3]));
        f64::from(_mm512_reduce_add_ps(v))
    }

    /// [`super::model::mad_lanes`], 16 values at a time.
    ///
    /// # Safety
    /// As for [`dot_blocks`]; `x` is at least as long as `y`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    pub(super) unsafe fn mad(y: &mut [u16], x: &[u16], v: f32) {
        let n = y.len();
        let vv = _mm512_set1_ps(v);
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let mut i = 0;
        while i + WIDE_LANES <= n {
            // SAFETY: i + 16 <= n, inside both rows.
            unsafe { store(py.add(i), _mm512_fmadd_ps(load(px.add(i)), vv, load(py.add(i)))) };
            i += WIDE_LANES;
        }
        if i < n {
            super::model::mad_lanes(&mut y[i..], &x[i..n], v);
        }
    }

    /// [`mad`] of `x` into each of `rows` (accumulator `a` at `ys + a * stride`, and its
    /// factor), each 16 values of `x` widened once for all of them.
    ///
    /// # Safety
    /// As for [`dot_blocks`]; `x` holds `n` values and each accumulator `n` halves, which
    /// nothing else borrows.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    pub(super) unsafe fn mad_rows(ys: *mut u16, stride: usize, n: usize, x: &[u16], rows: &[(usize, f32)]) {
        let mut i = 0;
        while i + WIDE_LANES <= n {
            // SAFETY: i + 16 <= n, inside the row and each accumulator.
            let xv = unsafe { load(x.as_ptr().add(i)) };
            for &(a, v) in rows {
                // SAFETY: as above.
                unsafe {
                    let py = ys.add(a * stride + i);
                    store(py, _mm512_fmadd_ps(xv, _mm512_set1_ps(v), load(py)));
                }
            }
            i += WIDE_LANES;
        }
        if i < n {
            for &(a, v) in rows {
                // SAFETY: the accumulator's last n - i halves, borrowed by nothing else.
                let y = unsafe { std::slice::from_raw_parts_mut(ys.add(a * stride + i), n - i) };
                super::model::mad_lanes(y, &x[i..n], v);
            }
        }
    }

    /// [`super::model::scale_lanes`], 16 values at a time.
    ///
    /// # Safety
    /// As for [`dot_blocks`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
    pub(super) unsafe fn scale(y: &mut [u16], v: f32) {
        let n = y.len();
        let vv = _mm512_set1_ps(v);
        let py = y.as_mut_ptr();
        let mut i = 0;
        while i + WIDE_LANES <= n {
            // SAFETY: i + 16 <= n, inside the row.
            unsafe { store(py.add(i), _mm512_mul_ps(load(py.add(i)), vv)) };
            i += WIDE_LANES;
        }
        super::model::scale_lanes(&mut y[i..], v);
    }
}

/// The binary16 blocks under AVX512-FP16. Rust has no stable binary16 intrinsics, so the
/// arithmetic is written as the instructions themselves.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::asm;
    use std::arch::x86_64::*;

    use super::{FP16_BLOCK, FP16_LANES};
    use crate::quants::half::fp16_to_fp32;

    /// [`super::model::dot_blocks_fp16`].
    ///
    /// # Safety
    /// The processor supports AVX512F, AVX512BW, AVX512VL and AVX512-FP16; the rows are whole
    /// blocks of the same length.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512fp16")]
    pub(super) unsafe fn dot_blocks(x: &[u16], y: &[u16]) -> f64 {
        let split = x.len() - x.len() % FP16_BLOCK;
        let mut acc = [_mm512_setzero_si512(); 4];
        for i in (0..split).step_by(FP16_BLOCK) {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: i + 32j + 32 <= split, inside both rows.
                let (xv, yv) = unsafe {
                    let at = i + FP16_LANES * j;
                    (_mm512_loadu_si512(x.as_ptr().add(at).cast()), _mm512_loadu_si512(y.as_ptr().add(at).cast()))
                };
                // SAFETY: AVX512-FP16 (the caller's contract); registers only.
                unsafe {
                    asm!("vfmadd231ph {a}, {x}, {y}", a = inout(zmm_reg) *a, x = in(zmm_reg) xv, y = in(zmm_reg) yv,
                        options(pure, nomem, nostack, preserves_flags));
                }
            }
        }
        let [a0, a1, a2, a3] = acc;
        let sum: u32;
        // SAFETY: AVX512-FP16 (the caller's contract); registers only. The sequence is
        // ggml's reduction (see the model): 0+2, 1+3, their sum, halves down to 8 lanes, lanes
        // i + (i+4), then (0+2) + (1+3). Fixed registers below 16 keep every operand
        // encodable by the VEX-only shuffles.
        unsafe {
            asm!(
                "vaddph zmm0, zmm0, zmm2",
                "vaddph zmm1, zmm1, zmm3",
                "vaddph zmm0, zmm0, zmm1",
                "vextracti64x4 ymm4, zmm0, 1",
                "vaddph ymm0, ymm0, ymm4",
                "vextracti128 xmm4, ymm0, 1",
                "vaddph xmm0, xmm0, xmm4",
                "vpalignr xmm4, xmm0, xmm0, 8",
                "vaddph xmm0, xmm0, xmm4",
                "vpshuflw xmm4, xmm0, 0x4e",
                "vaddph xmm0, xmm0, xmm4",
                "vpsrldq xmm4, xmm0, 2",
                "vaddsh xmm0, xmm0, xmm4",
                "vpextrw {r:e}, xmm0, 0",
                r = out(reg) sum,
                inout("zmm0") a0 => _,
                inout("zmm1") a1 => _,
                inout("zmm2") a2 => _,
                inout("zmm3") a3 => _,
                out("zmm4") _,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        f64::from(fp16_to_fp32(sum as u16))
    }

    /// [`super::model::mad_fp16`] over whole 32-value lanes.
    ///
    /// # Safety
    /// The processor supports AVX512F, AVX512BW and AVX512-FP16; `y.len()` is a multiple of
    /// 32 and `x` at least as long.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512fp16")]
    pub(super) unsafe fn mad(y: &mut [u16], x: &[u16], v: u16) {
        let vv = _mm512_set1_epi16(v as i16);
        for i in (0..y.len()).step_by(FP16_LANES) {
            // SAFETY: i + 32 <= y.len() <= x.len(); AVX512-FP16 (the caller's contract).
            unsafe {
                let py = y.as_mut_ptr().add(i);
                let mut acc = _mm512_loadu_si512(py.cast());
                let xv = _mm512_loadu_si512(x.as_ptr().add(i).cast());
                asm!("vfmadd231ph {a}, {x}, {v}", a = inout(zmm_reg) acc, x = in(zmm_reg) xv, v = in(zmm_reg) vv,
                    options(pure, nomem, nostack, preserves_flags));
                _mm512_storeu_si512(py.cast(), acc);
            }
        }
    }

    /// [`super::model::scale_fp16`] over whole 32-value lanes.
    ///
    /// # Safety
    /// The processor supports AVX512F, AVX512BW and AVX512-FP16; `y.len()` is a multiple of
    /// 32.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512fp16")]
    pub(super) unsafe fn scale(y: &mut [u16], v: u16) {
        let vv = _mm512_set1_epi16(v as i16);
        for i in (0..y.len()).step_by(FP16_LANES) {
            // SAFETY: i + 32 <= y.len(); AVX512-FP16 (the caller's contract).
            unsafe {
                let py = y.as_mut_ptr().add(i);
                let mut acc = _mm512_loadu_si512(py.cast());
                asm!("vmulph {a}, {a}, {v}", a = inout(zmm_reg) acc, v = in(zmm_reg) vv,
                    options(pure, nomem, nostack, preserves_flags));
                _mm512_storeu_si512(py.cast(), acc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::model::*;
    use super::*;

    /// Deterministic binary16 values in `[-range, range]`, with some exact zeros.
    fn halves(n: usize, seed: u64, range: f32) -> Vec<u16> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = (s >> 40) as f32 / (1u64 << 24) as f32;
                if s.is_multiple_of(29) { 0 } else { fp32_to_fp16((2.0 * u - 1.0) * range) }
            })
            .collect()
    }

    #[test]
    fn binary16_fma_is_rounded_once() {
        // 1 + 2^-11 + 2^-25 (above the halfway point between 1 and 1 + 2^-10) rounds up; a
        // rounding to f32 first would land on the halfway point and round to even, down.
        // 1160 * 1808 = 2^21 + 2^7, so (1160 * 2^-21) * (1808 * 2^-11) = 2^-11 + 2^-25.
        let (a, b) = (fp32_to_fp16(1160.0 / 2097152.0), fp32_to_fp16(1808.0 / 2048.0));
        assert_eq!(fp16_to_fp32(a) * fp16_to_fp32(b), (2.0f32).powi(-11) + (2.0f32).powi(-25));
        let one = fp32_to_fp16(1.0);
        assert_eq!(fp16_to_fp32(fma16(a, b, one)), 1.0 + (2.0f32).powi(-10));
        assert_eq!(fp16_to_fp32(fp32_to_fp16(fp16_to_fp32(a) * fp16_to_fp32(b) + 1.0)), 1.0);
        // exact halfway points still round to even
        assert_eq!(f64_to_fp16(1.0 + (2.0f64).powi(-11)), one);
        assert_eq!(f64_to_fp16(-(1.0 + 3.0 * (2.0f64).powi(-11))), fp32_to_fp16(-(1.0 + (2.0f32).powi(-9))));
        assert_eq!(f64_to_fp16(1.0 + (2.0f64).powi(-11) + (2.0f64).powi(-40)), fp32_to_fp16(1.0 + (2.0f32).powi(-10)));
    }

    #[test]
    fn models_follow_their_definitions() {
        let (fp16, lanes) = (Half::new(HalfMath::Fp16, false), Half::new(HalfMath::Lanes, false));
        let exact = |x: &[u16], y: &[u16]| -> f64 {
            x.iter().zip(y).map(|(&a, &b)| f64::from(fp16_to_fp32(a)) * f64::from(fp16_to_fp32(b))).sum()
        };
        // below one block, the binary16 kind sums the products in f64
        let (x, y) = (halves(100, 1, 2.0), halves(100, 2, 2.0));
        assert_eq!(fp16.dot(&x, &y), exact(&x, &y) as f32);
        // a block of 128 is summed in binary16, far coarser than in f32 lanes
        let (x, y) = (halves(128, 3, 2.0), halves(128, 4, 2.0));
        let (e, h, l) = (exact(&x, &y), f64::from(fp16.dot(&x, &y)), f64::from(lanes.dot(&x, &y)));
        let size: f64 = x.iter().zip(&y).map(|(&a, &b)| f64::from((fp16_to_fp32(a) * fp16_to_fp32(b)).abs())).sum();
        assert!((l - e).abs() < 1e-6 * size, "{l} {e}");
        assert!((h - e).abs() > 1e-5 * size && (h - e).abs() < 1e-2 * size, "{h} {e}");
        assert_eq!(h as f32, fp16_to_fp32(fp32_to_fp16(h as f32)), "the block sum is a binary16 value");
        // mad in binary16 rounds the factor first, then each fused multiply-add once
        let (v, x) = (0.3f32, halves(128, 6, 1.0));
        let (mut a, mut b) = (halves(128, 5, 1.0), halves(128, 5, 1.0));
        fp16.mad(&mut a, &x, v);
        let vh = fp32_to_fp16(v);
        for (y, &x) in b.iter_mut().zip(&x) {
            *y = fma16(x, vh, *y);
        }
        assert_eq!(a, b);
        // ... while in f32 lanes the factor stays f32
        let mut c = halves(128, 5, 1.0);
        lanes.mad(&mut c, &x, v);
        assert_ne!(a, c);
        // rows of a group are the rows alone
        let queries: Vec<Vec<u16>> = (0..5).map(|s| halves(200, 40 + s, 2.0)).collect();
        let q: Vec<&[u16]> = queries.iter().map(|q| q.as_slice()).collect();
        let key = halves(200, 7, 2.0);
        for half in [fp16, lanes] {
            let mut out = [[0.0f32; GROUP]; 1];
            half.dot_rows(&[&key], &q, &half.query_tails(&q), &mut out);
            for (o, q) in out[0].iter().zip(&q) {
                assert_eq!(o.to_bits(), half.dot(&key, q).to_bits());
            }
        }
    }

    #[test]
    fn simd_matches_the_models_bit_for_bit() {
        for math in [HalfMath::Lanes, HalfMath::Wide, HalfMath::Fp16] {
            let (simd, model) = (Half::new(math, true), Half::new(math, false));
            if !simd.simd {
                continue;
            }
            for n in [8, 40, 64, 72, 128, 136, 200, 256, 320, 576] {
                for seed in 0..4 {
                    let (x, y) = (halves(n, 10 + seed, 4.0), halves(n, 20 + seed, 4.0));
                    assert_eq!(simd.dot(&x, &y).to_bits(), model.dot(&x, &y).to_bits(), "{math:?} dot n {n}");
                    let queries: Vec<Vec<u16>> = (0..GROUP as u64).map(|r| halves(n, 50 + seed + r, 4.0)).collect();
                    let q: Vec<&[u16]> = queries.iter().map(|q| q.as_slice()).collect();
                    // 7 keys: a side-by-side pass of four, then one of three
                    let more: Vec<Vec<u16>> = (0..6).map(|k| halves(n, 70 + seed + k, 4.0)).collect();
                    let keys: Vec<&[u16]> =
                        std::iter::once(x.as_slice()).chain(more.iter().map(|k| k.as_slice())).collect();
                    for rows in [1, 3, GROUP] {
                        for n_keys in [1, 2, 7] {
                            let (mut a, mut b) = ([[0.0f32; GROUP]; 7], [[0.0f32; GROUP]; 7]);
                            let keys = &keys[..n_keys];
                            simd.dot_rows(keys, &q[..rows], &simd.query_tails(&q[..rows]), &mut a);
                            model.dot_rows(keys, &q[..rows], &model.query_tails(&q[..rows]), &mut b);
                            for k in 0..n_keys {
                                assert_eq!(a[k].map(f32::to_bits), b[k].map(f32::to_bits), "{math:?} dot_rows n {n}");
                            }
                            // and a key in a group is the key alone
                            let mut alone = [[0.0f32; GROUP]; 1];
                            simd.dot_rows(&keys[n_keys - 1..], &q[..rows], &simd.query_tails(&q[..rows]), &mut alone);
                            assert_eq!(alone[0].map(f32::to_bits), a[n_keys - 1].map(f32::to_bits));
                        }
                    }
                    for v in [0.0f32, 1.0, 0.7310586, 1e-3, 3.3e-5] {
                        let (mut a, mut b) = (halves(n, 30 + seed, 50.0), halves(n, 30 + seed, 50.0));
                        simd.mad(&mut a, &x, v);
                        model.mad(&mut b, &x, v);
                        assert_eq!(a, b, "{math:?} mad n {n} v {v}");
                        simd.scale(&mut a, v);
                        model.scale(&mut b, v);
                        assert_eq!(a, b, "{math:?} scale n {n} v {v}");
                    }
                    // accumulators 0 and 2 of three, a row apart, each with its own factor
                    let stride = n + 8;
                    let rows = [(2, 0.7310586f32), (0, 3.3e-5)];
                    let (mut a, mut b) = (halves(3 * stride, 60 + seed, 50.0), halves(3 * stride, 60 + seed, 50.0));
                    simd.mad_rows(&mut a, stride, n, &x, &rows);
                    for &(r, v) in &rows {
                        model.mad(&mut b[r * stride..][..n], &x, v);
                    }
                    assert_eq!(a, b, "{math:?} mad_rows n {n}");
                }
            }
        }
    }
}
