//! The 32-value block formats in the repacked layout: Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4
//! (nibbles, with a fifth bit for Q5) and Q8_0 (bytes), against Q8_0 activations.
//!
//! The weights take part as unsigned bytes `u = level + BIAS`: the nibble itself for Q4_0
//! (BIAS 8), Q5_0 with its fifth bit (16), Q4_1 and Q5_1 (0: they are unsigned), the
//! format's table plus 128 for IQ4_NL and MXFP4, the byte plus 128 for Q8_0. A block's sixteen
//! rows' sums `Σ u·a` start from `−BIAS·Σa` and are scaled once per block and sixteen rows;
//! Q4_1 and Q5_1 add their minimums times `Σa`. The fifth bits of a Q5 block are one 32-bit
//! word per row, one register for sixteen rows: each chunk picks its four bits by a byte
//! shuffle and a bit test.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::marker::PhantomData;

#[cfg(target_arch = "x86_64")]
use super::f16x16;
use super::{ActRow, Column, Parts, Scheme, parts_of};
use crate::core::types::Type;
use crate::cpu::repack::layout::GROUP_ROWS;
use crate::quants::fp4::{E2M1_DOUBLED, e8m0_to_f32_half};
use crate::quants::half::Half;
use crate::quants::iq4::LEVELS as IQ4_NL_LEVELS;

/// Values per block.
const QK: usize = 32;

/// A weight format of the layout, as the product reads it.
pub(super) trait Format {
    /// The parts of a block (the layout's [`Parts`] of the type).
    const PARTS: Parts;
    /// What is added to a level to make it an unsigned byte.
    const BIAS: i32;
    /// The unsigned bytes of the 16 nibble values, when they are not the nibbles themselves.
    const TABLE: Option<[i8; 16]> = None;
    /// Whether the scale is followed by a minimum (Q4_1, Q5_1).
    const MIN: bool = false;
    /// Whether the quants are preceded by the levels' fifth bits (Q5_0, Q5_1).
    const FIFTH: bool = false;
    /// Whether [`tile_avx2`] computes the format: the nibbles of Q4_0 and Q4_1, whose byte
    /// products `maddubs` sums without saturating, Q8_0's signed bytes and IQ4_NL's signed
    /// table levels (MXFP4's E8M0 scales and the Q5 fifth bits are not done).
    const AVX2: bool = false;

    /// The scale of a block from its stored bytes (for the levels as [`level`] gives them).
    fn scale(bytes: &[u8]) -> f32 {
        f16_scale(bytes)
    }

    /// The sixteen rows' scales of a group block, whose scales start at `at`.
    ///
    /// # Safety
    /// AVX-512; `at` holds sixteen scales.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn scales(at: *const u8) -> __m512 {
        // SAFETY: the caller's contract: 16 F16 scales at `at`.
        unsafe { f16x16(at) }
    }
}

/// The run of `F`'s quants (the last).
const fn quants<F: Format>() -> usize {
    F::PARTS.runs.len() - 1
}

/// Whether `F` stores its quants as nibbles (else as bytes).
const fn nibbles<F: Format>() -> bool {
    F::PARTS.runs[quants::<F>()].size == QK / 2
}

/// The signed level of value `i` of a block whose quant bytes are `qs` and fifth bits `qh`.
fn level<F: Format>(qs: &[u8], qh: u32, i: usize) -> i32 {
    if !nibbles::<F>() {
        return i32::from(qs[i] as i8);
    }
    let nibble = if i < QK / 2 { qs[i] & 15 } else { qs[i - QK / 2] >> 4 };
    let fifth = if F::FIFTH { ((qh >> i) & 1) as u8 } else { 0 };
    match F::TABLE {
        Some(t) => i32::from(t[usize::from(nibble)] as u8) - F::BIAS,
        None => i32::from(nibble | fifth << 4) - F::BIAS,
    }
}

/// Which bytes of the sixteen 32-bit fifth-bit words `qh` have the bit of their position
/// among values `first..first + 4` (`first` a multiple of 4) set: the masks that lift those
/// values' nibbles by 16.
///
/// # Safety
/// AVX-512 (F, BW).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
fn fifth_bits(qh: __m512i, first: usize) -> __mmask64 {
    // every byte of a word takes the word's byte that holds bits first..first + 4
    let within = _mm512_set_epi32(12, 8, 4, 0, 12, 8, 4, 0, 12, 8, 4, 0, 12, 8, 4, 0);
    let pick = _mm512_mullo_epi32(
        _mm512_add_epi32(within, _mm512_set1_epi32((first / 8) as i32)),
        _mm512_set1_epi32(0x0101_0101),
    );
    let bits = _mm512_set1_epi32((0x0804_0201u32 << (first % 8)) as i32);
    _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, pick), bits)
}

/// Where in a block the activations of register pair `j` of [`values`] start.
const fn offsets<F: Format>(j: usize) -> (usize, usize) {
    if nibbles::<F>() { (4 * j, QK / 2 + 4 * j) } else { (8 * j, 8 * j + 4) }
}

/// The unsigned values of register pair `j` (0..4) of a group block's quants at `qs`: for the
/// nibble formats the low and high nibbles of chunk `j` (looked up in `table` if there is
/// one), for bytes chunks `2j` and `2j + 1`.
///
/// # Safety
/// AVX-512; `qs` holds the group block's quants.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn values<F: Format>(qs: *const u8, qh: __m512i, j: usize, table: Option<__m512i>) -> (__m512i, __m512i) {
    if !nibbles::<F>() {
        // the signed bytes plus 128
        let flip = _mm512_set1_epi8(i8::MIN);
        // SAFETY: chunks 2j and 2j + 1 of the caller's quants.
        let (lo, hi) =
            unsafe { (_mm512_loadu_si512(qs.add(128 * j).cast()), _mm512_loadu_si512(qs.add(128 * j + 64).cast())) };
        return (_mm512_xor_si512(lo, flip), _mm512_xor_si512(hi, flip));
    }
    let low = _mm512_set1_epi8(0x0f);
    // SAFETY: chunk j of the caller's quants.
    let w = unsafe { _mm512_loadu_si512(qs.add(64 * j).cast()) };
    let (lo, hi) = (_mm512_and_si512(w, low), _mm512_and_si512(_mm512_srli_epi16::<4>(w), low));
    if F::FIFTH {
        let sixteen = _mm512_set1_epi8(16);
        return (
            _mm512_mask_add_epi8(lo, fifth_bits(qh, 4 * j), lo, sixteen),
            _mm512_mask_add_epi8(hi, fifth_bits(qh, QK / 2 + 4 * j), hi, sixteen),
        );
    }
    match table {
        Some(t) => (_mm512_shuffle_epi8(t, lo), _mm512_shuffle_epi8(t, hi)),
        None => (lo, hi),
    }
}

/// The unsigned bytes of a table of signed levels: each plus 128 (as `i8` bits, for
/// `vpshufb`).
const fn offset_by_128(levels: [i8; 16]) -> [i8; 16] {
    let mut t = [0i8; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = (levels[i] as u8).wrapping_add(128) as i8;
        i += 1;
    }
    t
}

fn f16_scale(bytes: &[u8]) -> f32 {
    Half::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f32()
}

pub(super) struct Q4_0;
pub(super) struct Q4_1;
pub(super) struct Q5_0;
pub(super) struct Q5_1;
pub(super) struct Iq4Nl;
pub(super) struct Mxfp4;
pub(super) struct Q8_0;

impl Format for Q4_0 {
    const PARTS: Parts = parts_of(Type::Q4_0);
    const BIAS: i32 = 8;
    const AVX2: bool = true;
}

impl Format for Q4_1 {
    const PARTS: Parts = parts_of(Type::Q4_1);
    const BIAS: i32 = 0;
    const MIN: bool = true;
    const AVX2: bool = true;
}

impl Format for Q5_0 {
    const PARTS: Parts = parts_of(Type::Q5_0);
    const BIAS: i32 = 16;
    const FIFTH: bool = true;
}

impl Format for Q5_1 {
    const PARTS: Parts = parts_of(Type::Q5_1);
    const BIAS: i32 = 0;
    const MIN: bool = true;
    const FIFTH: bool = true;
}

impl Format for Iq4Nl {
    const PARTS: Parts = parts_of(Type::IQ4_NL);
    const BIAS: i32 = 128;
    const TABLE: Option<[i8; 16]> = Some(offset_by_128(IQ4_NL_LEVELS));
    const AVX2: bool = true;
}

impl Format for Q8_0 {
    const PARTS: Parts = parts_of(Type::Q8_0);
    const BIAS: i32 = 128;
    const AVX2: bool = true;
}

impl Format for Mxfp4 {
    const PARTS: Parts = parts_of(Type::MXFP4);
    const BIAS: i32 = 128;
    // the E2M1 values doubled: integers, scaled by half the E8M0 scale
    const TABLE: Option<[i8; 16]> = Some(offset_by_128(E2M1_DOUBLED));

    fn scale(bytes: &[u8]) -> f32 {
        e8m0_to_f32_half(bytes[0])
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
    unsafe fn scales(at: *const u8) -> __m512 {
        // SAFETY: the caller's contract: 16 bytes at `at`.
        let e = _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(at.cast()) });
        // half of 2^(e-127): the exponent e-1, or for e < 2 the subnormal 2^(e-128)
        let normal = _mm512_slli_epi32::<23>(_mm512_sub_epi32(e, _mm512_set1_epi32(1)));
        let subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x0020_0000), e);
        let small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
        _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal))
    }
}

/// The 32-value formats' [`Scheme`].
pub(super) struct Blocks<F>(PhantomData<F>);

impl<F: Format> Scheme for Blocks<F> {
    const QK: usize = QK;
    const SUMS: usize = 1;
    const TILE_COLS: usize = 8;

    unsafe fn tile_scalar(group: *const u8, nb: usize, cols: &[Column]) {
        // SAFETY: the caller's contract.
        unsafe { tile_scalar::<F>(group, nb, cols) }
    }

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx512(group: *const u8, nb: usize, cols: &[Column]) {
        // SAFETY: the caller's contract.
        unsafe { tile_avx512::<F>(group, nb, cols) }
    }

    const AVX2: bool = F::AVX2;

    #[cfg(target_arch = "x86_64")]
    unsafe fn tile_avx2(group: *const u8, nb: usize, cols: &[Column]) {
        if !F::AVX2 {
            // SAFETY: the caller's contract.
            return unsafe { tile_scalar::<F>(group, nb, cols) };
        }
        // SAFETY: the caller's contract.
        unsafe { tile_avx2::<F>(group, nb, cols) }
    }
}

/// The group at `group` (of `nb` blocks) against each column, in the order of ggml's reference
/// product: each block's integer sum scaled by both scales, added in `f32`.
///
/// # Safety
/// `group` holds a group of `nb` blocks in `F`'s layout; each column's activations hold `nb`
/// blocks and its destination 16 floats.
unsafe fn tile_scalar<F: Format>(group: *const u8, nb: usize, cols: &[Column]) {
    let block = GROUP_ROWS * F::PARTS.block();
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(group, nb * block) };
    for &(act, out) in cols {
        let mut sums = [0f32; GROUP_ROWS];
        for (b, blk) in bytes.chunks_exact(block).enumerate() {
            // SAFETY: block b < nb of the column.
            let (levels, d, sum_a) = unsafe {
                (std::slice::from_raw_parts(act.levels.add(b * QK), QK), *act.scales.add(b), *act.sums.add(b))
            };
            for (r, sum) in sums.iter_mut().enumerate() {
                // the row's bytes of each run, gathered
                let run = |i: usize| {
                    let run = F::PARTS.runs[i];
                    let mut bytes = [0u8; QK];
                    for (t, byte) in bytes[..run.size].iter_mut().enumerate() {
                        *byte = blk[F::PARTS.position(run.at + t, r)];
                    }
                    bytes
                };
                let qs = run(quants::<F>());
                let qh = if F::FIFTH {
                    u32::from_le_bytes(run(quants::<F>() - 1)[..4].try_into().unwrap_or_default())
                } else {
                    0
                };
                let dot: i32 = (0..QK).map(|i| level::<F>(&qs, qh, i) * i32::from(levels[i])).sum();
                *sum += dot as f32 * (F::scale(&run(0)) * d);
                if F::MIN {
                    *sum += f16_scale(&run(1)) * (d * sum_a as f32);
                }
            }
        }
        // SAFETY: the destination holds 16 floats (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(sums.as_ptr(), out, GROUP_ROWS) };
    }
}

/// The group at `group` (of `nb` blocks) against each column with AVX-512 VNNI: per block,
/// four registers of sixteen rows' nibbles, split into low and high values, each against four
/// activation bytes broadcast.
///
/// # Safety
/// AVX-512 (F, BW, VL, DQ, VNNI); as for [`tile_scalar`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn tile_avx512<F: Format>(group: *const u8, nb: usize, cols: &[Column]) {
    // SAFETY: the caller's contract.
    run_tile!(cols, |acts| unsafe { group_sums::<F, _>(group, nb, acts) }, 1 2 3 4 5 6 7 8);
}

/// The sixteen rows' products with `C` columns.
///
/// # Safety
/// As for [`tile_avx512`].
// Columns index the sums and activation rows together.
#[allow(clippy::needless_range_loop)]
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
unsafe fn group_sums<F: Format, const C: usize>(group: *const u8, nb: usize, acts: [ActRow; C]) -> [__m512; C] {
    let (head, block) = (const { F::PARTS.packed(quants::<F>()) }, const { GROUP_ROWS * F::PARTS.block() });
    // SAFETY: the table holds 16 bytes.
    let table = F::TABLE.map(|t| _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(t.as_ptr().cast()) }));
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract).
        unsafe {
            let base = group.add(b * block);
            let d = F::scales(base);
            let qs = base.add(head);
            let qh = if F::FIFTH {
                _mm512_loadu_si512(base.add(const { F::PARTS.packed(quants::<F>() - 1) }).cast())
            } else {
                _mm512_setzero_si512()
            };
            let mut sums: [__m512i; C] = std::array::from_fn(|c| _mm512_set1_epi32(-F::BIAS * *acts[c].sums.add(b)));
            for j in 0..4 {
                let (lo, hi) = values::<F>(qs, qh, j, table);
                let (lo_at, hi_at) = offsets::<F>(j);
                for c in 0..C {
                    let a = acts[c].levels.add(b * QK);
                    let a_lo = _mm512_set1_epi32(a.add(lo_at).cast::<i32>().read_unaligned());
                    let a_hi = _mm512_set1_epi32(a.add(hi_at).cast::<i32>().read_unaligned());
                    sums[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sums[c], lo, a_lo), hi, a_hi);
                }
            }
            let m = if F::MIN { f16x16(base.add(const { F::PARTS.packed(1) })) } else { _mm512_setzero_ps() };
            for c in 0..C {
                let da = *acts[c].scales.add(b);
                let scale = _mm512_mul_ps(d, _mm512_set1_ps(da));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[c]), scale, acc[c]);
                if F::MIN {
                    acc[c] = _mm512_fmadd_ps(m, _mm512_set1_ps(da * *acts[c].sums.add(b) as f32), acc[c]);
                }
            }
        }
    }
    acc
}

/// The group at `group` (of `nb` blocks) against each column with AVX2, for the formats of
/// [`Format::AVX2`]: each 64-byte chunk of a group block is two registers, rows 0..8 and
/// 8..16, one row per 32-bit lane, multiplied with four activation bytes broadcast.
///
/// # Safety
/// AVX2, FMA and F16C; `F::AVX2`; as for [`tile_scalar`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile_avx2<F: Format>(group: *const u8, nb: usize, cols: &[Column]) {
    // SAFETY: the caller's contract.
    run_tile_avx2!(cols, |acts| unsafe { group_sums_avx2::<F, _>(group, nb, acts) }, 1 2 3 4 5 6 7 8);
}

/// The sixteen rows' products with `C` columns, as two halves of eight rows.
///
/// Nibble weights (Q4_0, Q4_1) go into `maddubs` as they are, unsigned: a lane's pair sum is
/// at most 2·15·127 = 3810 in magnitude (the activations are levels of ±127), so the eight
/// products of a block add up in 16 bits (30480) before one `madd` widens them, and `−BIAS·Σa`
/// is added once. Byte weights (Q8_0) and table levels (IQ4_NL, looked up signed) are signed:
/// their magnitudes go in (up to 128), their signs move onto the activations, and each product
/// is widened at once (2·128·127 = 32512 leaves no room to add two). Either way the integer
/// sums are exact, as in [`tile_scalar`].
///
/// # Safety
/// As for [`tile_avx2`].
// Columns and halves index the sums and activation rows together.
#[allow(clippy::needless_range_loop)]
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn group_sums_avx2<F: Format, const C: usize>(
    group: *const u8,
    nb: usize,
    acts: [ActRow; C],
) -> [[__m256; 2]; C] {
    let (head, block) = (const { F::PARTS.packed(quants::<F>()) }, const { GROUP_ROWS * F::PARTS.block() });
    let ones = _mm256_set1_epi16(1);
    // the table's levels themselves, signed (its bytes less 128), in both lanes: made once, as
    // building them per block stalls each load on the stores before it
    let signed_table = F::TABLE.map(|table| {
        let signed = table.map(|t| t ^ i8::MIN);
        // SAFETY: the array holds the 16 bytes read.
        _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(signed.as_ptr().cast()) })
    });
    let mut acc = [[_mm256_setzero_ps(); 2]; C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract): the
        // group block's 16 scales (and minimums) and its quants, each column's 32 levels.
        unsafe {
            let base = group.add(b * block);
            let qs = base.add(head);
            let levels: [*const i8; C] = std::array::from_fn(|c| acts[c].levels.add(b * QK));
            // four activation bytes, broadcast: one per weight lane
            let four = |c: usize, at: usize| _mm256_set1_epi32(levels[c].add(at).cast::<i32>().read_unaligned());
            for h in 0..2 {
                let d = _mm256_cvtph_ps(_mm_loadu_si128(base.add(16 * h).cast()));
                let m = if F::MIN {
                    _mm256_cvtph_ps(_mm_loadu_si128(base.add(const { F::PARTS.packed(1) } + 16 * h).cast()))
                } else {
                    _mm256_setzero_ps()
                };
                let mut sums = [_mm256_setzero_si256(); C];
                if let Some(levels) = signed_table {
                    let low = _mm256_set1_epi8(0x0f);
                    let chunks: [(__m256i, __m256i); 4] = std::array::from_fn(|j| {
                        let w = _mm256_loadu_si256(qs.add(64 * j + 32 * h).cast());
                        let (lo, hi) = (_mm256_and_si256(w, low), _mm256_and_si256(_mm256_srli_epi16::<4>(w), low));
                        (_mm256_shuffle_epi8(levels, lo), _mm256_shuffle_epi8(levels, hi))
                    });
                    for c in 0..C {
                        for (j, &(lo, hi)) in chunks.iter().enumerate() {
                            let (lo_at, hi_at) = offsets::<F>(j);
                            for (w, at) in [(lo, lo_at), (hi, hi_at)] {
                                let a = _mm256_sign_epi8(four(c, at), w);
                                let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), a);
                                sums[c] = _mm256_add_epi32(sums[c], _mm256_madd_epi16(pairs, ones));
                            }
                        }
                    }
                } else if nibbles::<F>() {
                    let low = _mm256_set1_epi8(0x0f);
                    let chunks: [(__m256i, __m256i); 4] = std::array::from_fn(|j| {
                        let w = _mm256_loadu_si256(qs.add(64 * j + 32 * h).cast());
                        (_mm256_and_si256(w, low), _mm256_and_si256(_mm256_srli_epi16::<4>(w), low))
                    });
                    for c in 0..C {
                        let mut pairs = _mm256_setzero_si256();
                        for (j, &(lo, hi)) in chunks.iter().enumerate() {
                            let (lo_at, hi_at) = offsets::<F>(j);
                            pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(lo, four(c, lo_at)));
                            pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(hi, four(c, hi_at)));
                        }
                        let bias = _mm256_set1_epi32(-F::BIAS * *acts[c].sums.add(b));
                        sums[c] = _mm256_add_epi32(_mm256_madd_epi16(pairs, ones), bias);
                    }
                } else {
                    let chunks: [__m256i; 8] =
                        std::array::from_fn(|k| _mm256_loadu_si256(qs.add(64 * k + 32 * h).cast()));
                    let magnitudes: [__m256i; 8] = std::array::from_fn(|k| _mm256_abs_epi8(chunks[k]));
                    for c in 0..C {
                        for (k, (&w, &mag)) in chunks.iter().zip(&magnitudes).enumerate() {
                            let a = _mm256_sign_epi8(four(c, 4 * k), w);
                            sums[c] = _mm256_add_epi32(sums[c], _mm256_madd_epi16(_mm256_maddubs_epi16(mag, a), ones));
                        }
                    }
                }
                for c in 0..C {
                    let da = *acts[c].scales.add(b);
                    acc[c][h] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[c]), _mm256_mul_ps(d, _mm256_set1_ps(da)), acc[c][h]);
                    if F::MIN {
                        acc[c][h] = _mm256_fmadd_ps(m, _mm256_set1_ps(da * *acts[c].sums.add(b) as f32), acc[c][h]);
                    }
                }
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_each_format() {
        // every nibble, low then high
        let qs: [u8; 16] = std::array::from_fn(|i| (i as u8) | ((15 - i as u8) << 4));
        let low = |f: fn(&[u8], u32, usize) -> i32| (0..16).map(|i| f(&qs, 0, i)).collect::<Vec<_>>();
        assert_eq!(low(level::<Iq4Nl>), IQ4_NL_LEVELS.map(i32::from));
        assert_eq!(low(level::<Mxfp4>), E2M1_DOUBLED.map(i32::from));
        assert_eq!(low(level::<Q4_0>), (-8..8).collect::<Vec<_>>());
        assert_eq!(level::<Q4_0>(&qs, 0, 16), 15 - 8);
        assert_eq!(level::<Q8_0>(&[0x80; 32], 0, 31), -128);
        // the fifth bit of value i is bit i of the word
        assert_eq!(level::<Q5_0>(&qs, 1 << 17, 17), (14 | 16) - 16);
        assert_eq!(level::<Q5_1>(&qs, 1 << 3, 3), 3 | 16);
        assert_eq!(level::<Q4_1>(&qs, u32::MAX, 3), 3);
    }

    #[test]
    fn e8m0_scales_convert_as_the_scalar_path() {
        if !crate::cpu::features::features().has_avx512() {
            return;
        }
        for first in (0..=255u8).step_by(16) {
            let bytes: [u8; 16] = std::array::from_fn(|i| first.wrapping_add(i as u8));
            // SAFETY: AVX-512 was checked; 16 bytes.
            let got: [f32; 16] = unsafe { std::mem::transmute(Mxfp4::scales(bytes.as_ptr())) };
            for (g, &e) in got.iter().zip(&bytes) {
                assert_eq!(g.to_bits(), e8m0_to_f32_half(e).to_bits(), "e = {e}");
            }
        }
    }
}
