//! `gemv` and `gemm` over any [`Interleaved`] layout: each weight row is unpacked to its
//! ordinary blocks once per call and dotted with each activation row by [`VecDot`].

use super::{Activation, Interleaved};
use crate::cpu::kernels::dot::VecDot;

/// The activation unit of layout `L`.
pub type Rhs<L> = <<L as Interleaved>::Block as VecDot>::Rhs;

/// Row `j` of the interleaved blocks `groups` (one row group's `n / QK` blocks).
fn weight_row<L: Interleaved>(groups: &[u8], j: usize) -> Vec<L::Block> {
    groups.chunks_exact(L::BYTES).map(|g| L::unpack(g, j)).collect()
}

fn dot<T: VecDot>(x: &[T], y: &[T::Rhs]) -> f32 {
    T::tile::<1, 1>(&[x], &[y], true)[0][0]
}

/// `s[c] = Σ weights[c][i]·y[i]` for the `s.len()` weight rows interleaved in `x`, rows of
/// `n` values (a multiple of the block size; `s.len()` a multiple of `L::COLS`).
pub fn gemv<L: Interleaved>(n: usize, s: &mut [f32], x: &[u8], y: &[Rhs<L>]) {
    let nb = n / L::Block::QK;
    let group_bytes = nb * L::BYTES;
    for (g, out) in s.chunks_exact_mut(L::COLS).enumerate() {
        let groups = &x[g * group_bytes..(g + 1) * group_bytes];
        for (j, o) in out.iter_mut().enumerate() {
            *o = dot(&weight_row::<L>(groups, j), &y[..nb]);
        }
    }
}

/// `s[r·bs + c] = Σ weights[c][i]·act[r][i]` for `nr` activation rows (a multiple of 4)
/// quantized four at a time into `y`, and `nc` weight rows interleaved in `x`.
pub fn gemm<L: Interleaved>(n: usize, s: &mut [f32], bs: usize, x: &[u8], y: &[u8], nr: usize, nc: usize)
where
    Rhs<L>: Activation,
{
    let nb = n / L::Block::QK;
    let group_bytes = nb * L::BYTES;
    let act_bytes = nb * <Rhs<L> as Activation>::X4_BYTES;
    let weights: Vec<Vec<L::Block>> =
        (0..nc).map(|c| weight_row::<L>(&x[c / L::COLS * group_bytes..][..group_bytes], c % L::COLS)).collect();
    for r4 in 0..nr / 4 {
        let acts = &y[r4 * act_bytes..(r4 + 1) * act_bytes];
        for m in 0..4 {
            let row: Vec<Rhs<L>> =
                acts.chunks_exact(<Rhs<L> as Activation>::X4_BYTES).map(|u| Rhs::<L>::row_of(u, m, L::CHUNK)).collect();
            let out = &mut s[(r4 * 4 + m) * bs..][..nc];
            for (o, w) in out.iter_mut().zip(&weights) {
                *o = dot(w, &row);
            }
        }
    }
}
