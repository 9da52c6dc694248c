//! Float weights (F32, F16, BF16) in the repacked layout, against F32 activations rounded as
//! ggml rounds them for each (to F16 for F16 weights, to BF16 for BF16 weights).
//!
//! A chunk holds one value of each of sixteen rows (F32; F16, widened by one `vcvtph2ps`) or a
//! pair of consecutive values (BF16, for `vdpbf16ps` where the processor has it), so a product
//! is one multiply-add per value (or pair) and chunk against the activation value broadcast,
//! the sixteen rows' sums in their lanes. The products are added in `f32` in one or four chains
//! per column, an order of their own (ggml's own kernels each keep another).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::marker::PhantomData;

use super::{ActRow, Column, Scheme, parts_of};
use crate::core::types::Type;
use crate::cpu::kernels::prefetch::{self, Cache};
use crate::cpu::repack::layout::GROUP_ROWS;
use crate::quants::half::{Bf16 as Bf16Bits, bf16_to_fp32, fp16_to_fp32, fp32_to_bf16, fp32_to_fp16};

/// Values per block of the layout.
const QK: usize = 32;

/// A float weight type.
pub(super) trait Float {
    const TYPE: Type;
    /// Bytes of a value.
    const SIZE: usize;
    /// Whether a chunk holds a pair of values per row (else one).
    const PAIRS: bool = false;

    /// Value `i` of a row from its bytes.
    fn value(bytes: &[u8], i: usize) -> f32;

    /// `x` rounded to the type (the activations' rounding).
    fn round(x: f32) -> f32;

    /// Bytes of an activation value: 4 (`f32`, rounded to the type), 2 for BF16, whose pairs
    /// `vdpbf16ps` broadcasts as they are.
    const ACT_SIZE: usize = 4;

    /// Whether, on processors other than Intel's, a product of two columns or more asks for
    /// the weights ahead of its reads (see [`stream_ahead`]).
    const STREAM_AHEAD: bool = false;

    /// Activation value `i` of a column.
    ///
    /// # Safety
    /// The column holds value `i`.
    unsafe fn act(acts: *const i8, i: usize) -> f32 {
        // SAFETY: the caller's contract.
        unsafe { *acts.cast::<f32>().add(i) }
    }

    /// Stores activation value `i` of a column, `x` rounded to the type.
    ///
    /// # Safety
    /// The column holds value `i`, which nobody else touches meanwhile.
    unsafe fn store_act(acts: *const i8, i: usize, x: f32) {
        // SAFETY: the caller's contract.
        unsafe { acts.cast::<f32>().add(i).cast_mut().write(Self::round(x)) }
    }

    /// Stores activation values `at..at + x.len()` of a column, `x` rounded to the type
    /// (`simd`: with the SIMD row conversions where the type has them).
    ///
    /// # Safety
    /// The column holds those values, which nobody else touches meanwhile.
    unsafe fn store_row(x: &[f32], acts: *const i8, at: usize, _simd: bool) {
        // SAFETY: the caller's contract.
        unsafe { store_values::<Self>(x, acts, at) }
    }

    /// The sixteen rows' values of one chunk at `at`, widened: the even and the odd values of
    /// the pairs, or (one value per row) the values twice.
    ///
    /// # Safety
    /// AVX-512 (F, BW); `at` holds a chunk.
    #[cfg(target_arch = "x86_64")]
    unsafe fn widen(at: *const u8) -> (__m512, __m512);
}

/// Into which cache a product of `cols` columns of `T` weights asks for them
/// [`super::STREAM_AHEAD`] bytes ahead of its reads, if it does.
///
/// An Intel core keeps too few of its reads in flight to stream at its share of the memory's
/// speed by itself: every float type and column count gained from asking the second-level
/// cache for the weights ahead (Emerald Rapids, 2816×1024 weights from memory, one thread, ms:
/// by one column F16 32.8 → 25.0, BF16 32.6 → 24.6, F32 53.6 → 49.1; by four F32 75 → 52,
/// BF16 48 → 29; ahead into the first-level cache gained less). On Zen 4 only F16 by two
/// columns or more gained (4096×4096 by 2 to 16 columns: 13% to 37%, into the first-level
/// cache), whose widening keeps the core too busy to reach the next lines by itself; F32 and
/// BF16 lost 7% there and one column 2% at two threads.
fn stream_ahead<T: Float>(cols: usize) -> Option<Cache> {
    if crate::cpu::features::features().intel {
        Some(Cache::L2)
    } else {
        (T::STREAM_AHEAD && cols > 1).then_some(Cache::L1)
    }
}

/// Asks the cache `ahead` names, if any, for the `len` bytes [`super::STREAM_AHEAD`] past `at`
/// (a step's bytes, twice a line where a step is shorter).
#[inline]
fn ask_ahead(ahead: Option<Cache>, at: *const u8, len: usize) {
    if let Some(cache) = ahead {
        prefetch::lines(at.wrapping_add(super::STREAM_AHEAD), len, cache);
    }
}

/// [`Float::store_row`] one value at a time.
///
/// # Safety
/// As for [`Float::store_row`].
unsafe fn store_values<T: Float + ?Sized>(x: &[f32], acts: *const i8, at: usize) {
    for (i, &v) in x.iter().enumerate() {
        // SAFETY: the caller's contract.
        unsafe { T::store_act(acts, at + i, v) };
    }
}

pub(super) struct F32;
pub(super) struct F16;
pub(super) struct Bf16;

impl Float for F32 {
    const TYPE: Type = Type::F32;
    const SIZE: usize = 4;

    fn value(bytes: &[u8], i: usize) -> f32 {
        f32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]])
    }

    fn round(x: f32) -> f32 {
        x
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn widen(at: *const u8) -> (__m512, __m512) {
        // SAFETY: the caller's contract.
        let v = unsafe { _mm512_loadu_ps(at.cast()) };
        (v, v)
    }
}

impl Float for F16 {
    const TYPE: Type = Type::F16;
    const SIZE: usize = 2;
    const STREAM_AHEAD: bool = true;

    fn value(bytes: &[u8], i: usize) -> f32 {
        fp16_to_fp32(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]))
    }

    fn round(x: f32) -> f32 {
        fp16_to_fp32(fp32_to_fp16(x))
    }

    unsafe fn store_row(x: &[f32], acts: *const i8, at: usize, simd: bool) {
        if !simd {
            // SAFETY: the caller's contract.
            return unsafe { store_values::<Self>(x, acts, at) };
        }
        // rounded to binary16 and back a row at a time (F16C), not value by value
        let mut halves = vec![0u16; x.len()];
        crate::cpu::kernels::simd::f32_to_fp16_row(x, &mut halves);
        // SAFETY: values at.. of the column, x.len() of them (the caller's contract).
        let out = unsafe { std::slice::from_raw_parts_mut(acts.cast::<f32>().add(at).cast_mut(), x.len()) };
        crate::cpu::kernels::simd::fp16_to_f32_row(&halves, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn widen(at: *const u8) -> (__m512, __m512) {
        // SAFETY: the caller's contract.
        let v = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(at.cast()) });
        (v, v)
    }
}

impl Float for Bf16 {
    const TYPE: Type = Type::BF16;
    const SIZE: usize = 2;
    const PAIRS: bool = true;

    fn value(bytes: &[u8], i: usize) -> f32 {
        bf16_to_fp32(Bf16Bits { bits: u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]) })
    }

    fn round(x: f32) -> f32 {
        bf16_to_fp32(fp32_to_bf16(x))
    }

    const ACT_SIZE: usize = 2;

    unsafe fn act(acts: *const i8, i: usize) -> f32 {
        // SAFETY: the caller's contract.
        bf16_to_fp32(Bf16Bits { bits: unsafe { *acts.cast::<u16>().add(i) } })
    }

    unsafe fn store_act(acts: *const i8, i: usize, x: f32) {
        // SAFETY: the caller's contract.
        unsafe { acts.cast::<u16>().add(i).cast_mut().write(fp32_to_bf16(x).bits) }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn widen(at: *const u8) -> (__m512, __m512) {
        // a bfloat16 is the top half of its float
        // SAFETY: the caller's contract.
        let chunk = unsafe { _mm512_loadu_si512(at.cast()) };
        let even = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(chunk));
        let odd = _mm512_castsi512_ps(_mm512_and_si512(chunk, _mm512_set1_epi32(0xffff_0000u32 as i32)));
        (even, odd)
    }
}

/// The float types' [`Scheme`].
pub(super) struct Floats<T>(PhantomData<T>);

impl<T: Float> Floats<T> {
    /// Values per chunk, and bytes of a chunk (sixteen rows' values or pairs).
    const PER_CHUNK: usize = if T::PAIRS { 2 } else { 1 };
    const CHUNK: usize = GROUP_ROWS * T::SIZE * Self::PER_CHUNK;
    /// Bytes of a group block.
    const GROUP_BLOCK: usize = GROUP_ROWS * QK * T::SIZE;
}

impl<T: Float> Scheme for Floats<T> {
    const QK: usize = QK;
    const SUMS: usize = 0;
    const TILE_COLS: usize = 8;
    /// 2048 values: a task's 64 columns of them (512 KiB of F32) stay in the core's
    /// second-level cache.
    const SPAN: usize = 64;
    const LEVEL_SIZE: usize = T::ACT_SIZE;

    fn column_size(n: usize) -> usize {
        T::ACT_SIZE * n
    }

    unsafe fn convert(x: &[f32], first: usize, acts: ActRow, simd: bool) {
        // SAFETY: values first·QK.. of the column, x.len() of them (the caller's contract).
        unsafe { T::store_row(x, acts.levels, first * QK, simd) };
    }

    unsafe fn tile_scalar(group: *const u8, nb: usize, cols: &[Column]) {
        let parts = const { parts_of(T::TYPE) };
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(group, nb * Self::GROUP_BLOCK) };
        for &(act, out) in cols {
            let mut sums = [0f32; GROUP_ROWS];
            for (b, blk) in bytes.chunks_exact(Self::GROUP_BLOCK).enumerate() {
                // SAFETY: block b < nb of the column.
                let a: [f32; QK] = std::array::from_fn(|i| unsafe { T::act(act.levels, b * QK + i) });
                for (r, sum) in sums.iter_mut().enumerate() {
                    let row: Vec<u8> = (0..QK * T::SIZE).map(|t| blk[parts.position(t, r)]).collect();
                    *sum += (0..QK).map(|i| T::value(&row, i) * a[i]).sum::<f32>();
                }
            }
            // SAFETY: the destination holds 16 floats (the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(sums.as_ptr(), out, GROUP_ROWS) };
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn tile_avx512(group: *const u8, nb: usize, cols: &[Column]) {
        let bf16 = crate::cpu::features::features().avx512bf16;
        let ahead = stream_ahead::<T>(cols.len());
        // One or two columns keep four chains each, more one each: a multiply-add waits four
        // cycles for the one before.
        // SAFETY: the caller's contract.
        run_tile!(cols, |acts| unsafe {
            match (acts.len() <= 2, T::TYPE == Type::BF16 && bf16) {
                (true, true) => bf16_pair_sums::<_, 4>(group, nb, acts, ahead),
                (false, true) => bf16_pair_sums::<_, 1>(group, nb, acts, ahead),
                (true, false) => group_sums::<T, _, 4>(group, nb, acts, ahead),
                (false, false) => group_sums::<T, _, 1>(group, nb, acts, ahead),
            }
        }, 1 2 3 4 5 6 7 8);
    }
}

/// The sixteen rows' products with `C` columns, the activations widened; the weights asked
/// for [`super::STREAM_AHEAD`] bytes ahead into the cache `ahead` names, if any.
///
/// # Safety
/// AVX-512 (F, BW, VL, DQ); `group` holds `nb` group blocks; each column's activations hold
/// `nb` blocks of floats.
// Columns index the sums and activation rows together.
#[allow(clippy::needless_range_loop)]
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn group_sums<T: Float, const C: usize, const CHAINS: usize>(
    group: *const u8,
    nb: usize,
    acts: [ActRow; C],
    ahead: Option<Cache>,
) -> [__m512; C] {
    let (per_chunk, chunk) = (Floats::<T>::PER_CHUNK, Floats::<T>::CHUNK);
    let mut acc = [[_mm512_setzero_ps(); CHAINS]; C];
    // (chain `ch` of each step of CHAINS chunks: a constant index, so the chains stay in
    // registers)
    for step in (0..nb * QK / per_chunk).step_by(CHAINS) {
        ask_ahead(ahead, group.wrapping_add(chunk * step), chunk * CHAINS);
        for ch in 0..CHAINS {
            let k = step + ch;
            // SAFETY: chunk k of the group's nb blocks (whose chunks are a multiple of CHAINS),
            // and its values of each column (the caller's contract).
            unsafe {
                let (even, odd) = T::widen(group.add(chunk * k));
                for c in 0..C {
                    let i = per_chunk * k;
                    let chain = &mut acc[c][ch];
                    *chain = _mm512_fmadd_ps(even, _mm512_set1_ps(T::act(acts[c].levels, i)), *chain);
                    if T::PAIRS {
                        *chain = _mm512_fmadd_ps(odd, _mm512_set1_ps(T::act(acts[c].levels, i + 1)), *chain);
                    }
                }
            }
        }
    }
    acc.map(|chains| chains.into_iter().fold(_mm512_setzero_ps(), |a, b| _mm512_add_ps(a, b)))
}

/// [`group_sums`] of BF16 pairs with `vdpbf16ps`, against the activations' bfloat16 pairs.
///
/// # Safety
/// As for [`group_sums`], and AVX512-BF16.
#[allow(clippy::needless_range_loop)]
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")]
unsafe fn bf16_pair_sums<const C: usize, const CHAINS: usize>(
    group: *const u8,
    nb: usize,
    acts: [ActRow; C],
    ahead: Option<Cache>,
) -> [__m512; C] {
    let mut acc = [[_mm512_setzero_ps(); CHAINS]; C];
    for step in (0..nb * QK / 2).step_by(CHAINS) {
        ask_ahead(ahead, group.wrapping_add(64 * step), 64 * CHAINS);
        for ch in 0..CHAINS {
            let k = step + ch;
            // SAFETY: as in group_sums; a bfloat16 pair and a register are plain bits.
            unsafe {
                let w = std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(group.add(64 * k).cast()));
                for c in 0..C {
                    // the activations' bfloat16 pair k, broadcast
                    let pair = acts[c].levels.cast::<i32>().add(k).read_unaligned();
                    let y = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(pair));
                    let chain = &mut acc[c][ch];
                    *chain = _mm512_dpbf16_ps(*chain, w, y);
                }
            }
        }
    }
    acc.map(|chains| chains.into_iter().fold(_mm512_setzero_ps(), |a, b| _mm512_add_ps(a, b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The widening BF16 product (for processors without AVX512-BF16) against the scalar one,
    /// on one group of two blocks.
    #[test]
    fn widened_bf16_pairs_sum_as_the_scalar_path() {
        if !crate::cpu::features::features().has_avx512() {
            return;
        }
        let nb = 2;
        let group: Vec<u8> = (0..nb * Floats::<Bf16>::GROUP_BLOCK)
            .map(|i| if i % 2 == 0 { (i * 7) as u8 } else { 0x3f + (i % 3) as u8 })
            .collect();
        let mut acts = vec![0u16; nb * QK];
        let act = ActRow { levels: acts.as_mut_ptr().cast(), scales: std::ptr::null(), sums: std::ptr::null() };
        for i in 0..nb * QK {
            // SAFETY: value i of the column.
            unsafe { Bf16::store_act(act.levels, i, (i as f32 - 20.0) / 16.0) };
        }
        let mut want = [0f32; GROUP_ROWS];
        // SAFETY: a group of nb blocks, a column of nb blocks, 16 results.
        unsafe { Floats::<Bf16>::tile_scalar(group.as_ptr(), nb, &[(act, want.as_mut_ptr())]) };
        // SAFETY: AVX-512 was checked; as above.
        let got: [f32; GROUP_ROWS] =
            unsafe { std::mem::transmute(group_sums::<Bf16, 1, 4>(group.as_ptr(), nb, [act], None)[0]) };
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} against {w}");
        }
    }
}
