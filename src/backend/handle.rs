//! Handles to ggml's backend objects: the addresses of the C structs of [`super::interface`],
//! valid while the object lives. A handle names an object and reads the fields of its struct;
//! what the object does is reached through [`super::adapter`] (the dispatch methods are in
//! `buffer`, `device`, `backend` and `reg`).

use std::ptr::NonNull;

use super::interface::{Backend, Buffer, BufferType, BufferUsage, Device, Event, GuidPtr, Reg};

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident => $target:ty) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub struct $name(NonNull<$target>);

        impl $name {
            /// # Safety
            /// `ptr`, when not null, must point to a live object of its kind that outlives
            /// every use of the handle.
            pub unsafe fn from_raw(ptr: *mut $target) -> Option<Self> {
                NonNull::new(ptr).map($name)
            }

            pub fn as_ptr(self) -> *mut $target {
                self.0.as_ptr()
            }

            /// The object's C struct.
            pub(super) fn raw<'a>(self) -> &'a $target {
                // SAFETY: the handle's contract keeps the object alive.
                unsafe { &*self.0.as_ptr() }
            }
        }
    };
}

handle!(
    /// A `ggml_backend_buffer_type`. Buffer types are long-lived (statics, or leaked by the
    /// backend that defines them); a handle relies on that, as a `TensorPtr` relies on its
    /// context.
    BufferTypePtr => BufferType
);
handle!(
    /// A `ggml_backend_buffer`, valid from `ggml_backend_buffer_init` ([`BufferPtr::new`])
    /// until [`BufferPtr::free`].
    BufferPtr => Buffer
);
handle!(
    /// A `ggml_backend_device`. Devices belong to their registry and live until it is unloaded
    /// (usually for the whole process).
    DevicePtr => Device
);
handle!(
    /// A `ggml_backend`, valid from its device's `init_backend` until [`BackendPtr::free`].
    BackendPtr => Backend
);
handle!(
    /// A `ggml_backend_reg`. Registries live until their backend is unloaded.
    RegPtr => Reg
);
handle!(
    /// A `ggml_backend_event`, valid from its device's `event_new` until [`EventPtr::free`].
    EventPtr => Event
);

// SAFETY: ggml lets any thread use buffer types, devices and registries (they are shared,
// read-only objects), and a backend or an event be driven from any thread, one at a time; a
// handle is only an address.
unsafe impl Send for BufferTypePtr {}
// SAFETY: as above.
unsafe impl Sync for BufferTypePtr {}
// SAFETY: as above.
unsafe impl Send for DevicePtr {}
// SAFETY: as above.
unsafe impl Sync for DevicePtr {}
// SAFETY: as above.
unsafe impl Send for RegPtr {}
// SAFETY: as above.
unsafe impl Sync for RegPtr {}
// SAFETY: as above.
unsafe impl Send for BackendPtr {}
// SAFETY: as above.
unsafe impl Send for EventPtr {}

impl BufferTypePtr {
    /// The device the type belongs to (NULL for the CPU buffer types, as in ggml).
    pub fn device(self) -> *mut Device {
        self.raw().device
    }
}

impl std::ops::Deref for BufferPtr {
    type Target = Buffer;
    fn deref(&self) -> &Buffer {
        self.raw()
    }
}

impl BufferPtr {
    /// `ggml_backend_buffer_init`: a new buffer object over a backend's allocation, with usage
    /// `ANY`; [`BufferPtr::free`] releases it.
    pub fn new(
        buft: *mut BufferType,
        iface: super::interface::BufferInterface,
        context: *mut std::ffi::c_void,
        size: usize,
    ) -> BufferPtr {
        let buffer = Box::new(Buffer { iface, buft, context, size, usage: BufferUsage::ANY });
        BufferPtr(NonNull::from(Box::leak(buffer)))
    }

    pub fn size(self) -> usize {
        self.raw().size
    }

    pub fn usage(self) -> BufferUsage {
        self.raw().usage
    }
}

impl BackendPtr {
    pub fn guid(self) -> GuidPtr {
        self.raw().guid
    }

    /// The raw device pointer, NULL included (`ggml_backend_get_device`).
    pub fn device_ptr(self) -> *mut Device {
        self.raw().device
    }
}

impl DevicePtr {
    /// The registry the device belongs to.
    pub fn reg(self) -> *mut Reg {
        self.raw().reg
    }
}

impl RegPtr {
    pub fn api_version(self) -> i32 {
        self.raw().api_version
    }
}

impl EventPtr {
    /// The device that made the event.
    pub fn device_ptr(self) -> *mut Device {
        self.raw().device
    }
}
