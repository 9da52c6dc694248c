//! Backends as plugins: shared libraries named `libggml-<name>[-<variant>].so` that export
//! `ggml_backend_init` (returning their registry) and optionally `ggml_backend_score` (0 when
//! the machine cannot run them, otherwise higher for better variants).
//!
//! `load_all` looks in the executable's directory and the current directory (or in one
//! directory the caller names), loads the best-scoring variant of each known backend, and
//! finally the library named by `GGML_BACKEND_PATH`, if set.

use std::ffi::{CStr, CString, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::backend::interface::{BackendInitFn, BackendScoreFn, GGML_BACKEND_API_VERSION};
use crate::backend::reg::RegPtr;
use crate::registry;

/// The backends `load_all` looks for, in the order ggml loads them.
const KNOWN_BACKENDS: [&str; 15] = [
    "blas", "zendnn", "cann", "cuda", "hip", "metal", "rpc", "sycl", "vulkan", "virtgpu", "opencl", "hexagon", "musa",
    "openvino", "cpu",
];

/// An open shared library, closed when dropped.
pub struct Library {
    handle: NonNull<c_void>,
}

// SAFETY: a dlopen handle may be used and closed from any thread.
unsafe impl Send for Library {}

/// The text of the last dynamic-linker error.
fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl* call.
    let err = unsafe { libc::dlerror() };
    if err.is_null() {
        return String::new();
    }
    // SAFETY: checked non-null just above.
    unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned()
}

impl Library {
    /// `dlopen(path, RTLD_NOW | RTLD_LOCAL)`; the linker's message on failure.
    pub fn open(path: &Path) -> Result<Library, String> {
        let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
            return Err("path contains a NUL byte".to_owned());
        };
        // SAFETY: c_path is a valid C string; dlopen runs the library's initialisers, which is
        // what loading a plugin means.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        NonNull::new(handle).map(|handle| Library { handle }).ok_or_else(dl_error)
    }

    fn symbol(&self, name: &CStr) -> *mut c_void {
        // SAFETY: the handle is open; name is a C string.
        unsafe { libc::dlsym(self.handle.as_ptr(), name.as_ptr()) }
    }

    fn score_fn(&self) -> Option<BackendScoreFn> {
        let sym = self.symbol(c"ggml_backend_score");
        // SAFETY: a plugin's ggml_backend_score has the ggml_backend_score_t signature.
        (!sym.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, BackendScoreFn>(sym) })
    }

    fn init_fn(&self) -> Option<BackendInitFn> {
        let sym = self.symbol(c"ggml_backend_init");
        // SAFETY: a plugin's ggml_backend_init has the ggml_backend_init_t signature.
        (!sym.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, BackendInitFn>(sym) })
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: the handle came from dlopen and is closed once.
        unsafe { libc::dlclose(self.handle.as_ptr()) };
    }
}

/// Loads the plugin at `path` and registers its registry (`ggml_backend_load`). Failures are
/// logged unless `silent`; a plugin that scores 0 is skipped.
pub fn load(path: &Path, silent: bool) -> Option<RegPtr> {
    let shown = path.display();
    let library = match Library::open(path) {
        Ok(l) => l,
        Err(e) => {
            if !silent {
                crate::log_error!("load_backend: failed to load {shown}: {e}\n");
            }
            return None;
        }
    };

    // SAFETY: calling the plugin's own entry points is the point of loading it.
    if library.score_fn().is_some_and(|score| unsafe { score() } == 0) {
        if !silent {
            crate::log_info!("load_backend: backend {shown} is not supported on this system\n");
        }
        return None;
    }

    let Some(init) = library.init_fn() else {
        if !silent {
            crate::log_error!("load_backend: failed to find ggml_backend_init in {shown}\n");
        }
        return None;
    };

    // SAFETY: as above.
    let reg = unsafe { RegPtr::from_raw(init()) };
    let reg = match reg {
        Some(r) if r.api_version() == GGML_BACKEND_API_VERSION => r,
        Some(r) => {
            if !silent {
                crate::log_error!(
                    "load_backend: failed to initialize backend from {shown}: incompatible API version (backend: {}, current: {})\n",
                    r.api_version(),
                    GGML_BACKEND_API_VERSION
                );
            }
            return None;
        }
        None => {
            if !silent {
                crate::log_error!(
                    "load_backend: failed to initialize backend from {shown}: ggml_backend_init returned NULL\n"
                );
            }
            return None;
        }
    };

    crate::log_info!("load_backend: loaded {} backend from {shown}\n", reg.name_lossy());
    registry::register_backend(reg, Some(library));
    Some(reg)
}

/// Unregisters `reg` and closes its library (`ggml_backend_unload`).
pub fn unload(reg: RegPtr) {
    registry::unregister_backend(reg, true);
}

/// The directory of the running executable, as ggml computes it: `.` when unknown.
fn executable_dir() -> PathBuf {
    match std::fs::read_link("/proc/self/exe") {
        Ok(exe) => exe.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        Err(_) => PathBuf::from("."),
    }
}

/// Where to look for plugins: the caller's directory, or the executable's directory and the
/// current directory.
fn search_paths(user_dir: Option<&Path>) -> Vec<PathBuf> {
    if let Some(dir) = user_dir {
        return vec![dir.to_path_buf()];
    }
    let mut paths = vec![executable_dir()];
    match std::env::current_dir() {
        Ok(cwd) => paths.push(cwd),
        Err(e) => crate::log_debug!("ggml_backend_load_best: current_path() failure, error-message: {e}\n"),
    }
    paths
}

/// Whether `file_name` is a variant of backend `name`: `libggml-<name>-<anything>.so`.
fn is_variant(file_name: &[u8], name: &str) -> bool {
    let prefix = format!("libggml-{name}-");
    file_name.starts_with(prefix.as_bytes())
        && Path::new(std::ffi::OsStr::from_bytes(file_name)).extension() == Some("so".as_ref())
}

/// The score a variant library reports, or `None` when it cannot be opened or has no score.
fn variant_score(path: &Path, silent: bool) -> Option<c_int> {
    let library = match Library::open(path) {
        Ok(l) => l,
        Err(e) => {
            if !silent {
                crate::log_error!("ggml_backend_load_best: failed to load {}: {e}\n", path.display());
            }
            return None;
        }
    };
    match library.score_fn() {
        // SAFETY: the plugin's own scoring entry point.
        Some(score) => Some(unsafe { score() }),
        None => {
            if !silent {
                crate::log_info!("ggml_backend_load_best: failed to find ggml_backend_score in {}\n", path.display());
            }
            None
        }
    }
}

/// Loads the best-scoring variant of backend `name` found in the search paths, or else the
/// plain `libggml-<name>.so` from the first path that has one.
fn load_best(name: &str, silent: bool, user_dir: Option<&Path>) -> Option<RegPtr> {
    let paths = search_paths(user_dir);
    let mut best: Option<(c_int, PathBuf)> = None;

    for dir in &paths {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                crate::log_debug!("ggml_backend_load_best: failed to enumerate {}: {e}\n", dir.display());
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // Like std::filesystem's is_regular_file: symbolic links are followed.
            if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            if !is_variant(entry.file_name().as_bytes(), name) {
                continue;
            }
            if let Some(score) = variant_score(&path, silent)
                && score > best.as_ref().map_or(0, |b| b.0)
            {
                best = Some((score, path));
            }
        }
    }

    match best {
        Some((_, path)) => load(&path, silent),
        None => {
            let file_name = format!("libggml-{name}.so");
            let plain = paths.iter().map(|dir| dir.join(&file_name)).find(|p| p.exists())?;
            load(&plain, silent)
        }
    }
}

/// `ggml_backend_load_all_from_path`: every known backend from `dir` (or the default search
/// paths), then `GGML_BACKEND_PATH`. As in ggml, failures are only reported by debug builds.
pub fn load_all_from_path(dir: Option<&Path>) {
    let silent = !cfg!(debug_assertions);
    for name in KNOWN_BACKENDS {
        load_best(name, silent, dir);
    }
    if let Some(path) = std::env::var_os("GGML_BACKEND_PATH") {
        load(Path::new(&path), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_follow_ggml_pattern() {
        assert!(is_variant(b"libggml-cpu-haswell.so", "cpu"));
        assert!(is_variant(b"libggml-cuda-x.so", "cuda"));
        assert!(!is_variant(b"libggml-cpu.so", "cpu"));
        assert!(!is_variant(b"libggml-cpu-haswell.so.0", "cpu"));
        assert!(!is_variant(b"libggml-cuda-x.so", "cpu"));
        assert!(!is_variant(b"ggml-cpu-x.so", "cpu"));
    }

    #[test]
    fn missing_library_is_none() {
        assert!(load(Path::new("/nonexistent/libggml-nothing.so"), true).is_none());
        assert!(load_best("no-such-backend", true, Some(Path::new("/nonexistent-dir"))).is_none());
    }
}
