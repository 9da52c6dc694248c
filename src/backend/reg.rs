//! Registries (`ggml_backend_reg_*`): what a registry handle asks of its object. The
//! process-wide list of registries is [`crate::registry`], above the devices; the handle lives
//! here so that devices and the meta device can name their own.

use std::ffi::{CStr, c_char, c_void};

use super::handle::DevicePtr;
pub use super::handle::RegPtr;

impl RegPtr {
    pub fn name(self) -> *const c_char {
        self.object().get_name().as_ptr()
    }

    pub fn name_lossy(self) -> String {
        self.object().get_name().to_string_lossy().into_owned()
    }

    pub fn dev_count(self) -> usize {
        self.object().get_device_count()
    }

    /// Device `index` of this registry (the registry checks the index).
    pub fn dev_get(self, index: usize) -> DevicePtr {
        self.object().get_device(index)
    }

    /// An extra function the backend offers under `name`; NULL when it offers none.
    pub fn proc_address(self, name: &CStr) -> *mut c_void {
        self.object().get_proc_address(name).map_or(std::ptr::null_mut(), |f| f.as_ptr())
    }
}
