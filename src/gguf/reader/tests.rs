//! Parser tests: every malformed-file class of ggml's test-gguf, built byte by byte, plus
//! round trips, truncations and random corruption (which must never crash).

use super::*;
use crate::gguf::source::SliceSource;
use crate::gguf::writer;

/// Builds GGUF bytes piece by piece.
#[derive(Default, Clone)]
struct Bytes(Vec<u8>);

impl Bytes {
    fn header(version: u32, n_tensors: i64, n_kv: i64) -> Bytes {
        let mut b = Bytes(b"GGUF".to_vec());
        b.u32(version).i64(n_tensors).i64(n_kv);
        b
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn i64(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn raw(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
    fn str(&mut self, s: &[u8]) -> &mut Self {
        self.u64(s.len() as u64).raw(s)
    }
    /// A `u32` key-value pair.
    fn kv_u32(&mut self, key: &[u8], v: u32) -> &mut Self {
        self.str(key).i32(GgufType::UINT32.0).u32(v)
    }
    /// A tensor info.
    fn tensor(&mut self, name: &[u8], ne: &[i64], ty: Type, offset: u64) -> &mut Self {
        self.str(name).u32(ne.len() as u32);
        ne.iter().for_each(|&n| {
            self.i64(n);
        });
        self.i32(ty.0).u64(offset)
    }
    fn pad(&mut self, align: usize) -> &mut Self {
        self.0.resize(self.0.len().next_multiple_of(align), 0);
        self
    }
    fn fill(&mut self, n: usize) -> &mut Self {
        let start = self.0.len();
        self.0.extend((0..n).map(|i| ((start + i) % 251) as u8));
        self
    }
}

fn parse(bytes: &[u8], tensors: Option<bool>) -> Result<Loaded, LoadError> {
    let mut r = Reader::new(SliceSource(bytes), usize::MAX, 0, bytes.len() as u64);
    load(&mut r, tensors)
}

fn rejected(bytes: &Bytes) -> bool {
    parse(&bytes.0, None).is_err()
}

#[test]
fn header_cases() {
    assert!(parse(&Bytes::header(3, 0, 0).0, None).is_ok());
    assert!(parse(&Bytes::header(2, 0, 0).0, None).is_ok());
    let mut bad_magic = Bytes::header(3, 0, 0);
    bad_magic.0[..4].copy_from_slice(b"FUGG");
    assert!(rejected(&bad_magic));
    for version in [0, 1, 4, 3 << 16, 0x0300_0000] {
        assert!(rejected(&Bytes::header(version, 0, 0)), "version {version}");
    }
    assert!(rejected(&Bytes::header(3, -1, 0)));
    assert!(rejected(&Bytes::header(3, 0, -1)));
    assert!(rejected(&Bytes::header(3, i64::MAX, 0)));
    // counts that fit the limits but not the file
    assert!(rejected(&Bytes::header(3, 1 << 40, 0)));
    assert!(rejected(&Bytes::header(3, 0, 1 << 40)));
    // truncated header
    let h = Bytes::header(3, 0, 0);
    for n in 0..h.0.len() {
        assert!(parse(&h.0[..n], None).is_err(), "prefix {n}");
    }
}

#[test]
fn empty_header_has_defaults() {
    let l = parse(&Bytes::header(3, 0, 0).0, Some(false)).ok().unwrap();
    assert_eq!(l.gguf.version(), 3);
    assert_eq!(l.gguf.alignment(), 32);
    assert_eq!(l.gguf.data_offset(), 24);
    let ggml = l.ggml.unwrap();
    let names: Vec<_> = ggml.tensors().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["GGUF tensor data binary blob"]);
}

#[test]
fn kv_cases() {
    // key size larger than anything
    let mut b = Bytes::header(3, 0, 1);
    b.u64(u64::MAX).raw(b"k").i32(0).raw(&[1]);
    assert!(rejected(&b));
    // key size larger than the file
    let mut b = Bytes::header(3, 0, 1);
    b.u64(100).raw(b"k").i32(0).raw(&[1]);
    assert!(rejected(&b));
    // empty key
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"").i32(0).raw(&[1]);
    assert!(rejected(&b));
    // invalid value types, single and as array elements (nested arrays included)
    for ty in [13, -1, 1000] {
        let mut b = Bytes::header(3, 0, 1);
        b.str(b"k").i32(ty).raw(&[0; 8]);
        assert!(rejected(&b), "type {ty}");
    }
    for ty in [9, 13, -1] {
        let mut b = Bytes::header(3, 0, 1);
        b.str(b"k").i32(9).i32(ty).u64(0);
        assert!(rejected(&b), "array type {ty}");
    }
    // duplicate keys
    let mut b = Bytes::header(3, 0, 2);
    b.kv_u32(b"k", 1).kv_u32(b"k", 2);
    assert!(rejected(&b));
    // arrays that cannot fit
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"k").i32(9).i32(GgufType::UINT64.0).u64(1 << 31);
    assert!(rejected(&b));
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"k").i32(9).i32(GgufType::UINT64.0).u64(3).u64(1).u64(2);
    assert!(rejected(&b));
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"k").i32(9).i32(GgufType::STRING.0).u64(1 << 29);
    assert!(rejected(&b));
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"k").i32(9).i32(GgufType::STRING.0).u64(2).str(b"a").u64(u64::MAX);
    assert!(rejected(&b));
    // string value longer than the file
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"k").i32(GgufType::STRING.0).u64(10).raw(b"abc");
    assert!(rejected(&b));
    // more pairs announced than present
    let mut b = Bytes::header(3, 0, 2);
    b.kv_u32(b"k", 1);
    assert!(rejected(&b));
}

#[test]
fn alignment_cases() {
    for bad in [0u32, 13, 48, u32::MAX] {
        let mut b = Bytes::header(3, 0, 1);
        b.kv_u32(b"general.alignment", bad);
        assert!(rejected(&b), "alignment {bad}");
    }
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"general.alignment").i32(GgufType::INT32.0).i32(64);
    assert!(rejected(&b));
    let mut b = Bytes::header(3, 0, 1);
    b.str(b"general.alignment").i32(9).i32(GgufType::UINT32.0).u64(1).u32(64);
    assert!(rejected(&b));
    let mut b = Bytes::header(3, 0, 1);
    b.kv_u32(b"general.alignment", 1);
    let l = parse(&b.0, None).ok().unwrap();
    assert_eq!(l.gguf.alignment(), 1);
}

#[test]
fn tensor_info_cases() {
    let ok = |b: &Bytes| parse(&b.0, None).is_ok();
    let one = |name: &[u8], ne: &[i64], ty: Type, offset: u64| {
        let mut b = Bytes::header(3, 1, 0);
        b.tensor(name, ne, ty, offset).pad(32);
        b
    };
    assert!(ok(&one(b"t", &[4, 2], Type::F32, 0)));
    // names of 63 bytes fit, 64 do not
    assert!(ok(&one(&[b'n'; 63], &[4], Type::F32, 0)));
    assert!(rejected(&one(&[b'n'; 64], &[4], Type::F32, 0)));
    // dimensions
    assert!(rejected(&one(b"t", &[1, 1, 1, 1, 1], Type::F32, 0)));
    assert!(rejected(&one(b"t", &[4, -1], Type::F32, 0)));
    assert!(rejected(&one(b"t", &[-1], Type::F32, 0)));
    assert!(ok(&one(b"t", &[4, 0], Type::F32, 0)));
    let big = 4 * i32::MAX as i64;
    assert!(rejected(&one(b"t", &[big, big], Type::F32, 0)));
    assert!(rejected(&one(b"t", &[i64::MAX, 2], Type::I8, 0)));
    assert!(rejected(&one(b"t", &[1 << 21, 1 << 21, 1 << 21], Type::F32, 0)));
    // empty, but with strides beyond usize
    assert!(rejected(&one(b"t", &[1 << 40, 1 << 40, 0], Type::F32, 0)));
    assert!(ok(&one(b"t", &[1 << 40, 0, 1 << 40], Type::F32, 0)));
    for no_alloc in [false, true] {
        let l = parse(&one(b"t", &[1 << 40, 0, 1 << 40], Type::F32, 0).0, Some(no_alloc)).ok().unwrap();
        assert_eq!(l.gguf.tensor(0).nbytes(), 0);
        assert_eq!(l.ggml.unwrap().get_tensor(b"t").unwrap().ne, [1 << 40, 0, 1 << 40, 1]);
    }
    // byte size beyond usize (elements fit in i64)
    assert!(rejected(&one(b"t", &[1 << 31, 1 << 31], Type::I64, 0)));
    // types
    for ty in [Type(Type::COUNT), Type(-1), Type(4), Type(31), Type(38)] {
        assert!(rejected(&one(b"t", &[256], ty, 0)), "type {}", ty.0);
    }
    assert!(rejected(&one(b"t", &[33], Type::Q4_0, 0)));
    assert!(ok(&one(b"t", &[64], Type::Q4_0, 0)));
    // offsets
    assert!(rejected(&one(b"t", &[4], Type::F32, u64::MAX)));
    assert!(rejected(&one(b"t", &[4], Type::F32, 32)));
    // duplicate names
    let mut b = Bytes::header(3, 2, 0);
    b.tensor(b"t", &[4], Type::F32, 0).tensor(b"t", &[4], Type::F32, 32);
    assert!(rejected(&b));
    // offsets laid out for another alignment
    let mut b = Bytes::header(3, 2, 0);
    b.tensor(b"a", &[3], Type::F32, 0).tensor(b"b", &[4], Type::F32, 12);
    assert!(rejected(&b));
    let mut b = Bytes::header(3, 2, 1);
    b.kv_u32(b"general.alignment", 1).tensor(b"a", &[3], Type::F32, 0).tensor(b"b", &[4], Type::F32, 12);
    let l = parse(&b.0, None).ok().unwrap();
    assert_eq!(l.gguf.data_offset(), b.0.len());
    assert_eq!(l.gguf.tensor(1).offset, 12);
    // more tensors announced than present
    let mut b = Bytes::header(3, 2, 0);
    b.tensor(b"a", &[4], Type::F32, 0);
    assert!(rejected(&b));
}

#[test]
fn data_cases() {
    let mut b = Bytes::header(3, 2, 0);
    b.tensor(b"a", &[3], Type::F32, 0).tensor(b"b", &[2, 2], Type::F16, 32).pad(32);
    let meta_len = b.0.len();
    b.fill(64);

    let l = parse(&b.0, Some(false)).ok().unwrap();
    assert_eq!(l.gguf.data_offset(), meta_len);
    assert_eq!(l.gguf.data_size(), 64);
    let ggml = l.ggml.unwrap();
    let tensors: Vec<_> = ggml.tensors().collect();
    assert_eq!(tensors.len(), 3);
    assert_eq!(tensors[0].name(), "GGUF tensor data binary blob");
    assert_eq!(tensors[0].ne[0], 64);
    assert_eq!(tensors[2].name(), "b");
    assert_eq!(tensors[2].ne, [2, 2, 1, 1]);
    assert_eq!(tensors[2].type_, Type::F16);
    // SAFETY: tensor b has 8 bytes of data inside the blob.
    let data_b = unsafe { std::slice::from_raw_parts(tensors[2].data.cast::<u8>(), 8) };
    assert_eq!(data_b, &b.0[meta_len + 32..meta_len + 40]);
    assert!(ggml.get_tensor(b"a").is_some());
    assert!(!ggml.no_alloc);

    let l = parse(&b.0, Some(true)).ok().unwrap();
    let ggml = l.ggml.unwrap();
    assert!(ggml.no_alloc);
    let tensors: Vec<_> = ggml.tensors().collect();
    assert_eq!(tensors.len(), 2);
    assert!(tensors.iter().all(|t| t.data.is_null()));

    // one byte short: fails when the data is loaded, and resets the context pointer
    let short = &b.0[..b.0.len() - 1];
    assert!(parse(short, Some(false)).err().unwrap().ggml_ctx_reset);
    assert!(parse(short, Some(true)).is_ok());
    assert!(parse(short, None).is_ok());
    // no data at all; the metadata is still readable
    assert!(parse(&b.0[..meta_len], None).is_ok());
    assert!(parse(&b.0[..meta_len - 1], None).is_err());
}

#[test]
fn memory_size_overflow_is_rejected() {
    let mut b = Bytes::header(3, 2, 0);
    let n = 0x7FFF_FFFF_FFFF_FFC0;
    b.tensor(b"a", &[n], Type::I8, 0).tensor(b"b", &[n], Type::I8, n as u64).pad(32).fill(32);
    assert!(parse(&b.0, None).is_ok());
    assert!(parse(&b.0, Some(true)).is_ok());
    let err = parse(&b.0, Some(false)).err().unwrap();
    assert!(err.ggml_ctx_reset);
    // data section larger than usize
    let mut b = Bytes::header(3, 3, 0);
    b.tensor(b"a", &[n], Type::I8, 0).tensor(b"b", &[n], Type::I8, n as u64).tensor(b"c", &[n], Type::I8, 2 * n as u64);
    assert!(rejected(&b));
}

#[test]
fn start_offset_aligns_relative_to_the_gguf_start() {
    let mut b = Bytes::header(3, 1, 0);
    b.tensor(b"a", &[4], Type::F32, 0).pad(32).fill(32);
    let mut file = vec![0xABu8; 7];
    file.extend_from_slice(&b.0);
    let src = SliceSource(&file);
    let mut r = Reader::new(src, 5, 7, b.0.len() as u64);
    let l = load(&mut r, Some(false)).ok().unwrap();
    assert_eq!(l.gguf.data_offset(), 7 + b.0.len() - 32);
}

/// A context with one value of every type, arrays of every type, and tensors.
fn rich_context(data: &[Vec<u8>]) -> GgufContext {
    let mut c = GgufContext::new();
    c.set(Kv::scalar(b"u8", 200u8));
    c.set(Kv::scalar(b"i8", -100i8));
    c.set(Kv::scalar(b"u16", 60000u16));
    c.set(Kv::scalar(b"i16", -30000i16));
    c.set(Kv::scalar(b"u32", 4_000_000_000u32));
    c.set(Kv::scalar(b"i32", -2_000_000_000i32));
    c.set(Kv::scalar(b"f32", 1.25f32));
    c.set(Kv::scalar(b"bool", true));
    c.set(Kv::string(b"str", b"hello world"));
    c.set(Kv::scalar(b"u64", u64::MAX - 1));
    c.set(Kv::scalar(b"i64", i64::MIN + 1));
    c.set(Kv::scalar(b"f64", -2.5f64));
    for ty in 0..GgufType::COUNT {
        let ty = GgufType(ty);
        let key = format!("arr.{}", ty.describe());
        if ty.is_plain() {
            let bytes: Vec<u8> =
                (0..5 * ty.size()).map(|i| if ty == GgufType::BOOL { (i % 2) as u8 } else { i as u8 }).collect();
            c.set(Kv::plain_array(key.as_bytes(), ty, &bytes));
        } else if ty == GgufType::STRING {
            let values = crate::gguf::context::strings([b"a".to_vec(), Vec::new(), b"ccc".to_vec()]);
            c.set(Kv::string_array(key.as_bytes(), values));
        }
    }
    c.set(Kv::plain_array(b"arr.empty", GgufType::FLOAT32, &[]));
    let shapes: [(&str, Type, [i64; 4]); 3] =
        [("weights", Type::F32, [5, 3, 1, 1]), ("quant", Type::Q8_0, [64, 2, 1, 1]), ("cube", Type::F16, [2, 3, 4, 5])];
    for ((name, ty, ne), bytes) in shapes.iter().zip(data) {
        let mut ti = TensorInfo::blank();
        ti.t.type_ = *ty;
        ti.t.ne = *ne;
        set_dense_strides(&mut ti.t);
        ti.t.set_name(name);
        assert_eq!(ti.nbytes(), bytes.len());
        ti.t.data = bytes.as_ptr().cast_mut().cast();
        c.add_tensor(&ti.t);
    }
    c
}

fn tensor_bytes() -> Vec<Vec<u8>> {
    [60usize, 2 * 2 * 34, 2 * 120].iter().map(|&n| (0..n).map(|i| (i * 7 % 256) as u8).collect()).collect()
}

#[test]
fn round_trip_is_byte_identical() {
    let data = tensor_bytes();
    let c = rich_context(&data);
    let mut file = Vec::new();
    writer::write_to(&c, &mut file, false).unwrap();
    let meta = writer::meta_bytes(&c);
    assert_eq!(&file[..meta.len()], &meta[..]);
    assert_eq!(meta.len() % 32, 0);

    let l = parse(&file, Some(false)).ok().unwrap();
    let r = &l.gguf;
    assert_eq!(r.n_kv(), c.n_kv());
    assert_eq!(r.data_offset(), meta.len());
    assert_eq!(r.kv(r.find_key(b"i16")).get::<i16>(), -30000);
    assert_eq!(r.kv(r.find_key(b"u64")).get::<u64>(), u64::MAX - 1);
    assert_eq!(r.kv(r.find_key(b"str")).get_str().bytes(), b"hello world");
    assert_eq!(r.kv(r.find_key(b"arr.str")).str_at(2).bytes(), b"ccc");
    assert_eq!(r.kv(r.find_key(b"arr.u16")).len(), 5);
    assert_eq!(r.kv(r.find_key(b"arr.empty")).len(), 0);
    for (a, b) in c.kvs().iter().zip(r.kvs()) {
        assert_eq!(a.key(), b.key());
        assert_eq!(a.kv_type(), b.kv_type());
        assert_eq!(a.len(), b.len());
    }
    assert_eq!(r.tensor(2).t.ne, [2, 3, 4, 5]);
    assert_eq!(r.tensor(1).t.type_, Type::Q8_0);

    // the tensors read back point at the same bytes; writing the parsed context again
    // gives the same file
    let ggml = l.ggml.unwrap();
    let mut again = parse(&file, None).ok().unwrap().gguf;
    for (i, t) in ggml.tensors().skip(1).enumerate() {
        // SAFETY: each tensor's data lies in the blob, nbytes long.
        let bytes = unsafe { std::slice::from_raw_parts(t.data.cast::<u8>(), t.nbytes()) };
        assert_eq!(bytes, &data[i][..]);
        again.set_tensor_data(t.name_bytes(), t.data);
    }
    let mut file2 = Vec::new();
    writer::write_to(&again, &mut file2, false).unwrap();
    assert_eq!(file, file2);

    // metadata-only files read back without a ggml context
    let mut meta_file = Vec::new();
    writer::write_to(&c, &mut meta_file, true).unwrap();
    assert_eq!(meta_file, meta);
    assert!(parse(&meta_file, None).is_ok());
    assert!(parse(&meta_file, Some(false)).is_err());
}

#[test]
fn every_truncation_fails_cleanly() {
    let data = tensor_bytes();
    let mut file = Vec::new();
    writer::write_to(&rich_context(&data), &mut file, false).unwrap();
    let meta_len = writer::meta(&rich_context(&data)).padded_len;
    for n in 0..file.len() {
        assert!(parse(&file[..n], Some(false)).is_err(), "prefix {n}");
        assert_eq!(parse(&file[..n], None).is_ok(), n >= meta_len, "prefix {n}");
    }
}

#[test]
fn random_corruption_never_crashes() {
    let data = tensor_bytes();
    let mut file = Vec::new();
    writer::write_to(&rich_context(&data), &mut file, false).unwrap();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..6000 {
        let mut f = file.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % f.len() as u64) as usize;
            let v = next();
            match v % 4 {
                0 => f[at] = v as u8,
                1 => f[at] ^= 0x80,
                2 => f[at] = 0xFF,
                _ => {
                    // an extreme 64-bit value (a count, a dimension, an offset)
                    const EXTREMES: [u64; 6] = [0, u64::MAX, i64::MAX as u64, 1 << 40, 1 << 62, 0x8000_0000];
                    let word = EXTREMES[(v >> 8) as usize % EXTREMES.len()].to_ne_bytes();
                    let end = (at + 8).min(f.len());
                    f[at..end].copy_from_slice(&word[..end - at]);
                }
            }
        }
        let mode = match next() % 3 {
            0 => None,
            1 => Some(true),
            _ => Some(false),
        };
        let _ = parse(&f, mode);
    }
}
