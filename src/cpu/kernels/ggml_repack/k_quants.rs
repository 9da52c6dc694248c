//! The K-quants' layouts, eight rows at a time: `q2_K` (`8x8`), `q4_K`, `q5_K` and `q6_K`
//! (`8x4` and `8x8`). The quant arrays (`qs`, and `qh`/`ql`) are dealt `B` bytes at a time
//! like every layout's; the super-block scales come first as arrays of eight. The sub-block
//! scales are regrouped by sub-block rather than by row:
//!
//! - `q4_K`, `q5_K`: 8 groups of 12 bytes, group `sb` holding the eight rows' 6-bit scale and
//!   minimum of sub-block `sb`, packed as one `q4_K` block packs its own eight sub-blocks (row
//!   `j` where the block has sub-block `j`);
//! - `q2_K`: the rows' scale bytes taken 2 at a time (sub-blocks `2g`, `2g + 1` of each row);
//! - `q6_K`: the rows' scale bytes taken 1 at a time.

use super::{Interleaved, u16_at, unweave, weave};
use crate::quants::half::Half;
use crate::quants::k_quants::q2_k::BlockQ2K;
use crate::quants::k_quants::q4_k::BlockQ4K;
use crate::quants::k_quants::q5_k::BlockQ5K;
use crate::quants::k_quants::q6_k::BlockQ6K;
use crate::quants::k_quants::{K_SCALE_SIZE, pack_scale_min, scale_min};

/// `block_q2_Kx8` with `B`-byte chunks.
pub struct Q2K<const B: usize>;
/// `block_q4_Kx8` with `B`-byte chunks.
pub struct Q4K<const B: usize>;
/// `block_q5_Kx8` with `B`-byte chunks.
pub struct Q5K<const B: usize>;
/// `block_q6_Kx8` with `B`-byte chunks.
pub struct Q6K<const B: usize>;

const COLS: usize = 8;
/// Where the scales begin, after `d[8]` and `dmin[8]`.
const AFTER_D_DMIN: usize = 4 * COLS;
/// The 6-bit scales and minimums of eight rows, 12 bytes per sub-block.
const SCALES_6BIT: usize = K_SCALE_SIZE * COLS;

fn half(group: &[u8], j: usize) -> Half {
    Half::from_bits(u16_at(group, 2 * j))
}

fn put_half(out: &mut [u8], j: usize, h: Half) {
    out[2 * j..2 * j + 2].copy_from_slice(&h.bits().to_le_bytes());
}

/// Row `j`'s packed scales and minimums out of the eight groups of `by_sub_block`.
fn row_scales(by_sub_block: &[u8], j: usize) -> [u8; K_SCALE_SIZE] {
    let mut packed = [0; K_SCALE_SIZE];
    for (sb, group) in by_sub_block.chunks_exact(K_SCALE_SIZE).enumerate() {
        let (sc, m) = scale_min(group.try_into().expect("12 bytes"), j);
        pack_scale_min(&mut packed, sb, sc, m);
    }
    packed
}

/// The groups by sub-block of eight rows' packed scales and minimums.
fn scales_by_sub_block<'a>(rows: impl Iterator<Item = &'a [u8; K_SCALE_SIZE]>, out: &mut [u8]) {
    out.fill(0);
    let rows: Vec<_> = rows.collect();
    for (sb, group) in out.chunks_exact_mut(K_SCALE_SIZE).enumerate() {
        let group: &mut [u8; K_SCALE_SIZE] = group.try_into().expect("12 bytes");
        for (j, packed) in rows.iter().enumerate() {
            let (sc, m) = scale_min(packed, sb);
            pack_scale_min(group, j, sc, m);
        }
    }
}

impl<const B: usize> Interleaved for Q2K<B> {
    type Block = BlockQ2K;
    const COLS: usize = COLS;
    const CHUNK: usize = B;
    const BYTES: usize = AFTER_D_DMIN + 16 * COLS + 64 * COLS;

    fn unpack(group: &[u8], j: usize) -> BlockQ2K {
        let mut b = BlockQ2K { d: half(group, j), dmin: half(&group[2 * COLS..], j), ..Default::default() };
        let (scales, qs) = group[AFTER_D_DMIN..].split_at(16 * COLS);
        unweave(scales, j, COLS, 2, &mut b.scales);
        unweave(qs, j, COLS, B, &mut b.qs);
        b
    }

    fn pack(blocks: &[BlockQ2K], out: &mut [u8]) {
        for (j, b) in blocks.iter().enumerate() {
            put_half(out, j, b.d);
            put_half(&mut out[2 * COLS..], j, b.dmin);
            let (scales, qs) = out[AFTER_D_DMIN..].split_at_mut(16 * COLS);
            weave(scales, &b.scales, j, COLS, 2);
            weave(qs, &b.qs, j, COLS, B);
        }
    }
}

impl<const B: usize> Interleaved for Q4K<B> {
    type Block = BlockQ4K;
    const COLS: usize = COLS;
    const CHUNK: usize = B;
    const BYTES: usize = AFTER_D_DMIN + SCALES_6BIT + 128 * COLS;

    fn unpack(group: &[u8], j: usize) -> BlockQ4K {
        let (scales, qs) = group[AFTER_D_DMIN..].split_at(SCALES_6BIT);
        let mut b = BlockQ4K { d: half(group, j), dmin: half(&group[2 * COLS..], j), ..Default::default() };
        b.scales = row_scales(scales, j);
        unweave(qs, j, COLS, B, &mut b.qs);
        b
    }

    fn pack(blocks: &[BlockQ4K], out: &mut [u8]) {
        let (head, rest) = out.split_at_mut(AFTER_D_DMIN);
        let (scales, qs) = rest.split_at_mut(SCALES_6BIT);
        scales_by_sub_block(blocks.iter().map(|b| &b.scales), scales);
        for (j, b) in blocks.iter().enumerate() {
            put_half(head, j, b.d);
            put_half(&mut head[2 * COLS..], j, b.dmin);
            weave(qs, &b.qs, j, COLS, B);
        }
    }
}

impl<const B: usize> Interleaved for Q5K<B> {
    type Block = BlockQ5K;
    const COLS: usize = COLS;
    const CHUNK: usize = B;
    const BYTES: usize = AFTER_D_DMIN + SCALES_6BIT + 32 * COLS + 128 * COLS;

    fn unpack(group: &[u8], j: usize) -> BlockQ5K {
        let (scales, rest) = group[AFTER_D_DMIN..].split_at(SCALES_6BIT);
        let (qh, qs) = rest.split_at(32 * COLS);
        let mut b = BlockQ5K { d: half(group, j), dmin: half(&group[2 * COLS..], j), ..Default::default() };
        b.scales = row_scales(scales, j);
        unweave(qh, j, COLS, B, &mut b.qh);
        unweave(qs, j, COLS, B, &mut b.qs);
        b
    }

    fn pack(blocks: &[BlockQ5K], out: &mut [u8]) {
        let (head, rest) = out.split_at_mut(AFTER_D_DMIN);
        let (scales, rest) = rest.split_at_mut(SCALES_6BIT);
        let (qh, qs) = rest.split_at_mut(32 * COLS);
        scales_by_sub_block(blocks.iter().map(|b| &b.scales), scales);
        for (j, b) in blocks.iter().enumerate() {
            put_half(head, j, b.d);
            put_half(&mut head[2 * COLS..], j, b.dmin);
            weave(qh, &b.qh, j, COLS, B);
            weave(qs, &b.qs, j, COLS, B);
        }
    }
}

impl<const B: usize> Interleaved for Q6K<B> {
    type Block = BlockQ6K;
    const COLS: usize = COLS;
    const CHUNK: usize = B;
    const BYTES: usize = 2 * COLS + 16 * COLS + 128 * COLS + 64 * COLS;

    fn unpack(group: &[u8], j: usize) -> BlockQ6K {
        let (scales, rest) = group[2 * COLS..].split_at(16 * COLS);
        let (ql, qh) = rest.split_at(128 * COLS);
        let mut b = BlockQ6K { d: half(group, j), ..Default::default() };
        unweave(scales, j, COLS, 1, &mut b.scales);
        unweave(ql, j, COLS, B, &mut b.ql);
        unweave(qh, j, COLS, B, &mut b.qh);
        b
    }

    fn pack(blocks: &[BlockQ6K], out: &mut [u8]) {
        let (head, rest) = out.split_at_mut(2 * COLS);
        let (scales, rest) = rest.split_at_mut(16 * COLS);
        let (ql, qh) = rest.split_at_mut(128 * COLS);
        for (j, b) in blocks.iter().enumerate() {
            put_half(head, j, b.d);
            weave(scales, &b.scales, j, COLS, 1);
            weave(ql, &b.ql, j, COLS, B);
            weave(qh, &b.qh, j, COLS, B);
        }
    }
}
