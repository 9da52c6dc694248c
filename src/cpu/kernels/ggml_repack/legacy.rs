//! The 32-value formats' layouts: `q4_0`, `q8_0`, `iq4_nl` and `mxfp4` rows `N` at a time.
//! An interleaved block is the `N` scales (`fp16`, or one `e8m0` byte for `mxfp4`) and then
//! the `N` blocks' quant bytes dealt `B` at a time. The 4-bit formats keep their bytes as
//! they are (low nibble value `t`, high nibble value `t + 16`), except that `q4_0`'s nibbles
//! are stored xor 8: read as signed 4-bit numbers they are then the levels `q - 8` themselves,
//! which is what the reference's SIMD kernels want.

use super::{Interleaved, u16_at, unweave, weave};
use crate::quants::fp4::BlockMxfp4;
use crate::quants::half::Half;
use crate::quants::iq4::BlockIq4Nl;
use crate::quants::q4::BlockQ4_0;
use crate::quants::q8::BlockQ8_0;

/// `block_q4_0x<N>` with `B`-byte chunks.
pub struct Q4_0<const N: usize, const B: usize>;
/// `block_q8_0x<N>` with `B`-byte chunks (also the layout of `gemm`'s `q8_0` activations).
pub struct Q8_0<const N: usize, const B: usize>;
/// `block_iq4_nlx<N>` with `B`-byte chunks.
pub struct Iq4Nl<const N: usize, const B: usize>;
/// `block_mxfp4x<N>` with `B`-byte chunks.
pub struct Mxfp4<const N: usize, const B: usize>;

/// The xor that turns a byte of two 4-bit levels `q` into two signed nibbles `q - 8`.
const SIGNED_NIBBLES: u8 = 0x88;

/// The `N` half-precision scales at the head of a block, then `N` rows of `qs` bytes.
fn unpack_halves<const Q: usize>(group: &[u8], j: usize, cols: usize, b: usize) -> (Half, [u8; Q]) {
    let mut qs = [0; Q];
    unweave(&group[2 * cols..], j, cols, b, &mut qs);
    (Half::from_bits(u16_at(group, 2 * j)), qs)
}

fn pack_halves<'a>(out: &mut [u8], rows: impl Iterator<Item = (Half, &'a [u8])>, cols: usize, b: usize) {
    for (j, (d, qs)) in rows.enumerate() {
        out[2 * j..2 * j + 2].copy_from_slice(&d.bits().to_le_bytes());
        weave(&mut out[2 * cols..], qs, j, cols, b);
    }
}

impl<const N: usize, const B: usize> Interleaved for Q4_0<N, B> {
    type Block = BlockQ4_0;
    const COLS: usize = N;
    const CHUNK: usize = B;
    const BYTES: usize = N * 18;

    fn unpack(group: &[u8], j: usize) -> BlockQ4_0 {
        let (d, qs) = unpack_halves::<16>(group, j, N, B);
        BlockQ4_0 { d, qs: qs.map(|q| q ^ SIGNED_NIBBLES) }
    }

    fn pack(blocks: &[BlockQ4_0], out: &mut [u8]) {
        let flipped: Vec<[u8; 16]> = blocks.iter().map(|b| b.qs.map(|q| q ^ SIGNED_NIBBLES)).collect();
        pack_halves(out, blocks.iter().zip(&flipped).map(|(b, qs)| (b.d, &qs[..])), N, B);
    }
}

impl<const N: usize, const B: usize> Interleaved for Q8_0<N, B> {
    type Block = BlockQ8_0;
    const COLS: usize = N;
    const CHUNK: usize = B;
    const BYTES: usize = N * 34;

    fn unpack(group: &[u8], j: usize) -> BlockQ8_0 {
        let (d, qs) = unpack_halves::<32>(group, j, N, B);
        BlockQ8_0 { d, qs }
    }

    fn pack(blocks: &[BlockQ8_0], out: &mut [u8]) {
        pack_halves(out, blocks.iter().map(|b| (b.d, &b.qs[..])), N, B);
    }
}

impl<const N: usize, const B: usize> Interleaved for Iq4Nl<N, B> {
    type Block = BlockIq4Nl;
    const COLS: usize = N;
    const CHUNK: usize = B;
    const BYTES: usize = N * 18;

    fn unpack(group: &[u8], j: usize) -> BlockIq4Nl {
        let (d, qs) = unpack_halves::<16>(group, j, N, B);
        BlockIq4Nl { d, qs }
    }

    fn pack(blocks: &[BlockIq4Nl], out: &mut [u8]) {
        pack_halves(out, blocks.iter().map(|b| (b.d, &b.qs[..])), N, B);
    }
}

impl<const N: usize, const B: usize> Interleaved for Mxfp4<N, B> {
    type Block = BlockMxfp4;
    const COLS: usize = N;
    const CHUNK: usize = B;
    const BYTES: usize = N * 17;

    fn unpack(group: &[u8], j: usize) -> BlockMxfp4 {
        let mut qs = [0; 16];
        unweave(&group[N..], j, N, B, &mut qs);
        BlockMxfp4 { e: group[j], qs }
    }

    fn pack(blocks: &[BlockMxfp4], out: &mut [u8]) {
        for (j, b) in blocks.iter().enumerate() {
            out[j] = b.e;
            weave(&mut out[N..], &b.qs, j, N, B);
        }
    }
}
