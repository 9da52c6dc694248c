//! `struct ggml_context`: a bump allocator over one memory pool holding tensors, graphs and
//! work buffers, each behind a small object header.
//!
//! The pool's accounting is part of the observable behaviour: programs size their contexts
//! with `ggml_tensor_overhead()` and `ggml_graph_overhead()` and check `ggml_used_mem()`, so
//! the header size, the 16-byte rounding and the placement of tensor data right after the
//! tensor struct are those of ggml 0.25.1.

use std::alloc::Layout;
use std::ffi::c_void;
use std::ptr::NonNull;

use super::op::Op;
use super::tensor::{MAX_DIMS, Tensor, TensorPtr};
use super::types::Type;

pub const MEM_ALIGN: usize = 16;
/// Alignment of pools that the context allocates itself (cache-line, as ggml's aligned malloc).
const POOL_ALIGN: usize = 64;

/// `enum ggml_object_type`.
#[repr(i32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ObjectType {
    Tensor = 0,
    Graph = 1,
    WorkBuffer = 2,
}

/// `struct ggml_object`: the header in front of every allocation in the pool.
#[repr(C)]
pub struct Object {
    pub offs: usize,
    pub size: usize,
    pub next: *mut Object,
    pub type_: ObjectType,
    padding: [u8; 4],
}

pub const OBJECT_SIZE: usize = std::mem::size_of::<Object>();
pub const TENSOR_SIZE: usize = std::mem::size_of::<Tensor>();
const _: () = assert!(OBJECT_SIZE == 32 && OBJECT_SIZE.is_multiple_of(MEM_ALIGN));
const _: () = assert!(TENSOR_SIZE.is_multiple_of(MEM_ALIGN));

/// `struct ggml_init_params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct InitParams {
    pub mem_size: usize,
    pub mem_buffer: *mut c_void,
    pub no_alloc: bool,
}

pub const fn pad(x: usize, n: usize) -> usize {
    (x + n - 1) & !(n - 1)
}

pub struct Context {
    mem_size: usize,
    mem_buffer: NonNull<u8>,
    mem_buffer_owned: bool,
    pub no_alloc: bool,
    n_objects: i32,
    objects_begin: *mut Object,
    objects_end: *mut Object,
}

impl Context {
    /// A context on the caller's memory or on a pool allocated here; aborts when the pool
    /// cannot be allocated (the internal users size theirs small).
    pub fn new(params: InitParams) -> Box<Context> {
        Context::try_new(params).unwrap_or_else(|e| crate::ggml_abort!("{e}"))
    }

    /// As [`Context::new`], with the reason when the pool cannot be allocated, for callers
    /// whose sizes come from outside (`ggml_init`, a GGUF file's tensor data).
    pub fn try_new(params: InitParams) -> Result<Box<Context>, String> {
        crate::core::time::init();
        // A zero-sized pool is allowed; it still gets one aligned unit.
        let requested = if params.mem_size == 0 { MEM_ALIGN } else { params.mem_size };
        let (mem_size, mem_buffer, owned) = match NonNull::new(params.mem_buffer.cast::<u8>()) {
            Some(buf) => (requested, buf, false),
            None => {
                let too_large = || format!("failed to allocate {:.2} MB for a context", requested as f64 / 1e6);
                let size = requested.checked_next_multiple_of(MEM_ALIGN).ok_or_else(too_large)?;
                let layout = Layout::from_size_align(size, POOL_ALIGN).map_err(|_| too_large())?;
                // SAFETY: the layout has a non-zero size.
                let ptr = unsafe { std::alloc::alloc(layout) };
                (size, NonNull::new(ptr).ok_or_else(too_large)?, true)
            }
        };
        crate::ggml_assert!(
            (mem_buffer.as_ptr() as usize).is_multiple_of(MEM_ALIGN),
            "context memory buffer must be {MEM_ALIGN}-byte aligned"
        );
        Ok(Box::new(Context {
            mem_size,
            mem_buffer,
            mem_buffer_owned: owned,
            no_alloc: params.no_alloc,
            n_objects: 0,
            objects_begin: std::ptr::null_mut(),
            objects_end: std::ptr::null_mut(),
        }))
    }

    /// Forgets every object; the pool is reused from its start.
    pub fn reset(&mut self) {
        self.n_objects = 0;
        self.objects_begin = std::ptr::null_mut();
        self.objects_end = std::ptr::null_mut();
    }

    pub fn mem_size(&self) -> usize {
        self.mem_size
    }

    pub fn mem_buffer(&self) -> *mut c_void {
        self.mem_buffer.as_ptr().cast()
    }

    pub fn used_mem(&self) -> usize {
        self.last_object().map_or(0, |o| o.offs + o.size)
    }

    fn last_object(&self) -> Option<&Object> {
        // SAFETY: objects_end is null or a header this context wrote inside its pool.
        unsafe { self.objects_end.as_ref() }
    }

    /// Reserves `size` bytes (rounded up to 16) behind a new object header and returns the
    /// address of those bytes. Aborts when the pool is full, naming both sizes.
    pub fn new_object(&mut self, type_: ObjectType, size: usize) -> NonNull<u8> {
        let cur_end = self.used_mem();
        let needed = size
            .checked_add(MEM_ALIGN - 1)
            .map(|s| s & !(MEM_ALIGN - 1))
            .and_then(|s| cur_end.checked_add(s).and_then(|e| e.checked_add(OBJECT_SIZE)).map(|_| s));
        let Some(size_needed) = needed else {
            crate::ggml_abort!("object of {size} bytes overflows the context's memory pool")
        };
        let total = cur_end + size_needed + OBJECT_SIZE;
        if total > self.mem_size {
            crate::log_warn!(
                "ggml_new_object: not enough space in the context's memory pool (needed {}, available {})\n",
                total,
                self.mem_size
            );
            crate::ggml_abort!(
                "not enough space in the context's memory pool (needed {total}, available {})",
                self.mem_size
            );
        }
        // SAFETY: cur_end + OBJECT_SIZE + size_needed <= mem_size (checked above), so the
        // header and the payload lie inside the pool; cur_end is a multiple of 16 and the pool
        // is 16-aligned, so the header is aligned for its 8-byte fields.
        unsafe {
            let base = self.mem_buffer.as_ptr();
            let obj = base.add(cur_end).cast::<Object>();
            obj.write(Object {
                offs: cur_end + OBJECT_SIZE,
                size: size_needed,
                next: std::ptr::null_mut(),
                type_,
                padding: [0; 4],
            });
            match self.objects_end.as_mut() {
                Some(last) => last.next = obj,
                None => self.objects_begin = obj,
            }
            self.objects_end = obj;
            NonNull::new_unchecked(base.add(cur_end + OBJECT_SIZE))
        }
    }

    /// The tensor constructor every other one goes through (`ggml_new_tensor_impl`): a view of
    /// a view becomes a view of the base tensor at the summed offset.
    pub fn new_tensor_impl(
        &mut self,
        type_: Type,
        ne: &[i64],
        view_src: Option<TensorPtr>,
        view_offs: usize,
    ) -> TensorPtr {
        crate::ggml_assert!(type_.is_valid(), "invalid tensor type {}", type_.0);
        crate::ggml_assert!((1..=MAX_DIMS).contains(&ne.len()), "tensors have 1 to 4 dimensions, not {}", ne.len());

        let (view_src, view_offs) = match view_src {
            Some(v) => match v.view_source() {
                Some(base) => (Some(base), view_offs + v.view_offs),
                None => (Some(v), view_offs),
            },
            None => (None, view_offs),
        };

        let mut data_size = type_.row_size(ne[0]);
        for &n in &ne[1..] {
            data_size = data_size.wrapping_mul(n as usize);
        }
        if let Some(src) = view_src {
            crate::ggml_assert!(
                data_size == 0 || data_size + view_offs <= src.nbytes(),
                "view of {} bytes at offset {} exceeds its source's {} bytes",
                data_size,
                view_offs,
                src.nbytes()
            );
        }

        let alloc_size = if view_src.is_none() && !self.no_alloc { data_size } else { 0 };
        let obj = self.new_object(ObjectType::Tensor, TENSOR_SIZE + alloc_size);
        let tensor = obj.cast::<Tensor>();

        let data: *mut c_void = if alloc_size > 0 {
            // SAFETY: the payload holds the tensor struct followed by its data.
            unsafe { obj.as_ptr().add(TENSOR_SIZE).cast() }
        } else {
            match view_src {
                // SAFETY: the offset stays within the source's data (asserted above).
                Some(src) if !src.data.is_null() => unsafe { src.data.cast::<u8>().add(view_offs).cast() },
                _ => std::ptr::null_mut(),
            }
        };

        let blck = type_.blck_size();
        let mut full_ne = [1i64; MAX_DIMS];
        full_ne[..ne.len()].copy_from_slice(ne);
        let mut nb = [0usize; MAX_DIMS];
        nb[0] = type_.type_size();
        nb[1] = nb[0].wrapping_mul((full_ne[0] / blck) as usize);
        for i in 2..MAX_DIMS {
            nb[i] = nb[i - 1].wrapping_mul(full_ne[i - 1] as usize);
        }

        // SAFETY: the object payload is TENSOR_SIZE bytes, 16-aligned, owned by this tensor.
        unsafe {
            tensor.as_ptr().write(Tensor {
                type_,
                buffer: std::ptr::null_mut(),
                ne: full_ne,
                nb,
                op: Op::NONE,
                op_params: [0; 16],
                flags: 0,
                src: [std::ptr::null_mut(); 10],
                view_src: view_src.map_or(std::ptr::null_mut(), TensorPtr::as_ptr),
                view_offs,
                data,
                name: [0; 64],
                extra: std::ptr::null_mut(),
                padding: [0; 8],
            });
        }
        self.n_objects += 1;
        // SAFETY: just written, lives as long as the context's pool.
        unsafe { TensorPtr::new(tensor) }
    }

    pub fn new_tensor(&mut self, type_: Type, ne: &[i64]) -> TensorPtr {
        self.new_tensor_impl(type_, ne, None, 0)
    }

    /// A new tensor of the same type and shape (not strides) as `src`.
    pub fn dup_tensor(&mut self, src: TensorPtr) -> TensorPtr {
        self.new_tensor(src.type_, &src.ne)
    }

    /// The objects in allocation order.
    pub fn objects(&self) -> impl Iterator<Item = &Object> + '_ {
        // SAFETY: the list is built by new_object and only links headers inside the pool.
        std::iter::successors(unsafe { self.objects_begin.as_ref() }, |o| unsafe { o.next.as_ref() })
    }

    fn payload(&self, obj: &Object) -> NonNull<u8> {
        // SAFETY: offs is within the pool by construction.
        unsafe { NonNull::new_unchecked(self.mem_buffer.as_ptr().add(obj.offs)) }
    }

    /// The tensors in creation order.
    pub fn tensors(&self) -> impl Iterator<Item = TensorPtr> + '_ {
        self.objects()
            .filter(|o| o.type_ == ObjectType::Tensor)
            // SAFETY: tensor objects start with the tensor struct.
            .map(|o| unsafe { TensorPtr::new(self.payload(o).cast()) })
    }

    /// The tensor created after `tensor` in this context.
    pub fn next_tensor(&self, tensor: TensorPtr) -> Option<TensorPtr> {
        // The header sits right before the tensor struct.
        // SAFETY: `tensor` was created by this context, so a header precedes it.
        let obj = unsafe { &*tensor.as_ptr().cast::<u8>().sub(OBJECT_SIZE).cast::<Object>() };
        // SAFETY: the object list's links are null or the context's later objects, alive as
        // long as the context is.
        let next = |o: &Object| unsafe { o.next.as_ref() };
        std::iter::successors(next(obj), |o| next(o))
            .find(|o| o.type_ == ObjectType::Tensor)
            // SAFETY: as in `tensors`.
            .map(|o| unsafe { TensorPtr::new(self.payload(o).cast()) })
    }

    pub fn get_tensor(&self, name: &[u8]) -> Option<TensorPtr> {
        self.tensors().find(|t| t.name().as_bytes() == name)
    }

    pub fn print_objects(&self) {
        crate::log_info!("ggml_print_objects: objects in context {:p}:\n", self as *const Self);
        for obj in self.objects() {
            print_object(obj);
        }
        crate::log_info!("ggml_print_objects: --- end ---\n");
    }
}

pub fn print_object(obj: &Object) {
    crate::log_info!(
        " - ggml_object: type = {}, offset = {}, size = {}, next = {:p}\n",
        obj.type_ as i32,
        obj.offs,
        obj.size,
        obj.next
    );
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.mem_buffer_owned {
            let layout = Layout::from_size_align(self.mem_size, POOL_ALIGN).expect("layout was valid at allocation");
            // SAFETY: allocated in `new` with this very layout.
            unsafe { std::alloc::dealloc(self.mem_buffer.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(size: usize, no_alloc: bool) -> Box<Context> {
        Context::new(InitParams { mem_size: size, mem_buffer: std::ptr::null_mut(), no_alloc })
    }

    #[test]
    fn tensors_are_placed_after_their_headers() {
        let mut c = ctx(1 << 16, false);
        let a = c.new_tensor(Type::F32, &[10, 3]);
        assert_eq!(c.used_mem(), OBJECT_SIZE + TENSOR_SIZE + pad(120, MEM_ALIGN));
        assert_eq!(a.data as usize, a.as_ptr() as usize + TENSOR_SIZE);
        assert_eq!(a.nb, [4, 40, 120, 120]);
        let b = c.new_tensor(Type::F16, &[7]);
        assert_eq!(c.next_tensor(a), Some(b));
        assert_eq!(c.tensors().count(), 2);
    }

    #[test]
    fn no_alloc_contexts_hold_only_metadata() {
        let mut c = ctx(1 << 12, true);
        let a = c.new_tensor(Type::Q4_0, &[64, 2]);
        assert!(a.data.is_null());
        assert_eq!(c.used_mem(), OBJECT_SIZE + TENSOR_SIZE);
        a.get_mut().set_name("weights");
        assert_eq!(c.get_tensor(b"weights"), Some(a));
    }

    #[test]
    fn views_of_views_point_at_the_base() {
        let mut c = ctx(1 << 12, false);
        let a = c.new_tensor(Type::F32, &[16]);
        let v1 = c.new_tensor_impl(Type::F32, &[8], Some(a), 16);
        let v2 = c.new_tensor_impl(Type::F32, &[4], Some(v1), 8);
        assert_eq!(v2.view_source(), Some(a));
        assert_eq!(v2.view_offs, 24);
        assert_eq!(v2.data as usize, a.data as usize + 24);
    }
}
