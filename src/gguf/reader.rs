//! Parsing a GGUF file. Nothing read from the file is trusted: every count, length, shape,
//! type and offset is checked against the bytes that remain and against overflow before it
//! is used to size anything, and a malformed file ends in a logged reason and `Err`, never
//! in a crash or an over-read.

use std::collections::HashSet;

use super::context::{GgufContext, TensorInfo, lossy, set_dense_strides};
use super::source::Source;
use super::value::{CBytes, GgufType, Kv};
use super::{KEY_GENERAL_ALIGNMENT, MAGIC, MAX_ARRAY_ELEMENTS, MAX_STRING_LENGTH, VERSION};
use crate::core::context::{Context, InitParams, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::machine::physical_memory;
use crate::core::tensor::{MAX_DIMS, MAX_NAME};
use crate::core::types::Type;

macro_rules! fail {
    ($($arg:tt)*) => {{
        crate::log_error!("gguf_init: {}\n", format!($($arg)*));
        return None;
    }};
}

/// A cursor over a [`Source`] that knows how many bytes may still be read (`remain`) and
/// refuses any read larger than that before touching the source.
pub struct Reader<S> {
    src: S,
    max_chunk: usize,
    /// Where the GGUF data starts in the source; the data section is aligned relative to it.
    start: u64,
    pos: u64,
    remain: u64,
}

impl<S: Source> Reader<S> {
    /// Reads from `start`, at most `remain` bytes in all and `max_chunk` bytes per request.
    pub fn new(src: S, max_chunk: usize, start: u64, remain: u64) -> Reader<S> {
        crate::ggml_assert!(max_chunk > 0, "max_chunk must be positive");
        Reader { src, max_chunk, start, pos: start, remain }
    }

    pub fn tell(&self) -> u64 {
        self.pos
    }

    pub fn remaining(&self) -> u64 {
        self.remain
    }

    /// Fills `out` completely, or returns false (nothing is read when `out` is larger than
    /// what remains).
    pub fn fill(&mut self, out: &mut [u8]) -> bool {
        if out.len() as u64 > self.remain {
            return false;
        }
        self.read_raw(out) == out.len()
    }

    fn read_raw(&mut self, out: &mut [u8]) -> usize {
        let mut total = 0;
        let mut at_end = false;
        while total < out.len() {
            let chunk = self.max_chunk.min(out.len() - total);
            let Some(offset) = self.pos.checked_add(total as u64) else { break };
            let n = self.src.read_at(offset, &mut out[total..total + chunk]);
            total += n;
            if n != chunk {
                at_end = true;
                break;
            }
        }
        self.pos += total as u64;
        // `out.len() <= remain` was checked by the caller and sources never return more
        // than was asked, so this cannot underflow.
        self.remain -= total as u64;
        if at_end {
            self.remain = 0;
        }
        total
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        self.fill(&mut b).then_some(b)
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.bytes().map(u32::from_ne_bytes)
    }

    pub fn i32(&mut self) -> Option<i32> {
        self.bytes().map(i32::from_ne_bytes)
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.bytes().map(u64::from_ne_bytes)
    }

    pub fn i64(&mut self) -> Option<i64> {
        self.bytes().map(i64::from_ne_bytes)
    }

    /// `n` bytes, allocated only once they are known to be there.
    pub fn vec(&mut self, n: u64) -> Option<Vec<u8>> {
        if n > self.remain {
            return None;
        }
        let mut v = vec![0u8; usize::try_from(n).ok()?];
        self.fill(&mut v).then_some(v)
    }

    /// A length-prefixed string.
    pub fn string(&mut self) -> Option<Vec<u8>> {
        let len = self.u64()?;
        if len > MAX_STRING_LENGTH {
            fail!("string length {len} exceeds maximum {MAX_STRING_LENGTH}");
        }
        if len > self.remain {
            fail!("string length {len} exceeds remaining file size {} bytes", self.remain);
        }
        self.vec(len)
    }

    /// Moves to `offset` (absolute), which must not lie past the end.
    pub fn seek(&mut self, offset: u64) -> bool {
        let end = self.pos + self.remain;
        if offset > end {
            return false;
        }
        self.pos = offset;
        self.remain = end - offset;
        true
    }
}

/// A parsed file, with the ggml context holding its tensors when one was asked for.
pub struct Loaded {
    pub gguf: GgufContext,
    pub ggml: Option<Box<Context>>,
}

/// A failed load. `ggml_ctx_reset`: the failure happened while creating the ggml context,
/// whose out-pointer the caller must then set to NULL (ggml does; earlier failures leave
/// it untouched).
#[derive(Clone, Copy, Debug)]
pub struct LoadError {
    pub ggml_ctx_reset: bool,
}

/// Parses a whole GGUF file. With `tensors = Some(no_alloc)` also creates a ggml context
/// holding one tensor per tensor info and, unless `no_alloc`, a first tensor named
/// "GGUF tensor data binary blob" holding the data section, which the others point into.
pub fn load<S: Source>(r: &mut Reader<S>, tensors: Option<bool>) -> Result<Loaded, LoadError> {
    const BAD_FILE: LoadError = LoadError { ggml_ctx_reset: false };
    let mut ctx = GgufContext::new();

    read_magic(r).ok_or(BAD_FILE)?;
    let Some((n_tensors, n_kv)) = read_header(r, &mut ctx) else {
        crate::log_error!("gguf_init: failed to read header\n");
        return Err(BAD_FILE);
    };
    if read_kv(r, &mut ctx, n_kv).is_none() {
        crate::log_error!("gguf_init: failed to read key-value pairs\n");
        return Err(BAD_FILE);
    }
    set_alignment(&mut ctx).ok_or(BAD_FILE)?;
    if read_tensor_infos(r, &mut ctx, n_tensors).is_none() {
        crate::log_error!("gguf_init: failed to read tensor info\n");
        return Err(BAD_FILE);
    }
    locate_data(r, &mut ctx).ok_or(BAD_FILE)?;

    let ggml = match tensors {
        None => None,
        Some(no_alloc) => Some(create_tensors(r, &ctx, no_alloc).ok_or(LoadError { ggml_ctx_reset: true })?),
    };
    Ok(Loaded { gguf: ctx, ggml })
}

fn read_magic<S: Source>(r: &mut Reader<S>) -> Option<()> {
    let Some(magic) = r.bytes::<4>() else { fail!("failed to read magic") };
    if &magic != MAGIC {
        let shown: String =
            magic.iter().map(|&c| if c.is_ascii_graphic() || c == b' ' { c as char } else { '?' }).collect();
        fail!("invalid magic characters: '{shown}', expected 'GGUF'");
    }
    Some(())
}

/// Reads the version and returns the number of tensors and of key-value pairs.
fn read_header<S: Source>(r: &mut Reader<S>, ctx: &mut GgufContext) -> Option<(usize, usize)> {
    let version = r.u32()?;
    if version == 0 {
        fail!("bad GGUF version: {version}");
    }
    if version & 0xFFFF == 0 {
        fail!("GGUF version {version} is extremely large; do the file's and the host's endianness differ?");
    }
    if version == 1 {
        fail!("GGUFv1 is no longer supported, please use a more up-to-date version");
    }
    if version > VERSION {
        fail!("this GGUF file is version {version} but this software only supports up to version {VERSION}");
    }
    ctx.version = version;

    let n_tensors = r.i64()?;
    let max_tensors = usize::MAX / std::mem::size_of::<TensorInfo>();
    if n_tensors < 0 || n_tensors as u64 > max_tensors as u64 {
        fail!("number of tensors is {n_tensors} but must be in [0, {max_tensors}]");
    }
    let n_kv = r.i64()?;
    let max_kv = usize::MAX / std::mem::size_of::<Kv>();
    if n_kv < 0 || n_kv as u64 > max_kv as u64 {
        fail!("number of key value pairs is {n_kv} but must be in [0, {max_kv}]");
    }
    Some((n_tensors as usize, n_kv as usize))
}

fn read_kv<S: Source>(r: &mut Reader<S>, ctx: &mut GgufContext, n_kv: usize) -> Option<()> {
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    for i in 0..n_kv {
        let key = r.string()?;
        if key.is_empty() {
            fail!("key {i} is empty");
        }
        if seen.contains(&key) {
            fail!("duplicate key '{}' (key {i})", lossy(&key));
        }

        let mut ty = GgufType(r.i32()?);
        let mut n = 1u64;
        let is_array = ty == GgufType::ARRAY;
        if is_array {
            ty = GgufType(r.i32()?);
            n = r.u64()?;
        }

        let kv = if ty.is_plain() {
            if is_array && n > MAX_ARRAY_ELEMENTS {
                fail!("array '{}' has {n} elements, more than the maximum {MAX_ARRAY_ELEMENTS}", lossy(&key));
            }
            // n <= 2^30 and size <= 8: no overflow
            let mut bytes = r.vec(n * ty.size() as u64)?;
            if ty == GgufType::BOOL {
                bytes.iter_mut().for_each(|b| *b = u8::from(*b != 0));
            }
            Kv::plain(&key, is_array, ty, &bytes)
        } else if ty == GgufType::STRING {
            if is_array && (n > MAX_ARRAY_ELEMENTS || n * 8 > r.remaining()) {
                fail!("string array '{}' of {n} elements cannot fit in the file", lossy(&key));
            }
            let mut values = Vec::with_capacity(n as usize);
            for _ in 0..n {
                values.push(CBytes::from_vec(r.string()?));
            }
            Kv::strings(&key, is_array, values)
        } else {
            fail!("key '{}' has invalid GGUF type {}", lossy(&key), ty.0);
        };
        ctx.kv.push(kv);
        seen.insert(key);
    }
    Some(())
}

fn set_alignment(ctx: &mut GgufContext) -> Option<()> {
    let id = ctx.find_key(KEY_GENERAL_ALIGNMENT.as_bytes());
    if id < 0 {
        return Some(());
    }
    let kv = ctx.kv(id);
    if kv.kv_type() != GgufType::UINT32 {
        fail!("key '{KEY_GENERAL_ALIGNMENT}' must be of type u32 but is {}", kv.kv_type().describe());
    }
    let alignment = kv.get::<u32>();
    if !alignment.is_power_of_two() {
        fail!("alignment {alignment} is not a power of 2");
    }
    ctx.alignment = alignment as usize;
    Some(())
}

fn read_tensor_infos<S: Source>(r: &mut Reader<S>, ctx: &mut GgufContext, n_tensors: usize) -> Option<()> {
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    for i in 0..n_tensors {
        let mut info = TensorInfo::blank();

        let name = r.string()?;
        if name.len() >= MAX_NAME {
            fail!("tensor {i} name is too long: {} >= {MAX_NAME}", name.len());
        }
        info.t.set_name_bytes(&name);
        let name = info.t.name_bytes().to_vec();
        if !seen.insert(name.clone()) {
            fail!("duplicate tensor name '{}' (tensor {i})", lossy(&name));
        }
        let shown = lossy(&name).into_owned();

        let n_dims = r.u32()?;
        if n_dims as usize > MAX_DIMS {
            fail!("tensor '{shown}' has invalid number of dimensions: {n_dims} > {MAX_DIMS}");
        }
        for j in 0..MAX_DIMS {
            info.t.ne[j] = if j < n_dims as usize { r.i64()? } else { 1 };
            if info.t.ne[j] < 0 {
                fail!("tensor '{shown}' dimension {j} has invalid number of elements: {}", info.t.ne[j]);
            }
        }
        let ne = info.t.ne;
        if !element_count_fits(&ne) {
            fail!("total number of elements in tensor '{shown}' with shape {ne:?} is >= {}", i64::MAX);
        }

        let ty = Type(r.i32()?);
        if !ty.is_valid() {
            fail!("tensor '{shown}' has invalid ggml type {}, should be in [0, {})", ty.0, Type::COUNT);
        }
        let blck = ty.blck_size();
        if blck == 0 || ne[0] % blck != 0 {
            fail!(
                "tensor '{shown}' of type {} ({}) has {} elements per row, not a multiple of block size ({blck})",
                ty.0,
                ty.name(),
                ne[0]
            );
        }
        // the product cannot overflow: either a factor is 0 or element_count_fits said so
        let nelements = if ne.contains(&0) { 0 } else { ne.iter().product::<i64>() };
        let blocks = (nelements / blck) as u64;
        // ggml_nbytes multiplies the row length by the block size before dividing by the
        // elements per block: that product must fit as well
        let row_product = (ne[0] as u64).checked_mul(ty.type_size() as u64);
        if blocks > (usize::MAX / ty.type_size()) as u64 || row_product.is_none() {
            fail!("tensor '{shown}' with shape {ne:?} has a size in bytes > {}", usize::MAX);
        }
        // An empty tensor passes the size checks whatever its other dimensions; its strides
        // must still be representable, as ggml computes them for every tensor it creates.
        // (the row's size fits: ne[0] * type_size was checked above)
        let row_size = ty.type_size() * (ne[0] / blck) as usize;
        let strides_fit = ne[1..MAX_DIMS - 1].iter().try_fold(row_size, |nb, &n| nb.checked_mul(n as usize));
        if strides_fit.is_none() {
            fail!("tensor '{shown}' with shape {ne:?} has strides larger than {}", usize::MAX);
        }
        info.t.type_ = ty;
        set_dense_strides(&mut info.t);

        info.offset = r.u64()?;
        ctx.info.push(info);
    }
    Some(())
}

/// Whether the product of `ne` (all non-negative) stays below `i64::MAX`, checked one factor
/// at a time as ggml does. Empty tensors always fit.
fn element_count_fits(ne: &[i64; MAX_DIMS]) -> bool {
    if ne.contains(&0) {
        return true;
    }
    let mut product = ne[0];
    for &n in &ne[1..] {
        if i64::MAX / n <= product {
            return false;
        }
        product *= n;
    }
    true
}

/// Skips the padding before the data section and checks that the tensors tile it in order.
fn locate_data<S: Source>(r: &mut Reader<S>, ctx: &mut GgufContext) -> Option<()> {
    if !ctx.info.is_empty() {
        let meta = r.tell() - r.start;
        let start = padded(meta, ctx.alignment as u64).and_then(|p| r.start.checked_add(p));
        if !start.is_some_and(|s| r.seek(s)) {
            fail!("failed to seek to beginning of data section");
        }
    }
    let Ok(offset) = usize::try_from(r.tell()) else { fail!("data section offset does not fit in memory") };
    ctx.offset = offset;

    let mut size = 0usize;
    for ti in &ctx.info {
        if ti.offset != size as u64 {
            crate::log_error!(
                "gguf_init: tensor '{}' has offset {}, expected {size}\n",
                lossy(ti.t.name_bytes()),
                ti.offset
            );
            fail!("failed to read tensor data");
        }
        let grown = padded(ti.nbytes() as u64, ctx.alignment as u64)
            .and_then(|p| usize::try_from(p).ok())
            .and_then(|p| size.checked_add(p));
        let Some(grown) = grown else {
            fail!("tensor '{}' size overflow, cannot add it to the {size} bytes before it", lossy(ti.t.name_bytes()))
        };
        size = grown;
    }
    ctx.size = size;
    Some(())
}

fn padded(x: u64, align: u64) -> Option<u64> {
    Some(x.checked_add(align - 1)? & !(align - 1))
}

fn create_tensors<S: Source>(r: &mut Reader<S>, ctx: &GgufContext, no_alloc: bool) -> Option<Box<Context>> {
    let overhead = OBJECT_SIZE + TENSOR_SIZE;
    let n_objects = ctx.info.len() + usize::from(!no_alloc);
    let mem_size =
        n_objects.checked_mul(overhead).and_then(|m| if no_alloc { Some(m) } else { m.checked_add(ctx.size) });
    let Some(mem_size) = mem_size else { fail!("memory size overflow while allocating ggml context") };
    if !no_alloc {
        if ctx.size as u64 > r.remaining() || i64::try_from(ctx.size).is_err() {
            fail!("failed to read tensor data binary blob: {} bytes needed, {} remain", ctx.size, r.remaining());
        }
        let memory = physical_memory();
        if ctx.size > memory {
            fail!("tensor data of {} bytes is more than this machine's memory ({memory} bytes)", ctx.size);
        }
    }

    let mut ggml = match Context::try_new(InitParams { mem_size, mem_buffer: std::ptr::null_mut(), no_alloc }) {
        Ok(ggml) => ggml,
        Err(e) => fail!("{e}"),
    };
    let mut blob_data: *mut u8 = std::ptr::null_mut();
    if !no_alloc {
        let blob = ggml.new_tensor(Type::I8, &[ctx.size as i64]);
        blob.get_mut().set_name("GGUF tensor data binary blob");
        blob_data = blob.data.cast();
        if ctx.size > 0 {
            // SAFETY: the blob tensor was just allocated with `ctx.size` bytes of data in the
            // context's pool, and nothing else refers to them yet.
            let dst = unsafe { std::slice::from_raw_parts_mut(blob_data, ctx.size) };
            if !r.fill(dst) {
                fail!("failed to read tensor data binary blob");
            }
        }
    }

    ggml.no_alloc = true;
    for ti in &ctx.info {
        let t = ggml.new_tensor(ti.t.type_, &ti.t.ne);
        let t = t.get_mut();
        t.set_name_bytes(ti.t.name_bytes());
        if !no_alloc {
            // offsets lie within the blob: each equals the padded size of the tensors before it
            t.data = blob_data.wrapping_add(ti.offset as usize).cast();
        }
    }
    ggml.no_alloc = no_alloc;
    Some(ggml)
}

#[cfg(test)]
mod tests;
