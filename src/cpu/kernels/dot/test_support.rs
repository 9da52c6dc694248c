//! Inputs and checks the dot-product tests of every format share.

use crate::cpu::kernels::dot::{self, DotKernel, MAX_ROWS, MAX_WIDE_COLS, VecDot};
use crate::quants::k_quants::{BlockQ8K, quantize_row_q8_k};
use crate::quants::q8::BlockQ8_0;
use crate::quants::{BlockFormat, dequantize_row, quantize_row, quantize_rows};

/// `n` values in -1..1 from `seed`.
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(12_345);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

/// `n` pseudo-random bytes from `seed`.
pub fn bytes(n: usize, seed: u32) -> Vec<u8> {
    let mut s = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

/// A row of blocks quantized from `v` (with a flat importance matrix when `imatrix`, for
/// the formats that need one), and its dequantized values.
pub fn quantized<B: BlockFormat>(v: &[f32], imatrix: bool) -> (Vec<B>, Vec<f32>) {
    let mut b = vec![B::default(); v.len() / B::QK];
    if imatrix {
        quantize_rows(v, &mut b, v.len(), Some(&vec![1.0; v.len()]));
    } else {
        quantize_row(v, &mut b);
    }
    dequantized(b)
}

/// A row of `n / QK` blocks of random bytes, `fix` making each block's scales sane.
pub fn random<B: BlockFormat>(n: usize, seed: u32, fix: impl Fn(&mut B)) -> (Vec<B>, Vec<f32>) {
    let raw = bytes(n / B::QK * std::mem::size_of::<B>(), seed);
    let mut b = crate::quants::blocks::<B>(&raw).to_vec();
    b.iter_mut().for_each(fix);
    dequantized(b)
}

fn dequantized<B: BlockFormat>(b: Vec<B>) -> (Vec<B>, Vec<f32>) {
    let mut back = vec![0.0; b.len() * B::QK];
    dequantize_row(&b, &mut back);
    (b, back)
}

pub fn q8_0(v: &[f32]) -> (Vec<BlockQ8_0>, Vec<f32>) {
    let mut b = vec![BlockQ8_0::default(); v.len() / 32];
    dot::quantize_row_q8_0(v, &mut b);
    let back = b.iter().flat_map(|blk| blk.qs.map(|q| f32::from(q as i8) * blk.d.to_f32())).collect();
    (b, back)
}

pub fn q8_k(v: &[f32]) -> (Vec<BlockQ8K>, Vec<f32>) {
    let mut b = vec![BlockQ8K::default(); v.len() / 256];
    quantize_row_q8_k(v, &mut b);
    let back = b.iter().flat_map(|blk| (0..256).map(|i| f32::from(blk.quant(i)) * blk.scale())).collect();
    (b, back)
}

fn as_bytes<T>(v: &[T]) -> &[u8] {
    // SAFETY: the block types are plain bytes (the `VecDot` contract).
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Checks every tile shape of `T`, scalar and SIMD, through [`DotKernel`] (so the type's
/// registration too), against f64 products of the dequantized rows: `xs` are 4 weight
/// rows, `ys` at least 2 activation rows (as many as the kernel's widest tile takes are
/// used), each with its values.
pub fn check<T: VecDot>(xs: &[(Vec<T>, Vec<f32>)], ys: &[(Vec<T::Rhs>, Vec<f32>)], what: &str) {
    let n = xs[0].1.len();
    let k = DotKernel::for_type(T::TYPE).expect("registered");
    assert_eq!(k.vec_dot_type, T::VEC_DOT_TYPE);
    let xb: Vec<&[u8]> = xs.iter().map(|x| as_bytes(&x.0)).collect();
    let yb: Vec<&[u8]> = ys.iter().map(|y| as_bytes(&y.0)).collect();
    for simd in [false, true] {
        // the kernel's widest tile where it has AVX-512 ones, on the scalar path too
        for nr in 1..=MAX_ROWS {
            for nc in 1..=k.cols().min(ys.len()) {
                let mut out = [f32::NAN; MAX_ROWS * MAX_WIDE_COLS];
                k.tile(n, &xb[..nr], &yb[..nc], &mut out, simd);
                close(xs, ys, nc, &out[..nr * nc], &format!("{} {what} simd={simd} {nr}x{nc} tile", T::TYPE.name()));
            }
        }
    }
    // The AVX2 tile on its own, which the line above does not reach on AVX-512 machines
    // for formats with tiles of both.
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::features::features().has_avx2_fma() {
        let x: [&[T]; 4] = std::array::from_fn(|r| xs[r].0.as_slice());
        let y: [&[T::Rhs]; 2] = std::array::from_fn(|c| ys[c].0.as_slice());
        // SAFETY: the processor supports AVX2, FMA and F16C (checked just above).
        let out = unsafe { T::tile_avx2::<4, 2>(&x, &y) };
        close(xs, ys, 2, out.as_flattened(), &format!("{} {what} AVX2 4x2 tile", T::TYPE.name()));
    }
}

/// Asserts that `out[r * nc + c]`, for each row r of `xs` and column c of the first `nc`
/// of `ys`, is their product's f64 value to within rounding.
fn close<T, Y>(xs: &[(Vec<T>, Vec<f32>)], ys: &[(Vec<Y>, Vec<f32>)], nc: usize, out: &[f32], what: &str) {
    for r in 0..out.len() / nc {
        for c in 0..nc {
            let (x, y) = (&xs[r].1, &ys[c].1);
            let exact: f64 = x.iter().zip(y).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum();
            let size: f64 = x.iter().zip(y).map(|(&a, &b)| f64::from(a * b).abs()).sum();
            let got = f64::from(out[r * nc + c]);
            assert!((got - exact).abs() <= 2e-6 * size + 1e-6, "{what}, [{r}][{c}]: {got} vs {exact}");
        }
    }
}

/// [`check`] on 4 weight rows from `x(seed)` and [`MAX_WIDE_COLS`] activation rows from
/// `y(values)`.
pub fn check_rows<T: VecDot>(
    n: usize,
    what: &str,
    x: impl Fn(u32) -> (Vec<T>, Vec<f32>),
    y: impl Fn(&[f32]) -> (Vec<T::Rhs>, Vec<f32>),
) {
    let xs: Vec<_> = (0..4).map(|r| x(r + 1)).collect();
    let ys: Vec<_> = (0..MAX_WIDE_COLS as u32).map(|c| y(&values(n, 100 + c))).collect();
    check::<T>(&xs, &ys, what);
}

/// Q8_0 activations grouped `N` blocks to a unit.
pub fn q8_0_groups<const N: usize>(v: &[f32]) -> (Vec<[BlockQ8_0; N]>, Vec<f32>) {
    let (b, back) = q8_0(v);
    (b.chunks_exact(N).map(|g| std::array::from_fn(|k| g[k])).collect(), back)
}
