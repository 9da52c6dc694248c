//! C objects as trait objects: each struct of `interface` implements its trait by calling its
//! own table, with ggml's defaults where an optional entry is NULL, so that a plugin's buffer,
//! device or backend is used as the built-in ones are.
//!
//! The entries receive the struct's own address: ggml's tables take the object they belong
//! to. They do not write the struct through it (ggml's backends keep their state behind
//! `context`), so calling them from a shared reference is what C code does with ggml's
//! objects every day.

use std::any::Any;
use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use super::c_str;
use crate::backend::handle::{BackendPtr, BufferPtr, BufferTypePtr, DevicePtr, EventPtr};
use crate::backend::interface::{
    Backend as RawBackend, Buffer as RawBuffer, BufferType as RawBufferType, DevCaps, DevProps, DevType,
    Device as RawDevice, Event as RawEvent, GraphOptimizeParams, GraphPlan, Reg as RawReg,
};
use crate::backend::traits::{Backend, Buffer, BufferType, Copy2d, CopySource, Device, Event, Reg};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;

// SAFETY: ggml lets every thread use buffer types, devices and registries; making a plugin's
// table safe to call from several threads is the plugin's part, as in ggml.
unsafe impl Send for RawBufferType {}
// SAFETY: as above.
unsafe impl Sync for RawBufferType {}
// SAFETY: as above.
unsafe impl Send for RawDevice {}
// SAFETY: as above.
unsafe impl Sync for RawDevice {}
// SAFETY: as above.
unsafe impl Send for RawReg {}
// SAFETY: as above.
unsafe impl Sync for RawReg {}

/// Aborts when a table lacks an entry that ggml requires (ggml itself would call NULL).
#[track_caller]
fn required<F>(entry: Option<F>, table: &str, name: &str) -> F {
    match entry {
        Some(f) => f,
        None => crate::ggml_abort!("{table} interface has no {name} function"),
    }
}

/// A name an entry returned, as a C string ("(null)" for NULL, as C's printf shows it).
///
/// # Safety
/// `s` is NULL or a C string that lives as long as the object it names.
unsafe fn name<'a>(s: *const c_char) -> &'a CStr {
    // SAFETY: the caller's contract.
    unsafe { c_str(s) }.unwrap_or(c"(null)")
}

/// The address of an object, as its own table takes it.
fn this<T>(object: &T) -> *mut T {
    std::ptr::from_ref(object).cast_mut()
}

// ---------------------------------------------------------------------------------------------
// Buffer types

impl BufferType for RawBufferType {
    fn get_name(&self) -> &CStr {
        let f = required(self.iface.get_name, "buffer type", "get_name");
        // SAFETY: the entry belongs to this buffer type and is called with it; the name lives
        // as long as the type.
        unsafe { name(f(this(self))) }
    }

    fn alloc_buffer(&self, _this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
        let f = required(self.iface.alloc_buffer, "buffer type", "alloc_buffer");
        // SAFETY: as in `get_name`; a non-null result is a buffer made by
        // ggml_backend_buffer_init, alive until it is freed.
        unsafe { BufferPtr::from_raw(f(this(self), size)) }
    }

    fn get_alignment(&self) -> usize {
        let f = required(self.iface.get_alignment, "buffer type", "get_alignment");
        // SAFETY: as in `get_name`.
        unsafe { f(this(self)) }
    }

    fn get_max_size(&self) -> usize {
        // SAFETY: as in `get_name`.
        self.iface.get_max_size.map_or(usize::MAX, |f| unsafe { f(this(self)) })
    }

    fn get_alloc_size(&self, tensor: TensorPtr) -> usize {
        // SAFETY: as in `get_name`; the tensor is live.
        self.iface.get_alloc_size.map_or_else(|| tensor.nbytes(), |f| unsafe { f(this(self), tensor.as_ptr()) })
    }

    fn is_host(&self) -> bool {
        // SAFETY: as in `get_name`.
        self.iface.is_host.is_some_and(|f| unsafe { f(this(self)) })
    }
}

// ---------------------------------------------------------------------------------------------
// Buffers

impl Buffer for RawBuffer {
    fn get_base(&self) -> Option<NonNull<c_void>> {
        let f = self.iface.get_base?;
        // SAFETY: the entry belongs to this buffer and is called with it.
        let base = unsafe { f(this(self)) };
        match NonNull::new(base) {
            Some(b) => Some(b),
            None => crate::ggml_abort!("backend buffer base cannot be NULL"),
        }
    }

    fn init_tensor(&self, tensor: TensorPtr) -> Status {
        // SAFETY: as in `get_base`; the tensor is live and placed in this buffer.
        self.iface.init_tensor.map_or(Status::SUCCESS, |f| unsafe { f(this(self), tensor.as_ptr()) })
    }

    fn memset_tensor(&self, tensor: TensorPtr, value: u8, offset: usize, size: usize) {
        let Some(f) = self.iface.memset_tensor else {
            // SAFETY: a buffer's type is null or live.
            let buft = unsafe { self.buft.as_ref() }.map_or(c"(null)", |b| b.get_name());
            crate::ggml_abort!("memset not implemented by backend buffer {}", buft.to_string_lossy())
        };
        // SAFETY: as in `init_tensor`; the caller checked the range.
        unsafe { f(this(self), tensor.as_ptr(), value, offset, size) }
    }

    fn set_tensor(&self, tensor: TensorPtr, data: &[u8], offset: usize) {
        let f = required(self.iface.set_tensor, "buffer", "set_tensor");
        // SAFETY: as in `memset_tensor`; `data` is readable for its length.
        unsafe { f(this(self), tensor.as_ptr(), data.as_ptr().cast(), offset, data.len()) }
    }

    fn get_tensor(&self, tensor: TensorPtr, data: &mut [u8], offset: usize) {
        let f = required(self.iface.get_tensor, "buffer", "get_tensor");
        // SAFETY: as in `set_tensor`, writable.
        unsafe { f(this(self), tensor.as_ptr(), data.as_mut_ptr().cast(), offset, data.len()) }
    }

    fn set_tensor_2d(&self, tensor: TensorPtr, data: &[u8], c: Copy2d) {
        let Some(f) = self.iface.set_tensor_2d else {
            for (at_data, at_tensor) in c.runs() {
                self.set_tensor(tensor, &data[at_data..][..c.size], at_tensor);
            }
            return;
        };
        // SAFETY: as in `set_tensor`; `data` spans every run (the caller checked).
        unsafe {
            f(
                this(self),
                tensor.as_ptr(),
                data.as_ptr().cast(),
                c.offset,
                c.size,
                c.n_copies,
                c.stride_tensor,
                c.stride_data,
            )
        }
    }

    fn get_tensor_2d(&self, tensor: TensorPtr, data: &mut [u8], c: Copy2d) {
        let Some(f) = self.iface.get_tensor_2d else {
            for (at_data, at_tensor) in c.runs() {
                self.get_tensor(tensor, &mut data[at_data..][..c.size], at_tensor);
            }
            return;
        };
        // SAFETY: as in `set_tensor_2d`, writable.
        unsafe {
            f(
                this(self),
                tensor.as_ptr(),
                data.as_mut_ptr().cast(),
                c.offset,
                c.size,
                c.n_copies,
                c.stride_tensor,
                c.stride_data,
            )
        }
    }

    fn cpy_tensor(&self, src: TensorPtr, dst: TensorPtr) -> bool {
        // SAFETY: as in `init_tensor`, with two live tensors.
        self.iface.cpy_tensor.is_some_and(|f| unsafe { f(this(self), src.as_ptr(), dst.as_ptr()) })
    }

    fn clear(&self, value: u8) {
        let f = required(self.iface.clear, "buffer", "clear");
        // SAFETY: as in `get_base`.
        unsafe { f(this(self), value) }
    }

    fn reset(&self) {
        if let Some(f) = self.iface.reset {
            // SAFETY: as in `get_base`.
            unsafe { f(this(self)) }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Events

impl Event for RawEvent {
    fn synchronize(&self) {
        // SAFETY: an event's device outlives it.
        let Some(device) = (unsafe { self.device.as_ref() }) else { crate::ggml_abort!("event has no device") };
        let f = required(device.iface.event_synchronize, "device", "event_synchronize");
        // SAFETY: the device's own entry, called with it and an event it made.
        unsafe { f(this(device), this(self)) }
    }
}

// ---------------------------------------------------------------------------------------------
// Devices

impl Device for RawDevice {
    fn get_name(&self) -> &CStr {
        let f = required(self.iface.get_name, "device", "get_name");
        // SAFETY: the entry belongs to this device and is called with it; the name lives as
        // long as the device.
        unsafe { name(f(this(self))) }
    }

    fn get_description(&self) -> &CStr {
        let f = required(self.iface.get_description, "device", "get_description");
        // SAFETY: as in `get_name`.
        unsafe { name(f(this(self))) }
    }

    fn get_memory(&self) -> (usize, usize) {
        let f = required(self.iface.get_memory, "device", "get_memory");
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: as in `get_name`; both out-pointers are valid for writes.
        unsafe { f(this(self), &mut free, &mut total) };
        (free, total)
    }

    fn get_type(&self) -> DevType {
        let f = required(self.iface.get_type, "device", "get_type");
        // SAFETY: as in `get_name`.
        unsafe { f(this(self)) }
    }

    /// Starts from a zeroed struct, as ggml does, so that what a device leaves alone reads as
    /// NULL, 0 or false.
    fn get_props(&self) -> DevProps {
        let f = required(self.iface.get_props, "device", "get_props");
        let mut props = DevProps {
            name: std::ptr::null(),
            description: std::ptr::null(),
            memory_free: 0,
            memory_total: 0,
            type_: DevType(0),
            device_id: std::ptr::null(),
            caps: DevCaps::default(),
        };
        // SAFETY: as in `get_name`; `props` is a valid struct for the entry to fill.
        unsafe { f(this(self), &mut props) };
        props
    }

    fn init_backend(&self, _this: DevicePtr, params: Option<&CStr>) -> Option<BackendPtr> {
        let f = required(self.iface.init_backend, "device", "init_backend");
        let params = params.map_or(std::ptr::null(), CStr::as_ptr);
        // SAFETY: as in `get_name`; a non-null result is a live backend.
        unsafe { BackendPtr::from_raw(f(this(self), params)) }
    }

    fn get_buffer_type(&self, _this: DevicePtr) -> Option<BufferTypePtr> {
        let f = required(self.iface.get_buffer_type, "device", "get_buffer_type");
        // SAFETY: as in `get_name`; the type outlives the device.
        unsafe { BufferTypePtr::from_raw(f(this(self))) }
    }

    fn get_host_buffer_type(&self) -> Option<BufferTypePtr> {
        let f = self.iface.get_host_buffer_type?;
        // SAFETY: as in `get_buffer_type`.
        unsafe { BufferTypePtr::from_raw(f(this(self))) }
    }

    unsafe fn buffer_from_host_ptr(&self, ptr: *mut c_void, size: usize, max_tensor_size: usize) -> Option<BufferPtr> {
        let f = required(self.iface.buffer_from_host_ptr, "device", "buffer_from_host_ptr");
        // SAFETY: as in `get_name`; the caller vouches for the memory; a non-null result is a
        // buffer made by ggml_backend_buffer_init.
        unsafe { BufferPtr::from_raw(f(this(self), ptr, size, max_tensor_size)) }
    }

    fn supports_op(&self, op: TensorPtr) -> bool {
        let f = required(self.iface.supports_op, "device", "supports_op");
        // SAFETY: as in `get_name`; `op` is a live tensor.
        unsafe { f(this(self), op.as_ptr()) }
    }

    fn supports_buft(&self, buft: BufferTypePtr) -> bool {
        let f = required(self.iface.supports_buft, "device", "supports_buft");
        // SAFETY: as in `get_name`; `buft` is a live buffer type.
        unsafe { f(this(self), buft.as_ptr()) }
    }

    fn offload_op(&self, op: TensorPtr) -> bool {
        // SAFETY: as in `supports_op`.
        self.iface.offload_op.is_some_and(|f| unsafe { f(this(self), op.as_ptr()) })
    }

    fn event_new(&self, _this: DevicePtr) -> Option<EventPtr> {
        let f = self.iface.event_new?;
        // SAFETY: as in `get_name`; a non-null result is a live event.
        unsafe { EventPtr::from_raw(f(this(self))) }
    }
}

// ---------------------------------------------------------------------------------------------
// Backends

/// A plan a plugin's backend made, as the traits carry plans.
struct ForeignPlan(GraphPlan);

fn foreign_plan(plan: &mut dyn Any) -> GraphPlan {
    match plan.downcast_mut::<ForeignPlan>() {
        Some(p) => p.0,
        None => crate::ggml_abort!("a plan of another backend passed to a plugin's backend"),
    }
}

impl Backend for RawBackend {
    fn get_name(&self) -> &CStr {
        let f = required(self.iface.get_name, "backend", "get_name");
        // SAFETY: the entry belongs to this backend and is called with it; the name lives as
        // long as the backend.
        unsafe { name(f(this(self))) }
    }

    fn set_tensor_async(&mut self, tensor: TensorPtr, data: &[u8], offset: usize) -> bool {
        let Some(f) = self.iface.set_tensor_async else { return false };
        // SAFETY: as in `get_name`; the range lies inside the tensor and `data` stays valid
        // until the caller synchronizes.
        unsafe { f(self, tensor.as_ptr(), data.as_ptr().cast(), offset, data.len()) };
        true
    }

    fn get_tensor_async(&mut self, tensor: TensorPtr, data: &mut [u8], offset: usize) -> bool {
        let Some(f) = self.iface.get_tensor_async else { return false };
        // SAFETY: as in `set_tensor_async`, writable.
        unsafe { f(self, tensor.as_ptr(), data.as_mut_ptr().cast(), offset, data.len()) };
        true
    }

    fn set_tensor_2d_async(&mut self, tensor: TensorPtr, data: &[u8], c: Copy2d) -> bool {
        let Some(f) = self.iface.set_tensor_2d_async else { return false };
        // SAFETY: as in `set_tensor_async`; every run lies inside the tensor and `data`.
        unsafe {
            f(self, tensor.as_ptr(), data.as_ptr().cast(), c.offset, c.size, c.n_copies, c.stride_tensor, c.stride_data)
        };
        true
    }

    fn get_tensor_2d_async(&mut self, tensor: TensorPtr, data: &mut [u8], c: Copy2d) -> bool {
        let Some(f) = self.iface.get_tensor_2d_async else { return false };
        // SAFETY: as in `set_tensor_2d_async`, writable.
        unsafe {
            f(
                self,
                tensor.as_ptr(),
                data.as_mut_ptr().cast(),
                c.offset,
                c.size,
                c.n_copies,
                c.stride_tensor,
                c.stride_data,
            )
        };
        true
    }

    fn cpy_tensor_async(&mut self, from: CopySource, src: TensorPtr, dst: TensorPtr) -> bool {
        let Some(f) = self.iface.cpy_tensor_async else { return false };
        let me: *mut RawBackend = self;
        let from = match from {
            CopySource::This => me,
            CopySource::Other(b) => b.as_ptr(),
            CopySource::Unknown => std::ptr::null_mut(),
        };
        // SAFETY: the entry belongs to this (destination) backend; the source backend is live
        // or NULL, the tensors live.
        unsafe { f(from, me, src.as_ptr(), dst.as_ptr()) }
    }

    fn synchronize(&mut self) {
        if let Some(f) = self.iface.synchronize {
            // SAFETY: as in `get_name`.
            unsafe { f(self) }
        }
    }

    fn graph_plan_create(&mut self, graph: &Graph) -> Option<Box<dyn Any>> {
        let f = required(self.iface.graph_plan_create, "backend", "graph_plan_create");
        // SAFETY: as in `get_name`; the graph is live.
        let plan = unsafe { f(self, graph) };
        (!plan.is_null()).then(|| Box::new(ForeignPlan(plan)) as Box<dyn Any>)
    }

    fn graph_plan_free(&mut self, mut plan: Box<dyn Any>) {
        let f = required(self.iface.graph_plan_free, "backend", "graph_plan_free");
        let plan = foreign_plan(plan.as_mut());
        // SAFETY: as in `get_name`; the plan is this backend's, freed once.
        unsafe { f(self, plan) }
    }

    fn graph_plan_update(&mut self, plan: &mut dyn Any, graph: &Graph) {
        let f = required(self.iface.graph_plan_update, "backend", "graph_plan_update");
        let plan = foreign_plan(plan);
        // SAFETY: as in `graph_plan_free`, not freeing it.
        unsafe { f(self, plan, graph) }
    }

    fn graph_plan_compute(&mut self, plan: &mut dyn Any) -> Status {
        let f = required(self.iface.graph_plan_compute, "backend", "graph_plan_compute");
        let plan = foreign_plan(plan);
        // SAFETY: as in `graph_plan_update`.
        unsafe { f(self, plan) }
    }

    fn graph_compute(&mut self, graph: &mut Graph) -> Status {
        let f = required(self.iface.graph_compute, "backend", "graph_compute");
        // SAFETY: as in `get_name`; the graph is live and allocated.
        unsafe { f(self, graph) }
    }

    fn event_record(&mut self, event: EventPtr) {
        let f = required(self.iface.event_record, "backend", "event_record");
        // SAFETY: as in `get_name`; the event is live.
        unsafe { f(self, event.as_ptr()) }
    }

    fn event_wait(&mut self, event: EventPtr) {
        let f = required(self.iface.event_wait, "backend", "event_wait");
        // SAFETY: as in `event_record`.
        unsafe { f(self, event.as_ptr()) }
    }

    fn graph_optimize(&mut self, graph: &mut Graph, params: &mut GraphOptimizeParams) {
        if let Some(f) = self.iface.graph_optimize {
            // SAFETY: as in `graph_compute`; `params` is valid for the call.
            unsafe { f(self, graph, params) }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Registries

impl Reg for RawReg {
    fn get_name(&self) -> &CStr {
        let f = required(self.iface.get_name, "registry", "get_name");
        // SAFETY: the entry belongs to this registry and is called with it; the name lives as
        // long as the registry.
        unsafe { name(f(this(self))) }
    }

    fn get_device_count(&self) -> usize {
        let f = required(self.iface.get_device_count, "registry", "get_device_count");
        // SAFETY: as in `get_name`.
        unsafe { f(this(self)) }
    }

    fn get_device(&self, index: usize) -> DevicePtr {
        let f = required(self.iface.get_device, "registry", "get_device");
        // SAFETY: as in `get_name`; the registry checks the index; its devices live as long
        // as it does.
        match unsafe { DevicePtr::from_raw(f(this(self), index)) } {
            Some(d) => d,
            None => crate::ggml_abort!("registry {} has no device {}", self.get_name().to_string_lossy(), index),
        }
    }

    fn get_proc_address(&self, name: &CStr) -> Option<NonNull<c_void>> {
        let f = self.iface.get_proc_address?;
        // SAFETY: as in `get_name`; `name` is a C string.
        NonNull::new(unsafe { f(this(self), name.as_ptr()) })
    }
}
