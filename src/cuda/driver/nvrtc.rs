//! NVRTC, loaded at run time: the kernel sources compiled for the device's exact architecture,
//! to SASS (a CUBIN) when this NVRTC knows the architecture, else to PTX for the newest one it
//! knows below it (the driver finishes that). The binaries are kept on disk by `cache`.
//!
//! Which library: `$GGML_RS_NVRTC` (a path, e.g. to NVIDIA's `nvidia-cuda-nvrtc` wheel) when
//! set, then `libnvrtc.so.13` (on a CUDA 13 driver), `libnvrtc.so.12` and the unversioned
//! `libnvrtc.so`; the first that opens, has every symbol of [`SYMBOLS`], and is no newer than
//! the driver (whose JIT would refuse its PTX) is used. Why not cudarc's own loader: see
//! `driver/mod.rs`.

use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::OnceLock;

use cudarc::nvrtc::sys::nvrtcProgram;

use super::library::{Library, function};
use crate::cuda::gpu::{Error, GpuResult};
use crate::cuda::sources::{PRELUDE, PRELUDE_NAME};

/// The options every kernel is compiled with (scripts/cuda-check uses the same).
pub const OPTIONS: &[&str] = &["--std=c++17", "-default-device"];

/// Every NVRTC function we call, checked present before the first call.
pub const SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcGetNumSupportedArchs",
    "nvrtcGetSupportedArchs",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetErrorString",
];

/// The environment variable naming a libnvrtc to try first.
pub const ENV: &str = "GGML_RS_NVRTC";

// The C declarations (nvrtc.h), with `nvrtcResult` read as a plain int.
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type NumArchsFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type ArchsFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type CreateFn = unsafe extern "C" fn(
    *mut nvrtcProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(nvrtcProgram, c_int, *const *const c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut nvrtcProgram) -> c_int;
type SizeFn = unsafe extern "C" fn(nvrtcProgram, *mut usize) -> c_int;
type BytesFn = unsafe extern "C" fn(nvrtcProgram, *mut c_char) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// What a compile produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SASS for exactly the device's architecture.
    Cubin,
    /// PTX (NUL-terminated) for an older virtual architecture, compiled further by the driver.
    Ptx,
}

/// The architecture a compile is for: `arch` as major * 10 + minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub arch: u32,
    pub kind: Kind,
}

impl Target {
    /// NVRTC's `--gpu-architecture` option.
    pub fn option(self) -> String {
        match self.kind {
            Kind::Cubin => format!("--gpu-architecture=sm_{}", self.arch),
            Kind::Ptx => format!("--gpu-architecture=compute_{}", self.arch),
        }
    }
}

/// A loaded, checked NVRTC.
pub struct Nvrtc {
    library: Library,
    /// (major, minor), as `nvrtcVersion` says.
    pub version: (i32, i32),
    /// The real architectures it compiles for, ascending.
    pub archs: Vec<u32>,
    create: CreateFn,
    compile: CompileFn,
    destroy: DestroyFn,
    log_size: SizeFn,
    log: BytesFn,
    ptx_size: SizeFn,
    ptx: BytesFn,
    cubin_size: SizeFn,
    cubin: BytesFn,
    error_string: ErrorStringFn,
}

impl Nvrtc {
    /// Opens the NVRTC at `name` (a soname or a path) and checks it.
    pub fn open(name: &str) -> std::result::Result<Nvrtc, String> {
        let library = Library::open(name)?;
        library.check(SYMBOLS)?;
        // SAFETY: for every `function` below, the types are nvrtc.h's declarations of these names.
        unsafe {
            let version: VersionFn = function(&library, "nvrtcVersion")?;
            let num_archs: NumArchsFn = function(&library, "nvrtcGetNumSupportedArchs")?;
            let archs_fn: ArchsFn = function(&library, "nvrtcGetSupportedArchs")?;
            let (mut major, mut minor) = (0, 0);
            if version(&mut major, &mut minor) != 0 {
                return Err(format!("{name}: nvrtcVersion failed"));
            }
            let mut count: c_int = 0;
            if num_archs(&mut count) != 0 || count < 0 {
                return Err(format!("{name}: nvrtcGetNumSupportedArchs failed"));
            }
            let mut archs = vec![0 as c_int; count as usize];
            if count > 0 && archs_fn(archs.as_mut_ptr()) != 0 {
                return Err(format!("{name}: nvrtcGetSupportedArchs failed"));
            }
            let mut archs: Vec<u32> = archs.into_iter().filter_map(|a| u32::try_from(a).ok()).collect();
            archs.sort_unstable();
            Ok(Nvrtc {
                version: (major, minor),
                archs,
                create: function(&library, "nvrtcCreateProgram")?,
                compile: function(&library, "nvrtcCompileProgram")?,
                destroy: function(&library, "nvrtcDestroyProgram")?,
                log_size: function(&library, "nvrtcGetProgramLogSize")?,
                log: function(&library, "nvrtcGetProgramLog")?,
                ptx_size: function(&library, "nvrtcGetPTXSize")?,
                ptx: function(&library, "nvrtcGetPTX")?,
                cubin_size: function(&library, "nvrtcGetCUBINSize")?,
                cubin: function(&library, "nvrtcGetCUBIN")?,
                error_string: function(&library, "nvrtcGetErrorString")?,
                library,
            })
        }
    }

    /// The first usable NVRTC of `candidates` whose major version is at most `max_major`.
    pub fn find<S: AsRef<str>>(candidates: &[S], max_major: i32) -> GpuResult<Nvrtc> {
        let mut reasons = Vec::new();
        for name in candidates {
            match Nvrtc::open(name.as_ref()) {
                Ok(nvrtc) if nvrtc.version.0 <= max_major => return Ok(nvrtc),
                Ok(nvrtc) => reasons.push(format!(
                    "{} is NVRTC {}.{}, newer than the driver (CUDA {max_major})",
                    name.as_ref(),
                    nvrtc.version.0,
                    nvrtc.version.1
                )),
                Err(reason) => reasons.push(reason),
            }
        }
        Err(Error::new("dlopen", format!("NVRTC (libnvrtc.so.12 or .13) is not available: {}", reasons.join("; "))))
    }

    /// What to compile for a device of compute capability `cc`.
    pub fn target(&self, cc: u32) -> GpuResult<Target> {
        if self.archs.contains(&cc) {
            return Ok(Target { arch: cc, kind: Kind::Cubin });
        }
        match self.archs.iter().rev().find(|&&a| a < cc) {
            Some(&arch) => Ok(Target { arch, kind: Kind::Ptx }),
            None => Err(Error::new(
                "nvrtcGetSupportedArchs",
                format!("NVRTC {} cannot compile for sm_{cc} (it knows {:?})", self.version_text(), self.archs),
            )),
        }
    }

    pub fn version_text(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }

    /// The library it was opened from.
    pub fn name(&self) -> &str {
        &self.library.name
    }

    /// Compiles one kernel source (`name` is its file name, for messages) for `target`, with
    /// the prelude as the in-memory header and [`OPTIONS`].
    pub fn compile(&self, name: &str, source: &str, target: Target) -> GpuResult<Vec<u8>> {
        let c = |text: &str| CString::new(text).map_err(|_| Error::new("nvrtcCreateProgram", "a NUL in the source"));
        let (source_c, name_c, prelude_c, prelude_name_c) = (c(source)?, c(name)?, c(PRELUDE)?, c(PRELUDE_NAME)?);
        let options: Vec<CString> =
            OPTIONS.iter().map(|o| o.to_string()).chain([target.option()]).map(|o| c(&o)).collect::<GpuResult<_>>()?;
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let headers = [prelude_c.as_ptr()];
        let header_names = [prelude_name_c.as_ptr()];
        let mut program: nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every string is NUL-terminated and outlives the call; one header and its name.
        let rc = unsafe {
            (self.create)(&mut program, source_c.as_ptr(), name_c.as_ptr(), 1, headers.as_ptr(), header_names.as_ptr())
        };
        self.ok("nvrtcCreateProgram", rc)?;
        let program = Program { nvrtc: self, program };
        // SAFETY: a live program; the option array holds `len` NUL-terminated strings.
        let rc = unsafe { (self.compile)(program.program, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        if rc != 0 {
            let log = program.bytes(self.log_size, self.log).map(|l| text(&l)).unwrap_or_default();
            return Err(Error::new(
                "nvrtcCompileProgram",
                format!(
                    "NVRTC {} could not compile {name} for {}: {}",
                    self.version_text(),
                    target.option(),
                    log.trim()
                ),
            ));
        }
        match target.kind {
            Kind::Cubin => program.bytes(self.cubin_size, self.cubin),
            // The size counts the terminating NUL, which the driver needs.
            Kind::Ptx => program.bytes(self.ptx_size, self.ptx),
        }
    }

    fn ok(&self, call: &'static str, rc: c_int) -> GpuResult<()> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: nvrtcGetErrorString returns a static string for any code ("NVRTC_ERROR unknown").
        let s = unsafe { (self.error_string)(rc) };
        let reason = if s.is_null() {
            format!("NVRTC error {rc}")
        } else {
            // SAFETY: non-null, static and NUL-terminated.
            text(unsafe { CStr::from_ptr(s) }.to_bytes())
        };
        Err(Error::new(call, reason))
    }
}

/// A program, destroyed when dropped.
struct Program<'a> {
    nvrtc: &'a Nvrtc,
    program: nvrtcProgram,
}

impl Program<'_> {
    /// One of the program's outputs, through its size function and its copy function.
    fn bytes(&self, size: SizeFn, copy: BytesFn) -> GpuResult<Vec<u8>> {
        let mut len = 0usize;
        // SAFETY: a live program and a valid out-pointer.
        self.nvrtc.ok("nvrtcGet*Size", unsafe { size(self.program, &mut len) })?;
        let mut bytes = vec![0u8; len];
        if len > 0 {
            // SAFETY: the buffer holds the `len` bytes NVRTC said it would write.
            self.nvrtc.ok("nvrtcGet*", unsafe { copy(self.program, bytes.as_mut_ptr().cast()) })?;
        }
        Ok(bytes)
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once.
        unsafe { (self.nvrtc.destroy)(&mut self.program) };
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes.strip_suffix(&[0]).unwrap_or(bytes)).into_owned()
}

/// The process's NVRTC for a driver of `driver_version`, found once.
pub fn nvrtc(driver_version: c_int) -> GpuResult<&'static Nvrtc> {
    static NVRTC: OnceLock<GpuResult<Nvrtc>> = OnceLock::new();
    NVRTC
        .get_or_init(|| {
            let nvrtc = Nvrtc::find(&candidates(driver_version), driver_version / 1000)?;
            crate::log_info!("CUDA: kernels compiled by NVRTC {} ({})\n", nvrtc.version_text(), nvrtc.name());
            Ok(nvrtc)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Where to look, in order, for a driver of `driver_version`.
fn candidates(driver_version: c_int) -> Vec<String> {
    let mut names: Vec<String> = std::env::var(ENV).ok().filter(|p| !p.is_empty()).into_iter().collect();
    if driver_version >= 13000 {
        names.push("libnvrtc.so.13".into());
    }
    names.extend(["libnvrtc.so.12".into(), "libnvrtc.so".into()]);
    names
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// NVIDIA's NVRTC wheels as scripts/cuda-check installs them (`$GGML_RS_CUDA_CACHE` or
    /// ~/.cache/ggml-rs-cuda): (CUDA 12, CUDA 13) library paths, where present.
    pub fn wheel_libraries() -> Vec<String> {
        let cache = std::env::var("GGML_RS_CUDA_CACHE")
            .ok()
            .or_else(|| std::env::var("HOME").ok().map(|h| format!("{h}/.cache/ggml-rs-cuda")))
            .unwrap_or_default();
        let paths = [
            format!("{cache}/cu12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"),
            format!("{cache}/cu13/nvidia/cu13/lib/libnvrtc.so.13"),
        ];
        let found: Vec<String> = paths.into_iter().filter(|p| std::path::Path::new(p).exists()).collect();
        if found.is_empty() {
            eprintln!("no NVRTC wheel under {cache} (scripts/cuda-check installs them): NVRTC tests skipped");
        }
        found
    }

    #[test]
    fn the_search_order_follows_the_driver() {
        // (GGML_RS_NVRTC is not set in tests.)
        if std::env::var_os(ENV).is_some() {
            return;
        }
        assert_eq!(candidates(12080), ["libnvrtc.so.12", "libnvrtc.so"]);
        assert_eq!(candidates(13000), ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]);
    }

    #[test]
    fn a_missing_or_foreign_nvrtc_is_refused_with_reasons() {
        let error = Nvrtc::find(&["libggml-rs-no-nvrtc.so.12", "libm.so.6"], 13).err().expect("refused");
        assert!(error.reason.starts_with("NVRTC (libnvrtc.so.12 or .13) is not available"), "{error}");
        assert!(error.reason.contains("libggml-rs-no-nvrtc.so.12"), "{error}");
        assert!(error.reason.contains("libm.so.6 lacks nvrtcVersion"), "{error}");
    }

    #[test]
    fn an_nvrtc_newer_than_the_driver_is_passed_over() {
        for path in wheel_libraries() {
            let nvrtc = Nvrtc::open(&path).expect("the wheel's NVRTC");
            let error = Nvrtc::find(&[&path], nvrtc.version.0 - 1).err().expect("too new");
            assert!(error.reason.contains("newer than the driver"), "{error}");
            assert!(Nvrtc::find(&[&path], nvrtc.version.0).is_ok());
        }
    }

    #[test]
    fn targets_are_exact_when_known_else_ptx_below() {
        for path in wheel_libraries() {
            let nvrtc = Nvrtc::open(&path).expect("the wheel's NVRTC");
            assert!(nvrtc.archs.contains(&80) && nvrtc.archs.contains(&90), "{path}: {:?}", nvrtc.archs);
            assert_eq!(nvrtc.target(80).unwrap(), Target { arch: 80, kind: Kind::Cubin });
            // A device newer than this NVRTC: PTX for the newest architecture it knows.
            let newest = *nvrtc.archs.last().unwrap();
            assert_eq!(nvrtc.target(newest + 1).unwrap(), Target { arch: newest, kind: Kind::Ptx });
            // Older than any it knows: refused, saying so.
            let error = nvrtc.target(10).unwrap_err();
            assert!(error.reason.contains("cannot compile for sm_10"), "{error}");
        }
    }

    #[test]
    fn matvec_compiles_to_sass_and_ptx() {
        let source = crate::cuda::sources::source("matvec").expect("matvec.cu");
        for path in wheel_libraries() {
            let nvrtc = Nvrtc::open(&path).expect("the wheel's NVRTC");
            let cubin = nvrtc.compile("matvec.cu", source, Target { arch: 80, kind: Kind::Cubin }).unwrap();
            assert!(cubin.starts_with(b"\x7fELF"), "{path}: a CUBIN is an ELF file");
            assert!(cubin.windows(11).any(|w| w == b"mul_mat_vec"), "{path}: the kernel is in it");
            let ptx = nvrtc.compile("matvec.cu", source, Target { arch: 80, kind: Kind::Ptx }).unwrap();
            let text = std::str::from_utf8(&ptx).expect("PTX is text");
            assert!(text.ends_with('\0'), "{path}: PTX is NUL-terminated for the driver");
            assert!(text.contains(".target sm_80") && text.contains(".entry mul_mat_vec"), "{path}");
        }
    }

    #[test]
    fn a_compile_error_carries_the_log() {
        for path in wheel_libraries() {
            let nvrtc = Nvrtc::open(&path).expect("the wheel's NVRTC");
            let bad = "#include \"prelude.cuh\"\nextern \"C\" __global__ void k() { undeclared_thing(); }\n";
            let error = nvrtc.compile("bad.cu", bad, Target { arch: 80, kind: Kind::Cubin }).unwrap_err();
            assert_eq!(error.call, "nvrtcCompileProgram");
            assert!(error.reason.contains("bad.cu") && error.reason.contains("undeclared_thing"), "{error}");
        }
    }
}
