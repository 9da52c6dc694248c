//! ggml-rs's CPU backend as a ggml backend plugin: the entry points a dynamically loaded
//! backend exports (`ggml_backend_init`, `ggml_backend_score`; see `GGML_BACKEND_DL_IMPL` in
//! ggml's `ggml-backend-impl.h`), so that the real ggml can load our kernels with
//! `ggml_backend_load` or `GGML_BACKEND_PATH` and run them beside its own CPU backend.
//!
//! The registry is "RS" and its one device "RS-CPU", so neither clashes with the reference's
//! "CPU". The device reports the CPU type: it is one, and `test-backend-ops` then times it
//! with the same CPU-sized workloads as the real CPU backend. A CPU-type device is skipped by
//! `test-backend-ops` unless named with `-b RS-CPU`, and `ggml_backend_init_by_type(CPU)`
//! (the reference the tests compare against) keeps finding ggml's own CPU device, which is
//! registered before any loaded plugin.
//!
//! Everything else forwards to this library's CPU device and backend
//! (`ggml_rs::cpu::device`, `ggml_rs::cpu::backend`): backends are CPU backends whose
//! device and name are RS-CPU's, buffers are CPU buffers of a buffer type that belongs to
//! RS-CPU, and the registry answers the CPU registry's extra functions
//! (`ggml_backend_cpu_set_use_ref`, `ggml_backend_set_n_threads`, ...).
//!
//! `scripts/build-plugin` links this static library into `libggml-rs-cpu.so` with a version
//! script that hides every other symbol, so the ggml_* functions inside bind to our code even
//! in a process where the reference libggml is loaded too.

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::{LazyLock, OnceLock};

use ggml_rs::backend::buffer::BufferTypePtr;
use ggml_rs::backend::device::DevicePtr;
use ggml_rs::backend::host_buffer::cpu_buffer_type;
use ggml_rs::backend::interface::{
    Backend, Buffer, BufferType, BufferTypeInterface, DevProps, DevType, Device, DeviceInterface,
    GGML_BACKEND_API_VERSION, Reg, RegInterface,
};
use ggml_rs::core::tensor::{Tensor, TensorPtr};
use ggml_rs::cpu;
use ggml_rs::cpu::device::cpu_reg;

/// The registry's name.
const REG_NAME: &CStr = c"RS";
/// The device's name, also given to its backends and its buffer type.
const DEVICE_NAME: &CStr = c"RS-CPU";

/// A registry or device defined as a `static`: ggml receives mutable pointers to these, as to
/// its own backends' statics, so the value sits in an `UnsafeCell`.
struct Shared<T>(UnsafeCell<T>);

// SAFETY: nothing writes to the registry or the device after start-up; ggml only reads them.
unsafe impl<T> Sync for Shared<T> {}

static RS_REG: Shared<Reg> = Shared(UnsafeCell::new(Reg {
    api_version: GGML_BACKEND_API_VERSION,
    iface: RegInterface {
        get_name: Some(reg_get_name),
        get_device_count: Some(reg_get_device_count),
        get_device: Some(reg_get_device),
        get_proc_address: Some(reg_get_proc_address),
    },
    context: std::ptr::null_mut(),
}));

static RS_DEVICE: Shared<Device> = Shared(UnsafeCell::new(Device {
    iface: DeviceInterface {
        get_name: Some(dev_get_name),
        get_description: Some(dev_get_description),
        get_memory: Some(dev_get_memory),
        get_type: Some(dev_get_type),
        get_props: Some(dev_get_props),
        init_backend: Some(dev_init_backend),
        get_buffer_type: Some(dev_get_buffer_type),
        get_host_buffer_type: None,
        buffer_from_host_ptr: Some(dev_buffer_from_host_ptr),
        supports_op: Some(dev_supports_op),
        supports_buft: Some(dev_supports_buft),
        offload_op: None,
        event_new: None,
        event_free: None,
        event_synchronize: None,
    },
    reg: RS_REG.0.get(),
    context: std::ptr::null_mut(),
}));

/// This library's own CPU device, which RS-CPU forwards its generic queries to.
fn cpu_device() -> DevicePtr {
    cpu_reg().dev_get(0)
}

// ---------------------------------------------------------------------------------------------
// The entry points

/// `ggml_backend_init`: the plugin's registry. Also detects the CPU's features, once.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_init() -> *mut Reg {
    cpu::api::cpu_init();
    RS_REG.0.get()
}

/// `ggml_backend_score`: non-zero, as this build picks its kernels at run time and so runs on
/// any x86-64 or AArch64 processor. The score only ranks variants of one backend found by
/// `ggml_backend_load_all`; a plugin loaded by path just needs it to be non-zero.
#[unsafe(no_mangle)]
pub extern "C" fn ggml_backend_score() -> c_int {
    1
}

// ---------------------------------------------------------------------------------------------
// Registry

unsafe extern "C" fn reg_get_name(_reg: *mut Reg) -> *const c_char {
    REG_NAME.as_ptr()
}

unsafe extern "C" fn reg_get_device_count(_reg: *mut Reg) -> usize {
    1
}

unsafe extern "C" fn reg_get_device(_reg: *mut Reg, index: usize) -> *mut Device {
    ggml_rs::ggml_assert!(index == 0, "the RS registry has one device, not index {}", index);
    RS_DEVICE.0.get()
}

/// What the CPU registry answers (the CPU backend's extra functions among them: they work on
/// RS-CPU backends, which are CPU backends); null for other names.
unsafe extern "C" fn reg_get_proc_address(_reg: *mut Reg, name: *const c_char) -> *mut c_void {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: non-null names are C strings (ggml_backend_reg_get_proc_address's contract).
    let name = unsafe { CStr::from_ptr(name) };
    cpu_reg().proc_address(name)
}

// ---------------------------------------------------------------------------------------------
// Device

unsafe extern "C" fn dev_get_name(_dev: *mut Device) -> *const c_char {
    DEVICE_NAME.as_ptr()
}

/// "ggml-rs" and the CPU device's description (the processor's model name).
static DESCRIPTION: LazyLock<CString> = LazyLock::new(|| {
    let desc = cpu_device().description();
    let model = if desc.is_null() {
        String::from("CPU")
    } else {
        // SAFETY: device descriptions are C strings that live as long as the device.
        unsafe { CStr::from_ptr(desc) }.to_string_lossy().into_owned()
    };
    CString::new(format!("ggml-rs ({})", model.replace('\0', ""))).unwrap_or_default()
});

unsafe extern "C" fn dev_get_description(_dev: *mut Device) -> *const c_char {
    DESCRIPTION.as_ptr()
}

unsafe extern "C" fn dev_get_memory(_dev: *mut Device, free: *mut usize, total: *mut usize) {
    let (f, t) = cpu_device().memory();
    // SAFETY: callers pass valid out-pointers (ggml_backend_dev_memory's contract).
    unsafe {
        *free = f;
        *total = t;
    }
}

unsafe extern "C" fn dev_get_type(_dev: *mut Device) -> DevType {
    DevType::CPU
}

/// The CPU device's properties under RS-CPU's name and description.
unsafe extern "C" fn dev_get_props(dev: *mut Device, props: *mut DevProps) {
    let mut p = cpu_device().props();
    // SAFETY: the entries are this file's own and read nothing through `dev`.
    unsafe {
        p.name = dev_get_name(dev);
        p.description = dev_get_description(dev);
    }
    p.type_ = DevType::CPU;
    // SAFETY: `props` is a valid struct to fill (ggml_backend_dev_get_props's contract).
    unsafe { *props = p };
}

unsafe extern "C" fn backend_get_name(_backend: *mut Backend) -> *const c_char {
    DEVICE_NAME.as_ptr()
}

/// A CPU backend of this library, presented as RS-CPU's: its device is RS-CPU and its name
/// "RS-CPU". Its context, GUID and every other entry stay the CPU backend's, so the CPU
/// registry's extra functions accept it.
unsafe extern "C" fn dev_init_backend(_dev: *mut Device, _params: *const c_char) -> *mut Backend {
    let backend = cpu::device::init().as_ptr();
    // SAFETY: `init` returns a live backend that nothing else references yet; its table is a
    // copy owned by the backend, so renaming it changes no other backend.
    unsafe {
        (*backend).device = RS_DEVICE.0.get();
        (*backend).iface.get_name = Some(backend_get_name);
    }
    backend
}

unsafe extern "C" fn buft_get_name(_buft: *mut BufferType) -> *const c_char {
    DEVICE_NAME.as_ptr()
}

/// A buffer type address that may live in a `static`.
struct BufferTypeAddr(*mut BufferType);

// SAFETY: the buffer type is made once, leaked, and never written afterwards.
unsafe impl Send for BufferTypeAddr {}
// SAFETY: as above.
unsafe impl Sync for BufferTypeAddr {}

/// RS-CPU's buffer type: the CPU buffer type's table and context under the name "RS-CPU",
/// belonging to RS-CPU (ggml_backend_buft_get_device), allocating ordinary CPU buffers.
fn rs_buffer_type() -> *mut BufferType {
    static BUFT: OnceLock<BufferTypeAddr> = OnceLock::new();
    BUFT.get_or_init(|| {
        // SAFETY: the CPU buffer type is a static of this library.
        let cpu = unsafe { &*cpu_buffer_type().as_ptr() };
        let iface = BufferTypeInterface { get_name: Some(buft_get_name), ..cpu.iface };
        let buft = BufferType { iface, device: RS_DEVICE.0.get(), context: cpu.context };
        BufferTypeAddr(Box::into_raw(Box::new(buft)))
    })
    .0
}

unsafe extern "C" fn dev_get_buffer_type(_dev: *mut Device) -> *mut BufferType {
    rs_buffer_type()
}

/// Buffers over caller-owned host memory, as the CPU device makes them.
unsafe extern "C" fn dev_buffer_from_host_ptr(
    _dev: *mut Device,
    ptr: *mut c_void,
    size: usize,
    max_tensor_size: usize,
) -> *mut Buffer {
    // SAFETY: the caller's promises about `ptr` and `size` are passed on unchanged.
    let buffer = unsafe { cpu_device().buffer_from_host_ptr(ptr, size, max_tensor_size) };
    buffer.map_or(std::ptr::null_mut(), |b| b.as_ptr())
}

/// The ops this library's CPU kernels compute (not the list ggml's CPU backend claims), so
/// that test-backend-ops reports the others as unsupported instead of running them.
unsafe extern "C" fn dev_supports_op(_dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: the caller passes a live tensor (ggml_backend_dev_supports_op's contract).
    unsafe { TensorPtr::from_raw(op.cast_mut()) }.is_some_and(|op| cpu_device().supports_op(op))
}

/// Any host buffer: CPU kernels read and write tensor data in place.
unsafe extern "C" fn dev_supports_buft(_dev: *mut Device, buft: *mut BufferType) -> bool {
    // SAFETY: callers pass a live buffer type.
    unsafe { BufferTypePtr::from_raw(buft) }.is_some_and(|b| b.is_host())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ggml_rs::backend::backend::BackendPtr;
    use ggml_rs::backend::reg::RegPtr;

    fn reg() -> RegPtr {
        // SAFETY: the registry is a static.
        unsafe { RegPtr::from_raw(ggml_backend_init()) }.expect("registry")
    }

    #[test]
    fn registry_has_one_rs_cpu_device() {
        let reg = reg();
        assert_eq!(reg.api_version(), GGML_BACKEND_API_VERSION);
        assert_eq!(reg.name_lossy(), "RS");
        assert_eq!(reg.dev_count(), 1);
        let dev = reg.dev_get(0);
        assert_eq!(dev.name_lossy(), "RS-CPU");
        assert_eq!(dev.dev_type(), DevType::CPU);
        assert_eq!(dev.reg(), reg.as_ptr());
        let props = dev.props();
        assert_eq!(props.type_, DevType::CPU);
        assert!(props.memory_total > 0);
        assert!(ggml_backend_score() > 0);
    }

    #[test]
    fn buffer_type_belongs_to_the_device() {
        // SAFETY: the buffer type is leaked, so it lives for the process.
        let buft = unsafe { BufferTypePtr::from_raw(rs_buffer_type()) }.expect("buffer type");
        assert_eq!(buft.name_lossy(), "RS-CPU");
        assert_eq!(buft.device(), RS_DEVICE.0.get());
        assert!(buft.is_host());
        assert_eq!(buft.alignment(), cpu_buffer_type().alignment());
        let b = buft.alloc_buffer(256).expect("buffer");
        assert_eq!(b.buft(), buft);
        b.free();
    }

    #[test]
    fn backends_are_cpu_backends_named_rs_cpu() {
        let dev = cpu_device();
        assert_ne!(dev.as_ptr(), RS_DEVICE.0.get());
        // SAFETY: the device entry makes a live backend, freed below.
        let b =
            unsafe { BackendPtr::from_raw(dev_init_backend(RS_DEVICE.0.get(), std::ptr::null())) }.expect("backend");
        assert!(cpu::backend::is_cpu(b));
        assert_eq!(b.device_ptr(), RS_DEVICE.0.get());
        // SAFETY: backend names are static C strings.
        assert_eq!(unsafe { CStr::from_ptr(b.name()) }, DEVICE_NAME);
        let set_use_ref = reg().proc_address(c"ggml_backend_cpu_set_use_ref");
        assert!(!set_use_ref.is_null());
        // SAFETY: the address is ggml_backend_cpu_set_use_ref's, called with a CPU backend.
        unsafe {
            let f: unsafe extern "C" fn(*mut Backend, bool) = std::mem::transmute(set_use_ref);
            f(b.as_ptr(), true);
        }
        assert!(reg().proc_address(c"ggml_backend_no_such_function").is_null());
        b.free();
    }
}
