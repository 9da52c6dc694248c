//! The CPU buffer types: "CPU", host memory this library allocates, and "CPU_Mapped", host
//! memory a caller hands over (`ggml_backend_cpu_buffer_from_ptr`, e.g. a memory-mapped
//! model file), which is never freed here. Both are defined in the base library so that every
//! backend can use them; their `device` stays NULL, as in ggml. [`HostBuffer`] is their buffer,
//! which other host buffer types (page-locked memory, the repacked weights) build on.

use std::ffi::{CStr, c_void};
use std::ptr::NonNull;

use super::adapter::{StaticBufferType, new_buffer};
use super::buffer::{BufferPtr, BufferTypePtr};
use super::traits::{Buffer, BufferType};
use crate::core::tensor::TensorPtr;

/// Alignment of tensor data in CPU buffers (ggml's `TENSOR_ALIGNMENT`).
pub const TENSOR_ALIGNMENT: usize = 32;
/// Alignment of the memory the CPU buffer type allocates (as ggml's aligned malloc: a cache line).
const HOST_ALLOC_ALIGNMENT: usize = 64;
/// The size of a transparent huge page (x86-64, and the common arm64 configuration).
const HUGE_PAGE: usize = 2 << 20;
/// Buffers from this size on start on a huge page and ask for huge pages.
const HUGE_PAGE_BUFFER: usize = 16 * HUGE_PAGE;

/// Who releases a host buffer's memory when the buffer is freed.
pub enum Owner {
    /// This library, which got it from `posix_memalign`.
    Allocated,
    /// The caller, who lent it (nothing to release).
    Caller,
    /// Another library (a device's page-locked memory), which this releases it to.
    Other(Box<dyn Fn(*mut c_void)>),
}

/// `size` bytes of host memory at `data`, tensors placed from its first aligned address.
pub struct HostBuffer {
    data: *mut c_void,
    size: usize,
    owner: Owner,
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        match &self.owner {
            // SAFETY: memory from posix_memalign, released once, with the buffer.
            Owner::Allocated => unsafe { libc::free(self.data) },
            Owner::Caller => {}
            Owner::Other(release) => release(self.data),
        }
    }
}

impl HostBuffer {
    /// `size` bytes of new host memory; `None` (logged) when it is not available.
    pub fn alloc(size: usize) -> Option<HostBuffer> {
        let mut data: *mut c_void = std::ptr::null_mut();
        let huge = size >= HUGE_PAGE_BUFFER;
        let align = if huge { HUGE_PAGE } else { HOST_ALLOC_ALIGNMENT };
        // SAFETY: posix_memalign writes through a valid out pointer; the alignment is a power
        // of two and a multiple of the pointer size.
        let rc = if size == 0 { libc::EINVAL } else { unsafe { libc::posix_memalign(&mut data, align, size) } };
        if rc != 0 || data.is_null() {
            crate::log_error!(
                "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size {}\n",
                size
            );
            return None;
        }
        if huge {
            // Weights streamed from memory cross a 4 KiB page every few hundred nanoseconds; in
            // 2 MiB pages the translations stay in the TLB. Only advice: where transparent huge
            // pages are off, nothing changes.
            // SAFETY: the range lies inside the allocation just made (its start is page aligned).
            unsafe { libc::madvise(data, size / HUGE_PAGE * HUGE_PAGE, libc::MADV_HUGEPAGE) };
        }
        Some(HostBuffer { data, size, owner: Owner::Allocated })
    }

    /// The `size` bytes at `data`, which `owner` releases.
    pub fn over(data: *mut c_void, size: usize, owner: Owner) -> HostBuffer {
        HostBuffer { data, size, owner }
    }
}

/// `t`'s data from `offset`: the host address the dispatch checked the range of.
fn at(t: TensorPtr, offset: usize) -> *mut u8 {
    t.data.cast::<u8>().wrapping_add(offset)
}

impl Buffer for HostBuffer {
    fn get_base(&self) -> Option<NonNull<c_void>> {
        let misalign = (self.data as usize).wrapping_neg() % TENSOR_ALIGNMENT;
        NonNull::new(self.data.cast::<u8>().wrapping_add(misalign).cast())
    }

    fn memset_tensor(&self, tensor: TensorPtr, value: u8, offset: usize, size: usize) {
        // SAFETY: the dispatch checked that offset + size lies inside the allocated tensor,
        // whose data is a host address.
        unsafe { std::ptr::write_bytes(at(tensor, offset), value, size) };
    }

    fn set_tensor(&self, tensor: TensorPtr, data: &[u8], offset: usize) {
        // SAFETY: as in memset; ggml requires the two ranges not to overlap, as memcpy does.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), at(tensor, offset), data.len()) };
    }

    fn get_tensor(&self, tensor: TensorPtr, data: &mut [u8], offset: usize) {
        // SAFETY: as in set, the other way.
        unsafe { std::ptr::copy_nonoverlapping(at(tensor, offset), data.as_mut_ptr(), data.len()) };
    }

    fn cpy_tensor(&self, src: TensorPtr, dst: TensorPtr) -> bool {
        // SAFETY: a tensor's buffer is null or a live buffer.
        let Some(src_buf) = (unsafe { BufferPtr::from_raw(src.buffer.cast()) }) else {
            crate::ggml_abort!("source tensor {} has no buffer", src.name())
        };
        if !src_buf.is_host() {
            return false;
        }
        // SAFETY: both tensors are allocated host tensors of the same layout (checked by
        // ggml_backend_tensor_copy), so nbytes(src) bytes are readable at src and writable at
        // dst.
        unsafe { std::ptr::copy_nonoverlapping(at(src, 0), at(dst, 0), src.nbytes()) };
        true
    }

    fn clear(&self, value: u8) {
        // SAFETY: the buffer covers `size` bytes of host memory from `data`.
        unsafe { std::ptr::write_bytes(self.data.cast::<u8>(), value, self.size) };
    }
}

/// `size` bytes of new host memory as a buffer of type `buft`; `None` (logged) when the
/// memory is not available. The `alloc_buffer` of any host buffer type.
pub fn alloc_host_buffer(buft: BufferTypePtr, size: usize) -> Option<BufferPtr> {
    HostBuffer::alloc(size).map(|b| new_buffer(buft, size, Box::new(b)))
}

/// A buffer of type `buft` over `size` bytes of host memory at `ptr` that another library
/// allocated (a device backend's page-locked memory, say), released by `release` when the
/// buffer is freed.
pub fn host_buffer_freed_by(
    buft: BufferTypePtr,
    ptr: *mut c_void,
    size: usize,
    release: Box<dyn Fn(*mut c_void)>,
) -> BufferPtr {
    new_buffer(buft, size, Box::new(HostBuffer::over(ptr, size, Owner::Other(release))))
}

/// The CPU buffer types: host memory, 32-byte aligned tensors, no size limit.
struct CpuBufferType {
    name: &'static CStr,
}

impl BufferType for CpuBufferType {
    fn get_name(&self) -> &CStr {
        self.name
    }

    fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
        alloc_host_buffer(this, size)
    }

    fn get_alignment(&self) -> usize {
        TENSOR_ALIGNMENT
    }

    fn is_host(&self) -> bool {
        true
    }
}

static CPU: &dyn BufferType = &CpuBufferType { name: c"CPU" };
static CPU_MAPPED: &dyn BufferType = &CpuBufferType { name: c"CPU_Mapped" };
static CPU_BUFFER_TYPE: StaticBufferType = StaticBufferType::new(&CPU);
static CPU_MAPPED_BUFFER_TYPE: StaticBufferType = StaticBufferType::new(&CPU_MAPPED);

/// The "CPU" buffer type.
pub fn cpu_buffer_type() -> BufferTypePtr {
    CPU_BUFFER_TYPE.handle()
}

/// A "CPU_Mapped" buffer over `size` bytes at `ptr`, which must be 32-byte aligned and stay
/// valid (and owned by the caller) for the buffer's lifetime.
pub fn cpu_buffer_from_ptr(ptr: *mut c_void, size: usize) -> BufferPtr {
    crate::ggml_assert!((ptr as usize).is_multiple_of(TENSOR_ALIGNMENT), "buffer pointer must be aligned");
    new_buffer(CPU_MAPPED_BUFFER_TYPE.handle(), size, Box::new(HostBuffer::over(ptr, size, Owner::Caller)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::interface::BufferUsage;

    #[test]
    fn cpu_buffers_are_aligned_host_memory() {
        let t = cpu_buffer_type();
        assert_eq!(t.name_lossy(), "CPU");
        assert_eq!(t.alignment(), 32);
        assert_eq!(t.max_size(), usize::MAX);
        assert!(t.is_host());
        assert!(t.device().is_null());
        let b = t.alloc_buffer(100).unwrap();
        assert_eq!(b.size(), 100);
        assert!((b.base() as usize).is_multiple_of(32));
        assert_eq!(b.usage(), BufferUsage::ANY);
        b.clear(0x5A);
        // SAFETY: the buffer covers 100 bytes from its base.
        let bytes = unsafe { std::slice::from_raw_parts(b.base().cast::<u8>(), 100) };
        assert!(bytes.iter().all(|&x| x == 0x5A));
        b.free();
    }

    #[test]
    fn buffers_from_pointers_use_the_callers_memory() {
        #[repr(align(32))]
        struct Aligned([u8; 64]);
        let mut mem = Aligned([0; 64]);
        let b = cpu_buffer_from_ptr(mem.0.as_mut_ptr().cast(), 64);
        assert_eq!(b.base(), mem.0.as_mut_ptr().cast());
        assert_eq!(b.buft().name_lossy(), "CPU_Mapped");
        assert!(b.is_host());
        b.clear(3);
        b.free();
        assert!(mem.0.iter().all(|&x| x == 3));
    }
}
