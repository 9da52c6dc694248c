//! Typed key-value data: the `gguf_type` enumeration, NUL-terminated byte strings and the
//! one-value-or-array payload of a key.
//!
//! Values are kept as they are serialised (native byte order, bools as one byte) so that
//! `gguf_get_val_data` / `gguf_get_arr_data` can hand out pointers to them directly.

use std::ffi::c_char;

/// `enum gguf_type`. A transparent `i32` rather than a Rust enum: files and C callers may
/// carry any value, which is then rejected explicitly.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct GgufType(pub i32);

impl GgufType {
    pub const UINT8: GgufType = GgufType(0);
    pub const INT8: GgufType = GgufType(1);
    pub const UINT16: GgufType = GgufType(2);
    pub const INT16: GgufType = GgufType(3);
    pub const UINT32: GgufType = GgufType(4);
    pub const INT32: GgufType = GgufType(5);
    pub const FLOAT32: GgufType = GgufType(6);
    pub const BOOL: GgufType = GgufType(7);
    pub const STRING: GgufType = GgufType(8);
    pub const ARRAY: GgufType = GgufType(9);
    pub const UINT64: GgufType = GgufType(10);
    pub const INT64: GgufType = GgufType(11);
    pub const FLOAT64: GgufType = GgufType(12);
    pub const COUNT: i32 = 13;

    /// Bytes of one element; 0 for strings, arrays and values outside the enumeration.
    pub fn size(self) -> usize {
        match self.0 {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            _ => 0,
        }
    }

    /// Fixed-size element types (everything but strings and arrays).
    pub fn is_plain(self) -> bool {
        self.size() > 0
    }

    /// The short name (`"u8"`, `"str"`, ...), `None` outside the enumeration.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; GgufType::COUNT as usize] =
            ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"];
        usize::try_from(self.0).ok().and_then(|i| NAMES.get(i).copied())
    }

    /// For log messages: the name, or the raw number.
    pub fn describe(self) -> String {
        self.name().map_or_else(|| format!("<invalid {}>", self.0), str::to_owned)
    }
}

/// A byte string kept with a trailing NUL, so that C can read it in place. The bytes may
/// themselves contain NULs (a file can say so); C then sees the part before the first one.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CBytes(Vec<u8>);

impl CBytes {
    pub fn new(bytes: &[u8]) -> Self {
        let mut v = Vec::with_capacity(bytes.len() + 1);
        v.extend_from_slice(bytes);
        v.push(0);
        CBytes(v)
    }

    /// Takes ownership of `bytes` and appends the terminator.
    pub fn from_vec(mut bytes: Vec<u8>) -> Self {
        bytes.push(0);
        CBytes(bytes)
    }

    /// Every stored byte, without the terminator: what gets serialised.
    pub fn bytes(&self) -> &[u8] {
        &self.0[..self.0.len() - 1]
    }

    /// The bytes C sees through [`CBytes::as_ptr`]: up to the first NUL.
    pub fn c_view(&self) -> &[u8] {
        let all = self.bytes();
        &all[..all.iter().position(|&b| b == 0).unwrap_or(all.len())]
    }

    pub fn as_ptr(&self) -> *const c_char {
        self.0.as_ptr().cast()
    }
}

/// Bytes stored with 8-byte alignment, so that a pointer to them can be read as any element
/// type by C (ggml hands out such pointers from `gguf_get_arr_data`).
#[derive(Clone, Default, Debug)]
pub struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    pub fn from_slice(bytes: &[u8]) -> Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_ne_bytes(b);
        }
        AlignedBytes { words, len: bytes.len() }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `words` owns at least `len` initialised bytes (len <= 8 * words.len()), u8
        // has no alignment requirement, and the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A fixed-size value type that can be stored under a key.
pub trait Scalar: Copy {
    const TYPE: GgufType;
    fn append_to(self, out: &mut Vec<u8>);
    /// Decodes from exactly `TYPE.size()` bytes.
    fn decode(bytes: &[u8]) -> Self;
}

macro_rules! numeric_scalar {
    ($($t:ty => $gt:ident),* $(,)?) => {$(
        impl Scalar for $t {
            const TYPE: GgufType = GgufType::$gt;
            fn append_to(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn decode(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_ne_bytes(b)
            }
        }
    )*};
}

numeric_scalar!(
    u8 => UINT8, i8 => INT8, u16 => UINT16, i16 => INT16, u32 => UINT32, i32 => INT32,
    f32 => FLOAT32, u64 => UINT64, i64 => INT64, f64 => FLOAT64,
);

impl Scalar for bool {
    const TYPE: GgufType = GgufType::BOOL;
    fn append_to(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn decode(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// What a key holds: fixed-size elements back to back, or strings.
#[derive(Clone, Debug)]
pub enum Payload {
    Plain(AlignedBytes),
    Strings(Vec<CBytes>),
}

/// One key-value pair. A single value and a one-element array differ only in `is_array`.
#[derive(Clone, Debug)]
pub struct Kv {
    key: CBytes,
    is_array: bool,
    ty: GgufType,
    payload: Payload,
}

impl Kv {
    fn new(key: &[u8], is_array: bool, ty: GgufType, payload: Payload) -> Kv {
        crate::ggml_assert!(!key.is_empty(), "GGUF keys must not be empty");
        Kv { key: CBytes::new(key), is_array, ty, payload }
    }

    pub fn scalar<T: Scalar>(key: &[u8], value: T) -> Kv {
        let mut bytes = Vec::with_capacity(T::TYPE.size());
        value.append_to(&mut bytes);
        Kv::new(key, false, T::TYPE, Payload::Plain(AlignedBytes::from_slice(&bytes)))
    }

    /// An array of fixed-size elements of type `ty`, given as their raw bytes.
    pub fn plain_array(key: &[u8], ty: GgufType, bytes: &[u8]) -> Kv {
        crate::ggml_assert!(ty.is_plain(), "type {} is not a fixed-size GGUF type", ty.describe());
        crate::ggml_assert!(bytes.len().is_multiple_of(ty.size()), "array bytes are not a whole number of elements");
        Kv::new(key, true, ty, Payload::Plain(AlignedBytes::from_slice(bytes)))
    }

    pub fn string(key: &[u8], value: &[u8]) -> Kv {
        Kv::new(key, false, GgufType::STRING, Payload::Strings(vec![CBytes::new(value)]))
    }

    pub fn string_array(key: &[u8], values: Vec<CBytes>) -> Kv {
        Kv::new(key, true, GgufType::STRING, Payload::Strings(values))
    }

    /// As [`Kv::plain_array`], but also for single values read from a file.
    pub fn plain(key: &[u8], is_array: bool, ty: GgufType, bytes: &[u8]) -> Kv {
        crate::ggml_assert!(ty.is_plain() && bytes.len().is_multiple_of(ty.size()), "malformed plain value");
        Kv::new(key, is_array, ty, Payload::Plain(AlignedBytes::from_slice(bytes)))
    }

    pub fn strings(key: &[u8], is_array: bool, values: Vec<CBytes>) -> Kv {
        Kv::new(key, is_array, GgufType::STRING, Payload::Strings(values))
    }

    pub fn key(&self) -> &CBytes {
        &self.key
    }

    pub fn is_array(&self) -> bool {
        self.is_array
    }

    /// The element type (for arrays, the type of their elements).
    pub fn ty(&self) -> GgufType {
        self.ty
    }

    /// `gguf_get_kv_type`: `ARRAY` for arrays, else the value's type.
    pub fn kv_type(&self) -> GgufType {
        if self.is_array { GgufType::ARRAY } else { self.ty }
    }

    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// Number of elements (1 for a single value).
    pub fn len(&self) -> usize {
        match &self.payload {
            Payload::Plain(b) => b.len() / self.ty.size(),
            Payload::Strings(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The single value of type `T`; aborts on a type mismatch or an element count other
    /// than one.
    pub fn get<T: Scalar>(&self) -> T {
        self.check_single();
        crate::ggml_assert!(
            self.ty == T::TYPE,
            "key '{}' holds {}, not {}",
            String::from_utf8_lossy(self.key.c_view()),
            self.ty.describe(),
            T::TYPE.describe()
        );
        T::decode(&self.raw()[..T::TYPE.size()])
    }

    /// Element `i` of a fixed-size array as `T` (used to copy values between contexts).
    pub fn element<T: Scalar>(&self, i: usize) -> T {
        crate::ggml_assert!(self.ty == T::TYPE, "element type mismatch");
        let size = T::TYPE.size();
        T::decode(&self.raw()[i * size..(i + 1) * size])
    }

    /// The single string; aborts if this is not exactly one string.
    pub fn get_str(&self) -> &CBytes {
        self.check_single();
        self.str_at(0)
    }

    /// Raw bytes of a fixed-size value or array; aborts for strings.
    pub fn raw(&self) -> &[u8] {
        match &self.payload {
            Payload::Plain(b) => b.as_slice(),
            Payload::Strings(_) => {
                crate::ggml_abort!("key '{}' holds strings, not raw data", String::from_utf8_lossy(self.key.c_view()))
            }
        }
    }

    /// String `i` of a string value or array; aborts for other types or `i` out of range.
    pub fn str_at(&self, i: usize) -> &CBytes {
        match &self.payload {
            Payload::Strings(s) => {
                crate::ggml_assert!(i < s.len(), "string index {} out of range (array has {})", i, s.len());
                &s[i]
            }
            Payload::Plain(_) => crate::ggml_abort!(
                "key '{}' holds {}, not strings",
                String::from_utf8_lossy(self.key.c_view()),
                self.ty.describe()
            ),
        }
    }

    /// Aborts unless the key holds exactly one element.
    pub fn check_single(&self) {
        let n = self.len();
        crate::ggml_assert!(
            n == 1,
            "key '{}' holds {} elements, not a single value",
            String::from_utf8_lossy(self.key.c_view()),
            n
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_sizes_and_names() {
        assert_eq!(GgufType::UINT8.size(), 1);
        assert_eq!(GgufType::BOOL.size(), 1);
        assert_eq!(GgufType::FLOAT64.size(), 8);
        assert_eq!(GgufType::STRING.size(), 0);
        assert_eq!(GgufType::ARRAY.size(), 0);
        assert_eq!(GgufType(13).size(), 0);
        assert_eq!(GgufType::ARRAY.name(), Some("arr"));
        assert_eq!(GgufType(-1).name(), None);
        assert_eq!(GgufType(13).name(), None);
    }

    #[test]
    fn scalars_round_trip() {
        let kv = Kv::scalar(b"k", -3.5f64);
        assert_eq!(kv.get::<f64>(), -3.5);
        assert_eq!(kv.kv_type(), GgufType::FLOAT64);
        let kv = Kv::scalar(b"b", true);
        assert!(kv.get::<bool>());
        assert_eq!(kv.raw(), &[1]);
    }

    #[test]
    fn arrays_are_aligned_and_counted() {
        let data: Vec<u8> = (0..24u8).collect();
        let kv = Kv::plain_array(b"a", GgufType::UINT64, &data);
        assert_eq!(kv.len(), 3);
        assert_eq!(kv.raw().as_ptr() as usize % 8, 0);
        assert_eq!(kv.raw(), &data[..]);
        assert_eq!(kv.kv_type(), GgufType::ARRAY);
    }

    #[test]
    fn strings_keep_interior_nuls() {
        let s = CBytes::new(b"ab\0cd");
        assert_eq!(s.bytes(), b"ab\0cd");
        assert_eq!(s.c_view(), b"ab");
    }
}
