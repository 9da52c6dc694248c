//! The dynamic tensor allocator the graph allocator plans with (ggml's `ggml_dyn_tallocr`).
//!
//! It hands out offsets, not memory: a virtual buffer made of up to [`MAX_CHUNKS`] chunks,
//! each a list of free blocks sorted by offset. A chunk's last free block is its open end: it
//! runs up to the chunk's capacity (the buffer type's max size), and allocating from it grows
//! the chunk's high-water mark, [`DynTallocr::max_size`], which is the size of the backend
//! buffer that will later be allocated for the chunk. Freed ranges merge with their
//! neighbours. The choices (which block, which chunk) follow ggml's exactly, since the buffer
//! sizes a graph needs are observable and must be the same.

/// The most chunks (backend buffers) one virtual buffer is split into.
pub const MAX_CHUNKS: usize = 16;

/// The most free blocks one chunk tracks before the allocator gives up.
pub const MAX_FREE_BLOCKS: usize = 256;

/// A place in the virtual buffer: a chunk and an offset within it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct BufferAddress {
    pub chunk: usize,
    pub offset: usize,
}

#[derive(Clone, Copy, Debug)]
struct FreeBlock {
    offset: usize,
    size: usize,
}

impl FreeBlock {
    fn end(&self) -> usize {
        self.offset + self.size
    }
}

#[derive(Debug)]
struct Chunk {
    /// Free ranges, sorted by offset; the last one is the chunk's open end.
    free: Vec<FreeBlock>,
    /// The highest offset ever handed out in this chunk (plus its size).
    max_size: usize,
}

impl Chunk {
    fn new(capacity: usize) -> Chunk {
        Chunk { free: vec![FreeBlock { offset: 0, size: capacity }], max_size: 0 }
    }

    /// Adds a free range that touches no existing one, keeping the list sorted.
    fn insert_block(&mut self, offset: usize, size: usize) {
        crate::ggml_assert!(self.free.len() < MAX_FREE_BLOCKS, "out of free blocks");
        let at = self.free.partition_point(|b| b.offset < offset);
        self.free.insert(at, FreeBlock { offset, size });
    }

    /// Returns `[offset, offset + size)` to the free list, merging it with the blocks it
    /// touches.
    fn release(&mut self, offset: usize, size: usize) {
        for i in 0..self.free.len() {
            if self.free[i].end() == offset {
                // The range extends block i; it may now reach block i + 1 too.
                self.free[i].size += size;
                if i + 1 < self.free.len() && self.free[i].end() == self.free[i + 1].offset {
                    self.free[i].size += self.free[i + 1].size;
                    self.free.remove(i + 1);
                }
                return;
            }
            if offset + size == self.free[i].offset {
                // The range precedes block i; block i - 1 may now reach it too.
                self.free[i].offset = offset;
                self.free[i].size += size;
                if i > 0 && self.free[i - 1].end() == self.free[i].offset {
                    self.free[i - 1].size += self.free[i].size;
                    self.free.remove(i);
                }
                return;
            }
        }
        self.insert_block(offset, size);
    }
}

/// Rounds `size` up to a multiple of `alignment` (a power of two).
pub fn align_up(size: usize, alignment: usize) -> usize {
    crate::ggml_assert!(alignment.is_power_of_two(), "alignment {} is not a power of 2", alignment);
    size.next_multiple_of(alignment)
}

/// Offsets in a virtual buffer, for one buffer type's alignment and max size.
#[derive(Debug)]
pub struct DynTallocr {
    alignment: usize,
    max_chunk_size: usize,
    chunks: Vec<Chunk>,
}

impl DynTallocr {
    /// An empty allocator; `max_buffer_size` is the largest buffer the buffer type can make.
    pub fn new(alignment: usize, max_buffer_size: usize) -> DynTallocr {
        crate::ggml_assert!(alignment.is_power_of_two(), "alignment {} is not a power of 2", alignment);
        DynTallocr { alignment, max_chunk_size: max_buffer_size.min(usize::MAX / 2), chunks: Vec::new() }
    }

    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Forgets every allocation and every chunk.
    pub fn reset(&mut self) {
        self.chunks.clear();
    }

    pub fn n_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The bytes chunk `chunk` needs: its high-water mark (0 for a chunk that does not exist).
    pub fn max_size(&self, chunk: usize) -> usize {
        self.chunks.get(chunk).map_or(0, |c| c.max_size)
    }

    /// The bytes all chunks need together.
    pub fn total_size(&self) -> usize {
        self.chunks.iter().map(|c| c.max_size).sum()
    }

    /// Opens a chunk whose open end can hold at least `min_size` bytes; `None` when every
    /// chunk is in use.
    fn new_chunk(&mut self, min_size: usize) -> Option<usize> {
        if self.chunks.len() >= MAX_CHUNKS {
            return None;
        }
        // A chunk holds up to the buffer type's max size, more when a single tensor is larger
        // (the backend then decides whether it can allocate that); the last chunk possible
        // is unbounded, so that allocation never fails here.
        let capacity =
            if self.chunks.len() == MAX_CHUNKS - 1 { usize::MAX / 2 } else { min_size.max(self.max_chunk_size) };
        self.chunks.push(Chunk::new(capacity));
        Some(self.chunks.len() - 1)
    }

    /// The smallest free block that is not a chunk's open end and holds `size` bytes. Within
    /// a chunk the later of equal blocks wins, and a later chunk with any fit wins over an
    /// earlier one (ggml's search, kept for identical placements).
    fn best_inner_fit(&self, size: usize) -> Option<(usize, usize)> {
        let mut best = None;
        for (c, chunk) in self.chunks.iter().enumerate() {
            let mut best_size = usize::MAX;
            let inner = &chunk.free[..chunk.free.len().saturating_sub(1)];
            for (i, block) in inner.iter().enumerate() {
                if block.size >= size && block.size <= best_size {
                    best = Some((c, i));
                    best_size = block.size;
                }
            }
        }
        best
    }

    /// The chunk whose open end suits `size` best: preferably one whose high-water mark
    /// already covers it with the least slack, otherwise the one that must grow the least.
    fn best_open_end(&self, size: usize) -> Option<(usize, usize)> {
        let mut best = None;
        let mut best_reuse = i64::MIN;
        for (c, chunk) in self.chunks.iter().enumerate() {
            let Some(block) = chunk.free.last() else { continue };
            // > 0: bytes of the chunk's current size left unused; < 0: bytes it must grow.
            let reuse = chunk.max_size.wrapping_sub(block.offset).wrapping_sub(size) as i64;
            let better_reuse = best_reuse < 0 && reuse > best_reuse;
            let better_fit = reuse >= 0 && reuse < best_reuse;
            if block.size >= size && (better_reuse || better_fit) {
                best = Some((c, chunk.free.len() - 1));
                best_reuse = reuse;
            }
        }
        best
    }

    /// Reserves `size` bytes (rounded up to the alignment). `name` is for the error message.
    pub fn alloc(&mut self, size: usize, name: &str) -> BufferAddress {
        let size = align_up(size, self.alignment);
        let found = self
            .best_inner_fit(size)
            .or_else(|| self.best_open_end(size))
            .or_else(|| self.new_chunk(size).map(|c| (c, 0)));
        let Some((c, i)) = found else {
            let largest = self.chunks.iter().flat_map(|c| c.free.iter()).map(|b| b.size).max().unwrap_or(0);
            crate::log_error!(
                "ggml_dyn_tallocr_alloc: not enough space in the buffer to allocate {} ({} bytes), largest block available {} bytes\n",
                name,
                size,
                largest
            );
            crate::ggml_abort!("graph allocation: failed to reserve memory");
        };
        let chunk = &mut self.chunks[c];
        let block = &mut chunk.free[i];
        let addr = BufferAddress { chunk: c, offset: block.offset };
        block.offset += size;
        block.size -= size;
        if block.size == 0 {
            chunk.free.remove(i);
        }
        chunk.max_size = chunk.max_size.max(addr.offset + size);
        addr
    }

    /// Returns `size` bytes (rounded up to the alignment) at `addr`.
    pub fn free_bytes(&mut self, addr: BufferAddress, size: usize) {
        let size = align_up(size, self.alignment);
        match self.chunks.get_mut(addr.chunk) {
            Some(chunk) => chunk.release(addr.offset, size),
            None => crate::ggml_abort!("freeing {} bytes in chunk {} that does not exist", size, addr.chunk),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(chunk: usize, offset: usize) -> BufferAddress {
        BufferAddress { chunk, offset }
    }

    #[test]
    fn aligns_and_tracks_the_high_water_mark() {
        let mut a = DynTallocr::new(16, usize::MAX);
        assert_eq!(a.alloc(10, "a"), at(0, 0));
        assert_eq!(a.alloc(20, "b"), at(0, 16));
        assert_eq!(a.max_size(0), 48);
        assert_eq!(a.max_size(1), 0);
        a.free_bytes(at(0, 0), 10);
        // The freed 16 bytes are an inner block: an exact fit goes there.
        assert_eq!(a.alloc(16, "c"), at(0, 0));
        assert_eq!(a.max_size(0), 48);
        a.reset();
        assert_eq!(a.n_chunks(), 0);
        assert_eq!(a.total_size(), 0);
    }

    #[test]
    fn freed_neighbours_merge() {
        let mut a = DynTallocr::new(8, usize::MAX);
        let x = a.alloc(8, "x");
        let y = a.alloc(8, "y");
        let z = a.alloc(8, "z");
        let _w = a.alloc(8, "w");
        a.free_bytes(x, 8);
        a.free_bytes(z, 8);
        assert_eq!(a.chunks[0].free.len(), 3);
        // y joins x's block and reaches z's.
        a.free_bytes(y, 8);
        assert_eq!(a.chunks[0].free.len(), 2);
        assert_eq!((a.chunks[0].free[0].offset, a.chunks[0].free[0].size), (0, 24));
        assert_eq!(a.alloc(24, "v"), at(0, 0));
        assert_eq!(a.max_size(0), 32);
    }

    #[test]
    fn a_block_freed_before_another_merges_backwards() {
        let mut a = DynTallocr::new(8, usize::MAX);
        let x = a.alloc(8, "x");
        let y = a.alloc(8, "y");
        let _z = a.alloc(8, "z");
        a.free_bytes(y, 8);
        a.free_bytes(x, 8);
        assert_eq!(a.chunks[0].free.len(), 2);
        assert_eq!((a.chunks[0].free[0].offset, a.chunks[0].free[0].size), (0, 16));
    }

    #[test]
    fn chunks_open_past_the_max_size() {
        let mut a = DynTallocr::new(8, 16);
        assert_eq!(a.alloc(8, "a"), at(0, 0));
        assert_eq!(a.alloc(8, "b"), at(0, 8));
        assert_eq!(a.alloc(8, "c"), at(1, 0));
        // Larger than a chunk: a chunk of its own size.
        assert_eq!(a.alloc(24, "d"), at(2, 0));
        assert_eq!((a.max_size(0), a.max_size(1), a.max_size(2)), (16, 8, 24));
        assert_eq!(a.total_size(), 48);
    }

    #[test]
    fn the_last_chunk_is_unbounded() {
        let mut a = DynTallocr::new(8, 8);
        for i in 0..MAX_CHUNKS {
            assert_eq!(a.alloc(8, "t"), at(i, 0));
        }
        assert_eq!(a.alloc(8, "t"), at(MAX_CHUNKS - 1, 8));
        assert_eq!(a.max_size(MAX_CHUNKS - 1), 16);
    }

    #[test]
    fn open_end_prefers_memory_already_counted() {
        // Chunk 0 reached 32 bytes and has its first 24 free again; chunk 1 is new.
        let mut a = DynTallocr::new(4, 32);
        let x = a.alloc(24, "x");
        let _y = a.alloc(8, "y");
        a.free_bytes(x, 24);
        // Chunk 0 was full, so the freed range is now its open end, and it is within the
        // chunk's current size: reused rather than opening chunk 1.
        assert_eq!(a.alloc(20, "z"), at(0, 0));
        assert_eq!(a.n_chunks(), 1);
    }
}
