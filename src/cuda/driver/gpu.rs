//! One CUDA device as a [`Gpu`], on its primary context. Every method makes that context
//! current on the calling thread first (ggml calls from many threads; `cuCtxSetCurrent` is a
//! thread-local store). Handles are the driver's own: a [`Stream`] is a `CUstream` (0 is the
//! legacy default stream), an [`GpuEvent`] a `CUevent`, a [`Function`] a `CUfunction`.

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use cudarc::cublas::sys::cublasHandle_t;
use cudarc::driver::sys::{self, CUdevice_attribute};

use super::cache::Cache;
use super::{blas, check, nvrtc};
use crate::cuda::gpu::{DevicePtr, Error, Function, Gemm, Gpu, GpuEvent, GpuResult, Info, Kernel, Stream};

pub struct DriverGpu {
    info: Info,
    device: sys::CUdevice,
    context: sys::CUcontext,
    driver_version: c_int,
    /// Kernels ready to launch.
    functions: Mutex<HashMap<Kernel, Function>>,
    /// Loaded modules by source stem; held while compiling, so a source compiles once.
    modules: Mutex<HashMap<&'static str, sys::CUmodule>>,
    /// This device's cuBLAS handle, made on the first product; held for each product (a
    /// handle's stream is set per call).
    blas: Mutex<Option<cublasHandle_t>>,
}

// SAFETY: the driver's handles may be used from any thread with the context current, which
// every method makes it; the maps and the cuBLAS handle are behind mutexes.
unsafe impl Send for DriverGpu {}
// SAFETY: as above.
unsafe impl Sync for DriverGpu {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn stream(s: Stream) -> sys::CUstream {
    s.0 as sys::CUstream
}

fn event(e: GpuEvent) -> sys::CUevent {
    e.0 as sys::CUevent
}

impl DriverGpu {
    /// The device `ordinal` on its primary context. The driver is checked and initialized.
    pub(super) fn new(ordinal: c_int, driver_version: c_int) -> GpuResult<DriverGpu> {
        let mut device: sys::CUdevice = 0;
        // SAFETY: a valid out-pointer.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut device, ordinal) })?;

        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds `len` bytes; the driver NUL-terminates within it.
        check("cuDeviceGetName", unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, device) })?;
        let mut bus = [0 as c_char; 64];
        // SAFETY: as above.
        check("cuDeviceGetPCIBusId", unsafe {
            sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), bus.len() as c_int, device)
        })?;
        let attribute = |a: CUdevice_attribute| -> GpuResult<c_int> {
            let mut v: c_int = 0;
            // SAFETY: a valid out-pointer and a valid attribute.
            check("cuDeviceGetAttribute", unsafe { sys::cuDeviceGetAttribute(&mut v, a, device) })?;
            Ok(v)
        };
        let major = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let integrated = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0;
        let mut total_memory = 0usize;
        // SAFETY: a valid out-pointer.
        check("cuDeviceTotalMem_v2", unsafe { sys::cuDeviceTotalMem_v2(&mut total_memory, device) })?;

        let mut context: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; released in Drop.
        check("cuDevicePrimaryCtxRetain", unsafe { sys::cuDevicePrimaryCtxRetain(&mut context, device) })?;

        let info = Info {
            name: c_text(&name),
            pci_bus_id: c_text(&bus).to_lowercase(),
            compute_capability: (major * 10 + minor) as u32,
            integrated,
            total_memory,
        };
        Ok(DriverGpu {
            info,
            device,
            context,
            driver_version,
            functions: Mutex::default(),
            modules: Mutex::default(),
            blas: Mutex::default(),
        })
    }

    /// Makes this device's context current on the calling thread.
    fn bind(&self) -> GpuResult<()> {
        // SAFETY: a retained primary context.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.context) })
    }

    /// The module of the kernel source `stem`, compiled (or read from the disk cache) and
    /// loaded on first use. The caller holds `modules` and has the context current.
    fn module(
        &self,
        modules: &mut HashMap<&'static str, sys::CUmodule>,
        stem: &'static str,
    ) -> GpuResult<sys::CUmodule> {
        if let Some(&module) = modules.get(stem) {
            return Ok(module);
        }
        let source = crate::cuda::sources::source(stem)
            .ok_or_else(|| Error::new("function", format!("no kernel source named {stem}")))?;
        let nvrtc = nvrtc::nvrtc(self.driver_version)?;
        let cache = Cache::user();
        let cc = self.info.compute_capability;
        let compiled = cache.compile(nvrtc, stem, source, cc, false)?;
        let module = match load(&compiled.image) {
            Ok(module) => module,
            // A cached binary the driver refuses (damaged in a way the checks cannot see, or
            // written by another driver): compiled again, and the entry replaced.
            Err(e) if compiled.from_cache => {
                crate::log_warn!("CUDA: the cached kernels of {stem}.cu failed to load ({e}); compiling them again\n");
                load(&cache.compile(nvrtc, stem, source, cc, true)?.image)?
            }
            Err(e) => {
                return Err(Error::new(
                    e.call,
                    format!(
                        "{} ({stem}.cu by NVRTC {} for {})",
                        e.reason,
                        nvrtc.version_text(),
                        compiled.target.option()
                    ),
                ));
            }
        };
        modules.insert(stem, module);
        Ok(module)
    }

    /// This device's cuBLAS handle, made on first use. The context is current.
    fn blas_handle<'a>(
        &self,
        slot: &'a mut Option<cublasHandle_t>,
        blas: &blas::Blas,
    ) -> GpuResult<&'a cublasHandle_t> {
        if slot.is_none() {
            *slot = Some(blas.create()?);
        }
        Ok(slot.as_ref().expect("just made"))
    }
}

/// Loads a CUBIN or NUL-terminated PTX image.
fn load(image: &[u8]) -> GpuResult<sys::CUmodule> {
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: the image is a whole CUBIN (checked ELF) or PTX ending in NUL, as NVRTC made it
    // or as the cache verified it byte for byte; the context is current.
    check("cuModuleLoadData", unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr().cast()) })?;
    Ok(module)
}

fn c_text(bytes: &[c_char]) -> String {
    let bytes: Vec<u8> = bytes.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Drop for DriverGpu {
    fn drop(&mut self) {
        if self.bind().is_err() {
            return;
        }
        if let Some(handle) = lock(&self.blas).take()
            && let Ok(blas) = blas::blas(self.driver_version)
        {
            // SAFETY: made by this device's cuBLAS and used by nothing else now.
            unsafe { blas.destroy(handle) };
        }
        for (_, module) in lock(&self.modules).drain() {
            // SAFETY: loaded by this device; no function of it is used after the GPU is gone.
            unsafe { sys::cuModuleUnload(module) };
        }
        // SAFETY: retained once in `new`.
        unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device) };
    }
}

impl Gpu for DriverGpu {
    fn info(&self) -> &Info {
        &self.info
    }

    fn memory(&self) -> GpuResult<(usize, usize)> {
        self.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers; the context is current.
        check("cuMemGetInfo_v2", unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
        Ok((free, total))
    }

    fn alloc(&self, bytes: usize) -> GpuResult<DevicePtr> {
        self.bind()?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: a valid out-pointer; cuMemAlloc refuses 0 bytes, so at least 1.
        check("cuMemAlloc_v2", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) })
            .map_err(|e| Error::new(e.call, format!("{} allocating {bytes} bytes", e.reason)))?;
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: DevicePtr) {
        if self.bind().is_ok() {
            // SAFETY: the caller's contract.
            unsafe { sys::cuMemFree_v2(ptr) };
        }
    }

    fn alloc_host(&self, bytes: usize) -> GpuResult<*mut u8> {
        self.bind()?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; portable so that every context sees it page-locked.
        check("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut ptr, bytes.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) })
            .map_err(|e| Error::new(e.call, format!("{} allocating {bytes} bytes", e.reason)))?;
        Ok(ptr.cast())
    }

    unsafe fn free_host(&self, ptr: *mut u8) {
        if self.bind().is_ok() {
            // SAFETY: the caller's contract.
            unsafe { sys::cuMemFreeHost(ptr.cast()) };
        }
    }

    unsafe fn register_host(&self, ptr: *mut u8, bytes: usize) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: the caller's contract: `bytes` bytes at `ptr` stay valid until unregistered.
        check("cuMemHostRegister_v2", unsafe {
            sys::cuMemHostRegister_v2(ptr.cast(), bytes, sys::CU_MEMHOSTREGISTER_PORTABLE)
        })
    }

    unsafe fn unregister_host(&self, ptr: *mut u8) {
        if self.bind().is_ok() {
            // SAFETY: the caller's contract.
            unsafe { sys::cuMemHostUnregister(ptr.cast()) };
        }
    }

    fn stream_new(&self) -> GpuResult<Stream> {
        self.bind()?;
        let mut s: sys::CUstream = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; a stream that does not wait for the legacy default one.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        })?;
        Ok(Stream(s as usize))
    }

    unsafe fn stream_free(&self, s: Stream) {
        if self.bind().is_ok() && s != Stream::DEFAULT {
            // SAFETY: the caller's contract.
            unsafe { sys::cuStreamDestroy_v2(stream(s)) };
        }
    }

    fn synchronize(&self, s: Stream) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: a stream of this context (or the default one).
        check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(stream(s)) })
    }

    unsafe fn upload(&self, s: Stream, dst: DevicePtr, src: *const u8, bytes: usize) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: the caller's contract.
        check("cuMemcpyHtoDAsync_v2", unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream(s)) })
    }

    unsafe fn download(&self, s: Stream, dst: *mut u8, src: DevicePtr, bytes: usize) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: the caller's contract.
        check("cuMemcpyDtoHAsync_v2", unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream(s)) })
    }

    unsafe fn copy(&self, s: Stream, dst: DevicePtr, src: DevicePtr, bytes: usize) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: the caller's contract; with unified addressing the driver finds each
        // address's device, so a peer's memory is copied too.
        check("cuMemcpyAsync", unsafe { sys::cuMemcpyAsync(dst, src, bytes, stream(s)) })
    }

    unsafe fn memset(&self, s: Stream, dst: DevicePtr, value: u8, bytes: usize) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: the caller's contract.
        check("cuMemsetD8Async", unsafe { sys::cuMemsetD8Async(dst, value, bytes, stream(s)) })
    }

    fn event_new(&self) -> GpuResult<GpuEvent> {
        self.bind()?;
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; no timing, which makes recording and waiting cheaper.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32)
        })?;
        Ok(GpuEvent(e as usize))
    }

    unsafe fn event_free(&self, e: GpuEvent) {
        if self.bind().is_ok() {
            // SAFETY: the caller's contract.
            unsafe { sys::cuEventDestroy_v2(event(e)) };
        }
    }

    fn event_record(&self, e: GpuEvent, s: Stream) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: an event and a stream of this GPU (the trait's handle rule).
        check("cuEventRecord", unsafe { sys::cuEventRecord(event(e), stream(s)) })
    }

    fn stream_wait(&self, s: Stream, e: GpuEvent) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: as above; flags must be 0.
        check("cuStreamWaitEvent", unsafe { sys::cuStreamWaitEvent(stream(s), event(e), 0) })
    }

    fn event_synchronize(&self, e: GpuEvent) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: an event of this GPU.
        check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(event(e)) })
    }

    fn function(&self, kernel: Kernel) -> GpuResult<Function> {
        if let Some(&f) = lock(&self.functions).get(&kernel) {
            return Ok(f);
        }
        self.bind()?;
        let mut modules = lock(&self.modules);
        let module = self.module(&mut modules, kernel.source)?;
        let name = CString::new(kernel.name).map_err(|_| Error::new("cuModuleGetFunction", "a NUL in the name"))?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a loaded module and a NUL-terminated name.
        check("cuModuleGetFunction", unsafe { sys::cuModuleGetFunction(&mut f, module, name.as_ptr()) })
            .map_err(|e| Error::new(e.call, format!("{} ({} in {}.cu)", e.reason, kernel.name, kernel.source)))?;
        let function = Function(f as usize);
        lock(&self.functions).insert(kernel, function);
        Ok(function)
    }

    unsafe fn launch(
        &self,
        s: Stream,
        function: Function,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> GpuResult<()> {
        self.bind()?;
        // SAFETY: a function of this GPU; `args` points at one value per kernel parameter (the
        // caller's contract); no dynamic shared memory, no extra options.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                function.0 as sys::CUfunction,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                0,
                stream(s),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    fn has_gemm(&self) -> bool {
        blas::blas(self.driver_version).is_ok()
    }

    unsafe fn gemm(&self, s: Stream, gemm: &Gemm) -> GpuResult<()> {
        let blas = blas::blas(self.driver_version)?;
        self.bind()?;
        let mut slot = lock(&self.blas);
        let handle = *self.blas_handle(&mut slot, blas)?;
        // SAFETY: the caller's contract for the matrices; the context is current; the handle
        // is this device's and held (the lock) until the product is queued.
        unsafe { blas.gemm(handle, stream(s).cast(), gemm) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine with a CUDA GPU (skipped elsewhere): memory, copies, events, a kernel
    /// compiled and loaded, and a cuBLAS product checked against the host.
    #[test]
    fn on_a_real_gpu() {
        let gpus = match super::super::gpus() {
            Ok(gpus) if !gpus.is_empty() => gpus,
            Ok(_) | Err(_) => return eprintln!("no CUDA GPU here: the real-GPU test is skipped"),
        };
        let gpu = &gpus[0];
        let info = gpu.info();
        eprintln!("{info:?}");
        assert!(info.compute_capability >= 50 && info.total_memory > 0);
        assert_eq!(info.pci_bus_id, info.pci_bus_id.to_lowercase());
        let (free, total) = gpu.memory().unwrap();
        assert!(free <= total && total > 0);

        let s = gpu.stream_new().unwrap();
        let e = gpu.event_new().unwrap();
        let input: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
        let bytes = input.len() * 4;
        let (a, b) = (gpu.alloc(bytes).unwrap(), gpu.alloc(bytes).unwrap());
        let host = gpu.alloc_host(bytes).unwrap();
        // SAFETY: every range is `bytes` long and lives until the stream is synchronized.
        unsafe {
            gpu.memset(s, b, 0xff, bytes).unwrap();
            gpu.upload(s, a, input.as_ptr().cast(), bytes).unwrap();
            gpu.copy(s, b, a, bytes / 2).unwrap();
            gpu.download(s, host, b, bytes).unwrap();
        }
        gpu.event_record(e, s).unwrap();
        gpu.event_synchronize(e).unwrap();
        // SAFETY: the copy into the pinned buffer is done.
        let out = unsafe { std::slice::from_raw_parts(host.cast::<f32>(), input.len()) };
        assert_eq!(&out[..12], &input[..12]);
        assert!(out[12..].iter().all(|v| v.to_bits() == u32::MAX));

        // A kernel: compiled by NVRTC for this device (or read from the cache) and loaded.
        let kernel = Kernel { source: "matvec", name: "mul_mat_vec" };
        let f = gpu.function(kernel).unwrap();
        assert_eq!(gpu.function(kernel).unwrap(), f);

        // d (m x n) = aᵀ (k x m)ᵀ · x (k x n): a is 3 rows of k = 4, x is 2 columns of 4.
        let (m, n, k) = (3, 2, 4);
        let g = Gemm {
            m,
            n,
            k,
            a,
            a_type: crate::cuda::gpu::GemmType::F32,
            lda: k,
            stride_a: 0,
            x: a + 12 * 4,
            x_type: crate::cuda::gpu::GemmType::F32,
            ldx: k,
            stride_x: 0,
            d: b,
            ldd: m,
            stride_d: 0,
            batch: 1,
        };
        // SAFETY: a holds 24 floats (a: 12, x: the next 8), b at least 6.
        unsafe {
            gpu.gemm(s, &g).unwrap();
            gpu.download(s, host, b, m * n * 4).unwrap();
        }
        gpu.synchronize(s).unwrap();
        for j in 0..n {
            for i in 0..m {
                let want: f32 = (0..k).map(|l| input[i * k + l] * input[12 + j * k + l]).sum();
                assert!((out[j * m + i] - want).abs() < 1e-4, "d[{i},{j}] = {} not {want}", out[j * m + i]);
            }
        }
        // SAFETY: nothing queued uses them any more.
        unsafe {
            gpu.event_free(e);
            gpu.stream_free(s);
            gpu.free_host(host);
            gpu.free(a);
            gpu.free(b);
        }
    }
}
