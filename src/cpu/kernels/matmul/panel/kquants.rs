//! The K-quants Q2_K to Q6_K, IQ4_XS, the grid I-quants and the ternary formats, on panels.
//!
//! A K-quant value is `factor·level + offset` with a factor and offset per sub-block (32
//! values in Q4_K and Q5_K: `d·sc` and `−dmin·m`; 16 in Q6_K: `d·sc` and `−32·d·sc`) and
//! unsigned levels (0..15, 0..31, 0..63). A panel super-block holds the 16 rows' levels
//! interleaved four at a time, as the block formats' panels do, then per sub-block the rows'
//! factors (and offsets) as `f32`. The levels are the unsigned side of `vpdpbusd` here and the
//! activations (Q8_K, as ggml quantizes them) the signed side; a sub-block's integer sums are
//! scaled by its factors, and its offsets meet the activations' sub-block sums `Σq`. Where the
//! offsets are `−b·factor` ([`KFormat::BIAS`]), the integer sums start from `−b·Σq` instead.
//!
//! An activation row is per super-block its 256 levels, its scale `d` as `f32`, then the
//! sub-blocks' sums: `Σq` as `f32`, or `−b·Σq` as `i32` for a format with a bias `b`.

use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::{Avx512, Kind, PANEL_ROWS, transpose};
use crate::cpu::kernels::dot::whole::Whole;
use crate::quants::half::Half;
use crate::quants::iq4::{BlockIq4Xs, LEVELS as IQ4_LEVELS};
use crate::quants::k_quants::{
    BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K, K_SCALE_SIZE, QK_K, affine_factors, quantize_row_q8_k,
};

/// Register groups of four levels per super-block.
const GROUPS: usize = QK_K / 4;
/// Bytes of a super-block's levels in a panel.
const LEVEL_BYTES: usize = GROUPS * 64;

/// A K-quant format the panels decode.
pub(super) trait KFormat: Copy {
    /// Values per sub-block (one factor and offset each).
    const SUB: usize;
    /// `Some(b)` where every offset is `−b·factor` (the levels are whole values stored with
    /// +b): the tiles then take the offsets into the integer sums, and the panels keep no
    /// offsets.
    const BIAS: Option<i32> = None;

    /// The super-block's levels in value order, and per sub-block its factor and (for a format
    /// without a [`KFormat::BIAS`], whose offsets follow from the factors) its offset.
    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], offsets: &mut [f32]);
}

impl KFormat for BlockQ4K {
    const SUB: usize = 32;

    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], offsets: &mut [f32]) {
        for (q, out) in self.qs.chunks_exact(32).zip(levels.chunks_exact_mut(64)) {
            let (lo, hi) = out.split_at_mut(32);
            for ((a, b), &byte) in lo.iter_mut().zip(hi).zip(q) {
                (*a, *b) = (byte & 0x0f, byte >> 4);
            }
        }
        affine(self.d, self.dmin, &self.scales, factors, offsets);
    }
}

impl KFormat for BlockQ5K {
    const SUB: usize = 32;

    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], offsets: &mut [f32]) {
        for (g, (q, out)) in self.qs.chunks_exact(32).zip(levels.chunks_exact_mut(64)).enumerate() {
            let (lo, hi) = out.split_at_mut(32);
            for (l, (a, b)) in lo.iter_mut().zip(hi).enumerate() {
                let h = self.qh[l] >> (2 * g);
                *a = (q[l] & 0x0f) | ((h & 1) << 4);
                *b = (q[l] >> 4) | ((h & 2) << 3);
            }
        }
        affine(self.d, self.dmin, &self.scales, factors, offsets);
    }
}

/// The factors `d·sc` and offsets `−dmin·m` of a Q4_K or Q5_K super-block.
fn affine(d: Half, dmin: Half, scales: &[u8; K_SCALE_SIZE], factors: &mut [f32], offsets: &mut [f32]) {
    for ((f, o), (d, m)) in factors.iter_mut().zip(offsets.iter_mut()).zip(affine_factors(d, dmin, scales)) {
        (*f, *o) = (d, -m);
    }
}

impl KFormat for BlockQ6K {
    const SUB: usize = 16;
    const BIAS: Option<i32> = Some(32);

    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], _offsets: &mut [f32]) {
        for (half, out) in levels.chunks_exact_mut(128).enumerate() {
            let ql = &self.ql[64 * half..64 * (half + 1)];
            let qh = &self.qh[32 * half..32 * (half + 1)];
            for l in 0..32 {
                for k in 0..4 {
                    let low = if k < 2 { ql[l + 32 * k] & 0x0f } else { ql[l + 32 * (k - 2)] >> 4 };
                    out[l + 32 * k] = low | (((qh[l] >> (2 * k)) & 3) << 4);
                }
            }
        }
        let d = self.d.to_f32();
        for (f, &sc) in factors.iter_mut().zip(&self.scales) {
            *f = d * f32::from(sc as i8);
        }
    }
}

impl KFormat for BlockQ3K {
    const SUB: usize = 16;
    const BIAS: Option<i32> = Some(4);

    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], _offsets: &mut [f32]) {
        // the levels -4..3 stored with +4
        for (out, q) in levels.iter_mut().zip(self.levels()) {
            *out = (q + 4) as u8;
        }
        let d = self.d.to_f32();
        for (j, f) in factors.iter_mut().enumerate() {
            *f = d * self.sub_scale(j) as f32;
        }
    }
}

impl KFormat for BlockQ2K {
    const SUB: usize = 16;

    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], offsets: &mut [f32]) {
        // value 128h + 32j + l: bits 2j of byte 32h + l
        for (h, out) in levels.chunks_exact_mut(128).enumerate() {
            let q = &self.qs[32 * h..32 * (h + 1)];
            for (j, out) in out.chunks_exact_mut(32).enumerate() {
                for (o, &byte) in out.iter_mut().zip(q) {
                    *o = (byte >> (2 * j)) & 3;
                }
            }
        }
        let (d, dmin) = (self.d.to_f32(), self.dmin.to_f32());
        for ((f, o), &sc) in factors.iter_mut().zip(offsets.iter_mut()).zip(&self.scales) {
            (*f, *o) = (d * f32::from(sc & 0x0f), -dmin * f32::from(sc >> 4));
        }
    }
}

impl KFormat for BlockIq4Xs {
    const SUB: usize = 32;
    const BIAS: Option<i32> = Some(128);

    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], _offsets: &mut [f32]) {
        // the non-linear levels (−127..113) stored with +128, the bias
        let level = |nibble: u8| IQ4_LEVELS[usize::from(nibble)] as u8 ^ 0x80;
        for (q, out) in self.qs.chunks_exact(16).zip(levels.chunks_exact_mut(32)) {
            let (lo, hi) = out.split_at_mut(16);
            for ((a, b), &byte) in lo.iter_mut().zip(hi).zip(q) {
                (*a, *b) = (level(byte & 0x0f), level(byte >> 4));
            }
        }
        let d = self.d.to_f32();
        let high = u16::from_le_bytes(self.scales_h);
        for (i, f) in factors.iter_mut().enumerate() {
            let low = (self.scales_l[i / 2] >> (4 * (i % 2))) & 0x0f;
            let scale = i32::from(low | (((high >> (2 * i)) & 3) as u8) << 4) - 32;
            *f = d * scale as f32;
        }
    }
}

/// The grid I-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and the ternary
/// formats (TQ1_0, TQ2_0) as whole signed values with a multiplier per sub-block: stored with
/// +`MAX`, the bias, to make them unsigned levels.
impl<F: Whole> KFormat for F {
    const SUB: usize = F::SUB;
    const BIAS: Option<i32> = Some(F::MAX as i32);

    fn unpack(&self, levels: &mut [u8; QK_K], factors: &mut [f32], _offsets: &mut [f32]) {
        let (mut bytes, mut multipliers) = ([0i8; QK_K], [0i32; QK_K / 16]);
        let subs = QK_K / F::SUB;
        self.whole(&mut bytes, &mut multipliers[..subs]);
        for (l, &b) in levels.iter_mut().zip(&bytes) {
            *l = (b + F::MAX) as u8;
        }
        let scale = self.scale();
        for (f, &m) in factors.iter_mut().zip(&multipliers[..subs]) {
            *f = scale * m as f32;
        }
    }
}

/// The K-quants' [`Kind`]: `F` weights, activations from Q8_K.
pub(super) struct KQuants<F>(PhantomData<F>);

impl<F: KFormat> KQuants<F> {
    const SUBS: usize = QK_K / F::SUB;
    /// Vectors per sub-block after a panel super-block's levels: its factors, then its offsets
    /// unless the format has a [`KFormat::BIAS`].
    const PARTS: usize = if F::BIAS.is_some() { 1 } else { 2 };
    /// Bytes of one super-block of a panel: levels, then the parts of each sub-block.
    const PANEL_BLOCK_BYTES: usize = LEVEL_BYTES + Self::PARTS * Self::SUBS * 64;
    /// Bytes of one super-block of an activation row: levels, scale, sub-block sums.
    const ACT_BLOCK_BYTES: usize = QK_K + 4 + 4 * Self::SUBS;
}

impl<F: KFormat> Kind for KQuants<F> {
    type Isa = Avx512;
    const TILE_COLS: usize = 8;
    const UNIT: usize = QK_K;
    const SPAN: usize = usize::MAX;

    fn activations_size(n: usize, cols: usize) -> usize {
        n / QK_K * Self::ACT_BLOCK_BYTES * cols
    }

    fn activation(acts: *mut u8, n: usize, col: usize, start: usize) -> *mut u8 {
        acts.wrapping_add((col * n + start) / QK_K * Self::ACT_BLOCK_BYTES)
    }

    fn panel_size(n: usize) -> usize {
        n / QK_K * Self::PANEL_BLOCK_BYTES
    }

    unsafe fn convert(x: &[f32], _n: usize, first: usize, at: *mut u8) {
        let len = x.len() / QK_K * Self::ACT_BLOCK_BYTES;
        // SAFETY: the column's super-blocks `first..` that `x` covers (the caller's contract).
        let row = unsafe { std::slice::from_raw_parts_mut(at.add(first * Self::ACT_BLOCK_BYTES), len) };
        let mut blocks = vec![BlockQ8K::default(); x.len() / QK_K];
        quantize_row_q8_k(x, &mut blocks);
        let per_sum = F::SUB / 16;
        for (blk, out) in blocks.iter().zip(row.chunks_exact_mut(Self::ACT_BLOCK_BYTES)) {
            let (levels, rest) = out.split_at_mut(QK_K);
            levels.copy_from_slice(&blk.qs);
            let d = blk.scale();
            rest[..4].copy_from_slice(&d.to_ne_bytes());
            for (j, sum) in rest[4..].chunks_exact_mut(4).enumerate() {
                let q: i32 = (0..per_sum).map(|k| i32::from(blk.bsum(j * per_sum + k))).sum();
                // (|q| ≤ 32·127, |b·q| < 2³¹)
                let bytes = match F::BIAS {
                    Some(b) => (-b * q).to_ne_bytes(),
                    None => (q as f32).to_ne_bytes(),
                };
                sum.copy_from_slice(&bytes);
            }
        }
    }

    unsafe fn decode(rows: &[*const u8], n: usize, panel: *mut u8) {
        let nb = n / QK_K;
        let mut levels = [[0u8; QK_K]; PANEL_ROWS];
        let (mut factors, mut offsets) = ([[0f32; PANEL_ROWS]; 16], [[0f32; PANEL_ROWS]; 16]);
        for b in 0..nb {
            for (r, &row) in rows.iter().enumerate() {
                // SAFETY: block b < nb of a row of nb blocks of F (the caller's contract).
                let block = unsafe { &*row.cast::<F>().add(b) };
                let (mut f, mut o) = ([0f32; 16], [0f32; 16]);
                block.unpack(&mut levels[r], &mut f[..Self::SUBS], &mut o[..Self::SUBS]);
                for j in 0..Self::SUBS {
                    (factors[j][r], offsets[j][r]) = (f[j], o[j]);
                }
            }
            // SAFETY: super-block b of the panel (the caller's contract).
            unsafe {
                let base = panel.add(b * Self::PANEL_BLOCK_BYTES);
                interleave(&levels[..rows.len()], base);
                for j in 0..Self::SUBS {
                    let at = base.add(LEVEL_BYTES + j * Self::PARTS * 64);
                    std::ptr::copy_nonoverlapping(factors[j].as_ptr().cast::<u8>(), at, 64);
                    if F::BIAS.is_none() {
                        std::ptr::copy_nonoverlapping(offsets[j].as_ptr().cast::<u8>(), at.add(64), 64);
                    }
                }
            }
        }
    }

    unsafe fn tile<const C: usize>(panel: *const u8, n: usize, acts: &[*const u8; C]) -> [__m512; C] {
        // SAFETY: the caller's contract.
        unsafe { ktile::<F, C>(panel, n / QK_K, acts) }
    }
}

/// Stores the rows' levels interleaved four at a time (rows past the last as zero).
///
/// # Safety
/// AVX-512; `out` holds [`LEVEL_BYTES`] on a cache line.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn interleave(levels: &[[u8; QK_K]], out: *mut u8) {
    for part in 0..QK_K / 64 {
        let mut words = [_mm512_setzero_si512(); PANEL_ROWS];
        for (w, row) in words.iter_mut().zip(levels) {
            // SAFETY: 64 of the row's 256 levels.
            *w = unsafe { _mm512_loadu_si512(row[part * 64..].as_ptr().cast()) };
        }
        for (g, w) in transpose(words).into_iter().enumerate() {
            // SAFETY: group 16·part + g < GROUPS of the levels (the caller's contract).
            unsafe { _mm512_store_si512(out.add((part * 16 + g) * 64).cast(), w) };
        }
    }
}

/// The panel's 16 rows by `C` activation rows, over `nb` super-blocks of `F`. A sub-block's
/// integer sums are scaled by its factors, and its offsets meet the activations' sub-block
/// sums `Σq`; the activations' scale comes in once per super-block. With a
/// [`KFormat::BIAS`] `b`, the sums start instead from the activations' `−b·Σq`, which leaves
/// `Σ (level − b)·q`, the whole values' products: one conversion and one multiply-add per
/// sub-block and column.
///
/// # Safety
/// As for [`Kind::tile`].
// Columns index the accumulators and activation rows together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn ktile<F: KFormat, const C: usize>(panel: *const u8, nb: usize, acts: &[*const u8; C]) -> [__m512; C] {
    let (subs, parts) = (KQuants::<F>::SUBS, KQuants::<F>::PARTS);
    let (act_bytes, panel_bytes) = (KQuants::<F>::ACT_BLOCK_BYTES, KQuants::<F>::PANEL_BLOCK_BYTES);
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: super-block b of the panel and of each activation row (the caller's
        // contract); the panel's vectors lie on cache lines.
        unsafe {
            let base = panel.add(b * panel_bytes);
            let ys: [*const u8; C] = std::array::from_fn(|c| acts[c].add(b * act_bytes));
            let mut block = [_mm512_setzero_ps(); C];
            for j in 0..subs {
                let sum_y: [*const u8; C] = std::array::from_fn(|c| ys[c].add(QK_K + 4 + 4 * j));
                let start = match F::BIAS {
                    Some(_) => std::array::from_fn(|c| _mm512_set1_epi32(sum_y[c].cast::<i32>().read_unaligned())),
                    None => [_mm512_setzero_si512(); C],
                };
                let sums = level_sums::<F, C>(base, &ys, j, start);
                let factor = _mm512_load_ps(base.add(LEVEL_BYTES + j * parts * 64).cast());
                for c in 0..C {
                    block[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[c]), factor, block[c]);
                }
                if F::BIAS.is_none() {
                    // (the panel keeps offsets only for such formats)
                    let offset = _mm512_load_ps(base.add(LEVEL_BYTES + j * parts * 64 + 64).cast());
                    for c in 0..C {
                        let q = _mm512_set1_ps(sum_y[c].cast::<f32>().read_unaligned());
                        block[c] = _mm512_fmadd_ps(offset, q, block[c]);
                    }
                }
            }
            for c in 0..C {
                let d = _mm512_set1_ps(ys[c].add(QK_K).cast::<f32>().read_unaligned());
                acc[c] = _mm512_fmadd_ps(block[c], d, acc[c]);
            }
        }
    }
    acc
}

/// `start` plus the products of sub-block `j`'s levels (of the panel super-block at `base`)
/// with each column's activation levels (of its super-block at `ys`).
///
/// # Safety
/// AVX-512 VNNI; `base` and `ys` start super-blocks of `F` of a panel and of activation rows.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn level_sums<F: KFormat, const C: usize>(
    base: *const u8,
    ys: &[*const u8; C],
    j: usize,
    start: [__m512i; C],
) -> [__m512i; C] {
    let mut sums = start;
    for g in j * F::SUB / 4..(j + 1) * F::SUB / 4 {
        // SAFETY: group g of the super-block's levels, and 4 levels of each column's (the
        // caller's contract).
        unsafe {
            let w = _mm512_load_si512(base.add(g * 64).cast());
            for c in 0..C {
                let y = ys[c].add(g * 4).cast::<i32>().read_unaligned();
                sums[c] = _mm512_dpbusd_epi32(sums[c], w, _mm512_set1_epi32(y));
            }
        }
    }
    sums
}
