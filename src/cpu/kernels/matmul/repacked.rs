//! MUL_MAT of weights in the CPU_REPACK layout ([`layout`]) by F32 activations.
//!
//! The activations are quantized to Q8_0 as for plain weights and stored per column as their
//! signed levels (32 bytes per block), then the blocks' scales as `f32`, then the blocks' level
//! sums as `i32`. The weights take part as unsigned bytes `u = level + BIAS`: the nibble itself
//! for Q4_0 (BIAS 8), the format's table plus 128 for IQ4_NL and MXFP4. `vpdpbusd` multiplies
//! unsigned by signed bytes, so a block's sixteen rows' sums `Σ u·a` start from `−BIAS·Σa`,
//! which leaves `Σ level·a` exactly, and are scaled once per block and sixteen rows.
//!
//! A thread's task is a range of groups by a range of columns; it runs each group against its
//! columns [`TILE_COLS`] at a time, so that a group's weights are read from memory once and
//! the rest of its columns find them in cache.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{ColumnIndex, ComputeParams, Tensor, ceil_div, share_rows, span, use_simd};
use crate::core::types::Type;
use crate::cpu::plan::CACHE_LINE_SIZE;
use crate::cpu::repack::layout::{self, GROUP_ROWS, Parts};
use crate::quants::fp4::{E2M1_DOUBLED, e8m0_to_f32_half};
use crate::quants::half::Half;
use crate::quants::iq4::LEVELS as IQ4_NL_LEVELS;
use crate::quants::q8::BlockQ8_0;

/// Values per block.
const QK: usize = 32;
/// Columns per pass over a group.
const TILE_COLS: usize = 8;
/// Columns per task: a task's activations stay in the core's cache while its groups run.
const TASK_COLS: i64 = 64;

/// A weight format of the layout, as the product reads it.
trait Format {
    /// The parts of a block (the layout's [`Parts`] of the type).
    const PARTS: Parts;
    /// What is added to a level to make it an unsigned byte.
    const BIAS: i32;
    /// The unsigned bytes of the 16 nibble values, when they are not the nibbles themselves.
    const TABLE: Option<[i8; 16]> = None;

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
        _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(at.cast()) })
    }
}

/// Whether `F` stores its quants as nibbles (else as bytes).
const fn nibbles<F: Format>() -> bool {
    F::PARTS.qs == QK / 2
}

/// The signed level of value `i` of a block whose quant bytes are `qs`.
fn level<F: Format>(qs: &[u8], i: usize) -> i32 {
    if !nibbles::<F>() {
        return i32::from(qs[i] as i8);
    }
    let nibble = if i < QK / 2 { qs[i] & 15 } else { qs[i - QK / 2] >> 4 };
    match F::TABLE {
        Some(t) => i32::from(t[usize::from(nibble)] as u8) - F::BIAS,
        None => i32::from(nibble) - F::BIAS,
    }
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
unsafe fn values<F: Format>(qs: *const u8, j: usize, table: Option<__m512i>) -> (__m512i, __m512i) {
    if !nibbles::<F>() {
        // the signed bytes plus 128
        let flip = _mm512_set1_epi8(i8::MIN);
        // SAFETY: chunks 2j and 2j + 1 of the caller's quants.
        let (lo, hi) = unsafe { (_mm512_loadu_si512(qs.add(128 * j).cast()), _mm512_loadu_si512(qs.add(128 * j + 64).cast())) };
        return (_mm512_xor_si512(lo, flip), _mm512_xor_si512(hi, flip));
    }
    let low = _mm512_set1_epi8(0x0f);
    // SAFETY: chunk j of the caller's quants.
    let w = unsafe { _mm512_loadu_si512(qs.add(64 * j).cast()) };
    let (lo, hi) = (_mm512_and_si512(w, low), _mm512_and_si512(_mm512_srli_epi16::<4>(w), low));
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

struct Q4_0;
struct Iq4Nl;
struct Mxfp4;
struct Q8_0;

/// The layout's parts of `ty`, at compile time.
const fn parts_of(ty: Type) -> Parts {
    match layout::parts(ty) {
        Some(parts) => parts,
        None => panic!("a format without a repacked layout"),
    }
}

impl Format for Q4_0 {
    const PARTS: Parts = parts_of(Type::Q4_0);
    const BIAS: i32 = 8;
}

impl Format for Iq4Nl {
    const PARTS: Parts = parts_of(Type::IQ4_NL);
    const BIAS: i32 = 128;
    const TABLE: Option<[i8; 16]> = Some(offset_by_128(IQ4_NL_LEVELS));
}

impl Format for Q8_0 {
    const PARTS: Parts = parts_of(Type::Q8_0);
    const BIAS: i32 = 128;
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

/// `$f::<Format>($args)` for the weights' type.
macro_rules! with_format {
    ($ty:expr, $f:ident($($args:expr),*)) => {
        match $ty {
            Type::Q4_0 => $f::<Q4_0>($($args),*),
            Type::IQ4_NL => $f::<Iq4Nl>($($args),*),
            Type::MXFP4 => $f::<Mxfp4>($($args),*),
            Type::Q8_0 => $f::<Q8_0>($($args),*),
            other => crate::ggml_abort!("mul_mat: {} weights have no repacked layout", other.name()),
        }
    };
}

/// Bytes of one column's activations of `n` values: levels, scales, sums.
fn column_size(n: usize) -> usize {
    n / QK * (QK + 4 + 4)
}

/// Scratch bytes for a product of repacked `src0` by `src1`: the converted activations.
pub(super) fn work_size(src1: &Tensor) -> usize {
    let cols = (src1.ne[1] * src1.ne[2] * src1.ne[3]) as usize;
    column_size(src1.ne[0] as usize) * cols + CACHE_LINE_SIZE
}

/// One column's activations.
#[derive(Clone, Copy)]
struct ActRow {
    levels: *const i8,
    scales: *const f32,
    sums: *const i32,
}

impl ActRow {
    /// Column `col` of the activations at `acts`, of `n` values.
    fn at(acts: *const u8, n: usize, col: usize) -> ActRow {
        let nb = n / QK;
        let levels = acts.wrapping_add(col * column_size(n));
        let scales = levels.wrapping_add(nb * QK).cast::<f32>();
        ActRow { levels: levels.cast(), scales, sums: scales.wrapping_add(nb).cast() }
    }
}

/// Converts blocks `first..last` of a column of F32 values `x` (those blocks' values) into the
/// column's activations `acts`.
///
/// # Safety
/// `acts` is a column of [`column_size`] bytes for `n` values, whose blocks `first..last` no
/// other thread touches meanwhile.
unsafe fn convert(x: &[f32], n: usize, first: usize, acts: ActRow, simd: bool) {
    let mut blocks = vec![BlockQ8_0::default(); x.len() / QK];
    if simd {
        super::dot::quantize_row_q8_0(x, &mut blocks);
    } else {
        super::dot::scalar::quantize_row_q8_0(x, &mut blocks);
    }
    debug_assert!(first + blocks.len() <= n / QK);
    for (b, blk) in (first..).zip(&blocks) {
        // SAFETY: block b of the column (the caller's contract); BlockQ8_0's levels are 32 bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(blk.qs.as_ptr(), acts.levels.add(b * QK).cast_mut().cast::<u8>(), QK);
            acts.scales.add(b).cast_mut().write(blk.d.to_f32());
            acts.sums.add(b).cast_mut().write(blk.qs.iter().map(|&q| i32::from(q as i8)).sum());
        }
    }
}

/// `dst = src0 · src1ᵀ` for repacked 2-D `src0` and F32 `src1`, with `wsize` bytes of scratch
/// at `wdata` (a cache line start).
pub(super) fn mul_mat(params: &ComputeParams, dst: &Tensor, src0: &Tensor, src1: &Tensor, wdata: *mut u8, wsize: usize) {
    crate::ggml_assert!(
        src1.type_ == Type::F32 && src0.ne[2] == 1 && src0.ne[3] == 1,
        "mul_mat: repacked {} weights take 2-D weights and F32 activations, not {}",
        src0.type_.name(),
        src1.type_.name()
    );
    let n = src0.ne[0] as usize;
    let ne = src1.ne;
    let cols = ne[1] * ne[2] * ne[3];
    crate::ggml_assert!(
        wsize >= column_size(n) * cols as usize,
        "mul_mat: scratch of {} bytes for repacked weights, {} needed",
        wsize,
        column_size(n) * cols as usize
    );
    let simd = use_simd(params);
    share_rows(params, cols, (n / QK) as i64, |r, first, last| {
        let idx = (r % ne[1], (r / ne[1]) % ne[2], r / (ne[1] * ne[2]));
        let (first, last) = (first as usize, last as usize);
        let mut buf = Vec::new();
        let x = span::<f32>(src1, idx, first * QK, (last - first) * QK, &mut buf);
        // SAFETY: column r lies in the scratch (checked above); shares are disjoint until the
        // barrier.
        unsafe { convert(x, n, first, ActRow::at(wdata, n, r as usize), simd) };
    });
    params.barrier();
    with_format!(src0.type_, run(params, dst, src0, src1, wdata));
}

fn run<F: Format>(params: &ComputeParams, dst: &Tensor, src0: &Tensor, src1: &Tensor, acts: *const u8) {
    let n = src0.ne[0] as usize;
    let groups = src0.ne[1] / GROUP_ROWS as i64;
    let cols = src1.ne[1] * src1.ne[2] * src1.ne[3];
    let task_cols = if cols <= TASK_COLS { cols } else { TASK_COLS };
    let col_tasks = ceil_div(cols, task_cols);
    // groups per task: enough tasks to balance the team, no more than 16 groups each
    let nth = params.nth as i64;
    let task_groups = (groups * col_tasks / (8 * nth)).clamp(1, 16);
    let group_tasks = ceil_div(groups, task_groups);
    let tasks = (group_tasks * col_tasks) as usize;
    #[cfg(target_arch = "x86_64")]
    let avx512 = use_simd(params) && crate::cpu::kernels::features::has_avx512();

    let mut task = params.ith;
    while task < tasks {
        let (g, c) = (task as i64 % group_tasks, task as i64 / group_tasks);
        let task_cols = c * task_cols..((c + 1) * task_cols).min(cols);
        for group in g * task_groups..((g + 1) * task_groups).min(groups) {
            let weights = src0.data.cast::<u8>().wrapping_add(group as usize * GROUP_ROWS * src0.nb[1]).cast_const();
            let mut at = ColumnIndex::at(task_cols.start, src1.ne[1], src1.ne[2]);
            for tile in (task_cols.start..task_cols.end).step_by(TILE_COLS) {
                let width = (task_cols.end - tile).min(TILE_COLS as i64) as usize;
                let mut columns = [(ActRow::at(acts, n, 0), std::ptr::null_mut()); TILE_COLS];
                for (k, col) in columns[..width].iter_mut().enumerate() {
                    let out = dst.data.cast::<u8>().wrapping_add(at.offset(dst)).cast::<f32>();
                    *col = (ActRow::at(acts, n, tile as usize + k), out.wrapping_add(group as usize * GROUP_ROWS));
                    at.advance();
                }
                #[cfg(target_arch = "x86_64")]
                if avx512 {
                    // SAFETY: AVX-512 was checked; the group holds n values of 16 rows of the
                    // format's layout; the activations were converted before the barrier; each
                    // destination holds this group's 16 results, written by this task alone.
                    unsafe { tile_avx512::<F>(weights, n / QK, &columns[..width]) };
                    continue;
                }
                // SAFETY: as above.
                unsafe { tile_scalar::<F>(weights, n / QK, &columns[..width]) };
            }
        }
        if params.nth >= tasks {
            break;
        }
        task = params.next_chunk();
    }
}

/// A column of a tile: its activations and where its group's 16 results go.
type Column = (ActRow, *mut f32);

/// The group at `group` (of `nb` blocks) against each column, in the order of ggml's reference
/// product: each block's integer sum scaled by both scales, added in `f32`.
///
/// # Safety
/// `group` holds a group of `nb` blocks in `F`'s layout; each column's activations hold `nb`
/// blocks and its destination 16 floats.
unsafe fn tile_scalar<F: Format>(group: *const u8, nb: usize, cols: &[Column]) {
    let (head, block) = (F::PARTS.head(), GROUP_ROWS * F::PARTS.block());
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(group, nb * block) };
    for &(act, out) in cols {
        let mut sums = [0f32; GROUP_ROWS];
        for (b, blk) in bytes.chunks_exact(block).enumerate() {
            // SAFETY: block b < nb of the column.
            let (levels, d) = unsafe { (std::slice::from_raw_parts(act.levels.add(b * QK), QK), *act.scales.add(b)) };
            for (r, sum) in sums.iter_mut().enumerate() {
                // the row's quant bytes, gathered from the chunks
                let mut qs = [0u8; QK];
                for (t, q) in qs[..F::PARTS.qs].iter_mut().enumerate() {
                    *q = blk[GROUP_ROWS * head + (t / 4 * GROUP_ROWS + r) * 4 + t % 4];
                }
                let dot: i32 = (0..QK).map(|i| level::<F>(&qs, i) * i32::from(levels[i])).sum();
                *sum += dot as f32 * (F::scale(&blk[r * F::PARTS.fields[0]..]) * d);
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
    macro_rules! arms {
        ($($c:literal)*) => {
            match cols.len() {
                $($c => {
                    // SAFETY: the caller's contract.
                    let sums = unsafe { group_sums::<F, $c>(group, nb, std::array::from_fn(|k| cols[k].0)) };
                    for (s, &(_, out)) in sums.iter().zip(cols) {
                        // SAFETY: the destination holds 16 floats (the caller's contract).
                        unsafe { _mm512_storeu_ps(out, *s) };
                    }
                })*
                other => crate::ggml_abort!("mul_mat: {} columns in a repacked tile", other),
            }
        };
    }
    arms!(1 2 3 4 5 6 7 8);
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
    let (head, block) = (F::PARTS.head(), GROUP_ROWS * F::PARTS.block());
    // SAFETY: the table holds 16 bytes.
    let table = F::TABLE.map(|t| _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(t.as_ptr().cast()) }));
    let mut acc = [_mm512_setzero_ps(); C];
    for b in 0..nb {
        // SAFETY: block b < nb of the group and of each column (the caller's contract).
        unsafe {
            let base = group.add(b * block);
            let d = F::scales(base);
            let qs = base.add(GROUP_ROWS * head);
            let mut sums: [__m512i; C] = std::array::from_fn(|c| _mm512_set1_epi32(-F::BIAS * *acts[c].sums.add(b)));
            for j in 0..4 {
                let (lo, hi) = values::<F>(qs, j, table);
                let (lo_at, hi_at) = offsets::<F>(j);
                for c in 0..C {
                    let a = acts[c].levels.add(b * QK);
                    let a_lo = _mm512_set1_epi32(a.add(lo_at).cast::<i32>().read_unaligned());
                    let a_hi = _mm512_set1_epi32(a.add(hi_at).cast::<i32>().read_unaligned());
                    sums[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sums[c], lo, a_lo), hi, a_hi);
                }
            }
            for c in 0..C {
                let scale = _mm512_mul_ps(d, _mm512_set1_ps(*acts[c].scales.add(b)));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[c]), scale, acc[c]);
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all, at, fill, run};
    use super::*;
    use crate::core::ops::matmul as ops;
    use crate::core::tensor::TensorPtr;
    use crate::cpu::kernels::testing::{Rng, ctx, nmse};
    use crate::cpu::repack;

    /// The product of `ty` weights [k, m] by F32 activations [k, n, 2], plain and repacked, on
    /// `threads` threads; returns both.
    fn products(ty: Type, k: i64, m: i64, n: i64, threads: i32, use_ref: bool) -> (Vec<f64>, Vec<f64>) {
        let mut c = ctx();
        let mut rng = Rng::new(0x5eed + (k * m * n) as u64);
        let a = c.new_tensor(ty, &[k, m, 1, 1]);
        fill(a, &mut rng);
        let b = c.new_tensor(Type::F32, &[k, n, 2, 1]);
        fill(b, &mut rng);
        let d = ops::mul_mat(&mut c, a, b);
        let values = |d: TensorPtr| all(&d).into_iter().map(|i| at(&d, i)).collect::<Vec<f64>>();
        run(&mut c, d, threads, use_ref);
        let plain = values(d);

        // the same weights packed in place, in a (placeholder) CPU_REPACK buffer
        let placeholder = repack::buffer_type().alloc_buffer(0).expect("a placeholder buffer");
        a.get_mut().buffer = placeholder.as_ptr().cast();
        assert!(repack::is_repacked(&a));
        let row_size = ty.row_size(k);
        // SAFETY: the weights' data, m rows of row_size bytes, which nothing else reads meanwhile.
        let bytes = unsafe { std::slice::from_raw_parts_mut(a.data.cast::<u8>(), m as usize * row_size) };
        let plain_bytes = bytes.to_vec();
        layout::pack(ty, row_size, &plain_bytes, bytes);
        run(&mut c, d, threads, use_ref);
        a.get_mut().buffer = std::ptr::null_mut();
        placeholder.free();
        (plain, values(d))
    }

    #[test]
    fn repacked_products_equal_the_plain_ones() {
        for ty in [Type::Q4_0, Type::IQ4_NL, Type::MXFP4, Type::Q8_0] {
            // one and several groups; one column, a partial tile, several tiles and tasks
            for (k, m, n) in [(32, 16, 1), (96, 32, 3), (256, 48, 9), (64, 16, 70)] {
                for (threads, use_ref) in [(1, false), (3, false), (2, true)] {
                    let (plain, repacked) = products(ty, k, m, n, threads, use_ref);
                    let e = nmse(&repacked, &plain);
                    assert!(e < 1e-10, "{} k={k} m={m} n={n} threads={threads} ref={use_ref}: nmse {e}", ty.name());
                }
            }
        }
    }

    #[test]
    fn levels_follow_each_format() {
        // every nibble, low then high
        let qs: [u8; 16] = std::array::from_fn(|i| (i as u8) | ((15 - i as u8) << 4));
        let low = |f: fn(&[u8], usize) -> i32| (0..16).map(|i| f(&qs, i)).collect::<Vec<_>>();
        assert_eq!(low(level::<Iq4Nl>), IQ4_NL_LEVELS.map(i32::from));
        assert_eq!(low(level::<Mxfp4>), E2M1_DOUBLED.map(i32::from));
        assert_eq!(low(level::<Q4_0>), (-8..8).collect::<Vec<_>>());
        assert_eq!(level::<Q4_0>(&qs, 16), 15 - 8);
        assert_eq!(level::<Q8_0>(&[0x80; 32], 31), -128);
    }

    #[test]
    fn e8m0_scales_convert_as_the_scalar_path() {
        if !crate::cpu::kernels::features::has_avx512() {
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
