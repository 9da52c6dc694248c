//! Meta buffers: one simple buffer per device, and for every tensor placed in the meta buffer
//! one *slice* per device, a tensor of the simple device's own that holds that device's part.
//!
//! Meta tensors have no real address: a meta buffer's base is a fixed token, and a tensor's
//! offset from it is the offset of its slices in the simple buffers. Reading and writing a meta
//! tensor scatters or gathers the bytes of its slices according to its split state.
//!
//! Slices of tensors placed by [`alloc_ctx_tensors`] (weights) live as long as the buffer.
//! Slices of everything else (graph tensors, and views that graphs make of weights) live in
//! one of two rotating sets: the meta backend starts a fresh set when it rebuilds its
//! subgraphs, while the tensors of the graph just computed may still be referenced.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_void};
use std::ptr::NonNull;

use super::split::{self, Lookup, SplitCache};
use super::{SplitAxis, SplitRule, SplitState};
use crate::backend::adapter::new_buffer;
use crate::backend::buffer::{self as bufops, BufferPtr, BufferTypePtr};
use crate::backend::interface::BufferUsage;
use crate::backend::tallocr;
use crate::backend::traits::{Buffer, Copy2d};
use crate::core::context::{Context, InitParams};
use crate::core::op::Op;
use crate::core::status::Status;
use crate::core::tensor::{MAX_DIMS, MAX_SRC, Tensor, TensorPtr, flag};

/// The base address a meta buffer reports; meta tensor addresses are offsets from it.
pub const META_BASE: usize = 0x1000_0000_0000_0000;

/// The address given to tensors placed by [`alloc_ctx_tensors`] (whose slices hold the data).
pub const META_STATIC_DATA: usize = 0x2000_0000_0000_0000;

/// The slices of a set of meta tensors, one per simple device each.
#[allow(clippy::vec_box)] // boxed: slices are handed out by address
pub struct SliceSet {
    /// Per-device contexts that own the slice structs, for slices that a context allocator
    /// places; empty when the structs live on the heap instead.
    ctxs: RefCell<Vec<Box<Context>>>,
    heap: RefCell<Vec<Box<Tensor>>>,
    slices: RefCell<HashMap<*const Tensor, Vec<TensorPtr>>>,
}

impl SliceSet {
    fn on_heap() -> SliceSet {
        SliceSet {
            ctxs: RefCell::new(Vec::new()),
            heap: RefCell::new(Vec::new()),
            slices: RefCell::new(HashMap::new()),
        }
    }

    fn in_contexts(n: usize, mem_size: usize) -> SliceSet {
        let ctxs = (0..n)
            .map(|_| Context::new(InitParams { mem_size, mem_buffer: std::ptr::null_mut(), no_alloc: true }))
            .collect();
        SliceSet { ctxs: RefCell::new(ctxs), ..SliceSet::on_heap() }
    }

    fn contains(&self, tensor: *const Tensor) -> bool {
        self.slices.borrow().contains_key(&tensor)
    }

    fn slice(&self, tensor: *const Tensor, j: usize) -> Option<TensorPtr> {
        self.slices.borrow().get(&tensor).and_then(|s| s.get(j).copied())
    }

    /// A new, blank slice struct for device `j`.
    fn new_slice(&self, j: usize, tensor: &Tensor, ne: [i64; MAX_DIMS]) -> TensorPtr {
        let mut ctxs = self.ctxs.borrow_mut();
        if let Some(ctx) = ctxs.get_mut(j) {
            return ctx.new_tensor(tensor.type_, &ne);
        }
        let mut t = Box::new(Tensor {
            type_: tensor.type_,
            buffer: std::ptr::null_mut(),
            ne,
            nb: tensor.nb,
            op: Op::NONE,
            op_params: [0; 16],
            flags: 0,
            src: [std::ptr::null_mut(); MAX_SRC],
            view_src: std::ptr::null_mut(),
            view_offs: 0,
            data: std::ptr::null_mut(),
            name: [0; 64],
            extra: std::ptr::null_mut(),
            padding: [0; 8],
        });
        let ptr: *mut Tensor = &mut *t;
        self.heap.borrow_mut().push(t);
        // SAFETY: the box is kept in `heap` (its address is stable) until the set is reset,
        // which ends the lifetime of every slice of the set, as ggml_reset does for a context.
        unsafe { TensorPtr::from_raw(ptr) }.expect("boxed tensor")
    }

    /// Forgets every slice (they must no longer be used).
    fn reset(&self) {
        self.slices.borrow_mut().clear();
        for ctx in self.ctxs.borrow_mut().iter_mut() {
            ctx.reset();
        }
        self.heap.borrow_mut().clear();
    }
}

/// A meta buffer: its simple buffers and the slices of its tensors.
pub struct MetaBuffer {
    statics: SliceSet,
    compute: [SliceSet; 2],
    compute_index: Cell<usize>,
    compute_index_next: Cell<usize>,
    parts: RefCell<Vec<Option<BufferPtr>>>,
    rule: SplitRule,
    /// The meta device's name, for the rule's messages.
    device_name: CString,
    split_cache: SplitCache,
    debug: i32,
}

impl Drop for MetaBuffer {
    fn drop(&mut self) {
        for part in self.parts.borrow().iter().flatten() {
            part.free();
        }
    }
}

impl MetaBuffer {
    fn new(statics: SliceSet, parts: Vec<Option<BufferPtr>>, rule: SplitRule, device_name: &CStr) -> MetaBuffer {
        let debug = std::env::var("GGML_META_DEBUG").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0);
        MetaBuffer {
            statics,
            compute: [SliceSet::on_heap(), SliceSet::on_heap()],
            compute_index: Cell::new(0),
            compute_index_next: Cell::new(0),
            parts: RefCell::new(parts),
            rule,
            device_name: device_name.to_owned(),
            split_cache: SplitCache::default(),
            debug,
        }
    }

    pub fn n_parts(&self) -> usize {
        self.parts.borrow().len()
    }

    /// The simple buffer of device `j` (none while a context allocation is under way).
    pub fn part(&self, j: usize) -> Option<BufferPtr> {
        let parts = self.parts.borrow();
        crate::ggml_assert!(j < parts.len(), "meta buffer has no part {}", j);
        parts[j]
    }

    /// The set holding `tensor`'s slices: the static one if it is there, else the current
    /// compute set.
    fn set_of(&self, tensor: *const Tensor) -> &SliceSet {
        if self.statics.contains(tensor) { &self.statics } else { &self.compute[self.compute_index.get()] }
    }

    /// Starts a fresh compute set for the tensors initialised from now on (the meta backend
    /// calls this when it rebuilds its subgraphs; the current set stays valid meanwhile).
    pub fn rotate_compute_set(&self) {
        let next = self.compute_index.get() ^ 1;
        self.compute_index_next.set(next);
        self.compute[next].reset();
    }
}

/// The meta buffer behind `buffer`, if it is one.
pub fn meta_buffer<'a>(buffer: BufferPtr) -> Option<&'a MetaBuffer> {
    buffer.downcast::<MetaBuffer>()
}

/// The meta buffer a tensor lives in (aborts if it is anywhere else).
#[track_caller]
fn meta_buf_of<'a>(tensor: &Tensor) -> &'a MetaBuffer {
    // SAFETY: a tensor's buffer is null or a live buffer.
    match unsafe { BufferPtr::from_raw(tensor.buffer.cast()) }.and_then(meta_buffer) {
        Some(b) => b,
        None => crate::ggml_abort!("tensor {} is not in a meta buffer", tensor.name()),
    }
}

/// `ggml_backend_buffer_is_meta`.
pub fn buffer_is_meta(buffer: BufferPtr) -> bool {
    meta_buffer(buffer).is_some()
}

/// Whether the tensor lives in a meta buffer.
pub fn tensor_is_meta(tensor: &Tensor) -> bool {
    // SAFETY: a tensor's buffer is null or a live buffer.
    unsafe { BufferPtr::from_raw(tensor.buffer.cast()) }.is_some_and(buffer_is_meta)
}

/// The split state of a tensor in a meta buffer (see [`split::split_state`]).
pub fn split_state(tensor: TensorPtr, assume_sync: bool) -> SplitState {
    let buf = meta_buf_of(&tensor);
    let lookup = Lookup {
        cache: &buf.split_cache,
        n: buf.n_parts(),
        debug: buf.debug > 0,
        user: &|t| buf.rule.state(t, &buf.device_name),
        source: &|s| split_state(s, true),
    };
    split::split_state(tensor, assume_sync, &lookup)
}

/// Device `j`'s slice of a meta tensor, if the tensor has been initialised in its buffer.
pub fn simple_tensor(tensor: &Tensor, j: usize) -> Option<TensorPtr> {
    let buf = meta_buf_of(tensor);
    crate::ggml_assert!(j < buf.n_parts(), "meta buffer has no part {}", j);
    buf.set_of(tensor).slice(tensor, j)
}

#[track_caller]
fn simple_tensor_set(tensor: &Tensor, j: usize) -> TensorPtr {
    match simple_tensor(tensor, j) {
        Some(t) => t,
        None => crate::ggml_abort!("meta tensor {} has no slice for device {}", tensor.name(), j),
    }
}

/// `ggml_backend_meta_buffer_set_usage`: passes the usage on to every simple buffer.
#[track_caller]
pub fn buffer_set_usage(buffer: BufferPtr, usage: BufferUsage) {
    match meta_buffer(buffer) {
        Some(meta) => meta.set_usage(usage),
        None => crate::ggml_abort!("GGML_ASSERT(ggml_backend_buffer_is_meta(buffer)) failed"),
    }
}

/// `x * num / den` without intermediate overflow.
fn scale(x: usize, num: i64, den: i64) -> usize {
    (x as u128 * num as u128 / den as u128) as usize
}

// ---------------------------------------------------------------------------------------------
// Slices

/// Makes the slices of `tensor` (already placed in its meta buffer) in `set`.
fn init_slices(set: &SliceSet, buf: &MetaBuffer, tensor: TensorPtr) -> Status {
    let n = buf.n_parts();
    let state = split_state(tensor, true);
    crate::ggml_assert!(
        tensor.nelements() == 0 || state.axis != SplitAxis::UNKNOWN,
        "no split state for meta tensor {}",
        tensor.name()
    );
    crate::ggml_assert!(state.n_segments as usize <= super::MAX_SEGMENTS, "too many segments");
    let split_dim = state.split_dim();
    let view_src_meta = tensor.view_source().filter(|v| tensor_is_meta(v));

    let mut slices = Vec::with_capacity(n);
    for j in 0..n {
        let part = buf.part(j);
        let mut ne = tensor.ne;
        let mut nb = tensor.nb;
        if let Some(d) = split_dim {
            ne[d] = state.device_extent(j, n);
            if tensor.ne[d] != 0 {
                for (nb_i, &full) in nb.iter_mut().zip(&tensor.nb) {
                    if full > tensor.nb[d] {
                        *nb_i = scale(full, ne[d], tensor.ne[d]);
                    }
                }
            }
        }

        let slice = set.new_slice(j, &tensor, ne);
        let s = slice.get_mut();
        s.op = tensor.op;
        s.nb = nb;
        s.flags = tensor.flags;
        s.op_params = tensor.op_params;
        s.name = tensor.name;
        s.buffer = part.map_or(std::ptr::null_mut(), |p| p.as_ptr().cast());
        s.view_src = tensor.view_src;
        s.view_offs = tensor.view_offs;

        if let Some(vs) = view_src_meta {
            s.view_src = simple_tensor_set(&vs, j).as_ptr();
            if let Some(d) = split_dim.filter(|_| tensor.view_offs > 0) {
                crate::ggml_assert!(tensor.ne[d] != 0, "view {} is empty along its split axis", tensor.name());
                let Some(src_dim) = split_state(vs, true).split_dim() else {
                    crate::ggml_abort!("view {} is split but its source {} is not", tensor.name(), vs.name())
                };
                // An offset within one slice's extent along the split stays as it is; one that
                // steps over whole slices shrinks with them.
                let within = tensor.view_offs <= vs.nb[src_dim]
                    || (0..MAX_DIMS).any(|i| {
                        let extent = (tensor.ne[i] as usize).wrapping_mul(tensor.nb[i]);
                        tensor.view_offs <= extent && extent < tensor.nb[d]
                    });
                if !within {
                    s.view_offs = scale(tensor.view_offs, ne[d], tensor.ne[d]);
                }
            }
        }

        let mut init_buf = part;
        // SAFETY: a slice's view source is another slice (or the tensor's own source), alive
        // as long as the slice.
        if let Some(vs) = unsafe { TensorPtr::from_raw(s.view_src) } {
            if !vs.data.is_null() {
                s.data = vs.data.cast::<u8>().wrapping_add(s.view_offs).cast();
            }
            // A view of a meta tensor lives in the simple buffer its source's slice lives in.
            if view_src_meta.is_some()
                // SAFETY: a non-null buffer field points to a live buffer.
                && let Some(vb) = unsafe { BufferPtr::from_raw(vs.buffer.cast()) }
            {
                s.buffer = vb.as_ptr().cast();
                init_buf = Some(vb);
            }
        } else if let Some(p) = part {
            crate::ggml_assert!(!p.is_multi_buffer(), "multi buffers are not supported by the meta backend");
            let offset = (tensor.data as usize).wrapping_sub(META_BASE);
            s.data = p.base().cast::<u8>().wrapping_add(offset).cast();
        }

        match init_buf {
            Some(b) => {
                let status = b.init_tensor(slice);
                if status != Status::SUCCESS {
                    return status;
                }
            }
            None => slice.get_mut().extra = tensor.extra,
        }

        let s = slice.get_mut();
        for i in 0..MAX_SRC {
            let src = tensor.src[i];
            s.src[i] = if src == tensor.as_ptr() {
                slice.as_ptr()
            } else {
                // SAFETY: src[] slots hold null or live tensors.
                match unsafe { TensorPtr::from_raw(src) } {
                    Some(t) if tensor_is_meta(&t) => {
                        simple_tensor(&t, j).map_or(std::ptr::null_mut(), TensorPtr::as_ptr)
                    }
                    _ => src,
                }
            };
        }
        slices.push(slice);
    }

    // A device whose part of some source is empty has nothing to compute.
    for i in 0..MAX_SRC {
        let Some(src) = tensor.src(i).filter(|s| tensor_is_meta(s)) else { continue };
        let src_state = split_state(src, true);
        if src_state.split_dim().is_none() {
            continue;
        }
        for (j, slice) in slices.iter().enumerate() {
            if src_state.device_extent(j, n) == 0 {
                slice.get_mut().flags &= !flag::COMPUTE;
            }
        }
    }

    set.slices.borrow_mut().insert(tensor.as_ptr(), slices);
    Status::SUCCESS
}

// ---------------------------------------------------------------------------------------------
// Reading and writing meta tensors

/// How a meta tensor's bytes map onto its slices for one access of `size` bytes at `offset`.
enum Layout {
    /// Segmented split along dimension 0 or 1: every step of the next dimension (a "row")
    /// holds the pieces of every segment and device, in that order; rows `row_start` to
    /// `row_start + row_count` are accessed.
    Segmented {
        dim: usize,
        row_start: usize,
        row_count: usize,
    },
    /// A plain split along dimension 0 to 2: every `chunk` (one step of the next dimension)
    /// is the devices' pieces one after another.
    Chunked {
        dim: usize,
        i_start: usize,
        i_stop: usize,
    },
    Mirrored,
    Partial,
}

#[track_caller]
fn layout(tensor: &Tensor, state: &SplitState, offset: usize, size: usize) -> Layout {
    crate::ggml_assert!(
        tensor.is_contiguous() || state.axis == SplitAxis::MIRRORED,
        "meta tensor {} is split but not contiguous",
        tensor.name()
    );
    if !state.is_simple() {
        crate::ggml_assert!(state.split_dim().is_some(), "segments without a split axis");
        crate::ggml_assert!(state.nr[0] != 0, "segment repeats zero times");
        crate::ggml_assert!(tensor.ne[3] == 1, "segmented meta tensors have at most 3 dimensions");
        let dim = match state.axis {
            SplitAxis::AXIS_0 => {
                crate::ggml_assert!(tensor.ne[2] == 1, "segmented dim-0 splits are matrices");
                0
            }
            SplitAxis::AXIS_1 => 1,
            a => crate::ggml_abort!("segmented split along axis {} not supported", a.label()),
        };
        let row_stride = tensor.nb[dim + 1];
        crate::ggml_assert!(
            offset.is_multiple_of(row_stride) && size.is_multiple_of(row_stride),
            "access not aligned to rows"
        );
        let (row_start, row_count) = (offset / row_stride, size / row_stride);
        crate::ggml_assert!(row_start + row_count <= tensor.ne[dim + 1] as usize, "access out of bounds");
        return Layout::Segmented { dim, row_start, row_count };
    }
    match state.axis {
        SplitAxis::AXIS_0 | SplitAxis::AXIS_1 | SplitAxis::AXIS_2 => {
            let dim = state.axis.0 as usize;
            let chunk = tensor.nb[dim + 1];
            crate::ggml_assert!(
                offset.is_multiple_of(chunk) && size.is_multiple_of(chunk),
                "access not aligned to the split"
            );
            Layout::Chunked { dim, i_start: offset / chunk, i_stop: (offset + size) / chunk }
        }
        SplitAxis::MIRRORED => Layout::Mirrored,
        SplitAxis::PARTIAL => Layout::Partial,
        a => crate::ggml_abort!("cannot access meta tensor {} with split axis {}", tensor.name(), a.label()),
    }
}

/// Bytes of device `j`'s piece of segment `s` along a segmented split of dimension `dim`.
fn piece_bytes(tensor: &Tensor, state: &SplitState, dim: usize, s: usize, j: usize, n: usize) -> usize {
    let ne = state.piece(s, j, n);
    if dim == 0 {
        let blck = tensor.type_.blck_size();
        crate::ggml_assert!(ne % blck == 0, "split piece is not a whole number of blocks");
        (ne / blck) as usize * tensor.nb[0]
    } else {
        ne as usize * tensor.nb[1]
    }
}

/// Visits the runs of a segmented access in the order they sit in the meta tensor's rows:
/// `f(slice, byte offset in the slice's row, byte offset in the meta tensor's row, bytes)`.
fn for_each_piece(tensor: &Tensor, state: &SplitState, dim: usize, mut f: impl FnMut(TensorPtr, usize, usize, usize)) {
    let n = meta_buf_of(tensor).n_parts();
    let mut meta_offset = 0;
    let mut slice_offsets = vec![0usize; n];
    for s in 0..state.n_segments as usize {
        for _ in 0..state.nr[s] {
            for (j, slice_offset) in slice_offsets.iter_mut().enumerate() {
                let nbytes = piece_bytes(tensor, state, dim, s, j, n);
                f(simple_tensor_set(tensor, j), *slice_offset, meta_offset, nbytes);
                meta_offset += nbytes;
                *slice_offset += nbytes;
            }
        }
    }
}

fn set_tensor(tensor: TensorPtr, data: &[u8], offset: usize) {
    let n = meta_buf_of(&tensor).n_parts();
    let state = split_state(tensor, false);
    let size = data.len();
    match layout(&tensor, &state, offset, size) {
        Layout::Segmented { dim, row_start, row_count } => {
            let mut row_bytes = 0;
            for_each_piece(&tensor, &state, dim, |slice, slice_offset, meta_offset, nbytes| {
                let c = Copy2d {
                    offset: slice_offset + row_start * slice.nb[dim + 1],
                    size: nbytes,
                    n_copies: row_count,
                    stride_tensor: slice.nb[dim + 1],
                    stride_data: tensor.nb[dim + 1],
                };
                bufops::tensor_set_2d(slice, &data[meta_offset..], c);
                row_bytes = meta_offset + nbytes;
            });
            crate::ggml_assert!(row_bytes * row_count == size, "segments do not cover the rows");
        }
        Layout::Chunked { dim, i_start, i_stop } => {
            let chunk = tensor.nb[dim + 1];
            let mut within = 0;
            for j in 0..n {
                let slice = simple_tensor_set(&tensor, j);
                let chunk_j = slice.nb[dim + 1];
                if chunk_j == 0 {
                    continue;
                }
                let c = Copy2d {
                    offset: i_start * chunk_j,
                    size: chunk_j,
                    n_copies: i_stop - i_start,
                    stride_tensor: chunk_j,
                    stride_data: chunk,
                };
                bufops::tensor_set_2d(slice, &data[within..], c);
                within += chunk_j;
            }
            crate::ggml_assert!(within == chunk, "slices do not add up to the tensor");
        }
        Layout::Mirrored => {
            for j in 0..n {
                bufops::tensor_set(simple_tensor_set(&tensor, j), data, offset);
            }
        }
        Layout::Partial => {
            // The value is spread evenly over the devices that contribute to the sum.
            crate::ggml_assert!(tensor.type_ == crate::core::types::Type::F32, "partial meta tensors are F32");
            crate::ggml_assert!(
                offset.is_multiple_of(4) && size.is_multiple_of(4),
                "partial access not aligned to floats"
            );
            let contributes: Vec<bool> = (0..n).map(|j| state.ne[j] != 0).collect();
            let masked = contributes.iter().any(|&c| c);
            let n_contributors = if masked { contributes.iter().filter(|&&c| c).count() } else { n };
            let share: Vec<u8> = data
                .chunks_exact(4)
                .flat_map(|b| (f32::from_ne_bytes([b[0], b[1], b[2], b[3]]) / n_contributors as f32).to_ne_bytes())
                .collect();
            let zeros = vec![0u8; if masked { size } else { 0 }];
            for (j, &contributes) in contributes.iter().enumerate() {
                let part = if masked && !contributes { &zeros } else { &share };
                bufops::tensor_set(simple_tensor_set(&tensor, j), part, offset);
            }
        }
    }
}

fn get_tensor(tensor: TensorPtr, data: &mut [u8], offset: usize) {
    let n = meta_buf_of(&tensor).n_parts();
    let state = split_state(tensor, false);
    let size = data.len();
    match layout(&tensor, &state, offset, size) {
        Layout::Segmented { dim, row_start, row_count } => {
            let mut row_bytes = 0;
            for_each_piece(&tensor, &state, dim, |slice, slice_offset, meta_offset, nbytes| {
                let c = Copy2d {
                    offset: slice_offset + row_start * slice.nb[dim + 1],
                    size: nbytes,
                    n_copies: row_count,
                    stride_tensor: slice.nb[dim + 1],
                    stride_data: tensor.nb[dim + 1],
                };
                bufops::tensor_get_2d(slice, &mut data[meta_offset..], c);
                row_bytes = meta_offset + nbytes;
            });
            crate::ggml_assert!(row_bytes * row_count == size, "segments do not cover the rows");
        }
        Layout::Chunked { dim, i_start, i_stop } => {
            let chunk = tensor.nb[dim + 1];
            let mut within = 0;
            for j in 0..n {
                let slice = simple_tensor_set(&tensor, j);
                let chunk_j = slice.nb[dim + 1];
                if chunk_j == 0 {
                    continue;
                }
                let c = Copy2d {
                    offset: i_start * chunk_j,
                    size: chunk_j,
                    n_copies: i_stop - i_start,
                    stride_tensor: chunk_j,
                    stride_data: chunk,
                };
                bufops::tensor_get_2d(slice, &mut data[within..], c);
                within += chunk_j;
            }
            crate::ggml_assert!(within == chunk, "slices do not add up to the tensor");
        }
        Layout::Mirrored => bufops::tensor_get(simple_tensor_set(&tensor, 0), data, offset),
        Layout::Partial => crate::ggml_abort!("cannot read partial meta tensor {}", tensor.name()),
    }
}

fn memset_tensor(tensor: TensorPtr, value: u8, offset: usize, size: usize) {
    let n = meta_buf_of(&tensor).n_parts();
    let state = split_state(tensor, false);
    match layout(&tensor, &state, offset, size) {
        Layout::Segmented { dim, row_start, row_count } => {
            for_each_piece(&tensor, &state, dim, |slice, slice_offset, _, nbytes| {
                for row in row_start..row_start + row_count {
                    bufops::tensor_memset(slice, value, slice_offset + row * slice.nb[dim + 1], nbytes);
                }
            });
        }
        Layout::Chunked { dim, i_start, i_stop } => {
            for j in 0..n {
                let slice = simple_tensor_set(&tensor, j);
                let chunk_j = slice.nb[dim + 1];
                if chunk_j == 0 {
                    continue;
                }
                for i in i_start..i_stop {
                    bufops::tensor_memset(slice, value, i * chunk_j, chunk_j);
                }
            }
        }
        Layout::Partial => {
            crate::ggml_assert!(value == 0, "a partial meta tensor can only be zeroed");
            for j in 0..n {
                bufops::tensor_memset(simple_tensor_set(&tensor, j), value, offset, size);
            }
        }
        Layout::Mirrored => {
            for j in 0..n {
                bufops::tensor_memset(simple_tensor_set(&tensor, j), value, offset, size);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The buffer

/// The base address a meta buffer reports, as a pointer.
fn meta_base() -> NonNull<c_void> {
    match NonNull::new(META_BASE as *mut c_void) {
        Some(p) => p,
        None => unreachable!("META_BASE is not 0"),
    }
}

impl Buffer for MetaBuffer {
    fn get_base(&self) -> Option<NonNull<c_void>> {
        Some(meta_base())
    }

    fn init_tensor(&self, tensor: TensorPtr) -> Status {
        self.compute_index.set(self.compute_index_next.get());
        init_slices(self.set_of(tensor.as_ptr()), self, tensor)
    }

    fn memset_tensor(&self, tensor: TensorPtr, value: u8, offset: usize, size: usize) {
        memset_tensor(tensor, value, offset, size);
    }

    fn set_tensor(&self, tensor: TensorPtr, data: &[u8], offset: usize) {
        set_tensor(tensor, data, offset);
    }

    fn get_tensor(&self, tensor: TensorPtr, data: &mut [u8], offset: usize) {
        get_tensor(tensor, data, offset);
    }

    fn clear(&self, value: u8) {
        for part in self.parts.borrow().iter().flatten() {
            part.clear(value);
        }
    }

    fn reset(&self) {
        for part in self.parts.borrow().iter().flatten() {
            part.reset();
        }
    }

    fn set_usage(&self, usage: BufferUsage) {
        for part in self.parts.borrow().iter().flatten() {
            part.set_usage(usage);
        }
    }

    fn is_meta(&self) -> bool {
        true
    }
}

/// The meta buffer type's `alloc_buffer`: one simple buffer of `size` bytes of each of
/// `simple` (the meta buffer reports the largest).
pub(super) fn alloc_buffer(
    buft: BufferTypePtr,
    simple: &[BufferTypePtr],
    rule: SplitRule,
    device_name: &CStr,
    size: usize,
) -> BufferPtr {
    let mut parts = Vec::with_capacity(simple.len());
    for b in simple {
        let Some(part) = b.alloc_buffer(size) else {
            crate::ggml_abort!("failed to allocate {} bytes of {} for a meta buffer", size, b.name_lossy())
        };
        parts.push(part);
    }
    let max_size = parts.iter().map(|p| p.size()).max().unwrap_or(0);
    let meta = MetaBuffer::new(SliceSet::on_heap(), parts.into_iter().map(Some).collect(), rule, device_name);
    new_buffer(buft, max_size, Box::new(meta))
}

/// `ggml_backend_meta_alloc_ctx_tensors_from_buft`: places every tensor of `ctx` in a new
/// meta buffer of type `buft`, its slices allocated per device by the context allocator of the
/// simple buffer types.
pub(super) fn alloc_ctx_tensors(
    ctx: &Context,
    buft: BufferTypePtr,
    simple: &[BufferTypePtr],
    rule: SplitRule,
    device_name: &CStr,
) -> BufferPtr {
    let n = simple.len();
    let statics = SliceSet::in_contexts(n, ctx.mem_size());
    let buffer = new_buffer(buft, 0, Box::new(MetaBuffer::new(statics, vec![None; n], rule, device_name)));
    let Some(meta) = meta_buffer(buffer) else { unreachable!("the buffer was just made a meta buffer") };

    for t in ctx.tensors() {
        t.get_mut().buffer = buffer.as_ptr().cast();
        let status = init_slices(&meta.statics, meta, t);
        crate::ggml_assert!(status == Status::SUCCESS, "failed to initialise the slices of {}", t.name());
        t.get_mut().data = META_STATIC_DATA as *mut c_void;
    }

    let mut max_size = 0;
    for (j, &b) in simple.iter().enumerate() {
        let ctxs = meta.statics.ctxs.borrow();
        let sctx = &ctxs[j];
        // The context allocator gives nothing for a context of empty slices: such a device
        // gets an empty buffer of its own.
        let part = if sctx.tensors().any(|t| t.nelements() != 0) {
            tallocr::alloc_ctx_tensors(sctx, b)
        } else {
            let part = b.alloc_buffer(0);
            if let Some(p) = part {
                for t in sctx.tensors() {
                    t.get_mut().buffer = p.as_ptr().cast();
                }
            }
            part
        };
        let Some(part) = part else {
            crate::ggml_abort!("failed to allocate the {} part of a meta buffer", b.name_lossy())
        };
        max_size = max_size.max(part.size());
        meta.parts.borrow_mut()[j] = Some(part);
    }
    // SAFETY: the buffer was just made and nothing else references it yet.
    unsafe { (*buffer.as_ptr()).size = max_size };
    buffer
}
