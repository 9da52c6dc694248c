//! Compiled kernels kept on disk, so that NVRTC runs once per (source, device architecture,
//! NVRTC version) and machine, not once per process: `$XDG_CACHE_HOME/ggml-rs/cuda` or
//! `~/.cache/ggml-rs/cuda`.
//!
//! An entry's name carries the compute capability, the NVRTC version and a hash of everything
//! the compile read (source, prelude, options); its content is a header (magic, length, hash of
//! the binary) and the binary. Entries are written to a temporary file and renamed, so a reader
//! sees a whole entry or none; one that fails its checks is compiled again and replaced. A cache
//! that cannot be created or written (read-only or missing home) only costs the compile.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::nvrtc::{Kind, Nvrtc, OPTIONS, Target};
use crate::cuda::gpu::GpuResult;
use crate::cuda::sources::PRELUDE;

/// The first bytes of every entry; the last byte is the format's version.
const MAGIC: &[u8; 16] = b"ggml-rs cuda\0\0\0\x01";
const HEADER: usize = MAGIC.len() + 16;

/// A kernel binary and where it came from.
#[derive(Debug)]
pub struct Compiled {
    /// A CUBIN, or PTX with its terminating NUL: what `cuModuleLoadData` takes.
    pub image: Vec<u8>,
    pub target: Target,
    pub from_cache: bool,
}

/// The directory of entries; `None` keeps nothing.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    /// The user's cache: `$XDG_CACHE_HOME/ggml-rs/cuda` (when absolute) or `$HOME/.cache/...`.
    pub fn user() -> Cache {
        let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
        let base = std::env::var_os("XDG_CACHE_HOME")
            .and_then(absolute)
            .or_else(|| std::env::var_os("HOME").and_then(absolute).map(|h| h.join(".cache")));
        Cache { dir: base.map(|b| b.join("ggml-rs").join("cuda")) }
    }

    #[cfg(test)]
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: Some(dir.into()) }
    }

    /// The binary of the kernel source `stem` for a device of compute capability `cc`: from
    /// the cache when it holds a sound entry and `fresh` is false, else compiled and stored.
    pub fn compile(&self, nvrtc: &Nvrtc, stem: &str, source: &str, cc: u32, fresh: bool) -> GpuResult<Compiled> {
        let target = nvrtc.target(cc)?;
        let file = self.dir.as_ref().map(|d| d.join(entry_name(nvrtc, stem, source, cc, target)));
        if !fresh && let Some(image) = file.as_deref().and_then(|f| read(f, target.kind)) {
            return Ok(Compiled { image, target, from_cache: true });
        }
        let image = nvrtc.compile(&format!("{stem}.cu"), source, target)?;
        if let Some(file) = &file {
            write(file, &image);
        }
        Ok(Compiled { image, target, from_cache: false })
    }
}

/// The entry's file name: what the compile read, and for which machine, hashed.
fn entry_name(nvrtc: &Nvrtc, stem: &str, source: &str, cc: u32, target: Target) -> String {
    let mut hash = fnv1a(FNV_OFFSET, b"ggml-rs cuda kernel\0");
    for part in [stem, source, PRELUDE].into_iter().chain(OPTIONS.iter().copied()) {
        hash = fnv1a(fnv1a(hash, part.as_bytes()), b"\0");
    }
    hash = fnv1a(hash, target.option().as_bytes());
    let (major, minor) = nvrtc.version;
    let extension = match target.kind {
        Kind::Cubin => "cubin",
        Kind::Ptx => "ptx",
    };
    format!("{stem}-sm{cc}-nvrtc{major}.{minor}-{hash:016x}.{extension}")
}

/// A sound entry's binary; `None` for a missing, unreadable, truncated or altered one.
fn read(file: &Path, kind: Kind) -> Option<Vec<u8>> {
    let bytes = std::fs::read(file).ok()?;
    let (header, image) = bytes.split_at_checked(HEADER)?;
    let (magic, rest) = header.split_at(MAGIC.len());
    let len = u64::from_le_bytes(rest[..8].try_into().ok()?);
    let hash = u64::from_le_bytes(rest[8..].try_into().ok()?);
    let sound = magic == MAGIC
        && len == image.len() as u64
        && hash == fnv1a(FNV_OFFSET, image)
        && match kind {
            Kind::Cubin => image.starts_with(b"\x7fELF"),
            Kind::Ptx => image.ends_with(b"\0"),
        };
    if !sound {
        crate::log_debug!("CUDA kernel cache: '{}' is damaged and will be rebuilt\n", file.display());
    }
    sound.then(|| image.to_vec())
}

/// Stores an entry, atomically; failures are only logged.
fn write(file: &Path, image: &[u8]) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Some(dir) = file.parent() else { return };
    let temp = dir.join(format!(".partial-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let result = std::fs::create_dir_all(dir)
        .and_then(|()| {
            let mut f = std::fs::File::create(&temp)?;
            f.write_all(MAGIC)?;
            f.write_all(&(image.len() as u64).to_le_bytes())?;
            f.write_all(&fnv1a(FNV_OFFSET, image).to_le_bytes())?;
            f.write_all(image)
        })
        .and_then(|()| std::fs::rename(&temp, file));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&temp);
        crate::log_debug!("CUDA kernel cache: cannot write '{}': {e}\n", file.display());
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bits, continued from `hash` (rpc has the same; the layers keep us apart).
fn fnv1a(mut hash: u64, data: &[u8]) -> u64 {
    for &byte in data {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::driver::nvrtc::tests::wheel_libraries;

    /// A fresh directory under the system's temp dir, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!("ggml-rs-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn entries(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir).map_or(vec![], |d| d.map(|e| e.unwrap().path()).collect());
        files.sort();
        files
    }

    #[test]
    fn the_second_compile_is_read_from_disk() {
        let source = crate::cuda::sources::source("matvec").expect("matvec.cu");
        for (i, path) in wheel_libraries().iter().enumerate() {
            let nvrtc = Nvrtc::open(path).expect("the wheel's NVRTC");
            let temp = TempDir::new(&format!("cuda-cache-{i}"));
            let cache = Cache::at(temp.0.join("cuda"));
            let first = cache.compile(&nvrtc, "matvec", source, 80, false).unwrap();
            assert!(!first.from_cache && first.image.starts_with(b"\x7fELF"));
            let files = entries(&temp.0.join("cuda"));
            assert_eq!(files.len(), 1, "one entry, no temporary left: {files:?}");
            let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
            let (major, minor) = nvrtc.version;
            assert!(name.starts_with(&format!("matvec-sm80-nvrtc{major}.{minor}-")) && name.ends_with(".cubin"));

            let second = cache.compile(&nvrtc, "matvec", source, 80, false).unwrap();
            assert!(second.from_cache, "{path}: the second compile is a cache hit");
            assert_eq!(second.image, first.image);

            // Another architecture or another source is another entry.
            let other = cache.compile(&nvrtc, "matvec", source, 90, false).unwrap();
            assert!(!other.from_cache);
            let changed = format!("{source}\n// changed\n");
            assert!(!cache.compile(&nvrtc, "matvec", &changed, 80, false).unwrap().from_cache);
            assert_eq!(entries(&temp.0.join("cuda")).len(), 3);

            // `fresh` compiles even with an entry present.
            assert!(!cache.compile(&nvrtc, "matvec", source, 80, true).unwrap().from_cache);
        }
    }

    #[test]
    fn a_damaged_entry_is_compiled_again_and_replaced() {
        let source = crate::cuda::sources::source("matvec").expect("matvec.cu");
        for (i, path) in wheel_libraries().iter().enumerate() {
            let nvrtc = Nvrtc::open(path).expect("the wheel's NVRTC");
            let temp = TempDir::new(&format!("cuda-cache-damaged-{i}"));
            let cache = Cache::at(&temp.0);
            let good = cache.compile(&nvrtc, "matvec", source, 80, false).unwrap();
            let file = entries(&temp.0).remove(0);
            let whole = std::fs::read(&file).unwrap();
            let damages: [(&str, Vec<u8>); 4] = [
                ("truncated", whole[..whole.len() / 2].to_vec()),
                ("a flipped byte", {
                    let mut b = whole.clone();
                    b[HEADER + 100] ^= 0x40;
                    b
                }),
                ("empty", vec![]),
                ("another format", b"\x7fELF not ours".to_vec()),
            ];
            for (damage, bytes) in damages {
                std::fs::write(&file, &bytes).unwrap();
                let again = cache.compile(&nvrtc, "matvec", source, 80, false).unwrap();
                assert!(!again.from_cache, "{damage}: not trusted");
                assert_eq!(again.image, good.image, "{damage}");
                assert_eq!(std::fs::read(&file).unwrap(), whole, "{damage}: the entry is replaced");
            }
        }
    }

    #[test]
    fn an_unwritable_cache_only_costs_the_compile() {
        let source = crate::cuda::sources::source("matvec").expect("matvec.cu");
        for path in wheel_libraries() {
            let nvrtc = Nvrtc::open(&path).expect("the wheel's NVRTC");
            // A directory below a regular file can never be created.
            let temp = TempDir::new("cuda-cache-unwritable");
            std::fs::create_dir_all(&temp.0).unwrap();
            std::fs::write(temp.0.join("file"), b"").unwrap();
            let cache = Cache::at(temp.0.join("file").join("cuda"));
            for _ in 0..2 {
                let compiled = cache.compile(&nvrtc, "matvec", source, 80, false).unwrap();
                assert!(!compiled.from_cache && compiled.image.starts_with(b"\x7fELF"));
            }
            assert_eq!(entries(&temp.0).len(), 1, "nothing but the file");
        }
    }

    #[test]
    fn the_user_cache_is_under_the_home() {
        // Only checks the shape: the environment of tests is the developer's.
        if let Some(dir) = Cache::user().dir {
            assert!(dir.is_absolute() && dir.ends_with("ggml-rs/cuda"), "{}", dir.display());
        }
    }
}
