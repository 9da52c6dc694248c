//! `struct gguf_context`: the key-value pairs and tensor descriptions of one GGUF file, with
//! the getters and setters of the C API. Index arguments are checked and abort when out of
//! range, as ggml's do.

use super::value::{CBytes, GgufType, Kv, Payload};
use super::{DEFAULT_ALIGNMENT, KEY_GENERAL_ALIGNMENT, VERSION};
use crate::core::context::pad;
use crate::core::tensor::{MAX_DIMS, Tensor};
use crate::core::types::Type;

/// One tensor as described in the file: a full `ggml_tensor` (name, type, shape, strides,
/// and for writing its data or backend buffer) and its offset in the data section.
pub struct TensorInfo {
    pub t: Tensor,
    pub offset: u64,
}

impl TensorInfo {
    /// A description with every field zeroed.
    pub fn blank() -> TensorInfo {
        // SAFETY: `Tensor` is plain data and raw pointers; all-zero bytes are a valid value
        // (type F32, op NONE, null pointers, empty name).
        TensorInfo { t: unsafe { std::mem::zeroed() }, offset: 0 }
    }

    pub fn nbytes(&self) -> usize {
        self.t.nbytes()
    }
}

/// Sets `nb` for a densely packed tensor of `t.type_` and `t.ne` (the type must have blocks).
pub(crate) fn set_dense_strides(t: &mut Tensor) {
    let blck = t.type_.blck_size();
    t.nb[0] = t.type_.type_size();
    t.nb[1] = t.nb[0].wrapping_mul((t.ne[0] / blck) as usize);
    for i in 2..MAX_DIMS {
        t.nb[i] = t.nb[i - 1].wrapping_mul(t.ne[i - 1] as usize);
    }
}

pub struct GgufContext {
    pub(crate) version: u32,
    pub(crate) kv: Vec<Kv>,
    pub(crate) info: Vec<TensorInfo>,
    /// Alignment of the data section and of each tensor in it. Taken from
    /// `general.alignment` when a file is read; setting that key later does not change it
    /// (as in ggml).
    pub(crate) alignment: usize,
    /// Where the data section starts, from the beginning of the file.
    pub(crate) offset: usize,
    /// Size of the data section, padding included.
    pub(crate) size: usize,
}

impl Default for GgufContext {
    fn default() -> Self {
        GgufContext::new()
    }
}

impl GgufContext {
    pub fn new() -> GgufContext {
        GgufContext {
            version: VERSION,
            kv: Vec::new(),
            info: Vec::new(),
            alignment: DEFAULT_ALIGNMENT,
            offset: 0,
            size: 0,
        }
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn alignment(&self) -> usize {
        self.alignment
    }

    pub fn data_offset(&self) -> usize {
        self.offset
    }

    /// Size in bytes of the data section (tensors and their padding).
    pub fn data_size(&self) -> usize {
        self.size
    }

    // ---- key-value pairs ----

    pub fn n_kv(&self) -> i64 {
        self.kv.len() as i64
    }

    pub fn kvs(&self) -> &[Kv] {
        &self.kv
    }

    /// Index of `key` (compared as C strings), or -1.
    pub fn find_key(&self, key: &[u8]) -> i64 {
        self.kv.iter().position(|kv| kv.key().c_view() == key).map_or(-1, |i| i as i64)
    }

    /// The pair at `key_id`; aborts when out of range.
    pub fn kv(&self, key_id: i64) -> &Kv {
        crate::ggml_assert!(key_id >= 0 && key_id < self.n_kv(), "key id {} out of range [0, {})", key_id, self.n_kv());
        &self.kv[key_id as usize]
    }

    /// `gguf_get_arr_type`: the element type of an array; aborts for single values.
    pub fn arr_type(&self, key_id: i64) -> GgufType {
        let kv = self.kv(key_id);
        crate::ggml_assert!(kv.is_array(), "key '{}' is not an array", lossy(kv.key().c_view()));
        kv.ty()
    }

    /// Removes `key`; returns the index it had, or -1.
    pub fn remove_key(&mut self, key: &[u8]) -> i64 {
        let id = self.find_key(key);
        if id >= 0 {
            self.kv.remove(id as usize);
        }
        id
    }

    /// Adds `kv` at the back, replacing any pair with the same key. `general.alignment` may
    /// only be set to a power-of-2 `u32`.
    pub fn set(&mut self, kv: Kv) {
        if kv.key().bytes() == KEY_GENERAL_ALIGNMENT.as_bytes() {
            if kv.is_array() || kv.ty() != GgufType::UINT32 {
                crate::ggml_abort!("{KEY_GENERAL_ALIGNMENT} must be type u32");
            }
            let align: u32 = kv.get();
            crate::ggml_assert!(
                align.is_power_of_two(),
                "{} must be a power of 2, not {}",
                KEY_GENERAL_ALIGNMENT,
                align
            );
        }
        self.remove_key(kv.key().c_view());
        self.kv.push(kv);
    }

    /// `gguf_set_kv`: copies every pair of `src` (replacing existing keys), re-encoding
    /// each as its setter would.
    pub fn set_all(&mut self, src: &[Kv]) {
        for kv in src {
            let key = kv.key().c_view();
            let copy = match kv.payload() {
                // C strings are copied: anything after an embedded NUL is dropped
                Payload::Strings(s) if kv.is_array() => {
                    Kv::string_array(key, s.iter().map(|x| CBytes::new(x.c_view())).collect())
                }
                Payload::Strings(s) => Kv::string(key, s[0].c_view()),
                Payload::Plain(_) if kv.is_array() => Kv::plain_array(key, kv.ty(), kv.raw()),
                Payload::Plain(_) => Kv::plain(key, false, kv.ty(), kv.raw()),
            };
            self.set(copy);
        }
    }

    // ---- tensors ----

    pub fn n_tensors(&self) -> i64 {
        self.info.len() as i64
    }

    pub fn tensor_infos(&self) -> &[TensorInfo] {
        &self.info
    }

    /// Index of the tensor called `name`, or -1.
    pub fn find_tensor(&self, name: &[u8]) -> i64 {
        self.info.iter().position(|ti| ti.t.name_bytes() == name).map_or(-1, |i| i as i64)
    }

    /// The tensor at `tensor_id`; aborts when out of range.
    pub fn tensor(&self, tensor_id: i64) -> &TensorInfo {
        crate::ggml_assert!(
            tensor_id >= 0 && tensor_id < self.n_tensors(),
            "tensor id {} out of range [0, {})",
            tensor_id,
            self.n_tensors()
        );
        &self.info[tensor_id as usize]
    }

    fn tensor_id_or_abort(&self, name: &[u8]) -> usize {
        let id = self.find_tensor(name);
        if id < 0 {
            crate::ggml_abort!("tensor not found: {}", lossy(name));
        }
        id as usize
    }

    /// Where a tensor after `prev` starts: right after it, padded to the alignment.
    fn offset_after(&self, prev: &TensorInfo) -> u64 {
        prev.offset + pad(prev.nbytes(), self.alignment) as u64
    }

    /// Appends a copy of `tensor`'s description (its data is written from `tensor.data` or
    /// its backend buffer). Names must be unique.
    pub fn add_tensor(&mut self, tensor: &Tensor) {
        if self.find_tensor(tensor.name_bytes()) != -1 {
            crate::ggml_abort!("duplicate tensor name: {}", lossy(tensor.name_bytes()));
        }
        // SAFETY: `Tensor` is plain data without drop glue; a bitwise copy is a valid,
        // independent value (ggml copies the struct the same way).
        let t = unsafe { std::ptr::read(tensor) };
        let offset = self.info.last().map_or(0, |prev| self.offset_after(prev));
        self.info.push(TensorInfo { t, offset });
    }

    /// Changes a tensor's type; the tensors after it move so that the data stays one block.
    pub fn set_tensor_type(&mut self, name: &[u8], ty: Type) {
        let id = self.tensor_id_or_abort(name);
        crate::ggml_assert!(ty.is_valid(), "invalid ggml_type {}", ty.0);
        let blck = ty.blck_size();
        let t = &mut self.info[id].t;
        crate::ggml_assert!(
            blck > 0 && t.ne[0] % blck == 0,
            "tensor row size {} not divisible by the block size of {}",
            t.ne[0],
            ty.name()
        );
        t.type_ = ty;
        set_dense_strides(t);
        for i in id + 1..self.info.len() {
            self.info[i].offset = self.offset_after(&self.info[i - 1]);
        }
    }

    /// Points a tensor at the data to write for it.
    pub fn set_tensor_data(&mut self, name: &[u8], data: *const std::ffi::c_void) {
        let id = self.tensor_id_or_abort(name);
        self.info[id].t.data = data.cast_mut();
    }
}

/// Owned byte strings as the elements of a string array.
pub fn strings(values: impl IntoIterator<Item = Vec<u8>>) -> Vec<CBytes> {
    values.into_iter().map(CBytes::from_vec).collect()
}

pub(crate) fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_tensor(name: &str, ne: [i64; 4]) -> Tensor {
        let mut t = TensorInfo::blank().t;
        t.type_ = Type::F32;
        t.ne = ne;
        set_dense_strides(&mut t);
        t.set_name(name);
        t
    }

    #[test]
    fn setting_a_key_moves_it_to_the_back() {
        let mut c = GgufContext::new();
        c.set(Kv::scalar(b"a", 1u8));
        c.set(Kv::scalar(b"b", 2u16));
        c.set(Kv::scalar(b"a", 3i32));
        assert_eq!(c.n_kv(), 2);
        assert_eq!(c.find_key(b"a"), 1);
        assert_eq!(c.kv(1).get::<i32>(), 3);
        assert_eq!(c.remove_key(b"b"), 0);
        assert_eq!(c.remove_key(b"b"), -1);
    }

    #[test]
    fn tensor_offsets_follow_alignment_and_type_changes() {
        let mut c = GgufContext::new();
        c.add_tensor(&f32_tensor("a", [10, 1, 1, 1]));
        c.add_tensor(&f32_tensor("b", [64, 2, 1, 1]));
        c.add_tensor(&f32_tensor("c", [3, 1, 1, 1]));
        assert_eq!(c.tensor(1).offset, 64);
        assert_eq!(c.tensor(2).offset, 64 + 512);
        c.set_tensor_type(b"b", Type::Q8_0);
        assert_eq!(c.tensor(1).nbytes(), 2 * 2 * 34);
        assert_eq!(c.tensor(2).offset, 64 + 160);
    }

    #[test]
    fn set_all_copies_every_kind() {
        let mut src = GgufContext::new();
        src.set(Kv::scalar(b"x", 1.5f32));
        src.set(Kv::string(b"s", b"hello"));
        src.set(Kv::string_array(b"sa", strings([b"p".to_vec(), b"q".to_vec()])));
        src.set(Kv::plain_array(b"ua", GgufType::UINT16, &[1, 0, 2, 0]));
        let mut dst = GgufContext::new();
        dst.set(Kv::scalar(b"s", 7u8));
        dst.set_all(src.kvs());
        assert_eq!(dst.n_kv(), 4);
        assert_eq!(dst.kv(dst.find_key(b"s")).get_str().bytes(), b"hello");
        assert_eq!(dst.kv(dst.find_key(b"sa")).str_at(1).bytes(), b"q");
        assert_eq!(dst.kv(dst.find_key(b"ua")).element::<u16>(1), 2);
    }
}
