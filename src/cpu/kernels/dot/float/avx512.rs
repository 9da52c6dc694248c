//! AVX-512 tiles of the float formats: the [`VecDot`](crate::cpu::kernels::dot::VecDot)
//! products of up to 4 weight rows by [`FLOAT_COLS`] activation rows, with 16-lane vectors and
//! the 32 vector registers that AVX-512 brings (the AVX2 tiles stop at 4×2).
//!
//! The tiles follow the arithmetic of ggml's AVX-512 build (llamafile's tinyBLAS and
//! `ggml_vec_dot_*`): products summed with FMA in 16 `f32` lanes; binary16 widened with
//! `vcvtph2ps`; bfloat16 multiplied with `vdpbf16ps` where the processor has AVX512-BF16 (pairs
//! of exact products added in `f32`, denormal inputs read as zero, as ggml's tiles do there),
//! widened and FMA'd otherwise. Row tails shorter than a vector are read with masked loads.
//!
//! Every function here needs
//! [`has_avx512`](crate::cpu::features::Features::has_avx512) (and AVX2, FMA, F16C,
//! which such processors have); the callers check it.

use std::arch::x86_64::*;

use crate::cpu::kernels::prefetch;
use crate::cpu::kernels::x86::avx512::sums;
use crate::quants::half::{Bf16, bf16_to_fp32};

/// Activation rows per float tile: 4×6 accumulators, 4 weight vectors and one activation
/// vector fill 29 of the 32 registers (tinyBLAS's shape).
pub const FLOAT_COLS: usize = 6;

/// `(1 << len) - 1`: the lanes below `len` (`len <= 32`).
#[inline]
fn low_lanes(len: usize) -> u32 {
    ((1u64 << len) - 1) as u32
}

/// The lanes `lo..hi` of a vector (`hi <= 32`).
#[inline]
fn lanes(lo: usize, hi: usize) -> u32 {
    low_lanes(hi) & !low_lanes(lo)
}

/// Values of `row` before its first address that is a multiple of `STEP` values, rounded down
/// to whole 32-bit lanes (`STEP / 16` values each) and at most the row's length: a first short
/// step of that many values makes the later vector loads of the row aligned. A load that
/// straddles two cache lines costs about twice one that does not, and the weights' rows (4 of
/// the 10 loads of a float tile's step) sit wherever the model file or the buffer put them,
/// often 32 bytes off a line.
fn head<T, const STEP: usize>(row: &[T]) -> usize {
    let (width, per_lane) = (STEP * size_of::<T>(), STEP / 16);
    let to_boundary = (width - row.as_ptr() as usize % width) % width;
    if to_boundary.is_multiple_of(size_of::<T>()) {
        (to_boundary / size_of::<T>()).min(row.len()) / per_lane * per_lane
    } else {
        0
    }
}

/// R×C products of the weight `rows` (of `n` values each, the length of the first), `STEP`
/// values per vector, the next tile's rows prefetched as it goes: `x(r, i, mask)` and
/// `y(c, i, mask)` read the values at `i + lane` into the lanes of `mask` (zeros elsewhere;
/// `i` may be negative), `madd(a, b, acc)` adds their products to 16 `f32` lanes.
///
/// The first step takes `head` values (a multiple of the values per lane), so that the steps
/// after it start at an aligned address of the rows. It reads them into the top lanes, so
/// value j always goes to lane `(j - head) mod STEP`: each lane adds the same values in the
/// same order as with no head, only in another lane, and the lanes are turned back before they
/// are summed. The products are then the same bits wherever the rows lie: a model loaded
/// from a mapped file computes what it computed when loaded into a buffer.
// Rows and columns index the accumulator grid together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn float_tile<T, const R: usize, const C: usize, const STEP: usize, V: Copy>(
    rows: &[&[T]; R],
    head: usize,
    x: impl Fn(usize, isize, u32) -> V,
    y: impl Fn(usize, isize, u32) -> V,
    madd: impl Fn(V, V, __m512) -> __m512,
) -> [[f32; C]; R] {
    let n = rows[0].len();
    let mut acc = [[_mm512_setzero_ps(); C]; R];
    // A macro and plain loops: a closure called twice (or through `array::from_fn`) is not
    // inlined, and would keep the accumulators or the loaded rows in memory.
    macro_rules! step {
        ($at:expr, $len:expr, $i:expr, $mask:expr) => {{
            prefetch::next_tile(rows, $at, $len);
            let mut xv = [x(0, $i, $mask); R];
            for r in 1..R {
                xv[r] = x(r, $i, $mask);
            }
            for c in 0..C {
                let yv = y(c, $i, $mask);
                for r in 0..R {
                    acc[r][c] = madd(xv[r], yv, acc[r][c]);
                }
            }
        }};
    }
    if head > 0 {
        step!(0, head, head as isize - STEP as isize, lanes(STEP - head, STEP));
    }
    let mut i = head;
    while i + STEP <= n {
        step!(i, STEP, i as isize, lanes(0, STEP));
        i += STEP;
    }
    if i < n {
        step!(i, n - i, i as isize, lanes(0, n - i));
    }
    if head > 0 {
        // lane k holds what lane k + head / (STEP / 16) holds with no head
        let turn = _mm512_set1_epi32((head / (STEP / 16)) as i32);
        let index = _mm512_and_si512(
            _mm512_sub_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), turn),
            _mm512_set1_epi32(15),
        );
        for row in acc.iter_mut() {
            for a in row.iter_mut() {
                *a = _mm512_permutexvar_ps(index, *a);
            }
        }
    }
    sums(&acc)
}

/// # Safety
/// The processor has the features of `has_avx512`; every row holds as many values as `x[0]`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn f32_tile<const R: usize, const C: usize>(x: &[&[f32]; R], y: &[&[f32]; C]) -> [[f32; C]; R] {
    // SAFETY: for both loads, the values of the lanes read lie in the row (the tile reads them
    // below the common length); the other lanes are masked off, and not touched even where
    // their addresses lie outside the row.
    let load = |row: &[f32], i: isize, mask: u32| unsafe {
        _mm512_maskz_loadu_ps(mask as __mmask16, row.as_ptr().wrapping_offset(i))
    };
    float_tile::<_, R, C, 16, __m512>(
        x,
        head::<_, 16>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_fmadd_ps(a, b, acc),
    )
}

/// # Safety
/// As for [`f32_tile`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn f16_tile<const R: usize, const C: usize>(x: &[&[u16]; R], y: &[&[u16]; C]) -> [[f32; C]; R] {
    // SAFETY: as in `f32_tile`.
    let load = |row: &[u16], i: isize, mask: u32| unsafe {
        _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask as __mmask16, row.as_ptr().wrapping_offset(i).cast()))
    };
    float_tile::<_, R, C, 16, __m512>(
        x,
        head::<_, 16>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_fmadd_ps(a, b, acc),
    )
}

/// # Safety
/// As for [`f32_tile`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub unsafe fn bf16_tile<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
    if crate::cpu::features::features().avx512bf16 {
        // SAFETY: the base features are the caller's word, AVX512-BF16 was checked.
        unsafe { bf16_dot_pairs(x, y) }
    } else {
        // SAFETY: as for this function.
        unsafe { bf16_widened(x, y) }
    }
}

/// bfloat16 products with `vdpbf16ps`, 32 values per step.
///
/// # Safety
/// As for [`f32_tile`], and the processor has AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")]
unsafe fn bf16_dot_pairs<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
    // SAFETY: as in `f32_tile`; the transmute reads 512 bits of bfloat16 lanes as such.
    let load = |row: &[Bf16], i: isize, mask: u32| unsafe {
        std::mem::transmute::<__m512i, __m512bh>(_mm512_maskz_loadu_epi16(mask, row.as_ptr().wrapping_offset(i).cast()))
    };
    float_tile::<_, R, C, 32, __m512bh>(
        x,
        head::<_, 32>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_dpbf16_ps(acc, a, b),
    )
}

/// One bfloat16 product as ggml's `ggml_vec_dot_bf16` computes it with AVX512-BF16, which
/// ggml takes for one activation column: `vdpbf16ps` into two accumulators over steps of 64
/// values (32 each), each accumulator reduced and the two added in `f64`, the last values'
/// products (in `f32`) added in `f64` one at a time, the sum rounded to `f32` at the end.
///
/// # Safety
/// The processor has AVX-512 (as for [`f32_tile`]) and AVX512-BF16; the rows have the same
/// length.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")]
pub unsafe fn bf16_vec_dot(x: &[Bf16], y: &[Bf16]) -> f32 {
    debug_assert_eq!(x.len(), y.len());
    // SAFETY: 32 values from `at` lie in the row (the loop's bound); the transmute reads 512
    // bits of bfloat16 lanes as such.
    let load = |row: &[Bf16], at: usize| unsafe {
        std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(row.as_ptr().add(at).cast()))
    };
    let (mut c1, mut c2) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut i = 0;
    while i + 64 <= x.len() {
        c1 = _mm512_dpbf16_ps(c1, load(x, i), load(y, i));
        c2 = _mm512_dpbf16_ps(c2, load(x, i + 32), load(y, i + 32));
        i += 64;
    }
    let mut sum = f64::from(_mm512_reduce_add_ps(c1)) + f64::from(_mm512_reduce_add_ps(c2));
    for (a, b) in x[i..].iter().zip(&y[i..]) {
        sum += f64::from(bf16_to_fp32(*a) * bf16_to_fp32(*b));
    }
    sum as f32
}

/// bfloat16 products widened to `f32` (ggml's AVX512F path without BF16).
///
/// # Safety
/// As for [`f32_tile`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn bf16_widened<const R: usize, const C: usize>(x: &[&[Bf16]; R], y: &[&[Bf16]; C]) -> [[f32; C]; R] {
    // SAFETY: as in `f32_tile`.
    let load = |row: &[Bf16], i: isize, mask: u32| unsafe {
        let h = _mm256_maskz_loadu_epi16(mask as __mmask16, row.as_ptr().wrapping_offset(i).cast());
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
    };
    float_tile::<_, R, C, 16, __m512>(
        x,
        head::<_, 16>(x[0]),
        |r, i, mask| load(x[r], i, mask),
        |c, i, mask| load(y[c], i, mask),
        |a, b, acc| _mm512_fmadd_ps(a, b, acc),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::features::features;
    use crate::cpu::kernels::dot::{DotKernel, MAX_ROWS, MAX_WIDE_COLS, VecDot};
    use crate::quants::half::{bf16_to_fp32, fp32_to_bf16, fp32_to_fp16};

    use crate::cpu::kernels::dot::test_support::values;

    fn bytes<T>(v: &[T]) -> &[u8] {
        // SAFETY: the formats are plain data; the view covers the same memory.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
    }

    fn close(a: f32, b: f32, n: usize) -> bool {
        (a - b).abs() <= 2e-5 * (1.0 + n as f32).sqrt() * (1.0 + a.abs().max(b.abs()))
    }

    /// Every tile shape of `T`'s kernel on this processor (AVX-512 when it has it) against the
    /// scalar products, and the 4×2 AVX-512 tile against the AVX2 one.
    fn check<T: VecDot>(n: usize, xs: &[Vec<T>], ys: &[Vec<T::Rhs>]) {
        let k = DotKernel::for_type(T::TYPE).expect("a kernel");
        let xb: Vec<&[u8]> = xs.iter().map(|r| bytes(r)).collect();
        let yb: Vec<&[u8]> = ys.iter().map(|r| bytes(r)).collect();
        assert_eq!(k.cols(), T::AVX512_COLS, "{}: the kernel takes the AVX-512 shape", T::TYPE.name());
        for nr in 1..=MAX_ROWS {
            for nc in 1..=k.cols() {
                let mut fast = [f32::NAN; MAX_ROWS * MAX_WIDE_COLS];
                let mut scalar = [f32::NAN; MAX_ROWS * MAX_WIDE_COLS];
                k.tile(n, &xb[..nr], &yb[..nc], &mut fast, true);
                k.tile(n, &xb[..nr], &yb[..nc], &mut scalar, false);
                for i in 0..nr * nc {
                    assert!(
                        close(fast[i], scalar[i], n),
                        "{} n={n} {nr}x{nc} [{i}]: {} vs scalar {}",
                        T::TYPE.name(),
                        fast[i],
                        scalar[i]
                    );
                }
            }
        }
        let x: [&[T]; 4] = std::array::from_fn(|r| xs[r].as_slice());
        let y: [&[T::Rhs]; 2] = std::array::from_fn(|c| ys[c].as_slice());
        // SAFETY: the callers checked for AVX-512 (and so AVX2, FMA, F16C); the rows have the
        // same length.
        let (wide, narrow) = unsafe { (T::tile_avx512::<4, 2>(&x, &y), T::tile_avx2::<4, 2>(&x, &y)) };
        for r in 0..4 {
            for c in 0..2 {
                assert!(close(wide[r][c], narrow[r][c], n), "{} n={n}: AVX-512 vs AVX2 at {r},{c}", T::TYPE.name());
            }
        }
    }

    fn rows(n: usize, count: u32, seed: u32) -> Vec<Vec<f32>> {
        (0..count).map(|i| values(n, seed + i)).collect()
    }

    #[test]
    fn float_tiles_match_scalar_and_avx2() {
        if !crate::cpu::features::features().has_avx512() {
            return;
        }
        for n in [1usize, 7, 16, 17, 31, 32, 33, 64, 100, 257] {
            let (xs, ys) = (rows(n, 4, 1), rows(n, MAX_WIDE_COLS as u32, 100));
            check::<f32>(n, &xs, &ys);
            let half = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_fp16(a)).collect::<Vec<u16>>();
            check::<u16>(n, &xs.iter().map(half).collect::<Vec<_>>(), &ys.iter().map(half).collect::<Vec<_>>());
            let bf = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_bf16(a)).collect::<Vec<Bf16>>();
            check::<Bf16>(n, &xs.iter().map(bf).collect::<Vec<_>>(), &ys.iter().map(bf).collect::<Vec<_>>());
        }
    }

    /// The rows' values at every offset from a 64-byte boundary: the first step differs (the
    /// head), the products must not, to the bit.
    #[test]
    fn float_products_do_not_depend_on_where_the_rows_lie() {
        if !crate::cpu::features::features().has_avx512() {
            return;
        }
        fn at_every_offset<T: Copy>(
            xs: &[Vec<T>],
            ys: &[Vec<T>],
            tile: impl Fn(&[&[T]; 2], &[&[T]; 3]) -> [[f32; 3]; 2],
        ) {
            let n = xs[0].len();
            let lanes = 64 / size_of::<T>();
            let mut first = None;
            for offset in 0..lanes {
                // room for the offset, then rows that keep it (whole 64-byte strides)
                let stride = (offset + n).next_multiple_of(lanes);
                let mut store = vec![[0u8; 64]; xs.len() * stride * size_of::<T>() / 64 + 1];
                // SAFETY: 64-byte units viewed as T (plain data, alignment at most 64).
                let all =
                    unsafe { std::slice::from_raw_parts_mut(store.as_mut_ptr().cast::<T>(), store.len() * lanes) };
                for (k, x) in xs.iter().enumerate() {
                    all[k * stride + offset..][..n].copy_from_slice(x);
                }
                let rows: [&[T]; 2] = std::array::from_fn(|k| &all[k * stride + offset..][..n]);
                let cols: [&[T]; 3] = std::array::from_fn(|c| ys[c].as_slice());
                let got = tile(&rows, &cols).map(|r| r.map(f32::to_bits));
                assert_eq!(*first.get_or_insert(got), got, "n={n} offset {offset}");
            }
        }
        for n in [5usize, 16, 31, 33, 100, 257] {
            let (xs, ys) = (rows(n, 2, 11), rows(n, 3, 300));
            // SAFETY: AVX-512 was checked; the rows have the same length.
            at_every_offset(&xs, &ys, |x, y| unsafe { f32_tile::<2, 3>(x, y) });
            let half = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_fp16(a)).collect::<Vec<u16>>();
            let (hx, hy): (Vec<_>, Vec<_>) = (xs.iter().map(half).collect(), ys.iter().map(half).collect());
            // SAFETY: as for the F32 tile.
            at_every_offset(&hx, &hy, |x, y| unsafe { f16_tile::<2, 3>(x, y) });
            let bf = |v: &Vec<f32>| v.iter().map(|&a| fp32_to_bf16(a)).collect::<Vec<Bf16>>();
            let (bx, by): (Vec<_>, Vec<_>) = (xs.iter().map(bf).collect(), ys.iter().map(bf).collect());
            // SAFETY: as for the F32 tile.
            at_every_offset(&bx, &by, |x, y| unsafe { bf16_widened::<2, 3>(x, y) });
            if features().avx512bf16 {
                // SAFETY: as for the F32 tile, and AVX512-BF16 was just checked.
                at_every_offset(&bx, &by, |x, y| unsafe { bf16_dot_pairs::<2, 3>(x, y) });
            }
        }
    }

    /// `bf16_vec_dot` against a scalar model of ggml_vec_dot_bf16 with AVX512-BF16: per lane,
    /// `vdpbf16ps` adds the odd pair's exact product, then the even one's; 16 lanes in two
    /// accumulators over 64-value steps, each reduced as `_mm512_reduce_add_ps` pairs them,
    /// in `f64` with the tail. 64·50 + 37 values of mixed magnitudes: enough roundings that
    /// another order shows in the result.
    #[test]
    fn bf16_vec_dot_sums_as_ggml_does() {
        if !(crate::cpu::features::features().has_avx512() && features().avx512bf16) {
            return;
        }
        let n = 64 * 50 + 37;
        let spread = |v: Vec<f32>| -> Vec<Bf16> {
            v.into_iter().enumerate().map(|(i, x)| fp32_to_bf16(x * (1 << (i % 11)) as f32)).collect()
        };
        let (a, b) = (spread(values(n, 5)), spread(values(n, 6)));
        let f = |v: Bf16| bf16_to_fp32(v);
        let mut acc = [[0.0f32; 16]; 2];
        for step in 0..n / 64 {
            for (k, lanes) in acc.iter_mut().enumerate() {
                for (l, lane) in lanes.iter_mut().enumerate() {
                    let i = 64 * step + 32 * k + 2 * l;
                    *lane = (*lane + f(a[i + 1]) * f(b[i + 1])) + f(a[i]) * f(b[i]);
                }
            }
        }
        let reduce = |v: [f32; 16]| {
            let h: [f32; 8] = std::array::from_fn(|i| v[i] + v[i + 8]);
            let q: [f32; 4] = std::array::from_fn(|i| h[i] + h[i + 4]);
            (q[0] + q[2]) + (q[1] + q[3])
        };
        let mut want = f64::from(reduce(acc[0])) + f64::from(reduce(acc[1]));
        for i in n / 64 * 64..n {
            want += f64::from(f(a[i]) * f(b[i]));
        }
        // SAFETY: AVX-512 and AVX512-BF16 were checked; the rows have the same length.
        let got = unsafe { bf16_vec_dot(&a, &b) };
        assert_eq!(got.to_bits(), (want as f32).to_bits(), "{got} against {}", want as f32);
    }

    #[test]
    fn bf16_dot_pairs_and_widening_agree() {
        let f = features();
        if !(crate::cpu::features::features().has_avx512() && f.avx512bf16) {
            return;
        }
        let to_bf = |v: Vec<f32>| v.into_iter().map(fp32_to_bf16).collect::<Vec<_>>();
        let (a, b) = (to_bf(values(77, 3)), to_bf(values(77, 4)));
        // SAFETY: AVX-512 and AVX512-BF16 were checked; the rows have the same length.
        let (p, w) = unsafe { (bf16_dot_pairs::<1, 1>(&[&a], &[&b]), bf16_widened::<1, 1>(&[&a], &[&b])) };
        assert!(close(p[0][0], w[0][0], 77), "{} vs {}", p[0][0], w[0][0]);
    }
}
