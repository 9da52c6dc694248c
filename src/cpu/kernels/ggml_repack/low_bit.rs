//! `q1_0` (one sign bit per value, 128 values a block) four rows at a time. An interleaved
//! block is the four `fp16` scales and 64 bytes of bits, in one of two arrangements:
//!
//! - `4x8`: the rows' bytes taken one at a time, so byte `4t + j` is row `j`'s byte `t`
//!   (values `8t..8t + 8`, lowest bit first);
//! - `4x4`: each 4 values of all four rows share two bytes, rows 0 and 1 in the first (row 0
//!   in the low nibble), rows 2 and 3 in the second, so that a nibble meets the 4 activation
//!   bytes `gemm` keeps together.

use super::{Interleaved, u16_at, unweave, weave};
use crate::quants::half::Half;
use crate::quants::low_bit::BlockQ1_0;

/// `block_q1_0x4` for the `4x4` kernels.
pub struct Q1_0x4x4;
/// `block_q1_0x4` for the `4x8` kernels.
pub struct Q1_0x4x8;

const COLS: usize = 4;
const BYTES: usize = COLS * 2 + 64;

/// Where row `j`'s bit for value `e` lives in a `4x4` block's bits: (byte, bit).
fn nibble_place(j: usize, e: usize) -> (usize, usize) {
    (e / 4 * 2 + j / 2, j % 2 * 4 + e % 4)
}

fn scale(group: &[u8], j: usize) -> Half {
    Half::from_bits(u16_at(group, 2 * j))
}

fn put_scales(blocks: &[BlockQ1_0], out: &mut [u8]) {
    for (j, b) in blocks.iter().enumerate() {
        out[2 * j..2 * j + 2].copy_from_slice(&b.d.bits().to_le_bytes());
    }
}

impl Interleaved for Q1_0x4x4 {
    type Block = BlockQ1_0;
    const COLS: usize = COLS;
    const CHUNK: usize = 4;
    const BYTES: usize = BYTES;

    fn unpack(group: &[u8], j: usize) -> BlockQ1_0 {
        let bits = &group[2 * COLS..];
        let mut qs = [0u8; 16];
        for e in 0..128 {
            let (byte, bit) = nibble_place(j, e);
            qs[e / 8] |= ((bits[byte] >> bit) & 1) << (e % 8);
        }
        BlockQ1_0 { d: scale(group, j), qs }
    }

    fn pack(blocks: &[BlockQ1_0], out: &mut [u8]) {
        put_scales(blocks, out);
        let bits = &mut out[2 * COLS..];
        bits.fill(0);
        for (j, b) in blocks.iter().enumerate() {
            for e in 0..128 {
                let (byte, bit) = nibble_place(j, e);
                bits[byte] |= ((b.qs[e / 8] >> (e % 8)) & 1) << bit;
            }
        }
    }
}

impl Interleaved for Q1_0x4x8 {
    type Block = BlockQ1_0;
    const COLS: usize = COLS;
    const CHUNK: usize = 8;
    const BYTES: usize = BYTES;

    fn unpack(group: &[u8], j: usize) -> BlockQ1_0 {
        let mut qs = [0u8; 16];
        unweave(&group[2 * COLS..], j, COLS, 1, &mut qs);
        BlockQ1_0 { d: scale(group, j), qs }
    }

    fn pack(blocks: &[BlockQ1_0], out: &mut [u8]) {
        put_scales(blocks, out);
        for (j, b) in blocks.iter().enumerate() {
            weave(&mut out[2 * COLS..], &b.qs, j, COLS, 1);
        }
    }
}
