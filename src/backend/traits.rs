//! The pieces of a backend as Rust traits, one per table of `ggml-backend-impl.h`:
//! [`BufferType`] (`ggml_backend_buffer_type_i`), [`Buffer`] (`ggml_backend_buffer_i`),
//! [`Device`] (`ggml_backend_device_i`), [`Backend`] (`ggml_backend_i`), [`Reg`]
//! (`ggml_backend_reg_i`) and [`Event`] (the device table's event entries).
//!
//! Each method serves the table entry of its name. A method with a body serves an entry that
//! ggml marks optional, and the body is what ggml does when the entry is NULL, or, where that
//! reaches other objects (a backend without asynchronous copies falls back on the buffers),
//! answers false, and the caller falls back as ggml does. The others every implementation
//! must have, or it does not compile. Releasing an object (`free_buffer`,
//! `free`, `event_free`) is dropping it. The few methods that are no table entry say so: they
//! are where ggml's generic code asks "is this a meta buffer?" or "a multi-buffer?".
//!
//! Methods that make an object pointing back at this one (a buffer's `buft`, a backend's
//! `device`, an event's `device`) receive this object's handle as `this`.

use std::any::Any;
use std::ffi::{CStr, c_void};
use std::ptr::NonNull;

use super::handle::{BackendPtr, BufferPtr, BufferTypePtr, DevicePtr, EventPtr};
use super::interface::{BufferUsage, DevCaps, DevProps, DevType, GraphOptimizeParams};
use crate::core::context::Context;
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;

/// A described 2-D copy: `n_copies` runs of `size` bytes, `stride_tensor` apart in the tensor
/// (from `offset`) and `stride_data` apart in host memory.
#[derive(Clone, Copy, Debug)]
pub struct Copy2d {
    pub offset: usize,
    pub size: usize,
    pub n_copies: usize,
    pub stride_tensor: usize,
    pub stride_data: usize,
}

/// How many bytes `n_copies` runs of `size` bytes, `stride` apart, span.
pub fn strided_span(size: usize, n_copies: usize, stride: usize) -> Option<usize> {
    match n_copies {
        0 => Some(0),
        n => (n - 1).checked_mul(stride)?.checked_add(size),
    }
}

impl Copy2d {
    /// The bytes of host memory the runs span; `None` when that overflows.
    pub fn host_span(&self) -> Option<usize> {
        strided_span(self.size, self.n_copies, self.stride_data)
    }

    /// Where the last run ends in the tensor.
    pub fn tensor_end(&self) -> Option<usize> {
        strided_span(self.size, self.n_copies, self.stride_tensor)?.checked_add(self.offset)
    }

    /// Where each run starts: (in host memory, in the tensor).
    pub fn runs(&self) -> impl Iterator<Item = (usize, usize)> + use<> {
        let c = *self;
        (0..c.n_copies).map(move |i| (i * c.stride_data, c.offset + i * c.stride_tensor))
    }
}

/// A buffer type: where a device's tensors can live, and how to allocate there.
pub trait BufferType: Any + Send + Sync {
    fn get_name(&self) -> &CStr;

    /// A buffer of `size` bytes (never 0: the dispatch gives empty buffers no memory) whose
    /// buffer type is `this`; `None`, with the reason logged, when there is no such memory.
    fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr>;

    fn get_alignment(&self) -> usize;

    fn get_max_size(&self) -> usize {
        usize::MAX
    }

    /// Bytes `tensor`'s data needs here, padding included.
    fn get_alloc_size(&self, tensor: TensorPtr) -> usize {
        tensor.nbytes()
    }

    /// Whether tensor data lives in host memory, in ggml's standard layout.
    fn is_host(&self) -> bool {
        false
    }

    /// Not a table entry: `ggml_backend_alloc_ctx_tensors_from_buft` for a type that places a
    /// context's tensors its own way (ggml special-cases the meta buffer type there, which
    /// gives every tensor one slice per device). `None` leaves it to the generic allocator.
    fn alloc_ctx_tensors(&self, this: BufferTypePtr, ctx: &Context) -> Option<BufferPtr> {
        let _ = (this, ctx);
        None
    }
}

/// A buffer: one allocation of a buffer type, and the tensor data operations on it. Ranges
/// have been checked against the tensor before a method is called.
pub trait Buffer: Any {
    /// Where the buffer's memory starts; `None` for a buffer without memory of its own (a
    /// multi-buffer).
    fn get_base(&self) -> Option<NonNull<c_void>>;

    /// Sets up a tensor just placed in this buffer.
    fn init_tensor(&self, tensor: TensorPtr) -> Status {
        let _ = tensor;
        Status::SUCCESS
    }

    fn memset_tensor(&self, tensor: TensorPtr, value: u8, offset: usize, size: usize);

    fn set_tensor(&self, tensor: TensorPtr, data: &[u8], offset: usize);

    fn get_tensor(&self, tensor: TensorPtr, data: &mut [u8], offset: usize);

    /// `data` spans the runs of `c`.
    fn set_tensor_2d(&self, tensor: TensorPtr, data: &[u8], c: Copy2d) {
        for (at_data, at_tensor) in c.runs() {
            self.set_tensor(tensor, &data[at_data..][..c.size], at_tensor);
        }
    }

    fn get_tensor_2d(&self, tensor: TensorPtr, data: &mut [u8], c: Copy2d) {
        for (at_data, at_tensor) in c.runs() {
            self.get_tensor(tensor, &mut data[at_data..][..c.size], at_tensor);
        }
    }

    /// Copies `src` (anywhere) into `dst` (in this buffer); false when this buffer cannot.
    fn cpy_tensor(&self, src: TensorPtr, dst: TensorPtr) -> bool {
        let _ = (src, dst);
        false
    }

    fn clear(&self, value: u8);

    /// Drops per-tensor state that `init_tensor` made.
    fn reset(&self) {}

    /// Not a table entry: told of a new usage (`ggml_backend_buffer_set_usage`, which in ggml
    /// passes it on to the parts of multi-buffers and meta buffers, with a FIXME asking for
    /// this hook).
    fn set_usage(&self, usage: BufferUsage) {
        let _ = usage;
    }

    /// Not a table entry: whether this is a meta buffer, whose tensors' addresses are offsets
    /// from a token base, not memory (`ggml_backend_buffer_is_meta`: ggml's generic code
    /// gives such a buffer a base even when it is empty, and does not bound its tensors).
    fn is_meta(&self) -> bool {
        false
    }
}

/// Where the source of `cpy_tensor_async` runs, as the destination backend sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CopySource {
    /// The destination backend itself.
    This,
    Other(BackendPtr),
    /// The caller named none.
    Unknown,
}

/// A backend: a stream of work on one device.
pub trait Backend: Any {
    fn get_name(&self) -> &CStr;

    /// Queues a write of `data` (valid until the caller synchronizes) into `tensor` at
    /// `offset`. False for a backend without asynchronous writes: the caller then waits for
    /// the backend and writes through the tensor's buffer, as ggml does for a NULL entry. So
    /// with the other asynchronous copies below.
    fn set_tensor_async(&mut self, tensor: TensorPtr, data: &[u8], offset: usize) -> bool {
        let _ = (tensor, data, offset);
        false
    }

    fn get_tensor_async(&mut self, tensor: TensorPtr, data: &mut [u8], offset: usize) -> bool {
        let _ = (tensor, data, offset);
        false
    }

    /// `data` spans the runs of `c`; false: the caller writes run by run.
    fn set_tensor_2d_async(&mut self, tensor: TensorPtr, data: &[u8], c: Copy2d) -> bool {
        let _ = (tensor, data, c);
        false
    }

    fn get_tensor_2d_async(&mut self, tensor: TensorPtr, data: &mut [u8], c: Copy2d) -> bool {
        let _ = (tensor, data, c);
        false
    }

    /// Queues a copy of `src` (on `from`) into `dst` (on this backend); false: the caller
    /// copies through host memory.
    fn cpy_tensor_async(&mut self, from: CopySource, src: TensorPtr, dst: TensorPtr) -> bool {
        let _ = (from, src, dst);
        false
    }

    /// Waits for everything queued.
    fn synchronize(&mut self) {}

    /// A plan for computing `graph` repeatedly; `None`, with the reason logged, when it cannot
    /// be made. The graph outlives the plan.
    fn graph_plan_create(&mut self, graph: &Graph) -> Option<Box<dyn Any>> {
        let _ = graph;
        crate::ggml_abort!("backend interface has no graph_plan_create function")
    }

    fn graph_plan_free(&mut self, plan: Box<dyn Any>) {
        let _ = plan;
        crate::ggml_abort!("backend interface has no graph_plan_free function")
    }

    fn graph_plan_update(&mut self, plan: &mut dyn Any, graph: &Graph) {
        let _ = (plan, graph);
        crate::ggml_abort!("backend interface has no graph_plan_update function")
    }

    fn graph_plan_compute(&mut self, plan: &mut dyn Any) -> Status {
        let _ = plan;
        crate::ggml_abort!("backend interface has no graph_plan_compute function")
    }

    /// Starts computing `graph` (asynchronously where the backend can).
    fn graph_compute(&mut self, graph: &mut Graph) -> Status;

    fn event_record(&mut self, event: EventPtr) {
        let _ = event;
        crate::ggml_abort!("backend interface has no event_record function")
    }

    fn event_wait(&mut self, event: EventPtr) {
        let _ = event;
        crate::ggml_abort!("backend interface has no event_wait function")
    }

    /// Reorders `graph` for this backend.
    fn graph_optimize(&mut self, graph: &mut Graph, params: &mut GraphOptimizeParams) {
        let _ = (graph, params);
    }
}

/// An event: a point in a backend's stream that others can wait for. Dropping it is the
/// device's `event_free`.
pub trait Event: Any {
    /// The device's `event_synchronize`: blocks until everything recorded before the event has
    /// completed.
    fn synchronize(&self);
}

/// A device: what it is, its memory, and the backends and buffer types it offers.
pub trait Device: Any + Send + Sync {
    /// A short identifier, such as "CPU" or "CUDA0".
    fn get_name(&self) -> &CStr;

    fn get_description(&self) -> &CStr;

    /// `(free, total)` bytes.
    fn get_memory(&self) -> (usize, usize);

    fn get_type(&self) -> DevType;

    /// Every property at once; [`DevProps::describe`] fills in the ones the methods above
    /// answer.
    fn get_props(&self) -> DevProps;

    /// A backend on this device (`this`); `None`, with the reason logged, when none can run.
    fn init_backend(&self, this: DevicePtr, params: Option<&CStr>) -> Option<BackendPtr>;

    /// The device's preferred buffer type; `None`, with the reason logged, when it cannot be
    /// had (a server that cannot be reached).
    fn get_buffer_type(&self, this: DevicePtr) -> Option<BufferTypePtr>;

    /// A pinned host buffer type, if the device has one.
    fn get_host_buffer_type(&self) -> Option<BufferTypePtr> {
        None
    }

    /// A buffer of this device over `size` bytes of the caller's host memory at `ptr`.
    ///
    /// # Safety
    /// `ptr` addresses `size` bytes that stay valid, and the caller's, for the buffer's life.
    unsafe fn buffer_from_host_ptr(&self, ptr: *mut c_void, size: usize, max_tensor_size: usize) -> Option<BufferPtr> {
        let _ = (ptr, size, max_tensor_size);
        crate::ggml_abort!("device interface has no buffer_from_host_ptr function")
    }

    fn supports_op(&self, op: TensorPtr) -> bool;

    fn supports_buft(&self, buft: BufferTypePtr) -> bool;

    /// Whether the device wants to run `op` even when its weights live elsewhere.
    fn offload_op(&self, op: TensorPtr) -> bool {
        let _ = op;
        false
    }

    /// A new event of this device (`this`); `None` for a device without events.
    fn event_new(&self, this: DevicePtr) -> Option<EventPtr> {
        let _ = this;
        None
    }
}

impl DevProps {
    /// The properties `dev`'s methods answer (name, description, memory, type), with `caps`
    /// and no device id.
    pub fn describe(dev: &(impl Device + ?Sized), caps: DevCaps) -> DevProps {
        let (memory_free, memory_total) = dev.get_memory();
        DevProps {
            name: dev.get_name().as_ptr(),
            description: dev.get_description().as_ptr(),
            memory_free,
            memory_total,
            type_: dev.get_type(),
            device_id: std::ptr::null(),
            caps,
        }
    }
}

/// A registry: the devices of one backend, and its extra functions.
pub trait Reg: Any + Send + Sync {
    fn get_name(&self) -> &CStr;

    fn get_device_count(&self) -> usize;

    /// Device `index` (aborts for an index past the count).
    fn get_device(&self, index: usize) -> DevicePtr;

    /// The extra function the backend offers under `name` (a C function of the signature ggml
    /// gives that name).
    fn get_proc_address(&self, name: &CStr) -> Option<NonNull<c_void>> {
        let _ = name;
        None
    }
}
