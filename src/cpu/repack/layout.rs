//! The interleaved layout of weights in the CPU_REPACK buffer type.
//!
//! A block of a format here is a few fields (scales, quants, high bits); the formats are the
//! 32-value blocks Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 (scales, fifth bits and 16 bytes of
//! nibbles) and Q8_0 (a scale and 32 bytes), the super-blocks Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
//! IQ4_XS and TQ2_0, and F32, F16 and BF16 (blocks of 32 values). A matrix's rows are taken
//! sixteen at a time, a *group*; a group keeps the bytes of its sixteen rows, and within it
//! block `b` of all sixteen rows lies together, field by field, each field in *units* of a few
//! bytes taken from the sixteen rows in turn:
//!
//! ```text
//! Q4_0, group block b:  d of row 0 .. d of row 15                 (unit 2: 32 bytes)
//!                       qs[0..4] of row 0, qs[0..4] of row 1, ..   (unit 4: 64 bytes, chunk 0)
//!                       qs[4..8] of row 0, ..                      (chunk 1, and so on)
//! ```
//!
//! A chunk of four quant bytes of each of the sixteen rows is one 512-bit register, one row
//! per 32-bit lane (for the nibble formats, values `4j..4j+4` in the low nibbles of chunk `j`
//! and `16+4j..16+4j+4` in the high ones). A product against one activation row broadcasts the
//! matching four activation bytes and gets the sixteen rows' partial sums in the lanes where
//! they belong, with no transposing at run time; and the weights of a generation step stream
//! from memory as one sequence of addresses, which the hardware prefetcher follows (sixteen
//! rows read side by side in their plain layout are sixteen streams). Packing is a permutation
//! of bytes, so a group takes the bytes the plain rows took, and a byte pattern filled into a
//! tensor reads back the same either way.

use crate::core::types::Type;

/// Rows per group.
pub const GROUP_ROWS: usize = 16;

/// A run of a block's bytes (a field, or part of one): `size` bytes from byte `at` of the
/// plain block, taken `unit` at a time from each of the group's rows in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub at: usize,
    pub size: usize,
    pub unit: usize,
}

/// A block of a format the layout takes: its runs, in the order the product reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    pub runs: &'static [Run],
    /// Values per block.
    pub values: usize,
}

impl Parts {
    /// Where run `i` starts in a group block.
    pub const fn packed(&self, i: usize) -> usize {
        let mut sum = 0;
        let mut k = 0;
        while k < i {
            sum += self.runs[k].size;
            k += 1;
        }
        GROUP_ROWS * sum
    }

    /// Bytes of a block.
    pub const fn block(&self) -> usize {
        self.packed(self.runs.len()) / GROUP_ROWS
    }

    /// Where byte `t` of row `r`'s block lies in a group block.
    pub fn position(&self, t: usize, r: usize) -> usize {
        let (i, run) =
            self.runs.iter().enumerate().find(|(_, run)| (run.at..run.at + run.size).contains(&t)).unwrap_or_else(
                || crate::ggml_abort!("CPU_REPACK: byte {} lies in no run of a {}-byte block", t, self.block()),
            );
        let within = t - run.at;
        self.packed(i) + (within / run.unit * GROUP_ROWS + r) * run.unit + within % run.unit
    }
}

/// Q6_K's runs, in the order of its product: for each half of the block and each `q` of 8,
/// low-bits chunks `q` and `q + 8` (values `4q..` and `32+4q..`, and 64 on in their high
/// nibbles) and the high-bits chunk they share; then the sixteen 8-bit scales, one byte at a
/// time (a register's worth per sub-block), and `d`.
const Q6_K_RUNS: [Run; 50] = {
    let mut runs = [Run { at: 0, size: 0, unit: 0 }; 50];
    let mut i = 0;
    while i < 16 {
        let (half, q) = (i / 8, i % 8);
        runs[3 * i] = Run { at: 64 * half + 4 * q, size: 4, unit: 4 };
        runs[3 * i + 1] = Run { at: 64 * half + 32 + 4 * q, size: 4, unit: 4 };
        runs[3 * i + 2] = Run { at: 128 + 32 * half + 4 * q, size: 4, unit: 4 };
        i += 1;
    }
    runs[48] = Run { at: 192, size: 16, unit: 1 };
    runs[49] = Run { at: 208, size: 2, unit: 2 };
    runs
};

/// The parts of a block of `ty`, for the formats the layout takes. (Not generated from the
/// list of block formats in `quants::formats`: a layout is an optimisation a format may or may
/// not have, and weights of the others stay in plain rows.)
pub const fn parts(ty: Type) -> Option<Parts> {
    // the scale, then the quants in chunks of four bytes
    const NIBBLES: Run = Run { at: 2, size: 16, unit: 4 };
    match ty {
        Type::Q4_0 | Type::IQ4_NL => Some(Parts { runs: &[Run { at: 0, size: 2, unit: 2 }, NIBBLES], values: 32 }),
        Type::MXFP4 => {
            Some(Parts { runs: &[Run { at: 0, size: 1, unit: 1 }, Run { at: 1, size: 16, unit: 4 }], values: 32 })
        }
        Type::Q8_0 => {
            Some(Parts { runs: &[Run { at: 0, size: 2, unit: 2 }, Run { at: 2, size: 32, unit: 4 }], values: 32 })
        }
        // d, m, the nibbles
        Type::Q4_1 => Some(Parts {
            runs: &[Run { at: 0, size: 2, unit: 2 }, Run { at: 2, size: 2, unit: 2 }, Run { at: 4, size: 16, unit: 4 }],
            values: 32,
        }),
        // d, the fifth bits as one word per row, the nibbles
        Type::Q5_0 => Some(Parts {
            runs: &[Run { at: 0, size: 2, unit: 2 }, Run { at: 2, size: 4, unit: 4 }, Run { at: 6, size: 16, unit: 4 }],
            values: 32,
        }),
        Type::Q5_1 => Some(Parts {
            runs: &[
                Run { at: 0, size: 2, unit: 2 },
                Run { at: 2, size: 2, unit: 2 },
                Run { at: 4, size: 4, unit: 4 },
                Run { at: 8, size: 16, unit: 4 },
            ],
            values: 32,
        }),
        Type::Q6_K => Some(Parts { runs: &Q6_K_RUNS, values: 256 }),
        // floats in blocks of 32 values: one value (F32) or a pair of them per row and chunk
        Type::F32 => Some(Parts { runs: &[Run { at: 0, size: 128, unit: 4 }], values: 32 }),
        Type::F16 => Some(Parts { runs: &[Run { at: 0, size: 64, unit: 2 }], values: 32 }),
        Type::BF16 => Some(Parts { runs: &[Run { at: 0, size: 64, unit: 4 }], values: 32 }),
        // d, the scales' high bits (a word per row) and low bits (four bytes per row), the nibbles
        Type::IQ4_XS => Some(Parts {
            runs: &[
                Run { at: 0, size: 2, unit: 2 },
                Run { at: 2, size: 2, unit: 2 },
                Run { at: 4, size: 4, unit: 4 },
                Run { at: 8, size: 128, unit: 4 },
            ],
            values: 256,
        }),
        // d, dmin, the 4-bit scales and minimums (four registers), the 2-bit fields
        Type::Q2_K => Some(Parts {
            runs: &[
                Run { at: 80, size: 2, unit: 2 },
                Run { at: 82, size: 2, unit: 2 },
                Run { at: 0, size: 16, unit: 4 },
                Run { at: 16, size: 64, unit: 4 },
            ],
            values: 256,
        }),
        // d, the packed 6-bit scales (three registers), the third bits, the 2-bit fields
        Type::Q3_K => Some(Parts {
            runs: &[
                Run { at: 108, size: 2, unit: 2 },
                Run { at: 96, size: 12, unit: 4 },
                Run { at: 0, size: 32, unit: 4 },
                Run { at: 32, size: 64, unit: 4 },
            ],
            values: 256,
        }),
        // d, the 2-bit fields
        Type::TQ2_0 => {
            Some(Parts { runs: &[Run { at: 64, size: 2, unit: 2 }, Run { at: 0, size: 64, unit: 4 }], values: 256 })
        }
        // d, dmin, the packed 6-bit scales and minimums (three registers), the nibbles
        Type::Q4_K => Some(Parts {
            runs: &[
                Run { at: 0, size: 2, unit: 2 },
                Run { at: 2, size: 2, unit: 2 },
                Run { at: 4, size: 12, unit: 4 },
                Run { at: 16, size: 128, unit: 4 },
            ],
            values: 256,
        }),
        // as Q4_K, with the high bits (eight registers) before the nibbles
        Type::Q5_K => Some(Parts {
            runs: &[
                Run { at: 0, size: 2, unit: 2 },
                Run { at: 2, size: 2, unit: 2 },
                Run { at: 4, size: 12, unit: 4 },
                Run { at: 16, size: 32, unit: 4 },
                Run { at: 48, size: 128, unit: 4 },
            ],
            values: 256,
        }),
        _ => None,
    }
}

/// The types [`parts`] has a layout for.
pub const TYPES: [Type; 17] = [
    Type::F32,
    Type::F16,
    Type::BF16,
    Type::Q4_0,
    Type::Q4_1,
    Type::Q5_0,
    Type::Q5_1,
    Type::Q8_0,
    Type::IQ4_NL,
    Type::MXFP4,
    Type::IQ4_XS,
    Type::Q2_K,
    Type::Q3_K,
    Type::TQ2_0,
    Type::Q4_K,
    Type::Q5_K,
    Type::Q6_K,
];

/// Whether weights of type `ty` and `ne` can live in the layout: a format it takes, and whole
/// groups of rows.
pub fn takes(ty: Type, ne: [i64; 4]) -> bool {
    parts(ty).is_some_and(|p| ne[0] % p.values as i64 == 0) && ne[1] % GROUP_ROWS as i64 == 0
}

/// Calls `copy(plain, packed, len)` for every unit of a group of rows of `nb` blocks, in the
/// order of the packed bytes: plain row `r` at `r · row_size`.
#[inline(always)]
fn each_move(parts: Parts, nb: usize, mut copy: impl FnMut(usize, usize, usize)) {
    let block = parts.block();
    let row_size = nb * block;
    for b in 0..nb {
        let mut packed = b * block * GROUP_ROWS;
        for &Run { at, size, unit } in parts.runs {
            let plain = b * block + at;
            for c in 0..size / unit {
                for r in 0..GROUP_ROWS {
                    copy(r * row_size + plain + c * unit, packed, unit);
                    packed += unit;
                }
            }
        }
    }
}

/// Copies a run (a field's unit: a few bytes) from `from` to `to`.
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
    crate::ggml_assert!(
        plain.len() == packed.len(),
        "CPU_REPACK: unpacking {} bytes into {}",
        packed.len(),
        plain.len()
    );
    permute(ty, row_size, packed.len(), |p, q, len| copy_run(&packed[q..q + len], &mut plain[p..p + len]));
}

/// Calls `copy(plain, packed, len)` for every run of bytes of the groups in `size` bytes.
fn permute(ty: Type, row_size: usize, size: usize, mut copy: impl FnMut(usize, usize, usize)) {
    let Some(parts) = parts(ty) else {
        crate::ggml_abort!("CPU_REPACK: {} weights have no repacked layout", ty.name())
    };
    let group = GROUP_ROWS * row_size;
    crate::ggml_assert!(
        row_size.is_multiple_of(parts.block()),
        "CPU_REPACK: rows of {} bytes are not whole blocks",
        row_size
    );
    crate::ggml_assert!(size.is_multiple_of(group), "CPU_REPACK: {} bytes are not whole groups of 16 rows", size);
    let nb = row_size / parts.block();
    for base in (0..size).step_by(group) {
        each_move(parts, nb, |p, q, len| copy(base + p, base + q, len));
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
        for (ty, nb) in [
            (Type::Q4_0, 3),
            (Type::IQ4_NL, 1),
            (Type::MXFP4, 4),
            (Type::Q8_0, 2),
            (Type::Q5_1, 3),
            (Type::Q4_K, 1),
            (Type::Q6_K, 2),
        ] {
            let row_size = ty.row_size(nb * ty.blck_size());
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
    fn every_byte_of_a_group_moves_once() {
        for ty in TYPES {
            let parts = parts(ty).expect("a layout");
            let size = 2 * GROUP_ROWS * parts.block();
            let (mut plain, mut packed) = (vec![0u8; size], vec![0u8; size]);
            each_move(parts, 2, |p, q, len| {
                plain[p..p + len].iter_mut().for_each(|x| *x += 1);
                packed[q..q + len].iter_mut().for_each(|x| *x += 1);
            });
            assert!(plain.iter().chain(&packed).all(|&x| x == 1), "{}", ty.name());
            // and `position` finds each byte where `each_move` puts it
            each_move(parts, 1, |p, q, len| {
                for k in 0..len {
                    let (r, t) = ((p + k) / parts.block(), (p + k) % parts.block());
                    assert_eq!(parts.position(t, r), q + k, "{} row {r} byte {t}", ty.name());
                }
            });
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
    fn only_whole_groups_of_the_formats_with_a_layout_are_taken() {
        assert!(TYPES.iter().all(|&ty| parts(ty).is_some()));
        assert!(takes(Type::Q4_0, [64, 32, 1, 1]));
        assert!(takes(Type::MXFP4, [32, 16, 3, 1]));
        assert!(!takes(Type::Q4_0, [64, 24, 1, 1]));
        assert!(takes(Type::Q8_0, [64, 32, 1, 1]));
        assert!(!takes(Type::IQ2_XS, [256, 32, 1, 1]));
    }
}
