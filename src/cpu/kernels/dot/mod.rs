//! Dot products between a weight row and an activation row (ggml's `vec_dot`), one
//! implementation per weight format, each paired with the format its activations are
//! converted to (its `vec_dot_type`). The files follow `crate::quants`, one per format
//! family, each with the family's scalar reference and its SIMD tiles side by side; the x86
//! building blocks several families share are in [`x86`](super::x86).
//!
//! | weight | activations | per block |
//! |--------|-------------|-----------|
//! | F32    | F32         | |
//! | F16    | F16         | |
//! | BF16   | BF16        | |
//! | Q4_0   | Q8_0        | `dx·dy·Σ (qx-8)·qy` |
//! | Q4_1   | Q8_1        | `dx·dy·Σ qx·qy + mx·sy` |
//! | Q5_0   | Q8_0        | `dx·dy·Σ (qx-16)·qy` |
//! | Q5_1   | Q8_1        | `dx·dy·Σ qx·qy + mx·sy` |
//! | Q8_0   | Q8_0        | `dx·dy·Σ qx·qy` |
//! | TQ1_0, TQ2_0 | Q8_K | see `ternary` |
//! | MXFP4, NVFP4 | Q8_0 | see `fp4` |
//! | Q1_0, Q2_0 | Q8_0 | see `low_bit` |
//! | IQ4_NL  | Q8_0        | `dx·dy·Σ L[q]·qy` over 16 fixed levels L |
//! | IQ4_XS  | Q8_K        | `dx·dy·Σ (s-32)·Σ L[q]·qy`, a 6-bit scale s per 32 |
//! | IQ3_S   | Q8_K        | `dx·dy·Σ (2s+1)·Σ ±g·qy`, g from a 512-point grid of 4 |
//! | IQ3_XXS | Q8_K        | `dx·dy/4·Σ (2s+1)·Σ ±g·qy`, 256-point grid of 4 |
//! | IQ2_S   | Q8_K        | `dx·dy/8·Σ (2s+1)·Σ ±g·qy`, 1024-point grid of 8 |
//! | IQ2_XS  | Q8_K        | same, 512-point grid, 7 stored signs of 8 |
//! | IQ2_XXS | Q8_K        | same, 256-point grid, a scale per 32 |
//! | IQ1_S   | Q8_K        | `dx·dy/8·Σ (2s+1)·Σ (8g±1)·qy`, g in -1..1 from a 2048-point grid |
//! | IQ1_M   | Q8_K        | same, a shift sign per 8 and a scale per 16 |
//! | Q2_K..Q6_K | Q8_K     | see `k_quants` |
//!
//! Besides the single product, every format computes a small tile: up to [`MAX_ROWS`] weight
//! rows against up to [`MAX_COLS`] activation rows in one pass, so that a matrix product
//! decodes each weight block once for several columns and loads each activation block once
//! for several rows. The scalar path is the reference; the AVX2 path is chosen at run time,
//! and on processors with AVX-VNNI the integer tiles sum byte products with `vpdpbusd`
//! (the same sums, so the same results). The SIMD tiles of the 32-value block formats (AVX2,
//! and the AVX-512 lane tiles) sum as ggml's x86 builds do, in eight lane chains, so their
//! results are ggml's bit for bit.
//!
//! The I-quants' scalar references follow ggml's generic `ggml_vec_dot_*` arithmetic
//! (whole-integer sums per sub-block, scaled in `f32`, see [`whole`]). Their AVX2 tiles decode
//! each 32 weights to signed bytes: fixed levels through a `pshufb` table, grid points by
//! loading their precomputed bytes ([`grids`]), signs by spreading bits to bytes. For the
//! 1-bit formats the ±1/8 shift is folded into the bytes (8g±1), which keeps the sums whole.
//! Where the processor has AVX512-VBMI, the 2- and 3-bit grids are read from registers, or
//! loaded point by point from a vector of indices, instead.
//!
//! [`quantize_row_q8_0`] and [`quantize_row_q8_1`] convert activations: they produce the bytes
//! of ggml's CPU quantizers on x86 (scale `127/amax`, rounding half to even), on both paths.
//!
//! [`DotKernel`] is the type-erased face the matrix kernels use: byte rows in, floats out.

use crate::core::types::Type;
use crate::cpu::features::Isa;
use crate::quants::formats::with_weight_format;
use crate::quants::half::Bf16;
use crate::quants::k_quants::QK_K;

mod float;
mod fp4;
pub(crate) mod grids;
mod iq1;
mod iq2;
mod iq3;
mod iq4;
mod k_quants;
mod low_bit;
mod q4;
mod q5;
mod q8;
mod ternary;
#[cfg(test)]
pub(crate) mod test_support;
pub(crate) mod whole;

pub use q8::{quantize_row_q8_0, quantize_row_q8_1, scalar};

/// The most weight rows a tile covers.
pub const MAX_ROWS: usize = 4;
/// The most weight rows one [`DotKernel::tile`] call takes: its tiles then run back to back
/// on the same activation rows, with the rows' views and the dispatch paid once.
pub const MAX_PANEL_ROWS: usize = 16;
/// The most activation rows every format's tile covers.
pub const MAX_COLS: usize = 2;
/// The most activation rows a tile covers: the formats with AVX-512 tiles take up to
/// [`VecDot::AVX512_COLS`] on such processors ([`DotKernel::cols`]).
pub const MAX_WIDE_COLS: usize = 6;

/// The tile a format's products take on this processor: its AVX-512 tile, its AVX2 tile, or
/// the scalar one. Made only by [`Path::of`], which checks the processor (so holding an
/// `Avx512` or `Avx2` path is what makes running those tiles sound).
#[derive(Clone, Copy)]
pub struct Path(Isa);

impl Path {
    /// The fastest tile of `T` here, or the scalar one unless `simd`.
    pub fn of<T: VecDot>(simd: bool) -> Path {
        #[cfg(target_arch = "x86_64")]
        {
            let vbmi = !T::AVX512_VBMI || crate::cpu::features::features().avx512vbmi;
            if simd && T::AVX512_COLS > 0 && crate::cpu::features::features().has_avx512() && vbmi {
                return Path(Isa::Avx512);
            }
            if simd && crate::cpu::features::features().has_avx2_fma() {
                return Path(Isa::Avx2);
            }
        }
        let _ = simd;
        Path(Isa::Scalar)
    }

    /// Whether this is an AVX-512 tile (which may take [`VecDot::AVX512_COLS`] columns).
    fn is_avx512(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return matches!(self.0, Isa::Avx512);
        #[cfg(not(target_arch = "x86_64"))]
        false
    }
}

/// A weight format's dot product with its activation format.
///
/// # Safety
/// `Self` and `Rhs` must be plain data: no padding, every bit pattern valid, no interior
/// mutability. [`DotKernel`] views tensor bytes as slices of them (after checking length and
/// alignment).
pub unsafe trait VecDot: Copy + 'static {
    /// The storage unit of the activation rows.
    type Rhs: Copy + 'static;
    /// The weight type.
    const TYPE: Type;
    /// The activation type (`vec_dot_type`).
    const VEC_DOT_TYPE: Type;
    /// Values per storage unit, on both sides.
    const QK: usize;

    /// The reference product of two rows of the same number of units.
    fn dot_scalar(x: &[Self], y: &[Self::Rhs]) -> f32;

    /// `out[r][c] = dot(x[r], y[c])` for rows of the same number of units.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[Self::Rhs]; C]) -> [[f32; C]; R];

    /// The activation rows of this format's AVX-512 tile ([`VecDot::tile_avx512`]), up to
    /// [`MAX_WIDE_COLS`]; 0 for formats without one.
    const AVX512_COLS: usize = 0;

    /// Whether the AVX-512 tile also needs AVX512-VBMI (`vpermb`, `vpmultishiftqb`).
    const AVX512_VBMI: bool = false;

    /// `out[r][c] = dot(x[r], y[c])` with AVX-512, for formats whose `AVX512_COLS` is not 0.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA, F16C and the AVX-512 subsets of
    /// [`Features::has_avx512`](crate::cpu::features::Features::has_avx512), and VBMI where
    /// `AVX512_VBMI` says so.
    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[Self::Rhs]; C]) -> [[f32; C]; R] {
        // SAFETY: AVX-512 processors have AVX2, FMA and F16C.
        unsafe { Self::tile_avx2(x, y) }
    }

    /// `out[r][c] = dot(x[r], y[c])`, on the SIMD path when `simd` is set and the processor
    /// has one.
    fn tile<const R: usize, const C: usize>(x: &[&[Self]; R], y: &[&[Self::Rhs]; C], simd: bool) -> [[f32; C]; R] {
        Self::tile_on(Path::of::<Self>(simd), x, y)
    }

    /// [`VecDot::tile`] on a path already chosen, for callers that run many tiles.
    #[inline]
    fn tile_on<const R: usize, const C: usize>(path: Path, x: &[&[Self]; R], y: &[&[Self::Rhs]; C]) -> [[f32; C]; R] {
        let n = x.first().map_or(0, |row| row.len());
        crate::ggml_assert!(
            x.iter().all(|row| row.len() == n) && y.iter().all(|row| row.len() == n),
            "vec_dot: rows of different lengths"
        );
        match path.0 {
            // SAFETY: `Path::of` checked that the processor supports AVX2, FMA, F16C and AVX-512
            // (with VBMI where the format asks for it).
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { Self::tile_avx512(x, y) },
            // SAFETY: `Path::of` checked that the processor supports AVX2, FMA and F16C.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { Self::tile_avx2(x, y) },
            _ => std::array::from_fn(|r| std::array::from_fn(|c| Self::dot_scalar(x[r], y[c]))),
        }
    }

    /// Whether a product of activation rows of `n` values with `cols` of them goes a column at
    /// a time through [`VecDot::column_on`] instead of through the tiles: by default
    /// generation's one-column products of the super-block formats. A block is work enough
    /// for a tile on its own, and the hardware prefetcher follows the one row each load
    /// instruction then reads; rows interleaved in a loop defeat it (on Zen 4 a Q6_K
    /// 32000×1024 product took 1.95 ms so, 1.26 ms row by row, against ggml's 1.20).
    fn by_columns(n: usize, cols: usize) -> bool {
        let _ = n;
        cols == 1 && Self::QK == QK_K
    }

    /// `out[r] = dot(x[r], y)` for each weight row against one activation row, on the AVX2
    /// path: generation's product, one row after the other. Formats whose tile sets up more
    /// than a block's work (constants, dispatch on VNNI) override it to pay that once.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    unsafe fn column_avx2(x: &[&[Self]], y: &[Self::Rhs], out: &mut [f32]) {
        for (row, out) in x.iter().zip(out) {
            // SAFETY: the caller's contract.
            *out = unsafe { Self::tile_avx2::<1, 1>(&[row], &[y]) }[0][0];
        }
    }

    /// [`VecDot::column_avx2`] on the AVX-512 path.
    ///
    /// # Safety
    /// As for [`VecDot::tile_avx512`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn column_avx512(x: &[&[Self]], y: &[Self::Rhs], out: &mut [f32]) {
        for (row, out) in x.iter().zip(out) {
            // SAFETY: the caller's contract.
            *out = unsafe { Self::tile_avx512::<1, 1>(&[row], &[y]) }[0][0];
        }
    }

    /// `out[r] = dot(x[r], y)` for each weight row, on a path already chosen.
    fn column_on(path: Path, x: &[&[Self]], y: &[Self::Rhs], out: &mut [f32]) {
        crate::ggml_assert!(x.iter().all(|row| row.len() == y.len()), "vec_dot: rows of different lengths");
        crate::ggml_assert!(out.len() >= x.len(), "vec_dot: output too short");
        match path.0 {
            // SAFETY: as in `tile_on`.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { Self::column_avx512(x, y, out) },
            // SAFETY: as in `tile_on`.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { Self::column_avx2(x, y, out) },
            _ => x.iter().zip(out).for_each(|(row, out)| *out = Self::dot_scalar(row, y)),
        }
    }

    /// One product, on the SIMD path when `simd` is set and the processor has one.
    fn dot(x: &[Self], y: &[Self::Rhs], simd: bool) -> f32 {
        Self::tile::<1, 1>(&[x], &[y], simd)[0][0]
    }
}

// ---------------------------------------------------------------------------------------------
// The type-erased face

type TileFn = fn(n: usize, xs: &[&[u8]], ys: &[&[u8]], out: &mut [f32], simd: bool);

/// The dot products of one weight type over raw rows, as the matrix kernels call them.
#[derive(Clone, Copy)]
pub struct DotKernel {
    /// The weight type.
    pub type_: Type,
    /// The type activations must be in (`vec_dot_type`).
    pub vec_dot_type: Type,
    tile: TileFn,
    cols: usize,
}

impl std::fmt::Debug for DotKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DotKernel({} · {})", self.type_.name(), self.vec_dot_type.name())
    }
}

impl DotKernel {
    /// The kernel for weights of type `ty`, if there is one: the float types' and every weight
    /// format's (each implements [`VecDot`]).
    pub fn for_type(ty: Type) -> Option<DotKernel> {
        Some(match ty {
            Type::F32 => DotKernel::of::<f32>(),
            Type::F16 => DotKernel::of::<u16>(),
            Type::BF16 => DotKernel::of::<Bf16>(),
            _ => with_weight_format!(ty, kernel_of(), _ => return None),
        })
    }

    /// The kernel of weights in `T`.
    pub fn of<T: VecDot>() -> DotKernel {
        let cols = if Path::of::<T>(true).is_avx512() { T::AVX512_COLS } else { MAX_COLS };
        DotKernel { type_: T::TYPE, vec_dot_type: T::VEC_DOT_TYPE, tile: erased_tile::<T>, cols }
    }

    /// The most activation rows [`DotKernel::tile`] takes: [`MAX_COLS`], or more for the
    /// formats with AVX-512 tiles on processors that run them.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// `out[r·ys.len() + c] = xs[r] · ys[c]` over `n` values: `xs` are rows of the weight type,
    /// `ys` rows of the activation type, each at least `n` values long; 1 to
    /// [`MAX_PANEL_ROWS`] rows (in tiles of [`MAX_ROWS`]) and 1 to [`DotKernel::cols`]
    /// columns. `simd` allows the SIMD path.
    pub fn tile(&self, n: usize, xs: &[&[u8]], ys: &[&[u8]], out: &mut [f32], simd: bool) {
        (self.tile)(n, xs, ys, out, simd);
    }

    /// One product of `n` values.
    pub fn dot(&self, n: usize, x: &[u8], y: &[u8], simd: bool) -> f32 {
        let mut out = [0.0f32];
        (self.tile)(n, &[x], &[y], &mut out, simd);
        out[0]
    }
}

/// The type the CPU's matrix product converts activations to for weights of type `ty`
/// (ggml's `vec_dot_type`): the float types and Q8_1 their own, each weight format its dot
/// product's [`VecDot::VEC_DOT_TYPE`], every other type F32.
pub fn vec_dot_type(ty: Type) -> Type {
    fn of<T: VecDot>() -> Type {
        T::VEC_DOT_TYPE
    }
    match ty {
        Type::F32 | Type::F16 | Type::BF16 | Type::Q8_1 => ty,
        _ => with_weight_format!(ty, of(), _ => Type::F32),
    }
}

/// [`DotKernel::of`] as a plain function, for the dispatch of [`DotKernel::for_type`].
fn kernel_of<T: VecDot>() -> DotKernel {
    DotKernel::of::<T>()
}

/// Views the first `units` units of a byte row as `T`s. (Always inlined: a panel views
/// twenty rows, and on rows of 64 values the calls cost a tenth of the product.)
#[inline(always)]
fn view<T: Copy>(bytes: &[u8], units: usize) -> &[T] {
    let size = std::mem::size_of::<T>();
    crate::ggml_assert!(bytes.len() >= units * size, "vec_dot: row of {} bytes is too short", bytes.len());
    crate::ggml_assert!((bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()), "vec_dot: misaligned row");
    // SAFETY: length and alignment are checked above; `T` is plain data (the `VecDot`
    // contract), valid for any bytes; the lifetime is the input's.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), units) }
}

fn erased_tile<T: VecDot>(n: usize, xs: &[&[u8]], ys: &[&[u8]], out: &mut [f32], simd: bool) {
    crate::ggml_assert!(n.is_multiple_of(T::QK), "vec_dot: {} values are not whole {} blocks", n, T::TYPE.name());
    let (rows, cols) = (xs.len(), ys.len());
    crate::ggml_assert!(rows <= MAX_PANEL_ROWS && cols <= MAX_WIDE_COLS, "vec_dot: no {}x{} panel", rows, cols);
    crate::ggml_assert!(out.len() >= rows * cols, "vec_dot: output too short");
    let units = n / T::QK;
    let mut x: [&[T]; MAX_PANEL_ROWS] = [&[]; MAX_PANEL_ROWS];
    for (v, bytes) in x.iter_mut().zip(xs) {
        *v = view::<T>(bytes, units);
    }
    let mut y: [&[T::Rhs]; MAX_WIDE_COLS] = [&[]; MAX_WIDE_COLS];
    for (v, bytes) in y.iter_mut().zip(ys) {
        *v = view::<T::Rhs>(bytes, units);
    }
    fn run<T: VecDot, const R: usize, const C: usize>(x: &[&[T]], y: &[&[T::Rhs]], out: &mut [f32], path: Path) {
        let x: &[&[T]; R] = x[..R].try_into().expect("R rows");
        let y: &[&[T::Rhs]; C] = y[..C].try_into().expect("C columns");
        let res = T::tile_on::<R, C>(path, x, y);
        for r in 0..R {
            out[r * C..(r + 1) * C].copy_from_slice(&res[r]);
        }
    }
    // (chosen once: per tile, the checks cost as much as a short row's products)
    let path = Path::of::<T>(simd);
    if T::by_columns(n, cols) {
        if cols == 1 {
            T::column_on(path, &x[..rows], y[0], out);
            return;
        }
        let mut column = [0.0f32; MAX_PANEL_ROWS];
        for (c, y) in y[..cols].iter().enumerate() {
            T::column_on(path, &x[..rows], y, &mut column);
            for (r, v) in column[..rows].iter().enumerate() {
                out[r * cols + c] = *v;
            }
        }
        return;
    }
    for r0 in (0..rows).step_by(MAX_ROWS) {
        let (x, out) = (&x[r0..], &mut out[r0 * cols..]);
        match ((rows - r0).min(MAX_ROWS), cols) {
            (1, 1) => run::<T, 1, 1>(x, &y, out, path),
            (2, 1) => run::<T, 2, 1>(x, &y, out, path),
            (3, 1) => run::<T, 3, 1>(x, &y, out, path),
            (4, 1) => run::<T, 4, 1>(x, &y, out, path),
            (1, 2) => run::<T, 1, 2>(x, &y, out, path),
            (2, 2) => run::<T, 2, 2>(x, &y, out, path),
            (3, 2) => run::<T, 3, 2>(x, &y, out, path),
            (4, 2) => run::<T, 4, 2>(x, &y, out, path),
            // the wider tiles exist only for the formats that use them
            (r, c) if T::AVX512_COLS > MAX_COLS && c <= T::AVX512_COLS => match (r, c) {
                (1, 3) => run::<T, 1, 3>(x, &y, out, path),
                (2, 3) => run::<T, 2, 3>(x, &y, out, path),
                (3, 3) => run::<T, 3, 3>(x, &y, out, path),
                (4, 3) => run::<T, 4, 3>(x, &y, out, path),
                (1, 4) => run::<T, 1, 4>(x, &y, out, path),
                (2, 4) => run::<T, 2, 4>(x, &y, out, path),
                (3, 4) => run::<T, 3, 4>(x, &y, out, path),
                (4, 4) => run::<T, 4, 4>(x, &y, out, path),
                (1, 5) => run::<T, 1, 5>(x, &y, out, path),
                (2, 5) => run::<T, 2, 5>(x, &y, out, path),
                (3, 5) => run::<T, 3, 5>(x, &y, out, path),
                (4, 5) => run::<T, 4, 5>(x, &y, out, path),
                (1, 6) => run::<T, 1, 6>(x, &y, out, path),
                (2, 6) => run::<T, 2, 6>(x, &y, out, path),
                (3, 6) => run::<T, 3, 6>(x, &y, out, path),
                (4, 6) => run::<T, 4, 6>(x, &y, out, path),
                (r, c) => crate::ggml_abort!("vec_dot: no {}x{} tile", r, c),
            },
            (r, c) => crate::ggml_abort!("vec_dot: no {}x{} tile", r, c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::q4::nibbles;
    use super::q5::high_bits;
    use super::q8::q8;
    use super::*;
    use crate::quants::half::{bf16_to_fp32, fp16_to_fp32, fp32_to_fp16};
    use crate::quants::q4::{BlockQ4_0, BlockQ4_1};
    use crate::quants::q5::{BlockQ5_0, BlockQ5_1};
    use crate::quants::q8::{BlockQ8_0, BlockQ8_1};
    use crate::quants::{BlockFormat, dequantize_row, quantize_row};

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(777);
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
            })
            .collect()
    }

    fn f64_dot(x: &[f32], y: &[f32]) -> f64 {
        x.iter().zip(y).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum()
    }

    /// Checks the scalar and SIMD tiles of `T` against f64 products of the dequantized rows.
    fn check<T: VecDot>(
        n: usize,
        to_x: impl Fn(&[f32]) -> (Vec<T>, Vec<f32>),
        to_y: impl Fn(&[f32]) -> (Vec<T::Rhs>, Vec<f32>),
    ) {
        let xs: Vec<(Vec<T>, Vec<f32>)> = (0..4).map(|r| to_x(&values(n, 10 + r))).collect();
        let ys: Vec<(Vec<T::Rhs>, Vec<f32>)> = (0..2).map(|c| to_y(&values(n, 20 + c))).collect();
        let x: [&[T]; 4] = std::array::from_fn(|r| xs[r].0.as_slice());
        let y: [&[T::Rhs]; 2] = std::array::from_fn(|c| ys[c].0.as_slice());
        let scalar = T::tile::<4, 2>(&x, &y, false);
        let fast = T::tile::<4, 2>(&x, &y, true);
        for r in 0..4 {
            for c in 0..2 {
                let exact = f64_dot(&xs[r].1, &ys[c].1);
                let tol = 1e-4 * (1.0 + (n as f64).sqrt());
                assert!(
                    (f64::from(scalar[r][c]) - exact).abs() < tol,
                    "{} scalar {r},{c}: {} vs {exact}",
                    T::TYPE.name(),
                    scalar[r][c]
                );
                assert!(
                    (f64::from(fast[r][c]) - exact).abs() < tol,
                    "{} simd {r},{c}: {} vs {exact}",
                    T::TYPE.name(),
                    fast[r][c]
                );
                assert_eq!(T::dot(x[r], y[c], true).to_bits(), T::tile::<1, 1>(&[x[r]], &[y[c]], true)[0][0].to_bits());
            }
        }
        // the smaller tiles agree with the big one
        let one = T::tile::<3, 1>(&[x[0], x[1], x[2]], &[y[1]], true);
        for r in 0..3 {
            assert!((one[r][0] - fast[r][1]).abs() <= 1e-5 * (1.0 + fast[r][1].abs()));
        }
    }

    fn quantized<B: BlockFormat>(v: &[f32]) -> (Vec<B>, Vec<f32>) {
        let mut b = vec![B::default(); v.len() / B::QK];
        quantize_row(v, &mut b);
        let mut back = vec![0.0; v.len()];
        dequantize_row(&b, &mut back);
        (b, back)
    }

    fn q8_0(v: &[f32]) -> (Vec<BlockQ8_0>, Vec<f32>) {
        let mut b = vec![BlockQ8_0::default(); v.len() / 32];
        quantize_row_q8_0(v, &mut b);
        let back = b.iter().flat_map(|blk| blk.qs.map(|q| f32::from(q as i8) * blk.d.to_f32())).collect();
        (b, back)
    }

    fn q8_1(v: &[f32]) -> (Vec<BlockQ8_1>, Vec<f32>) {
        let mut b = vec![BlockQ8_1::default(); v.len() / 32];
        quantize_row_q8_1(v, &mut b);
        let back = b.iter().flat_map(|blk| blk.qs.map(|q| f32::from(q as i8) * blk.d.to_f32())).collect();
        (b, back)
    }

    #[test]
    fn float_formats_match_f64() {
        for n in [1usize, 5, 8, 37, 64, 131] {
            check::<f32>(n, |v| (v.to_vec(), v.to_vec()), |v| (v.to_vec(), v.to_vec()));
            let half = |v: &[f32]| {
                let h: Vec<u16> = v.iter().map(|&a| fp32_to_fp16(a)).collect();
                let back = h.iter().map(|&b| fp16_to_fp32(b)).collect();
                (h, back)
            };
            check::<u16>(n, half, half);
            let bf = |v: &[f32]| {
                let h: Vec<Bf16> = v.iter().map(|&a| crate::quants::half::fp32_to_bf16(a)).collect();
                let back = h.iter().map(|&b| bf16_to_fp32(b)).collect();
                (h, back)
            };
            check::<Bf16>(n, bf, bf);
        }
    }

    #[test]
    fn quantized_formats_match_f64() {
        for n in [32usize, 96, 256] {
            check::<BlockQ4_0>(n, quantized::<BlockQ4_0>, q8_0);
            check::<BlockQ4_1>(n, quantized::<BlockQ4_1>, q8_1);
            check::<BlockQ5_0>(n, quantized::<BlockQ5_0>, q8_0);
            check::<BlockQ5_1>(n, quantized::<BlockQ5_1>, q8_1);
            check::<BlockQ8_0>(n, quantized::<BlockQ8_0>, q8_0);
        }
    }

    /// A block's 32 levels in value order, its scale and (affine formats) its minimum or sum.
    trait Levels {
        fn levels(&self) -> [i32; 32];
        fn scale(&self) -> f32;
        fn extra(&self) -> Option<f32> {
            None
        }
    }

    /// Levels from the (value j, value j + 16) pairs of a nibble-packed block.
    fn paired(pair: impl Fn(usize) -> (i32, i32)) -> [i32; 32] {
        let mut out = [0; 32];
        for j in 0..16 {
            (out[j], out[j + 16]) = pair(j);
        }
        out
    }

    impl Levels for BlockQ4_0 {
        fn levels(&self) -> [i32; 32] {
            paired(|j| {
                let (a, b) = nibbles(&self.qs, j);
                (a - 8, b - 8)
            })
        }
        fn scale(&self) -> f32 {
            self.d.to_f32()
        }
    }

    impl Levels for BlockQ4_1 {
        fn levels(&self) -> [i32; 32] {
            paired(|j| nibbles(&self.qs, j))
        }
        fn scale(&self) -> f32 {
            self.d.to_f32()
        }
        fn extra(&self) -> Option<f32> {
            Some(self.m.to_f32())
        }
    }

    impl Levels for BlockQ5_0 {
        fn levels(&self) -> [i32; 32] {
            paired(|j| {
                let ((a, b), (ha, hb)) = (nibbles(&self.qs, j), high_bits(self.qh, j));
                ((a | ha) - 16, (b | hb) - 16)
            })
        }
        fn scale(&self) -> f32 {
            self.d.to_f32()
        }
    }

    impl Levels for BlockQ5_1 {
        fn levels(&self) -> [i32; 32] {
            paired(|j| {
                let ((a, b), (ha, hb)) = (nibbles(&self.qs, j), high_bits(self.qh, j));
                (a | ha, b | hb)
            })
        }
        fn scale(&self) -> f32 {
            self.d.to_f32()
        }
        fn extra(&self) -> Option<f32> {
            Some(self.m.to_f32())
        }
    }

    impl Levels for BlockQ8_0 {
        fn levels(&self) -> [i32; 32] {
            std::array::from_fn(|j| q8(&self.qs, j))
        }
        fn scale(&self) -> f32 {
            self.d.to_f32()
        }
    }

    impl Levels for BlockQ8_1 {
        fn levels(&self) -> [i32; 32] {
            std::array::from_fn(|j| q8(&self.qs, j))
        }
        fn scale(&self) -> f32 {
            self.d.to_f32()
        }
        fn extra(&self) -> Option<f32> {
            Some(self.s.to_f32())
        }
    }

    /// ggml's x86 arithmetic for a row pair of these formats (its AVX2 `ggml_vec_dot_*` and
    /// tinyBLAS's block tiles): per block, eight sums of four consecutive byte products, each
    /// multiplied by `dx·dy` into its own FMA chain; the chains added as `hsum_float_8` adds
    /// them; for the affine formats the FMA chain of `m·s` added last.
    fn lane_chains<X: Levels, Y: Levels>(x: &[X], y: &[Y]) -> f32 {
        let (mut chains, mut minimums) = ([0.0f32; 8], 0.0f32);
        for (bx, by) in x.iter().zip(y) {
            let (lx, ly, scale) = (bx.levels(), by.levels(), bx.scale() * by.scale());
            for (g, chain) in chains.iter_mut().enumerate() {
                let sum: i32 = (4 * g..4 * g + 4).map(|j| lx[j] * ly[j]).sum();
                *chain = (sum as f32).mul_add(scale, *chain);
            }
            if let (Some(m), Some(s)) = (bx.extra(), by.extra()) {
                minimums = m.mul_add(s, minimums);
            }
        }
        let s: [f32; 4] = std::array::from_fn(|i| chains[i] + chains[i + 4]);
        (s[0] + s[2]) + (s[1] + s[3]) + minimums
    }

    /// SIMD tiles of `T` (4×2, and 3×4 with its lone last row where AVX-512 tiles take four
    /// columns) and the single product against [`lane_chains`], bit for bit.
    fn check_lane_chains<T: VecDot + Levels + BlockFormat>(to_y: impl Fn(&[f32]) -> (Vec<T::Rhs>, Vec<f32>))
    where
        T::Rhs: Levels,
    {
        // 9 blocks: no multiple of any unrolling
        let n = 9 * 32;
        let xs: Vec<Vec<T>> = (0..4).map(|r| quantized::<T>(&values(n, 30 + r)).0).collect();
        let ys: Vec<Vec<T::Rhs>> = (0..4).map(|c| to_y(&values(n, 40 + c)).0).collect();
        let x: [&[T]; 4] = std::array::from_fn(|r| xs[r].as_slice());
        let y: [&[T::Rhs]; 4] = std::array::from_fn(|c| ys[c].as_slice());
        let name = <T as VecDot>::TYPE.name();
        let wide = T::tile::<3, 4>(&[x[0], x[1], x[2]], &y, true);
        let narrow = T::tile::<4, 2>(&x, &[y[0], y[1]], true);
        // the AVX2 tiles too, which the dispatch passes over on AVX-512 processors
        let avx2 = T::tile_on::<4, 2>(Path(Isa::Avx2), &x, &[y[0], y[1]]);
        for r in 0..4 {
            for c in 0..4 {
                let want = lane_chains(x[r], y[c]).to_bits();
                assert_eq!(T::dot(x[r], y[c], true).to_bits(), want, "{name} dot {r},{c}");
                if r < 3 {
                    assert_eq!(wide[r][c].to_bits(), want, "{name} 3x4 {r},{c}");
                }
                if c < 2 {
                    assert_eq!(narrow[r][c].to_bits(), want, "{name} 4x2 {r},{c}");
                    assert_eq!(avx2[r][c].to_bits(), want, "{name} AVX2 4x2 {r},{c}");
                }
            }
        }
    }

    #[test]
    fn simd_tiles_sum_as_ggml_does() {
        if !crate::cpu::features::features().has_avx2_fma() {
            return;
        }
        check_lane_chains::<BlockQ4_0>(q8_0);
        check_lane_chains::<BlockQ4_1>(q8_1);
        check_lane_chains::<BlockQ5_0>(q8_0);
        check_lane_chains::<BlockQ5_1>(q8_1);
        check_lane_chains::<BlockQ8_0>(q8_0);
    }

    #[test]
    fn activation_quantizers_agree_and_round_half_even() {
        let mut x = values(128, 3);
        // x·127/amax lands exactly on .5 for these: 127 is the scale of 1.0.
        x[0] = 1.0;
        x[1] = 0.5 / 127.0 * 5.0; // 2.5 -> 2
        x[2] = -(0.5 / 127.0) * 7.0; // -3.5 -> -4
        let mut a = vec![BlockQ8_1::default(); 4];
        let mut b = vec![BlockQ8_1::default(); 4];
        quantize_row_q8_1(&x, &mut a);
        scalar::quantize_row_q8_1(&x, &mut b);
        assert_eq!(a, b);
        assert_eq!((a[0].qs[0], a[0].qs[1] as i8, a[0].qs[2] as i8), (127, 2, -4));
        let mut c = vec![BlockQ8_0::default(); 4];
        let mut d = vec![BlockQ8_0::default(); 4];
        quantize_row_q8_0(&x, &mut c);
        scalar::quantize_row_q8_0(&x, &mut d);
        assert_eq!(c, d);
        assert_eq!(c[1].qs, a[1].qs);
        let sum: i32 = a[2].qs.iter().map(|&q| i32::from(q as i8)).sum();
        assert_eq!(a[2].s.bits(), fp32_to_fp16(a[2].d.to_f32() * sum as f32));
        // a zero block
        let mut z = vec![BlockQ8_0::default(); 1];
        quantize_row_q8_0(&[0.0; 32], &mut z);
        assert_eq!(z[0], BlockQ8_0::default());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vnni_and_avx2_tiles_agree_exactly() {
        use crate::cpu::features::{Vnni, features};
        use crate::cpu::kernels::x86;
        if features().vnni() == Vnni::None {
            return;
        }
        let xs: Vec<Vec<BlockQ4_1>> = (0..4).map(|r| quantized::<BlockQ4_1>(&values(128, 40 + r)).0).collect();
        let x8: Vec<Vec<BlockQ8_0>> = (0..4).map(|r| quantized::<BlockQ8_0>(&values(128, 50 + r)).0).collect();
        let ys: Vec<Vec<BlockQ8_1>> = (0..2).map(|c| q8_1(&values(128, 60 + c)).0).collect();
        // SAFETY: AVX2, FMA, F16C and a VNNI encoding were checked above (`int8`
        // takes this processor's); indices stay inside the 4 blocks of each row.
        unsafe {
            let xu = |r: usize, b: usize| (q4::avx2::nibbles(&xs[r][b].qs), xs[r][b].d, xs[r][b].m);
            let xq = |r: usize, b: usize| (crate::cpu::kernels::simd::avx2::load32(&x8[r][b].qs), x8[r][b].d);
            let xo = |r: usize, b: usize| (q4::avx2::nibbles(&xs[r][b].qs), xs[r][b].d);
            let y1 =
                |c: usize, b: usize| (crate::cpu::kernels::simd::avx2::load32(&ys[c][b].qs), ys[c][b].d, ys[c][b].s);
            let y0 = |c: usize, b: usize| (crate::cpu::kernels::simd::avx2::load32(&ys[c][b].qs), ys[c][b].d);
            let (r4, r8): ([&[BlockQ4_1]; 4], [&[BlockQ8_0]; 4]) =
                (std::array::from_fn(|r| &xs[r][..]), std::array::from_fn(|r| &x8[r][..]));
            let a = x86::int8::tiles_avx2::affine_tile::<_, 4, 2>(&r4, xu, y1);
            let b = x86::int8::affine_tile::<_, 4, 2>(&r4, xu, y1);
            assert_eq!(a, b);
            let a = x86::int8::tiles_avx2::signed_tile::<_, 4, 2>(&r8, xq, y0);
            let b = x86::int8::signed_tile::<_, 4, 2>(&r8, xq, y0);
            assert_eq!(a, b);
            let a = x86::int8::tiles_avx2::offset_tile::<_, 4, 2>(&r4, 8, xo, y0);
            let b = x86::int8::offset_tile::<_, 4, 2>(&r4, 8, xo, y0);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn erased_kernels_cover_every_tile() {
        let k = DotKernel::for_type(Type::Q8_0).unwrap();
        assert_eq!(k.vec_dot_type, Type::Q8_0);
        assert!(DotKernel::for_type(Type::Q8_K).is_none());
        let rows: Vec<Vec<BlockQ8_0>> = (0..4).map(|r| q8_0(&values(64, r)).0).collect();
        let bytes: Vec<&[u8]> =
            // SAFETY: blocks are plain bytes.
            rows.iter().map(|r| unsafe { std::slice::from_raw_parts(r.as_ptr().cast::<u8>(), r.len() * 34) }).collect();
        let mut full = [0.0f32; 8];
        k.tile(64, &bytes[..4], &bytes[..2], &mut full, true);
        // a panel of 11 rows (the four, again and again) in tiles of four
        let panel: Vec<&[u8]> = (0..11).map(|r| bytes[r % 4]).collect();
        let mut out = [0.0f32; 22];
        k.tile(64, &panel, &bytes[..2], &mut out, true);
        for (r, row) in out.chunks(2).enumerate() {
            assert_eq!(row, &full[(r % 4) * 2..(r % 4) * 2 + 2], "panel row {r}");
        }
        for nr in 1..=4 {
            for nc in 1..=2 {
                let mut out = [0.0f32; 8];
                k.tile(64, &bytes[..nr], &bytes[..nc], &mut out, false);
                for r in 0..nr {
                    for c in 0..nc {
                        assert!((out[r * nc + c] - full[r * 2 + c]).abs() < 1e-4 * (1.0 + full[r * 2 + c].abs()));
                    }
                }
            }
        }
        assert!((k.dot(64, bytes[1], bytes[0], true) - full[2]).abs() < 1e-4);
    }
}
