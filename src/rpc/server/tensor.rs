//! The tensors of a request. Every field of a wire description is checked before a tensor is
//! made from it: the type, the shape and strides (with checked arithmetic, against caps that
//! keep every later product of extents far from overflowing), the op number, and the
//! placement: a buffer this connection allocated, and an address whose every byte a kernel
//! may touch lies inside that buffer.

use std::collections::HashMap;

use crate::backend::buffer::BufferPtr;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::{MAX_DIMS, TensorPtr};
use crate::core::types::Type;
use crate::rpc::wire::WireTensor;

/// The largest extent of one dimension: ggml keeps many per-dimension counts in an `int`.
const MAX_EXTENT: u32 = i32::MAX as u32;
/// The largest number of elements (empty dimensions counted as one): far above any real
/// tensor, and low enough that element counts times type sizes times thread counts, which
/// the backends' scratch plans compute without checks, cannot wrap.
const MAX_ELEMENTS: u64 = 1 << 40;

/// The buffers a connection allocated, by the handle the client knows them by: their
/// address in the server.
#[derive(Default)]
pub(super) struct Buffers(HashMap<u64, BufferPtr>);

impl Buffers {
    pub fn insert(&mut self, buffer: BufferPtr) -> u64 {
        let handle = buffer.as_ptr() as u64;
        self.0.insert(handle, buffer);
        handle
    }

    pub fn get(&self, handle: u64) -> Option<BufferPtr> {
        self.0.get(&handle).copied()
    }

    pub fn remove(&mut self, handle: u64) -> Option<BufferPtr> {
        self.0.remove(&handle)
    }

    /// Takes every buffer out, for freeing.
    pub fn take_all(&mut self) -> Vec<BufferPtr> {
        self.0.drain().map(|(_, b)| b).collect()
    }
}

/// Where a checked tensor's bytes lie: `span` bytes from address `start`, all inside
/// `buffer`.
#[derive(Clone, Copy)]
pub(super) struct Placement {
    pub buffer: BufferPtr,
    pub start: u64,
    pub span: u64,
}

impl Placement {
    pub fn end(&self) -> u64 {
        self.start + self.span
    }
}

/// A wire description whose fields passed every check.
pub(super) struct Checked {
    pub wire: WireTensor,
    pub type_: Type,
    /// `ggml_nbytes` of the tensor, the bound the data operations check offsets against.
    pub nbytes: u64,
    /// No two elements share a byte (see [`elements_distinct`]).
    pub distinct: bool,
    pub placement: Option<Placement>,
}

/// `[start, end)` of a buffer's memory as addresses.
pub(super) fn bounds(buffer: BufferPtr) -> Option<(u64, u64)> {
    let base = buffer.base() as u64;
    Some((base, base.checked_add(buffer.size() as u64)?))
}

/// The bytes a kernel may touch from a tensor's address, or `None` when that does not fit in
/// 64 bits: the largest of ggml's `nbytes`, packed rows (what kernels that assume them read)
/// and strided elements, each row starting at the sum of the outer strides.
fn span(type_: Type, ne: [u64; MAX_DIMS], nb: [u64; MAX_DIMS]) -> Option<u64> {
    if ne.contains(&0) {
        return Some(0);
    }
    let ts = type_.type_size() as u64;
    let blck = type_.blck_size() as u64;
    let mut outer = 0u64;
    for d in 1..MAX_DIMS {
        outer = outer.checked_add((ne[d] - 1).checked_mul(nb[d])?)?;
    }
    let packed = ts.checked_mul(ne[0] / blck)?;
    let strided =
        if blck == 1 { (ne[0] - 1).checked_mul(nb[0])?.checked_add(ts)? } else { ne[0].checked_mul(nb[0])? / blck };
    outer.checked_add(packed.max(strided))
}

/// `ggml_nbytes` with checked arithmetic.
fn nbytes(type_: Type, ne: [u64; MAX_DIMS], nb: [u64; MAX_DIMS]) -> Option<u64> {
    if ne.contains(&0) {
        return Some(0);
    }
    let blck = type_.blck_size() as u64;
    let (mut n, first) = if blck == 1 { (type_.type_size() as u64, 0) } else { (ne[0].checked_mul(nb[0])? / blck, 1) };
    for d in first..MAX_DIMS {
        n = n.checked_add((ne[d] - 1).checked_mul(nb[d])?)?;
    }
    Some(n)
}

/// Whether no two elements (blocks, for the block formats) of the tensor share a byte: taken
/// by increasing stride, each dimension steps past all that the smaller ones span. Kernels
/// split a result's elements between threads, so a result whose elements overlap would be
/// written by two threads at once, and could name far more elements than its bytes hold.
pub(super) fn elements_distinct(type_: Type, ne: [u64; MAX_DIMS], nb: [u64; MAX_DIMS]) -> bool {
    if ne.contains(&0) {
        return true;
    }
    let mut units = ne;
    units[0] /= type_.blck_size() as u64;
    let mut dims: Vec<(u64, u64)> = nb.into_iter().zip(units).filter(|&(_, n)| n > 1).collect();
    dims.sort_unstable();
    let mut span = type_.type_size() as u64;
    for (stride, n) in dims {
        let next = (n - 1).checked_mul(stride).and_then(|b| b.checked_add(span));
        match next {
            Some(next) if stride >= span => span = next,
            _ => return false,
        }
    }
    true
}

/// Checks one wire description: a type with blocks, rows of whole blocks, extents and strides
/// within the caps, a known op, and a placement that lies inside a buffer of this connection.
/// A buffer and an address come together or not at all.
pub(super) fn check(t: &WireTensor, buffers: &Buffers) -> Result<Checked, String> {
    let type_ = Type(i32::try_from(t.type_).unwrap_or(i32::MAX));
    if !type_.is_valid() || type_.blck_size() <= 0 {
        return Err(format!("invalid tensor type {}", t.type_));
    }
    let blck = type_.blck_size() as u64;
    let ne = t.ne.map(u64::from);
    let nb = t.nb.map(u64::from);
    if ne[0] % blck != 0 {
        return Err(format!("a row of {} elements of {} is not whole blocks", ne[0], type_.name()));
    }
    if t.ne.iter().any(|&n| n > MAX_EXTENT) {
        return Err(format!("extents {:?} beyond {}", t.ne, MAX_EXTENT));
    }
    let elements = ne.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n.max(1)));
    if elements.is_none_or(|n| n > MAX_ELEMENTS) {
        return Err(format!("extents {:?} hold more than {} elements", t.ne, MAX_ELEMENTS));
    }
    if t.op >= Op::COUNT as u32 {
        return Err(format!("invalid op {}", t.op));
    }
    let (Some(span), Some(nbytes)) = (span(type_, ne, nb), nbytes(type_, ne, nb)) else {
        return Err(format!("extents {:?} with strides {:?} overflow", t.ne, t.nb));
    };
    let placement = match (t.buffer, t.data) {
        (0, 0) => None,
        (0, data) => return Err(format!("data address {data:#x} without a buffer")),
        (handle, 0) => return Err(format!("buffer {handle:#x} without a data address")),
        (handle, start) => {
            let buffer = buffers.get(handle).ok_or_else(|| format!("unknown buffer {handle:#x}"))?;
            let (base, end) = bounds(buffer).ok_or("a buffer past the end of the address space")?;
            if start < base || start.checked_add(span).is_none_or(|e| e > end) {
                return Err(format!("tensor bytes [{start:#x}, +{span}) outside its buffer [{base:#x}, {end:#x})"));
            }
            Some(Placement { buffer, start, span })
        }
    };
    let distinct = elements_distinct(type_, ne, nb);
    Ok(Checked { wire: *t, type_, nbytes, distinct, placement })
}

/// Makes the checked tensor in `ctx`: its type, shape and strides, op, op parameters, flags,
/// name, buffer and address (sources and views are linked by the caller).
pub(super) fn build(ctx: &mut Context, c: &Checked) -> TensorPtr {
    let w = &c.wire;
    let tensor = ctx.new_tensor(c.type_, &w.ne.map(i64::from));
    let t = tensor.get_mut();
    t.nb = w.nb.map(|n| n as usize);
    t.op = Op(w.op as i32);
    t.op_params = w.op_params;
    t.flags = w.flags;
    t.set_name_bytes(&w.name);
    if let Some(p) = c.placement {
        t.buffer = p.buffer.as_ptr().cast();
        t.data = p.start as *mut std::ffi::c_void;
    }
    tensor
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contiguous(type_: Type, ne: [u64; 4]) -> [u64; 4] {
        let ts = type_.type_size() as u64;
        let nb1 = ts * ne[0] / type_.blck_size() as u64;
        [ts, nb1, nb1 * ne[1], nb1 * ne[1] * ne[2]]
    }

    #[test]
    fn spans_cover_nbytes_packed_rows_and_strides() {
        for (ty, ne) in [(Type::F32, [5, 3, 2, 1]), (Type::Q4_0, [64, 3, 1, 2]), (Type::Q6_K, [256, 2, 1, 1])] {
            let nb = contiguous(ty, ne);
            assert_eq!(span(ty, ne, nb), nbytes(ty, ne, nb));
        }
        // an f32 row whose elements are a byte apart still spans 4 bytes per element: a
        // kernel that takes rows as packed reads that much
        assert_eq!(nbytes(Type::F32, [8, 1, 1, 1], [1, 32, 32, 32]), Some(11));
        assert_eq!(span(Type::F32, [8, 1, 1, 1], [1, 32, 32, 32]), Some(32));
        // transposed: nb0 > nb1
        assert_eq!(span(Type::F32, [3, 2, 1, 1], [8, 4, 24, 24]), Some(2 * 8 + 4 + 4));
        assert_eq!(span(Type::F32, [0, 2, 1, 1], [4, 4, 4, 4]), Some(0));
        assert_eq!(span(Type::F32, [u32::MAX as u64; 4], [u32::MAX as u64; 4]), None);
    }

    #[test]
    fn distinct_elements_allow_any_order_of_strides_and_gaps() {
        for (ty, ne) in [(Type::F32, [5, 3, 2, 1]), (Type::Q4_0, [64, 3, 1, 2]), (Type::F16, [1, 1, 1, 1])] {
            assert!(elements_distinct(ty, ne, contiguous(ty, ne)));
        }
        // transposed, permuted, rows with gaps, unit dimensions with any stride
        assert!(elements_distinct(Type::F32, [3, 2, 1, 1], [8, 4, 24, 24]));
        assert!(elements_distinct(Type::F32, [2, 3, 4, 1], [48, 4, 12, 0]));
        assert!(elements_distinct(Type::F32, [4, 2, 1, 1], [4, 64, 0, 0]));
        assert!(elements_distinct(Type::F32, [4, 0, 3, 1], [4, 0, 0, 0]));
        // found by the graph fuzzer: 1.08e9 elements in 48 bytes
        assert!(!elements_distinct(Type::F32, [4, 1024, 1024, 1024], [4, 16, 16, 16]));
        assert!(!elements_distinct(Type::F32, [4, 2, 1, 1], [4, 12, 16, 16]));
        assert!(!elements_distinct(Type::F32, [4, 2, 1, 1], [4, 0, 16, 16]));
        assert!(!elements_distinct(Type::F32, [8, 1, 1, 1], [1, 32, 32, 32]));
        assert!(!elements_distinct(Type::Q4_0, [64, 2, 1, 1], [18, 18, 36, 36]));
        assert!(!elements_distinct(Type::F32, [3, 3, 1, 1], [u64::MAX / 2, 4, 1, 1]));
    }
}
