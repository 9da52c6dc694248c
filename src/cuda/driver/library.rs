//! Shared libraries opened at run time, and the check that a library has every symbol we will
//! call before anything calls it (cudarc panics on a missing library or symbol, and the
//! library's `panic = "abort"` would make that the end of the process).

use std::ffi::{CStr, CString, c_void};

/// A library opened with `dlopen`, never closed: cudarc keeps its own handles to the libraries
/// we check, and function pointers taken from it stay valid for the life of the process.
#[derive(Debug)]
pub struct Library {
    handle: *mut c_void,
    /// The name it was opened by (a soname or a path).
    pub name: String,
}

// SAFETY: a dlopen handle is a process-wide token; dlsym is thread-safe.
unsafe impl Send for Library {}
// SAFETY: as above; the handle is only read.
unsafe impl Sync for Library {}

impl Library {
    /// Opens `name` as libloading (and so cudarc) does: `RTLD_LAZY | RTLD_LOCAL`. A bare soname
    /// is searched by the dynamic linker; a name with a slash is a path. The error is dlerror's.
    pub fn open(name: &str) -> Result<Library, String> {
        let cname = CString::new(name).map_err(|_| format!("{name:?}: a NUL in the name"))?;
        // SAFETY: dlopen with a NUL-terminated name; the flags are valid. Loading runs the
        // library's initializers, which is what loading a CUDA library for use means.
        let handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dlerror().unwrap_or_else(|| format!("{name}: cannot be loaded")));
        }
        Ok(Library { handle, name: name.to_string() })
    }

    /// The address of `symbol`, or `None` when the library lacks it.
    pub fn symbol(&self, symbol: &str) -> Option<*mut c_void> {
        let cname = CString::new(symbol).ok()?;
        // SAFETY: a live handle and a NUL-terminated name.
        let address = unsafe { libc::dlsym(self.handle, cname.as_ptr()) };
        (!address.is_null()).then_some(address)
    }

    /// `Ok` when the library has every one of `symbols`, else the first one it lacks.
    pub fn check(&self, symbols: &[&str]) -> Result<(), String> {
        match symbols.iter().find(|s| self.symbol(s).is_none()) {
            Some(missing) => Err(format!("{} lacks {missing}", self.name)),
            None => Ok(()),
        }
    }

    /// The first of `names` that opens; otherwise every name's reason, joined.
    pub fn open_first<S: AsRef<str>>(names: &[S]) -> Result<Library, String> {
        let mut reasons = Vec::new();
        for name in names {
            match Library::open(name.as_ref()) {
                Ok(lib) => return Ok(lib),
                Err(reason) => reasons.push(reason),
            }
        }
        Err(reasons.join("; "))
    }
}

/// Takes a typed function pointer from `lib`.
///
/// # Safety
/// `F` is an `extern "C"` function pointer type matching the symbol's C declaration.
pub unsafe fn function<F: Copy>(lib: &Library, symbol: &str) -> Result<F, String> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    let address = lib.symbol(symbol).ok_or_else(|| format!("{} lacks {symbol}", lib.name))?;
    // SAFETY: a non-null code address of the declared type (the caller's contract), and
    // function pointers are address-sized.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

fn dlerror() -> Option<String> {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl call on
    // this thread, which we copy at once.
    let text = unsafe { libc::dlerror() };
    // SAFETY: checked non-null; NUL-terminated as above.
    (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_says_why() {
        let reason = Library::open("libggml-rs-no-such-library.so.7").unwrap_err();
        assert!(reason.contains("libggml-rs-no-such-library.so.7"), "{reason}");
        let reason = Library::open_first(&["libggml-rs-none.so.1", "libggml-rs-none.so.2"]).unwrap_err();
        assert!(reason.contains("none.so.1") && reason.contains("none.so.2"), "{reason}");
    }

    #[test]
    fn a_library_without_a_symbol_is_refused_by_name() {
        let libm = Library::open("libm.so.6").expect("libm");
        assert!(libm.check(&["cos", "sin"]).is_ok());
        let reason = libm.check(&["cos", "cuInit", "sin"]).unwrap_err();
        assert_eq!(reason, "libm.so.6 lacks cuInit");
        // SAFETY: cos is `double cos(double)`.
        let cos: unsafe extern "C" fn(f64) -> f64 = unsafe { function(&libm, "cos") }.unwrap();
        // SAFETY: a C function of that type.
        assert_eq!(unsafe { cos(0.0) }, 1.0);
    }
}
