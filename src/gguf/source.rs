//! Where GGUF bytes come from and go to: memory, a file by name, a C `FILE *`, or a user
//! callback. Every source answers one question, "give me up to N bytes at offset X", and a
//! short answer means the data ends there.

use std::ffi::c_void;
use std::fs::File;
use std::os::unix::fs::FileExt;

pub trait Source {
    /// Reads up to `out.len()` bytes at `offset` into `out`; returns how many were read.
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> usize;
}

/// Bytes already in memory.
pub struct SliceSource<'a>(pub &'a [u8]);

impl Source for SliceSource<'_> {
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> usize {
        let Ok(start) = usize::try_from(offset) else { return 0 };
        let Some(avail) = self.0.len().checked_sub(start) else { return 0 };
        let n = out.len().min(avail);
        out[..n].copy_from_slice(&self.0[start..start + n]);
        n
    }
}

/// A file opened by name, read with positioned reads through a small window so that the
/// many tiny reads of the metadata do not each cost a system call.
pub struct FileSource {
    file: File,
    window: Vec<u8>,
    window_offset: u64,
    window_len: usize,
}

const WINDOW: usize = 1 << 16;

impl FileSource {
    pub fn new(file: File) -> FileSource {
        FileSource { file, window: vec![0; WINDOW], window_offset: 0, window_len: 0 }
    }

    /// Length of the file, 0 when it cannot be told (as for a pipe).
    pub fn size(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.len())
    }

    /// Reads until `out` is full, the file ends or an error occurs.
    fn pread(file: &File, offset: u64, out: &mut [u8]) -> usize {
        let mut done = 0;
        while done < out.len() {
            let Some(pos) = offset.checked_add(done as u64) else { break };
            match file.read_at(&mut out[done..], pos) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        done
    }
}

impl Source for FileSource {
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> usize {
        let mut done = 0;
        while done < out.len() {
            let Some(pos) = offset.checked_add(done as u64) else { break };
            let window_end = self.window_offset + self.window_len as u64;
            if pos >= self.window_offset && pos < window_end {
                let from = (pos - self.window_offset) as usize;
                let n = (self.window_len - from).min(out.len() - done);
                out[done..done + n].copy_from_slice(&self.window[from..from + n]);
                done += n;
                continue;
            }
            if out.len() - done >= WINDOW {
                let n = Self::pread(&self.file, pos, &mut out[done..]);
                done += n;
                break;
            }
            self.window_offset = pos;
            self.window_len = Self::pread(&self.file, pos, &mut self.window);
            if self.window_len == 0 {
                break;
            }
        }
        done
    }
}

/// A C stdio stream handed to us by the caller, who keeps ownership of it.
pub struct CFile(*mut libc::FILE);

impl CFile {
    /// # Safety
    /// `file` must be an open stream that stays open while the `CFile` is used.
    pub unsafe fn new(file: *mut libc::FILE) -> CFile {
        CFile(file)
    }

    /// Current position, `None` if it cannot be told.
    pub fn tell(&self) -> Option<u64> {
        // SAFETY: the stream is open (constructor contract).
        let pos = unsafe { libc::ftello(self.0) };
        u64::try_from(pos).ok()
    }

    /// Bytes from the current position to the end, 0 if that cannot be found out. The
    /// position is left where it was.
    pub fn remaining(&self) -> u64 {
        let Some(cur) = self.tell() else { return 0 };
        // SAFETY: the stream is open; seeking to the end and back to `cur` leaves it as it was.
        unsafe {
            if libc::fseeko(self.0, 0, libc::SEEK_END) != 0 {
                libc::fseeko(self.0, cur as libc::off_t, libc::SEEK_SET);
                return 0;
            }
            let end = libc::ftello(self.0);
            libc::fseeko(self.0, cur as libc::off_t, libc::SEEK_SET);
            u64::try_from(end).map_or(0, |end| end.saturating_sub(cur))
        }
    }
}

impl std::io::Write for CFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // SAFETY: the stream is open and `buf` is a readable slice of `buf.len()` bytes.
        let n = unsafe { libc::fwrite(buf.as_ptr().cast(), 1, buf.len(), self.0) };
        if n == 0 {
            return Err(std::io::Error::other(format!("fwrite wrote 0 of {} bytes", buf.len())));
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A C stream read with seeks only where the position differs from the last read.
pub struct CFileSource {
    file: CFile,
    offset: u64,
}

impl CFileSource {
    pub fn new(file: CFile, offset: u64) -> CFileSource {
        CFileSource { file, offset }
    }
}

impl Source for CFileSource {
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> usize {
        if out.is_empty() {
            return 0;
        }
        if self.offset != offset {
            let Ok(pos) = libc::off_t::try_from(offset) else { return 0 };
            // SAFETY: the stream is open (CFile contract).
            if unsafe { libc::fseeko(self.file.0, pos, libc::SEEK_SET) } != 0 {
                return 0;
            }
            self.offset = offset;
        }
        // SAFETY: `out` is writable for `out.len()` bytes; the stream is open.
        let n = unsafe { libc::fread(out.as_mut_ptr().cast(), 1, out.len(), self.file.0) };
        self.offset += n as u64;
        n
    }
}

/// `gguf_reader_callback_t`.
pub type ReadCallback =
    unsafe extern "C" fn(userdata: *mut c_void, output: *mut c_void, offset: u64, len: usize) -> usize;

/// Bytes fetched through the caller's callback.
pub struct CallbackSource {
    callback: ReadCallback,
    userdata: *mut c_void,
}

impl CallbackSource {
    /// # Safety
    /// `callback` must honour the `gguf_reader_callback_t` contract for `userdata`: write at
    /// most `len` bytes to `output` and return how many it wrote.
    pub unsafe fn new(callback: ReadCallback, userdata: *mut c_void) -> CallbackSource {
        CallbackSource { callback, userdata }
    }
}

impl Source for CallbackSource {
    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> usize {
        // SAFETY: `out` is writable for `out.len()` bytes; the callback's contract (see `new`).
        let n = unsafe { (self.callback)(self.userdata, out.as_mut_ptr().cast(), offset, out.len()) };
        crate::ggml_assert!(n <= out.len(), "read callback returned {} bytes for a request of {}", n, out.len());
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_read_short_at_the_end() {
        let data = [1u8, 2, 3, 4];
        let mut s = SliceSource(&data);
        let mut out = [0u8; 3];
        assert_eq!(s.read_at(2, &mut out), 2);
        assert_eq!(&out[..2], &[3, 4]);
        assert_eq!(s.read_at(5, &mut out), 0);
        assert_eq!(s.read_at(u64::MAX, &mut out), 0);
    }

    #[test]
    fn files_read_through_the_window() {
        let path = std::env::temp_dir().join(format!("ggml-rs-gguf-source-{}", std::process::id()));
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut src = FileSource::new(File::open(&path).unwrap());
        assert_eq!(src.size(), data.len() as u64);
        let mut small = [0u8; 10];
        assert_eq!(src.read_at(65_530, &mut small), 10);
        assert_eq!(&small, &data[65_530..65_540]);
        let mut big = vec![0u8; 100_000];
        assert_eq!(src.read_at(1000, &mut big), 100_000);
        assert_eq!(&big[..], &data[1000..101_000]);
        assert_eq!(src.read_at(199_995, &mut small), 5);
        std::fs::remove_file(&path).unwrap();
    }
}
