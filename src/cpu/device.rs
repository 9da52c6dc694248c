//! The built-in "CPU" registry and its one device: system memory, the CPU host buffer type,
//! buffers over caller-owned host memory. Backends, op coverage and the registry's extra
//! functions come from the CPU backend (`crate::cpu::backend`, `crate::cpu::kernels`).

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::LazyLock;

use crate::backend::buffer::BufferTypePtr;
use crate::backend::host_buffer::{cpu_buffer_from_ptr, cpu_buffer_type};
use crate::backend::interface::{
    Backend, Buffer, BufferType, DevCaps, DevProps, DevType, Device, DeviceInterface, Reg, RegInterface,
};
use crate::backend::reg::{RegPtr, StaticReg};
use crate::core::machine::physical_memory;
use crate::core::tensor::Tensor;
use crate::cpu::repack;

/// The device defined as a `static`. C code receives mutable pointers to it (as to ggml's own
/// statics), so the value sits in an `UnsafeCell`.
struct Shared<T>(UnsafeCell<T>);

// SAFETY: nothing in this library writes to the CPU device after start-up; what
// C code may do through the pointers it gets is the same as with ggml's own statics.
unsafe impl<T> Sync for Shared<T> {}

static CPU_REG: StaticReg = StaticReg::new(RegInterface {
    get_name: Some(reg_get_name),
    get_device_count: Some(reg_get_device_count),
    get_device: Some(reg_get_device),
    get_proc_address: Some(reg_get_proc_address),
});

static CPU_DEVICE: Shared<Device> = Shared(UnsafeCell::new(Device {
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
    reg: CPU_REG.as_ptr(),
    context: std::ptr::null_mut(),
}));

/// The CPU registry (`ggml_backend_cpu_reg`).
pub fn cpu_reg() -> RegPtr {
    CPU_REG.handle()
}

// ---------------------------------------------------------------------------------------------
// Registry

unsafe extern "C" fn reg_get_name(_reg: *mut Reg) -> *const c_char {
    c"CPU".as_ptr()
}

unsafe extern "C" fn reg_get_device_count(_reg: *mut Reg) -> usize {
    1
}

unsafe extern "C" fn reg_get_device(_reg: *mut Reg, index: usize) -> *mut Device {
    crate::ggml_assert!(index == 0, "the CPU registry has one device, not index {}", index);
    CPU_DEVICE.0.get()
}

/// `ggml_backend_dev_get_extra_bufts_t` for the CPU device: the NULL-terminated list of the
/// buffer types whose weights it computes on besides host memory: "CPU_REPACK" where this
/// processor runs the repacked product.
unsafe extern "C" fn dev_get_extra_bufts(_dev: *mut Device) -> *mut *mut BufferType {
    struct List([*mut BufferType; 2]);
    // SAFETY: the list is never written after it is made; the pointers are statics.
    unsafe impl Send for List {}
    // SAFETY: as above.
    unsafe impl Sync for List {}
    static LIST: LazyLock<List> = LazyLock::new(|| {
        let repack = if repack::offered() { repack::buffer_type().as_ptr() } else { std::ptr::null_mut() };
        List([repack, std::ptr::null_mut()])
    });
    // (callers read the list only, as ggml's own; the pointer is mutable in the C signature)
    LIST.0.as_ptr().cast_mut()
}

/// The CPU registry's extra functions: those of ggml's that this build implements.
unsafe extern "C" fn reg_get_proc_address(_reg: *mut Reg, name: *const c_char) -> *mut c_void {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: non-null names are C strings.
    let name = unsafe { CStr::from_ptr(name) };
    if name == c"ggml_backend_dev_get_extra_bufts" {
        let f: unsafe extern "C" fn(*mut Device) -> *mut *mut BufferType = dev_get_extra_bufts;
        return f as *mut c_void;
    }
    crate::cpu::backend::proc_address(name)
}

// ---------------------------------------------------------------------------------------------
// Device

unsafe extern "C" fn dev_get_name(_dev: *mut Device) -> *const c_char {
    c"CPU".as_ptr()
}

/// The first "model name" line of `/proc/cpuinfo`, trimmed; "CPU" when there is none.
fn cpu_model_name(cpuinfo: &str) -> Option<&str> {
    cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map(|(_, value)| value.trim())
}

static DESCRIPTION: LazyLock<CString> = LazyLock::new(|| {
    let cpuinfo = std::fs::read("/proc/cpuinfo").unwrap_or_default();
    let cpuinfo = String::from_utf8_lossy(&cpuinfo);
    let name = cpu_model_name(&cpuinfo).unwrap_or("CPU");
    CString::new(name.replace('\0', "")).unwrap_or_default()
});

unsafe extern "C" fn dev_get_description(_dev: *mut Device) -> *const c_char {
    DESCRIPTION.as_ptr()
}

unsafe extern "C" fn dev_get_memory(_dev: *mut Device, free: *mut usize, total: *mut usize) {
    // ggml counts all physical memory as free, "free" being ill-defined for system RAM.
    let total_bytes = physical_memory();
    // SAFETY: callers pass valid out-pointers (ggml_backend_dev_memory's contract).
    unsafe {
        *total = total_bytes;
        *free = total_bytes;
    }
}

unsafe extern "C" fn dev_get_type(_dev: *mut Device) -> DevType {
    DevType::CPU
}

unsafe extern "C" fn dev_get_props(dev: *mut Device, props: *mut DevProps) {
    // SAFETY: `props` is a valid struct to fill (ggml_backend_dev_get_props zeroes it first).
    let props = unsafe { &mut *props };
    // SAFETY: the entries are this file's own, called with the device they belong to.
    unsafe {
        props.name = dev_get_name(dev);
        props.description = dev_get_description(dev);
        props.type_ = dev_get_type(dev);
        dev_get_memory(dev, &mut props.memory_free, &mut props.memory_total);
    }
    props.caps =
        DevCaps { async_: false, host_buffer: false, buffer_from_host_ptr: true, events: false, mmap_support: true };
}

unsafe extern "C" fn dev_init_backend(_dev: *mut Device, _params: *const c_char) -> *mut Backend {
    crate::cpu::backend::init().as_ptr()
}

unsafe extern "C" fn dev_get_buffer_type(_dev: *mut Device) -> *mut BufferType {
    cpu_buffer_type().as_ptr()
}

unsafe extern "C" fn dev_buffer_from_host_ptr(
    _dev: *mut Device,
    ptr: *mut c_void,
    size: usize,
    _max_tensor_size: usize,
) -> *mut Buffer {
    cpu_buffer_from_ptr(ptr, size).as_ptr()
}

unsafe extern "C" fn dev_supports_op(_dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: callers pass a live tensor (ggml_backend_dev_supports_op's contract).
    match unsafe { op.as_ref() } {
        // an op on weights in an extra buffer type is that type's to accept
        // SAFETY: an op's sources are null or live tensors.
        Some(op) if op.src.iter().any(|&s| unsafe { s.as_ref() }.is_some_and(repack::in_repack_buffer)) => {
            repack::supports_op(op)
        }
        Some(op) => crate::cpu::kernels::supports_op(op),
        None => crate::ggml_abort!("NULL op passed to the CPU device's supports_op"),
    }
}

unsafe extern "C" fn dev_supports_buft(_dev: *mut Device, buft: *mut BufferType) -> bool {
    // SAFETY: callers pass a live buffer type.
    unsafe { BufferTypePtr::from_raw(buft) }.is_some_and(|b| b.is_host() || b == repack::buffer_type())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::device::DevicePtr;
    use crate::backend::interface::GGML_BACKEND_API_VERSION;

    #[test]
    fn model_name_is_trimmed_first_entry() {
        let info = "processor\t: 0\nmodel name\t:  Fancy CPU 9000  \nmodel name\t: other\n";
        assert_eq!(cpu_model_name(info), Some("Fancy CPU 9000"));
        assert_eq!(cpu_model_name("processor : 0\n"), None);
    }

    #[test]
    fn cpu_registry_has_one_cpu_device() {
        let reg = cpu_reg();
        assert_eq!(reg.name_lossy(), "CPU");
        assert_eq!(reg.api_version(), GGML_BACKEND_API_VERSION);
        assert_eq!(reg.dev_count(), 1);
        // SAFETY: the CPU device is a static.
        let dev = unsafe { DevicePtr::from_raw(reg.dev_get(0)) }.expect("CPU device");
        assert_eq!(dev.name_lossy(), "CPU");
        assert_eq!(dev.dev_type(), DevType::CPU);
        assert_eq!(dev.reg(), reg.as_ptr());
        let props = dev.props();
        assert_eq!(props.type_, DevType::CPU);
        assert!(props.caps.buffer_from_host_ptr && props.caps.mmap_support);
        assert!(!props.caps.async_ && !props.caps.events && !props.caps.host_buffer);
        assert!(props.device_id.is_null());
        assert!(props.memory_total > 0 && props.memory_free == props.memory_total);
        assert!(dev.host_buffer_type().is_none());
        assert!(dev.supports_buft(cpu_buffer_type()));
        let backend = dev.init_backend(None);
        assert!(!backend.is_null());
        // SAFETY: a backend the device just created, freed once.
        unsafe { crate::backend::backend::BackendPtr::from_raw(backend) }.expect("CPU backend").free();
        assert!(!reg.proc_address(c"ggml_backend_cpu_set_use_ref").is_null());
        assert!(!reg.proc_address(c"ggml_backend_dev_get_extra_bufts").is_null());
        assert!(reg.proc_address(c"ggml_backend_no_such_function").is_null());
    }

    #[test]
    fn the_extra_buffer_types_are_the_repacked_one_where_it_runs() {
        // SAFETY: the CPU device is a static; the list is NULL-terminated.
        let extra = unsafe { dev_get_extra_bufts(CPU_DEVICE.0.get()) };
        // SAFETY: as above.
        let first = unsafe { *extra };
        if repack::offered() {
            assert_eq!(first, repack::buffer_type().as_ptr());
            // SAFETY: as above: the list holds a terminator after the one type.
            assert!(unsafe { *extra.add(1) }.is_null());
        } else {
            assert!(first.is_null());
        }
        // SAFETY: the device and the buffer type are statics.
        assert!(unsafe { dev_supports_buft(CPU_DEVICE.0.get(), repack::buffer_type().as_ptr()) });
    }
}
