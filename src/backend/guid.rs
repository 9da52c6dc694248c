//! A backend's GUID (`ggml_guid`): 16 bytes that name the kind of backend, compared by
//! `ggml_backend_is_cpu`, `ggml_backend_is_rpc`, ... to recognise their own.

use std::cell::UnsafeCell;

use super::interface::GuidPtr;

/// A GUID defined as a `static`. C receives a mutable pointer to it (the struct field is
/// declared that way), so the bytes sit in an `UnsafeCell`; nothing ever writes them.
pub struct StaticGuid(UnsafeCell<[u8; 16]>);

// SAFETY: the bytes are never written, so sharing them between threads is sharing constants.
unsafe impl Sync for StaticGuid {}

impl StaticGuid {
    pub const fn new(bytes: [u8; 16]) -> StaticGuid {
        StaticGuid(UnsafeCell::new(bytes))
    }

    /// The pointer a backend's `guid` field holds.
    pub fn as_ptr(&'static self) -> GuidPtr {
        self.0.get()
    }

    /// Whether `guid` (null or 16 readable bytes, as a backend's field is) names this GUID.
    pub fn matches(&'static self, guid: GuidPtr) -> bool {
        // SAFETY: the caller's contract; our own bytes are never written.
        !guid.is_null() && unsafe { *guid == *self.0.get() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: StaticGuid = StaticGuid::new([1; 16]);
    static B: StaticGuid = StaticGuid::new([2; 16]);

    #[test]
    fn a_guid_matches_only_its_bytes() {
        assert!(A.matches(A.as_ptr()));
        assert!(!A.matches(B.as_ptr()));
        let mut copy = [1u8; 16];
        assert!(A.matches(&mut copy));
        assert!(!A.matches(std::ptr::null_mut()));
    }
}
