//! Every layout against plain dot products: random rows of ordinary blocks are packed, the
//! interleaved products run, and each result is compared with [`VecDot::dot_scalar`] of the
//! same rows; the packing itself must unpack to the rows it came from.

use super::activations::{Flavour, quantize_mat_q8_0, quantize_mat_q8_k};
use super::k_quants::{Q2K, Q4K, Q5K, Q6K};
use super::kernel::Rhs;
use super::legacy::{Iq4Nl, Mxfp4, Q4_0, Q8_0};
use super::low_bit::{Q1_0x4x4, Q1_0x4x8};
use super::{Activation, Interleaved, gemm, gemv};
use crate::cpu::kernels::dot::VecDot;
use crate::cpu::kernels::dot::test_support::{q8_0, q8_0_groups, q8_k, random, values};
use crate::quants::BlockFormat;
use crate::quants::fp4::BlockMxfp4;
use crate::quants::half::Half;
use crate::quants::iq4::BlockIq4Nl;
use crate::quants::k_quants::q2_k::BlockQ2K;
use crate::quants::k_quants::q4_k::BlockQ4K;
use crate::quants::k_quants::q5_k::BlockQ5K;
use crate::quants::k_quants::q6_k::BlockQ6K;
use crate::quants::k_quants::q8_k::BlockQ8K;
use crate::quants::low_bit::BlockQ1_0;
use crate::quants::q4::BlockQ4_0;
use crate::quants::q8::BlockQ8_0;

/// A sane scale from a random byte (random halves may be infinite or NaN).
fn scale(byte: u8) -> Half {
    Half::from_f32(0.002 + f32::from(byte % 16) * 0.002)
}

/// How the activations of a layout are quantized: one row of plain units, and four rows
/// into the interleaved units (which must be the same quants).
struct Acts<A> {
    row: fn(&[f32]) -> Vec<A>,
    mat: fn(&[f32], &mut [u8], usize, usize, Flavour),
    flavour: Flavour,
}

const Q8_0_ACTS: Acts<BlockQ8_0> = Acts { row: |v| q8_0(v).0, mat: quantize_mat_q8_0, flavour: Flavour::X86 };
const Q1_0_ACTS: Acts<[BlockQ8_0; 4]> =
    Acts { row: |v| q8_0_groups::<4>(v).0, mat: quantize_mat_q8_0, flavour: Flavour::X86 };
const Q8_K_ACTS: Acts<BlockQ8K> = Acts { row: |v| q8_k(v).0, mat: quantize_mat_q8_k, flavour: Flavour::Generic };

/// Packs `rows` (each `nb` blocks) into `rows.len() / COLS` groups of interleaved blocks.
fn pack<L: Interleaved>(rows: &[Vec<L::Block>]) -> Vec<u8> {
    let nb = rows[0].len();
    let mut x = vec![0u8; rows.len() / L::COLS * nb * L::BYTES];
    for (g, group) in rows.chunks_exact(L::COLS).enumerate() {
        for l in 0..nb {
            let blocks: Vec<L::Block> = group.iter().map(|r| r[l]).collect();
            L::pack(&blocks, &mut x[(g * nb + l) * L::BYTES..][..L::BYTES]);
        }
    }
    x
}

fn close(got: f32, want: f32) -> bool {
    (got - want).abs() <= 1e-4 * want.abs().max(1.0)
}

fn check<L: Interleaved>(what: &str, fix: fn(&mut L::Block), acts: Acts<Rhs<L>>)
where
    L::Block: BlockFormat + PartialEq + std::fmt::Debug,
    Rhs<L>: Activation,
{
    let qk = <L::Block as VecDot>::QK;
    let n = 2 * qk.max(64);
    let nb = n / qk;
    let nc = 2 * L::COLS;
    let rows: Vec<Vec<L::Block>> = (0..nc).map(|c| random::<L::Block>(n, 1 + c as u32, fix).0).collect();
    let x = pack::<L>(&rows);

    for (c, row) in rows.iter().enumerate() {
        let (g, j) = (c / L::COLS, c % L::COLS);
        for (l, block) in row.iter().enumerate() {
            assert_eq!(&L::unpack(&x[(g * nb + l) * L::BYTES..][..L::BYTES], j), block, "{what}: row {c} block {l}");
        }
    }

    let y = (acts.row)(&values(n, 7));
    let mut s = vec![f32::NAN; nc];
    gemv::<L>(n, &mut s, &x, &y);
    for (c, &got) in s.iter().enumerate() {
        let want = L::Block::dot_scalar(&rows[c], &y);
        assert!(close(got, want), "{what} gemv: row {c}: {got} against {want}");
    }

    // rows of no values: sums of nothing
    gemv::<L>(0, &mut s, &[], &[]);
    assert!(s.iter().all(|&v| v == 0.0), "{what} gemv of empty rows: {s:?}");

    let nr = 8;
    let bs = nc + 1;
    let v = values(nr * n, 8);
    let x4 = nb * <Rhs<L> as Activation>::X4_BYTES;
    let mut y = vec![0u8; nr / 4 * x4];
    for (four, out) in v.chunks_exact(4 * n).zip(y.chunks_exact_mut(x4)) {
        (acts.mat)(four, out, n, L::CHUNK, acts.flavour);
    }
    let mut s = vec![f32::NAN; nr * bs];
    gemm::<L>(n, &mut s, bs, &x, &y, nr, nc);
    for r in 0..nr {
        let act = (acts.row)(&v[r * n..(r + 1) * n]);
        for c in 0..nc {
            let (got, want) = (s[r * bs + c], L::Block::dot_scalar(&rows[c], &act));
            assert!(close(got, want), "{what} gemm: row {r} column {c}: {got} against {want}");
        }
        assert!(s[r * bs + nc].is_nan(), "{what} gemm: wrote past the row's {nc} results");
    }
}

fn fix_q4_0(b: &mut BlockQ4_0) {
    b.d = scale(b.qs[0]);
}
fn fix_q8_0(b: &mut BlockQ8_0) {
    b.d = scale(b.qs[0]);
}
fn fix_iq4_nl(b: &mut BlockIq4Nl) {
    b.d = scale(b.qs[0]);
}
fn fix_mxfp4(b: &mut BlockMxfp4) {
    b.e = 120 + b.e % 12;
}
fn fix_q1_0(b: &mut BlockQ1_0) {
    b.d = scale(b.qs[0]);
}
fn fix_q2_k(b: &mut BlockQ2K) {
    (b.d, b.dmin) = (scale(b.qs[0]), scale(b.qs[1]));
}
fn fix_q4_k(b: &mut BlockQ4K) {
    (b.d, b.dmin) = (scale(b.qs[0]), scale(b.qs[1]));
}
fn fix_q5_k(b: &mut BlockQ5K) {
    (b.d, b.dmin) = (scale(b.qs[0]), scale(b.qs[1]));
}
fn fix_q6_k(b: &mut BlockQ6K) {
    b.d = scale(b.ql[0]);
}

#[test]
fn q4_0_layouts() {
    check::<Q4_0<4, 4>>("q4_0_4x4", fix_q4_0, Q8_0_ACTS);
    check::<Q4_0<4, 8>>("q4_0_4x8", fix_q4_0, Q8_0_ACTS);
    check::<Q4_0<8, 8>>("q4_0_8x8", fix_q4_0, Q8_0_ACTS);
}

#[test]
fn q8_0_iq4_nl_mxfp4_layouts() {
    check::<Q8_0<4, 4>>("q8_0_4x4", fix_q8_0, Q8_0_ACTS);
    check::<Q8_0<4, 8>>("q8_0_4x8", fix_q8_0, Q8_0_ACTS);
    check::<Iq4Nl<4, 4>>("iq4_nl_4x4", fix_iq4_nl, Q8_0_ACTS);
    check::<Iq4Nl<8, 8>>("iq4_nl_8x8", fix_iq4_nl, Q8_0_ACTS);
    check::<Mxfp4<4, 4>>("mxfp4_4x4", fix_mxfp4, Q8_0_ACTS);
    check::<Mxfp4<8, 8>>("mxfp4_8x8", fix_mxfp4, Q8_0_ACTS);
}

#[test]
fn q1_0_layouts() {
    check::<Q1_0x4x4>("q1_0_4x4", fix_q1_0, Q1_0_ACTS);
    check::<Q1_0x4x8>("q1_0_4x8", fix_q1_0, Q1_0_ACTS);
}

#[test]
fn k_quant_layouts() {
    check::<Q2K<8>>("q2_K_8x8", fix_q2_k, Q8_K_ACTS);
    check::<Q4K<4>>("q4_K_8x4", fix_q4_k, Q8_K_ACTS);
    check::<Q4K<8>>("q4_K_8x8", fix_q4_k, Q8_K_ACTS);
    check::<Q5K<4>>("q5_K_8x4", fix_q5_k, Q8_K_ACTS);
    check::<Q5K<8>>("q5_K_8x8", fix_q5_k, Q8_K_ACTS);
    check::<Q6K<4>>("q6_K_8x4", fix_q6_k, Q8_K_ACTS);
    check::<Q6K<8>>("q6_K_8x8", fix_q6_k, Q8_K_ACTS);
}

/// The places the reference's repacking puts things, spelled out for two layouts: `q4_0_4x8`
/// deals 8 bytes (xor 0x88) per row, `q4_K`'s first 12 scale bytes are sub-block 0 of all
/// eight rows.
#[test]
fn reference_positions() {
    let blocks: Vec<BlockQ4_0> =
        (0..4u8).map(|j| BlockQ4_0 { d: scale(j), qs: std::array::from_fn(|t| j * 16 + t as u8) }).collect();
    let mut x = vec![0u8; Q4_0::<4, 8>::BYTES];
    Q4_0::<4, 8>::pack(&blocks, &mut x);
    assert_eq!(&x[..2], &scale(0).bits().to_le_bytes());
    // qs: row 0 bytes 0..8, row 1 bytes 0..8, ..., row 3, then row 0 bytes 8..16
    assert_eq!(x[8], 0x88);
    assert_eq!(x[8 + 8], 16 ^ 0x88);
    assert_eq!(x[8 + 32], 8 ^ 0x88);

    let rows: Vec<BlockQ4K> = (0..8u8)
        .map(|j| {
            let mut b = BlockQ4K::default();
            // sub-block 0: scale j + 1, minimum j + 20
            crate::quants::k_quants::pack_scale_min(&mut b.scales, 0, j + 1, j + 20);
            b
        })
        .collect();
    let mut x = vec![0u8; Q4K::<8>::BYTES];
    Q4K::<8>::pack(&rows, &mut x);
    let group: [u8; 12] = x[32..44].try_into().unwrap();
    for j in 0..8u8 {
        assert_eq!(crate::quants::k_quants::scale_min(&group, j as usize), (j + 1, j + 20));
    }
}

/// The q8_K quantizers: the generic keeps the sign of the first largest value, the x86 one
/// a positive one; both read back as `quantize_row_q8_K`'s rows.
#[test]
fn q8_k_quantizers() {
    let k = 512;
    let mut v = values(4 * k, 3);
    v[k + 5] = -1.5;
    v[k + 9] = 1.5;
    for (flavour, sign) in [(Flavour::Generic, 1.0), (Flavour::X86, -1.0)] {
        let mut y = vec![0u8; 2 * BlockQ8K::X4_BYTES];
        quantize_mat_q8_k(&v, &mut y, k, 8, flavour);
        let row1 = BlockQ8K::row_of(&y, 1, 8);
        // the largest value is made -127: a negative scale means +1.5 was chosen
        assert_eq!(row1.scale().signum(), sign, "{flavour:?}");
        for m in [0, 2, 3] {
            let want = q8_k(&v[m * k..(m + 1) * k]).0;
            for (b, unit) in y.chunks_exact(BlockQ8K::X4_BYTES).enumerate() {
                assert_eq!(BlockQ8K::row_of(unit, m, 8), want[b], "{flavour:?} row {m} block {b}");
            }
        }
    }
}
