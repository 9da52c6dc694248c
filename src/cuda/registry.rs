//! The "CUDA" registry: one device per GPU, named "CUDA0", "CUDA1", ... It joins the device
//! list only when there is a GPU (`listed`), so a machine without one sees what a build
//! without CUDA shows.

use std::ffi::{CStr, c_char, c_void};
use std::sync::OnceLock;

use super::{device, gpus};
use crate::backend::interface::{Device, Reg, RegInterface};
use crate::backend::reg::{RegPtr, StaticReg};

static REG: StaticReg = StaticReg::new(RegInterface {
    get_name: Some(get_name),
    get_device_count: Some(get_device_count),
    get_device: Some(get_device),
    get_proc_address: Some(get_proc_address),
});

/// The devices, made with the registry's first use and kept for the process.
struct Devices(Vec<*mut Device>);
// SAFETY: devices are immutable once made, and ggml lets any thread use them.
unsafe impl Send for Devices {}
unsafe impl Sync for Devices {}

static DEVICES: OnceLock<Devices> = OnceLock::new();

/// `ggml_backend_cuda_reg`.
pub fn reg() -> RegPtr {
    REG.handle()
}

pub(super) fn reg_ptr() -> *mut Reg {
    REG.as_ptr()
}

/// The registry when there is at least one GPU, for the built-in list.
pub fn listed() -> Option<RegPtr> {
    (!devices().is_empty()).then(reg)
}

/// Every device, in GPU order.
pub fn devices() -> &'static [*mut Device] {
    &DEVICES.get_or_init(|| Devices((0..gpus::all().len()).map(device::new).collect())).0
}

/// Device `index`'s context, or `None` with the reason logged on behalf of `call`.
pub fn device_at(index: i32, call: &str) -> Option<&'static device::DeviceContext> {
    let found = usize::try_from(index).ok().and_then(|i| devices().get(i).copied());
    if found.is_none() {
        crate::log_error!("{}: invalid device {} ({} CUDA devices)\n", call, index, devices().len());
    }
    // SAFETY: the registry's devices are ours and live for the process.
    found.map(|d| unsafe { device::context(d) })
}

unsafe extern "C" fn get_name(_reg: *mut Reg) -> *const c_char {
    c"CUDA".as_ptr()
}

unsafe extern "C" fn get_device_count(_reg: *mut Reg) -> usize {
    devices().len()
}

unsafe extern "C" fn get_device(_reg: *mut Reg, index: usize) -> *mut Device {
    match devices().get(index) {
        Some(&d) => d,
        None => crate::ggml_abort!("the CUDA registry has {} devices, not index {}", devices().len(), index),
    }
}

/// One `ggml_backend_feature`: a name and a value, both C strings.
#[repr(C)]
struct Feature {
    name: *const c_char,
    value: *const c_char,
}

struct Features([Feature; 3]);
// SAFETY: the array only holds pointers to string literals.
unsafe impl Sync for Features {}

/// What `ggml_backend_get_features` reports, ending with a NULL name.
static FEATURES: Features = Features([
    Feature { name: c"CUDA".as_ptr(), value: c"1".as_ptr() },
    Feature {
        name: c"EMULATED".as_ptr(),
        value: if cfg!(feature = "cuda-emulator") { c"1".as_ptr() } else { c"0".as_ptr() },
    },
    Feature { name: std::ptr::null(), value: std::ptr::null() },
]);

unsafe extern "C" fn get_features(_reg: *mut Reg) -> *const Feature {
    FEATURES.0.as_ptr()
}

unsafe extern "C" fn get_proc_address(_reg: *mut Reg, name: *const c_char) -> *mut c_void {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: non-null names are C strings.
    let name = unsafe { CStr::from_ptr(name) };
    if name == c"ggml_backend_get_features" {
        let f: unsafe extern "C" fn(*mut Reg) -> *const Feature = get_features;
        return f as *mut c_void;
    }
    if name == c"ggml_backend_register_host_buffer" {
        let f: unsafe extern "C" fn(*mut c_void, usize) -> bool = super::host_buffer::register_c;
        return f as *mut c_void;
    }
    if name == c"ggml_backend_unregister_host_buffer" {
        let f: unsafe extern "C" fn(*mut c_void) = super::host_buffer::unregister_c;
        return f as *mut c_void;
    }
    std::ptr::null_mut()
}
