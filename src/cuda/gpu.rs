//! What the backend asks of one GPU: memory, copies, streams, events and kernel launches.
//!
//! Two implementations answer it: `driver` (the CUDA driver through cudarc, loaded at run time)
//! and, with the `cuda-emulator` feature, `emulator::gpu` (the same kernel sources compiled for
//! the host). Everything above this trait (devices, buffers, backends, graph dispatch) is the
//! same code on both, which is what lets the emulated device prove it without a GPU.
//!
//! Handles are plain numbers whose meaning belongs to the implementation (a `CUstream` or
//! `CUevent` address for the driver); a handle is only ever given back to the GPU that made it.

use std::ffi::c_void;
use std::fmt;

/// An address in the GPU's memory.
pub type DevicePtr = u64;

/// A queue of work on the GPU; work on one stream runs in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(pub usize);

impl Stream {
    /// The device's default stream (CUDA's legacy NULL stream), for the synchronous copies of
    /// buffers that no backend's stream owns.
    pub const DEFAULT: Stream = Stream(0);
}

/// A point in a stream's work that other streams and the host can wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuEvent(pub usize);

/// A kernel ready to launch on this GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function(pub usize);

/// What a failed call was and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub call: &'static str,
    pub reason: String,
}

impl Error {
    pub fn new(call: &'static str, reason: impl Into<String>) -> Error {
        Error { call, reason: reason.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.call, self.reason)
    }
}

/// What a GPU call gives: its value or what failed. (Not named `Result`: the signature check
/// reads the crate as one file, where that name would shadow std's.)
pub type GpuResult<T> = std::result::Result<T, Error>;

/// What a device is, asked once when it is found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// The device's name, as ggml describes a CUDA device.
    pub name: String,
    /// The PCI bus id in lower case ("0000:01:00.0"), ggml's device id.
    pub pci_bus_id: String,
    /// Compute capability as major * 10 + minor (86 for sm_86).
    pub compute_capability: u32,
    /// An integrated GPU shares the host's memory.
    pub integrated: bool,
    pub total_memory: usize,
}

/// A kernel of `src/cuda/kernels`: the source file's stem and the kernel's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    pub source: &'static str,
    pub name: &'static str,
}

/// The element type of a matrix in a [`Gemm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmType {
    F32,
    F16,
    BF16,
}

impl GemmType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            GemmType::F32 => 4,
            GemmType::F16 | GemmType::BF16 => 2,
        }
    }
}

/// `d[b] = a[b]ᵀ · x[b]` in cuBLAS's column-major terms, for `batch` products whose matrices
/// are `stride_*` elements apart: `a` is k × m (each of the m weight rows is k values, rows
/// `lda` apart), `x` is k × n (columns `ldx` apart) and `d` is m × n F32 (columns `ldd` apart).
/// This is ggml's MUL_MAT of contiguous rows, the only shape the backend asks for.
#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: DevicePtr,
    pub a_type: GemmType,
    pub lda: usize,
    pub stride_a: usize,
    pub x: DevicePtr,
    pub x_type: GemmType,
    pub ldx: usize,
    pub stride_x: usize,
    pub d: DevicePtr,
    pub ldd: usize,
    pub stride_d: usize,
    pub batch: usize,
}

/// One GPU. Calls that take a stream enqueue work and may return before it is done; memory
/// passed to them must stay valid until the stream is synchronized.
pub trait Gpu: Send + Sync {
    fn info(&self) -> &Info;

    /// `(free, total)` bytes of device memory.
    fn memory(&self) -> GpuResult<(usize, usize)>;

    fn alloc(&self, bytes: usize) -> GpuResult<DevicePtr>;
    /// # Safety
    /// `ptr` came from [`Gpu::alloc`] and no queued work uses it any more.
    unsafe fn free(&self, ptr: DevicePtr);

    /// Page-locked host memory, which copies can read and write without staging.
    fn alloc_host(&self, bytes: usize) -> GpuResult<*mut u8>;
    /// # Safety
    /// `ptr` came from [`Gpu::alloc_host`] and no queued work uses it any more.
    unsafe fn free_host(&self, ptr: *mut u8);
    /// Page-locks existing host memory.
    ///
    /// # Safety
    /// `ptr` is valid for `bytes` bytes until it is unregistered.
    unsafe fn register_host(&self, ptr: *mut u8, bytes: usize) -> GpuResult<()>;
    /// # Safety
    /// `ptr` was registered by [`Gpu::register_host`].
    unsafe fn unregister_host(&self, ptr: *mut u8);

    fn stream_new(&self) -> GpuResult<Stream>;
    /// # Safety
    /// `stream` came from [`Gpu::stream_new`] and is not used again.
    unsafe fn stream_free(&self, stream: Stream);
    /// Waits until everything queued on `stream` has finished.
    fn synchronize(&self, stream: Stream) -> GpuResult<()>;

    /// # Safety
    /// `src` is readable for `bytes` bytes and `dst` is device memory of that size, both until
    /// the stream has done the copy.
    unsafe fn upload(&self, stream: Stream, dst: DevicePtr, src: *const u8, bytes: usize) -> GpuResult<()>;
    /// # Safety
    /// As [`Gpu::upload`], with `dst` host memory writable for `bytes` bytes.
    unsafe fn download(&self, stream: Stream, dst: *mut u8, src: DevicePtr, bytes: usize) -> GpuResult<()>;
    /// A copy within this GPU's memory or from a peer's (addresses are unified).
    ///
    /// # Safety
    /// Both ranges are device memory of `bytes` bytes.
    unsafe fn copy(&self, stream: Stream, dst: DevicePtr, src: DevicePtr, bytes: usize) -> GpuResult<()>;
    /// # Safety
    /// `dst` is device memory of `bytes` bytes.
    unsafe fn memset(&self, stream: Stream, dst: DevicePtr, value: u8, bytes: usize) -> GpuResult<()>;

    fn event_new(&self) -> GpuResult<GpuEvent>;
    /// # Safety
    /// `event` came from [`Gpu::event_new`] and is not used again.
    unsafe fn event_free(&self, event: GpuEvent);
    /// Marks the point in `stream` that `event` stands for.
    fn event_record(&self, event: GpuEvent, stream: Stream) -> GpuResult<()>;
    /// Makes work queued on `stream` after this call wait for `event`.
    fn stream_wait(&self, stream: Stream, event: GpuEvent) -> GpuResult<()>;
    /// Waits on the host until `event` has happened.
    fn event_synchronize(&self, event: GpuEvent) -> GpuResult<()>;

    /// The kernel, compiled for this GPU on first use.
    fn function(&self, kernel: Kernel) -> GpuResult<Function>;
    /// Queues `function` on `grid` blocks of `block` threads.
    ///
    /// # Safety
    /// `args` holds a pointer to a value of each of the kernel's parameter types, in order; every
    /// device address among them is valid for what the kernel does with it.
    unsafe fn launch(
        &self,
        stream: Stream,
        function: Function,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> GpuResult<()>;

    /// Whether [`Gpu::gemm`] can run here (a GPU needs cuBLAS for it); without it the backend
    /// multiplies batches with kernels of its own.
    fn has_gemm(&self) -> bool;

    /// Queues a batch of products with cuBLAS's semantics.
    ///
    /// # Safety
    /// Every matrix the description names lies in device memory.
    unsafe fn gemm(&self, stream: Stream, gemm: &Gemm) -> GpuResult<()>;
}
