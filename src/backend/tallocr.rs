//! The linear tensor allocator (`struct ggml_tallocr`): places tensors one after another in a
//! buffer, each at the buffer type's alignment. And, built on it, the allocation of every
//! tensor of a context into as few buffers as the buffer type's size limit allows.

use std::ffi::c_void;

use super::buffer::{self, BufferPtr, BufferTypePtr};
use super::interface::Buffer;
use super::multi_buffer::multi_buffer_new;
use crate::core::context::{Context, pad};
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;

/// `struct ggml_tallocr`, returned by value to C.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Tallocr {
    pub buffer: *mut Buffer,
    pub base: *mut c_void,
    pub alignment: usize,
    pub offset: usize,
}

const _: () = assert!(std::mem::size_of::<Tallocr>() == 32);
const _: () = assert!(std::mem::offset_of!(Tallocr, offset) == 24);

/// `offset` moved up so that `base + offset` is a multiple of `alignment` (a power of two).
fn aligned_offset(base: *const c_void, offset: usize, alignment: usize) -> usize {
    let addr = (base as usize).wrapping_add(offset);
    offset + (addr.wrapping_neg() & (alignment - 1))
}

impl Tallocr {
    pub fn new(buffer: BufferPtr) -> Tallocr {
        let base = buffer.base();
        let alignment = buffer.alignment();
        crate::ggml_assert!(alignment.is_power_of_two(), "buffer alignment {} is not a power of two", alignment);
        Tallocr { buffer: buffer.as_ptr(), base, alignment, offset: aligned_offset(base, 0, alignment) }
    }

    fn buffer(&self) -> BufferPtr {
        // SAFETY: a tallocr is made for a live buffer and used while that buffer lives.
        match unsafe { BufferPtr::from_raw(self.buffer) } {
            Some(b) => b,
            None => crate::ggml_abort!("tensor allocator has no buffer"),
        }
    }

    /// Places `tensor` at the next aligned offset; aborts when the buffer is full.
    pub fn alloc(&mut self, tensor: TensorPtr) -> Status {
        let buffer = self.buffer();
        let size = pad(buffer.alloc_size(tensor), self.alignment);
        let available = buffer.size().saturating_sub(self.offset);
        if size > available {
            crate::log_error!(
                "ggml_tallocr_alloc: not enough space in the buffer to allocate {} (needed {}, available {})\n",
                tensor.name(),
                size,
                available
            );
            crate::ggml_abort!("not enough space in the buffer");
        }
        let addr = buffer.base().cast::<u8>().wrapping_add(self.offset).cast::<c_void>();
        self.offset += size;
        buffer::tensor_alloc(buffer, tensor, addr)
    }
}

/// Allocates one buffer of `size` bytes and places `tensors` in it: unallocated tensors get
/// space, views of allocated tensors are initialised. On failure, every buffer in `buffers`
/// (this one included) is freed.
fn alloc_tensor_range(tensors: &[TensorPtr], buft: BufferTypePtr, size: usize, buffers: &mut Vec<BufferPtr>) -> bool {
    let Some(buffer) = buft.alloc_buffer(size) else {
        crate::log_error!("alloc_tensor_range: failed to allocate {} buffer of size {}\n", buft.name_lossy(), size);
        free_all(buffers);
        return false;
    };
    buffers.push(buffer);
    let mut tallocr = Tallocr::new(buffer);
    for &t in tensors {
        let status = match (t.data.is_null(), t.view_src.is_null(), t.buffer.is_null()) {
            (true, true, _) => tallocr.alloc(t),
            (_, false, true) => buffer::view_init(t),
            _ => Status::SUCCESS,
        };
        if status != Status::SUCCESS {
            crate::log_error!("alloc_tensor_range: failed to initialize tensor {}\n", t.name());
            free_all(buffers);
            return false;
        }
    }
    true
}

fn free_all(buffers: &mut Vec<BufferPtr>) {
    for b in buffers.drain(..) {
        b.free();
    }
}

/// Walks the context's tensors, grouping them into runs that fit under the buffer type's
/// maximum size (a tensor larger than the limit gets a buffer of its own). Returns the total
/// bytes and, when `allocate`, the buffers with the tensors placed (`Err` if one failed).
fn alloc_ctx_tensors_impl(ctx: &Context, buft: BufferTypePtr, allocate: bool) -> Result<(usize, Vec<BufferPtr>), ()> {
    crate::ggml_assert!(ctx.no_alloc, "the context must be created with no_alloc = true");
    let alignment = buft.alignment();
    let max_size = buft.max_size();
    let tensors: Vec<TensorPtr> = ctx.tensors().collect();

    let mut buffers = Vec::new();
    let mut total = 0usize;
    let mut first = 0usize;
    let mut cur_size = 0usize;
    for (i, &t) in tensors.iter().enumerate() {
        let this_size = if t.data.is_null() && t.view_src.is_null() { pad(buft.alloc_size(t), alignment) } else { 0 };
        if cur_size > 0 && cur_size.saturating_add(this_size) > max_size {
            if allocate && !alloc_tensor_range(&tensors[first..i], buft, cur_size, &mut buffers) {
                return Err(());
            }
            first = i;
            total += cur_size;
            cur_size = this_size;
        } else {
            cur_size += this_size;
        }
    }
    if cur_size > 0 {
        total += cur_size;
        if allocate && !alloc_tensor_range(&tensors[first..], buft, cur_size, &mut buffers) {
            return Err(());
        }
    }
    Ok((total, buffers))
}

/// The bytes `alloc_ctx_tensors` would allocate for the context's unallocated tensors.
pub fn alloc_ctx_tensors_size(ctx: &Context, buft: BufferTypePtr) -> usize {
    match alloc_ctx_tensors_impl(ctx, buft, false) {
        Ok((total, buffers)) => {
            crate::ggml_assert!(buffers.is_empty(), "sizing allocated buffers");
            total
        }
        Err(()) => crate::ggml_abort!("sizing the context's tensors failed"),
    }
}

/// Allocates every unallocated tensor of a `no_alloc` context in buffers of type `buft` and
/// initialises its views. One buffer normally; a multi-buffer when the tensors exceed the
/// type's maximum size. `None` when nothing needed memory or an allocation failed.
pub fn alloc_ctx_tensors(ctx: &Context, buft: BufferTypePtr) -> Option<BufferPtr> {
    if let Some(placed) = buft.alloc_ctx_tensors(ctx) {
        return Some(placed);
    }
    let (_, buffers) = alloc_ctx_tensors_impl(ctx, buft, true).ok()?;
    match buffers.len() {
        0 => None,
        1 => Some(buffers[0]),
        _ => Some(multi_buffer_new(&buffers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::adapter::StaticBufferType;
    use crate::backend::buffer::{tensor_get, tensor_set};
    use crate::backend::host_buffer::{alloc_host_buffer, cpu_buffer_type};
    use crate::backend::interface::BufferUsage;
    use crate::backend::traits::BufferType;
    use crate::core::context::InitParams;
    use crate::core::types::Type;
    use std::ffi::CStr;

    fn ctx(no_alloc: bool) -> Box<Context> {
        Context::new(InitParams { mem_size: 64 * 1024, mem_buffer: std::ptr::null_mut(), no_alloc })
    }

    #[test]
    fn tallocr_places_tensors_at_aligned_offsets() {
        let mut c = ctx(true);
        let a = c.new_tensor(Type::F32, &[3]); // 12 bytes -> 32
        let b = c.new_tensor(Type::F32, &[10]); // 40 bytes -> 64
        let buf = cpu_buffer_type().alloc_buffer(128).unwrap();
        let mut ta = Tallocr::new(buf);
        assert_eq!((ta.alignment, ta.offset, ta.base), (32, 0, buf.base()));
        assert_eq!(ta.alloc(a), Status::SUCCESS);
        assert_eq!(ta.alloc(b), Status::SUCCESS);
        assert_eq!(a.data, buf.base());
        assert_eq!(b.data as usize - buf.base() as usize, 32);
        assert_eq!(ta.offset, 96);
        assert_eq!(a.buffer, buf.as_ptr().cast());
        buf.free();
    }

    #[test]
    fn aligned_offset_rounds_up_from_the_address() {
        let base = 0x1008 as *const c_void;
        assert_eq!(aligned_offset(base, 0, 32), 24);
        assert_eq!(aligned_offset(base, 24, 32), 24);
        assert_eq!(aligned_offset(base, 25, 32), 56);
    }

    #[test]
    fn context_tensors_fit_in_one_buffer() {
        let mut c = ctx(true);
        let a = c.new_tensor(Type::F32, &[4]);
        let w = c.new_tensor(Type::F32, &[100]);
        let v = c.new_tensor_impl(Type::F32, &[2], Some(w), 16);
        assert_eq!(alloc_ctx_tensors_size(&c, cpu_buffer_type()), 32 + 416);
        let buf = alloc_ctx_tensors(&c, cpu_buffer_type()).unwrap();
        assert!(!buf.is_multi_buffer());
        assert_eq!(buf.size(), 448);
        assert!(!a.data.is_null() && !w.data.is_null());
        assert_eq!(v.data as usize, w.data as usize + 16);
        assert_eq!(v.buffer, w.buffer);
        tensor_set(v, &[1, 2, 3, 4], 0);
        let mut back = [0u8; 4];
        tensor_get(w, &mut back, 16);
        assert_eq!(back, [1, 2, 3, 4]);
        // Everything is allocated now: nothing more to do.
        assert_eq!(alloc_ctx_tensors_size(&c, cpu_buffer_type()), 0);
        assert!(alloc_ctx_tensors(&c, cpu_buffer_type()).is_none());
        buf.free();
    }

    /// A host buffer type that allocates at most 256 bytes per buffer, 64-byte aligned.
    struct Small;

    impl BufferType for Small {
        fn get_name(&self) -> &CStr {
            c"SMALL"
        }
        fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
            alloc_host_buffer(this, size)
        }
        fn get_alignment(&self) -> usize {
            64
        }
        fn get_max_size(&self) -> usize {
            256
        }
        fn is_host(&self) -> bool {
            true
        }
    }

    static SMALL_TYPE: &dyn BufferType = &Small;
    static SMALL: StaticBufferType = StaticBufferType::new(&SMALL_TYPE);

    #[test]
    fn tensors_over_the_max_size_split_into_a_multi_buffer() {
        let small = SMALL.handle();
        let mut c = ctx(true);
        let t: Vec<TensorPtr> = [20, 30, 100, 10].iter().map(|&n| c.new_tensor(Type::F32, &[n])).collect();
        // Padded to 64: 128 + 128 | 448 | 64. The 400-byte tensor exceeds the limit and gets a
        // buffer of its own.
        assert_eq!(alloc_ctx_tensors_size(&c, small), 256 + 448 + 64);
        let buf = alloc_ctx_tensors(&c, small).unwrap();
        assert!(buf.is_multi_buffer());
        assert_eq!(buf.size(), 256 + 448 + 64);
        assert_eq!(buf.buft(), small);
        assert!(t.iter().all(|x| !x.data.is_null() && (x.data as usize).is_multiple_of(64)));
        assert_eq!(t[0].buffer, t[1].buffer);
        assert_ne!(t[1].buffer, t[2].buffer);
        assert_ne!(t[2].buffer, t[3].buffer);
        assert_eq!(t[1].data as usize - t[0].data as usize, 128);
        buf.set_usage(BufferUsage::WEIGHTS);
        // SAFETY: tensors of a live buffer point to live buffers.
        let part = unsafe { BufferPtr::from_raw(t[3].buffer.cast()) }.unwrap();
        assert_eq!(part.usage(), BufferUsage::WEIGHTS);
        buf.free();
    }
}
