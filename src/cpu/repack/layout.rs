//! The interleaved layout of weights in the CPU_REPACK buffer type.
//!
//! The formats here are 32-value blocks of a few fields (scales, high bits) followed by their
//! quants: Q4_0, IQ4_NL and MXFP4 (a scale, 16 bytes of nibbles) and Q8_0 (a scale, 32 bytes).
//! A matrix's rows are taken sixteen at a time, a *group*; a group keeps the bytes of its
//! sixteen rows, and within it block `b` of all sixteen rows lies together, each field of the
//! sixteen rows in turn, then the quants in chunks of four bytes:
//!
//! ```text
//! group block b:  field 0 of row 0 .. field 0 of row 15         (16 · its size)
//!                 (any further field, likewise)
//!                 qs[0..4] of row 0, qs[0..4] of row 1, ..      (64 bytes: chunk 0)
//!                 qs[4..8] of row 0, ..                         (chunk 1, and so on)
//! ```
//!
//! A chunk is one 512-bit register holding four quant bytes of each of the sixteen rows, one
//! row per 32-bit lane (for the nibble formats, values `4j..4j+4` in the low nibbles of chunk
//! `j` and `16+4j..16+4j+4` in the high ones). A product against one activation row broadcasts
//! the matching four activation bytes and gets the sixteen rows' partial sums in the lanes
//! where they belong, with no transposing at run time; and the weights of a generation step
//! stream from memory as one sequence of addresses, which the hardware prefetcher follows
//! (sixteen rows read side by side in their plain layout are sixteen streams). Packing is a
//! permutation of bytes, so a group takes the bytes the plain rows took, and a byte pattern
//! filled into a tensor reads back the same either way.

use crate::core::types::Type;

/// Rows per group.
pub const GROUP_ROWS: usize = 16;
/// Values per block.
const QK: usize = 32;
/// Quant bytes per chunk of one row.
const CHUNK: usize = 4;

/// A block of a format the layout takes: the sizes of its fields before the quants, and the
/// quants' bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    pub fields: &'static [usize],
    pub qs: usize,
}

impl Parts {
    /// Bytes before the quants.
    pub const fn head(&self) -> usize {
        let mut sum = 0;
        let mut i = 0;
        while i < self.fields.len() {
            sum += self.fields[i];
            i += 1;
        }
        sum
    }

    /// Bytes of a block.
    pub const fn block(&self) -> usize {
        self.head() + self.qs
    }
}

/// The parts of a block of `ty`, for the formats the layout takes.
pub const fn parts(ty: Type) -> Option<Parts> {
    match ty {
        Type::Q4_0 | Type::IQ4_NL => Some(Parts { fields: &[2], qs: 16 }),
        Type::MXFP4 => Some(Parts { fields: &[1], qs: 16 }),
        Type::Q8_0 => Some(Parts { fields: &[2], qs: 32 }),
        _ => None,
    }
}

/// Whether weights of type `ty` and `ne` can live in the layout: a format it takes, and whole
/// groups of rows.
pub fn takes(ty: Type, ne: [i64; 4]) -> bool {
    parts(ty).is_some() && ne[0] % QK as i64 == 0 && ne[1] % GROUP_ROWS as i64 == 0
}

/// Where the bytes of a group go: `(plain, packed, len)` for every run of bytes of a group of
/// rows of `nb` blocks, plain row `r` at `r · row_size`.
fn moves(parts: Parts, nb: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let block = parts.block();
    let row_size = nb * block;
    (0..nb).flat_map(move |b| {
        let group_block = b * GROUP_ROWS * block;
        let fields = (0..parts.fields.len()).flat_map(move |f| {
            let before: usize = parts.fields[..f].iter().sum();
            let size = parts.fields[f];
            (0..GROUP_ROWS)
                .map(move |r| (r * row_size + b * block + before, group_block + GROUP_ROWS * before + r * size, size))
        });
        let chunks = (0..parts.qs / CHUNK).flat_map(move |j| {
            (0..GROUP_ROWS).map(move |r| {
                let plain = r * row_size + b * block + parts.head() + j * CHUNK;
                (plain, group_block + GROUP_ROWS * parts.head() + (j * GROUP_ROWS + r) * CHUNK, CHUNK)
            })
        });
        fields.chain(chunks)
    })
}

/// Copies `len` bytes (a field or a chunk: small) from `from` to `to`.
#[inline(always)]
fn copy_run(from: &[u8], to: &mut [u8]) {
    // fixed sizes, so that no run costs a call to memcpy
    match from.len() {
        1 => to[0] = from[0],
        2 => to[..2].copy_from_slice(&from[..2]),
        4 => to[..4].copy_from_slice(&from[..4]),
        _ => to.copy_from_slice(from),
    }
}

/// Packs whole groups of plain rows of `ty` (`row_size` bytes each) from `plain` into `packed`.
pub fn pack(ty: Type, row_size: usize, plain: &[u8], packed: &mut [u8]) {
    crate::ggml_assert!(plain.len() == packed.len(), "CPU_REPACK: packing {} bytes into {}", plain.len(), packed.len());
    permute(ty, row_size, plain.len(), |p, q, len| copy_run(&plain[p..p + len], &mut packed[q..q + len]));
}

/// Unpacks whole groups from `packed` into plain rows of `ty` in `plain`.
pub fn unpack(ty: Type, row_size: usize, packed: &[u8], plain: &mut [u8]) {
    crate::ggml_assert!(plain.len() == packed.len(), "CPU_REPACK: unpacking {} bytes into {}", packed.len(), plain.len());
    permute(ty, row_size, packed.len(), |p, q, len| copy_run(&packed[q..q + len], &mut plain[p..p + len]));
}

/// Calls `copy(plain, packed, len)` for every run of bytes of the groups in `size` bytes.
fn permute(ty: Type, row_size: usize, size: usize, mut copy: impl FnMut(usize, usize, usize)) {
    let Some(parts) = parts(ty) else {
        crate::ggml_abort!("CPU_REPACK: {} weights have no repacked layout", ty.name())
    };
    let group = GROUP_ROWS * row_size;
    crate::ggml_assert!(row_size.is_multiple_of(parts.block()), "CPU_REPACK: rows of {} bytes are not whole blocks", row_size);
    crate::ggml_assert!(size.is_multiple_of(group), "CPU_REPACK: {} bytes are not whole groups of 16 rows", size);
    let nb = row_size / parts.block();
    for base in (0..size).step_by(group) {
        for (p, q, len) in moves(parts, nb) {
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
        for (ty, nb) in [(Type::Q4_0, 3), (Type::IQ4_NL, 1), (Type::MXFP4, 4), (Type::Q8_0, 2)] {
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
                for i in 0..16 {
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
        assert!(takes(Type::Q8_0, [64, 32, 1, 1]));
        assert!(!takes(Type::Q5_K, [256, 32, 1, 1]));
    }
}
