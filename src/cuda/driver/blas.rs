//! cuBLAS, loaded at run time, for the products of [`Gemm`]: `cublasGemmStridedBatchedEx` with
//! F32 accumulation, the weights transposed.
//!
//! Which library: `$GGML_RS_CUBLAS` (a path) when set, then `libcublas.so.13` (on a CUDA 13
//! driver), `libcublas.so.12` and `libcublas.so`; the first that opens, has every symbol of
//! [`SYMBOLS`] and is no newer than the driver. Why not cudarc's own loader: see `driver/mod.rs`.

use std::ffi::{c_int, c_longlong, c_void};
use std::sync::OnceLock;

use cudarc::cublas::sys::{
    cublasComputeType_t, cublasGemmAlgo_t, cublasHandle_t, cublasOperation_t, cudaDataType, libraryPropertyType,
};

use super::library::{Library, function};
use crate::cuda::gpu::{DevicePtr, Error, Gemm, GemmType, GpuResult};

/// Every cuBLAS function we call, checked present before the first call.
pub const SYMBOLS: &[&str] =
    &["cublasGetProperty", "cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasGemmStridedBatchedEx"];

/// The environment variable naming a libcublas to try first.
pub const ENV: &str = "GGML_RS_CUBLAS";

// The C declarations (cublas_api.h), with `cublasStatus_t` read as a plain int.
type GetPropertyFn = unsafe extern "C" fn(libraryPropertyType, *mut c_int) -> c_int;
type CreateFn = unsafe extern "C" fn(*mut cublasHandle_t) -> c_int;
type DestroyFn = unsafe extern "C" fn(cublasHandle_t) -> c_int;
type SetStreamFn = unsafe extern "C" fn(cublasHandle_t, *mut c_void) -> c_int;
type GemmFn = unsafe extern "C" fn(
    cublasHandle_t,
    cublasOperation_t,
    cublasOperation_t,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    cudaDataType,
    c_int,
    c_longlong,
    *const c_void,
    cudaDataType,
    c_int,
    c_longlong,
    *const c_void,
    *mut c_void,
    cudaDataType,
    c_int,
    c_longlong,
    c_int,
    cublasComputeType_t,
    cublasGemmAlgo_t,
) -> c_int;

/// A loaded, checked cuBLAS.
pub struct Blas {
    _library: Library,
    pub major: c_int,
    create: CreateFn,
    destroy: DestroyFn,
    set_stream: SetStreamFn,
    gemm: GemmFn,
}

impl Blas {
    pub fn open(name: &str) -> std::result::Result<Blas, String> {
        let library = Library::open(name)?;
        library.check(SYMBOLS)?;
        // SAFETY: for every `function` below, the types are cublas_api.h's declarations.
        unsafe {
            let get_property: GetPropertyFn = function(&library, "cublasGetProperty")?;
            let mut major: c_int = 0;
            if get_property(libraryPropertyType::MAJOR_VERSION, &mut major) != 0 {
                return Err(format!("{name}: cublasGetProperty failed"));
            }
            Ok(Blas {
                major,
                create: function(&library, "cublasCreate_v2")?,
                destroy: function(&library, "cublasDestroy_v2")?,
                set_stream: function(&library, "cublasSetStream_v2")?,
                gemm: function(&library, "cublasGemmStridedBatchedEx")?,
                _library: library,
            })
        }
    }

    /// The first usable cuBLAS of `candidates` whose major version is at most `max_major`.
    pub fn find<S: AsRef<str>>(candidates: &[S], max_major: c_int) -> GpuResult<Blas> {
        let mut reasons = Vec::new();
        for name in candidates {
            match Blas::open(name.as_ref()) {
                Ok(blas) if blas.major <= max_major => return Ok(blas),
                Ok(blas) => reasons.push(format!(
                    "{} is cuBLAS {}, newer than the driver (CUDA {max_major})",
                    name.as_ref(),
                    blas.major
                )),
                Err(reason) => reasons.push(reason),
            }
        }
        Err(Error::new("dlopen", format!("cuBLAS (libcublas.so.12 or .13) is not available: {}", reasons.join("; "))))
    }

    /// A new handle. The caller's thread has the device's context current.
    pub fn create(&self) -> GpuResult<cublasHandle_t> {
        let mut handle: cublasHandle_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        status("cublasCreate_v2", unsafe { (self.create)(&mut handle) })?;
        Ok(handle)
    }

    /// # Safety
    /// `handle` came from [`Blas::create`] and is not used again.
    pub unsafe fn destroy(&self, handle: cublasHandle_t) {
        // SAFETY: the caller's contract.
        unsafe { (self.destroy)(handle) };
    }

    /// Queues `gemm` on `stream` with `handle` (which nothing else uses meanwhile).
    ///
    /// # Safety
    /// Every matrix the description names lies in device memory; the device's context is
    /// current; `stream` is a stream of that context or null.
    pub unsafe fn gemm(&self, handle: cublasHandle_t, stream: *mut c_void, g: &Gemm) -> GpuResult<()> {
        let args = Args::new(g)?;
        // SAFETY: a live handle and stream (the caller's contract).
        status("cublasSetStream_v2", unsafe { (self.set_stream)(handle, stream) })?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ptr = |p: DevicePtr| p as usize as *mut c_void;
        // SAFETY: the dimensions were checked to fit cuBLAS's types; alpha and beta are host
        // floats (the default pointer mode); the matrices are the caller's.
        let rc = unsafe {
            (self.gemm)(
                handle,
                cublasOperation_t::CUBLAS_OP_T,
                cublasOperation_t::CUBLAS_OP_N,
                args.m,
                args.n,
                args.k,
                (&alpha as *const f32).cast(),
                ptr(g.a),
                data_type(g.a_type),
                args.lda,
                args.stride_a,
                ptr(g.x),
                data_type(g.x_type),
                args.ldx,
                args.stride_x,
                (&beta as *const f32).cast(),
                ptr(g.d),
                cudaDataType::CUDA_R_32F,
                args.ldd,
                args.stride_d,
                args.batch,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
            )
        };
        status("cublasGemmStridedBatchedEx", rc)
    }
}

/// A [`Gemm`]'s numbers in cuBLAS's types.
#[derive(Debug, PartialEq)]
struct Args {
    m: c_int,
    n: c_int,
    k: c_int,
    lda: c_int,
    ldx: c_int,
    ldd: c_int,
    stride_a: c_longlong,
    stride_x: c_longlong,
    stride_d: c_longlong,
    batch: c_int,
}

impl Args {
    fn new(g: &Gemm) -> GpuResult<Args> {
        if g.a_type != g.x_type {
            return Err(Error::new(
                "cublasGemmStridedBatchedEx",
                format!("cuBLAS multiplies {:?} by {:?} only after a conversion", g.a_type, g.x_type),
            ));
        }
        let int = |name: &str, v: usize| {
            c_int::try_from(v)
                .map_err(|_| Error::new("cublasGemmStridedBatchedEx", format!("{name} = {v} is too large")))
        };
        let long = |name: &str, v: usize| {
            c_longlong::try_from(v)
                .map_err(|_| Error::new("cublasGemmStridedBatchedEx", format!("{name} = {v} is too large")))
        };
        Ok(Args {
            m: int("m", g.m)?,
            n: int("n", g.n)?,
            k: int("k", g.k)?,
            lda: int("lda", g.lda)?,
            ldx: int("ldx", g.ldx)?,
            ldd: int("ldd", g.ldd)?,
            stride_a: long("stride_a", g.stride_a)?,
            stride_x: long("stride_x", g.stride_x)?,
            stride_d: long("stride_d", g.stride_d)?,
            batch: int("batch", g.batch)?,
        })
    }
}

fn data_type(t: GemmType) -> cudaDataType {
    match t {
        GemmType::F32 => cudaDataType::CUDA_R_32F,
        GemmType::F16 => cudaDataType::CUDA_R_16F,
        GemmType::BF16 => cudaDataType::CUDA_R_16BF,
    }
}

fn status(call: &'static str, rc: c_int) -> GpuResult<()> {
    let name = match rc {
        0 => return Ok(()),
        1 => "CUBLAS_STATUS_NOT_INITIALIZED",
        3 => "CUBLAS_STATUS_ALLOC_FAILED",
        7 => "CUBLAS_STATUS_INVALID_VALUE",
        8 => "CUBLAS_STATUS_ARCH_MISMATCH",
        11 => "CUBLAS_STATUS_MAPPING_ERROR",
        13 => "CUBLAS_STATUS_EXECUTION_FAILED",
        14 => "CUBLAS_STATUS_INTERNAL_ERROR",
        15 => "CUBLAS_STATUS_NOT_SUPPORTED",
        16 => "CUBLAS_STATUS_LICENSE_ERROR",
        _ => return Err(Error::new(call, format!("cuBLAS status {rc}"))),
    };
    Err(Error::new(call, name))
}

/// The process's cuBLAS for a driver of `driver_version`, found once.
pub fn blas(driver_version: c_int) -> GpuResult<&'static Blas> {
    static BLAS: OnceLock<GpuResult<Blas>> = OnceLock::new();
    BLAS.get_or_init(|| Blas::find(&candidates(driver_version), driver_version / 1000)).as_ref().map_err(Clone::clone)
}

fn candidates(driver_version: c_int) -> Vec<String> {
    let mut names: Vec<String> = std::env::var(ENV).ok().filter(|p| !p.is_empty()).into_iter().collect();
    if driver_version >= 13000 {
        names.push("libcublas.so.13".into());
    }
    names.extend(["libcublas.so.12".into(), "libcublas.so".into()]);
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemm() -> Gemm {
        Gemm {
            m: 4096,
            n: 512,
            k: 4096,
            a: 0x1000,
            a_type: GemmType::F16,
            lda: 4096,
            stride_a: 4096 * 4096,
            x: 0x2000,
            x_type: GemmType::F16,
            ldx: 4096,
            stride_x: 4096 * 512,
            d: 0x3000,
            ldd: 4096,
            stride_d: 4096 * 512,
            batch: 32,
        }
    }

    #[test]
    fn a_product_maps_onto_cublas_types() {
        let args = Args::new(&gemm()).unwrap();
        assert_eq!((args.m, args.n, args.k, args.batch), (4096, 512, 4096, 32));
        assert_eq!((args.lda, args.ldx, args.ldd), (4096, 4096, 4096));
        assert_eq!(args.stride_a, 1 << 24);
    }

    #[test]
    fn what_cublas_cannot_take_is_refused() {
        let too_long = Gemm { k: 1 << 31, lda: 1 << 31, ..gemm() };
        let error = Args::new(&too_long).unwrap_err();
        assert_eq!(error.reason, "k = 2147483648 is too large");
        let mixed = Gemm { x_type: GemmType::F32, ..gemm() };
        assert!(Args::new(&mixed).unwrap_err().reason.contains("F16 by F32"));
    }

    #[test]
    fn a_missing_cublas_is_refused_with_reasons() {
        if std::env::var_os(ENV).is_none() {
            assert_eq!(candidates(12020), ["libcublas.so.12", "libcublas.so"]);
            assert_eq!(candidates(13010), ["libcublas.so.13", "libcublas.so.12", "libcublas.so"]);
        }
        let error = Blas::find(&["libggml-rs-no-cublas.so.12", "libm.so.6"], 13).err().expect("refused");
        assert!(error.reason.starts_with("cuBLAS (libcublas.so.12 or .13) is not available"), "{error}");
        assert!(error.reason.contains("libm.so.6 lacks cublasGetProperty"), "{error}");
    }

    #[test]
    fn statuses_are_named() {
        assert_eq!(status("x", 0), Ok(()));
        assert_eq!(status("x", 15).unwrap_err().reason, "CUBLAS_STATUS_NOT_SUPPORTED");
        assert_eq!(status("x", 99).unwrap_err().reason, "cuBLAS status 99");
    }
}
