//! FLASH_ATTN_EXT: `softmax(scale * Q K^T + slope * mask) V` for each query row, without
//! materialising the score matrix, rounded the way ggml's CPU kernel rounds it.
//!
//! ggml computes this op one of three ways, chosen by the shape, and each rounds differently
//! (by about 1e-6 in relative terms), so this kernel takes the same way by the same rules:
//!
//! * [`tiled`]: at least [`TILE_Q`] query rows per head, keys and values both F32 or both F16,
//!   and a value head size that is whole SIMD vectors: everything in `f32` (the queries as
//!   given, the keys widened, scores as `f32` multiply-add chains, an online softmax over
//!   tiles of [`TILE_KV`] keys, values accumulated in `f32`).
//! * [`rows`] (ggml's "one chunk"): otherwise. Each query row walks its keys one at a time:
//!   the query is converted to the activation type of K's dot product (binary16 for F16 keys),
//!   each score is K's `vec_dot`, and the weighted values are accumulated in binary16 when V
//!   is F16 ([`half`]), in `f32` otherwise.
//! * Decoding (one query row per head, one sample in dimension 3, F32/F16 keys and values of
//!   one type, at least [`SPLIT_MIN_KEYS`] keys): each thread takes one slice of the keys
//!   for every head, rows-style, and the slices are merged after a barrier.
//!
//! With `use_ref` only the rows way is taken (as ggml does), on the scalar models.
//!
//! Options: logit soft-capping (`s = c * tanh(s * scale / c)`), ALiBi slopes per head
//! (`max_bias > 0`), per-head sinks (`src[4]`, an extra logit with no value row), key/value
//! heads broadcast over query heads (grouped-query attention) and the mask broadcast over
//! heads and dimension 3. The result is permuted: `[d_v, n_head, n_batch, ne3]`. The
//! `n_kv_max` hint (op param 4) is ignored, as ggml's CPU kernel ignores it.

mod back;
mod half;
mod rows;
#[cfg(test)]
mod tests;
mod tiled;

pub use back::{flash_attn_back, flash_attn_back_supports, flash_attn_back_work_size};

use super::dot::DotKernel;
use super::norm::{row_ptr, source, use_avx2};
use super::softmax::Alibi;
use crate::core::ops::matmul::Prec;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::features::features;
use crate::cpu::plan::CACHE_LINE_SIZE;
use crate::quants::traits::{ToFloatFn, type_traits};
use half::{Half, HalfMath};

/// Query rows per tile of the tiled way (`GGML_FA_TILE_Q`); also the fewest query rows per
/// head that take it.
const TILE_Q: usize = 64;
/// Keys per tile of the tiled way (`GGML_FA_TILE_KV`).
const TILE_KV: usize = 64;
/// The fewest keys for which decoding splits the keys among threads.
const SPLIT_MIN_KEYS: usize = 512;
/// The padding between threads' scratch, in floats (`CACHE_LINE_SIZE_F32`).
const PAD_FLOATS: usize = CACHE_LINE_SIZE / 4;

/// How value rows are read.
#[derive(Clone, Copy)]
enum ValueRows {
    F32,
    F16,
    Dequantize(ToFloatFn),
}

impl ValueRows {
    fn for_type(ty: Type) -> Option<ValueRows> {
        match ty {
            Type::F32 => Some(ValueRows::F32),
            Type::F16 => Some(ValueRows::F16),
            _ if ty.is_valid() => type_traits(ty).to_float.map(ValueRows::Dequantize),
            _ => None,
        }
    }
}

fn precision_supported(node: &Tensor) -> bool {
    let prec = Prec(node.op_param_i32(3));
    prec == Prec::DEFAULT || prec == Prec::F32
}

/// Whether the query rows convert to `ty` (the activation type of K's dot product).
fn query_convertible(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16 | Type::Q8_0 | Type::Q8_1)
}

/// FLASH_ATTN_EXT: F32 queries and result; keys of any type with a CPU dot product (F32, F16,
/// BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0); values F32, F16 or any type with a row dequantizer;
/// head sizes whole blocks of those types; mask absent or F16; sinks absent or F32; precision
/// default or F32.
pub fn flash_attn_ext_supports(node: &Tensor) -> bool {
    let whole_blocks = |n: i64, ty: Type| n % ty.blck_size() == 0;
    let q = node.source(0).is_some_and(|q| q.type_ == Type::F32);
    let k = node.source(1).is_some_and(|k| {
        DotKernel::for_type(k.type_).is_some_and(|d| {
            query_convertible(d.vec_dot_type) && whole_blocks(k.ne[0], k.type_) && whole_blocks(k.ne[0], d.vec_dot_type)
        })
    });
    let v = node.source(2).is_some_and(|v| {
        ValueRows::for_type(v.type_).is_some() && v.type_.blck_size() > 0 && whole_blocks(v.ne[0], v.type_)
    });
    let mask = node.source(3).is_none_or(|m| m.type_ == Type::F16);
    let sinks = node.source(4).is_none_or(|s| s.type_ == Type::F32);
    q && k && v && mask && sinks && node.type_ == Type::F32 && precision_supported(node)
}

/// One thread's scratch of the tiled way, in floats (ggml's layout, which its plan is sized
/// by).
fn tile_stride(dk: usize, dv: usize) -> usize {
    TILE_Q * dk + 2 * TILE_Q * TILE_KV + TILE_Q * dv + TILE_KV * dv + TILE_KV * dk + PAD_FLOATS
}

/// One thread's scratch of the rows way, in floats (ggml's layout): a value row as floats,
/// the accumulator, the converted query row.
fn row_stride(dk: usize, dv: usize) -> usize {
    dk + 2 * dv + PAD_FLOATS
}

/// The reference's scratch for FLASH_ATTN_EXT: the larger of its tiled buffers and its
/// decoding buffers (the rows scratch and the merged slices), for `n_tasks` threads. The
/// plan adds a cache line per thread, which the strides above use.
pub fn flash_attn_ext_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let dim = |i: usize| node.source(i).map_or(0, |t| t.ne[0].max(0) as usize);
    let n_q_heads = node.source(0).map_or(0, |q| q.ne[2].max(0) as usize);
    let (dk, dv) = (dim(1), dim(2));
    let prefill = 4 * (tile_stride(dk, dv) - PAD_FLOATS) * n_tasks;
    let decode = 4 * (n_q_heads * n_tasks * (2 + dv) + n_tasks * (row_stride(dk, dv) - PAD_FLOATS));
    prefill.max(decode)
}

/// `len` floats of the work buffer from float `at` on, counted from the buffer's first float
/// boundary.
///
/// # Safety
/// No other live slice (in this thread or another) overlaps the range.
#[allow(clippy::mut_from_ref)] // the threads' disjoint pieces of the one shared buffer
unsafe fn work_floats<'p>(params: &'p ComputeParams, at: usize, len: usize) -> &'p mut [f32] {
    let skip = params.wdata.align_offset(std::mem::align_of::<f32>());
    crate::ggml_assert!(
        !params.wdata.is_null() && params.wsize >= skip + 4 * (at + len),
        "flash_attn_ext: work buffer of {} bytes is too small",
        params.wsize
    );
    // SAFETY: the range lies inside the buffer (asserted), float-aligned, and nothing else
    // uses it (the caller's contract).
    unsafe { std::slice::from_raw_parts_mut(params.wdata.add(skip).cast::<f32>().add(at), len) }
}

/// The width of ggml's `f32` SIMD vectors (`GGML_F32_EPR`) on this processor: the tiled way
/// needs whole vectors of values.
fn f32_vector_len() -> usize {
    if features().avx512f { 16 } else { 8 }
}

/// Numbers for which every bit pattern is a value.
trait AnyBits: Copy {}
impl AnyBits for u16 {}
impl AnyBits for f32 {}

/// `bytes` viewed as `n` numbers.
fn view<T: AnyBits>(bytes: &[u8], n: usize) -> &[T] {
    crate::ggml_assert!(
        bytes.len() >= n * std::mem::size_of::<T>() && bytes.as_ptr().cast::<T>().is_aligned(),
        "flash_attn_ext: row too short or misaligned"
    );
    // SAFETY: length and alignment checked; any bits are a `T`.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), n) }
}

/// `y[i] = x[i]·v + y[i]`, one fused multiply-add per element (`ggml_vec_mad_f32`).
fn mad_f32(y: &mut [f32], x: &[f32], v: f32, simd: bool) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is set only where AVX2, FMA and F16C were detected (`use_avx2`).
        return unsafe { avx2::mad_f32(y, x, v) };
    }
    let _ = simd;
    for (a, &b) in y.iter_mut().zip(x) {
        *a = b.mul_add(v, *a);
    }
}

/// `y[i] *= v`.
fn scale_f32(y: &mut [f32], v: f32) {
    for a in y {
        *a *= v;
    }
}

/// The node's settings and operands, checked once per call.
struct Attention<'a> {
    q: &'a Tensor,
    k: &'a Tensor,
    v: &'a Tensor,
    dst: &'a Tensor,
    mask: Option<&'a Tensor>,
    sinks: Option<&'a [f32]>,
    scale: f32,
    softcap: f32,
    alibi: Alibi,
    dot: DotKernel,
    values: ValueRows,
    half: Half,
    simd: bool,
    dk: usize,
    dv: usize,
    n_kv: usize,
    /// Bytes of a row of K and of V.
    k_row: usize,
    v_row: usize,
}

impl Attention<'_> {
    /// The indices `(iq1, iq2, iq3)` of flat query row `r` (`iq1 + n_batch * (iq2 + n_head *
    /// iq3)`).
    fn query_index(&self, r: usize) -> (usize, usize, usize) {
        let (n_batch, n_head) = (self.q.ne[1] as usize, self.q.ne[2] as usize);
        (r % n_batch, (r / n_batch) % n_head, r / (n_batch * n_head))
    }

    /// The head `(i2, i3)` of K or V that query head `(iq2, iq3)` reads.
    fn kv_head(&self, t: &Tensor, iq2: usize, iq3: usize) -> (usize, usize) {
        (iq2 / (self.q.ne[2] / t.ne[2]) as usize, iq3 / (self.q.ne[3] / t.ne[3]) as usize)
    }

    /// Row `i1` of head `(i2, i3)` of K, as bytes.
    #[inline]
    fn key_row(&self, i1: usize, head: (usize, usize)) -> &[u8] {
        Self::kv_row(self.k, self.k_row, i1, head)
    }

    /// Row `i1` of head `(i2, i3)` of V, as bytes.
    #[inline]
    fn value_row(&self, i1: usize, head: (usize, usize)) -> &[u8] {
        Self::kv_row(self.v, self.v_row, i1, head)
    }

    /// Row `i1` of head `(i2, i3)` of K or V, rows of `len` bytes.
    #[inline]
    fn kv_row(t: &Tensor, len: usize, i1: usize, (i2, i3): (usize, usize)) -> &[u8] {
        crate::ggml_assert!(i1 < t.ne[1] as usize, "flash_attn_ext: key {} of {}", i1, t.ne[1]);
        // SAFETY: a key below ne[1] (asserted) and a head from `kv_head`, inside the tensor;
        // a row holds `len` contiguous bytes (asserted at the start).
        unsafe { std::slice::from_raw_parts(row_ptr(t, i1 as i64, i2 as i64, i3 as i64), len) }
    }

    /// Query row `(iq1, iq2, iq3)`.
    fn query_row(&self, (iq1, iq2, iq3): (usize, usize, usize)) -> &[f32] {
        // SAFETY: the indices come from `query_index`, inside Q, whose rows hold dk
        // contiguous floats (asserted).
        unsafe {
            std::slice::from_raw_parts(row_ptr(self.q, iq1 as i64, iq2 as i64, iq3 as i64).cast::<f32>(), self.dk)
        }
    }

    /// The mask row of query `(iq1, iq2, iq3)`, broadcast over heads and dimension 3.
    fn mask_row(&self, (iq1, iq2, iq3): (usize, usize, usize)) -> Option<&[u16]> {
        // SAFETY: the mask covers every query row (asserted) with n_kv halves per row.
        self.mask.map(|m| unsafe {
            let at = row_ptr(m, iq1 as i64, (iq2 % m.ne[2] as usize) as i64, (iq3 % m.ne[3] as usize) as i64);
            std::slice::from_raw_parts(at.cast::<u16>(), self.n_kv)
        })
    }

    /// A score from the dot product `dot`: scaled, soft-capped, then the masked slope added.
    fn finish_score(&self, dot: f32, masked_slope: f32) -> f32 {
        let mut s = dot * self.scale;
        if self.softcap != 0.0 {
            s = self.softcap * s.tanh();
        }
        s + masked_slope
    }

    /// Writes `out` as the result of query row `r` (the result is permuted: head `iq2` is
    /// dimension 1, query `iq1` dimension 2).
    fn write(&self, r: usize, out: &[f32]) {
        let (iq1, iq2, iq3) = self.query_index(r);
        crate::ggml_assert!(out.len() == self.dv, "flash_attn_ext: result row of the wrong length");
        // SAFETY: (iq2, iq1, iq3) is inside the result's shape, whose rows hold dv floats.
        unsafe {
            let at = row_ptr(self.dst, iq2 as i64, iq1 as i64, iq3 as i64).cast::<f32>();
            std::ptr::copy_nonoverlapping(out.as_ptr(), at, out.len());
        }
    }
}

/// FLASH_ATTN_EXT: `src = [q, k, v, mask, sinks]`, `op_params = [scale, max_bias,
/// logit_softcap, precision, n_kv_max]`.
pub fn flash_attn_ext(params: &ComputeParams, dst: TensorPtr) {
    let (q, k, v) = (source(dst, 0), source(dst, 1), source(dst, 2));
    let (mask, sinks) = (dst.src(3), dst.src(4));
    crate::ggml_assert!(precision_supported(&dst), "flash_attn_ext: unsupported precision {}", dst.op_param_i32(3));
    crate::ggml_assert!(q.type_ == Type::F32 && dst.type_ == Type::F32, "flash_attn_ext: Q and the result must be F32");
    let dot = DotKernel::for_type(k.type_)
        .filter(|d| query_convertible(d.vec_dot_type))
        .unwrap_or_else(|| crate::ggml_abort!("flash_attn_ext: unsupported K type {}", k.type_.name()));
    let values = ValueRows::for_type(v.type_)
        .unwrap_or_else(|| crate::ggml_abort!("flash_attn_ext: unsupported V type {}", v.type_.name()));

    let (dk, dv, n_kv) = (k.ne[0], v.ne[0], k.ne[1]);
    crate::ggml_assert!(q.ne[0] == dk && dst.ne[0] == dv, "flash_attn_ext: head sizes differ");
    crate::ggml_assert!(v.ne[1] == n_kv, "flash_attn_ext: K and V differ in length");
    crate::ggml_assert!(
        dst.ne[1] == q.ne[2] && dst.ne[2] == q.ne[1] && dst.ne[3] == q.ne[3],
        "flash_attn_ext: result {:?} is not the permuted query shape {:?}",
        dst.ne,
        q.ne
    );
    for kv in [&*k, &*v] {
        crate::ggml_assert!(
            kv.ne[2] > 0 && kv.ne[3] > 0 && q.ne[2] % kv.ne[2] == 0 && q.ne[3] % kv.ne[3] == 0,
            "flash_attn_ext: K/V heads cannot broadcast over Q's"
        );
    }
    crate::ggml_assert!(
        q.nb[0] == 4 && k.nb[0] == k.type_.type_size() && v.nb[0] == v.type_.type_size() && dst.nb[0] == 4,
        "flash_attn_ext: rows must be contiguous"
    );
    crate::ggml_assert!(
        dk % dot.vec_dot_type.blck_size() == 0 && dk % k.type_.blck_size() == 0,
        "flash_attn_ext: bad head size"
    );
    crate::ggml_assert!(dv % v.type_.blck_size() == 0, "flash_attn_ext: bad value head size");
    for t in [&*k, &*v] {
        if matches!(t.type_, Type::F32 | Type::F16) {
            // float rows are read as slices of their element type
            let size = t.type_.type_size();
            crate::ggml_assert!(
                (t.data as usize).is_multiple_of(size) && t.nb.iter().all(|nb| nb.is_multiple_of(size)),
                "flash_attn_ext: misaligned K/V rows"
            );
        }
    }
    if let Some(m) = mask {
        crate::ggml_assert!(
            m.type_ == Type::F16 && m.nb[0] == 2 && m.ne[0] >= n_kv && m.ne[1] >= q.ne[1] && m.ne[2] > 0 && m.ne[3] > 0,
            "flash_attn_ext: mask {:?} does not cover {} keys x {} queries",
            m.ne,
            n_kv,
            q.ne[1]
        );
    }
    let sinks = sinks.map(|s| {
        crate::ggml_assert!(s.type_ == Type::F32 && s.nelements() >= q.ne[2], "flash_attn_ext: one F32 sink per head");
        // SAFETY: a contiguous F32 vector with one value per query head (asserted).
        unsafe { std::slice::from_raw_parts(s.data.cast::<f32>(), q.ne[2] as usize) }
    });

    let mut scale = dst.op_param_f32(0);
    let softcap = dst.op_param_f32(2);
    if softcap != 0.0 {
        scale /= softcap;
    }
    let attention = Attention {
        q: &q,
        k: &k,
        v: &v,
        dst: &dst,
        mask: mask.as_deref(),
        sinks,
        scale,
        softcap,
        alibi: Alibi::new(dst.op_param_f32(1), q.ne[2]),
        dot,
        values,
        half: Half::new(HalfMath::native(), use_avx2(params)),
        simd: use_avx2(params),
        dk: dk as usize,
        dv: dv as usize,
        n_kv: n_kv as usize,
        k_row: k.type_.row_size(k.ne[0]),
        v_row: v.type_.row_size(v.ne[0]),
    };
    let (dk, dv, n_kv) = (attention.dk, attention.dv, attention.n_kv);
    let rows = (q.ne[1] * q.ne[2] * q.ne[3]) as usize;
    let float_kv = matches!(k.type_, Type::F32 | Type::F16) && k.type_ == v.type_;

    if !params.use_ref && float_kv && q.ne[1] == 1 && q.ne[3] == 1 && n_kv >= SPLIT_MIN_KEYS {
        attention.split_keys(params);
        return;
    }

    let tiled = !params.use_ref && float_kv && q.ne[1] as usize >= TILE_Q && dv % f32_vector_len() == 0;
    // the rows way has the tiled way's room too (ggml's plan is the larger of both)
    let stride = tile_stride(dk, dv);
    // SAFETY: each thread takes its own stride of the buffer.
    let scratch = unsafe { work_floats(params, stride * params.ith, stride - PAD_FLOATS) };

    // chunks of query rows, about four per thread, handed out by the team's counter
    let nth = params.nth;
    let chunk_size = rows.div_ceil(4 * nth).max(1);
    let mut n_chunks = rows.div_ceil(chunk_size);
    if nth == 1 || n_chunks < nth {
        n_chunks = nth;
    }
    let mut per_chunk = rows.div_ceil(n_chunks);
    // whole groups of rows that share key and value heads, where that still leaves each thread
    // a chunk: a group reads each key and value row once for all its rows (decoding's 16 heads
    // on 2 threads: 4 chunks of 4 query heads of one K/V head, not 8 of 2)
    let group = (q.ne[1] * (q.ne[2] / k.ne[2])) as usize;
    let grouped = per_chunk.next_multiple_of(group.clamp(1, half::GROUP));
    if rows.div_ceil(grouped) >= nth {
        per_chunk = grouped;
        n_chunks = rows.div_ceil(per_chunk);
    }
    let mut chunk = params.ith;
    while chunk < n_chunks {
        let first = (per_chunk * chunk).min(rows);
        let last = (first + per_chunk).min(rows);
        if tiled {
            attention.tiled_rows(first..last, scratch);
        } else {
            attention.rows(first..last, scratch);
        }
        chunk = params.next_chunk();
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use crate::cpu::kernels::simd::avx2::load_f32;

    /// [`super::mad_f32`].
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn mad_f32(y: &mut [f32], x: &[f32], v: f32) {
        let n = y.len().min(x.len());
        let vv = _mm256_set1_ps(v);
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n, inside both rows.
            unsafe { _mm256_storeu_ps(py.add(i), _mm256_fmadd_ps(load_f32(px.add(i)), vv, load_f32(py.add(i)))) };
            i += 8;
        }
        for (a, &b) in y[i..n].iter_mut().zip(&x[i..n]) {
            *a = b.mul_add(v, *a);
        }
    }
}
