//! The CPU buffer types: "CPU", host memory this library allocates, and "CPU_Mapped", host
//! memory a caller hands over (`ggml_backend_cpu_buffer_from_ptr`, e.g. a memory-mapped
//! model file), which is never freed here. Both are defined in the base library so that every
//! backend can use them; their `device` stays NULL until a CPU device registers itself.

use std::ffi::{c_char, c_void};

use super::buffer::{BufferPtr, BufferTypePtr, StaticBufferType};
use super::interface::{Buffer, BufferInterface, BufferType, BufferTypeInterface};
use crate::core::tensor::Tensor;

/// Alignment of tensor data in CPU buffers (ggml's `TENSOR_ALIGNMENT`).
pub const TENSOR_ALIGNMENT: usize = 32;
/// Alignment of the memory the CPU buffer type allocates (as ggml's aligned malloc: a cache line).
const HOST_ALLOC_ALIGNMENT: usize = 64;
/// The size of a transparent huge page (x86-64, and the common arm64 configuration).
const HUGE_PAGE: usize = 2 << 20;
/// Buffers from this size on start on a huge page and ask for huge pages.
const HUGE_PAGE_BUFFER: usize = 16 * HUGE_PAGE;

/// The tensor behind a pointer a buffer table entry received (of any CPU buffer type).
pub(crate) fn tensor_ref<'a>(tensor: *const Tensor) -> &'a Tensor {
    // SAFETY: ggml's dispatch only calls these entries with live tensors.
    match unsafe { tensor.as_ref() } {
        Some(t) => t,
        None => crate::ggml_abort!("NULL tensor passed to a CPU buffer"),
    }
}

fn buffer_ref<'a>(buffer: *mut Buffer) -> &'a Buffer {
    // SAFETY: ggml calls a buffer's entries with that live buffer.
    match unsafe { buffer.as_ref() } {
        Some(b) => b,
        None => crate::ggml_abort!("NULL CPU buffer"),
    }
}

unsafe extern "C" fn cpu_buffer_get_base(buffer: *mut Buffer) -> *mut c_void {
    let data = buffer_ref(buffer).context;
    let misalign = (data as usize).wrapping_neg() % TENSOR_ALIGNMENT;
    data.cast::<u8>().wrapping_add(misalign).cast()
}

unsafe extern "C" fn cpu_buffer_free(buffer: *mut Buffer) {
    // SAFETY: the context of a buffer from `cpu_buffer_type_alloc_buffer` is memory from
    // posix_memalign, released once, when the buffer is freed.
    unsafe { libc::free(buffer_ref(buffer).context) };
}

unsafe extern "C" fn cpu_buffer_memset_tensor(
    _buffer: *mut Buffer,
    tensor: *mut Tensor,
    value: u8,
    offset: usize,
    size: usize,
) {
    let t = tensor_ref(tensor);
    // SAFETY: the dispatcher checked that offset + size lies inside the allocated tensor, whose
    // data is a host address.
    unsafe { std::ptr::write_bytes(t.data.cast::<u8>().add(offset), value, size) };
}

unsafe extern "C" fn cpu_buffer_set_tensor(
    _buffer: *mut Buffer,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    let t = tensor_ref(tensor);
    // SAFETY: as in memset; `data` holds `size` readable bytes (the caller's contract), and
    // ggml requires the two ranges not to overlap, as memcpy does.
    unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), t.data.cast::<u8>().add(offset), size) };
}

unsafe extern "C" fn cpu_buffer_get_tensor(
    _buffer: *mut Buffer,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    let t = tensor_ref(tensor);
    // SAFETY: as in set, with `data` writable.
    unsafe { std::ptr::copy_nonoverlapping(t.data.cast::<u8>().add(offset), data.cast::<u8>(), size) };
}

unsafe extern "C" fn cpu_buffer_cpy_tensor(_buffer: *mut Buffer, src: *const Tensor, dst: *mut Tensor) -> bool {
    let (src, dst) = (tensor_ref(src), tensor_ref(dst));
    // SAFETY: a tensor's buffer is null or a live buffer.
    let Some(src_buf) = (unsafe { BufferPtr::from_raw(src.buffer.cast()) }) else {
        crate::ggml_abort!("source tensor {} has no buffer", src.name())
    };
    if !src_buf.is_host() {
        return false;
    }
    // SAFETY: both tensors are allocated host tensors of the same layout (checked by
    // ggml_backend_tensor_copy), so nbytes(src) bytes are readable at src and writable at dst.
    unsafe { std::ptr::copy_nonoverlapping(src.data.cast::<u8>(), dst.data.cast::<u8>(), src.nbytes()) };
    true
}

unsafe extern "C" fn cpu_buffer_clear(buffer: *mut Buffer, value: u8) {
    let b = buffer_ref(buffer);
    // SAFETY: a CPU buffer's context is the start of `size` bytes of host memory it covers.
    unsafe { std::ptr::write_bytes(b.context.cast::<u8>(), value, b.size) };
}

/// The table of buffers whose memory this library allocated (freed with the buffer).
const CPU_BUFFER_IFACE: BufferInterface = BufferInterface {
    free_buffer: Some(cpu_buffer_free),
    get_base: Some(cpu_buffer_get_base),
    init_tensor: None,
    memset_tensor: Some(cpu_buffer_memset_tensor),
    set_tensor: Some(cpu_buffer_set_tensor),
    get_tensor: Some(cpu_buffer_get_tensor),
    set_tensor_2d: None,
    get_tensor_2d: None,
    cpy_tensor: Some(cpu_buffer_cpy_tensor),
    clear: Some(cpu_buffer_clear),
    reset: None,
};

/// The table of buffers over caller-owned memory: the same, but nothing to free.
const CPU_BUFFER_FROM_PTR_IFACE: BufferInterface = BufferInterface { free_buffer: None, ..CPU_BUFFER_IFACE };

unsafe extern "C" fn cpu_buffer_type_get_name(_buft: *mut BufferType) -> *const c_char {
    c"CPU".as_ptr()
}

unsafe extern "C" fn cpu_mapped_buffer_type_get_name(_buft: *mut BufferType) -> *const c_char {
    c"CPU_Mapped".as_ptr()
}

/// Allocates `size` bytes of host memory as a buffer of type `buft`; NULL (after logging) when
/// the memory is not available. Usable as the `alloc_buffer` of any host buffer type.
///
/// # Safety
/// `buft` must be null or a buffer type that outlives the buffer.
pub unsafe extern "C" fn cpu_buffer_type_alloc_buffer(buft: *mut BufferType, size: usize) -> *mut Buffer {
    let mut data: *mut c_void = std::ptr::null_mut();
    let huge = size >= HUGE_PAGE_BUFFER;
    let align = if huge { HUGE_PAGE } else { HOST_ALLOC_ALIGNMENT };
    // SAFETY: posix_memalign writes through a valid out pointer; the alignment is a power of
    // two and a multiple of the pointer size.
    let rc = if size == 0 { libc::EINVAL } else { unsafe { libc::posix_memalign(&mut data, align, size) } };
    if rc != 0 || data.is_null() {
        crate::log_error!("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size {}\n", size);
        return std::ptr::null_mut();
    }
    if huge {
        // Weights streamed from memory cross a 4 KiB page every few hundred nanoseconds; in
        // 2 MiB pages the translations stay in the TLB. Only advice: where transparent huge
        // pages are off, nothing changes.
        // SAFETY: the range lies inside the allocation just made (its start is page aligned).
        unsafe { libc::madvise(data, size / HUGE_PAGE * HUGE_PAGE, libc::MADV_HUGEPAGE) };
    }
    BufferPtr::new(buft, CPU_BUFFER_IFACE, data, size).as_ptr()
}

/// Whether a buffer type is host memory: yes, as an entry of a host buffer type's table.
pub extern "C" fn cpu_buffer_type_is_host(_buft: *mut BufferType) -> bool {
    true
}

static CPU_BUFFER_TYPE: StaticBufferType = StaticBufferType::new(
    BufferTypeInterface {
        get_name: Some(cpu_buffer_type_get_name),
        alloc_buffer: Some(cpu_buffer_type_alloc_buffer),
        get_alignment: Some(host_alignment),
        get_max_size: None,
        get_alloc_size: None,
        is_host: Some(cpu_buffer_type_is_host),
    },
    std::ptr::null_mut(),
);

static CPU_MAPPED_BUFFER_TYPE: StaticBufferType = StaticBufferType::new(
    BufferTypeInterface {
        get_name: Some(cpu_mapped_buffer_type_get_name),
        alloc_buffer: Some(cpu_buffer_type_alloc_buffer),
        get_alignment: Some(host_alignment),
        get_max_size: None,
        get_alloc_size: None,
        is_host: Some(cpu_buffer_type_is_host),
    },
    std::ptr::null_mut(),
);

/// A buffer of type `buft` over `size` bytes of host memory at `ptr` that another library
/// allocated (a device backend's page-locked memory, say): the CPU buffer's operations, with
/// `free` releasing the memory when the buffer is freed. `free` finds the memory as the
/// buffer's `context`.
pub fn host_buffer_freed_by(
    buft: *mut BufferType,
    ptr: *mut c_void,
    size: usize,
    free: unsafe extern "C" fn(*mut Buffer),
) -> BufferPtr {
    BufferPtr::new(buft, BufferInterface { free_buffer: Some(free), ..CPU_BUFFER_IFACE }, ptr, size)
}

/// The alignment of tensor data in host buffers, as an entry of a buffer type's table.
pub extern "C" fn host_alignment(_buft: *mut BufferType) -> usize {
    TENSOR_ALIGNMENT
}

/// The "CPU" buffer type: host memory, 32-byte aligned tensors, no size limit.
pub fn cpu_buffer_type() -> BufferTypePtr {
    CPU_BUFFER_TYPE.handle()
}

/// A "CPU_Mapped" buffer over `size` bytes at `ptr`, which must be 32-byte aligned and stay
/// valid (and owned by the caller) for the buffer's lifetime.
pub fn cpu_buffer_from_ptr(ptr: *mut c_void, size: usize) -> BufferPtr {
    crate::ggml_assert!((ptr as usize).is_multiple_of(TENSOR_ALIGNMENT), "buffer pointer must be aligned");
    BufferPtr::new(CPU_MAPPED_BUFFER_TYPE.as_ptr(), CPU_BUFFER_FROM_PTR_IFACE, ptr, size)
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
