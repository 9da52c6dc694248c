//! AVX-512 tiles of the grid I-quants by q8_K for processors with AVX512-VBMI (Ice Lake,
//! Zen 4 and later), which keep the grid in registers and read it by permutation, or, for the
//! grid too large for that (IQ2_S), load whole points by index (see `iq2::avx512::iq2_s`).
//!
//! The AVX2 tiles ([`super::byte_tiles`]) fetch every grid point with a load of its own, after
//! taking its index out of a vector: 32 of each per 256 values, and those, not the arithmetic,
//! bound them. Here a point is a 16-bit code of its coordinates' levels (2 bits a coordinate
//! for the 8-coordinate grids, 3 for the 4-coordinate ones), 32 codes to a register:
//! - `vpermi2w` looks up 32 indices at once among 64 codes, and masked moves choose between
//!   those parts by the indices' upper bits ([`Codes::lookup`]): for a 512-point grid, 8
//!   permutations and 7 moves instead of 32 loads;
//! - `vpmultishiftqb` spreads the codes' levels to bytes, and `vpermb` maps the levels to the
//!   format's values ([`levels8`], [`levels4`]).
//!
//! The signs become a mask that negates activation bytes, and the products are summed with
//! `vpmaddubsw` and `vpdpwssd`. These are the integer sums of the AVX2 tiles, so only the
//! order of the `f32` sums differs.
//!
//! Every function here needs AVX2, FMA, F16C, the AVX-512 subsets of
//! [`has_avx512`](crate::cpu::features::Features::has_avx512) and VBMI: the formats say so with
//! [`VecDot::AVX512_VBMI`](crate::cpu::kernels::dot::VecDot::AVX512_VBMI), and `dot::Path` checks it.

use std::arch::x86_64::*;
use std::sync::OnceLock;

use crate::cpu::kernels::prefetch;
use crate::quants::iq_grids::{Grid, points4, points8};
use crate::quants::k_quants::{BlockQ8K, QK_K};

/// A grid's points as 16-bit codes, 32 to a row: coordinate k's level at bit `bits·k`, for 2
/// bits a level in the 8-coordinate grids and 3 in the 4-coordinate ones.
#[repr(C, align(64))]
pub struct CodeTable<const Z: usize>([[u16; 32]; Z]);

impl<const Z: usize> CodeTable<Z> {
    fn of(grid: Grid) -> Box<CodeTable<Z>> {
        let code = |bits: usize, levels: &[u8]| levels.iter().rev().fold(0u16, |c, &l| c << bits | u16::from(l));
        let codes: Vec<u16> = match grid.dims() {
            8 => points8(grid).iter().map(|p| code(2, p)).collect(),
            _ => points4(grid).iter().map(|p| code(3, p)).collect(),
        };
        crate::ggml_assert!(codes.len() == 32 * Z, "grid {:?} has {} points, not {}", grid, codes.len(), 32 * Z);
        Box::new(CodeTable(std::array::from_fn(|z| std::array::from_fn(|i| codes[32 * z + i]))))
    }
}

/// The code tables of the grids the tiles here read.
pub struct GridCodes {
    pub iq2_xxs: Box<CodeTable<8>>,
    pub iq2_xs: Box<CodeTable<16>>,
    pub iq3_xxs: Box<CodeTable<8>>,
    pub iq3_s: Box<CodeTable<16>>,
}

/// The code tables, built on first use.
pub fn grid_codes() -> &'static GridCodes {
    static CODES: OnceLock<GridCodes> = OnceLock::new();
    CODES.get_or_init(|| GridCodes {
        iq2_xxs: CodeTable::of(Grid::Iq2Xxs),
        iq2_xs: CodeTable::of(Grid::Iq2Xs),
        iq3_xxs: CodeTable::of(Grid::Iq3Xxs),
        iq3_s: CodeTable::of(Grid::Iq3S),
    })
}

/// A code table in registers.
#[derive(Clone, Copy)]
pub struct Codes<const Z: usize>([__m512i; Z]);

impl<const Z: usize> Codes<Z> {
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn load(table: &CodeTable<Z>) -> Codes<Z> {
        let mut regs = [_mm512_setzero_si512(); Z];
        for (reg, row) in regs.iter_mut().zip(&table.0) {
            // SAFETY: a row is 64 aligned bytes.
            *reg = unsafe { _mm512_load_si512(row.as_ptr().cast()) };
        }
        Codes(regs)
    }

    /// The codes of the 32 points whose indices (below 32·Z) are in the 16-bit lanes of
    /// `index`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
    pub fn lookup(&self, index: __m512i) -> __m512i {
        // each pair of registers by the low 6 bits
        let mut part = [_mm512_setzero_si512(); Z];
        for (out, pair) in part.iter_mut().zip(self.0.chunks_exact(2)) {
            *out = _mm512_permutex2var_epi16(pair[0], index, pair[1]);
        }
        // then half of the parts by each higher bit
        let (mut parts, mut bit) = (Z / 2, 64);
        while parts > 1 {
            let upper = _mm512_test_epi16_mask(index, _mm512_set1_epi16(bit));
            for p in 0..parts / 2 {
                part[p] = _mm512_mask_mov_epi16(part[2 * p], upper, part[2 * p + 1]);
            }
            parts /= 2;
            bit <<= 1;
        }
        part[0]
    }
}

/// 16-bit lanes `first + (w >> shift)` for lanes w = 0..32: a permutation index repeating
/// each of a run of lanes `1 << shift` times.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
fn repeating16(first: usize, shift: u32) -> __m512i {
    const LANES: [u16; 32] = {
        let mut lanes = [0; 32];
        let mut w = 0;
        while w < 32 {
            lanes[w] = w as u16;
            w += 1;
        }
        lanes
    };
    // SAFETY: 64 bytes.
    let lanes = unsafe { _mm512_loadu_si512(LANES.as_ptr().cast()) };
    _mm512_add_epi16(_mm512_srl_epi16(lanes, _mm_cvtsi32_si128(shift as i32)), _mm512_set1_epi16(first as i16))
}

/// A 64-byte `vpermb` table giving each level's value: entry i holds level `i % period`'s (so
/// that a byte's bits above its level's do not matter), `period` a power of two of at least
/// `values.len()` levels. (A constant: built in the tile, it took a loop per call.)
pub const fn level_table(values: &[u8], period: usize) -> [u8; 64] {
    let mut table = [0; 64];
    let mut i = 0;
    while i < 64 {
        if i % period < values.len() {
            table[i] = values[i % period];
        }
        i += 1;
    }
    table
}

/// A level table in a register.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn level_values(table: &[u8; 64]) -> __m512i {
    // SAFETY: 64 bytes.
    unsafe { _mm512_loadu_si512(table.as_ptr().cast()) }
}

/// The high bits of 32 grid indices, points `8·first / bits` on, from `qh`, which holds
/// `bits` of them per point (point p's from bit `bits·p` of the array): in the 16-bit lanes, at
/// bit 8 up.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn index_high_bits(qh: &[u8; 8], first: usize, bits: u32) -> __m512i {
    // SAFETY: 8 bytes.
    let bytes = _mm512_cvtepu8_epi16(_mm256_castsi128_si256(unsafe { _mm_loadl_epi64(qh.as_ptr().cast()) }));
    let per_byte = (8 / bits).trailing_zeros();
    // lane l: byte first + l / points per byte, shifted so that its bits for the point sit at 8
    let spread = _mm512_permutexvar_epi16(repeating16(first, per_byte), bytes);
    let within = _mm512_and_si512(repeating16(0, 0), _mm512_set1_epi16((1 << per_byte) - 1));
    let shift = _mm512_sub_epi16(_mm512_set1_epi16(8), _mm512_mullo_epi16(within, _mm512_set1_epi16(bits as i16)));
    _mm512_and_si512(_mm512_sllv_epi16(spread, shift), _mm512_set1_epi16(((1 << bits) - 1) << 8))
}

/// Values 64k..64k+64 of 8-coordinate points: the coordinates of points 8k..8k+8 of `codes`
/// (2 bits each), through the level table `values` ([`level_values`], 4 levels).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn levels8(codes: __m512i, k: usize, values: __m512i) -> __m512i {
    // every 16-bit lane of 64-bit lane q holds the code of point 8k + q
    let spread = _mm512_permutexvar_epi16(repeating16(8 * k, 2), codes);
    // byte j of a 64-bit lane: the bits from 2j on
    let levels = _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x0e0c_0a08_0604_0200), spread);
    _mm512_permutexvar_epi8(levels, values)
}

/// Values 64k..64k+64 of 4-coordinate points: the coordinates of points 16k..16k+16 (3 bits
/// each), from `codes[k / 2]`, which hold points 32·(k / 2) on, through the level table
/// `values` ([`level_values`], 8 levels).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn levels4(codes: &[__m512i; 2], k: usize, values: __m512i) -> __m512i {
    // both 16-bit lanes of 32-bit lane d hold the code of point 16k + d
    let spread = _mm512_permutexvar_epi16(repeating16(16 * (k % 2), 1), codes[k / 2]);
    // bytes 0..4 of a 64-bit lane: the bits from 3j on; bytes 4..8: from 32 + 3j
    let levels = _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x2926_2320_0906_0300), spread);
    _mm512_permutexvar_epi8(levels, values)
}

/// The full 8-bit signs of groups of 8 values stored as 7 bits (any bit 7 ignored), byte by
/// byte: the eighth bit makes the count of set bits even.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn seven_bit_signs(stored: __m256i) -> __m256i {
    // 0x80 where a nibble has an odd count of set bits
    const ODD: [u8; 16] = [0, 0x80, 0x80, 0, 0x80, 0, 0, 0x80, 0x80, 0, 0, 0x80, 0, 0x80, 0x80, 0];
    // SAFETY: 16 bytes.
    let odd = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(ODD.as_ptr().cast()) });
    let nibble = _mm256_set1_epi8(0x0f);
    let stored = _mm256_and_si256(stored, _mm256_set1_epi8(0x7f));
    // the low nibble of s ^ s >> 4 has the parity of all 7 bits
    let folded = _mm256_and_si256(_mm256_xor_si256(stored, _mm256_srli_epi16::<4>(stored)), nibble);
    _mm256_or_si256(stored, _mm256_shuffle_epi8(odd, folded))
}

/// The 7-bit sign codes and multipliers of the `xxs` formats from their eight 32-bit words,
/// one per 32 values (4 sign codes of 7 bits, a 4-bit scale s on top): the full signs of
/// group g in byte g, and the multipliers 2s+1 in 16-bit lanes 0..8.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn xxs_signs_and_multipliers(words: __m256i) -> (__m512i, __m512i) {
    // byte j of a 64-bit lane (two words): the bits from 7j in the first word, 32 + 7(j − 4)
    // in the second
    let stored = _mm256_multishift_epi64_epi8(_mm256_set1_epi64x(0x352e_2720_150e_0700), words);
    let multipliers = _mm256_add_epi32(_mm256_slli_epi32::<1>(_mm256_srli_epi32::<28>(words)), _mm256_set1_epi32(1));
    let multipliers = _mm512_castsi128_si512(_mm256_cvtepi32_epi16(multipliers));
    (_mm512_castsi256_si512(seven_bit_signs(stored)), multipliers)
}

/// The multipliers 2s+1 of 4-bit scales s, two to a byte (low nibble first), in 16-bit
/// lanes; `scales` holds up to 8 bytes.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn odd_multipliers(scales: &[u8]) -> __m512i {
    let mut bytes = [0u8; 8];
    bytes[..scales.len()].copy_from_slice(scales);
    let packed = _mm_cvtsi64_si128(i64::from_le_bytes(bytes));
    let nibble = _mm_set1_epi8(0x0f);
    let s = _mm_unpacklo_epi8(_mm_and_si128(packed, nibble), _mm_and_si128(_mm_srli_epi16::<4>(packed), nibble));
    let odd = _mm_add_epi8(_mm_add_epi8(s, s), _mm_set1_epi8(1));
    _mm512_castsi256_si512(_mm256_cvtepu8_epi16(odd))
}

/// The multiplier of each pair-sum lane of values 64k..64k+64 (lane l: values 2l, 2l+1), from
/// `multipliers` with one 16-bit lane per `sub` values (16 or 32).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn chunk_multipliers(multipliers: __m512i, k: usize, sub: usize) -> __m512i {
    _mm512_permutexvar_epi16(repeating16(64 * k / sub, (sub / 2).trailing_zeros()), multipliers)
}

/// The mask of the values 64k..64k+64 to negate, from `signs` holding the 8 signs of group g
/// (values 8g..8g+8, bit j for value 8g + j) in byte g.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn sign_mask(signs: __m512i, k: usize) -> __mmask64 {
    const EIGHTHS: [u8; 64] = {
        let mut lanes = [0; 64];
        let mut i = 0;
        while i < 64 {
            lanes[i] = (i / 8) as u8;
            i += 1;
        }
        lanes
    };
    // SAFETY: 64 bytes.
    let eighths = unsafe { _mm512_loadu_si512(EIGHTHS.as_ptr().cast()) };
    let spread = _mm512_permutexvar_epi8(_mm512_add_epi8(eighths, _mm512_set1_epi8(8 * k as i8)), signs);
    let bit = _mm512_set1_epi64(0x8040_2010_0804_0201u64 as i64);
    _mm512_test_epi8_mask(spread, bit)
}

/// The mask of values 64k..64k+64 to negate from sign bytes in memory, bit j of byte i for
/// value 8i + j.
#[inline]
pub fn stored_sign_mask(signs: &[u8], k: usize) -> __mmask64 {
    let bytes = &signs[8 * k..8 * k + 8];
    u64::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]])
}

/// The 64 bytes of `bytes` from `at`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn load64(bytes: &[u8], at: usize) -> __m512i {
    let span = &bytes[at..at + 64];
    // SAFETY: `span` holds the 64 bytes read.
    unsafe { _mm512_loadu_si512(span.as_ptr().cast()) }
}

/// 64 decoded weights: magnitudes as unsigned bytes, the mask of those that are negative, and
/// the 16-bit multiplier of each pair-sum lane ([`chunk_multipliers`]).
#[derive(Clone, Copy)]
pub struct Chunk {
    pub magnitudes: __m512i,
    pub negative: __mmask64,
    pub multipliers: __m512i,
}

/// R×C products of rows of 256-value super-blocks with q8_K rows: `prep(block)` gives the
/// factor of a block's integer sums and what its chunks share (decoded once per block), and
/// `chunk(block, shared, k)` decodes values 64k..64k+64.
///
/// A chunk's magnitudes go into `vpmaddubsw` with the activations, negated where the weights
/// are: |w| ≤ 62 and activations within −128..127 keep the pair sums below 2¹⁵ (−128 negates
/// to itself, as under `vpsignb` in the AVX2 tiles and the reference's).
// Rows and columns index the accumulator grid together.
#[allow(clippy::needless_range_loop)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")]
pub fn q8k_tile<X, P, const R: usize, const C: usize>(
    x: &[&[X]; R],
    y: &[&[BlockQ8K]; C],
    prep: impl Fn(&X) -> (f32, P),
    chunk: impl Fn(&X, &P, usize) -> Chunk,
) -> [[f32; C]; R] {
    let mut acc = [[_mm512_setzero_ps(); C]; R];
    for b in 0..x[0].len() {
        prefetch::next_tile(x, b, 1);
        for r in 0..R {
            let xb = &x[r][b];
            let (dx, shared) = prep(xb);
            let mut sums = [_mm512_setzero_si512(); C];
            for k in 0..QK_K / 64 {
                let w = chunk(xb, &shared, k);
                for c in 0..C {
                    let q = load64(&y[c][b].qs, 64 * k);
                    let signed = _mm512_mask_sub_epi8(q, w.negative, _mm512_setzero_si512(), q);
                    let pairs = _mm512_maddubs_epi16(w.magnitudes, signed);
                    sums[c] = _mm512_dpwssd_epi32(sums[c], pairs, w.multipliers);
                }
            }
            for c in 0..C {
                let d = _mm512_set1_ps(dx * y[c][b].scale());
                acc[r][c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sums[c]), acc[r][c]);
            }
        }
    }
    let mut out = [[0.0f32; C]; R];
    for r in 0..R {
        for c in 0..C {
            out[r][c] = _mm512_reduce_add_ps(acc[r][c]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this processor runs the functions here (and AVX-512 is not turned off).
    fn available() -> bool {
        crate::cpu::features::features().has_avx512() && crate::cpu::features::features().avx512vbmi
    }

    #[test]
    fn codes_hold_the_levels_of_every_point() {
        let codes = grid_codes();
        let p = points8(Grid::Iq2Xs)[300];
        let code = codes.iq2_xs.0[300 / 32][300 % 32];
        assert!((0..8).all(|k| (code >> (2 * k)) & 3 == u16::from(p[k])));
        let p = points4(Grid::Iq3S)[511];
        let code = codes.iq3_s.0[15][31];
        assert!((0..4).all(|k| (code >> (3 * k)) & 7 == u16::from(p[k])));
    }

    #[test]
    fn lookups_and_spreads_give_each_points_values() {
        if !available() {
            return;
        }
        let values: Vec<u8> = (0..8).map(|l| 10 + 3 * l).collect();
        // SAFETY: the processor has what the functions need (checked above).
        unsafe {
            let table = &grid_codes().iq2_xs;
            let codes = Codes::load(table);
            let values4 = level_values(&level_table(&values[..4], 4));
            for first in (0..512).step_by(32 * 3) {
                let index: [u16; 32] = std::array::from_fn(|l| ((first + 37 * l) % 512) as u16);
                let index_reg = _mm512_loadu_si512(index.as_ptr().cast());
                let got = codes.lookup(index_reg);
                let codes_got: [u16; 32] = std::mem::transmute(got);
                assert_eq!(codes_got, index.map(|i| table.0[usize::from(i) / 32][usize::from(i) % 32]));
                for k in 0..4 {
                    let bytes: [u8; 64] = std::mem::transmute(levels8(got, k, values4));
                    for (v, &b) in bytes.iter().enumerate() {
                        let i = usize::from(index[8 * k + v / 8]);
                        assert_eq!(b, values[usize::from(points8(Grid::Iq2Xs)[i][v % 8])]);
                    }
                }
            }
            let table = &grid_codes().iq3_xxs;
            let codes = Codes::load(table);
            let index: [[u16; 32]; 2] =
                std::array::from_fn(|h| std::array::from_fn(|l| (97 * (32 * h + l) % 256) as u16));
            let got = index.map(|i| codes.lookup(_mm512_loadu_si512(i.as_ptr().cast())));
            for k in 0..4 {
                let bytes: [u8; 64] = std::mem::transmute(levels4(&got, k, level_values(&level_table(&values, 8))));
                for (v, &b) in bytes.iter().enumerate() {
                    let p = 16 * k + v / 4;
                    let point = points4(Grid::Iq3Xxs)[usize::from(index[p / 32][p % 32])];
                    assert_eq!(b, values[usize::from(point[v % 4])]);
                }
            }
        }
    }

    #[test]
    fn signs_and_multipliers_unpack_as_the_formats_store_them() {
        if !available() {
            return;
        }
        use crate::quants::iq_grids::SEVEN_BIT_SIGNS;
        let words: [u32; 8] = std::array::from_fn(|i| 0x9e37_79b9u32.wrapping_mul(i as u32 + 1));
        // SAFETY: the processor has what the functions need (checked above).
        unsafe {
            let (signs, multipliers) = xxs_signs_and_multipliers(_mm256_loadu_si256(words.as_ptr().cast()));
            let multipliers: [u16; 32] = std::mem::transmute(multipliers);
            for (i, w) in words.iter().enumerate() {
                assert_eq!(u32::from(multipliers[i]), 2 * (w >> 28) + 1);
                for k in 0..4 {
                    let mask = sign_mask(signs, i / 2);
                    let g = 4 * i + k;
                    let want = SEVEN_BIT_SIGNS[(w >> (7 * k)) as usize & 127];
                    assert_eq!((mask >> (8 * (g % 8))) as u8, want, "word {i} group {k}");
                }
            }
            let scales = [0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe];
            let m = odd_multipliers(&scales);
            for k in 0..4 {
                let lanes: [u16; 32] = std::mem::transmute(chunk_multipliers(m, k, 16));
                assert!(lanes.iter().enumerate().all(|(l, &v)| v == 2 * (4 * k + l / 8) as u16 + 1));
            }
            for k in 0..4 {
                let lanes: [u16; 32] = std::mem::transmute(chunk_multipliers(m, k, 32));
                assert!(lanes.iter().enumerate().all(|(l, &v)| v == 2 * (2 * k + l / 16) as u16 + 1));
            }
        }
    }
}
