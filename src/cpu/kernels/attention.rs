//! FLASH_ATTN_EXT: `softmax(scale * Q K^T + slope * mask) V` for each query row, without
//! materialising the score matrix.
//!
//! Each query row walks the keys in blocks of [`BLOCK`]: the block's scores are computed
//! (masked keys, whose mask is `-inf`, are skipped without a dot product), the running
//! maximum is raised if needed (rescaling what was accumulated), and the block's
//! exponentials are summed and added to the output accumulator as weights of the value rows.
//! This is the online softmax of ggml's kernels, evaluated a block at a time.
//!
//! Q·K goes through K's `vec_dot` ([`DotKernel`]), with the query row first converted to the
//! dot product's activation type exactly as ggml does (binary16 for F16 keys, Q8_0 for Q4_0
//! keys, ...), so the rounding ggml applies to the scores is applied here too. Values may be
//! F32, F16, or any type with a row dequantizer; accumulation is in `f32`.
//!
//! Options: logit soft-capping (`s = c * tanh(s * scale / c)`), ALiBi slopes per head
//! (`max_bias > 0`), per-head sinks (`src[4]`, an extra logit with no value row), key/value
//! heads broadcast over query heads (grouped-query attention) and the mask broadcast over
//! heads and dimension 3. The result is permuted: `[d_v, n_head, n_batch, ne3]`.
//!
//! Threads take chunks of query rows from the team's counter. When there are fewer query
//! rows than threads (decoding) and at least [`SPLIT_MIN_KEYS`] keys, each thread takes a
//! slice of the keys for every row instead and the slices are merged after a barrier. The
//! `n_kv_max` hint (op param 4) is not needed: masked keys cost no dot product.

use super::dot::{DotKernel, quantize_row_q8_0, quantize_row_q8_1};
use super::norm::{row_ptr, source, use_avx2};
use super::softmax::{Alibi, exp_row, max_of};
use crate::core::ops::matmul::Prec;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::simd;
use crate::cpu::plan::CACHE_LINE_SIZE;
use crate::quants::half::{Bf16, fp16_to_fp32};
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};
use crate::quants::traits::{ToFloatFn, type_traits};

/// Keys scored together.
const BLOCK: usize = 64;
/// Key rows per dot-product tile.
const TILE: usize = 4;
/// The fewest keys for which decoding splits the keys among threads.
const SPLIT_MIN_KEYS: i64 = 512;
/// The reference's tile sizes, which its scratch plan is sized by.
const REF_TILE_Q: usize = 64;
const REF_TILE_KV: usize = 64;

fn opt_src(node: &Tensor, i: usize) -> Option<&Tensor> {
    // SAFETY: a node's sources are null or live tensors.
    unsafe { node.src[i].as_ref() }
}

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

/// FLASH_ATTN_EXT: F32 queries and result; keys of any type with a CPU dot product (F32, F16,
/// BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0); values F32, F16 or any type with a row dequantizer;
/// head sizes whole blocks of those types; mask absent or F16; sinks absent or F32; precision
/// default or F32.
pub fn flash_attn_ext_supports(node: &Tensor) -> bool {
    let whole_blocks = |n: i64, ty: Type| n % ty.blck_size() == 0;
    let q = opt_src(node, 0).is_some_and(|q| q.type_ == Type::F32);
    let k = opt_src(node, 1).is_some_and(|k| {
        DotKernel::for_type(k.type_).is_some_and(|d| {
            query_convertible(d.vec_dot_type) && whole_blocks(k.ne[0], k.type_) && whole_blocks(k.ne[0], d.vec_dot_type)
        })
    });
    let v = opt_src(node, 2).is_some_and(|v| {
        ValueRows::for_type(v.type_).is_some() && v.type_.blck_size() > 0 && whole_blocks(v.ne[0], v.type_)
    });
    let mask = opt_src(node, 3).is_none_or(|m| m.type_ == Type::F16);
    let sinks = opt_src(node, 4).is_none_or(|s| s.type_ == Type::F32);
    q && k && v && mask && sinks && node.type_ == Type::F32 && precision_supported(node)
}

/// The reference's scratch for FLASH_ATTN_EXT: the larger of its tiled prefill buffers and
/// its split-KV decode buffers, for `n_tasks` threads. This kernel needs much less (see
/// [`Scratch`]), but the plan's size is observable.
pub fn flash_attn_ext_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let dim = |i: usize| opt_src(node, i).map_or(0, |t| t.ne[0].max(0) as usize);
    let n_q_heads = opt_src(node, 0).map_or(0, |q| q.ne[2].max(0) as usize);
    let (dk, dv) = (dim(1), dim(2));
    let (tq, tkv) = (REF_TILE_Q, REF_TILE_KV);
    let prefill = 4 * (tq * dk + 2 * tq * tkv + tq * dv + tkv * dv + tkv * dk) * n_tasks;
    let decode = 4 * (n_q_heads * n_tasks * (2 + dv) + n_tasks * (dk + 2 * dv));
    prefill.max(decode)
}

fn pad(n: usize) -> usize {
    n.next_multiple_of(CACHE_LINE_SIZE)
}

/// One thread's scratch: the query row in the dot product's activation type, the block's
/// scores, a value row as floats and the output accumulator, each cache-line aligned.
struct Scratch<'a> {
    query: &'a mut [u8],
    scores: &'a mut [f32],
    value: &'a mut [f32],
    acc: &'a mut [f32],
}

impl Scratch<'_> {
    fn bytes_per_thread(query_bytes: usize, dv: usize) -> usize {
        pad(query_bytes) + pad(4 * BLOCK) + 2 * pad(4 * dv)
    }

    /// Thread `params.ith`'s slice, counted from the buffer's first cache-line boundary.
    fn of<'p>(params: &'p ComputeParams, query_bytes: usize, dv: usize) -> Scratch<'p> {
        let per_thread = Self::bytes_per_thread(query_bytes, dv);
        let skip = params.wdata.align_offset(CACHE_LINE_SIZE);
        crate::ggml_assert!(
            !params.wdata.is_null() && params.wsize >= skip + per_thread * params.nth,
            "flash_attn_ext: work buffer of {} bytes is too small",
            params.wsize
        );
        // SAFETY: past the first `skip` bytes the buffer holds nth slices of `per_thread`
        // bytes (asserted) and each thread takes only its own; the four parts lie one after
        // another inside the slice, each at a cache-line boundary, so the float parts are
        // aligned.
        unsafe {
            let base = params.wdata.add(skip + per_thread * params.ith);
            let scores_at = base.add(pad(query_bytes));
            let value_at = scores_at.add(pad(4 * BLOCK));
            let acc_at = value_at.add(pad(4 * dv));
            Scratch {
                query: std::slice::from_raw_parts_mut(base, query_bytes),
                scores: std::slice::from_raw_parts_mut(scores_at.cast::<f32>(), BLOCK),
                value: std::slice::from_raw_parts_mut(value_at.cast::<f32>(), dv),
                acc: std::slice::from_raw_parts_mut(acc_at.cast::<f32>(), dv),
            }
        }
    }
}

/// `out`'s bytes as `n` values of a plain-data type.
fn typed<T: Copy>(out: &mut [u8], n: usize) -> &mut [T] {
    crate::ggml_assert!(
        out.len() >= n * std::mem::size_of::<T>() && out.as_ptr().cast::<T>().is_aligned(),
        "flash_attn_ext: query buffer too small or misaligned"
    );
    // SAFETY: the bytes are enough and aligned for `n` values (asserted), the types used here
    // (halves, bfloat16, Q8 blocks) are plain data valid for any bytes, and the result
    // borrows `out` exclusively.
    unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<T>(), n) }
}

/// Whether [`convert_query`] handles `ty`.
fn query_convertible(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16 | Type::Q8_0 | Type::Q8_1)
}

/// Converts a query row into the activation type of K's dot product.
fn convert_query(q: &[f32], into: Type, out: &mut [u8], simd_ok: bool) {
    let n = q.len();
    match into {
        Type::F32 => {
            for (dst, v) in out.chunks_exact_mut(4).zip(q) {
                dst.copy_from_slice(&v.to_ne_bytes());
            }
        }
        Type::F16 => {
            let h = typed::<u16>(out, n);
            if simd_ok { simd::f32_to_fp16_row(q, h) } else { simd::scalar::f32_to_fp16_row(q, h) }
        }
        Type::BF16 => {
            let h = typed::<Bf16>(out, n);
            if simd_ok { simd::f32_to_bf16_row(q, h) } else { simd::scalar::f32_to_bf16_row(q, h) }
        }
        Type::Q8_0 => quantize_row_q8_0(q, typed::<BlockQ8_0>(out, n / 32)),
        Type::Q8_1 => quantize_row_q8_1(q, typed::<BlockQ8_1>(out, n / 32)),
        other => crate::ggml_abort!("flash_attn_ext: no query conversion to {}", other.name()),
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
    simd: bool,
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
    if matches!(values, ValueRows::F32 | ValueRows::F16) {
        // value rows are read as slices of their element type
        let size = v.type_.type_size();
        crate::ggml_assert!(
            (v.data as usize).is_multiple_of(size) && v.nb.iter().all(|nb| nb.is_multiple_of(size)),
            "flash_attn_ext: misaligned value rows"
        );
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
        simd: use_avx2(params),
    };
    let query_bytes = dot.vec_dot_type.row_size(dk);
    let mut scratch = Scratch::of(params, query_bytes, dv as usize);
    let rows = (q.ne[1] * q.ne[2] * q.ne[3]) as usize;

    // Fewer query rows than threads (decoding) over many keys: split the keys instead.
    let partial_len = 2 + dv as usize;
    let partial_bytes = 4 * rows * params.nth * partial_len;
    let partials_at =
        params.wdata.align_offset(CACHE_LINE_SIZE) + Scratch::bytes_per_thread(query_bytes, dv as usize) * params.nth;
    if !params.use_ref && rows < params.nth && n_kv >= SPLIT_MIN_KEYS && params.wsize >= partials_at + partial_bytes {
        // SAFETY: the partials lie after every thread's scratch, inside the buffer (checked
        // just above), cache-line aligned.
        let partials = unsafe { params.wdata.add(partials_at).cast::<f32>() };
        attention.split_keys(params, rows, partials, &mut scratch);
        return;
    }

    // chunks of query rows: about four per thread, handed out by the team's counter
    let nth = params.nth;
    let chunk_size = rows.div_ceil(4 * nth).max(1);
    let mut n_chunks = rows.div_ceil(chunk_size);
    if nth == 1 || n_chunks < nth {
        n_chunks = nth;
    }
    let per_chunk = rows.div_ceil(n_chunks);
    let mut chunk = params.ith;
    while chunk < n_chunks {
        let first = (per_chunk * chunk).min(rows);
        let last = (first + per_chunk).min(rows);
        for r in first..last {
            let partial = attention.accumulate(r as i64, 0..n_kv, &mut scratch);
            attention.finish(r as i64, partial, scratch.acc);
        }
        chunk = params.next_chunk();
    }
}

/// The state of one query row's online softmax over some keys: the largest score, the sum
/// of the exponentials relative to it (the weighted values are in the accumulator).
#[derive(Clone, Copy, Debug)]
struct Partial {
    max: f32,
    sum: f32,
}

impl Attention<'_> {
    fn axpy(&self, acc: &mut [f32], x: &[f32], a: f32) {
        if self.simd { simd::axpy_f32(acc, x, a) } else { simd::scalar::axpy_f32(acc, x, a) }
    }

    fn scale(&self, acc: &mut [f32], a: f32) {
        if self.simd { simd::scale_f32(acc, a) } else { simd::scalar::scale_f32(acc, a) }
    }

    /// Key row `ic` of K/V head `(i2, i3)`, as bytes.
    fn kv_row(t: &Tensor, ic: i64, i2: i64, i3: i64) -> &[u8] {
        let len = t.type_.row_size(t.ne[0]);
        // SAFETY: ic < n_kv and (i2, i3) are inside the broadcast shape (checked by the
        // caller's index arithmetic), and a row holds `len` contiguous bytes (asserted).
        unsafe { std::slice::from_raw_parts(row_ptr(t, ic, i2, i3), len) }
    }

    /// The indices `(iq1, iq2, iq3)` of flat query row `r` (`iq1 + n_batch * (iq2 + n_head *
    /// iq3)`).
    fn query_index(&self, r: i64) -> (i64, i64, i64) {
        let (n_batch, n_head) = (self.q.ne[1], self.q.ne[2]);
        (r % n_batch, (r / n_batch) % n_head, r / (n_batch * n_head))
    }

    /// Accumulates the keys in `keys` for query row `r`: the weighted value rows into
    /// `s.acc` (cleared first), the maximum and the sum of weights into the result.
    fn accumulate(&self, r: i64, keys: std::ops::Range<i64>, s: &mut Scratch) -> Partial {
        let (q, k, v) = (self.q, self.k, self.v);
        let (iq1, iq2, iq3) = self.query_index(r);
        let n_head = q.ne[2];
        let (ik2, ik3) = (iq2 / (n_head / k.ne[2]), iq3 / (q.ne[3] / k.ne[3]));
        let (iv2, iv3) = (iq2 / (n_head / v.ne[2]), iq3 / (q.ne[3] / v.ne[3]));
        let n_kv = k.ne[1];
        let dk = q.ne[0] as usize;
        let slope = self.alibi.slope(iq2 as u32);

        // SAFETY: (iq1, iq2, iq3) is inside Q's shape and its rows hold dk contiguous floats.
        let q_row = unsafe { std::slice::from_raw_parts(row_ptr(q, iq1, iq2, iq3).cast::<f32>(), dk) };
        convert_query(q_row, self.dot.vec_dot_type, s.query, self.simd);
        // SAFETY: the mask covers row iq1 of the broadcast head (asserted), n_kv halves long.
        let mask = self.mask.map(|m| unsafe {
            std::slice::from_raw_parts(row_ptr(m, iq1, iq2 % m.ne[2], iq3 % m.ne[3]).cast::<u16>(), n_kv as usize)
        });

        let mut max = f32::NEG_INFINITY;
        let mut sum = 0.0f32;
        s.acc.fill(0.0);
        let mut start = keys.start;
        while start < keys.end {
            let n = (keys.end - start).min(BLOCK as i64) as usize;
            let scores = &mut s.scores[..n];
            self.score_block(start, mask, slope, (ik2, ik3), scores, s.query);
            let first_key = start;
            start += n as i64;

            let block_max = max_of(scores, self.simd);
            if block_max == f32::NEG_INFINITY {
                continue;
            }
            if block_max > max {
                let shrink = (max - block_max).exp();
                self.scale(s.acc, shrink);
                sum *= shrink;
                max = block_max;
            }
            sum += exp_row(scores, max, self.simd) as f32;
            for (j, &p) in scores.iter().enumerate() {
                if p != 0.0 {
                    self.add_value(Self::kv_row(v, first_key + j as i64, iv2, iv3), p, s.acc, s.value);
                }
            }
        }
        Partial { max, sum }
    }

    /// `acc += p * v` for a value row given as bytes, through `buf` where it needs
    /// converting.
    fn add_value(&self, bytes: &[u8], p: f32, acc: &mut [f32], buf: &mut [f32]) {
        match self.values {
            ValueRows::F32 => {
                // SAFETY: an F32 row of dv floats, 4-aligned like its tensor.
                let x = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), acc.len()) };
                self.axpy(acc, x, p);
            }
            ValueRows::F16 => {
                // SAFETY: an F16 row of dv halves, 2-aligned like its tensor.
                let x = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u16>(), acc.len()) };
                #[cfg(target_arch = "x86_64")]
                if self.simd {
                    // SAFETY: AVX2, FMA and F16C were detected (`use_avx2`).
                    return unsafe { avx2::axpy_f16(acc, x, p) };
                }
                simd::scalar::fp16_to_f32_row(x, buf);
                self.axpy(acc, buf, p);
            }
            ValueRows::Dequantize(to_float) => {
                // SAFETY: the row holds dv values of V's type and `buf` room for dv floats.
                unsafe { to_float(bytes.as_ptr().cast(), buf.as_mut_ptr(), buf.len() as i64) };
                self.axpy(acc, buf, p);
            }
        }
    }

    /// Adds the head's sink to the normalisation, divides the accumulated values by the sum
    /// of weights and writes them as query row `r`'s output.
    fn finish(&self, r: i64, partial: Partial, acc: &mut [f32]) {
        let (iq1, iq2, iq3) = self.query_index(r);
        let Partial { max, mut sum } = partial;
        if let Some(sinks) = self.sinks {
            let sink = sinks[iq2 as usize];
            if sink > max {
                let shrink = (max - sink).exp();
                self.scale(acc, shrink);
                sum = sum * shrink + 1.0;
            } else {
                sum += (sink - max).exp();
            }
        }
        let inv = if sum == 0.0 { 0.0 } else { 1.0 / sum };
        self.scale(acc, inv);
        // the result is permuted: head iq2 is dimension 1, query iq1 dimension 2
        // SAFETY: (iq2, iq1, iq3) is inside the result's shape, whose rows hold dv floats.
        unsafe {
            let out = row_ptr(self.dst, iq2, iq1, iq3).cast::<f32>();
            std::ptr::copy_nonoverlapping(acc.as_ptr(), out, acc.len());
        }
    }

    /// The decoding split: thread `ith` takes the `ith`-th slice of the keys for every query
    /// row and leaves `[max, sum, acc...]` at `partials[(row * nth + ith) * (2 + dv)..]`; after
    /// a barrier, thread `ith` merges the slices of rows `ith, ith + nth, ...`. `partials`
    /// points to room for `rows * nth` such records.
    fn split_keys(&self, params: &ComputeParams, rows: usize, partials: *mut f32, s: &mut Scratch) {
        let (nth, ith) = (params.nth, params.ith);
        let n_kv = self.k.ne[1];
        let dv = s.acc.len();
        let len = 2 + dv;
        let per_thread = (n_kv as usize).div_ceil(nth) as i64;
        let keys = (per_thread * ith as i64).min(n_kv)..(per_thread * (ith as i64 + 1)).min(n_kv);
        for r in 0..rows {
            // SAFETY: record (r, ith) is inside the partials and only this thread writes it.
            let slot = unsafe { std::slice::from_raw_parts_mut(partials.add((r * nth + ith) * len), len) };
            let partial = self.accumulate(r as i64, keys.clone(), s);
            slot[0] = partial.max;
            slot[1] = partial.sum;
            slot[2..].copy_from_slice(s.acc);
        }
        params.barrier();
        for r in (ith..rows).step_by(nth) {
            let mut merged = Partial { max: f32::NEG_INFINITY, sum: 0.0 };
            s.acc.fill(0.0);
            for t in 0..nth {
                // SAFETY: record (r, t) is inside the partials; every thread finished writing
                // before the barrier and nobody writes them any more.
                let slot = unsafe { std::slice::from_raw_parts(partials.add((r * nth + t) * len), len) };
                let (max, sum) = (slot[0], slot[1]);
                if sum == 0.0 {
                    continue;
                }
                let new_max = if merged.max > max { merged.max } else { max };
                let (old_scale, new_scale) = ((merged.max - new_max).exp(), (max - new_max).exp());
                for (a, &x) in s.acc.iter_mut().zip(&slot[2..]) {
                    *a = *a * old_scale + x * new_scale;
                }
                merged = Partial { max: new_max, sum: merged.sum * old_scale + sum * new_scale };
            }
            self.finish(r as i64, merged, s.acc);
        }
    }

    /// The scores of keys `start..start + scores.len()`: `-inf` where the mask is, else
    /// `scale * q·k` (soft-capped) plus the slope times the mask.
    fn score_block(
        &self,
        start: i64,
        mask: Option<&[u16]>,
        slope: f32,
        kv_head: (i64, i64),
        scores: &mut [f32],
        query: &[u8],
    ) {
        let mut live = [0usize; TILE];
        let mut n_live = 0;
        let dk = self.q.ne[0] as usize;
        let flush = |live: &[usize], scores: &mut [f32]| {
            let rows: [&[u8]; TILE] = std::array::from_fn(|t| {
                Self::kv_row(self.k, start + live[t.min(live.len() - 1)] as i64, kv_head.0, kv_head.1)
            });
            let mut out = [0.0f32; TILE];
            self.dot.tile(dk, &rows[..live.len()], &[query], &mut out, self.simd);
            for (&j, &d) in live.iter().zip(&out) {
                let mut s = d * self.scale;
                if self.softcap != 0.0 {
                    s = self.softcap * s.tanh();
                }
                scores[j] += s;
            }
        };
        for j in 0..scores.len() {
            let m = mask.map_or(0.0, |m| slope * fp16_to_fp32(m[start as usize + j]));
            scores[j] = m;
            if m == f32::NEG_INFINITY {
                continue;
            }
            live[n_live] = j;
            n_live += 1;
            if n_live == TILE {
                flush(&live, scores);
                n_live = 0;
            }
        }
        if n_live > 0 {
            flush(&live[..n_live], scores);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FLASH_ATTN_BACK

/// FLASH_ATTN_BACK: Q, K, V and the output gradient all F32, F32 result. (The graph
/// constructor of this op aborts in ggml 0.25.1, as ours does, so only a hand-built node gets
/// here.)
pub fn flash_attn_back_supports(node: &Tensor) -> bool {
    (0..4).all(|i| opt_src(node, i).is_some_and(|t| t.type_ == Type::F32)) && node.type_ == Type::F32
}

/// The reference's scratch for FLASH_ATTN_BACK: two rows of `max(D, keys rounded up to 4)`
/// floats, twice over, per task.
pub fn flash_attn_back_work_size(node: &Tensor, n_tasks: usize) -> usize {
    let (Some(q), Some(k)) = (opt_src(node, 0), opt_src(node, 1)) else { return 0 };
    if !matches!(k.type_, Type::F32 | Type::F16 | Type::BF16) {
        return 0;
    }
    let d = q.ne[0].max(0) as usize;
    let keys = (k.ne[1].max(0) as usize).next_multiple_of(4);
    2 * 4 * 2 * d.max(keys) * n_tasks
}

/// FLASH_ATTN_BACK, the gradient of the old fused attention `softmax(K q / sqrt(D)) V` with
/// `src = [q, k, v, d]`: `q` is `[D, N, H, ne3]`, `k` is `[D, M, Hk, ne3]` (M = P + N keys, P
/// of them from the past), `v` is transposed, `[M, D, Hk, ne3]`, and `d`, the gradient of the
/// output, is `[D, N, H, ne3]`; with `op_params[0] = 1` query `i` sees keys `0..=P + i` only.
/// The result holds the gradients of q, k and v one after another, each starting at a
/// multiple of 16 bytes, laid out packed (with ggml's quirk that the head strides of the k
/// and v gradients count Q's heads). Threads take whole K/V heads, each with the query heads
/// that share it.
pub fn flash_attn_back(params: &ComputeParams, dst: TensorPtr) {
    let (q, k, v, d) = (source(dst, 0), source(dst, 1), source(dst, 2), source(dst, 3));
    let masked = match dst.op_param_i32(0) {
        0 => false,
        1 => true,
        t => crate::ggml_abort!("flash_attn_back: bad masking flag {}", t),
    };
    crate::ggml_assert!(flash_attn_back_supports(&dst), "flash_attn_back: only F32 is supported");
    let [dim, n_q, n_head, ne3] = q.ne;
    let n_keys = k.ne[1];
    let n_past = n_keys - n_q;
    crate::ggml_assert!(n_past >= 0, "flash_attn_back: fewer keys than queries");
    crate::ggml_assert!(
        k.ne[0] == dim && v.ne[0] == n_keys && v.ne[1] == dim && d.ne[0] == dim && d.ne[1] == n_q,
        "flash_attn_back: shapes q {:?} k {:?} v {:?} d {:?} do not fit",
        q.ne,
        k.ne,
        v.ne,
        d.ne
    );
    crate::ggml_assert!(
        k.ne[2] > 0
            && n_head % k.ne[2] == 0
            && v.ne[2] >= k.ne[2]
            && d.ne[2] >= n_head
            && k.ne[3] <= ne3.min(v.ne[3]).min(d.ne[3]),
        "flash_attn_back: heads do not fit"
    );
    crate::ggml_assert!(
        q.nb[0] == 4 && k.nb[0] == 4 && v.nb[0] == 4 && dst.nb[0] == 4,
        "flash_attn_back: rows must be contiguous"
    );

    // the three gradients in the result
    let align = crate::core::context::MEM_ALIGN;
    let at_k = (4 * q.nelements() as usize).next_multiple_of(align);
    let at_v = at_k + (4 * k.nelements() as usize).next_multiple_of(align);
    let (n_kv_head, n_kv3) = (k.ne[2], k.ne[3]);
    let gq = [4 * dim, 4 * dim * n_q, 4 * dim * n_q * n_head].map(|b| b as usize);
    let gk = [4 * dim, 4 * dim * n_keys, 4 * dim * n_keys * n_head].map(|b| b as usize);
    let gv = [4 * n_keys, 4 * n_keys * dim, 4 * n_keys * dim * n_head].map(|b| b as usize);
    let extent = |at: usize, nb: [usize; 3], rows: i64, heads: i64, row_bytes: usize| {
        at + (rows as usize - 1) * nb[0] + (heads as usize - 1) * nb[1] + (n_kv3 as usize - 1) * nb[2] + row_bytes
    };
    if !q.is_empty() && !k.is_empty() {
        crate::ggml_assert!(
            extent(0, gq, n_q, n_head, 4 * dim as usize) <= at_k
                && extent(at_k, gk, n_keys, n_kv_head, 4 * dim as usize) <= at_v
                && extent(at_v, gv, dim, n_kv_head, 4 * n_keys as usize) <= dst.nbytes(),
            "flash_attn_back: result of {} bytes too small for the gradients, or they overlap",
            dst.nbytes()
        );
    }

    // this thread's scores and probabilities
    let m = n_keys as usize;
    // (packed, without cache-line padding: the reference's plan leaves no room for it when
    // the rows are short)
    let per_thread = 2 * 4 * m;
    let skip = params.wdata.align_offset(std::mem::align_of::<f32>());
    crate::ggml_assert!(
        !params.wdata.is_null() && params.wsize >= skip + per_thread * params.nth,
        "flash_attn_back: work buffer of {} bytes is too small",
        params.wsize
    );
    // SAFETY: past `skip` bytes the buffer holds nth slices of `per_thread` bytes (asserted);
    // each thread takes its own two float-aligned rows of m floats.
    let (scores, probs) = unsafe {
        let base = params.wdata.add(skip + per_thread * params.ith);
        (
            std::slice::from_raw_parts_mut(base.cast::<f32>(), m),
            std::slice::from_raw_parts_mut(base.add(4 * m).cast::<f32>(), m),
        )
    };

    if params.ith == 0 {
        // SAFETY: the result is a contiguous F32 tensor of nbytes bytes.
        unsafe { std::ptr::write_bytes(dst.data.cast::<u8>(), 0, dst.nbytes()) };
    }
    params.barrier();

    let simd_ok = use_avx2(params);
    let dot = |a: &[f32], b: &[f32]| if simd_ok { simd::dot_f32(a, b) } else { simd::scalar::dot_f32(a, b) };
    let axpy = |y: &mut [f32], x: &[f32], a: f32| {
        if simd_ok { simd::axpy_f32(y, x, a) } else { simd::scalar::axpy_f32(y, x, a) }
    };
    let scale = 1.0 / (dim as f32).sqrt();
    let dim = dim as usize;
    // SAFETY (for the closures): callers pass indices inside the tensors' shapes (the loops
    // below), whose rows are contiguous floats of the stated lengths.
    let row = |t: &Tensor, i1: i64, i2: i64, i3: i64, len: usize| unsafe {
        std::slice::from_raw_parts(row_ptr(t, i1, i2, i3).cast::<f32>(), len)
    };
    // SAFETY: as for `row`; the gradient rows lie inside the result (asserted above) and
    // each is written by the one thread that owns its K/V head.
    let grad = |at: usize, nb: [usize; 3], i1: i64, i2: i64, i3: i64, len: usize| unsafe {
        let offset = at + i1 as usize * nb[0] + i2 as usize * nb[1] + i3 as usize * nb[2];
        std::slice::from_raw_parts_mut(dst.data.cast::<u8>().add(offset).cast::<f32>(), len)
    };

    let groups = (n_kv_head * n_kv3) as usize;
    let per_group = groups.div_ceil(params.nth);
    let first = (per_group * params.ith).min(groups);
    let last = (first + per_group).min(groups);
    for g in first..last {
        let (ik2, ik3) = (g as i64 % n_kv_head, g as i64 / n_kv_head);
        for rep in 0..n_head / n_kv_head {
            let iq2 = ik2 + rep * n_kv_head;
            for iq1 in 0..n_q {
                let seen = if masked { (n_past + iq1 + 1) as usize } else { m };
                let q_row = row(&q, iq1, iq2, ik3, dim);
                let d_row = row(&d, iq1, iq2, ik3, dim);
                for (ic, s) in scores[..seen].iter_mut().enumerate() {
                    *s = dot(row(&k, ic as i64, ik2, ik3, dim), q_row) * scale;
                }
                // the attention weights
                let max = max_of(&scores[..seen], simd_ok);
                probs[..seen].copy_from_slice(&scores[..seen]);
                let sum = exp_row(&mut probs[..seen], max, simd_ok);
                let inv = (1.0 / sum) as f32;
                probs[..seen].iter_mut().for_each(|p| *p *= inv);
                // the gradient of the weights, then of the scores
                let dp = &mut scores[..seen];
                dp.fill(0.0);
                for (c, &dc) in d_row.iter().enumerate() {
                    axpy(dp, &row(&v, c as i64, ik2, ik3, m)[..seen], dc);
                }
                let centre = dot(&probs[..seen], dp);
                for (g, &p) in dp.iter_mut().zip(&probs[..seen]) {
                    *g = (*g - centre) * p * scale;
                }
                let gq_row = grad(0, gq, iq1, iq2, ik3, dim);
                for (ic, &g) in dp.iter().enumerate() {
                    axpy(gq_row, row(&k, ic as i64, ik2, ik3, dim), g);
                }
                for (ic, &g) in dp.iter().enumerate() {
                    axpy(grad(at_k, gk, ic as i64, ik2, ik3, dim), q_row, g);
                }
                for (c, &dc) in d_row.iter().enumerate() {
                    axpy(&mut grad(at_v, gv, c as i64, ik2, ik3, m)[..seen], &probs[..seen], dc);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use crate::cpu::kernels::simd::avx2::{load_f16, load_f32};
    use crate::quants::half::fp16_to_fp32;

    /// `acc[i] += a * x[i]` for a binary16 row, widened on the fly.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn axpy_f16(acc: &mut [f32], x: &[u16], a: f32) {
        let n = acc.len().min(x.len());
        let va = _mm256_set1_ps(a);
        let (px, pa) = (x.as_ptr(), acc.as_mut_ptr());
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: i + 8 <= n, inside both rows.
            unsafe { _mm256_storeu_ps(pa.add(i), _mm256_fmadd_ps(load_f16(px.add(i)), va, load_f32(pa.add(i)))) };
            i += 8;
        }
        for (y, &h) in acc[i..n].iter_mut().zip(&x[i..n]) {
            *y += fp16_to_fp32(h) * a;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::norm::testing::*;
    use super::*;
    use crate::core::context::Context;
    use crate::core::ops::attention as ops;

    /// Fills a contiguous tensor of any type with a row converter with uniform values and
    /// returns the values it then holds, as f64.
    fn fill_any(t: TensorPtr, rng: &mut Rng, lo: f32, hi: f32) -> Vec<f64> {
        let n = t.nelements() as usize;
        let x: Vec<f32> = (0..n).map(|_| rng.uniform(lo, hi)).collect();
        if t.type_ == Type::F32 {
            set(t, &x);
            return get(t);
        }
        let traits = type_traits(t.type_);
        let mut y = vec![0.0f32; n];
        // SAFETY: the tensor is contiguous and allocated, holding n values of its type.
        unsafe {
            (traits.from_float_ref.unwrap())(x.as_ptr(), t.data.cast(), n as i64);
            (traits.to_float.unwrap())(t.data.cast(), y.as_mut_ptr(), n as i64);
        }
        y.into_iter().map(f64::from).collect()
    }

    struct Case {
        dk: usize,
        dv: usize,
        n_head: usize,
        n_head_kv: usize,
        n_kv: usize,
        n_batch: usize,
        ne3: usize,
        k_type: Type,
        v_type: Type,
        mask: bool,
        max_bias: f32,
        softcap: f32,
        sinks: bool,
        /// Keys before this one are masked for every query.
        hide_before: usize,
    }

    impl Default for Case {
        fn default() -> Case {
            Case {
                dk: 64,
                dv: 64,
                n_head: 4,
                n_head_kv: 2,
                n_kv: 150,
                n_batch: 3,
                ne3: 1,
                k_type: Type::F16,
                v_type: Type::F16,
                mask: true,
                max_bias: 0.0,
                softcap: 0.0,
                sinks: false,
                hide_before: 0,
            }
        }
    }

    struct Built {
        node: TensorPtr,
        q: Vec<f64>,
        k: Vec<f64>,
        v: Vec<f64>,
        mask: Option<Vec<f64>>,
        sinks: Option<Vec<f64>>,
    }

    fn build(c: &mut Context, case: &Case, rng: &mut Rng) -> Built {
        let d = |n: usize| n as i64;
        let q = c.new_tensor(Type::F32, &[d(case.dk), d(case.n_batch), d(case.n_head), d(case.ne3)]);
        let k = c.new_tensor(case.k_type, &[d(case.dk), d(case.n_kv), d(case.n_head_kv), d(case.ne3)]);
        let v = c.new_tensor(case.v_type, &[d(case.dv), d(case.n_kv), d(case.n_head_kv), d(case.ne3)]);
        let qv = fill_any(q, rng, -1.0, 1.0);
        let kv = fill_any(k, rng, -1.0, 1.0);
        let vv = fill_any(v, rng, -1.0, 1.0);
        let (mask, mv) = if case.mask {
            // one mask for every head, per sample of dimension 3; causal-ish with holes
            let m = c.new_tensor(Type::F16, &[d(case.n_kv), d(case.n_batch), 1, d(case.ne3)]);
            let mut vals = Vec::new();
            for s in 0..case.ne3 {
                for i in 0..case.n_batch {
                    for j in 0..case.n_kv {
                        let hidden = j > case.n_kv - case.n_batch + i
                            || (j + s) % 7 == 3
                            || (i == 1 && s == 0)
                            || j < case.hide_before;
                        vals.push(if hidden { f32::NEG_INFINITY } else { rng.uniform(-1.0, 0.5) });
                    }
                }
            }
            set(m, &vals);
            (Some(m), Some(get(m)))
        } else {
            (None, None)
        };
        let node = ops::flash_attn_ext(c, q, k, v, mask, 0.125, case.max_bias, case.softcap);
        ops::flash_attn_ext_set_prec(node, Prec::F32);
        let sinks = case.sinks.then(|| {
            let s = c.new_tensor(Type::F32, &[d(case.n_head)]);
            let vals = random(s, rng, -2.0, 2.0);
            ops::flash_attn_ext_add_sinks(node, Some(s));
            vals
        });
        Built { node, q: qv, k: kv, v: vv, mask: mv, sinks }
    }

    /// softmax(scale q·k + slope mask) · v per query row, in f64, laid out as the result.
    fn reference(case: &Case, b: &Built) -> Vec<f64> {
        let alibi = Alibi::new(case.max_bias, case.n_head as i64);
        let (nb, nh, nkv, dk, dv) = (case.n_batch, case.n_head, case.n_kv, case.dk, case.dv);
        let mut out = vec![0.0; dv * nh * nb * case.ne3];
        for i3 in 0..case.ne3 {
            for h in 0..nh {
                let hk = h / (nh / case.n_head_kv);
                for i in 0..nb {
                    let q = &b.q[dk * (i + nb * (h + nh * i3))..][..dk];
                    let slope = f64::from(alibi.slope(h as u32));
                    let mut logits = Vec::new();
                    for j in 0..nkv {
                        let m = b.mask.as_ref().map_or(0.0, |m| m[j + nkv * (i + nb * i3)]);
                        let k = &b.k[dk * (j + nkv * (hk + case.n_head_kv * i3))..][..dk];
                        let mut s = 0.125 * q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>();
                        if case.softcap != 0.0 {
                            let c = f64::from(case.softcap);
                            s = c * (s / c).tanh();
                        }
                        logits.push(if m == f64::NEG_INFINITY { m } else { s + slope * m });
                    }
                    let sink = b.sinks.as_ref().map(|s| s[h]);
                    let max = logits.iter().copied().chain(sink).fold(f64::NEG_INFINITY, f64::max);
                    if max == f64::NEG_INFINITY {
                        continue;
                    }
                    let weights: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
                    let total: f64 = weights.iter().sum::<f64>() + sink.map_or(0.0, |s| (s - max).exp());
                    let o = &mut out[dv * (h + nh * (i + nb * i3))..][..dv];
                    for (j, w) in weights.iter().enumerate() {
                        let v = &b.v[dv * (j + nkv * (hk + case.n_head_kv * i3))..][..dv];
                        for (o, v) in o.iter_mut().zip(v) {
                            *o += w * v / total;
                        }
                    }
                }
            }
        }
        out
    }

    fn check(case: &Case, tolerance: f64) {
        for (use_ref, n_threads) in [(false, 3), (true, 2)] {
            let mut c = ctx();
            let mut rng = Rng::new(21);
            let b = build(&mut c, case, &mut rng);
            assert!(flash_attn_ext_supports(&b.node));
            run(
                &mut c,
                b.node,
                flash_attn_ext,
                n_threads,
                flash_attn_ext_work_size(&b.node, n_threads as usize),
                use_ref,
            );
            let got = get(b.node);
            let want = reference(case, &b);
            let e = nmse(&got, &want);
            assert!(
                e < tolerance,
                "K {} V {} bias {} softcap {} sinks {} ref {use_ref}: nmse {e}",
                case.k_type.name(),
                case.v_type.name(),
                case.max_bias,
                case.softcap,
                case.sinks
            );
            if case.mask && !case.sinks && case.n_batch > 1 {
                // query 1 of sample 0 sees no key at all: zeros
                let row = &got[case.dv * case.n_head..][..case.dv];
                assert!(row.iter().all(|&x| x == 0.0));
            }
        }
    }

    #[test]
    fn float_keys_and_values_match_naive_attention() {
        check(&Case { k_type: Type::F32, v_type: Type::F32, ..Case::default() }, 1e-10);
        check(&Case::default(), 1e-6);
        check(&Case { k_type: Type::F16, v_type: Type::F32, dv: 40, ..Case::default() }, 1e-6);
        check(&Case { k_type: Type::BF16, v_type: Type::BF16, ..Case::default() }, 1e-4);
    }

    #[test]
    fn options_match_naive_attention() {
        let f32s = |case: Case| Case { k_type: Type::F32, v_type: Type::F32, ..case };
        check(&f32s(Case { max_bias: 8.0, n_head: 6, n_head_kv: 3, ..Case::default() }), 1e-10);
        check(&f32s(Case { softcap: 2.0, ..Case::default() }), 1e-10);
        check(&f32s(Case { sinks: true, ..Case::default() }), 1e-10);
        check(&f32s(Case { mask: false, sinks: true, ne3: 2, n_kv: 70, ..Case::default() }), 1e-10);
        check(&f32s(Case { ne3: 2, dk: 40, dv: 24, n_head: 3, n_head_kv: 1, ..Case::default() }), 1e-10);
        check(&Case { sinks: true, max_bias: 4.0, softcap: 10.0, ..Case::default() }, 1e-6);
    }

    #[test]
    fn decoding_splits_the_keys_among_threads() {
        // two query rows, three threads: the keys are split (in the non-reference run)
        let decode = Case { n_batch: 1, n_head: 2, n_head_kv: 1, n_kv: 700, ..Case::default() };
        check(&Case { sinks: true, ..decode }, 1e-6);
        // the first thread's slice is fully masked
        check(&Case { hide_before: 300, ..decode }, 1e-6);
        check(&Case { mask: false, k_type: Type::F32, v_type: Type::F32, ..decode }, 1e-10);
    }

    #[test]
    fn quantized_keys_and_values_match_naive_attention() {
        check(&Case { k_type: Type::Q8_0, v_type: Type::Q8_0, ..Case::default() }, 1e-4);
        check(&Case { k_type: Type::Q4_0, v_type: Type::F16, ..Case::default() }, 1e-4);
        check(&Case { k_type: Type::Q4_1, v_type: Type::Q5_1, ..Case::default() }, 1e-4);
        check(&Case { k_type: Type::Q5_0, v_type: Type::Q4_0, n_kv: 64, ..Case::default() }, 1e-4);
    }

    /// The gradients of `sum(d * softmax(K q / sqrt(D)) V)` in f64, laid out as the result.
    #[test]
    fn flash_attn_back_matches_the_analytic_gradient() {
        let (dim, n_q, n_past, n_head, n_kv_head) = (8usize, 3usize, 4usize, 4usize, 2usize);
        let m = n_q + n_past;
        for masked in [false, true] {
            for use_ref in [false, true] {
                let mut c = ctx();
                let mut rng = Rng::new(31);
                let d = |n: usize| n as i64;
                let q = c.new_tensor(Type::F32, &[d(dim), d(n_q), d(n_head)]);
                let k = c.new_tensor(Type::F32, &[d(dim), d(m), d(n_kv_head)]);
                let v = c.new_tensor(Type::F32, &[d(m), d(dim), d(n_kv_head)]);
                let g = c.new_tensor(Type::F32, &[d(dim), d(n_q), d(n_head)]);
                let (qv, kv, vv, gv) = (
                    random(q, &mut rng, -1.0, 1.0),
                    random(k, &mut rng, -1.0, 1.0),
                    random(v, &mut rng, -1.0, 1.0),
                    random(g, &mut rng, -1.0, 1.0),
                );
                let (nq, nk) = (qv.len(), kv.len());
                let at_k = nq.next_multiple_of(4);
                let at_v = at_k + nk.next_multiple_of(4);
                let node = c.new_tensor(Type::F32, &[d(at_v + vv.len())]);
                node.get_mut().op = crate::core::op::Op::FLASH_ATTN_BACK;
                node.get_mut().op_params[0] = i32::from(masked);
                for (i, t) in [q, k, v, g].into_iter().enumerate() {
                    node.get_mut().src[i] = t.as_ptr();
                }
                assert!(flash_attn_back_supports(&node));
                run(&mut c, node, flash_attn_back, 3, flash_attn_back_work_size(&node, 3), use_ref);
                let got = get(node);

                let mut want = vec![0.0f64; got.len()];
                let scale = 1.0 / (dim as f64).sqrt();
                for h in 0..n_head {
                    let hk = h % n_kv_head;
                    for i in 0..n_q {
                        let seen = if masked { n_past + i + 1 } else { m };
                        let qi = &qv[dim * (i + n_q * h)..][..dim];
                        let gi = &gv[dim * (i + n_q * h)..][..dim];
                        let key = |j: usize| &kv[dim * (j + m * hk)..][..dim];
                        let val = |c: usize, j: usize| vv[j + m * (c + dim * hk)];
                        let s: Vec<f64> =
                            (0..seen).map(|j| scale * key(j).iter().zip(qi).map(|(a, b)| a * b).sum::<f64>()).collect();
                        let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        let total: f64 = s.iter().map(|x| (x - max).exp()).sum();
                        let p: Vec<f64> = s.iter().map(|x| (x - max).exp() / total).collect();
                        let dp: Vec<f64> = (0..seen).map(|j| (0..dim).map(|c| val(c, j) * gi[c]).sum()).collect();
                        let centre: f64 = p.iter().zip(&dp).map(|(a, b)| a * b).sum();
                        for j in 0..seen {
                            let ds = p[j] * (dp[j] - centre) * scale;
                            for c in 0..dim {
                                want[dim * (i + n_q * h) + c] += ds * key(j)[c];
                                want[at_k + dim * (j + m * hk) + c] += ds * qi[c];
                                want[at_v + j + m * (c + dim * hk)] += p[j] * gi[c];
                            }
                        }
                    }
                }
                let e = nmse(&got, &want);
                assert!(e < 1e-10, "masked {masked} ref {use_ref}: nmse {e}");
            }
        }
    }

    #[test]
    fn work_size_is_the_reference_plan() {
        let mut c = ctx();
        let mut rng = Rng::new(3);
        let b = build(&mut c, &Case { dk: 128, dv: 64, n_head: 32, ..Case::default() }, &mut rng);
        let prefill = 4 * (64 * 128 + 2 * 64 * 64 + 64 * 64 + 64 * 64 + 64 * 128) * 4;
        assert_eq!(flash_attn_ext_work_size(&b.node, 4), prefill);
        let decode = 4 * (32 * 4 * 66 + 4 * (128 + 128));
        assert!(decode < prefill);
    }
}
