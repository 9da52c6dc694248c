//! The built-in "CPU" registry and its one device: system memory, the CPU host buffer type,
//! buffers over caller-owned host memory, and the op coverage of ggml's CPU backend.
//!
//! CPU compute is not part of this library yet, so the device answers every query but cannot
//! start a backend: `init_backend` logs why and returns NULL.

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::LazyLock;

use super::buffer::BufferTypePtr;
use super::cpu_buffer::{cpu_buffer_from_ptr, cpu_buffer_type};
use super::interface::{
    Backend, Buffer, BufferType, DevCaps, DevProps, DevType, Device, DeviceInterface, GGML_BACKEND_API_VERSION, Reg,
    RegInterface,
};
use super::registry::RegPtr;
use crate::core::op::Op;
use crate::core::tensor::Tensor;
use crate::core::types::Type;

/// A registry or device defined as a `static`. C code receives mutable pointers to these (as
/// to ggml's own statics), so the value sits in an `UnsafeCell`.
struct Shared<T>(UnsafeCell<T>);

// SAFETY: nothing in this library writes to the CPU registry or device after start-up; what
// C code may do through the pointers it gets is the same as with ggml's own statics.
unsafe impl<T> Sync for Shared<T> {}

static CPU_REG: Shared<Reg> = Shared(UnsafeCell::new(Reg {
    api_version: GGML_BACKEND_API_VERSION,
    iface: RegInterface {
        get_name: Some(reg_get_name),
        get_device_count: Some(reg_get_device_count),
        get_device: Some(reg_get_device),
        get_proc_address: Some(reg_get_proc_address),
    },
    context: std::ptr::null_mut(),
}));

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
    reg: CPU_REG.0.get(),
    context: std::ptr::null_mut(),
}));

/// The CPU registry (`ggml_backend_cpu_reg`).
pub fn cpu_reg() -> RegPtr {
    // SAFETY: a static lives for the whole process.
    unsafe { RegPtr::from_raw(CPU_REG.0.get()) }.unwrap_or_else(|| unreachable!("statics are never null"))
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

/// `ggml_backend_dev_get_extra_bufts_t` for the CPU device: ggml's CPU backend may add
/// repacking or AMX buffer types; this build has none, so the list is just its terminator.
unsafe extern "C" fn dev_get_extra_bufts(_dev: *mut Device) -> *mut *mut BufferType {
    static NONE: Shared<[*mut BufferType; 1]> = Shared(UnsafeCell::new([std::ptr::null_mut()]));
    NONE.0.get().cast()
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
    std::ptr::null_mut()
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

/// Physical memory; ggml counts all of it as free, "free" being ill-defined for system RAM.
fn system_memory() -> usize {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGE_SIZE)) };
    usize::try_from(pages).unwrap_or(0).saturating_mul(usize::try_from(page_size).unwrap_or(0))
}

unsafe extern "C" fn dev_get_memory(_dev: *mut Device, free: *mut usize, total: *mut usize) {
    let total_bytes = system_memory();
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
    crate::log_error!(
        "ggml_backend_cpu_device_init_backend: CPU compute is not available yet in this build; no CPU backend can be created\n"
    );
    std::ptr::null_mut()
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

/// The type ggml's CPU matrix multiplication converts `src1` rows to for a `src0` of type `t`
/// (`vec_dot_type` of its CPU type traits; F32 for types without a dot product).
fn vec_dot_type(t: Type) -> Type {
    match t {
        Type::F16 => Type::F16,
        Type::BF16 => Type::BF16,
        Type::Q1_0 | Type::Q2_0 | Type::Q4_0 | Type::Q5_0 | Type::Q8_0 | Type::MXFP4 | Type::NVFP4 | Type::IQ4_NL => {
            Type::Q8_0
        }
        Type::Q4_1 | Type::Q5_1 | Type::Q8_1 => Type::Q8_1,
        Type::Q2_K
        | Type::Q3_K
        | Type::Q4_K
        | Type::Q5_K
        | Type::Q6_K
        | Type::IQ2_XXS
        | Type::IQ2_XS
        | Type::IQ3_XXS
        | Type::IQ3_S
        | Type::IQ2_S
        | Type::IQ1_S
        | Type::IQ1_M
        | Type::IQ4_XS
        | Type::TQ1_0
        | Type::TQ2_0 => Type::Q8_K,
        _ => Type::F32,
    }
}

/// `GGML_HINT_SRC0_IS_HADAMARD`, kept by MUL_MAT in op_params[1].
const HINT_SRC0_IS_HADAMARD: i32 = 1;

/// Which ops ggml's CPU backend computes, with the same exceptions it makes.
fn cpu_supports_op(op: &Tensor) -> bool {
    if matches!(op.op, Op::NONE | Op::RESHAPE | Op::VIEW | Op::PERMUTE | Op::TRANSPOSE) {
        return true;
    }
    // SAFETY: source slots hold null or live tensors of the same graph.
    let src = |i: usize| unsafe { op.src[i].as_ref() };
    let src_type = |i: usize| match src(i) {
        Some(s) => s.type_,
        None => crate::ggml_abort!("{} node '{}' has no source {}", op.op.name(), op.name(), i),
    };
    match op.op {
        Op::CPY | Op::SET_ROWS => !matches!(
            op.type_,
            Type::IQ3_XXS | Type::IQ3_S | Type::IQ2_XXS | Type::IQ2_XS | Type::IQ2_S | Type::IQ1_S | Type::IQ1_M
        ),
        Op::MUL_MAT => {
            let (t0, t1) = (src_type(0), src_type(1));
            if op.op_param_i32(1) == HINT_SRC0_IS_HADAMARD && t0 == Type::F32 && op.type_ == Type::F32 {
                return t1 == Type::F32 || t1 == Type::F16;
            }
            t1 == Type::F32 || t1 == vec_dot_type(t0)
        }
        Op::SOFT_MAX_BACK => src_type(0) == Type::F32 && src_type(1) == Type::F32 && op.op_param_f32(1) == 0.0,
        Op::IM2COL_BACK => src_type(0) == Type::F32 && matches!(src_type(1), Type::F32 | Type::F16),
        Op::GET_ROWS_BACK => matches!(src_type(0), Type::F32 | Type::F16),
        Op::OUT_PROD => {
            let (s0, s1) = match (src(0), src(1)) {
                (Some(a), Some(b)) => (a, b),
                _ => crate::ggml_abort!("OUT_PROD node '{}' needs two sources", op.name()),
            };
            let src0_ok = s0.type_ == Type::F32
                || ((s0.type_ == Type::F16 || s0.type_.is_quantized()) && s0.ne[2] == s1.ne[2] && s0.ne[3] == s1.ne[3]);
            src0_ok && s1.type_ == Type::F32 && op.type_ == Type::F32
        }
        Op::CONV_2D => src(0).is_some_and(|s| s.is_contiguous()),
        Op::SSM_SCAN => op.op_param_i32(0) == 1 || src(3).is_some_and(|s| s.ne[0] == 1),
        _ => true,
    }
}

unsafe extern "C" fn dev_supports_op(_dev: *mut Device, op: *const Tensor) -> bool {
    // SAFETY: callers pass a live tensor (ggml_backend_dev_supports_op's contract).
    match unsafe { op.as_ref() } {
        Some(op) => cpu_supports_op(op),
        None => crate::ggml_abort!("NULL op passed to the CPU device's supports_op"),
    }
}

unsafe extern "C" fn dev_supports_buft(_dev: *mut Device, buft: *mut BufferType) -> bool {
    // SAFETY: callers pass a live buffer type.
    unsafe { BufferTypePtr::from_raw(buft) }.is_some_and(|b| b.is_host())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::device::DevicePtr;

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
        assert!(dev.init_backend(None).is_null());
        assert!(!reg.proc_address(c"ggml_backend_dev_get_extra_bufts").is_null());
        assert!(reg.proc_address(c"ggml_backend_no_such_function").is_null());
    }
}
