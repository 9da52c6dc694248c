//! The emulated device as a [`Gpu`]: device memory is host memory, every stream runs its work
//! as it is queued (so a stream is always finished and events have always happened), kernels
//! are the host-compiled sources of `KERNELS`, and products are computed on the host with
//! cuBLAS's semantics.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

use super::KERNELS;
use crate::cuda::gpu::{DevicePtr, Error, Function, Gemm, GemmType, Gpu, GpuEvent, GpuResult, Info, Kernel, Stream};

/// Device allocations are aligned as cudaMalloc's are.
const ALIGNMENT: usize = 256;

pub struct Emulated {
    info: Info,
    /// The layout of every live allocation, by address, to free it.
    allocations: Mutex<HashMap<DevicePtr, Layout>>,
}

impl Emulated {
    pub fn new() -> Emulated {
        let info = Info {
            name: "ggml-rs CUDA emulator (kernels on host threads)".into(),
            pci_bus_id: "0000:00:00.0".into(),
            compute_capability: 80,
            integrated: false,
            total_memory: crate::core::machine::physical_memory(),
        };
        Emulated { info, allocations: Mutex::default() }
    }

    fn allocations(&self) -> std::sync::MutexGuard<'_, HashMap<DevicePtr, Layout>> {
        self.allocations.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn allocate(&self, call: &'static str, bytes: usize) -> GpuResult<*mut u8> {
        let layout = Layout::from_size_align(bytes.max(1), ALIGNMENT).map_err(|e| Error::new(call, e.to_string()))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(Error::new(call, format!("out of memory allocating {bytes} bytes")));
        }
        self.allocations().insert(ptr as DevicePtr, layout);
        Ok(ptr)
    }

    fn release(&self, ptr: DevicePtr) {
        if let Some(layout) = self.allocations().remove(&ptr) {
            // SAFETY: allocated by `allocate` with this layout, and removed from the map once.
            unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
        }
    }
}

impl Default for Emulated {
    fn default() -> Self {
        Emulated::new()
    }
}

/// Reads element `i` of a matrix of `t` at `base` as F32.
///
/// # Safety
/// Element `i` lies in host memory.
unsafe fn element(base: DevicePtr, t: GemmType, i: usize) -> f32 {
    // SAFETY: the caller's contract.
    unsafe {
        match t {
            GemmType::F32 => *(base as *const f32).add(i),
            GemmType::F16 => half::f16::from_bits(*(base as *const u16).add(i)).to_f32(),
            GemmType::BF16 => half::bf16::from_bits(*(base as *const u16).add(i)).to_f32(),
        }
    }
}

impl Gpu for Emulated {
    fn info(&self) -> &Info {
        &self.info
    }

    fn memory(&self) -> GpuResult<(usize, usize)> {
        // SAFETY: sysconf only reads system configuration.
        let (pages, page) = unsafe { (libc::sysconf(libc::_SC_AVPHYS_PAGES), libc::sysconf(libc::_SC_PAGE_SIZE)) };
        let free = usize::try_from(pages).unwrap_or(0).saturating_mul(usize::try_from(page).unwrap_or(0));
        Ok((free.min(self.info.total_memory), self.info.total_memory))
    }

    fn alloc(&self, bytes: usize) -> GpuResult<DevicePtr> {
        self.allocate("alloc", bytes).map(|p| p as DevicePtr)
    }

    unsafe fn free(&self, ptr: DevicePtr) {
        self.release(ptr);
    }

    fn alloc_host(&self, bytes: usize) -> GpuResult<*mut u8> {
        self.allocate("alloc_host", bytes)
    }

    unsafe fn free_host(&self, ptr: *mut u8) {
        self.release(ptr as DevicePtr);
    }

    unsafe fn register_host(&self, _ptr: *mut u8, _bytes: usize) -> GpuResult<()> {
        // host memory is all the emulated device ever reads
        Ok(())
    }

    unsafe fn unregister_host(&self, _ptr: *mut u8) {}

    fn stream_new(&self) -> GpuResult<Stream> {
        Ok(Stream(1))
    }

    unsafe fn stream_free(&self, _stream: Stream) {}

    fn synchronize(&self, _stream: Stream) -> GpuResult<()> {
        Ok(())
    }

    unsafe fn upload(&self, _stream: Stream, dst: DevicePtr, src: *const u8, bytes: usize) -> GpuResult<()> {
        // SAFETY: the caller's contract; device memory is host memory here.
        unsafe { std::ptr::copy(src, dst as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn download(&self, _stream: Stream, dst: *mut u8, src: DevicePtr, bytes: usize) -> GpuResult<()> {
        // SAFETY: as in `upload`.
        unsafe { std::ptr::copy(src as *const u8, dst, bytes) };
        Ok(())
    }

    unsafe fn copy(&self, _stream: Stream, dst: DevicePtr, src: DevicePtr, bytes: usize) -> GpuResult<()> {
        // SAFETY: as in `upload`.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn memset(&self, _stream: Stream, dst: DevicePtr, value: u8, bytes: usize) -> GpuResult<()> {
        // SAFETY: as in `upload`.
        unsafe { std::ptr::write_bytes(dst as *mut u8, value, bytes) };
        Ok(())
    }

    fn event_new(&self) -> GpuResult<GpuEvent> {
        Ok(GpuEvent(1))
    }

    unsafe fn event_free(&self, _event: GpuEvent) {}

    fn event_record(&self, _event: GpuEvent, _stream: Stream) -> GpuResult<()> {
        Ok(())
    }

    fn stream_wait(&self, _stream: Stream, _event: GpuEvent) -> GpuResult<()> {
        Ok(())
    }

    fn event_synchronize(&self, _event: GpuEvent) -> GpuResult<()> {
        Ok(())
    }

    fn function(&self, kernel: Kernel) -> GpuResult<Function> {
        KERNELS
            .iter()
            .position(|&(name, _)| name == kernel.name)
            .map(Function)
            .ok_or_else(|| Error::new("function", format!("no kernel {} in {}.cu", kernel.name, kernel.source)))
    }

    unsafe fn launch(
        &self,
        _stream: Stream,
        function: Function,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> GpuResult<()> {
        let Some(&(name, _)) = KERNELS.get(function.0) else {
            return Err(Error::new("launch", format!("no function {}", function.0)));
        };
        // SAFETY: the caller's contract.
        unsafe { super::launch(name, grid, block, args) };
        Ok(())
    }

    unsafe fn gemm(&self, _stream: Stream, g: &Gemm) -> GpuResult<()> {
        let (a_size, x_size) = (g.a_type.size(), g.x_type.size());
        for b in 0..g.batch {
            let a = g.a + (b * g.stride_a * a_size) as DevicePtr;
            let x = g.x + (b * g.stride_x * x_size) as DevicePtr;
            let d = (g.d as *mut f32).wrapping_add(b * g.stride_d);
            for col in 0..g.n {
                for row in 0..g.m {
                    let mut sum = 0.0f32;
                    for i in 0..g.k {
                        // SAFETY: the caller's contract: every matrix lies in (host) memory.
                        sum += unsafe { element(a, g.a_type, row * g.lda + i) * element(x, g.x_type, col * g.ldx + i) };
                    }
                    // SAFETY: as above.
                    unsafe { *d.add(col * g.ldd + row) = sum };
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_host_memory_and_copies_are_done_when_queued() {
        let gpu = Emulated::new();
        let s = gpu.stream_new().unwrap();
        let p = gpu.alloc(1000).unwrap();
        assert!(p.is_multiple_of(ALIGNMENT as u64));
        let src: Vec<u8> = (0..=255).collect();
        let mut back = vec![0u8; 256];
        // SAFETY: 1000 bytes at p, 256 in each host vector.
        unsafe {
            gpu.memset(s, p, 7, 1000).unwrap();
            gpu.upload(s, p + 100, src.as_ptr(), 256).unwrap();
            gpu.copy(s, p + 500, p + 100, 256).unwrap();
            gpu.download(s, back.as_mut_ptr(), p + 500, 256).unwrap();
        }
        assert_eq!(back, src);
        // SAFETY: as above.
        unsafe { gpu.download(s, back.as_mut_ptr(), p, 100).unwrap() };
        assert!(back[..100].iter().all(|&b| b == 7));
        // SAFETY: nothing uses p any more.
        unsafe { gpu.free(p) };
        assert!(gpu.allocations().is_empty());
    }

    #[test]
    fn kernels_are_found_by_name() {
        let gpu = Emulated::new();
        let f = gpu.function(Kernel { source: "matvec", name: "mul_mat_vec" }).unwrap();
        assert_eq!(KERNELS[f.0].0, "mul_mat_vec");
        let missing = gpu.function(Kernel { source: "matvec", name: "no_such_kernel" });
        assert!(missing.unwrap_err().reason.contains("no_such_kernel"));
    }

    #[test]
    fn gemm_is_a_transposed_product_per_batch() {
        let gpu = Emulated::new();
        // two batches of a (k=3 × m=2, rows of 3) times x (k=3 × n=2)
        let a: Vec<f32> = vec![1., 2., 3., 4., 5., 6., /* batch 1 */ 1., 0., 0., 0., 1., 0.];
        let x: Vec<u16> = [1., 1., 1., 0., 1., 2., /* batch 1 */ 5., 6., 7., 8., 9., 10.]
            .map(|v: f32| half::f16::from_f32(v).to_bits())
            .to_vec();
        let mut d = vec![0f32; 8];
        let g = Gemm {
            m: 2,
            n: 2,
            k: 3,
            a: a.as_ptr() as DevicePtr,
            a_type: GemmType::F32,
            lda: 3,
            stride_a: 6,
            x: x.as_ptr() as DevicePtr,
            x_type: GemmType::F16,
            ldx: 3,
            stride_x: 6,
            d: d.as_mut_ptr() as DevicePtr,
            ldd: 2,
            stride_d: 4,
            batch: 2,
        };
        // SAFETY: the three vectors hold what the description names.
        unsafe { gpu.gemm(Stream(1), &g).unwrap() };
        assert_eq!(d, [6., 15., 8., 17., 5., 6., 8., 9.]);
    }
}
