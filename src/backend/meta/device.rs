//! The meta device: answers that combine those of the simple devices (memory adds up,
//! capabilities and op support must hold everywhere).
//!
//! Meta devices are made once per combination of simple devices and split rule and live for
//! the rest of the process, as registry devices do; so does the buffer type each one makes on
//! first request.

use std::ffi::{CStr, CString, c_void};
use std::sync::{Mutex, OnceLock};

use super::buffer_type::{self, MetaBufferType};
use super::{GetSplitStateFn, MAX_DEVICES, SplitRule, backend};
use crate::backend::adapter::leak_device;
use crate::backend::backend::BackendPtr;
use crate::backend::buffer::BufferTypePtr;
use crate::backend::device::DevicePtr;
use crate::backend::interface::{DevCaps, DevProps, DevType};
use crate::backend::traits::Device;
use crate::core::tensor::TensorPtr;

pub struct MetaDevice {
    pub simple: Vec<DevicePtr>,
    rule: SplitRule,
    name: CString,
    description: CString,
    buft: OnceLock<BufferTypePtr>,
}

/// The devices made so far, keyed by what they were made from.
struct Made {
    key: (Vec<DevicePtr>, (usize, usize)),
    device: DevicePtr,
}

static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// `ggml_backend_meta_device`: the meta device over `devs` (in that order) with the given
/// split rule; asking twice for the same combination gives the same device.
pub fn meta_device(devs: &[DevicePtr], get_split_state: Option<GetSplitStateFn>, user_data: *mut c_void) -> DevicePtr {
    crate::ggml_assert!(devs.len() <= MAX_DEVICES, "a meta device wraps at most {} devices", MAX_DEVICES);
    let rule = SplitRule::new(get_split_state, user_data);
    let key = (devs.to_vec(), rule.key());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = made.iter().find(|m| m.key == key) {
        return m.device;
    }

    let joined = |part: fn(DevicePtr) -> String| devs.iter().map(|&d| part(d)).collect::<Vec<_>>().join(",");
    let name = format!("Meta({})", joined(|d| d.name_lossy()));
    let description = format!("Meta({})", joined(|d| crate::backend::device::lossy(d.description())));
    let device = leak_device(std::ptr::null_mut(), |_| {
        Box::new(MetaDevice {
            simple: devs.to_vec(),
            rule,
            name: CString::new(name).unwrap_or_default(),
            description: CString::new(description).unwrap_or_default(),
            buft: OnceLock::new(),
        })
    });
    made.push(Made { key, device });
    device
}

/// Whether `dev` is a meta device.
pub fn device_is_meta(dev: DevicePtr) -> bool {
    dev.downcast::<MetaDevice>().is_some()
}

impl MetaDevice {
    fn total_memory(&self) -> (usize, usize) {
        self.simple.iter().fold((0, 0), |(free, total), d| {
            let (f, t) = d.memory();
            (free + f, total + t)
        })
    }
}

impl Device for MetaDevice {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn get_description(&self) -> &CStr {
        &self.description
    }

    fn get_memory(&self) -> (usize, usize) {
        self.total_memory()
    }

    fn get_type(&self) -> DevType {
        DevType::META
    }

    fn get_props(&self) -> DevProps {
        // Host buffers, buffers from host memory and events are not offered by the meta device.
        let mut caps = DevCaps {
            async_: true,
            host_buffer: false,
            buffer_from_host_ptr: false,
            events: false,
            mmap_support: true,
        };
        for d in &self.simple {
            let c = d.props().caps;
            caps.async_ &= c.async_;
            caps.host_buffer &= c.host_buffer;
            caps.buffer_from_host_ptr &= c.buffer_from_host_ptr;
            caps.events &= c.events;
            caps.mmap_support &= c.mmap_support;
        }
        DevProps::describe(self, caps)
    }

    fn init_backend(&self, this: DevicePtr, params: Option<&CStr>) -> Option<BackendPtr> {
        Some(backend::init(this, &self.simple, params))
    }

    fn get_buffer_type(&self, this: DevicePtr) -> Option<BufferTypePtr> {
        Some(*self.buft.get_or_init(|| {
            let simple = self.simple.iter().map(|d| d.buffer_type()).collect();
            buffer_type::leak(this.as_ptr(), simple, self.rule, &self.name)
        }))
    }

    /// The host buffer type all simple devices share; none if any lacks one or they differ.
    fn get_host_buffer_type(&self) -> Option<BufferTypePtr> {
        let mut common: Option<BufferTypePtr> = None;
        for d in &self.simple {
            let host = d.host_buffer_type()?;
            match common {
                Some(c) if c != host => return None,
                _ => common = Some(host),
            }
        }
        common
    }

    fn supports_op(&self, op: TensorPtr) -> bool {
        self.simple.iter().all(|d| d.supports_op(op))
    }

    /// The meta buffer types of meta devices over the same simple devices.
    fn supports_buft(&self, buft: BufferTypePtr) -> bool {
        buft.downcast::<MetaBufferType>().is_some()
            // SAFETY: a buffer type's device is null or a live device.
            && unsafe { DevicePtr::from_raw(buft.device()) }
                .and_then(DevicePtr::downcast::<MetaDevice>)
                .is_some_and(|d| d.simple == self.simple)
    }
}
