//! The backend interface tables and the structs that hold them, laid out byte for byte as
//! `src/ggml-backend-impl.h` of ggml 0.25.1 declares them.
//!
//! Backends written in C fill these tables and read these structs directly, so every field is
//! public and keeps its C name. Entries that the header marks optional are `Option`s: a NULL
//! pointer in C is `None` here, and the dispatch code in this module's siblings supplies the
//! documented default.

use std::ffi::{c_char, c_int, c_void};
use std::mem::{offset_of, size_of};

use crate::core::graph::Graph;
use crate::core::status::Status;
use crate::core::tensor::Tensor;

/// `GGML_BACKEND_API_VERSION`: the value a registry's `api_version` must hold.
pub const GGML_BACKEND_API_VERSION: c_int = 2;

/// `enum ggml_backend_buffer_usage`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BufferUsage(pub c_int);

impl BufferUsage {
    pub const ANY: BufferUsage = BufferUsage(0);
    pub const WEIGHTS: BufferUsage = BufferUsage(1);
    pub const COMPUTE: BufferUsage = BufferUsage(2);
}

/// `enum ggml_backend_dev_type`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DevType(pub c_int);

impl DevType {
    pub const CPU: DevType = DevType(0);
    pub const GPU: DevType = DevType(1);
    pub const IGPU: DevType = DevType(2);
    pub const ACCEL: DevType = DevType(3);
    pub const META: DevType = DevType(4);
}

/// `ggml_guid_t`: a pointer to 16 bytes.
pub type GuidPtr = *mut [u8; 16];

/// `ggml_backend_graph_plan_t`: opaque to everyone but the backend that made it.
pub type GraphPlan = *mut c_void;

// ---------------------------------------------------------------------------------------------
// Buffer types

/// `struct ggml_backend_buffer_type_i`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BufferTypeInterface {
    pub get_name: Option<unsafe extern "C" fn(buft: *mut BufferType) -> *const c_char>,
    pub alloc_buffer: Option<unsafe extern "C" fn(buft: *mut BufferType, size: usize) -> *mut Buffer>,
    pub get_alignment: Option<unsafe extern "C" fn(buft: *mut BufferType) -> usize>,
    /// Optional: `SIZE_MAX` when absent.
    pub get_max_size: Option<unsafe extern "C" fn(buft: *mut BufferType) -> usize>,
    /// Optional: `ggml_nbytes` when absent.
    pub get_alloc_size: Option<unsafe extern "C" fn(buft: *mut BufferType, tensor: *const Tensor) -> usize>,
    /// Optional: not host memory when absent.
    pub is_host: Option<unsafe extern "C" fn(buft: *mut BufferType) -> bool>,
}

/// `struct ggml_backend_buffer_type`.
#[repr(C)]
pub struct BufferType {
    pub iface: BufferTypeInterface,
    pub device: *mut Device,
    pub context: *mut c_void,
}

// ---------------------------------------------------------------------------------------------
// Buffers

/// `struct ggml_backend_buffer_i`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BufferInterface {
    /// Optional: nothing to release when absent.
    pub free_buffer: Option<unsafe extern "C" fn(buffer: *mut Buffer)>,
    /// Optional only for zero-sized buffers.
    pub get_base: Option<unsafe extern "C" fn(buffer: *mut Buffer) -> *mut c_void>,
    /// Optional: tensors need no set-up when absent.
    pub init_tensor: Option<unsafe extern "C" fn(buffer: *mut Buffer, tensor: *mut Tensor) -> Status>,
    pub memset_tensor:
        Option<unsafe extern "C" fn(buffer: *mut Buffer, tensor: *mut Tensor, value: u8, offset: usize, size: usize)>,
    pub set_tensor: Option<
        unsafe extern "C" fn(buffer: *mut Buffer, tensor: *mut Tensor, data: *const c_void, offset: usize, size: usize),
    >,
    pub get_tensor: Option<
        unsafe extern "C" fn(buffer: *mut Buffer, tensor: *const Tensor, data: *mut c_void, offset: usize, size: usize),
    >,
    /// Optional: one `set_tensor` per copy when absent.
    pub set_tensor_2d: Option<
        unsafe extern "C" fn(
            buffer: *mut Buffer,
            tensor: *mut Tensor,
            data: *const c_void,
            offset: usize,
            size: usize,
            n_copies: usize,
            stride_tensor: usize,
            stride_data: usize,
        ),
    >,
    /// Optional: one `get_tensor` per copy when absent.
    pub get_tensor_2d: Option<
        unsafe extern "C" fn(
            buffer: *mut Buffer,
            tensor: *const Tensor,
            data: *mut c_void,
            offset: usize,
            size: usize,
            n_copies: usize,
            stride_tensor: usize,
            stride_data: usize,
        ),
    >,
    /// Optional: `dst` lies in this buffer, `src` anywhere; false when the copy is not possible.
    pub cpy_tensor: Option<unsafe extern "C" fn(buffer: *mut Buffer, src: *const Tensor, dst: *mut Tensor) -> bool>,
    pub clear: Option<unsafe extern "C" fn(buffer: *mut Buffer, value: u8)>,
    /// Optional: drops per-tensor state made by `init_tensor`.
    pub reset: Option<unsafe extern "C" fn(buffer: *mut Buffer)>,
}

impl BufferInterface {
    /// A table with every entry NULL (what ggml gives zero-sized buffers).
    pub const EMPTY: BufferInterface = BufferInterface {
        free_buffer: None,
        get_base: None,
        init_tensor: None,
        memset_tensor: None,
        set_tensor: None,
        get_tensor: None,
        set_tensor_2d: None,
        get_tensor_2d: None,
        cpy_tensor: None,
        clear: None,
        reset: None,
    };
}

/// `struct ggml_backend_buffer`.
#[repr(C)]
pub struct Buffer {
    pub iface: BufferInterface,
    pub buft: *mut BufferType,
    pub context: *mut c_void,
    pub size: usize,
    pub usage: BufferUsage,
}

// ---------------------------------------------------------------------------------------------
// Backends (streams)

/// `struct ggml_backend_graph_optimize_params`.
#[repr(C)]
pub struct GraphOptimizeParams {
    pub add_alloc_dep: Option<unsafe extern "C" fn(user_data: *mut c_void, tensor: *mut Tensor, until: *mut Tensor)>,
    pub user_data: *mut c_void,
}

/// `struct ggml_backend_i`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BackendInterface {
    pub get_name: Option<unsafe extern "C" fn(backend: *mut Backend) -> *const c_char>,
    pub free: Option<unsafe extern "C" fn(backend: *mut Backend)>,
    pub set_tensor_async: Option<
        unsafe extern "C" fn(
            backend: *mut Backend,
            tensor: *mut Tensor,
            data: *const c_void,
            offset: usize,
            size: usize,
        ),
    >,
    pub get_tensor_async: Option<
        unsafe extern "C" fn(
            backend: *mut Backend,
            tensor: *const Tensor,
            data: *mut c_void,
            offset: usize,
            size: usize,
        ),
    >,
    pub set_tensor_2d_async: Option<
        unsafe extern "C" fn(
            backend: *mut Backend,
            tensor: *mut Tensor,
            data: *const c_void,
            offset: usize,
            size: usize,
            n_copies: usize,
            stride_tensor: usize,
            stride_data: usize,
        ),
    >,
    pub get_tensor_2d_async: Option<
        unsafe extern "C" fn(
            backend: *mut Backend,
            tensor: *const Tensor,
            data: *mut c_void,
            offset: usize,
            size: usize,
            n_copies: usize,
            stride_tensor: usize,
            stride_data: usize,
        ),
    >,
    pub cpy_tensor_async: Option<
        unsafe extern "C" fn(
            backend_src: *mut Backend,
            backend_dst: *mut Backend,
            src: *const Tensor,
            dst: *mut Tensor,
        ) -> bool,
    >,
    pub synchronize: Option<unsafe extern "C" fn(backend: *mut Backend)>,
    pub graph_plan_create: Option<unsafe extern "C" fn(backend: *mut Backend, cgraph: *const Graph) -> GraphPlan>,
    pub graph_plan_free: Option<unsafe extern "C" fn(backend: *mut Backend, plan: GraphPlan)>,
    pub graph_plan_update: Option<unsafe extern "C" fn(backend: *mut Backend, plan: GraphPlan, cgraph: *const Graph)>,
    pub graph_plan_compute: Option<unsafe extern "C" fn(backend: *mut Backend, plan: GraphPlan) -> Status>,
    pub graph_compute: Option<unsafe extern "C" fn(backend: *mut Backend, cgraph: *mut Graph) -> Status>,
    pub event_record: Option<unsafe extern "C" fn(backend: *mut Backend, event: *mut Event)>,
    pub event_wait: Option<unsafe extern "C" fn(backend: *mut Backend, event: *mut Event)>,
    pub graph_optimize:
        Option<unsafe extern "C" fn(backend: *mut Backend, cgraph: *mut Graph, params: *mut GraphOptimizeParams)>,
}

/// `struct ggml_backend`.
#[repr(C)]
pub struct Backend {
    pub guid: GuidPtr,
    pub iface: BackendInterface,
    pub device: *mut Device,
    pub context: *mut c_void,
}

/// `struct ggml_backend_event`.
#[repr(C)]
pub struct Event {
    pub device: *mut Device,
    pub context: *mut c_void,
}

// ---------------------------------------------------------------------------------------------
// Devices

/// `struct ggml_backend_dev_caps`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct DevCaps {
    pub async_: bool,
    pub host_buffer: bool,
    pub buffer_from_host_ptr: bool,
    pub events: bool,
    pub mmap_support: bool,
}

/// `struct ggml_backend_dev_props`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DevProps {
    pub name: *const c_char,
    pub description: *const c_char,
    pub memory_free: usize,
    pub memory_total: usize,
    pub type_: DevType,
    pub device_id: *const c_char,
    pub caps: DevCaps,
}

/// `struct ggml_backend_device_i`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DeviceInterface {
    pub get_name: Option<unsafe extern "C" fn(dev: *mut Device) -> *const c_char>,
    pub get_description: Option<unsafe extern "C" fn(dev: *mut Device) -> *const c_char>,
    pub get_memory: Option<unsafe extern "C" fn(dev: *mut Device, free: *mut usize, total: *mut usize)>,
    pub get_type: Option<unsafe extern "C" fn(dev: *mut Device) -> DevType>,
    pub get_props: Option<unsafe extern "C" fn(dev: *mut Device, props: *mut DevProps)>,
    pub init_backend: Option<unsafe extern "C" fn(dev: *mut Device, params: *const c_char) -> *mut Backend>,
    pub get_buffer_type: Option<unsafe extern "C" fn(dev: *mut Device) -> *mut BufferType>,
    pub get_host_buffer_type: Option<unsafe extern "C" fn(dev: *mut Device) -> *mut BufferType>,
    pub buffer_from_host_ptr: Option<
        unsafe extern "C" fn(dev: *mut Device, ptr: *mut c_void, size: usize, max_tensor_size: usize) -> *mut Buffer,
    >,
    pub supports_op: Option<unsafe extern "C" fn(dev: *mut Device, op: *const Tensor) -> bool>,
    pub supports_buft: Option<unsafe extern "C" fn(dev: *mut Device, buft: *mut BufferType) -> bool>,
    pub offload_op: Option<unsafe extern "C" fn(dev: *mut Device, op: *const Tensor) -> bool>,
    pub event_new: Option<unsafe extern "C" fn(dev: *mut Device) -> *mut Event>,
    pub event_free: Option<unsafe extern "C" fn(dev: *mut Device, event: *mut Event)>,
    pub event_synchronize: Option<unsafe extern "C" fn(dev: *mut Device, event: *mut Event)>,
}

/// `struct ggml_backend_device`.
#[repr(C)]
pub struct Device {
    pub iface: DeviceInterface,
    pub reg: *mut Reg,
    pub context: *mut c_void,
}

// ---------------------------------------------------------------------------------------------
// Registries

/// `struct ggml_backend_reg_i`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RegInterface {
    pub get_name: Option<unsafe extern "C" fn(reg: *mut Reg) -> *const c_char>,
    pub get_device_count: Option<unsafe extern "C" fn(reg: *mut Reg) -> usize>,
    pub get_device: Option<unsafe extern "C" fn(reg: *mut Reg, index: usize) -> *mut Device>,
    /// Optional: no extra functions when absent.
    pub get_proc_address: Option<unsafe extern "C" fn(reg: *mut Reg, name: *const c_char) -> *mut c_void>,
}

/// `struct ggml_backend_reg`.
#[repr(C)]
pub struct Reg {
    pub api_version: c_int,
    pub iface: RegInterface,
    pub context: *mut c_void,
}

/// `struct ggml_backend_feature`: one entry of a registry's `ggml_backend_get_features` list
/// (which ends with a NULL name).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BackendFeature {
    pub name: *const c_char,
    pub value: *const c_char,
}

/// `ggml_backend_init_t`: the entry point a dynamically loaded backend exports.
pub type BackendInitFn = unsafe extern "C" fn() -> *mut Reg;
/// `ggml_backend_score_t`: 0 means unsupported, higher is preferred.
pub type BackendScoreFn = unsafe extern "C" fn() -> c_int;

// ---------------------------------------------------------------------------------------------
// The meta backend (ggml-backend.h)

/// `GGML_BACKEND_META_MAX_DEVICES`.
pub const MAX_DEVICES: usize = 16;

/// Most segments a split state can describe (the length of its `nr` table).
pub const MAX_SEGMENTS: usize = 16;

/// `enum ggml_backend_meta_split_axis`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SplitAxis(pub c_int);

/// `struct ggml_backend_meta_split_state` (2128 bytes).
///
/// For a split along a dimension, the tensor's extent there is cut into `n_segments` segments
/// and each segment into one piece per device; segment `s` repeats `nr[s]` times. `ne` holds
/// the piece sizes segment-major: `ne[s * n_devices + j]` is device `j`'s piece of segment `s`.
/// Most tensors have one segment that does not repeat.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SplitState {
    pub axis: SplitAxis,
    pub ne: [i64; MAX_SEGMENTS * MAX_DEVICES],
    pub nr: [u32; MAX_SEGMENTS],
    pub n_segments: u32,
}

const _: () = {
    assert!(std::mem::size_of::<SplitState>() == 2128);
    assert!(std::mem::offset_of!(SplitState, ne) == 8);
    assert!(std::mem::offset_of!(SplitState, nr) == 2056);
    assert!(std::mem::offset_of!(SplitState, n_segments) == 2120);
};

/// `ggml_backend_meta_get_split_state_t`: the user's rule for statically allocated tensors.
pub type GetSplitStateFn = unsafe extern "C" fn(tensor: *const Tensor, user_data: *mut c_void) -> SplitState;

/// `ggml_backend_comm_init_t`, `ggml_backend_comm_free_t` and
/// `ggml_backend_comm_allreduce_tensor_t`: a registry's collective operations, by proc address.
pub type CommInitFn = unsafe extern "C" fn(backends: *mut *mut Backend, n_backends: usize) -> *mut c_void;
pub type CommFreeFn = unsafe extern "C" fn(comm_ctx: *mut c_void);
pub type CommAllreduceFn = unsafe extern "C" fn(comm_ctx: *mut c_void, tensors: *mut *mut Tensor) -> bool;

/// `ggml_backend_set_n_threads_t`: a registry's thread-count setter, by proc address.
pub type SetNThreadsFn = unsafe extern "C" fn(backend: *mut Backend, n_threads: c_int);

// Layouts checked against pahole's view of the reference build (/work/shared/abi/layouts.txt).
const _: () = {
    assert!(size_of::<BufferTypeInterface>() == 48);
    assert!(offset_of!(BufferTypeInterface, is_host) == 40);
    assert!(size_of::<BufferType>() == 64);
    assert!(offset_of!(BufferType, device) == 48);
    assert!(offset_of!(BufferType, context) == 56);

    assert!(size_of::<BufferInterface>() == 88);
    assert!(offset_of!(BufferInterface, set_tensor_2d) == 48);
    assert!(offset_of!(BufferInterface, cpy_tensor) == 64);
    assert!(offset_of!(BufferInterface, reset) == 80);
    assert!(size_of::<Buffer>() == 120);
    assert!(offset_of!(Buffer, buft) == 88);
    assert!(offset_of!(Buffer, context) == 96);
    assert!(offset_of!(Buffer, size) == 104);
    assert!(offset_of!(Buffer, usage) == 112);

    assert!(size_of::<GraphOptimizeParams>() == 16);
    assert!(size_of::<BackendInterface>() == 128);
    assert!(offset_of!(BackendInterface, cpy_tensor_async) == 48);
    assert!(offset_of!(BackendInterface, graph_compute) == 96);
    assert!(offset_of!(BackendInterface, graph_optimize) == 120);
    assert!(size_of::<Backend>() == 152);
    assert!(offset_of!(Backend, iface) == 8);
    assert!(offset_of!(Backend, device) == 136);
    assert!(offset_of!(Backend, context) == 144);
    assert!(size_of::<Event>() == 16);

    assert!(size_of::<DevCaps>() == 5);
    assert!(size_of::<DevProps>() == 56);
    assert!(offset_of!(DevProps, type_) == 32);
    assert!(offset_of!(DevProps, device_id) == 40);
    assert!(offset_of!(DevProps, caps) == 48);
    assert!(size_of::<DeviceInterface>() == 120);
    assert!(offset_of!(DeviceInterface, buffer_from_host_ptr) == 64);
    assert!(offset_of!(DeviceInterface, event_synchronize) == 112);
    assert!(size_of::<Device>() == 136);
    assert!(offset_of!(Device, reg) == 120);
    assert!(offset_of!(Device, context) == 128);

    assert!(size_of::<RegInterface>() == 32);
    assert!(size_of::<Reg>() == 48);
    assert!(offset_of!(Reg, iface) == 8);
    assert!(offset_of!(Reg, context) == 40);
};
