//! One client connection: HELLO first, then requests until the client leaves or sends one
//! the server refuses. A refusal is logged and ends the connection (the protocol has no error
//! replies); everything the client allocated is freed when it ends, however it ends.
//!
//! The session reads its requests from any byte stream, so tests and fuzzers can drive it in
//! process.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::cache::Cache;
use super::graph::{self, StoredGraph};
use super::tensor::{self, Buffers};
use crate::backend::backend::BackendPtr;
use crate::backend::buffer::{self, BufferPtr};
use crate::core::context::{Context, InitParams, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::tensor::{MAX_SRC, TensorPtr};
use crate::rpc::transport::Stream;
use crate::rpc::wire::{CAPS_SIZE, Command, HELLO_REPLY_SIZE, Reader, VERSION, WireTensor, Writer};

/// Tensor data moves through the server in pieces of this size: an upload of any declared
/// length needs no more memory than this.
const PIECE: usize = 1 << 20;
/// SET_TENSOR: the tensor, the cache flag and the offset, before the bytes.
const SET_TENSOR_HEADER: usize = WireTensor::SIZE + 1 + 8;

/// Why a connection ended early.
enum End {
    /// The peer left or the stream broke, possibly in the middle of a message.
    Lost,
    /// The request was refused, for the reason given.
    Refused(String),
}

impl From<io::Error> for End {
    fn from(_: io::Error) -> End {
        End::Lost
    }
}

impl From<String> for End {
    fn from(reason: String) -> End {
        End::Refused(reason)
    }
}

impl From<&str> for End {
    fn from(reason: &str) -> End {
        End::Refused(reason.to_owned())
    }
}

type Step = Result<(), End>;

/// The state of one connection.
pub(super) struct Session<'a> {
    backends: &'a [BackendPtr],
    cache: Option<Cache<'a>>,
    /// Buffers held by clients, across the server (for monitoring and tests).
    live: &'a AtomicUsize,
    buffers: Buffers,
    /// The last graph computed on each device, for GRAPH_RECOMPUTE.
    graphs: Vec<Option<StoredGraph>>,
    /// Room for the tensors of one request (at most a tensor and its sources).
    scratch: Box<Context>,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.graphs.clear();
        for b in self.buffers.take_all() {
            b.free();
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The message of a fixed-size request, which must be exactly `size` bytes.
fn fixed<S: Read + Write>(s: &mut Stream<S>, cmd: Command, len: u64, size: usize) -> Result<Vec<u8>, End> {
    if len != size as u64 {
        return Err(End::Refused(format!("{cmd:?}: a message of {len} bytes, not {size}")));
    }
    let mut payload = vec![0u8; size];
    s.recv_exact(&mut payload)?;
    Ok(payload)
}

/// A tensor of a data request, made and placed.
struct Placed {
    tensor: TensorPtr,
    buffer: BufferPtr,
    nbytes: u64,
}

impl Placed {
    /// `size` bytes from `offset` lie inside the tensor.
    fn holds(&self, offset: u64, size: u64) -> Step {
        if offset.checked_add(size).is_none_or(|end| end > self.nbytes) {
            return Err(format!("bytes [{offset}, +{size}) outside a tensor of {}", self.nbytes).into());
        }
        Ok(())
    }
}

/// Reads from a payload known to hold what is read (its length was checked).
fn field<T>(value: Option<T>) -> Result<T, End> {
    value.ok_or(End::Refused("a message shorter than its fields".into()))
}

impl<'a> Session<'a> {
    pub fn new(backends: &'a [BackendPtr], cache_dir: Option<&'a Path>, live: &'a AtomicUsize) -> Session<'a> {
        let scratch = Context::new(InitParams {
            mem_size: (OBJECT_SIZE + TENSOR_SIZE) * (1 + MAX_SRC),
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        });
        Session {
            backends,
            cache: cache_dir.map(Cache),
            live,
            buffers: Buffers::default(),
            graphs: backends.iter().map(|_| None).collect(),
            scratch,
        }
    }

    /// Serves the client until it leaves or is refused.
    pub fn serve<S: Read + Write>(mut self, mut stream: Stream<S>) {
        if let Err(End::Refused(reason)) = self.run(&mut stream) {
            crate::log_error!("rpc server: {reason}; closing the connection\n");
        }
    }

    fn run<S: Read + Write>(&mut self, s: &mut Stream<S>) -> Step {
        match s.recv_command()? {
            None => return Ok(()),
            Some(b) if b == Command::Hello as u8 => {}
            Some(b) => return Err(format!("command {b} before HELLO").into()),
        }
        let len = s.recv_u64()?;
        fixed(s, Command::Hello, len, CAPS_SIZE)?;
        let mut reply = [0u8; HELLO_REPLY_SIZE];
        (reply[0], reply[1], reply[2]) = VERSION;
        s.send_reply(&reply)?;
        while let Some(byte) = s.recv_command()? {
            let cmd = Command::from_byte(byte).ok_or_else(|| format!("unknown command {byte}"))?;
            let len = s.recv_u64()?;
            self.dispatch(s, cmd, len)?;
        }
        Ok(())
    }

    fn dispatch<S: Read + Write>(&mut self, s: &mut Stream<S>, cmd: Command, len: u64) -> Step {
        const T: usize = WireTensor::SIZE;
        match cmd {
            Command::Hello => Err("a second HELLO".into()),
            Command::DeviceCount => {
                fixed(s, cmd, len, 0)?;
                Ok(s.send_reply(&(self.backends.len() as u32).to_le_bytes())?)
            }
            Command::AllocBuffer => {
                let p = fixed(s, cmd, len, 12)?;
                let mut r = Reader::new(&p);
                let reply = self.alloc_buffer(field(r.u32())?, field(r.u64())?)?;
                Ok(s.send_reply(&reply)?)
            }
            Command::GetAlignment | Command::GetMaxSize | Command::GetDeviceMemory => {
                let p = fixed(s, cmd, len, 4)?;
                let backend = self.backend(field(Reader::new(&p).u32())?)?;
                let mut w = Writer::default();
                match cmd {
                    Command::GetAlignment => w.u64(backend.alignment() as u64),
                    Command::GetMaxSize => w.u64(backend.max_size() as u64),
                    _ => {
                        let (free, total) = backend.device().memory();
                        w.u64(free as u64).u64(total as u64)
                    }
                };
                Ok(s.send_reply(&w.into_bytes())?)
            }
            Command::BufferGetBase => {
                let p = fixed(s, cmd, len, 8)?;
                let buffer = self.buffer(field(Reader::new(&p).u64())?)?;
                Ok(s.send_reply(&(buffer.base() as u64).to_le_bytes())?)
            }
            Command::FreeBuffer => {
                let p = fixed(s, cmd, len, 8)?;
                self.free_buffer(field(Reader::new(&p).u64())?)
            }
            Command::BufferClear => {
                let p = fixed(s, cmd, len, 9)?;
                let mut r = Reader::new(&p);
                let buffer = self.buffer(field(r.u64())?)?;
                if buffer.iface.clear.is_none() && buffer.size() > 0 {
                    return Err("the buffer cannot be cleared".into());
                }
                buffer.clear(field(r.u8())?);
                Ok(())
            }
            Command::SetTensor => self.set_tensor(s, len),
            Command::SetTensorHash => {
                let p = fixed(s, cmd, len, T + 16)?;
                let mut r = Reader::new(&p);
                let found = self.set_tensor_hash(&field(r.tensor())?, field(r.u64())?, field(r.u64())?)?;
                Ok(s.send_reply(&[u8::from(found)])?)
            }
            Command::GetTensor => {
                let p = fixed(s, cmd, len, T + 16)?;
                let mut r = Reader::new(&p);
                let bytes = self.get_tensor(&field(r.tensor())?, field(r.u64())?, field(r.u64())?)?;
                Ok(s.send_reply(&bytes)?)
            }
            Command::CopyTensor => {
                let p = fixed(s, cmd, len, 2 * T)?;
                let mut r = Reader::new(&p);
                let copied = self.copy_tensor(&field(r.tensor())?, &field(r.tensor())?)?;
                Ok(s.send_reply(&[u8::from(copied)])?)
            }
            Command::MemsetTensor => {
                let p = fixed(s, cmd, len, T + 17)?;
                let mut r = Reader::new(&p);
                let (t, offset, size, value) = (field(r.tensor())?, field(r.u64())?, field(r.u64())?, field(r.u8())?);
                self.memset_tensor(&t, offset, size, value)
            }
            Command::InitTensor => {
                let p = fixed(s, cmd, len, T)?;
                self.init_tensor(&field(Reader::new(&p).tensor())?)
            }
            Command::GetAllocSize => {
                let p = fixed(s, cmd, len, 4 + (1 + MAX_SRC) * T)?;
                let size = self.get_alloc_size(&p)?;
                Ok(s.send_reply(&size.to_le_bytes())?)
            }
            Command::GraphCompute => {
                if len > graph::MAX_MESSAGE {
                    return Err(format!("a graph of {len} bytes").into());
                }
                let mut payload = Vec::new();
                payload.try_reserve_exact(len as usize).map_err(|_| format!("cannot hold a graph of {len} bytes"))?;
                payload.resize(len as usize, 0);
                s.recv_exact(&mut payload)?;
                let (device, graph) = StoredGraph::build(&payload, self.backends, &self.buffers)?;
                graph.compute(self.backends[device])?;
                self.graphs[device] = Some(graph);
                Ok(())
            }
            Command::GraphRecompute => {
                let p = fixed(s, cmd, len, 4)?;
                let device = field(Reader::new(&p).u32())?;
                self.backend(device)?;
                let graph = self.graphs[device as usize].as_ref().ok_or("GRAPH_RECOMPUTE without a stored graph")?;
                Ok(graph.compute(self.backends[device as usize])?)
            }
        }
    }

    fn backend(&self, device: u32) -> Result<BackendPtr, End> {
        self.backends.get(device as usize).copied().ok_or_else(|| format!("no device {device}").into())
    }

    fn buffer(&self, handle: u64) -> Result<BufferPtr, End> {
        self.buffers.get(handle).ok_or_else(|| format!("unknown buffer {handle:#x}").into())
    }

    fn alloc_buffer(&mut self, device: u32, size: u64) -> Result<[u8; 16], End> {
        let backend = self.backend(device)?;
        let mut reply = [0u8; 16];
        let size = usize::try_from(size).map_err(|_| format!("a buffer of {size} bytes"))?;
        // a failed allocation is an answer, not an error: the client sees a null handle
        if let Some(buffer) = backend.default_buffer_type().alloc_buffer(size) {
            let handle = self.buffers.insert(buffer);
            self.live.fetch_add(1, Ordering::Relaxed);
            reply[..8].copy_from_slice(&handle.to_le_bytes());
            reply[8..].copy_from_slice(&(buffer.size() as u64).to_le_bytes());
        }
        Ok(reply)
    }

    fn free_buffer(&mut self, handle: u64) -> Step {
        let buffer = self.buffers.remove(handle).ok_or_else(|| format!("unknown buffer {handle:#x}"))?;
        // stored graphs may point into it
        self.graphs.iter_mut().for_each(|g| *g = None);
        buffer.free();
        self.live.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    /// A tensor of a data request: checked, placed in a buffer of this connection, and made
    /// in the scratch context (which the next request reuses).
    fn placed(&mut self, t: &WireTensor) -> Result<Placed, End> {
        let c = tensor::check(t, &self.buffers)?;
        let Some(p) = c.placement else { return Err("a tensor without a buffer".into()) };
        self.scratch.reset();
        Ok(Placed { tensor: tensor::build(&mut self.scratch, &c), buffer: p.buffer, nbytes: c.nbytes })
    }

    /// SET_TENSOR: the destination is checked from the header, then the bytes are streamed
    /// into it piece by piece (and into the cache, when the client asks and there is one).
    fn set_tensor<S: Read + Write>(&mut self, s: &mut Stream<S>, len: u64) -> Step {
        let size = len.checked_sub(SET_TENSOR_HEADER as u64).ok_or(format!("SetTensor: a message of {len} bytes"))?;
        let mut header = [0u8; SET_TENSOR_HEADER];
        s.recv_exact(&mut header)?;
        let mut r = Reader::new(&header);
        let (t, cache_flag, offset) = (field(r.tensor())?, field(r.u8())?, field(r.u64())?);
        let dst = self.placed(&t)?;
        dst.holds(offset, size)?;
        if dst.buffer.iface.set_tensor.is_none() {
            return Err("the buffer cannot be written".into());
        }
        let mut store = self.cache.filter(|_| cache_flag != 0).map(|cache| cache.store());
        let mut piece = vec![0u8; (size as usize).min(PIECE)];
        let mut done = 0u64;
        while done < size {
            let n = (size - done).min(PIECE as u64) as usize;
            s.recv_exact(&mut piece[..n])?;
            buffer::tensor_set(dst.tensor, &piece[..n], (offset + done) as usize);
            if let Some(store) = &mut store {
                store.write(&piece[..n]);
            }
            done += n as u64;
        }
        if let Some(store) = store {
            store.finish();
        }
        Ok(())
    }

    /// SET_TENSOR_HASH: loads the cached bytes of `hash`, if there are any, into the tensor.
    fn set_tensor_hash(&mut self, t: &WireTensor, offset: u64, hash: u64) -> Result<bool, End> {
        let dst = self.placed(t)?;
        let Some(cache) = self.cache else { return Ok(false) };
        let (mut file, size) = match cache.open(hash) {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(false),
            Err(e) => return Err(format!("cannot read the cache: {e}").into()),
        };
        dst.holds(offset, size)?;
        if dst.buffer.iface.set_tensor.is_none() {
            return Err("the buffer cannot be written".into());
        }
        copy_file(&mut file, size, dst.tensor, offset).map_err(|e| format!("cannot read the cache: {e}"))?;
        Ok(true)
    }

    fn get_tensor(&mut self, t: &WireTensor, offset: u64, size: u64) -> Result<Vec<u8>, End> {
        let src = self.placed(t)?;
        src.holds(offset, size)?;
        if src.buffer.iface.get_tensor.is_none() {
            return Err("the buffer cannot be read".into());
        }
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(size as usize).map_err(|_| format!("cannot hold {size} bytes"))?;
        bytes.resize(size as usize, 0);
        buffer::tensor_get(src.tensor, &mut bytes, offset as usize);
        Ok(bytes)
    }

    /// COPY_TENSOR: `src`'s bytes into `dst`'s place, which must have room for them and not
    /// overlap them; the reply says whether the destination's buffer could do the copy.
    fn copy_tensor(&mut self, src: &WireTensor, dst: &WireTensor) -> Result<bool, End> {
        let s = tensor::check(src, &self.buffers)?;
        let d = tensor::check(dst, &self.buffers)?;
        let (Some(sp), Some(dp)) = (s.placement, d.placement) else {
            return Err("a copy between tensors without buffers".into());
        };
        let (_, dst_end) = tensor::bounds(dp.buffer).ok_or("a buffer past the end of the address space")?;
        if dp.start.checked_add(s.nbytes).is_none_or(|end| end > dst_end) {
            return Err(format!("a copy of {} bytes to {:#x} leaves the destination buffer", s.nbytes, dp.start).into());
        }
        if sp.start < dp.start + s.nbytes && dp.start < sp.start + s.nbytes {
            return Err("a copy between overlapping tensors".into());
        }
        self.scratch.reset();
        let (from, to) = (tensor::build(&mut self.scratch, &s), tensor::build(&mut self.scratch, &d));
        Ok(buffer::buffer_copy_tensor(from, to))
    }

    fn memset_tensor(&mut self, t: &WireTensor, offset: u64, size: u64, value: u8) -> Step {
        let dst = self.placed(t)?;
        dst.holds(offset, size)?;
        if dst.buffer.iface.memset_tensor.is_none() {
            return Err("the buffer cannot be set".into());
        }
        buffer::tensor_memset(dst.tensor, value, offset as usize, size as usize);
        Ok(())
    }

    /// INIT_TENSOR: lets the buffer set up a tensor placed in it. As in the reference, a
    /// tensor without a buffer is only logged, and a backend that hangs state on the tensor
    /// (`extra`, which the wire cannot carry) ends the connection.
    fn init_tensor(&mut self, t: &WireTensor) -> Step {
        let c = tensor::check(t, &self.buffers)?;
        let Some(p) = c.placement else {
            crate::log_error!("rpc server: INIT_TENSOR of a tensor without a buffer\n");
            return Ok(());
        };
        self.scratch.reset();
        let tensor = tensor::build(&mut self.scratch, &c);
        // the status is not part of the protocol: the reference ignores it too
        let _ = p.buffer.init_tensor(tensor);
        if !tensor.extra.is_null() {
            return Err("the backend keeps per-tensor state, which RPC cannot carry".into());
        }
        Ok(())
    }

    /// GET_ALLOC_SIZE: what the tensor's buffer type (its buffer's, or the device's default)
    /// needs for it, its sources attached as the buffer type may look at them.
    fn get_alloc_size(&mut self, payload: &[u8]) -> Result<u64, End> {
        let mut r = Reader::new(payload);
        let backend = self.backend(field(r.u32())?)?;
        let main = tensor::check(&field(r.tensor())?, &self.buffers)?;
        let mut srcs = Vec::with_capacity(MAX_SRC);
        for _ in 0..MAX_SRC {
            let w = field(r.tensor())?;
            srcs.push(if w.id == 0 { None } else { Some(tensor::check(&w, &self.buffers)?) });
        }
        self.scratch.reset();
        let tensor = tensor::build(&mut self.scratch, &main);
        for (slot, src) in srcs.iter().enumerate() {
            if let Some(src) = src {
                tensor.get_mut().src[slot] = tensor::build(&mut self.scratch, src).as_ptr();
            }
        }
        let buft = main.placement.map_or_else(|| backend.default_buffer_type(), |p| p.buffer.buft());
        Ok(buft.alloc_size(tensor) as u64)
    }
}

/// Streams `size` bytes of `file` into `tensor` from `offset`.
fn copy_file(file: &mut File, size: u64, tensor: TensorPtr, offset: u64) -> io::Result<()> {
    let mut piece = vec![0u8; (size as usize).min(PIECE)];
    let mut done = 0u64;
    while done < size {
        let n = (size - done).min(PIECE as u64) as usize;
        file.read_exact(&mut piece[..n])?;
        buffer::tensor_set(tensor, &piece[..n], (offset + done) as usize);
        done += n as u64;
    }
    Ok(())
}
