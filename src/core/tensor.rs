//! `struct ggml_tensor`, laid out byte for byte as in ggml 0.25.1, and the shape facts every
//! layer asks of it (element and row counts, byte sizes, contiguity).

use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use super::op::Op;
use super::types::Type;

pub const MAX_DIMS: usize = 4;
pub const MAX_OP_PARAMS: usize = 64;
pub const MAX_SRC: usize = 10;
pub const MAX_NAME: usize = 64;

/// `enum ggml_tensor_flag`.
pub mod flag {
    pub const INPUT: i32 = 1;
    pub const OUTPUT: i32 = 2;
    pub const PARAM: i32 = 4;
    pub const LOSS: i32 = 8;
    pub const COMPUTE: i32 = 16;
}

/// `struct ggml_tensor` (336 bytes). Field names are the C ones: backends written in C read
/// them directly.
#[repr(C)]
pub struct Tensor {
    pub type_: Type,
    pub buffer: *mut c_void,
    pub ne: [i64; MAX_DIMS],
    pub nb: [usize; MAX_DIMS],
    pub op: Op,
    pub op_params: [i32; MAX_OP_PARAMS / 4],
    pub flags: i32,
    pub src: [*mut Tensor; MAX_SRC],
    pub view_src: *mut Tensor,
    pub view_offs: usize,
    pub data: *mut c_void,
    pub name: [c_char; MAX_NAME],
    pub extra: *mut c_void,
    pub padding: [c_char; 8],
}

const _: () = assert!(std::mem::size_of::<Tensor>() == 336);
const _: () = assert!(std::mem::offset_of!(Tensor, op_params) == 84);
const _: () = assert!(std::mem::offset_of!(Tensor, name) == 256);

/// A tensor handle as the C API hands them around: a non-null pointer into a context's memory.
///
/// ggml's contract is that a tensor lives as long as its context and that callers do not use
/// it after `ggml_free`/`ggml_reset`; every handle relies on that, which is why dereferencing
/// one is safe here and nowhere else. Graph building aliases tensors freely (a node is the
/// source of many others), so handles are `Copy` and mutation goes through [`TensorPtr::get_mut`]
/// for the short, non-overlapping edits that constructors make.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TensorPtr(NonNull<Tensor>);

impl TensorPtr {
    /// # Safety
    /// `ptr` must point to a live `ggml_tensor` that outlives every use of the handle.
    pub unsafe fn new(ptr: NonNull<Tensor>) -> Self {
        TensorPtr(ptr)
    }

    /// Wraps a possibly-null pointer coming from C or from a `src[]` slot.
    ///
    /// # Safety
    /// As [`TensorPtr::new`], when `ptr` is not null.
    pub unsafe fn from_raw(ptr: *mut Tensor) -> Option<Self> {
        NonNull::new(ptr).map(TensorPtr)
    }

    pub fn as_ptr(self) -> *mut Tensor {
        self.0.as_ptr()
    }

    /// Mutable access for a constructor's or setter's edit of this one tensor.
    ///
    /// Crate-private, because nothing in the type stops two handles to one tensor from both
    /// calling it: the contract is the caller's. Use the reference for one short edit (a
    /// statement or a few) and let it go before anything else reads or writes the tensor, and
    /// never while a kernel on another thread may touch it. C code is outside this promise,
    /// as it is for ggml.
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn get_mut(&self) -> &mut Tensor {
        // SAFETY: the handle's contract (see the type) keeps the tensor alive; the callers'
        // contract above keeps the borrow exclusive while it lasts.
        unsafe { &mut *self.0.as_ptr() }
    }

    /// The source in slot `i`, if any.
    pub fn src(self, i: usize) -> Option<TensorPtr> {
        // SAFETY: src[] slots hold null or tensors of the same (or an outliving) context.
        unsafe { TensorPtr::from_raw(self.src[i]) }
    }

    pub fn view_source(self) -> Option<TensorPtr> {
        // SAFETY: view_src is null or the tensor this one views, which outlives it.
        unsafe { TensorPtr::from_raw(self.view_src) }
    }
}

impl std::ops::Deref for TensorPtr {
    type Target = Tensor;
    fn deref(&self) -> &Tensor {
        // SAFETY: see the type's contract.
        unsafe { self.0.as_ref() }
    }
}

impl Tensor {
    /// The source in slot `i`, borrowed from this tensor, if any.
    pub fn source(&self, i: usize) -> Option<&Tensor> {
        // SAFETY: src[] slots hold null or tensors of the same (or an outliving) context, which
        // live at least as long as this tensor is borrowed.
        unsafe { self.src[i].as_ref() }
    }

    // Shape arithmetic wraps as C's does: absurd shapes from a caller give the same (wrong)
    // answers as in ggml instead of a debug-build overflow abort.
    pub fn nelements(&self) -> i64 {
        self.ne.iter().fold(1i64, |acc, &n| acc.wrapping_mul(n))
    }

    pub fn nrows(&self) -> i64 {
        self.ne[1].wrapping_mul(self.ne[2]).wrapping_mul(self.ne[3])
    }

    /// Bytes spanned by the tensor's data, strides included.
    pub fn nbytes(&self) -> usize {
        if self.ne.iter().any(|&n| n <= 0) {
            return 0;
        }
        let blck = self.type_.blck_size();
        let mut n = if blck == 1 {
            self.type_.type_size()
        } else {
            (self.ne[0] as usize).wrapping_mul(self.nb[0]) / blck as usize
        };
        let first = if blck == 1 { 0 } else { 1 };
        for i in first..MAX_DIMS {
            n = n.wrapping_add(((self.ne[i] - 1) as usize).wrapping_mul(self.nb[i]));
        }
        n
    }

    pub fn element_size(&self) -> usize {
        self.type_.type_size()
    }

    pub fn n_dims(&self) -> i32 {
        (1..MAX_DIMS).rev().find(|&i| self.ne[i] > 1).map_or(1, |i| i as i32 + 1)
    }

    pub fn is_empty(&self) -> bool {
        self.ne.contains(&0)
    }

    pub fn is_scalar(&self) -> bool {
        self.ne.iter().all(|&n| n == 1)
    }

    pub fn is_vector(&self) -> bool {
        self.ne[1] == 1 && self.ne[2] == 1 && self.ne[3] == 1
    }

    pub fn is_matrix(&self) -> bool {
        self.ne[2] == 1 && self.ne[3] == 1
    }

    pub fn is_3d(&self) -> bool {
        self.ne[3] == 1
    }

    pub fn is_transposed(&self) -> bool {
        self.nb[0] > self.nb[1]
    }

    pub fn is_permuted(&self) -> bool {
        self.nb[0] > self.nb[1] || self.nb[1] > self.nb[2] || self.nb[2] > self.nb[3]
    }

    pub fn is_view(&self) -> bool {
        !self.view_src.is_null()
    }

    /// Dimensions `0..n` are densely packed, except that dimensions `1..=m` may have any
    /// stride (ggml's `is_contiguous_m_n`).
    fn is_contiguous_m_n(&self, m: usize, n: usize) -> bool {
        let blck = self.type_.blck_size();
        let mut next_nb = self.type_.type_size();
        if self.ne[0] != blck && self.nb[0] != next_nb {
            return false;
        }
        next_nb *= (self.ne[0] / blck) as usize;
        for i in 1..n {
            if i > m {
                if self.ne[i] != 1 && self.nb[i] != next_nb {
                    return false;
                }
                next_nb *= self.ne[i] as usize;
            } else {
                next_nb = self.ne[i] as usize * self.nb[i];
            }
        }
        true
    }

    pub fn is_contiguous(&self) -> bool {
        self.is_contiguous_m_n(0, MAX_DIMS)
    }

    /// Densely packed except that dimensions `1..=n` may have any stride
    /// (`ggml_is_contiguous_1`, `_2`).
    pub fn is_contiguous_n(&self, n: usize) -> bool {
        self.is_contiguous_m_n(n, MAX_DIMS)
    }

    /// Densely packed in the first `n` dimensions.
    pub fn is_contiguous_to(&self, n: usize) -> bool {
        self.is_contiguous_m_n(0, n)
    }

    pub fn is_contiguously_allocated(&self) -> bool {
        self.nbytes() == self.nelements() as usize * self.type_.type_size() / self.type_.blck_size() as usize
    }

    pub fn is_contiguous_channels(&self) -> bool {
        self.nb[0] > self.nb[2] && self.nb[1] > self.nb[0] && self.nb[2] == self.type_.type_size()
    }

    pub fn is_contiguous_rows(&self) -> bool {
        self.ne[0] == self.type_.blck_size() || self.nb[0] == self.type_.type_size()
    }

    /// Rows packed one after another (each row may be padded): ggml's `is_padded_1d`.
    pub fn is_padded_1d(&self) -> bool {
        self.nb[0] == self.type_.type_size()
            && self.nb[2] == self.nb[1] * self.ne[1] as usize
            && self.nb[3] == self.nb[2] * self.ne[2] as usize
    }

    pub fn same_shape(&self, other: &Tensor) -> bool {
        self.ne == other.ne
    }

    pub fn same_stride(&self, other: &Tensor) -> bool {
        self.nb == other.nb
    }

    /// Whether `other` can be tiled from copies of `self`.
    pub fn can_repeat_to(&self, other: &Tensor) -> bool {
        if self.is_empty() {
            return other.is_empty();
        }
        (0..MAX_DIMS).all(|i| other.ne[i] % self.ne[i] == 0)
    }

    /// As [`Tensor::can_repeat_to`], with the same row length.
    pub fn can_repeat_rows_to(&self, other: &Tensor) -> bool {
        self.ne[0] == other.ne[0] && self.can_repeat_to(other)
    }

    /// The name's bytes, without the terminator.
    pub fn name_bytes(&self) -> &[u8] {
        // SAFETY: c_char and u8 have the same layout; the name is terminated within 64 bytes.
        let bytes = unsafe { &*(&self.name as *const [c_char; MAX_NAME] as *const [u8; MAX_NAME]) };
        &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(MAX_NAME)]
    }

    pub fn name(&self) -> &str {
        // SAFETY: the name field is always NUL-terminated within its 64 bytes (set_name writes
        // at most 63 bytes and a terminator; a fresh tensor is zeroed).
        let cstr = unsafe { CStr::from_ptr(self.name.as_ptr()) };
        cstr.to_str().unwrap_or("")
    }

    /// Copies up to 63 bytes of `name`, as `ggml_set_name` does (truncating, always
    /// terminated).
    pub fn set_name_bytes(&mut self, name: &[u8]) {
        let n = name.iter().position(|&b| b == 0).unwrap_or(name.len()).min(MAX_NAME - 1);
        for (dst, &src) in self.name.iter_mut().zip(&name[..n]) {
            *dst = src as c_char;
        }
        self.name[n] = 0;
    }

    pub fn set_name(&mut self, name: &str) {
        self.set_name_bytes(name.as_bytes());
    }

    pub fn op_param_i32(&self, i: usize) -> i32 {
        self.op_params[i]
    }

    pub fn op_param_f32(&self, i: usize) -> f32 {
        f32::from_bits(self.op_params[i] as u32)
    }

    pub fn set_op_param_i32(&mut self, i: usize, v: i32) {
        self.op_params[i] = v;
    }

    pub fn set_op_param_f32(&mut self, i: usize, v: f32) {
        self.op_params[i] = v.to_bits() as i32;
    }

    /// Copies raw bytes into `op_params` (ggml's `ggml_set_op_params`).
    pub fn set_op_params_bytes(&mut self, bytes: &[u8]) {
        crate::ggml_assert!(bytes.len() <= MAX_OP_PARAMS, "op params larger than {} bytes", MAX_OP_PARAMS);
        // SAFETY: op_params is 64 plain bytes and `bytes` fits in it (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.op_params.as_mut_ptr().cast::<u8>(), bytes.len());
        }
    }

    /// Writes `params` as consecutive `i32`s from the start of `op_params`.
    pub fn set_op_params_i32(&mut self, params: &[i32]) {
        crate::ggml_assert!(params.len() <= MAX_OP_PARAMS / 4, "too many op params");
        self.op_params[..params.len()].copy_from_slice(params);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zeroed() -> Tensor {
        // SAFETY: every field of Tensor is plain data or a raw pointer; all-zero is valid.
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn contiguous_matrix_and_its_transpose() {
        let mut t = zeroed();
        t.type_ = Type::F32;
        t.ne = [4, 3, 1, 1];
        t.nb = [4, 16, 48, 48];
        assert!(t.is_contiguous());
        assert_eq!(t.nbytes(), 48);
        assert_eq!(t.n_dims(), 2);
        t.ne = [3, 4, 1, 1];
        t.nb = [16, 4, 48, 48];
        assert!(t.is_transposed());
        assert!(!t.is_contiguous());
    }

    #[test]
    fn names_truncate_at_63_bytes() {
        let mut t = zeroed();
        t.set_name(&"x".repeat(100));
        assert_eq!(t.name().len(), 63);
    }
}
