//! A backend's GUID (`ggml_guid`): 16 bytes that name the kind of backend, compared by
//! `ggml_backend_is_cpu`, `ggml_backend_is_rpc`, ... to recognise their own.

use std::cell::UnsafeCell;

use super::backend::BackendPtr;
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

    /// Whether `backend` is of the kind this GUID names.
    pub fn names(&'static self, backend: BackendPtr) -> bool {
        let guid = backend.guid();
        // SAFETY: a live backend's GUID is null or 16 readable bytes; ours are never written.
        !guid.is_null() && unsafe { *guid == *self.0.get() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: StaticGuid = StaticGuid::new([1; 16]);
    static B: StaticGuid = StaticGuid::new([2; 16]);

    /// A backend of null pointers and empty table entries with the given GUID field.
    fn backend_with(guid: GuidPtr) -> crate::backend::interface::Backend {
        // SAFETY: every field of a backend may be null or empty; only the GUID is read.
        let mut b: crate::backend::interface::Backend = unsafe { std::mem::zeroed() };
        b.guid = guid;
        b
    }

    #[test]
    fn a_guid_names_only_backends_with_its_bytes() {
        let (mut same, mut other) = ([1u8; 16], [1u8; 16]);
        other[15] = 2;
        for (guid, a, b) in
            [(std::ptr::null_mut(), false, false), (&raw mut same, true, false), (&raw mut other, false, false)]
        {
            let mut backend = backend_with(guid);
            // SAFETY: a local, live for the check.
            let handle = unsafe { BackendPtr::from_raw(&raw mut backend) }.expect("a backend");
            assert_eq!((A.names(handle), B.names(handle)), (a, b));
        }
    }
}
