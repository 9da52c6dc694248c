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
    /// Whether it answers [`Gpu::gemm`], as a GPU with cuBLAS does.
    gemm: bool,
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
        Emulated { info, allocations: Mutex::default(), gemm: true }
    }

    /// An emulated GPU without cuBLAS, whose batches take the backend's own kernels.
    #[cfg(test)]
    pub fn without_gemm() -> Emulated {
        Emulated { gemm: false, ..Emulated::new() }
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
            .position(|k| k.name == kernel.name)
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
        let name = launchable(function, grid, block)?;
        // SAFETY: the caller's contract.
        unsafe { super::launch(name, grid, block, args) };
        Ok(())
    }

    fn has_gemm(&self) -> bool {
        self.gemm
    }

    unsafe fn gemm(&self, _stream: Stream, g: &Gemm) -> GpuResult<()> {
        if !self.gemm {
            return Err(Error::new("gemm", "this emulated GPU has no cuBLAS"));
        }
        if g.a_type != g.x_type {
            // as the driver's cuBLAS call refuses them, so that nothing passes here that fails there
            return Err(Error::new("gemm", format!("{:?} by {:?} needs a conversion first", g.a_type, g.x_type)));
        }
        let size = g.a_type.size();
        for b in 0..g.batch {
            let at = |base: DevicePtr, stride: usize| base + (b * stride * size) as DevicePtr;
            // SAFETY: the caller's contract: every matrix lies in (host) memory.
            let (a, x) = unsafe {
                (
                    dense(at(g.a, g.stride_a), g.a_type, g.m, g.k, g.lda),
                    dense(at(g.x, g.stride_x), g.x_type, g.n, g.k, g.ldx),
                )
            };
            let d = (g.d as *mut f32).wrapping_add(b * g.stride_d);
            for (col, values) in products(&a, &x, g.k).iter().enumerate() {
                // SAFETY: column `col` of d holds m floats from `col * ldd` (the caller's contract).
                unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), d.add(col * g.ldd), g.m) };
            }
        }
        Ok(())
    }
}

/// The name of the kernel `function` is, when a GPU would launch it on `grid` x `block`.
fn launchable(function: Function, grid: [u32; 3], block: [u32; 3]) -> GpuResult<&'static str> {
    let Some(kernel) = KERNELS.get(function.0) else {
        return Err(Error::new("launch", format!("no function {}", function.0)));
    };
    let name = kernel.name;
    launch_limits(grid, block, kernel.max_threads)
        .map_err(|reason| Error::new("cuLaunchKernel", format!("{reason} ({name})")))?;
    Ok(name)
}

/// CUDA's limits on a launch's shape, the same on every architecture we compile for (the
/// driver refuses a launch beyond them), so that a launch the emulator would run and a GPU
/// would refuse fails here too: grid and block extents, 1024 threads a block, and at most
/// `max_threads` for the kernel (past its `__launch_bounds__`, or past 256 without one, its
/// registers may not fit in the block's 65536).
fn launch_limits(grid: [u32; 3], block: [u32; 3], max_threads: u32) -> Result<(), String> {
    const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];
    const MAX_BLOCK: [u32; 3] = [1024, 1024, 64];
    const MAX_THREADS: u32 = 1024;
    let beyond = |v: [u32; 3], max: [u32; 3]| v.iter().zip(max).any(|(&n, m)| n == 0 || n > m);
    if beyond(grid, MAX_GRID) {
        return Err(format!("a grid of {grid:?} blocks is beyond CUDA's 1..={MAX_GRID:?}"));
    }
    let threads = block.iter().map(|&n| u64::from(n)).product::<u64>();
    if beyond(block, MAX_BLOCK) || threads > u64::from(MAX_THREADS) {
        return Err(format!("a block of {block:?} threads is beyond CUDA's 1..={MAX_BLOCK:?}, {MAX_THREADS} in all"));
    }
    if threads > u64::from(max_threads) {
        return Err(format!("a block of {threads} threads is more than this kernel's {max_threads}"));
    }
    Ok(())
}

/// `count` vectors of `k` elements of `t`, `ld` elements apart from `base`, as packed F32.
///
/// # Safety
/// They lie in host memory.
unsafe fn dense(base: DevicePtr, t: GemmType, count: usize, k: usize, ld: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(count * k);
    for v in 0..count {
        // SAFETY: the caller's contract.
        out.extend((0..k).map(|i| unsafe { element(base, t, v * ld + i) }));
    }
    out
}

/// Every column of `aᵀ · x` (rows of `k` values each), on all the host's cores: the columns
/// are shared out between threads, each going over the weight rows a tile at a time so that
/// the tile stays in cache across its columns.
fn products(a: &[f32], x: &[f32], k: usize) -> Vec<Vec<f32>> {
    const TILE_ROWS: usize = 64;
    let (m, n) = (a.len() / k.max(1), x.len() / k.max(1));
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(n.max(1));
    let per_thread = n.div_ceil(threads).max(1);
    let columns = |first: usize| -> Vec<Vec<f32>> {
        let last = (first + per_thread).min(n);
        let mut out = vec![vec![0f32; m]; last - first];
        for tile in (0..m).step_by(TILE_ROWS) {
            for (col, values) in out.iter_mut().enumerate() {
                let xc = &x[(first + col) * k..][..k];
                for row in tile..(tile + TILE_ROWS).min(m) {
                    values[row] = dot(&a[row * k..][..k], xc);
                }
            }
        }
        out
    };
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..n).step_by(per_thread).map(|first| s.spawn(move || columns(first))).collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

/// A dot product in eight independent lanes, which the compiler turns into vector code.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(p, q)| p * q).sum();
    for (p, q) in a8.zip(b8) {
        for l in 0..8 {
            lanes[l] += p[l] * q[l];
        }
    }
    lanes.iter().sum::<f32>() + tail
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
        assert_eq!(KERNELS[f.0].name, "mul_mat_vec");
        let missing = gpu.function(Kernel { source: "matvec", name: "no_such_kernel" });
        assert!(missing.unwrap_err().reason.contains("no_such_kernel"));
    }

    #[test]
    fn launches_beyond_cudas_limits_are_refused_as_a_gpu_refuses_them() {
        let gpu = Emulated::new();
        let function = |name| gpu.function(Kernel { source: "rows", name }).unwrap();
        let refused = |name, grid, block| launchable(function(name), grid, block).unwrap_err().reason;
        let reason = refused("sum_rows_f32", [1, 65536, 1], [32, 1, 1]);
        assert!(reason.contains("a grid of [1, 65536, 1] blocks") && reason.ends_with("(sum_rows_f32)"), "{reason}");
        assert!(refused("sum_rows_f32", [1, 1, 65536], [32, 1, 1]).contains("grid"));
        assert!(refused("sum_rows_f32", [0, 1, 1], [32, 1, 1]).contains("grid"));
        assert!(refused("argsort_f32", [1, 1, 1], [1025, 1, 1]).contains("a block of [1025, 1, 1] threads"));
        assert!(refused("argsort_f32", [1, 1, 1], [32, 32, 2]).contains("1024 in all"));
        assert!(refused("argsort_f32", [1, 1, 1], [1, 1, 65]).contains("block"));
        // past 256 threads only with __launch_bounds__: sum_rows_f32 has none, argsort_f32 1024
        assert!(refused("sum_rows_f32", [1, 1, 1], [512, 1, 1]).contains("more than this kernel's 256"));
        assert_eq!(launchable(function("sum_rows_f32"), [1, 1, 1], [256, 1, 1]), Ok("sum_rows_f32"));
        assert_eq!(launchable(function("argsort_f32"), [1024, 65535, 1], [1024, 1, 1]), Ok("argsort_f32"));
        // SAFETY: refused before the kernel runs, so no argument is read.
        let launched = unsafe { gpu.launch(Stream(1), function("argsort_f32"), [1, 1, 1], [2048, 1, 1], &mut []) };
        assert_eq!(launched.unwrap_err().call, "cuLaunchKernel", "launches are checked");
        assert_eq!(launch_limits([i32::MAX as u32, 65535, 65535], [1024, 1, 1], 1024), Ok(()));
        assert_eq!(launch_limits([1, 1, 1], [16, 1, 64], 1024), Ok(()));
    }

    #[test]
    fn gemm_is_a_transposed_product_per_batch() {
        let gpu = Emulated::new();
        // two batches of a (k=3 × m=2, rows of 3) times x (k=3 × n=2)
        let a: Vec<f32> = vec![1., 2., 3., 4., 5., 6., /* batch 1 */ 1., 0., 0., 0., 1., 0.];
        let x: Vec<f32> = vec![1., 1., 1., 0., 1., 2., /* batch 1 */ 5., 6., 7., 8., 9., 10.];
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
            x_type: GemmType::F32,
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
        // a stride of 0 shares the first batch's weights, as grouped-query attention does
        // SAFETY: as above.
        unsafe { gpu.gemm(Stream(1), &Gemm { stride_a: 0, ..g }).unwrap() };
        assert_eq!(d[4..], [38., 92., 56., 137.]);
        // cuBLAS multiplies two matrices of one type only
        // SAFETY: as above (nothing is read).
        let mixed = unsafe { gpu.gemm(Stream(1), &Gemm { x_type: GemmType::F16, ..g }) };
        assert!(mixed.unwrap_err().reason.contains("conversion"));
    }
}
