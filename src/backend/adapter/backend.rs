//! Backends: the table of every Rust backend, and a backend handle's object.

use std::ffi::{CStr, c_char, c_void};

use super::{
    bytes, bytes_mut, owned, owned_context, plan_into, plan_mut, plan_take, same_entries, take_owned, tensor_arg,
};
use crate::backend::handle::{BackendPtr, DevicePtr, EventPtr};
use crate::backend::interface::{
    Backend as RawBackend, BackendInterface, Event as RawEvent, GraphOptimizeParams, GraphPlan, GuidPtr,
};
use crate::backend::traits::{Backend, Copy2d, CopySource};
use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::Tensor;

const TABLE: BackendInterface = BackendInterface {
    get_name: Some(get_name),
    free: Some(free),
    set_tensor_async: Some(set_tensor_async),
    get_tensor_async: Some(get_tensor_async),
    set_tensor_2d_async: Some(set_tensor_2d_async),
    get_tensor_2d_async: Some(get_tensor_2d_async),
    cpy_tensor_async: Some(cpy_tensor_async),
    synchronize: Some(synchronize),
    graph_plan_create: Some(graph_plan_create),
    graph_plan_free: Some(graph_plan_free),
    graph_plan_update: Some(graph_plan_update),
    graph_plan_compute: Some(graph_plan_compute),
    graph_compute: Some(graph_compute),
    event_record: Some(event_record),
    event_wait: Some(event_wait),
    graph_optimize: Some(graph_optimize),
};

/// A backend on `device`, named by `guid`, whose work is `object`'s; freeing it drops it.
pub fn new_backend(guid: GuidPtr, device: DevicePtr, object: Box<dyn Backend>) -> BackendPtr {
    let raw = Box::new(RawBackend { guid, iface: TABLE, device: device.as_ptr(), context: owned_context(object) });
    // SAFETY: a fresh box, alive until `free`.
    match unsafe { BackendPtr::from_raw(Box::into_raw(raw)) } {
        Some(b) => b,
        None => unreachable!("boxes are never null"),
    }
}

impl BackendPtr {
    /// What the backend is: its Rust object when its table is the adapter's, else the C
    /// struct, served through its table (a plugin's backend, or one of ours that C code has
    /// changed, as the RS-CPU plugin renames CPU backends).
    ///
    /// A backend is driven by one thread at a time (ggml's contract) and does not call
    /// itself, so the reference is the only one.
    pub(in crate::backend) fn object<'a>(self) -> &'a mut dyn Backend {
        let raw = self.as_ptr();
        // SAFETY: the handle's contract keeps the backend alive; see above for exclusivity.
        let raw = unsafe { &mut *raw };
        if same_entries!(raw.iface, TABLE; get_name, free, set_tensor_async, get_tensor_async,
            set_tensor_2d_async, get_tensor_2d_async, cpy_tensor_async, synchronize, graph_plan_create,
            graph_plan_free, graph_plan_update, graph_plan_compute, graph_compute, event_record, event_wait,
            graph_optimize)
        {
            // SAFETY: with the adapter's table the backend was made by `new_backend`.
            unsafe { owned::<dyn Backend>(raw.context) }
        } else {
            raw
        }
    }

    /// The backend's Rust object if it is a `T`: how a backend recognises its own kind
    /// (C code may have replaced some entries; the object is still there).
    pub fn downcast<'a, T: Backend>(self) -> Option<&'a mut T> {
        let raw = self.raw();
        if !same_entries!(raw.iface, TABLE; free) {
            return None;
        }
        // SAFETY: a backend freed by the adapter's entry was made by `new_backend`; as in
        // `object`, the caller is the backend's one user.
        let object: &mut dyn Backend = unsafe { owned::<dyn Backend>(raw.context) };
        (object as &mut dyn std::any::Any).downcast_mut::<T>()
    }
}

impl BackendPtr {
    /// A plan for computing `graph` repeatedly (opaque, the backend's); NULL, with the reason
    /// logged, when it cannot be made.
    pub fn graph_plan_create(self, graph: &Graph) -> GraphPlan {
        self.object().graph_plan_create(graph).map_or(std::ptr::null_mut(), plan_into)
    }

    /// # Safety
    /// `plan` is NULL (ignored) or comes from this backend's `graph_plan_create` and is not
    /// freed yet; it is dangling afterwards.
    pub unsafe fn graph_plan_free(self, plan: GraphPlan) {
        if !plan.is_null() {
            // SAFETY: the caller's contract; every plan handed out is made by `plan_into`.
            self.object().graph_plan_free(unsafe { plan_take(plan) });
        }
    }

    /// # Safety
    /// As [`BackendPtr::graph_plan_free`], not NULL, and not freeing it.
    pub unsafe fn graph_plan_update(self, plan: GraphPlan, graph: &Graph) {
        crate::ggml_assert!(!plan.is_null(), "NULL plan passed to graph_plan_update");
        // SAFETY: as above.
        self.object().graph_plan_update(unsafe { plan_mut(plan) }, graph);
    }

    /// # Safety
    /// As [`BackendPtr::graph_plan_update`]; the graph the plan was made for is alive.
    pub unsafe fn graph_plan_compute(self, plan: GraphPlan) -> Status {
        crate::ggml_assert!(!plan.is_null(), "NULL plan passed to graph_plan_compute");
        // SAFETY: as above.
        self.object().graph_plan_compute(unsafe { plan_mut(plan) })
    }
}

/// The object behind a backend this table was called for.
fn object<'a>(backend: *mut RawBackend) -> &'a mut dyn Backend {
    // SAFETY: the table's entries are called with a live backend of this table, by its one
    // user at a time.
    match unsafe { backend.as_ref() } {
        // SAFETY: as above.
        Some(b) => unsafe { owned::<dyn Backend>(b.context) },
        None => crate::ggml_abort!("NULL backend passed to a backend's table"),
    }
}

/// Aborts for an entry that this backend leaves to the caller's fallback: called directly, it
/// is an entry ggml would have had NULL.
#[track_caller]
fn must(done: bool, backend: *mut RawBackend, entry: &str) {
    if !done {
        let name = object(backend).get_name().to_string_lossy().into_owned();
        crate::ggml_abort!("backend {} has no {} function", name, entry);
    }
}

fn event_arg(event: *mut RawEvent, entry: &str) -> EventPtr {
    // SAFETY: a non-null event handed to a backend is live.
    match unsafe { EventPtr::from_raw(event) } {
        Some(e) => e,
        None => crate::ggml_abort!("NULL event passed to {}", entry),
    }
}

unsafe extern "C" fn get_name(backend: *mut RawBackend) -> *const c_char {
    let name: &CStr = object(backend).get_name();
    name.as_ptr()
}

unsafe extern "C" fn free(backend: *mut RawBackend) {
    object(backend);
    // SAFETY: called once, as the backend is freed: both boxes were made by `new_backend`.
    unsafe {
        let raw = Box::from_raw(backend);
        drop(take_owned::<dyn Backend>(raw.context));
    }
}

unsafe extern "C" fn set_tensor_async(
    backend: *mut RawBackend,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: `size` readable bytes, valid until the caller synchronizes (the entry's contract).
    let data = unsafe { bytes(data, size) };
    let done = object(backend).set_tensor_async(tensor_arg(tensor, "set_tensor_async"), data, offset);
    must(done, backend, "set_tensor_async");
}

unsafe extern "C" fn get_tensor_async(
    backend: *mut RawBackend,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
) {
    // SAFETY: as in `set_tensor_async`, writable.
    let data = unsafe { bytes_mut(data, size) };
    let done = object(backend).get_tensor_async(tensor_arg(tensor, "get_tensor_async"), data, offset);
    must(done, backend, "get_tensor_async");
}

#[track_caller]
fn copy_2d(offset: usize, size: usize, n_copies: usize, stride_tensor: usize, stride_data: usize) -> (Copy2d, usize) {
    let c = Copy2d { offset, size, n_copies, stride_tensor, stride_data };
    match c.host_span() {
        Some(span) => (c, span),
        None => crate::ggml_abort!("2-D copy of {} rows overflows the address space", n_copies),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn set_tensor_2d_async(
    backend: *mut RawBackend,
    tensor: *mut Tensor,
    data: *const c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    let (c, span) = copy_2d(offset, size, n_copies, stride_tensor, stride_data);
    // SAFETY: host memory spanning every run, valid until the caller synchronizes.
    let data = unsafe { bytes(data, span) };
    let done = object(backend).set_tensor_2d_async(tensor_arg(tensor, "set_tensor_2d_async"), data, c);
    must(done, backend, "set_tensor_2d_async");
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn get_tensor_2d_async(
    backend: *mut RawBackend,
    tensor: *const Tensor,
    data: *mut c_void,
    offset: usize,
    size: usize,
    n_copies: usize,
    stride_tensor: usize,
    stride_data: usize,
) {
    let (c, span) = copy_2d(offset, size, n_copies, stride_tensor, stride_data);
    // SAFETY: as in `set_tensor_2d_async`, writable.
    let data = unsafe { bytes_mut(data, span) };
    let done = object(backend).get_tensor_2d_async(tensor_arg(tensor, "get_tensor_2d_async"), data, c);
    must(done, backend, "get_tensor_2d_async");
}

unsafe extern "C" fn cpy_tensor_async(
    backend_src: *mut RawBackend,
    backend_dst: *mut RawBackend,
    src: *const Tensor,
    dst: *mut Tensor,
) -> bool {
    let from = if backend_src == backend_dst {
        CopySource::This
    } else {
        // SAFETY: a non-null backend handed to a table entry is live.
        unsafe { BackendPtr::from_raw(backend_src) }.map_or(CopySource::Unknown, CopySource::Other)
    };
    object(backend_dst).cpy_tensor_async(from, tensor_arg(src, "cpy_tensor_async"), tensor_arg(dst, "cpy_tensor_async"))
}

unsafe extern "C" fn synchronize(backend: *mut RawBackend) {
    object(backend).synchronize();
}

unsafe extern "C" fn graph_plan_create(backend: *mut RawBackend, graph: *const Graph) -> GraphPlan {
    // SAFETY: a non-null graph handed to a table entry is live.
    let Some(graph) = (unsafe { graph.as_ref() }) else { crate::ggml_abort!("NULL graph passed to graph_plan_create") };
    object(backend).graph_plan_create(graph).map_or(std::ptr::null_mut(), plan_into)
}

unsafe extern "C" fn graph_plan_free(backend: *mut RawBackend, plan: GraphPlan) {
    let object = object(backend);
    if !plan.is_null() {
        // SAFETY: plans of the adapter's backends are made by `graph_plan_create` above and
        // freed once (ggml_backend_graph_plan_free's contract).
        object.graph_plan_free(unsafe { plan_take(plan) });
    }
}

unsafe extern "C" fn graph_plan_update(backend: *mut RawBackend, plan: GraphPlan, graph: *const Graph) {
    // SAFETY: as in `graph_plan_create`.
    let Some(graph) = (unsafe { graph.as_ref() }) else { crate::ggml_abort!("NULL graph passed to graph_plan_update") };
    crate::ggml_assert!(!plan.is_null(), "NULL plan passed to graph_plan_update");
    // SAFETY: as in `graph_plan_free`, the plan being live.
    object(backend).graph_plan_update(unsafe { plan_mut(plan) }, graph);
}

unsafe extern "C" fn graph_plan_compute(backend: *mut RawBackend, plan: GraphPlan) -> Status {
    crate::ggml_assert!(!plan.is_null(), "NULL plan passed to graph_plan_compute");
    // SAFETY: as in `graph_plan_update`.
    object(backend).graph_plan_compute(unsafe { plan_mut(plan) })
}

unsafe extern "C" fn graph_compute(backend: *mut RawBackend, graph: *mut Graph) -> Status {
    // SAFETY: a non-null graph handed to a table entry is live, and the backend's to compute.
    let Some(graph) = (unsafe { graph.as_mut() }) else { crate::ggml_abort!("NULL graph passed to graph_compute") };
    object(backend).graph_compute(graph)
}

unsafe extern "C" fn event_record(backend: *mut RawBackend, event: *mut RawEvent) {
    object(backend).event_record(event_arg(event, "event_record"));
}

unsafe extern "C" fn event_wait(backend: *mut RawBackend, event: *mut RawEvent) {
    object(backend).event_wait(event_arg(event, "event_wait"));
}

unsafe extern "C" fn graph_optimize(backend: *mut RawBackend, graph: *mut Graph, params: *mut GraphOptimizeParams) {
    // SAFETY: a non-null graph and params handed to a table entry are live for the call.
    let (Some(graph), Some(params)) = (unsafe { graph.as_mut() }, unsafe { params.as_mut() }) else {
        crate::ggml_abort!("NULL graph or params passed to graph_optimize")
    };
    object(backend).graph_optimize(graph, params);
}
