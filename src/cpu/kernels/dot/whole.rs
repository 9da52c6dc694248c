//! The grid I-quants and the ternary formats as whole numbers ([`Whole`]): signed bytes and
//! integer multipliers per sub-block, one scale per super-block. Their scalar dot products
//! ([`whole_dot`]) and the batched products' panels read weights this way, so each format
//! states its decoding once.

use crate::quants::k_quants::{BlockQ8K, QK_K};

/// A super-block of the grid I-quants or the ternary formats as whole numbers: value `i` is
/// `scale() · multipliers[i / SUB] · bytes[i]`. The scalar dot products and the panels of
/// batched products both read the weights this way; the SIMD tiles decode straight into
/// registers instead.
pub(crate) trait Whole: Copy {
    /// Values per multiplier.
    const SUB: usize;
    /// No byte is below `-MAX`.
    const MAX: i8;

    /// The super-block's scale, with the format's fixed factor (1/8 for 2-bit grids) in it.
    fn scale(&self) -> f32;

    /// The values as signed bytes, and the multiplier of each `SUB` of them.
    fn whole(&self, bytes: &mut [i8; QK_K], multipliers: &mut [i32]);
}

/// Signed byte `i` of a quant array.
#[inline]
pub(super) fn q8(qs: &[u8], i: usize) -> i32 {
    i32::from(qs[i] as i8)
}

/// Writes the 8 values of a grid point: its bytes (each 1..=127), negated where `signs` has a
/// bit set. All eight at once in a `u64` (value by value, this was three quarters of the
/// time of decoding IQ2_XS panels): a byte's negation `(v ^ 0xff) + 1` carries into no
/// other byte, as `v` is not 0.
#[inline]
pub(super) fn put_signed(out: &mut [i8], grid: u64, signs: u8) {
    let negative = crate::quants::iq_grids::SIGN_MASKS[usize::from(signs)];
    let values = (grid ^ negative) + (negative & 0x0101_0101_0101_0101);
    for (o, v) in out.iter_mut().zip(values.to_le_bytes()) {
        *o = v as i8;
    }
}

/// The scalar product of rows of a [`Whole`] format with Q8_K activations, in ggml's generic
/// arithmetic: whole-number sums per multiplier, scaled once per super-block.
pub(crate) fn whole_dot<B: Whole>(x: &[B], y: &[BlockQ8K]) -> f32 {
    let (mut bytes, mut multipliers) = ([0i8; QK_K], [0i32; QK_K / 16]);
    let mut sum = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        bx.whole(&mut bytes, &mut multipliers[..QK_K / B::SUB]);
        let sumi: i32 = bytes
            .chunks_exact(B::SUB)
            .zip(by.qs.chunks_exact(B::SUB))
            .zip(&multipliers)
            .map(|((w, q), m)| m * w.iter().zip(q).map(|(&w, &q)| i32::from(w) * i32::from(q as i8)).sum::<i32>())
            .sum();
        sum += (bx.scale() * by.scale()) * sumi as f32;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_signed_negates_the_bytes_whose_sign_bits_are_set() {
        // the extremes of the grids' bytes, and a byte of each size between
        let grid = u64::from_le_bytes([1, 127, 8, 25, 43, 62, 15, 2]);
        for signs in 0..=255u8 {
            let mut out = [0i8; 8];
            put_signed(&mut out, grid, signs);
            for (j, (&o, g)) in out.iter().zip(grid.to_le_bytes()).enumerate() {
                let want = if signs >> j & 1 != 0 { -(g as i8) } else { g as i8 };
                assert_eq!(o, want, "signs {signs:#010b}, byte {j}");
            }
        }
    }
}
