//! Serialising a [`GgufContext`]: header, key-value pairs, tensor infos, padding to the
//! alignment, then each tensor's data padded to the alignment. The bytes are those ggml
//! writes for the same context; padding is relative to the start of the GGUF data, not of
//! the file it is written into.

use std::borrow::Cow;
use std::io::Write;
use std::ptr::NonNull;

use super::MAGIC;
use super::context::{GgufContext, TensorInfo, lossy};
use super::value::{GgufType, Payload};
use crate::core::context::pad;
use crate::core::tensor::TensorPtr;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// The metadata: header, key-value pairs and tensor infos, and the size they take with the
/// padding to the alignment that follows them. The padding is never built (a file may ask for
/// up to 2 GiB of it); writers add its zeros.
pub struct Meta {
    pub bytes: Vec<u8>,
    /// What `gguf_get_meta_size` returns and where the data section starts in a file.
    pub padded_len: usize,
}

pub fn meta(ctx: &GgufContext) -> Meta {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, ctx.version);
    put_i64(&mut out, ctx.n_tensors());
    put_i64(&mut out, ctx.n_kv());

    for kv in ctx.kvs() {
        put_str(&mut out, kv.key().bytes());
        if kv.is_array() {
            put_i32(&mut out, GgufType::ARRAY.0);
            put_i32(&mut out, kv.ty().0);
            put_u64(&mut out, kv.len() as u64);
        } else {
            put_i32(&mut out, kv.ty().0);
        }
        match kv.payload() {
            Payload::Plain(bytes) if kv.ty() == GgufType::BOOL => {
                out.extend(bytes.as_slice().iter().map(|&b| u8::from(b != 0)));
            }
            Payload::Plain(bytes) => out.extend_from_slice(bytes.as_slice()),
            Payload::Strings(strings) => strings.iter().for_each(|s| put_str(&mut out, s.bytes())),
        }
    }

    for ti in ctx.tensor_infos() {
        put_str(&mut out, ti.t.name_bytes());
        let n_dims = ti.t.n_dims() as usize;
        put_u32(&mut out, n_dims as u32);
        ti.t.ne[..n_dims].iter().for_each(|&n| put_i64(&mut out, n));
        put_i32(&mut out, ti.t.type_.0);
        put_u64(&mut out, ti.offset);
    }

    let padded_len = pad(out.len(), ctx.alignment);
    Meta { bytes: out, padded_len }
}

/// The metadata with its padding, as `gguf_get_meta_data` returns it.
#[cfg(test)]
pub fn meta_bytes(ctx: &GgufContext) -> Vec<u8> {
    let Meta { mut bytes, padded_len } = meta(ctx);
    bytes.resize(padded_len, 0);
    bytes
}

/// Writes `n` zero bytes from a small buffer.
fn write_zeros<W: Write>(w: &mut W, mut n: usize) -> std::io::Result<()> {
    const ZEROS: [u8; 4096] = [0; 4096];
    while n > 0 {
        let k = n.min(ZEROS.len());
        w.write_all(&ZEROS[..k])?;
        n -= k;
    }
    Ok(())
}

/// Writes the whole context (or only its metadata) to `w`.
pub fn write_to<W: Write>(ctx: &GgufContext, w: &mut W, only_meta: bool) -> std::io::Result<()> {
    let Meta { bytes, padded_len: data_start } = meta(ctx);
    w.write_all(&bytes)?;
    write_zeros(w, data_start - bytes.len())?;
    if only_meta {
        return Ok(());
    }

    let mut written = data_start;
    for ti in ctx.tensor_infos() {
        crate::ggml_assert!(
            (written - data_start) as u64 == ti.offset,
            "tensor '{}' is at offset {} of the data section, its info says {}",
            lossy(ti.t.name_bytes()),
            written - data_start,
            ti.offset
        );
        let data = tensor_data(ti);
        w.write_all(&data)?;
        written += data.len();
        let padding = pad(written, ctx.alignment) - written;
        write_zeros(w, padding)?;
        written += padding;
    }
    Ok(())
}

/// The bytes of one tensor: from its backend buffer when it has one, else from `data`.
fn tensor_data(ti: &TensorInfo) -> Cow<'_, [u8]> {
    let t = &ti.t;
    crate::ggml_assert!(t.is_contiguous(), "tensor '{}' is not contiguous", lossy(t.name_bytes()));
    let nbytes = t.nbytes();
    if !t.buffer.is_null() {
        let mut buf = vec![0u8; nbytes];
        // SAFETY: the description lives in the context for the whole call, and reading a
        // tensor's bytes does not modify it.
        let handle = unsafe { TensorPtr::new(NonNull::from(t)) };
        crate::backend::buffer::tensor_get(handle, &mut buf, 0);
        return Cow::Owned(buf);
    }
    crate::ggml_assert!(!t.data.is_null(), "tensor '{}' has no data to write", lossy(t.name_bytes()));
    // SAFETY: a tensor's `data` points to at least `nbytes` readable bytes: either it was
    // allocated in a context (ggml_add_tensor's contract) or the caller promised as much in
    // gguf_set_tensor_data.
    Cow::Borrowed(unsafe { std::slice::from_raw_parts(t.data.cast::<u8>(), nbytes) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::value::Kv;

    #[test]
    fn empty_context_is_a_padded_header() {
        let ctx = GgufContext::new();
        let meta = meta_bytes(&ctx);
        assert_eq!(meta.len(), 32);
        assert_eq!(&meta[..4], b"GGUF");
        assert_eq!(u32::from_ne_bytes(meta[4..8].try_into().unwrap()), 3);
        assert!(meta[8..].iter().all(|&b| b == 0));
    }

    #[test]
    fn tensors_in_backend_buffers_are_read_through_the_buffer() {
        // 32 bytes at a 32-byte aligned address, as CPU buffers require
        let mut holder = [0u8; 96];
        let start = holder.as_ptr().align_offset(32);
        let len = 32;
        let bytes: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(5)).collect();
        holder[start..start + len].copy_from_slice(&bytes);
        let ptr = holder[start..].as_mut_ptr();
        let buf = crate::backend::host_buffer::cpu_buffer_from_ptr(ptr.cast(), len);

        let mut ti = TensorInfo::blank();
        ti.t.type_ = crate::core::types::Type::F32;
        ti.t.ne = [8, 1, 1, 1];
        crate::gguf::context::set_dense_strides(&mut ti.t);
        ti.t.set_name("in_buffer");
        ti.t.buffer = buf.as_ptr().cast();
        ti.t.data = ptr.cast();

        let mut ctx = GgufContext::new();
        ctx.add_tensor(&ti.t);
        let mut file = Vec::new();
        write_to(&ctx, &mut file, false).unwrap();
        let meta = meta(&ctx).padded_len;
        assert_eq!(&file[meta..], &bytes[..]);
        buf.free();
    }

    #[test]
    fn kv_layout() {
        let mut ctx = GgufContext::new();
        ctx.set(Kv::scalar(b"ab", 7u16));
        let meta = meta_bytes(&ctx);
        let mut expected = b"GGUF".to_vec();
        expected.extend_from_slice(&3u32.to_ne_bytes());
        expected.extend_from_slice(&0i64.to_ne_bytes());
        expected.extend_from_slice(&1i64.to_ne_bytes());
        expected.extend_from_slice(&2u64.to_ne_bytes());
        expected.extend_from_slice(b"ab");
        expected.extend_from_slice(&2i32.to_ne_bytes());
        expected.extend_from_slice(&7u16.to_ne_bytes());
        expected.resize(64, 0);
        assert_eq!(meta, expected);
    }
}
