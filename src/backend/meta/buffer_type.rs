//! The meta buffer type: one simple buffer type per device, whose answers it combines
//! (alignment the strictest, the maximum size the smallest, a tensor's size the largest, host
//! memory only if every part is). A meta device makes its type on first request and keeps it
//! for the rest of the process.

use std::ffi::{CStr, CString};

use super::SplitRule;
use super::buffer;
use crate::backend::adapter::leak_buffer_type;
use crate::backend::buffer::{BufferPtr, BufferTypePtr};
use crate::backend::interface::Device;
use crate::backend::traits::BufferType;
use crate::core::context::Context;
use crate::core::tensor::TensorPtr;

pub struct MetaBufferType {
    pub simple: Vec<BufferTypePtr>,
    name: CString,
    rule: SplitRule,
    /// The meta device's name, for messages of the user's split rule.
    device_name: CString,
}

/// A new meta buffer type of `device` over `simple`, for the rest of the process.
pub(super) fn leak(
    device: *mut Device,
    simple: Vec<BufferTypePtr>,
    rule: SplitRule,
    device_name: &CStr,
) -> BufferTypePtr {
    let name = format!("Meta({})", simple.iter().map(|b| b.name_lossy()).collect::<Vec<_>>().join(","));
    let buft = MetaBufferType {
        simple,
        name: CString::new(name).unwrap_or_default(),
        rule,
        device_name: device_name.to_owned(),
    };
    leak_buffer_type(device, Box::new(buft))
}

/// Whether `buft` is a meta buffer type.
pub fn buft_is_meta(buft: BufferTypePtr) -> bool {
    buft.downcast::<MetaBufferType>().is_some()
}

/// The meta buffer type behind `buft` (aborts for any other type).
#[track_caller]
pub fn meta_buft(buft: BufferTypePtr) -> &'static MetaBufferType {
    match buft.downcast::<MetaBufferType>() {
        Some(b) => b,
        None => crate::ggml_abort!("GGML_ASSERT(ggml_backend_buft_is_meta(buft)) failed"),
    }
}

/// `ggml_backend_meta_alloc_ctx_tensors_from_buft`.
#[track_caller]
pub fn alloc_ctx_tensors(ctx: &Context, buft: BufferTypePtr) -> BufferPtr {
    let meta = meta_buft(buft);
    buffer::alloc_ctx_tensors(ctx, buft, &meta.simple, meta.rule, &meta.device_name)
}

impl BufferType for MetaBufferType {
    fn get_name(&self) -> &CStr {
        &self.name
    }

    fn alloc_buffer(&self, this: BufferTypePtr, size: usize) -> Option<BufferPtr> {
        Some(buffer::alloc_buffer(this, &self.simple, self.rule, &self.device_name, size))
    }

    fn get_alignment(&self) -> usize {
        let mut strictest = 1;
        for b in &self.simple {
            let alignment = b.alignment();
            strictest = strictest.max(alignment);
            crate::ggml_assert!(
                strictest.is_multiple_of(alignment),
                "simple buffer type alignments are not multiples of each other"
            );
        }
        strictest
    }

    fn get_max_size(&self) -> usize {
        self.simple.iter().map(|b| b.max_size()).min().unwrap_or(usize::MAX)
    }

    fn get_alloc_size(&self, tensor: TensorPtr) -> usize {
        self.simple.iter().map(|b| b.alloc_size(tensor)).max().unwrap_or(0)
    }

    fn is_host(&self) -> bool {
        self.simple.iter().all(|b| b.is_host())
    }

    fn alloc_ctx_tensors(&self, this: BufferTypePtr, ctx: &Context) -> Option<BufferPtr> {
        Some(buffer::alloc_ctx_tensors(ctx, this, &self.simple, self.rule, &self.device_name))
    }
}
