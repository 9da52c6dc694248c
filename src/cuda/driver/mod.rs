//! The real GPU: the CUDA driver API through `cudarc`, NVRTC for the kernels and cuBLAS for
//! products, all loaded at run time, so that the library builds with no CUDA file present,
//! links nothing CUDA, and on a machine without a driver says why instead of aborting.
//!
//! # Which libraries, and how they are checked
//!
//! cudarc resolves each library itself, on first use, by trying a fixed list of names
//! (`cudarc::get_lib_name_candidates`), and **panics** when none opens or a symbol is missing;
//! our `panic = "abort"` turns that into the end of the host process. So nothing here lets
//! cudarc open a library that has not been checked first:
//!
//! - **Driver** (`libcuda.so.1`): driven through cudarc's `driver::sys` layer. Before its first
//!   call, [`driver`] opens the very names cudarc will try, in cudarc's order and with its flags
//!   (`RTLD_LAZY | RTLD_LOCAL`), and checks that the first one that opens has every symbol of
//!   [`DRIVER_SYMBOLS`] (a test keeps that list equal to the `sys::cu*` calls of this module).
//!   Our handle stays open, so cudarc's `dlopen` of the same name returns the same object.
//!   Then `cuDriverGetVersion` (12.0 or newer) and `cuInit`.
//! - **NVRTC** and **cuBLAS**: the CUDA 13 user-space libraries are `libnvrtc.so.13` and
//!   `libcublas.so.13`, which cudarc built for CUDA 12 never tries, while cudarc built for
//!   CUDA 13 binds some driver calls to symbols that CUDA 12 drivers lack. Neither of its
//!   loaders can be pointed at a path either (needed to use NVIDIA's Python wheel, and for
//!   tests). So these two are opened here, by soname or path, choosing the major version by the
//!   driver's (13 then 12 on a CUDA 13 driver, 12 on a CUDA 12 one: a newer NVRTC emits code an
//!   older driver refuses), and called through function pointers typed with cudarc's `sys`
//!   types, whose results are read as plain integers (a status code newer than cudarc's enum
//!   would otherwise be an invalid value). See `nvrtc.rs` and `blas.rs`.
//!
//! cudarc is pinned to `cuda-12080`: the driver symbols we call (all of `DRIVER_SYMBOLS`) exist
//! in every CUDA 12 and 13 driver under those names.

mod blas;
mod cache;
mod gpu;
mod library;
mod nvrtc;

use std::ffi::{CStr, c_int};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;

use self::library::Library;
use crate::cuda::gpu::{Error, Gpu, GpuResult};

pub use self::gpu::DriverGpu;

/// Every driver function this module calls through `cudarc::driver::sys`, checked present
/// before the first call.
pub const DRIVER_SYMBOLS: &[&str] = &[
    "cuCtxSetCurrent",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetCount",
    "cuDeviceGetName",
    "cuDeviceGetPCIBusId",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDeviceTotalMem_v2",
    "cuDriverGetVersion",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuInit",
    "cuLaunchKernel",
    "cuMemAlloc_v2",
    "cuMemFreeHost",
    "cuMemFree_v2",
    "cuMemGetInfo_v2",
    "cuMemHostAlloc",
    "cuMemHostRegister_v2",
    "cuMemHostUnregister",
    "cuMemcpyAsync",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemsetD8Async",
    "cuModuleGetFunction",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
];

/// The oldest driver we drive: NVRTC 12 and cuBLAS 12 need a CUDA 12 driver.
const MIN_DRIVER_VERSION: c_int = 12000;

/// The loaded, checked and initialized driver.
pub(crate) struct Driver {
    _library: Library,
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor.
    pub version: c_int,
}

/// The names cudarc tries for the driver, in its order.
fn driver_candidates() -> Vec<String> {
    ["cuda", "nvcuda"].iter().flat_map(|l| cudarc::get_lib_name_candidates(l)).collect()
}

/// The driver, loaded and initialized once per process; the reason when it cannot be.
pub(crate) fn driver() -> GpuResult<&'static Driver> {
    static DRIVER: OnceLock<GpuResult<Driver>> = OnceLock::new();
    DRIVER.get_or_init(|| load_driver(&driver_candidates())).as_ref().map_err(Clone::clone)
}

/// Why `count` devices go unused when no NVRTC loads (`e`), and what to do about it.
fn without_compiler(count: c_int, e: &Error) -> Error {
    Error::new(
        "nvrtc",
        format!(
            "{count} CUDA device(s) left unused: no NVRTC to compile their kernels ({e}); install the CUDA \
             toolkit's libnvrtc or NVIDIA's nvidia-cuda-nvrtc wheel, or name the library in ${}",
            nvrtc::ENV
        ),
    )
}

fn load_driver<S: AsRef<str>>(candidates: &[S]) -> GpuResult<Driver> {
    let library = Library::open_first(candidates).map_err(|_| {
        // Every one of cudarc's ~30 names failed; the one a driver installs says why.
        let reason = Library::open("libcuda.so.1").err().unwrap_or_default();
        Error::new("dlopen", format!("no CUDA driver could be loaded ({reason})"))
    })?;
    library.check(DRIVER_SYMBOLS).map_err(|reason| Error::new("dlsym", format!("unusable CUDA driver: {reason}")))?;
    // From here on cudarc opens the same library (the first name that opens), which has every
    // symbol we call.
    let mut version: c_int = 0;
    // SAFETY: a valid out-pointer; the symbol was checked above.
    check("cuDriverGetVersion", unsafe { sys::cuDriverGetVersion(&mut version) })?;
    if version < MIN_DRIVER_VERSION {
        return Err(Error::new(
            "cuDriverGetVersion",
            format!("the CUDA driver supports CUDA {}; 12.0 or newer is needed", version_text(version)),
        ));
    }
    // SAFETY: flags must be 0.
    check("cuInit", unsafe { sys::cuInit(0) })?;
    Ok(Driver { _library: library, version })
}

/// Every CUDA device, each with its primary context; the reason when there is no usable driver.
/// No device is an error too, as the driver reports it ("no CUDA-capable device is detected"),
/// and so are devices without an NVRTC to compile their kernels: listed, they would take a
/// model's weights and then fail every graph, where unlisted they leave the work to the CPU.
pub fn gpus() -> GpuResult<Vec<Arc<dyn Gpu>>> {
    let driver = driver()?;
    let mut count: c_int = 0;
    // SAFETY: a valid out-pointer; the driver is initialized.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut count) })?;
    if count > 0 {
        nvrtc::nvrtc(driver.version).map_err(|e| without_compiler(count, &e))?;
        if let Err(e) = blas::blas(driver.version) {
            crate::log_warn!(
                "ggml_cuda_init: no cuBLAS ({e}): batched products take the backend's own tiles, which are slower\n"
            );
        }
    }
    (0..count).map(|ordinal| Ok(Arc::new(DriverGpu::new(ordinal, driver.version)?) as Arc<dyn Gpu>)).collect()
}

/// "12.8" for 12080.
fn version_text(version: c_int) -> String {
    format!("{}.{}", version / 1000, version % 1000 / 10)
}

/// `Ok` for `CUDA_SUCCESS`, else the driver's name and description of the error.
///
/// Only called with a driver that [`driver`] has checked (the error calls are in
/// [`DRIVER_SYMBOLS`]).
fn check(call: &'static str, result: sys::CUresult) -> GpuResult<()> {
    if result == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let text = |f: unsafe fn(sys::CUresult, *mut *const std::ffi::c_char) -> sys::CUresult| {
        let mut s = std::ptr::null();
        // SAFETY: a valid out-pointer; the driver sets it to a static string or leaves it.
        let ok = unsafe { f(result, &mut s) } == sys::CUresult::CUDA_SUCCESS && !s.is_null();
        // SAFETY: non-null strings from the driver are static and NUL-terminated.
        ok.then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
    };
    let code = result as u32;
    let reason = match (text(sys::cuGetErrorString), text(sys::cuGetErrorName)) {
        (Some(description), Some(name)) => format!("{description} ({name})"),
        _ => format!("CUDA error {code}"),
    };
    Err(Error::new(call, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_there_are_no_gpus_and_a_reason() {
        // This machine has no CUDA driver (and a test machine with one skips the check).
        if Library::open_first(&driver_candidates()).is_ok() {
            eprintln!("a CUDA driver is installed here; the no-driver path is not exercised");
            return;
        }
        let error = gpus().err().expect("no driver, no GPUs");
        assert_eq!(error.call, "dlopen");
        assert!(error.reason.starts_with("no CUDA driver could be loaded (libcuda.so.1: "), "{error}");
        assert!(error.reason.len() < 200, "one reason, not thirty: {error}");
        // Asked again, the same answer (the failed load is remembered, nothing retried into cudarc).
        assert_eq!(gpus().err(), Some(error));
    }

    #[test]
    fn devices_without_nvrtc_go_unused_with_the_remedy() {
        let missing = nvrtc::Nvrtc::find(&["libggml-rs-no-such-nvrtc.so.12"], 13).err().expect("no such NVRTC");
        let error = without_compiler(2, &missing);
        assert_eq!(error.call, "nvrtc");
        assert!(error.reason.starts_with("2 CUDA device(s) left unused: no NVRTC"), "{error}");
        assert!(error.reason.contains("libggml-rs-no-such-nvrtc.so.12"), "the cause: {error}");
        assert!(error.reason.ends_with("or name the library in $GGML_RS_NVRTC"), "{error}");
    }

    #[test]
    fn a_library_lacking_a_driver_symbol_is_refused() {
        // libm opens but is no driver: refused before cudarc is asked for anything.
        let error = load_driver(&["libggml-rs-no-such-driver.so.1", "libm.so.6"]).err().expect("refused");
        assert_eq!(error.call, "dlsym");
        assert!(error.reason.contains("libm.so.6 lacks cuCtxSetCurrent"), "{error}");
    }

    #[test]
    fn every_driver_call_is_checked_first() {
        // The `sys::cu*` functions this module's code calls, and DRIVER_SYMBOLS, are the same set.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cuda/driver");
        let mut called = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(dir).expect("src/cuda/driver") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("source");
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or("")
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            for (i, _) in code.match_indices("sys::cu") {
                let name: String =
                    code[i + 5..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                // Driver functions are `cuUpperCase` (`sys::cublasHandle_t` is cuBLAS's type).
                if name[2..].starts_with(|c: char| c.is_ascii_uppercase()) {
                    called.insert(name);
                }
            }
        }
        let listed: std::collections::BTreeSet<String> = DRIVER_SYMBOLS.iter().map(|s| s.to_string()).collect();
        let unlisted: Vec<_> = called.difference(&listed).collect();
        let unused: Vec<_> = listed.difference(&called).collect();
        assert!(unlisted.is_empty(), "called but not checked before use: {unlisted:?}");
        assert!(unused.is_empty(), "checked but never called: {unused:?}");
    }

    #[test]
    fn versions_read_as_cuda_writes_them() {
        assert_eq!(version_text(12080), "12.8");
        assert_eq!(version_text(13000), "13.0");
        assert_eq!(version_text(11040), "11.4");
    }
}
