//! The server's file cache of uploaded weights (`rpc-server -c`): a client that uploads a
//! large tensor with the cache flag has its bytes stored under their FNV-1a hash, and a later
//! client offering that hash (SET_TENSOR_HASH) gets them loaded from the file instead of
//! sending them again.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::rpc::wire::{fnv1a, fnv1a_from};

/// The cache directory.
#[derive(Clone, Copy)]
pub(super) struct Cache<'a>(pub &'a Path);

impl Cache<'_> {
    /// The file of the bytes that hash to `hash`, as the reference names it.
    fn path(&self, hash: u64) -> PathBuf {
        self.0.join(format!("{hash:016x}"))
    }

    /// The cached file for `hash` and its length; `None` when there is none.
    pub fn open(&self, hash: u64) -> io::Result<Option<(File, u64)>> {
        match File::open(self.path(hash)) {
            Ok(file) => {
                let len = file.metadata()?.len();
                Ok(Some((file, len)))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Starts storing an upload whose bytes arrive in pieces: they go to a temporary file,
    /// which takes the hash's name when the last piece is in (so that no reader ever sees a
    /// partial file under a hash's name).
    pub fn store(&self) -> Store {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let partial = self.0.join(format!(".partial-{}-{n}", std::process::id()));
        let file = File::create(&partial)
            .map_err(|e| crate::log_warn!("rpc server: cannot cache to '{}': {e}\n", partial.display()))
            .ok();
        Store { cache_dir: self.0.to_path_buf(), partial, file, hash: fnv1a(&[]) }
    }
}

/// An upload being written to the cache. Dropped unfinished, it removes its partial file.
pub(super) struct Store {
    cache_dir: PathBuf,
    partial: PathBuf,
    /// `None` once writing failed: the upload itself goes on, uncached.
    file: Option<File>,
    hash: u64,
}

impl Store {
    pub fn write(&mut self, piece: &[u8]) {
        self.hash = fnv1a_from(self.hash, piece);
        if let Some(file) = &mut self.file
            && let Err(e) = file.write_all(piece)
        {
            crate::log_warn!("rpc server: cannot cache to '{}': {e}\n", self.partial.display());
            self.file = None;
        }
    }

    /// Names the file after the hash of everything written.
    pub fn finish(mut self) {
        if self.file.take().is_none() {
            return;
        }
        let path = Cache(&self.cache_dir).path(self.hash);
        match std::fs::rename(&self.partial, &path) {
            Ok(()) => crate::log_info!("[set_tensor] saved to '{}'\n", path.display()),
            Err(e) => crate::log_warn!("rpc server: cannot cache to '{}': {e}\n", path.display()),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // A finished store's file has its final name already, and this finds nothing.
        let _ = std::fs::remove_file(&self.partial);
    }
}
