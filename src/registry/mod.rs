//! Backend registries (`ggml_backend_reg_*`) and the process-wide list of registries and
//! devices that applications enumerate: lookups by index, name (ASCII case-insensitive) and
//! device type, and the shortcuts that pick a device and start a backend on it.
//!
//! The list starts with the built-in CPU registry; plugins loaded by [`loader`] join
//! it together with the library handle that keeps their code mapped.

use std::ffi::{CStr, c_char};
use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::backend::backend::BackendPtr;
use crate::backend::device::DevicePtr;
use crate::backend::interface::{Backend, DevType};
use crate::backend::reg::RegPtr;
use loader::Library;

mod builtin;
pub mod loader;

struct Entry {
    reg: RegPtr,
    /// The plugin library the registry came from, held only to be closed when the entry is
    /// dropped (which unmaps the plugin's code).
    _library: Option<Library>,
}

#[derive(Default)]
struct Registry {
    backends: Vec<Entry>,
    devices: Vec<DevicePtr>,
}

impl Registry {
    fn has_reg(&self, reg: RegPtr) -> bool {
        self.backends.iter().any(|e| e.reg == reg)
    }

    fn add_device(&mut self, device: DevicePtr) {
        if !self.devices.contains(&device) {
            self.devices.push(device);
        }
    }
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| {
    let mut registry = Registry::default();
    for reg in builtin::regs() {
        let devices = reg_devices(reg);
        registry.backends.push(Entry { reg, _library: None });
        for d in devices {
            registry.add_device(d);
        }
    }
    Mutex::new(registry)
});

fn lock() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// The devices a registry reports, asked before the list is locked (a backend's code may
/// itself call into the registry).
fn reg_devices(reg: RegPtr) -> Vec<DevicePtr> {
    (0..reg.dev_count()).map(|i| reg.dev_get(i)).collect()
}

/// Adds `reg` and its devices (`ggml_backend_register`); a registry already listed is
/// ignored, and so is the library that came with it.
pub fn register_backend(reg: RegPtr, library: Option<Library>) {
    if lock().has_reg(reg) {
        return;
    }
    let devices = reg_devices(reg);
    let mut registry = lock();
    if registry.has_reg(reg) {
        return;
    }
    registry.backends.push(Entry { reg, _library: library });
    for d in devices {
        registry.add_device(d);
    }
}

/// Adds one device (`ggml_backend_device_register`), unless it is already listed.
pub fn register_device(device: DevicePtr) {
    lock().add_device(device);
}

/// Removes `reg` and its devices; its library (if any) is closed. Unknown registries are
/// reported unless `silent`.
pub fn unregister_backend(reg: RegPtr, silent: bool) {
    let removed = {
        let mut registry = lock();
        let Some(pos) = registry.backends.iter().position(|e| e.reg == reg) else {
            drop(registry);
            if !silent {
                crate::log_error!("ggml_backend_unload: backend not found\n");
            }
            return;
        };
        registry.devices.retain(|d| d.reg() != reg.as_ptr());
        registry.backends.remove(pos)
    };
    if !silent {
        crate::log_debug!("ggml_backend_unload: unloading {} backend\n", reg.name_lossy());
    }
    drop(removed);
}

pub fn reg_count() -> usize {
    lock().backends.len()
}

pub fn reg_get(index: usize) -> RegPtr {
    let found = lock().backends.get(index).map(|e| e.reg);
    found.unwrap_or_else(|| crate::ggml_abort!("registry index {} out of range ({} registries)", index, reg_count()))
}

fn regs() -> Vec<RegPtr> {
    lock().backends.iter().map(|e| e.reg).collect()
}

fn devices() -> Vec<DevicePtr> {
    lock().devices.clone()
}

/// ggml compares backend and device names ignoring ASCII case.
fn name_matches(name: *const c_char, wanted: &[u8]) -> bool {
    if name.is_null() {
        return false;
    }
    // SAFETY: names handed out by backends are NUL-terminated.
    let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
    name.eq_ignore_ascii_case(wanted)
}

pub fn reg_by_name(name: &[u8]) -> Option<RegPtr> {
    regs().into_iter().find(|r| name_matches(r.name(), name))
}

pub fn dev_count() -> usize {
    lock().devices.len()
}

pub fn dev_get(index: usize) -> DevicePtr {
    let found = lock().devices.get(index).copied();
    found.unwrap_or_else(|| crate::ggml_abort!("device index {} out of range ({} devices)", index, dev_count()))
}

pub fn dev_by_name(name: &[u8]) -> Option<DevicePtr> {
    devices().into_iter().find(|d| name_matches(d.name(), name))
}

/// The first listed device of type `t`.
pub fn dev_by_type(t: DevType) -> Option<DevicePtr> {
    devices().into_iter().find(|d| d.dev_type() == t)
}

/// `ggml_backend_init_by_name`: a backend on the device called `name`; NULL if there is no
/// such device or it cannot start one.
pub fn init_by_name(name: &[u8], params: Option<&CStr>) -> *mut Backend {
    dev_by_name(name).and_then(|d| d.init_backend(params)).map_or(std::ptr::null_mut(), BackendPtr::as_ptr)
}

/// `ggml_backend_init_by_type`: a backend on the first device of type `t`.
pub fn init_by_type(t: DevType, params: Option<&CStr>) -> *mut Backend {
    dev_by_type(t).and_then(|d| d.init_backend(params)).map_or(std::ptr::null_mut(), BackendPtr::as_ptr)
}

/// `ggml_backend_init_best`: a backend on the first GPU, else integrated GPU, else CPU.
pub fn init_best() -> *mut Backend {
    [DevType::GPU, DevType::IGPU, DevType::CPU]
        .into_iter()
        .find_map(dev_by_type)
        .and_then(|d| d.init_backend(None))
        .map_or(std::ptr::null_mut(), BackendPtr::as_ptr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::backend::BackendPtr;
    use crate::backend::test_backend::{DeviceSpec, new_reg};

    fn occurrences_of_reg(reg: RegPtr) -> usize {
        regs().into_iter().filter(|&r| r == reg).count()
    }

    fn occurrences_of_dev(dev: DevicePtr) -> usize {
        devices().into_iter().filter(|&d| d == dev).count()
    }

    #[test]
    fn the_cpu_registry_is_listed_first_after_the_gpus() {
        // the emulated CUDA0 of a cuda-emulator build is a GPU found, listed ahead
        let gpus = usize::from(crate::cuda::registry::listed().is_some());
        let cpu = reg_get(gpus);
        assert_eq!(cpu, crate::cpu::device::cpu_reg());
        assert_eq!(reg_by_name(b"cpu"), Some(cpu));
        let dev = dev_by_type(DevType::CPU).expect("CPU device");
        assert_eq!(dev.reg(), cpu.as_ptr());
        assert_eq!(dev_by_name(b"CPU"), Some(dev));
        let backend = init_by_type(DevType::CPU, None);
        assert!(!backend.is_null());
        // SAFETY: a backend just created, freed once.
        unsafe { BackendPtr::from_raw(backend) }.expect("CPU backend").free();
    }

    #[test]
    fn registration_lookup_init_and_removal() {
        let gpu = DeviceSpec { name: "RegTestGpu", dev_type: DevType::GPU, async_: false, events: false };
        let accel = DeviceSpec { name: "RegTestAccel", dev_type: DevType::ACCEL, async_: false, events: false };
        let reg = new_reg("RegTest", &[gpu, accel]);
        assert_eq!(reg_by_name(b"regtest"), None);
        // a built-in GPU (the emulated CUDA0 of a cuda-emulator build) stays ahead of ours
        let builtin_gpu = dev_by_type(DevType::GPU);

        register_backend(reg, None);
        register_backend(reg, None);
        assert_eq!(occurrences_of_reg(reg), 1);
        assert_eq!(reg_by_name(b"REGTEST"), Some(reg));
        assert!(reg_count() >= 2);

        let gpu_dev = dev_by_name(b"regtestgpu").expect("GPU device");
        let accel_dev = dev_by_name(b"RegTestAccel").expect("accelerator device");
        assert_eq!(gpu_dev.reg(), reg.as_ptr());
        register_device(accel_dev);
        assert_eq!(occurrences_of_dev(accel_dev), 1);
        assert_eq!(dev_by_type(DevType::GPU), builtin_gpu.or(Some(gpu_dev)));
        assert!((0..dev_count()).any(|i| dev_get(i) == accel_dev));

        // SAFETY: test devices return live backends.
        let be = unsafe { BackendPtr::from_raw(init_by_name(b"REGTESTACCEL", Some(c"bias=1"))) }.expect("backend");
        assert_eq!(be.device(), accel_dev);
        be.free();
        // SAFETY: as above.
        let best = unsafe { BackendPtr::from_raw(init_best()) }.expect("best backend");
        assert_eq!(best.device(), builtin_gpu.unwrap_or(gpu_dev));
        best.free();
        assert!(init_by_name(b"no-such-device", None).is_null());

        unregister_backend(reg, true);
        assert_eq!(occurrences_of_reg(reg), 0);
        assert_eq!(occurrences_of_dev(gpu_dev), 0);
        assert_eq!(occurrences_of_dev(accel_dev), 0);
        assert_eq!(reg_by_name(b"RegTest"), None);
        assert_eq!(dev_by_type(DevType::GPU), builtin_gpu);
        // Unknown registries are reported, not fatal.
        unregister_backend(reg, false);
    }
}
