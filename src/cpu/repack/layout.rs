//! The interleaved layout of weights in the CPU_REPACK buffer type.
//!
//! The formats here are the 32-value blocks of a scale and 16 bytes of nibbles (Q4_0, IQ4_NL,
//! MXFP4). A matrix's rows are taken sixteen at a time, a *group*; a group keeps the bytes of
//! its sixteen rows, and within it block `b` of all sixteen rows lies together:
//!
//! ```text
//! group block b:  scale of row 0 .. scale of row 15             (16 · SCALE_BYTES)
//!                 qs[0..4] of row 0, qs[0..4] of row 1, ..      (64 bytes: chunk 0)
//!                 qs[4..8] of row 0, ..                         (chunk 1)
//!                 qs[8..12] ..., qs[12..16] ...                 (chunks 2, 3)
//! ```
//!
//! Chunk `j` is one 512-bit register: its low nibbles are values `4j..4j+4` of the sixteen
//! rows, one row per 32-bit lane, its high nibbles values `16+4j..16+4j+4`. A product against
//! one activation row broadcasts those four activation bytes and gets the sixteen rows' partial
//! sums in the lanes where they belong, with no transposing at run time; and the weights of a
//! generation step stream from memory as one sequence of addresses, which the hardware
//! prefetcher follows (sixteen rows read side by side in their plain layout are sixteen
//! streams). Packing is a permutation of bytes, so a group takes the bytes the plain rows took,
//! and a byte pattern filled into a tensor reads back the same either way.

use crate::core::types::Type;

/// Rows per group.
pub const GROUP_ROWS: usize = 16;
/// Values per block.
const QK: usize = 32;
/// Nibble bytes per block.
const QS: usize = QK / 2;
/// Nibble bytes per chunk of one row.
const CHUNK: usize = 4;

/// Bytes of a block's scale in a format the layout takes (F16 for Q4_0 and IQ4_NL, E8M0 for
/// MXFP4), or `None` for formats it does not take.
pub fn scale_bytes(ty: Type) -> Option<usize> {
    match ty {
        Type::Q4_0 | Type::IQ4_NL => Some(2),
        Type::MXFP4 => Some(1),
        _ => None,
    }
}

/// Whether weights of type `ty` and `ne` can live in the layout: a format it takes, and whole
/// groups of rows.
pub fn takes(ty: Type, ne: [i64; 4]) -> bool {
    scale_bytes(ty).is_some() && ne[0] % QK as i64 == 0 && ne[1] % GROUP_ROWS as i64 == 0
}

/// Where the bytes of a group go: `(plain, packed)` byte offsets for every byte of a group of
/// rows of `nb` blocks whose scales take `scale` bytes, plain row `r` at `r · row_size`.
fn moves(scale: usize, nb: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let block = scale + QS;
    let row_size = nb * block;
    (0..nb).flat_map(move |b| {
        let group_block = b * GROUP_ROWS * block;
        let scales = (0..GROUP_ROWS).map(move |r| (r * row_size + b * block, group_block + r * scale, scale));
        let chunks = (0..QS / CHUNK).flat_map(move |j| {
            (0..GROUP_ROWS).map(move |r| {
                let plain = r * row_size + b * block + scale + j * CHUNK;
                (plain, group_block + GROUP_ROWS * scale + (j * GROUP_ROWS + r) * CHUNK, CHUNK)
            })
        });
        scales.chain(chunks)
    })
}

/// Packs whole groups of plain rows of `ty` (`row_size` bytes each) from `plain` into `packed`.
pub fn pack(ty: Type, row_size: usize, plain: &[u8], packed: &mut [u8]) {
    permute(ty, row_size, plain.len(), |p, q, len| packed[q..q + len].copy_from_slice(&plain[p..p + len]));
    debug_assert_eq!(plain.len(), packed.len());
}

/// Unpacks whole groups from `packed` into plain rows of `ty` in `plain`.
pub fn unpack(ty: Type, row_size: usize, packed: &[u8], plain: &mut [u8]) {
    permute(ty, row_size, packed.len(), |p, q, len| plain[p..p + len].copy_from_slice(&packed[q..q + len]));
    debug_assert_eq!(plain.len(), packed.len());
}

/// Calls `copy(plain, packed, len)` for every run of bytes of the groups in `size` bytes.
fn permute(ty: Type, row_size: usize, size: usize, mut copy: impl FnMut(usize, usize, usize)) {
    let Some(scale) = scale_bytes(ty) else {
        crate::ggml_abort!("CPU_REPACK: {} weights have no repacked layout", ty.name())
    };
    let group = GROUP_ROWS * row_size;
    crate::ggml_assert!(row_size.is_multiple_of(scale + QS), "CPU_REPACK: rows of {} bytes are not whole blocks", row_size);
    crate::ggml_assert!(size.is_multiple_of(group), "CPU_REPACK: {} bytes are not whole groups of 16 rows", size);
    let nb = row_size / (scale + QS);
    for base in (0..size).step_by(group) {
        for (p, q, len) in moves(scale, nb) {
            copy(base + p, base + q, len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn packing_is_a_permutation_undone_by_unpacking() {
        for (ty, nb) in [(Type::Q4_0, 3), (Type::IQ4_NL, 1), (Type::MXFP4, 4)] {
            let row_size = ty.row_size((nb * QK) as i64);
            let plain = bytes(2 * GROUP_ROWS * row_size);
            let mut packed = vec![0; plain.len()];
            pack(ty, row_size, &plain, &mut packed);
            let mut sorted = (plain.clone(), packed.clone());
            sorted.0.sort_unstable();
            sorted.1.sort_unstable();
            assert_eq!(sorted.0, sorted.1, "{}", ty.name());
            let mut back = vec![0; plain.len()];
            unpack(ty, row_size, &packed, &mut back);
            assert_eq!(back, plain, "{}", ty.name());
        }
    }

    #[test]
    fn a_chunk_holds_four_nibble_bytes_of_each_row() {
        let ty = Type::Q4_0;
        let row_size = ty.row_size(64);
        let mut plain = vec![0u8; GROUP_ROWS * row_size];
        // row r, block b: scale bytes (r, b), then qs[i] = 16·b + i
        for r in 0..GROUP_ROWS {
            for b in 0..2 {
                let at = r * row_size + b * 18;
                plain[at..at + 2].copy_from_slice(&[r as u8, b as u8]);
                for i in 0..QS {
                    plain[at + 2 + i] = (100 * r + 16 * b + i) as u8;
                }
            }
        }
        let mut packed = vec![0; plain.len()];
        pack(ty, row_size, &plain, &mut packed);
        let block1 = &packed[GROUP_ROWS * 18..];
        assert_eq!(&block1[2 * 5..2 * 5 + 2], &[5, 1]);
        let chunk2 = &block1[32 + 2 * 64..];
        let expected: [u8; 4] = std::array::from_fn(|i| (300 + 16 + 8 + i) as u8);
        assert_eq!(&chunk2[4 * 3..4 * 3 + 4], &expected);
    }

    #[test]
    fn only_whole_groups_of_the_nibble_formats_are_taken() {
        assert!(takes(Type::Q4_0, [64, 32, 1, 1]));
        assert!(takes(Type::MXFP4, [32, 16, 3, 1]));
        assert!(!takes(Type::Q4_0, [64, 24, 1, 1]));
        assert!(!takes(Type::Q8_0, [64, 32, 1, 1]));
    }
}
