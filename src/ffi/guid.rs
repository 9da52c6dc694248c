//! `ggml_guid_matches`: equality of two backend GUIDs.

#[unsafe(no_mangle)]
pub extern "C" fn ggml_guid_matches(a: *mut [u8; 16], b: *mut [u8; 16]) -> bool {
    // SAFETY: GUID handles point to 16-byte arrays (ggml_guid).
    match unsafe { (a.as_ref(), b.as_ref()) } {
        (Some(a), Some(b)) => a == b,
        _ => crate::ggml_abort!("NULL guid passed to ggml_guid_matches"),
    }
}
