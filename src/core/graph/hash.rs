//! `struct ggml_hash_set`: an open-addressing set of tensor pointers with linear probing and a
//! bitset of occupied slots.
//!
//! Graphs index their per-tensor side tables (use counts, gradients, accumulators) by a
//! tensor's slot in this set, and backends read those tables directly, so the slot a tensor
//! lands in must be the reference's: the same hash (the address shifted right by 4), the same
//! table sizes (the prime table of `ggml_hash_size`) and the same probing.

use std::ptr::NonNull;

use crate::core::tensor::{Tensor, TensorPtr};

/// One word of the occupancy bitset (`ggml_bitset_t`).
pub type BitsetWord = u32;
const BITS_PER_WORD: usize = BitsetWord::BITS as usize;

/// Words needed for a bitset of `n` bits (`ggml_bitset_size`).
pub const fn bitset_words(n: usize) -> usize {
    n.div_ceil(BITS_PER_WORD)
}

/// Primes just above the powers of two: the table sizes a hash set may have.
const PRIMES: [usize; 32] = [
    2, 3, 5, 11, 17, 37, 67, 131, 257, 521, 1031, 2053, 4099, 8209, 16411, 32771, 65537, 131101, 262147, 524309,
    1048583, 2097169, 4194319, 8388617, 16777259, 33554467, 67108879, 134217757, 268435459, 536870923, 1073741827,
    2147483659,
];

/// The table size used for a set that must hold `min_size` tensors (`ggml_hash_size`): the
/// smallest listed prime that is at least `min_size`, or `min_size` made odd beyond the list.
pub fn table_size(min_size: usize) -> usize {
    let i = PRIMES.partition_point(|&p| p < min_size);
    PRIMES.get(i).copied().unwrap_or(min_size | 1)
}

/// A tensor's home slot: addresses are 16-byte aligned, so the low four bits carry nothing.
fn hash(key: *const Tensor) -> usize {
    key as usize >> 4
}

/// `struct ggml_hash_set`, as backends and the allocator see it. The pointers address
/// `size` keys and `bitset_words(size)` bitset words, owned either by a graph object in a
/// context or by an [`OwnedHashSet`]; every method relies on that.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HashSet {
    pub size: usize,
    pub used: *mut BitsetWord,
    pub keys: *mut Option<TensorPtr>,
}

const _: () = assert!(std::mem::size_of::<HashSet>() == 24);
const _: () = assert!(std::mem::size_of::<Option<TensorPtr>>() == std::mem::size_of::<*mut Tensor>());

impl HashSet {
    /// The occupancy bitset.
    pub fn used_words(&self) -> &[BitsetWord] {
        if self.size == 0 {
            return &[];
        }
        // SAFETY: see the type: `used` addresses bitset_words(size) initialised words.
        unsafe { std::slice::from_raw_parts(self.used, bitset_words(self.size)) }
    }

    fn used_words_mut(&mut self) -> &mut [BitsetWord] {
        if self.size == 0 {
            return &mut [];
        }
        // SAFETY: as `used_words`, and `&mut self` is the only handle editing the set now.
        unsafe { std::slice::from_raw_parts_mut(self.used, bitset_words(self.size)) }
    }

    /// The key slots; a slot's content means something only where [`HashSet::is_used`].
    pub fn keys(&self) -> &[Option<TensorPtr>] {
        if self.size == 0 {
            return &[];
        }
        // SAFETY: see the type: `keys` addresses `size` slots, initialised when allocated.
        unsafe { std::slice::from_raw_parts(self.keys, self.size) }
    }

    fn keys_mut(&mut self) -> &mut [Option<TensorPtr>] {
        if self.size == 0 {
            return &mut [];
        }
        // SAFETY: as `keys`, with exclusive access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.keys, self.size) }
    }

    pub fn is_used(&self, slot: usize) -> bool {
        self.used_words()[slot / BITS_PER_WORD] & (1 << (slot % BITS_PER_WORD)) != 0
    }

    fn mark_used(&mut self, slot: usize) {
        self.used_words_mut()[slot / BITS_PER_WORD] |= 1 << (slot % BITS_PER_WORD);
    }

    /// The tensor in `slot`, if the slot is occupied.
    pub fn key(&self, slot: usize) -> Option<TensorPtr> {
        if self.is_used(slot) { self.keys()[slot] } else { None }
    }

    /// Empties the set (`ggml_hash_set_reset`); key slots keep stale values, as in ggml.
    pub fn reset(&mut self) {
        self.used_words_mut().fill(0);
    }

    /// Probes from `key`'s home slot: `Ok(slot)` where `key` sits, `Err(Some(slot))` for the
    /// first free slot where it would go, `Err(None)` when the table is full without it.
    fn probe(&self, key: *const Tensor) -> Result<usize, Option<usize>> {
        crate::ggml_assert!(self.size > 0, "lookup in a hash set of size 0");
        let home = hash(key) % self.size;
        let mut slot = home;
        loop {
            if !self.is_used(slot) {
                return Err(Some(slot));
            }
            if self.keys()[slot].is_some_and(|k| std::ptr::eq(k.as_ptr(), key)) {
                return Ok(slot);
            }
            slot = (slot + 1) % self.size;
            if slot == home {
                return Err(None);
            }
        }
    }

    /// `ggml_hash_find`: the slot holding `key`, or the free slot where it would be inserted;
    /// `None` when the table is full and `key` is not in it.
    pub fn find(&self, key: *const Tensor) -> Option<usize> {
        match self.probe(key) {
            Ok(slot) | Err(Some(slot)) => Some(slot),
            Err(None) => None,
        }
    }

    /// The slot holding `key`, if it is in the set.
    pub fn find_existing(&self, key: *const Tensor) -> Option<usize> {
        self.probe(key).ok()
    }

    pub fn contains(&self, key: *const Tensor) -> bool {
        self.probe(key).is_ok()
    }

    /// `ggml_hash_insert`: the slot `key` was stored in, or `None` if it was already there.
    /// Aborts when the table is full.
    pub fn insert(&mut self, key: TensorPtr) -> Option<usize> {
        match self.probe(key.as_ptr()) {
            Ok(_) => None,
            Err(Some(slot)) => {
                self.occupy(slot, key);
                Some(slot)
            }
            Err(None) => crate::ggml_abort!("hash set of size {} is full", self.size),
        }
    }

    /// `ggml_hash_find_or_insert`: `key`'s slot, inserting it if needed. Aborts when full.
    pub fn find_or_insert(&mut self, key: TensorPtr) -> usize {
        match self.probe(key.as_ptr()) {
            Ok(slot) => slot,
            Err(Some(slot)) => {
                self.occupy(slot, key);
                slot
            }
            Err(None) => crate::ggml_abort!("hash set of size {} is full", self.size),
        }
    }

    /// Stores `key` in the free `slot` that a probe returned.
    pub fn occupy(&mut self, slot: usize, key: TensorPtr) {
        self.keys_mut()[slot] = Some(key);
        self.mark_used(slot);
    }

    /// The tensors in the set, in slot order, with their slots.
    pub fn iter(&self) -> impl Iterator<Item = (usize, TensorPtr)> + '_ {
        (0..self.size).filter_map(move |slot| self.key(slot).map(|k| (slot, k)))
    }
}

/// A hash set on the heap (`ggml_hash_set_new` / `ggml_hash_set_free`), freed when dropped.
pub struct OwnedHashSet(HashSet);

impl OwnedHashSet {
    /// An empty set able to hold `min_size` tensors.
    pub fn new(min_size: usize) -> OwnedHashSet {
        let size = table_size(min_size);
        let keys: Box<[Option<TensorPtr>]> = vec![None; size].into_boxed_slice();
        let used: Box<[BitsetWord]> = vec![0; bitset_words(size)].into_boxed_slice();
        OwnedHashSet(HashSet {
            size,
            used: Box::into_raw(used).cast::<BitsetWord>(),
            keys: Box::into_raw(keys).cast::<Option<TensorPtr>>(),
        })
    }

    /// Gives up ownership: the returned struct must come back through
    /// [`OwnedHashSet::from_raw`] to be freed.
    pub fn into_raw(self) -> HashSet {
        let set = self.0;
        std::mem::forget(self);
        set
    }

    /// # Safety
    /// `set` must come from [`OwnedHashSet::into_raw`], unchanged in size and pointers, and
    /// not be freed twice.
    pub unsafe fn from_raw(set: HashSet) -> OwnedHashSet {
        OwnedHashSet(set)
    }
}

impl std::ops::Deref for OwnedHashSet {
    type Target = HashSet;
    fn deref(&self) -> &HashSet {
        &self.0
    }
}

impl std::ops::DerefMut for OwnedHashSet {
    fn deref_mut(&mut self) -> &mut HashSet {
        &mut self.0
    }
}

impl Drop for OwnedHashSet {
    fn drop(&mut self) {
        let set = self.0;
        if let Some(keys) = NonNull::new(set.keys) {
            let slice = std::ptr::slice_from_raw_parts_mut(keys.as_ptr(), set.size);
            // SAFETY: allocated in `new` as a boxed slice of exactly `size` slots.
            drop(unsafe { Box::from_raw(slice) });
        }
        if let Some(used) = NonNull::new(set.used) {
            let slice = std::ptr::slice_from_raw_parts_mut(used.as_ptr(), bitset_words(set.size));
            // SAFETY: allocated in `new` as a boxed slice of bitset_words(size) words.
            drop(unsafe { Box::from_raw(slice) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(addr: usize) -> TensorPtr {
        // SAFETY: the handle is only compared and hashed in these tests, never dereferenced.
        unsafe { TensorPtr::new(NonNull::new(addr as *mut Tensor).unwrap()) }
    }

    #[test]
    fn sizes_come_from_the_prime_table() {
        assert_eq!(table_size(0), 2);
        assert_eq!(table_size(2), 2);
        assert_eq!(table_size(4), 5);
        assert_eq!(table_size(4096), 4099);
        assert_eq!(table_size(4099), 4099);
        assert_eq!(table_size(4100), 8209);
        assert_eq!(table_size(3_000_000_000), 3_000_000_001);
        assert_eq!(bitset_words(33), 2);
    }

    #[test]
    fn insert_find_and_collide() {
        let mut set = OwnedHashSet::new(10);
        assert_eq!(set.size, 11);
        // 0x10 and 0xc0 both hash to slot 1 (1 and 12 mod 11).
        let a = fake(0x10);
        let b = fake(0xc0);
        assert_eq!(set.insert(a), Some(1));
        assert_eq!(set.insert(a), None);
        assert_eq!(set.find_or_insert(b), 2);
        assert!(set.contains(b.as_ptr()));
        assert_eq!(set.find(fake(0x20).as_ptr()), Some(2 + 1));
        assert!(!set.contains(fake(0x20).as_ptr()));
        assert_eq!(set.iter().map(|(s, _)| s).collect::<Vec<_>>(), vec![1, 2]);
        set.reset();
        assert!(!set.contains(a.as_ptr()));
        assert_eq!(set.find(a.as_ptr()), Some(1));
    }

    #[test]
    fn full_table_finds_nothing() {
        let mut set = OwnedHashSet::new(2);
        set.insert(fake(0x10));
        set.insert(fake(0x20));
        assert_eq!(set.find(fake(0x30).as_ptr()), None);
        let raw = set.into_raw();
        // SAFETY: straight back from into_raw.
        drop(unsafe { OwnedHashSet::from_raw(raw) });
    }
}
