//! The meta device: tensor parallelism over several "simple" devices.
//!
//! A meta device wraps N simple devices. Its buffer type allocates one buffer per simple device
//! and gives every tensor placed in a meta buffer one slice per device (a tensor of the simple
//! device's own, in that device's buffer). How a tensor is cut is its *split state*: split
//! along one dimension with per-device sizes, mirrored (a full copy everywhere) or partial
//! (every device holds a summand of the value). Weights get theirs from the user's callback;
//! results derive theirs from their sources (`split`). A meta backend runs a graph as one
//! subgraph per simple backend and all-reduces partial results between them.
//!
//! - `split`: how ops propagate split states (the structs are in `backend::interface`),
//! - `buffer`: the meta buffer, the per-device slices and tensor data access,
//! - `buffer_type`: the meta buffer type,
//! - `backend`: the meta backend and graph execution,
//! - `device`: the meta device.

use std::ffi::{CStr, c_int, c_void};

pub use crate::backend::interface::{GetSplitStateFn, MAX_DEVICES, MAX_SEGMENTS, SplitAxis, SplitState};
use crate::core::tensor::{MAX_DIMS, TensorPtr};

pub mod backend;
pub mod buffer;
pub mod buffer_type;
pub mod device;
pub mod split;
#[cfg(test)]
mod tests;

pub use backend::{backend_is_meta, meta_n_backends, meta_simple_backend};
pub use buffer::{buffer_is_meta, buffer_set_usage};
pub use buffer_type::{alloc_ctx_tensors, buft_is_meta};
pub use device::{device_is_meta, meta_device};

/// The user's rule for the split states of statically allocated tensors: the callback and the
/// user data `ggml_backend_meta_device` was given with it.
#[derive(Clone, Copy, Debug)]
pub struct SplitRule {
    get_split_state: Option<GetSplitStateFn>,
    user_data: *mut c_void,
}

// SAFETY: the user hands the callback and its data to a device, which any thread may use
// (ggml's contract); calling it from several threads is the user's to allow, as in ggml.
unsafe impl Send for SplitRule {}
// SAFETY: as above.
unsafe impl Sync for SplitRule {}

impl SplitRule {
    pub fn new(get_split_state: Option<GetSplitStateFn>, user_data: *mut c_void) -> SplitRule {
        SplitRule { get_split_state, user_data }
    }

    /// The user's split state for `tensor`, statically allocated on `device`.
    pub fn state(&self, tensor: TensorPtr, device: &CStr) -> SplitState {
        let Some(f) = self.get_split_state else {
            crate::ggml_abort!("meta device {} has no split-state callback", device.to_string_lossy())
        };
        // SAFETY: the callback and its user data were handed over together by the user, who
        // keeps them valid for the device's lifetime; the tensor is live.
        unsafe { f(tensor.as_ptr(), self.user_data) }
    }

    /// What tells rules apart (the callback's address and the user data), as a key.
    pub fn key(&self) -> (usize, usize) {
        (self.get_split_state.map_or(0, |f| f as usize), self.user_data as usize)
    }
}

impl SplitAxis {
    pub const AXIS_0: SplitAxis = SplitAxis(0);
    pub const AXIS_1: SplitAxis = SplitAxis(1);
    pub const AXIS_2: SplitAxis = SplitAxis(2);
    pub const AXIS_3: SplitAxis = SplitAxis(3);
    /// Every device holds all of the tensor.
    pub const MIRRORED: SplitAxis = SplitAxis(10);
    /// Every device holds a summand; the value is their sum.
    pub const PARTIAL: SplitAxis = SplitAxis(11);
    /// Bookkeeping: not determined yet.
    pub const NONE: SplitAxis = SplitAxis(98);
    /// Bookkeeping: cannot be determined.
    pub const UNKNOWN: SplitAxis = SplitAxis(99);

    /// The split along tensor dimension `dim`.
    pub fn dim(dim: usize) -> SplitAxis {
        crate::ggml_assert!(dim < MAX_DIMS, "no split axis for dimension {}", dim);
        SplitAxis(dim as c_int)
    }

    /// The tensor dimension this axis cuts, for axes 0 to 3.
    pub fn as_dim(self) -> Option<usize> {
        usize::try_from(self.0).ok().filter(|&d| d < MAX_DIMS)
    }

    /// `ggml_backend_meta_split_axis_name`; `None` for a value outside the enum.
    pub fn name(self) -> Option<&'static std::ffi::CStr> {
        Some(match self {
            SplitAxis::AXIS_0 => c"0",
            SplitAxis::AXIS_1 => c"1",
            SplitAxis::AXIS_2 => c"2",
            SplitAxis::AXIS_3 => c"3",
            SplitAxis::MIRRORED => c"MIRRORED",
            SplitAxis::PARTIAL => c"PARTIAL",
            SplitAxis::NONE => c"NONE",
            SplitAxis::UNKNOWN => c"UNKNOWN",
            _ => return None,
        })
    }

    /// The name for log messages.
    pub fn label(self) -> String {
        match self.name() {
            Some(n) => n.to_string_lossy().into_owned(),
            None => format!("<{}>", self.0),
        }
    }
}

impl SplitState {
    /// One non-repeating segment of empty pieces along `axis` (the sizes are filled in later,
    /// or do not apply to the axis).
    pub fn new(axis: SplitAxis) -> SplitState {
        SplitState::repeated(axis, 1)
    }

    /// As [`SplitState::new`], with the single segment repeating `nr` times.
    pub fn repeated(axis: SplitAxis, nr: u32) -> SplitState {
        let mut nrs = [0; MAX_SEGMENTS];
        nrs[0] = nr;
        SplitState { axis, ne: [0; MAX_SEGMENTS * MAX_DEVICES], nr: nrs, n_segments: 1 }
    }

    /// The dimension the state splits, if it splits one.
    pub fn split_dim(&self) -> Option<usize> {
        self.axis.as_dim()
    }

    fn segments(&self) -> usize {
        crate::ggml_assert!(
            self.n_segments as usize <= MAX_SEGMENTS,
            "split state has {} segments, at most {} are allowed",
            self.n_segments,
            MAX_SEGMENTS
        );
        self.n_segments as usize
    }

    /// Device `j`'s piece of segment `s`, out of `n` devices.
    pub fn piece(&self, s: usize, j: usize, n: usize) -> i64 {
        self.ne[s * n + j]
    }

    /// Device `j`'s total extent along the split dimension (every segment, every repetition).
    pub fn device_extent(&self, j: usize, n: usize) -> i64 {
        (0..self.segments()).map(|s| self.piece(s, j, n) * i64::from(self.nr[s])).sum()
    }

    /// The extent along the split dimension over all devices.
    pub fn total_extent(&self, n: usize) -> i64 {
        (0..n).map(|j| self.device_extent(j, n)).sum()
    }

    /// Same axis and the same share for every device (segments may be described differently).
    pub fn same_shares(&self, other: &SplitState, n: usize) -> bool {
        self.axis == other.axis && (0..n).all(|j| self.device_extent(j, n) == other.device_extent(j, n))
    }

    /// Whether the data is laid out plainly: one segment, not repeated.
    pub fn is_simple(&self) -> bool {
        self.n_segments == 1 && self.nr[0] == 1
    }
}
