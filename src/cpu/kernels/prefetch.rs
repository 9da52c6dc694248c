//! Prefetching: asking for cache lines before a kernel reads them, where the hardware
//! prefetcher alone falls behind (tiles reading several rows side by side, the attention's
//! key rows). A prefetch has no architectural effect and never faults, so these take any
//! address.

/// The cache a prefetch fills.
#[derive(Clone, Copy)]
pub enum Cache {
    /// The first level (`prefetcht0`): data wanted within a few hundred cycles.
    L1,
    /// The second level (`prefetcht1`): data further ahead, kept out of the small first level.
    L2,
}

/// Asks for the cache lines of the `len` bytes at `at`, one request every 64 bytes (a span
/// whose start is not line-aligned may leave its last line to the hardware). Any address will
/// do: a prefetch has no architectural effect and never faults, so callers may point past
/// their data (`wrapping_add`). Nothing happens off x86-64.
#[inline(always)]
pub fn lines(at: *const u8, len: usize, cache: Cache) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..len).step_by(64) {
        use std::arch::x86_64::{_MM_HINT_T0, _MM_HINT_T1, _mm_prefetch};
        let p = at.wrapping_add(line).cast::<i8>();
        // SAFETY: a prefetch reads nothing architecturally and cannot fault, whatever the address.
        unsafe {
            match cache {
                Cache::L1 => _mm_prefetch::<_MM_HINT_T0>(p),
                Cache::L2 => _mm_prefetch::<_MM_HINT_T1>(p),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, len, cache);
}

/// Bytes of each row a tile's prefetch runs ahead by, at least: a tile of short rows is done
/// before one tile's lead has come from memory. (Generation's attention, 200 layers of
/// 64-value keys and 256-value values from memory: 1 tile ahead 9.7-10.3 ms, 8 tiles
/// 8.0-8.1.)
const LEAD: usize = 4096;

/// Asks for unit `i` of each tile row's counterpart some tiles further on (units
/// `i..i + units` of it) to be brought into the second-level cache: the same place in the
/// next tile, or in a later one for rows shorter than [`LEAD`] bytes, when the rows lie evenly
/// apart as a matrix's do (the first two rows' distance).
///
/// A one-column product (generation) reads each weight once and waits on memory. A tile
/// reads its R rows side by side, R interleaved streams within the same few pages, which the
/// hardware prefetcher follows less well than ggml's one row at a time. With this, llama's
/// Q4_1 generation at one thread went from 45 to 55 tokens/s (the reference: 51).
/// Prefetching reads nothing architecturally and never faults, so addresses past the matrix
/// (after its last tile, or for rows that are not back to back) cost a wasted fetch at most.
#[inline(always)]
pub(crate) fn next_tile<T, const R: usize>(x: &[&[T]; R], i: usize, units: usize) {
    // (one row is one stream, which the hardware prefetcher follows on its own)
    if R == 1 {
        return;
    }
    // by the rows' own stride, which views leave wider than their length (generation's keys:
    // rows of 64 values 256 apart, four heads side by side)
    let tiles = (LEAD / size_of_val(x[0]).max(1)).clamp(1, 8);
    let ahead = (tiles * R) as isize * (x[1].as_ptr() as isize).wrapping_sub(x[0].as_ptr() as isize);
    for row in x {
        let next = row.as_ptr().wrapping_add(i).cast::<u8>().wrapping_offset(ahead);
        // steps back to back then leave no line out
        lines(next, units * size_of::<T>(), Cache::L2);
    }
}
