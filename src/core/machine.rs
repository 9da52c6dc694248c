//! What the machine has, for sizes that come from outside and must be refused before
//! allocating rather than met by the OOM killer.

/// Physical memory in bytes (0 when the system does not say).
pub fn physical_memory() -> usize {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGE_SIZE)) };
    usize::try_from(pages).unwrap_or(0).saturating_mul(usize::try_from(page_size).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_machine_has_memory() {
        let bytes = super::physical_memory();
        assert!(bytes >= 1 << 28, "{bytes} bytes");
        assert!(bytes.is_multiple_of(4096));
    }
}
