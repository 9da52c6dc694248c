//! Dot products of the K-quant weight formats with Q8_K activations (ggml's
//! `ggml_vec_dot_qN_K_q8_K`), super-blocks of 256 values on both sides:
//!
//! | weight | per super-block, over sub-blocks s of 16 values |
//! |--------|-------------------------------------------------|
//! | Q2_K   | `dy·(d·Σ sc(s)·Σ q·y − dmin·Σ m(s)·bsum(s))`, q in 0..3 |
//! | Q3_K   | `dy·d·Σ sc(s)·Σ q·y`, q in −4..3, sc in −32..31 |
//! | Q4_K   | as Q2_K, q in 0..15, sc and m shared by pairs of sub-blocks |
//! | Q5_K   | as Q4_K, q in 0..31 |
//! | Q6_K   | as Q3_K, q in −32..31, sc a signed byte |
//!
//! `bsum(s)` is the sum of the activations of sub-block s, which Q8_K stores, so the minimums
//! cost one product per sub-block rather than one per value. The integer sums are exact; only
//! the scaling and the sum over super-blocks are in `f32`.
//!
//! Each format's file holds its scalar product, the reference, and how the AVX2 tiles read its
//! super-block (`KBlock`); the helpers here serve the scalar products of several formats. The
//! AVX2 tiles ([`avx2`]) keep the weights' levels unsigned (the offsets of Q3_K and Q6_K are
//! taken off through `bsum` as well), so that `maddubs` multiplies them with the signed
//! activations, and decode each weight super-block once for all the activation rows of the
//! tile.

use super::VecDot;
use crate::core::types::Type;
use crate::quants::k_quants::{BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K, QK_K, scale_min};

/// The AVX2 half of a format's [`VecDot`] impl: every K-quant runs the generic tiles of
/// [`avx2`] over its `KBlock`, so the five impls say it with this one line.
macro_rules! avx2_tiles_from_kblock {
    () => {
        #[cfg(target_arch = "x86_64")]
        unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[BlockQ8K]; C]) -> [[f32; C]; R] {
            // SAFETY: the caller vouches for AVX2, FMA and F16C, all that `tile` needs.
            unsafe { avx2::tile(x, y) }
        }

        #[cfg(target_arch = "x86_64")]
        unsafe fn column_avx2(x: &[&[Self]], y: &[BlockQ8K], out: &mut [f32]) {
            // SAFETY: the caller vouches for AVX2, FMA and F16C, all that `column` needs.
            unsafe { avx2::column(x, y, out) }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2;
mod q2_k;
mod q3_k;
mod q4_k;
mod q5_k;
mod q6_k;

/// Values per sub-block of 16, the unit of the Q8_K `bsums`.
const SUB: usize = 16;

/// `Σ scale(s)·Σ level(i)·y(i)` over the 16 sub-blocks of a super-block: its integer part.
fn scaled_sum(y: &BlockQ8K, scale: impl Fn(usize) -> i32, level: impl Fn(usize) -> i32) -> i32 {
    (0..QK_K / SUB)
        .map(|s| {
            let sum: i32 = (SUB * s..SUB * (s + 1)).map(|i| level(i) * i32::from(y.quant(i))).sum();
            scale(s) * sum
        })
        .sum()
}

/// `Σ min(s)·bsum(s)` over the 16 sub-blocks: the minimums' integer part.
fn min_sum(y: &BlockQ8K, min: impl Fn(usize) -> i32) -> i32 {
    (0..QK_K / SUB).map(|s| min(s) * i32::from(y.bsum(s))).sum()
}

/// Field `k` (0..3) of width `bits` of byte `l`, for value `l + 32k` of a 128-value half
/// whose bytes are `q` (the layout of the 2-bit levels and of the Q6_K high bits).
#[inline]
fn field(q: &[u8], l: usize, k: usize, bits: usize) -> i32 {
    i32::from((q[l] >> (bits * k)) & ((1 << bits) - 1))
}

/// The 2-bit level of value `i` of a super-block (Q2_K, Q3_K).
#[inline]
fn two_bit(qs: &[u8; QK_K / 4], i: usize) -> i32 {
    field(&qs[32 * (i / 128)..], i % 32, i % 128 / 32, 2)
}

/// The low nibble of value `i` (Q4_K, Q5_K): values `64p..64p+32` in the low nibbles of bytes
/// `32p..32p+32`, the next 32 in their high nibbles.
#[inline]
fn nibble(qs: &[u8; QK_K / 2], i: usize) -> i32 {
    i32::from((qs[32 * (i / 64) + i % 32] >> (4 * (i / 32 % 2))) & 0x0f)
}

/// Bit `i / 32` of byte `i % 32`: the extra bit of value `i` (Q3_K `hmask`, Q5_K `qh`).
#[inline]
fn high_bit(bits: &[u8; QK_K / 8], i: usize) -> i32 {
    i32::from((bits[i % 32] >> (i / 32)) & 1)
}

/// The scaled sum of Q4_K / Q5_K levels and their minimums' sum (6-bit scales and minimums
/// per 32 values).
fn affine_sums(scales: &[u8; 12], y: &BlockQ8K, level: impl Fn(usize) -> i32) -> (i32, i32) {
    let isum = scaled_sum(y, |s| i32::from(scale_min(scales, s / 2).0), level);
    let msum = min_sum(y, |s| i32::from(scale_min(scales, s / 2).1));
    (isum, msum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::dot::DotKernel;
    use crate::quants::half::Half;
    use crate::quants::k_quants::quantize_row_q8_k;
    use crate::quants::{BlockFormat, dequantize_row, quantize_row};

    /// A deterministic stream of pseudo-random words.
    fn words(seed: u32) -> impl FnMut() -> u32 {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(12_345);
        move || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            s
        }
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut next = words(seed);
        (0..n).map(|_| (next() >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0).collect()
    }

    fn bytes<const N: usize>(next: &mut impl FnMut() -> u32) -> [u8; N] {
        std::array::from_fn(|_| (next() >> 24) as u8)
    }

    /// A positive binary16 scale between 2^-8 and 2^-6.
    fn small_scale(next: &mut impl FnMut() -> u32) -> Half {
        Half::from_f32((1.0 + (next() >> 24) as f32 / 256.0) / 256.0 * (1 << (next() >> 30 & 1)) as f32)
    }

    /// Blocks of random bits (with sane super-block scales): every level, scale and minimum
    /// a format can encode, including those its quantizer never writes.
    trait RandomBlock: Sized {
        fn random(next: &mut impl FnMut() -> u32) -> Self;
    }

    impl RandomBlock for BlockQ2K {
        fn random(next: &mut impl FnMut() -> u32) -> Self {
            BlockQ2K { scales: bytes(next), qs: bytes(next), d: small_scale(next), dmin: small_scale(next) }
        }
    }

    impl RandomBlock for BlockQ3K {
        fn random(next: &mut impl FnMut() -> u32) -> Self {
            BlockQ3K { hmask: bytes(next), qs: bytes(next), scales: bytes(next), d: small_scale(next) }
        }
    }

    impl RandomBlock for BlockQ4K {
        fn random(next: &mut impl FnMut() -> u32) -> Self {
            BlockQ4K { d: small_scale(next), dmin: small_scale(next), scales: bytes(next), qs: bytes(next) }
        }
    }

    impl RandomBlock for BlockQ5K {
        fn random(next: &mut impl FnMut() -> u32) -> Self {
            let (d, dmin) = (small_scale(next), small_scale(next));
            BlockQ5K { d, dmin, scales: bytes(next), qh: bytes(next), qs: bytes(next) }
        }
    }

    impl RandomBlock for BlockQ6K {
        fn random(next: &mut impl FnMut() -> u32) -> Self {
            BlockQ6K { ql: bytes(next), qh: bytes(next), scales: bytes(next), d: small_scale(next) }
        }
    }

    /// A weight row: its blocks and their values.
    type Row<B> = (Vec<B>, Vec<f32>);

    fn dequantized<B: BlockFormat>(blocks: Vec<B>) -> Row<B> {
        let mut back = vec![0.0; blocks.len() * B::QK];
        dequantize_row(&blocks, &mut back);
        (blocks, back)
    }

    fn quantized<B: BlockFormat>(v: &[f32]) -> Row<B> {
        let mut blocks = vec![B::default(); v.len() / B::QK];
        quantize_row(v, &mut blocks);
        dequantized(blocks)
    }

    fn random_row<B: BlockFormat + RandomBlock>(n: usize, seed: u32) -> Row<B> {
        let mut next = words(seed);
        dequantized((0..n / QK_K).map(|_| B::random(&mut next)).collect())
    }

    /// Activations as the matrix product makes them; `extreme` pushes most quants to ±127.
    fn activations(n: usize, seed: u32, extreme: bool) -> Row<BlockQ8K> {
        let mut v = values(n, seed);
        if extreme {
            v.iter_mut().for_each(|x| *x = x.signum() * (0.9 + 0.1 * x.abs()));
        }
        let mut blocks = vec![BlockQ8K::default(); n / QK_K];
        quantize_row_q8_k(&v, &mut blocks);
        dequantized(blocks)
    }

    /// Checks the scalar product and every tile shape on both paths against f64 products of the
    /// dequantized rows, for 4 weight rows and 2 activation rows.
    fn check<B: VecDot<Rhs = BlockQ8K>>(xs: &[Row<B>; 4], ys: &[Row<BlockQ8K>; 2]) {
        let x: [&[B]; 4] = std::array::from_fn(|r| xs[r].0.as_slice());
        let y: [&[BlockQ8K]; 2] = std::array::from_fn(|c| ys[c].0.as_slice());
        let scalar = B::tile::<4, 2>(&x, &y, false);
        let fast = B::tile::<4, 2>(&x, &y, true);
        // generation's one-column products, which go their own way (`column_on`)
        let column: [[f32; 4]; 2] = std::array::from_fn(|c| {
            let mut out = [0.0; 4];
            B::column_on(crate::cpu::kernels::dot::Path::of::<B>(true), &x, y[c], &mut out);
            out
        });
        for r in 0..4 {
            for c in 0..2 {
                let (a, b) = (&xs[r].1, &ys[c].1);
                let exact: f64 = a.iter().zip(b).map(|(&p, &q)| f64::from(p) * f64::from(q)).sum();
                let magnitude: f64 = a.iter().zip(b).map(|(&p, &q)| f64::from(p * q).abs()).sum();
                let tol = 1e-5 * magnitude + 1e-6;
                let name = B::TYPE.name();
                let s = f64::from(scalar[r][c]);
                let f = f64::from(fast[r][c]);
                assert!((s - exact).abs() < tol, "{name} scalar {r},{c}: {s} vs {exact}");
                assert!((f - exact).abs() < tol, "{name} simd {r},{c}: {f} vs {exact}");
                let one = f64::from(column[c][r]);
                assert!((one - exact).abs() < tol, "{name} column {r},{c}: {one} vs {exact}");
                assert!((f - s).abs() < tol, "{name} scalar {s} vs simd {f}");
                assert_eq!(B::dot_scalar(x[r], y[c]).to_bits(), scalar[r][c].to_bits());
            }
        }
        macro_rules! shapes {
            ($(($nr:literal, $nc:literal, $c0:literal)),*) => {$(
                let rows: [&[B]; $nr] = std::array::from_fn(|r| x[r]);
                let cols: [&[BlockQ8K]; $nc] = std::array::from_fn(|c| y[$c0 + c]);
                let part = B::tile::<$nr, $nc>(&rows, &cols, true);
                for r in 0..$nr {
                    for c in 0..$nc {
                        let full = fast[r][$c0 + c];
                        assert!(
                            (part[r][c] - full).abs() <= 1e-6 * (1.0 + full.abs()),
                            "{} {}x{} tile: {} vs {full}", B::TYPE.name(), $nr, $nc, part[r][c]
                        );
                    }
                }
            )*};
        }
        shapes!((1, 1, 1), (2, 1, 0), (3, 1, 1), (4, 1, 0), (1, 2, 0), (2, 2, 0), (3, 2, 0));
    }

    fn check_format<B: VecDot<Rhs = BlockQ8K> + BlockFormat + RandomBlock>() {
        for (n, extreme) in [(256, false), (768, true), (2048, false)] {
            let ys: [Row<BlockQ8K>; 2] = std::array::from_fn(|c| activations(n, 20 + c as u32, extreme));
            let random: [Row<B>; 4] = std::array::from_fn(|r| random_row(n, 10 + r as u32));
            check(&random, &ys);
            let quantized: [Row<B>; 4] = std::array::from_fn(|r| quantized(&values(n, 30 + r as u32)));
            check(&quantized, &ys);
        }
    }

    #[test]
    fn q2_k_matches_f64() {
        check_format::<BlockQ2K>();
    }

    #[test]
    fn q3_k_matches_f64() {
        check_format::<BlockQ3K>();
    }

    #[test]
    fn q4_k_matches_f64() {
        check_format::<BlockQ4K>();
    }

    #[test]
    fn q5_k_matches_f64() {
        check_format::<BlockQ5K>();
    }

    #[test]
    fn q6_k_matches_f64() {
        check_format::<BlockQ6K>();
    }

    /// The AVX2 tiles, which `check` does not reach on processors with VNNI, against the VNNI
    /// ones of this processor's encoding (checked there): the same integer sums, added up in
    /// other lanes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_and_vnni_tiles_agree() {
        use crate::cpu::features::{Vnni, features};
        if features().vnni() == Vnni::None {
            return;
        }
        fn agree<B: avx2::KBlock + BlockFormat + RandomBlock>() {
            let xs: Vec<Row<B>> = (0..4).map(|r| random_row(512, 40 + r)).collect();
            let ys: Vec<Row<BlockQ8K>> = (0..2).map(|c| activations(512, 50 + c, true)).collect();
            let x: [&[B]; 4] = std::array::from_fn(|r| xs[r].0.as_slice());
            let y: [&[BlockQ8K]; 2] = std::array::from_fn(|c| ys[c].0.as_slice());
            // SAFETY: AVX2, FMA, F16C and the VNNI encoding taken were checked above.
            // (`avx2::tile` takes this processor's VNNI tiles)
            let (a, b) = unsafe { (avx2::tiles_avx2::tile(&x, &y), avx2::tile(&x, &y)) };
            for r in 0..4 {
                for c in 0..2 {
                    let magnitude: f32 = xs[r].1.iter().zip(&ys[c].1).map(|(&p, &q)| (p * q).abs()).sum();
                    assert!(
                        (a[r][c] - b[r][c]).abs() <= 1e-6 * magnitude,
                        "{}: {} vs {}",
                        B::TYPE.name(),
                        a[r][c],
                        b[r][c]
                    );
                }
            }
        }
        agree::<BlockQ2K>();
        agree::<BlockQ3K>();
        agree::<BlockQ4K>();
        agree::<BlockQ5K>();
        agree::<BlockQ6K>();
    }

    #[test]
    fn registered_with_q8_k_activations() {
        for ty in [Type::Q2_K, Type::Q3_K, Type::Q4_K, Type::Q5_K, Type::Q6_K] {
            let k = DotKernel::for_type(ty).unwrap();
            assert_eq!((k.type_, k.vec_dot_type), (ty, Type::Q8_K));
            let traits = crate::ffi::cpu_kernels::type_traits::type_traits_cpu(ty);
            assert_eq!(traits.vec_dot_type, Type::Q8_K);
            assert!(traits.vec_dot.is_some() && traits.from_float.is_some());
        }
        // through the erased face: raw bytes of a Q4_K row and a Q8_K row
        let (x, _) = random_row::<BlockQ4K>(512, 7);
        let (y, _) = activations(512, 8, false);
        // SAFETY: the blocks are plain bytes.
        let (xb, yb) = unsafe {
            (
                std::slice::from_raw_parts(x.as_ptr().cast::<u8>(), std::mem::size_of_val(x.as_slice())),
                std::slice::from_raw_parts(y.as_ptr().cast::<u8>(), std::mem::size_of_val(y.as_slice())),
            )
        };
        let k = DotKernel::for_type(Type::Q4_K).unwrap();
        assert_eq!(k.dot(512, xb, yb, false).to_bits(), BlockQ4K::dot_scalar(&x, &y).to_bits());
    }
}
