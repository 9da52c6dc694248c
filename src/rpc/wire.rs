//! The RPC protocol's bytes (ggml 0.25.1, protocol 7.0.0): command numbers, the 296-byte
//! tensor description, and a reader and a writer for the little-endian fields of every
//! message. Both ends build and parse messages only through this file, so a field is laid out
//! in one place.
//!
//! A request is `command u8 | length u64 | payload`; a reply, for the commands that have one,
//! is `length u64 | payload`. There are no error replies: a server that refuses a request
//! closes the connection.

use crate::core::tensor::{MAX_DIMS, MAX_NAME, MAX_OP_PARAMS, MAX_SRC, Tensor};

/// `RPC_PROTO_*_VERSION` of `ggml-rpc.h`.
pub const VERSION: (u8, u8, u8) = (7, 0, 0);

/// The connection capabilities a HELLO carries (all zero: plain TCP).
pub const CAPS_SIZE: usize = 24;
/// A HELLO reply: major, minor, patch, one byte of padding, then the capabilities.
pub const HELLO_REPLY_SIZE: usize = 4 + CAPS_SIZE;

/// `enum rpc_cmd`; the numbers are the protocol's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Command {
    AllocBuffer = 0,
    GetAlignment = 1,
    GetMaxSize = 2,
    BufferGetBase = 3,
    FreeBuffer = 4,
    BufferClear = 5,
    SetTensor = 6,
    SetTensorHash = 7,
    GetTensor = 8,
    CopyTensor = 9,
    GraphCompute = 10,
    GetDeviceMemory = 11,
    InitTensor = 12,
    GetAllocSize = 13,
    Hello = 14,
    DeviceCount = 15,
    GraphRecompute = 16,
    MemsetTensor = 17,
}

impl Command {
    const ALL: [Command; 18] = [
        Command::AllocBuffer,
        Command::GetAlignment,
        Command::GetMaxSize,
        Command::BufferGetBase,
        Command::FreeBuffer,
        Command::BufferClear,
        Command::SetTensor,
        Command::SetTensorHash,
        Command::GetTensor,
        Command::CopyTensor,
        Command::GraphCompute,
        Command::GetDeviceMemory,
        Command::InitTensor,
        Command::GetAllocSize,
        Command::Hello,
        Command::DeviceCount,
        Command::GraphRecompute,
        Command::MemsetTensor,
    ];

    /// The command a request byte names; `None` for 18 (`RPC_CMD_NONE`, the client's internal
    /// marker) and above.
    pub fn from_byte(byte: u8) -> Option<Command> {
        Command::ALL.get(usize::from(byte)).copied()
    }
}

/// Weights larger than this are offered by hash first (`RPC_CMD_SET_TENSOR_HASH`), so that a
/// server with a file cache can skip the upload.
pub const HASH_THRESHOLD: usize = 10 * 1024 * 1024;

/// FNV-1a, 64 bits: the hash of the protocol's file cache.
pub fn fnv1a(data: &[u8]) -> u64 {
    fnv1a_from(0xcbf2_9ce4_8422_2325, data)
}

/// FNV-1a continued from `hash`.
pub fn fnv1a_from(mut hash: u64, data: &[u8]) -> u64 {
    for &byte in data {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `struct rpc_tensor`: a tensor as it crosses the wire (packed, 296 bytes). `id` is the
/// client's address of the tensor and links sources; `buffer` and `data` are the server's
/// handle and address, or 0 for a tensor that lives elsewhere.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WireTensor {
    pub id: u64,
    pub type_: u32,
    pub buffer: u64,
    pub ne: [u32; MAX_DIMS],
    pub nb: [u32; MAX_DIMS],
    pub op: u32,
    pub op_params: [i32; MAX_OP_PARAMS / 4],
    pub flags: i32,
    pub src: [u64; MAX_SRC],
    pub view_src: u64,
    pub view_offs: u64,
    pub data: u64,
    pub name: [u8; MAX_NAME],
    pub use_count: i32,
}

impl WireTensor {
    /// Its size on the wire.
    pub const SIZE: usize = 296;

    /// The all-zero description that stands for "no tensor".
    pub const NONE: WireTensor = WireTensor {
        id: 0,
        type_: 0,
        buffer: 0,
        ne: [0; MAX_DIMS],
        nb: [0; MAX_DIMS],
        op: 0,
        op_params: [0; MAX_OP_PARAMS / 4],
        flags: 0,
        src: [0; MAX_SRC],
        view_src: 0,
        view_offs: 0,
        data: 0,
        name: [0; MAX_NAME],
        use_count: 0,
    };

    /// Describes `tensor`; `placement` is its server buffer handle and data address, when it
    /// lives on the server the description goes to. Shapes and strides travel as 32 bits, as
    /// the protocol has them.
    pub fn describe(tensor: &Tensor, placement: Option<(u64, u64)>) -> WireTensor {
        let (buffer, data) = placement.unwrap_or((0, 0));
        let mut name = [0u8; MAX_NAME];
        let own = tensor.name_bytes();
        let n = own.len().min(MAX_NAME - 1);
        name[..n].copy_from_slice(&own[..n]);
        WireTensor {
            id: address(tensor),
            type_: tensor.type_.0 as u32,
            buffer,
            ne: tensor.ne.map(|n| n as u32),
            nb: tensor.nb.map(|n| n as u32),
            op: tensor.op.0 as u32,
            op_params: tensor.op_params,
            flags: tensor.flags,
            src: tensor.src.map(|s| s as u64),
            view_src: tensor.view_src as u64,
            view_offs: tensor.view_offs as u64,
            data,
            name,
            use_count: 0,
        }
    }

    pub fn write(&self, w: &mut Writer) {
        w.u64(self.id).u32(self.type_).u64(self.buffer);
        self.ne.iter().for_each(|&n| _ = w.u32(n));
        self.nb.iter().for_each(|&n| _ = w.u32(n));
        w.u32(self.op);
        self.op_params.iter().for_each(|&p| _ = w.i32(p));
        w.i32(self.flags);
        self.src.iter().for_each(|&s| _ = w.u64(s));
        w.u64(self.view_src).u64(self.view_offs).u64(self.data).bytes(&self.name).i32(self.use_count);
    }

    pub fn read(r: &mut Reader) -> Option<WireTensor> {
        let mut t = WireTensor::NONE;
        t.id = r.u64()?;
        t.type_ = r.u32()?;
        t.buffer = r.u64()?;
        for n in &mut t.ne {
            *n = r.u32()?;
        }
        for n in &mut t.nb {
            *n = r.u32()?;
        }
        t.op = r.u32()?;
        for p in &mut t.op_params {
            *p = r.i32()?;
        }
        t.flags = r.i32()?;
        for s in &mut t.src {
            *s = r.u64()?;
        }
        t.view_src = r.u64()?;
        t.view_offs = r.u64()?;
        t.data = r.u64()?;
        t.name.copy_from_slice(r.bytes(MAX_NAME)?);
        t.use_count = r.i32()?;
        Some(t)
    }
}

/// A tensor's identity on the wire: its address in the client.
pub fn address(tensor: &Tensor) -> u64 {
    std::ptr::from_ref(tensor) as u64
}

/// Builds a message payload.
#[derive(Default)]
pub struct Writer(Vec<u8>);

impl Writer {
    pub fn with_capacity(n: usize) -> Writer {
        Writer(Vec::with_capacity(n))
    }

    pub fn u8(&mut self, v: u8) -> &mut Writer {
        self.0.push(v);
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Writer {
        self.bytes(&v.to_le_bytes())
    }

    pub fn i32(&mut self, v: i32) -> &mut Writer {
        self.bytes(&v.to_le_bytes())
    }

    pub fn u64(&mut self, v: u64) -> &mut Writer {
        self.bytes(&v.to_le_bytes())
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Writer {
        self.0.extend_from_slice(b);
        self
    }

    pub fn tensor(&mut self, t: &WireTensor) -> &mut Writer {
        t.write(self);
        self
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// Reads a message payload front to back; every read is checked against what is left.
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader(bytes)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N).and_then(|b| b.try_into().ok())
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub fn i32(&mut self) -> Option<i32> {
        self.array().map(i32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    pub fn tensor(&mut self) -> Option<WireTensor> {
        WireTensor::read(self)
    }

    /// What is left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Splits `host:port` at the first `:`, as the reference does.
pub fn parse_endpoint(endpoint: &str) -> Option<(&str, u16)> {
    let (host, port) = endpoint.split_once(':')?;
    Some((host, port.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_is_296_bytes_with_the_reference_offsets() {
        let mut t = WireTensor::NONE;
        t.id = 0x0101_0101_0101_0101;
        t.type_ = 0x0202_0202;
        t.buffer = 0x0303_0303_0303_0303;
        t.ne = [0x04040404; 4];
        t.nb = [0x05050505; 4];
        t.op = 0x06060606;
        t.op_params = [0x07070707; 16];
        t.flags = 0x08080808;
        t.src = [0x0909_0909_0909_0909; 10];
        t.view_src = 0x0a0a_0a0a_0a0a_0a0a;
        t.view_offs = 0x0b0b_0b0b_0b0b_0b0b;
        t.data = 0x0c0c_0c0c_0c0c_0c0c;
        t.name = [0x0d; 64];
        t.use_count = 0x0e0e0e0e;
        let mut w = Writer::default();
        w.tensor(&t);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len(), WireTensor::SIZE);
        // the field offsets of the packed `rpc_tensor` (RPC-NOTES.md): each field's first byte
        for (offset, fill) in [
            (0, 1),
            (8, 2),
            (12, 3),
            (20, 4),
            (36, 5),
            (52, 6),
            (56, 7),
            (120, 8),
            (124, 9),
            (204, 10),
            (212, 11),
            (220, 12),
            (228, 13),
            (292, 14),
        ] {
            assert_eq!(bytes[offset], fill, "field at offset {offset}");
        }
        assert_eq!(WireTensor::read(&mut Reader::new(&bytes)), Some(t));
        assert_eq!(WireTensor::read(&mut Reader::new(&bytes[..295])), None);
    }

    #[test]
    fn command_numbers_are_the_protocols() {
        assert_eq!(Command::Hello as u8, 14);
        assert_eq!(Command::MemsetTensor as u8, 17);
        for b in 0..18u8 {
            assert_eq!(Command::from_byte(b).map(|c| c as u8), Some(b));
        }
        assert_eq!(Command::from_byte(18), None);
        assert_eq!(Command::from_byte(255), None);
    }

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn endpoints_split_at_the_first_colon() {
        assert_eq!(parse_endpoint("127.0.0.1:50052"), Some(("127.0.0.1", 50052)));
        assert_eq!(parse_endpoint("localhost"), None);
        assert_eq!(parse_endpoint("h:99999"), None);
        assert_eq!(parse_endpoint("h:x"), None);
    }

    #[test]
    fn reads_stop_at_the_end() {
        let mut r = Reader::new(&[1, 0, 0, 0, 2]);
        assert_eq!(r.u32(), Some(1));
        assert_eq!(r.u32(), None);
        assert_eq!(r.u8(), Some(2));
        assert!(r.is_empty());
    }
}
