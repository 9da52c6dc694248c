//! Non-linear 4-bit blocks: each 4-bit code picks one of 16 fixed, unevenly spaced levels
//! (denser near zero, where most weights are), times a scale.
//!
//! * `iq4_nl`: 32 values and one binary16 scale.
//! * `iq4_xs`: 256 values in eight groups of 32; each group's scale is a signed 6-bit multiple
//!   (-32..31) of one binary16 super-block scale, the low 4 bits of the eight stored in
//!   `scales_l` (two per byte), the high 2 bits in the 16-bit `scales_h`.
//!
//! Within each group of 32, value j sits in the low nibble of byte j, value j+16 in its high
//! nibble. Group scales are found by a weighted least-squares fit tried at several trial
//! scales; without an importance matrix the weights are x².

use super::BlockCheck;
use super::half::Half;
use super::search::{GROUP_MAX_EPS, nearest_int};
use super::{BlockFormat, block_weights};
use crate::core::types::Type;
use std::mem::offset_of;

const QK_NL: usize = 32;
const QK_XS: usize = 256;
/// Values per scale group.
const GROUP: usize = 32;
/// The codes of 0.0 (level 1), which a block with nothing in it is given.
const ZERO_CODES: [u8; QK_NL] = [8; QK_NL];
/// Trial scales tried on each side of the first fit by the full search.
const TRIES: i32 = 7;

/// The 16 levels, in increasing order (ggml's `kvalues_iq4nl`).
pub const LEVELS: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// `block_iq4_nl`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BlockIq4Nl {
    pub d: Half,
    pub qs: [u8; QK_NL / 2],
}

/// `block_iq4_xs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIq4Xs {
    pub d: Half,
    /// High 2 bits of each group scale (group i at bits 2i), little-endian.
    pub scales_h: [u8; 2],
    /// Low 4 bits of each group scale, group 2k in the low nibble of byte k.
    pub scales_l: [u8; QK_XS / 64],
    pub qs: [u8; QK_XS / 2],
}

impl Default for BlockIq4Xs {
    fn default() -> Self {
        BlockIq4Xs { d: Half::default(), scales_h: [0; 2], scales_l: [0; QK_XS / 64], qs: [0; QK_XS / 2] }
    }
}

const _: () = assert!(std::mem::size_of::<BlockIq4Nl>() == 18 && std::mem::align_of::<BlockIq4Nl>() == 1);
const _: () = assert!(std::mem::size_of::<BlockIq4Xs>() == 136 && std::mem::align_of::<BlockIq4Xs>() == 1);

#[inline]
fn level(code: usize) -> f32 {
    f32::from(LEVELS[code])
}

/// The code of the level nearest to `x` (the higher one on ties; NaN gives 15), found by
/// bisection as ggml does.
pub fn nearest_code(x: f32) -> u8 {
    if x <= level(0) {
        return 0;
    }
    if x >= level(15) {
        return 15;
    }
    let (mut lo, mut hi) = (0usize, 15usize);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if x < level(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    if x - level(hi - 1) < level(hi) - x { (hi - 1) as u8 } else { hi as u8 }
}

/// How hard [`fit_group`] searches for a group scale.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effort {
    /// One fit at the scale that maps the signed extreme onto the lowest level (-127).
    Single,
    /// A fit at the scale that maps it onto +127, then the trial scales mapping it onto
    /// -127-TRIES ..= -127+TRIES, keeping the best by weighted error.
    Full,
}

/// Weighted fit of one group: picks codes for `x` at the inverse scale `id` and returns
/// (Σ w·q·x, Σ w·q²) over their levels q. Codes are written to `codes` when given.
fn fit_at(x: &[f32], w: &[f32], id: f32, mut codes: Option<&mut [u8]>) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for (j, (&v, &wj)) in x.iter().zip(w).enumerate() {
        let code = nearest_code(id * v);
        if let Some(codes) = codes.as_deref_mut() {
            codes[j] = code;
        }
        let q = level(usize::from(code));
        sumqx += wj * q * v;
        sumq2 += wj * q * q;
    }
    (sumqx, sumq2)
}

/// The scale of one group of 32, or `None` when the group is (nearly) all zeros, in which case
/// `codes` is left as it was. `codes` receives the codes of the first fit.
fn fit_group(x: &[f32], w: &[f32], effort: Effort, codes: &mut [u8]) -> Option<f32> {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        return None;
    }
    let d = match effort {
        Effort::Single => max / level(0),
        Effort::Full => -max / level(0),
    };
    let (sumqx, sumq2) = fit_at(x, w, 1.0 / d, Some(codes));
    let mut d = if sumq2 > 0.0 { sumqx / sumq2 } else { 0.0 };
    if effort == Effort::Full {
        let mut best = d * sumqx;
        for t in -TRIES..=TRIES {
            let id = (t + i32::from(LEVELS[0])) as f32 / max;
            let (sumqx, sumq2) = fit_at(x, w, id, None);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
    }
    Some(d)
}

/// Σx² of a super-block times 2/n: the variance floor added under importance weights.
fn weight_floor(x: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for &v in x {
        sum += v * v;
    }
    sum * (2.0 / x.len() as f32)
}

/// Per-value weights of one group: from the importance matrix when given, x² otherwise.
fn group_weights(x: &[f32], imatrix: Option<&[f32]>, floor: f32) -> [f32; GROUP] {
    match imatrix {
        Some(qw) => block_weights(x, qw, floor),
        None => std::array::from_fn(|j| x[j] * x[j]),
    }
}

/// Packs 32 codes per group two to a byte.
fn pack_codes(codes: &[u8], out: &mut [u8]) {
    for (bytes, group) in out.chunks_exact_mut(GROUP / 2).zip(codes.chunks_exact(GROUP)) {
        for (j, byte) in bytes.iter_mut().enumerate() {
            *byte = group[j] | (group[j + GROUP / 2] << 4);
        }
    }
}

fn unpack_codes(bytes: &[u8], scale: f32, y: &mut [f32]) {
    for (j, &byte) in bytes.iter().enumerate() {
        y[j] = scale * level(usize::from(byte & 0x0f));
        y[j + GROUP / 2] = scale * level(usize::from(byte >> 4));
    }
}

/// One iq4_nl block. `codes` carries the previous block's codes: with [`Effort::Single`] a
/// (nearly) all-zero block keeps them, as ggml's reference quantizer does (its scale is 0,
/// so they read back as zeros either way).
///
/// For such a block at the start of a row ggml packs whatever its uninitialised code buffer
/// held; we start from [`ZERO_CODES`] instead, so those bytes (and only those) can differ.
fn quantize_nl(x: &[f32], imatrix: Option<&[f32]>, effort: Effort, codes: &mut [u8; QK_NL]) -> BlockIq4Nl {
    let w = group_weights(x, imatrix, weight_floor(x));
    let scale = fit_group(x, &w, effort, codes).unwrap_or(0.0);
    if effort == Effort::Full {
        let id = if scale != 0.0 { 1.0 / scale } else { 0.0 };
        for (code, &v) in codes.iter_mut().zip(x) {
            *code = nearest_code(id * v);
        }
    }
    let mut b = BlockIq4Nl { d: Half::from_f32(scale), ..Default::default() };
    pack_codes(codes, &mut b.qs);
    b
}

/// One iq4_xs super-block: the group scales are fitted, then quantized to 6 bits against the
/// largest of them, and the codes recomputed at the quantized scales.
fn quantize_xs(x: &[f32], imatrix: Option<&[f32]>) -> BlockIq4Xs {
    let floor = weight_floor(x);
    let mut codes = [0u8; QK_XS];
    let mut scales = [0.0f32; QK_XS / GROUP];
    let (mut max_scale, mut amax_scale) = (0.0f32, 0.0f32);
    for (ib, (xg, codes)) in x.chunks_exact(GROUP).zip(codes.chunks_exact_mut(GROUP)).enumerate() {
        let w = group_weights(xg, imatrix.map(|qw| &qw[ib * GROUP..]), floor);
        scales[ib] = fit_group(xg, &w, Effort::Full, codes).unwrap_or(0.0);
        if scales[ib].abs() > amax_scale {
            amax_scale = scales[ib].abs();
            max_scale = scales[ib];
        }
    }

    let d = -max_scale / 32.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut b = BlockIq4Xs { d: Half::from_f32(d), ..Default::default() };
    let mut scales_h = 0u16;
    for (ib, (xg, codes)) in x.chunks_exact(GROUP).zip(codes.chunks_exact_mut(GROUP)).enumerate() {
        let l = nearest_int(id * scales[ib]).clamp(-32, 31);
        let dl = d * l as f32;
        let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
        for (code, &v) in codes.iter_mut().zip(xg) {
            *code = nearest_code(idl * v);
        }
        let stored = (l + 32) as u8;
        b.scales_l[ib / 2] |= (stored & 0x0f) << (4 * (ib % 2));
        scales_h |= u16::from(stored >> 4) << (2 * ib);
    }
    b.scales_h = scales_h.to_le_bytes();
    pack_codes(&codes, &mut b.qs);
    b
}

impl BlockIq4Xs {
    /// The 6-bit scale of group `ib`, as the signed multiple of `d` (-32..31).
    pub fn group_scale(&self, ib: usize) -> i32 {
        let low = (self.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f;
        let high = (u16::from_le_bytes(self.scales_h) >> (2 * ib)) & 3;
        (i32::from(low) | (i32::from(high) << 4)) - 32
    }
}

// SAFETY: repr(C) of a Half and a byte array: 18 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq4Nl {
    const TYPE: Type = Type::IQ4_NL;
    const QK: usize = QK_NL;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq4Nl, d)]);

    /// The reference quantizer on a block by itself. A (nearly) all-zero block gets the codes
    /// of 0.0; within a row, [`quantize_row_nl_ref`] repeats the previous block's codes as
    /// ggml does.
    fn quantize(x: &[f32]) -> Self {
        let mut codes = ZERO_CODES;
        quantize_nl(x, None, Effort::Single, &mut codes)
    }

    fn dequantize(&self, y: &mut [f32]) {
        unpack_codes(&self.qs, self.d.to_f32(), &mut y[..QK_NL]);
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        let mut codes = [0u8; QK_NL];
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK_NL)).zip(weights.chunks_exact(QK_NL)) {
            *block = quantize_nl(xb, Some(qw), Effort::Full, &mut codes);
        }
    }

    fn quantize_chunk(src: &[f32], dst: &mut [Self], n_per_row: usize, imatrix: Option<&[f32]>) -> usize {
        quantize_rows_nl(src, dst, n_per_row, imatrix)
    }
}

// SAFETY: repr(C) of a Half and byte arrays: 136 bytes, alignment 1, any bits valid.
unsafe impl BlockFormat for BlockIq4Xs {
    const TYPE: Type = Type::IQ4_XS;
    const QK: usize = QK_XS;
    const CHECK: BlockCheck = BlockCheck::HalfScales(&[offset_of!(BlockIq4Xs, d)]);

    fn quantize(x: &[f32]) -> Self {
        quantize_xs(x, None)
    }

    fn dequantize(&self, y: &mut [f32]) {
        let d = self.d.to_f32();
        for (ib, (bytes, yg)) in self.qs.chunks_exact(GROUP / 2).zip(y.chunks_exact_mut(GROUP)).enumerate() {
            unpack_codes(bytes, d * self.group_scale(ib) as f32, yg);
        }
    }

    fn quantize_row_weighted(x: &[f32], y: &mut [Self], weights: &[f32]) {
        for ((block, xb), qw) in y.iter_mut().zip(x.chunks_exact(QK_XS)).zip(weights.chunks_exact(QK_XS)) {
            *block = quantize_xs(xb, Some(qw));
        }
    }
}

/// ggml's `quantize_row_iq4_nl_ref`: one fit per block, and a (nearly) all-zero block repeats
/// the codes of the block before it (the codes of 0.0 for the first, where ggml reads
/// uninitialised memory).
pub fn quantize_row_nl_ref(x: &[f32], y: &mut [BlockIq4Nl]) {
    crate::ggml_assert!(
        x.len().is_multiple_of(QK_NL) && x.len() / QK_NL == y.len(),
        "{} values do not fill {} iq4_nl blocks",
        x.len(),
        y.len()
    );
    let mut codes = ZERO_CODES;
    for (block, xb) in y.iter_mut().zip(x.chunks_exact(QK_NL)) {
        *block = quantize_nl(xb, None, Effort::Single, &mut codes);
    }
}

/// ggml's `quantize_iq4_nl` (the format's [`BlockFormat::quantize_chunk`]): unlike the other
/// formats it runs the full search even without an importance matrix (weights x² then), so its
/// output differs from [`quantize_row_nl_ref`]. Returns the bytes written.
fn quantize_rows_nl(src: &[f32], dst: &mut [BlockIq4Nl], n_per_row: usize, imatrix: Option<&[f32]>) -> usize {
    match imatrix {
        Some(_) => super::quantize_rows(src, dst, n_per_row, imatrix),
        None => {
            crate::ggml_assert!(
                n_per_row > 0 && n_per_row.is_multiple_of(QK_NL),
                "rows of {} values are not whole iq4_nl blocks",
                n_per_row
            );
            crate::ggml_assert!(
                src.len().is_multiple_of(QK_NL) && src.len() / QK_NL == dst.len(),
                "{} values do not fill {} iq4_nl blocks",
                src.len(),
                dst.len()
            );
            let mut codes = [0u8; QK_NL];
            for (block, xb) in dst.iter_mut().zip(src.chunks_exact(QK_NL)) {
                *block = quantize_nl(xb, None, Effort::Full, &mut codes);
            }
            std::mem::size_of_val(dst)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quants::{dequantize_row, quantize_row, quantize_rows};

    fn wave(n: usize) -> Vec<f32> {
        (0..n).map(|i| (i as f32 * 0.71).sin() * (0.5 + (i % 97) as f32 / 40.0)).collect()
    }

    fn rms_error(x: &[f32], y: &[f32]) -> f32 {
        let sum: f32 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
        (sum / x.len() as f32).sqrt()
    }

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
    }

    #[test]
    fn block_sizes_match_type_facts() {
        assert_eq!(std::mem::size_of::<BlockIq4Nl>(), Type::IQ4_NL.type_size());
        assert_eq!(std::mem::size_of::<BlockIq4Xs>(), Type::IQ4_XS.type_size());
        assert_eq!(QK_NL as i64, Type::IQ4_NL.blck_size());
        assert_eq!(QK_XS as i64, Type::IQ4_XS.blck_size());
    }

    #[test]
    fn nearest_code_bisects() {
        assert_eq!(nearest_code(-200.0), 0);
        assert_eq!(nearest_code(0.0), 8);
        assert_eq!(nearest_code(-4.5), 8); // -10 and 1 equally far: ties go up
        assert_eq!(nearest_code(-4.6), 7);
        assert_eq!(nearest_code(-4.4), 8);
        assert_eq!(nearest_code(100.0), 14);
        assert_eq!(nearest_code(f32::NAN), 15);
        for (code, &l) in LEVELS.iter().enumerate() {
            assert_eq!(usize::from(nearest_code(f32::from(l))), code);
        }
    }

    #[test]
    fn round_trips_are_close() {
        let x = wave(512);
        let mut y = vec![0.0f32; 512];
        let mut nl = vec![BlockIq4Nl::default(); 16];
        quantize_row_nl_ref(&x, &mut nl);
        dequantize_row(&nl, &mut y);
        assert!(rms_error(&x, &y) < 0.08 * rms(&x));
        let plain = rms_error(&x, &y);
        quantize_rows_nl(&x, &mut nl, 256, None);
        dequantize_row(&nl, &mut y);
        assert!(rms_error(&x, &y) <= plain * 1.05);
        let mut xs = vec![BlockIq4Xs::default(); 2];
        quantize_row(&x, &mut xs);
        dequantize_row(&xs, &mut y);
        assert!(rms_error(&x, &y) < 0.08 * rms(&x));
        quantize_rows(&x, &mut xs, 512, Some(&vec![1.0; 512]));
        dequantize_row(&xs, &mut y);
        assert!(rms_error(&x, &y) < 0.08 * rms(&x));
    }

    #[test]
    fn group_scales_pack_into_six_bits() {
        let mut b = BlockIq4Xs::default();
        for (ib, l) in [-32i32, -1, 0, 31, 5, -17, 16, -16].into_iter().enumerate() {
            let stored = (l + 32) as u8;
            b.scales_l[ib / 2] |= (stored & 0x0f) << (4 * (ib % 2));
            let h = u16::from_le_bytes(b.scales_h) | (u16::from(stored >> 4) << (2 * ib));
            b.scales_h = h.to_le_bytes();
        }
        let got: Vec<i32> = (0..8).map(|ib| b.group_scale(ib)).collect();
        assert_eq!(got, [-32, -1, 0, 31, 5, -17, 16, -16]);
    }

    #[test]
    fn zero_blocks() {
        let mut x = wave(64);
        x[32..].fill(0.0);
        let mut nl = vec![BlockIq4Nl::default(); 2];
        quantize_row_nl_ref(&x, &mut nl);
        assert_eq!(nl[1].d.bits(), 0);
        assert_eq!(nl[1].qs, nl[0].qs); // the reference repeats the previous codes
        assert_eq!(BlockIq4Nl::quantize(&x[32..]).qs, [0x88; 16]);
        quantize_rows_nl(&x, &mut nl, 64, None);
        assert_eq!(nl[1].qs, [0x88; 16]); // codes of 0.0
        let xs = BlockIq4Xs::quantize(&[0.0; 256]);
        assert_eq!(xs.d.bits(), 0x8000); // -0/32
        assert_eq!(xs.qs, [0x88; 128]);
        assert!((0..8).all(|ib| xs.group_scale(ib) == 0));
    }
}
