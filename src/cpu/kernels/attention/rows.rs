//! ggml's "one chunk" way: each query row walks its keys one at a time, keeping the online
//! softmax's running maximum `M` and sum of weights `S`:
//!
//! ```text
//! s = K_j·q (K's vec_dot, q converted to its activation type) * scale, soft-capped, + slope * mask_j
//! if s > M:  M = s, scale the accumulator by e^(M_old - M), w = 1
//! else:      w = e^(s - M)
//! accumulator += w * V_j;  S = S * e^(M_old - M) + w   (one fused multiply-add)
//! ```
//!
//! Keys whose mask is `-inf` are skipped. The accumulator is binary16 when V is F16 (rounded
//! as [`super::half`] says), `f32` otherwise. Then the sink, if any, joins as one more logit
//! with no value row, and the accumulator is divided by `S`.
//!
//! Consecutive rows that read the same key and value heads (a batch of one head, or the query
//! heads of one K/V head) walk the keys together, up to [`GROUP`] of them: each key and value
//! row is read once for the group, and the rows' dot products are computed side by side. Each
//! row's arithmetic is the same as alone.
//!
//! Decoding splits the keys among threads instead ([`Attention::split_keys`]): each thread
//! walks its slice for every head, leaving `M`, `S` and the accumulator, and the slices are
//! merged in order after a barrier.

use std::ops::Range;

use super::half::{GROUP, QueryTails};

/// Keys whose dot products are computed before their weights are.
const KEY_BLOCK: usize = 16;
use super::{Attention, PAD_FLOATS, ValueRows, mad_f32, row_stride, scale_f32, view, work_floats};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::dot::{quantize_row_q8_0, quantize_row_q8_1};
use crate::cpu::kernels::{prefetch, simd};
use crate::quants::half::Bf16;
use crate::quants::q8::{BlockQ8_0, BlockQ8_1};

/// `out`'s bytes as `n` values of a plain-data type.
fn typed<T: Copy>(out: &mut [u8], n: usize) -> &mut [T] {
    crate::ggml_assert!(
        out.len() >= n * std::mem::size_of::<T>() && out.as_ptr().cast::<T>().is_aligned(),
        "flash_attn_ext: buffer too small or misaligned"
    );
    // SAFETY: the bytes are enough and aligned for `n` values (asserted), the types used here
    // (halves, bfloat16, Q8 blocks) are plain data valid for any bytes, and the result
    // borrows `out` exclusively.
    unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<T>(), n) }
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

/// One thread's scratch for a group of rows: per row the accumulator as floats, a second row
/// of floats (the binary16 accumulator; row 0's also a value row as floats) and the converted
/// query. With room for one row it is ggml's layout.
pub(super) struct GroupScratch<'a> {
    capacity: usize,
    dv: usize,
    query_floats: usize,
    acc: &'a mut [f32],
    aux: &'a mut [f32],
    queries: &'a mut [f32],
}

impl<'a> GroupScratch<'a> {
    /// The floats one row takes.
    fn row_floats(query_bytes: usize, dv: usize) -> usize {
        2 * dv + query_bytes.div_ceil(4)
    }

    /// As many rows (up to [`GROUP`]) as fit in `floats`, which must hold one.
    pub(super) fn of(floats: &'a mut [f32], query_bytes: usize, dv: usize) -> GroupScratch<'a> {
        let capacity = (floats.len() / Self::row_floats(query_bytes, dv)).min(GROUP);
        crate::ggml_assert!(capacity > 0, "flash_attn_ext: row scratch too small");
        let (acc, rest) = floats.split_at_mut(capacity * dv);
        let (aux, queries) = rest.split_at_mut(capacity * dv);
        GroupScratch { capacity, dv, query_floats: query_bytes.div_ceil(4), acc, aux, queries }
    }

    /// Row `r`'s accumulator as floats.
    fn acc(&mut self, r: usize) -> &mut [f32] {
        &mut self.acc[r * self.dv..][..self.dv]
    }
}

/// The rows' binary16 accumulators, in the second rows of floats (which F16 values need for
/// nothing else): row `r`'s at `r * 2 * dv` halves.
fn halves(aux: &mut [f32]) -> &mut [u16] {
    // SAFETY: n floats are room for 2n halves, suitably aligned; exclusively borrowed.
    unsafe { std::slice::from_raw_parts_mut(aux.as_mut_ptr().cast::<u16>(), 2 * aux.len()) }
}

/// Row `r`'s binary16 accumulator ([`halves`]).
fn acc16(aux: &mut [f32], dv: usize, r: usize) -> &mut [u16] {
    &mut halves(aux)[r * 2 * dv..][..dv]
}

/// A query row's online softmax after some keys: the largest score and the sum of the
/// weights relative to it (the weighted values are in the group's accumulator).
#[derive(Clone, Copy, Debug)]
pub(super) struct Partial {
    pub max: f32,
    pub sum: f32,
}

impl Attention<'_> {
    /// The bytes of a query row in the activation type of K's dot product.
    fn query_bytes(&self) -> usize {
        self.dot.vec_dot_type.row_size(self.dk as i64)
    }

    /// Query rows `rows`, each over all keys, written to the result.
    pub(super) fn rows(&self, rows: Range<usize>, scratch: &mut [f32]) {
        let mut g = GroupScratch::of(scratch, self.query_bytes(), self.dv);
        let mut first = rows.start;
        while first < rows.end {
            let members = self.group(first..rows.end, g.capacity);
            let parts = self.walk(&members, 0..self.n_kv, &mut g);
            for (i, (&r, part)) in members.iter().zip(&parts).enumerate() {
                let acc = g.acc(i);
                let inv = if part.sum == 0.0 { 0.0 } else { 1.0 / part.sum };
                scale_f32(acc, inv);
                self.write(r, acc);
            }
            first += members.len();
        }
    }

    /// The rows at the start of `rows` (at most `capacity`) that read the same key and value
    /// heads as the first.
    fn group(&self, rows: Range<usize>, capacity: usize) -> Vec<usize> {
        let heads = |r: usize| {
            let (_, iq2, iq3) = self.query_index(r);
            (self.kv_head(self.k, iq2, iq3), self.kv_head(self.v, iq2, iq3))
        };
        let lead = heads(rows.start);
        rows.take(capacity).take_while(|&r| heads(r) == lead).collect()
    }

    /// Walks keys `keys` for query rows `rows` (which read the same key and value heads),
    /// leaving row `i`'s weighted values as floats in the group's accumulator `i`; the sink
    /// joins when the keys start at 0.
    fn walk(&self, rows: &[usize], keys: Range<usize>, g: &mut GroupScratch) -> Vec<Partial> {
        #[cfg(target_arch = "x86_64")]
        if self.simd {
            // SAFETY: `simd` is set only where AVX2, FMA and F16C were detected.
            return unsafe { self.walk_avx2(rows, keys, g) };
        }
        self.walk_body(rows, keys, g)
    }

    /// [`Self::walk_body`] compiled for AVX2 and FMA, so that its own `f32` arithmetic (the
    /// fused update of `S`) is inlined.
    ///
    /// # Safety
    /// The processor supports AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn walk_avx2(&self, rows: &[usize], keys: Range<usize>, g: &mut GroupScratch) -> Vec<Partial> {
        self.walk_body(rows, keys, g)
    }

    #[inline(always)]
    fn walk_body(&self, rows: &[usize], keys: Range<usize>, g: &mut GroupScratch) -> Vec<Partial> {
        let (n, dk, dv) = (rows.len(), self.dk, self.dv);
        crate::ggml_assert!(n > 0 && n <= g.capacity, "flash_attn_ext: bad row group");
        let at: Vec<(usize, usize, usize)> = rows.iter().map(|&r| self.query_index(r)).collect();
        let slopes: Vec<f32> = at.iter().map(|a| self.alibi.slope(a.1 as u32)).collect();
        let masks: Vec<Option<&[u16]>> = at.iter().map(|&a| self.mask_row(a)).collect();
        let (k_head, v_head) = (self.kv_head(self.k, at[0].1, at[0].2), self.kv_head(self.v, at[0].1, at[0].2));
        let (query_bytes, query_floats) = (self.query_bytes(), g.query_floats);
        let half_values = matches!(self.values, ValueRows::F16);
        for (i, &a) in at.iter().enumerate() {
            let floats = &mut g.queries[i * query_floats..][..query_floats];
            // SAFETY: the floats are plain memory; viewing them as bytes keeps the exclusive
            // borrow.
            let bytes = unsafe { std::slice::from_raw_parts_mut(floats.as_mut_ptr().cast::<u8>(), query_bytes) };
            convert_query(self.query_row(a), self.dot.vec_dot_type, bytes, self.simd);
            if half_values {
                acc16(g.aux, dv, i).fill(0);
            } else {
                g.acc(i).fill(0.0);
            }
        }
        let GroupScratch { acc, aux, queries, .. } = g;
        let query = |i: usize| -> &[u8] {
            // SAFETY: as above, read-only now.
            unsafe { std::slice::from_raw_parts(queries[i * query_floats..].as_ptr().cast::<u8>(), query_bytes) }
        };
        let f16_keys = self.k.type_ == Type::F16;
        let half_queries: Vec<&[u16]> =
            if f16_keys { (0..n).map(|i| view(query(i), dk)).collect() } else { Vec::new() };
        let tails: Option<QueryTails> = f16_keys.then(|| self.half.query_tails(&half_queries));

        let mut max = [f32::NEG_INFINITY; GROUP];
        let mut sum = [0.0f32; GROUP];
        // a block of keys' masked slopes and dot products first, then their weights: the
        // dot products of a block do not wait for each other
        let mut masked = [[0.0f32; GROUP]; KEY_BLOCK];
        let mut dots = [[0.0f32; GROUP]; KEY_BLOCK];
        let mut seen = [false; KEY_BLOCK];
        let first_key = keys.start;
        for block in (keys.start..keys.end).step_by(KEY_BLOCK) {
            let block_keys = block..(block + KEY_BLOCK).min(keys.end);
            // the block's mask values, widened once per mask row (a group's rows mostly share one)
            let mut mask_values = [[0.0f32; KEY_BLOCK]; GROUP];
            for i in 0..n {
                if let Some(m) = masks[i] {
                    if i > 0 && masks[i - 1].is_some_and(|p| std::ptr::eq(p, m)) {
                        mask_values[i] = mask_values[i - 1];
                    } else {
                        simd::fp16_to_f32_row(&m[block_keys.clone()], &mut mask_values[i]);
                    }
                }
            }
            // the block's keys that some row sees, for the binary16 dot products (taken together)
            let (mut live, mut live_keys) = ([0usize; KEY_BLOCK], [&[] as &[u16]; KEY_BLOCK]);
            let mut n_live = 0;
            for (j, ic) in block_keys.clone().enumerate() {
                let masked = &mut masked[j];
                let mut any = false;
                for i in 0..n {
                    masked[i] = if masks[i].is_some() { slopes[i] * mask_values[i][j] } else { 0.0 };
                    any |= masked[i] != f32::NEG_INFINITY;
                }
                seen[j] = any;
                if !any {
                    continue;
                }
                let key = self.key_row(ic, k_head);
                // the key's value row is read after the block's dot products: ask for it now,
                // so that its load overlaps them (a decoding step reads each row once, from
                // beyond the second-level cache)
                let row = self.value_row(ic, v_head);
                prefetch::lines(row.as_ptr(), row.len(), prefetch::Cache::L1);
                if tails.is_some() {
                    (live[n_live], live_keys[n_live]) = (j, view(key, dk));
                    n_live += 1;
                } else {
                    for i in (0..n).filter(|&i| masked[i] != f32::NEG_INFINITY) {
                        dots[j][i] = self.dot.dot(dk, key, query(i), self.simd);
                    }
                }
            }
            if let Some(tails) = &tails {
                let mut live_dots = [[0.0f32; GROUP]; KEY_BLOCK];
                self.half.dot_rows(&live_keys[..n_live], &half_queries, tails, &mut live_dots);
                for (&j, d) in live[..n_live].iter().zip(live_dots) {
                    dots[j] = d;
                }
            }
            for (j, ic) in block_keys.enumerate().filter(|&(j, _)| seen[j]) {
                let value = self.value_row(ic, v_head);
                if let ValueRows::Dequantize(to_float) = self.values {
                    // SAFETY: the row holds dv values of V's type and `aux` room for dv floats.
                    unsafe { to_float(value.as_ptr().cast(), aux.as_mut_ptr(), dv as i64) };
                }
                // each row's weight of the key (its accumulator rescaled first where the key
                // raises its maximum), then the value row is added to them all
                let mut weights = [(0, 0.0f32); GROUP];
                let mut weighted = 0;
                for i in (0..n).filter(|&i| masked[j][i] != f32::NEG_INFINITY) {
                    let score = self.finish_score(dots[j][i], masked[j][i]);
                    let (grow, weight) = if score > max[i] {
                        let grow = (max[i] - score).exp();
                        max[i] = score;
                        if half_values {
                            self.half.scale(acc16(aux, dv, i), grow);
                        } else {
                            scale_f32(&mut acc[i * dv..][..dv], grow);
                        }
                        (grow, 1.0)
                    } else {
                        (1.0, (score - max[i]).exp())
                    };
                    sum[i] = grow.mul_add(sum[i], weight);
                    weights[weighted] = (i, weight);
                    weighted += 1;
                }
                let weights = &weights[..weighted];
                match self.values {
                    ValueRows::F16 => self.half.mad_rows(halves(aux), 2 * dv, dv, view(value, dv), weights),
                    ValueRows::F32 => {
                        for &(i, weight) in weights {
                            mad_f32(&mut acc[i * dv..][..dv], view(value, dv), weight, self.simd);
                        }
                    }
                    ValueRows::Dequantize(_) => {
                        for &(i, weight) in weights {
                            mad_f32(&mut acc[i * dv..][..dv], &aux[..dv], weight, self.simd);
                        }
                    }
                }
            }
        }

        (0..n)
            .map(|i| {
                let acc = &mut acc[i * dv..][..dv];
                if half_values {
                    simd::fp16_to_f32_row(acc16(aux, dv, i), acc);
                }
                let (mut max, mut sum) = (max[i], sum[i]);
                if let Some(sink) = self.sinks.filter(|_| first_key == 0).map(|sinks| sinks[at[i].1]) {
                    // one more logit with no value row (not fused, unlike the keys' update)
                    if sink > max {
                        let grow = (max - sink).exp();
                        max = sink;
                        scale_f32(acc, grow);
                        sum = sum * grow + 1.0;
                    } else {
                        sum += (sink - max).exp();
                    }
                }
                Partial { max, sum }
            })
            .collect()
    }

    /// The decoding split: with `nth` threads, thread `ith` takes keys `[ith * c, (ith + 1) *
    /// c)` (`c = ceil(n_kv / nth)`) for every head and leaves `[M, S, acc...]` as record
    /// `head * nth + ith` after the threads' row scratch; after a barrier, thread `ith` merges
    /// the records of heads `ith, ith + nth, ...` in key order and writes them.
    pub(super) fn split_keys(&self, params: &ComputeParams) {
        let (nth, ith) = (params.nth, params.ith);
        let (dk, dv, n_kv) = (self.dk, self.dv, self.n_kv);
        let n_head = self.q.ne[2] as usize;
        let stride = row_stride(dk, dv);
        let record = 2 + dv;
        let records_at = stride * nth;
        // a whole group's scratch after the records if the buffer has room, else ggml's
        let group_floats = GROUP * GroupScratch::row_floats(self.query_bytes(), dv);
        let spare_at = records_at + n_head * nth * record;
        let skip = params.wdata.align_offset(std::mem::align_of::<f32>());
        // SAFETY: each thread takes its own part of the space after the records, or its own
        // stride before them.
        let scratch = unsafe {
            if params.wsize >= skip + 4 * (spare_at + nth * group_floats) {
                work_floats(params, spare_at + ith * group_floats, group_floats)
            } else {
                work_floats(params, stride * ith, stride - PAD_FLOATS)
            }
        };
        let mut g = GroupScratch::of(scratch, self.query_bytes(), dv);
        let chunk = n_kv.div_ceil(nth);
        let keys = (chunk * ith).min(n_kv)..(chunk * (ith + 1)).min(n_kv);
        let mut first = 0;
        while first < n_head {
            let members = self.group(first..n_head, g.capacity);
            let parts = if keys.is_empty() {
                vec![Partial { max: f32::NEG_INFINITY, sum: 0.0 }; members.len()]
            } else {
                self.walk(&members, keys.clone(), &mut g)
            };
            for (i, (&head, part)) in members.iter().zip(&parts).enumerate() {
                // SAFETY: this thread's record of the head, written by it alone, no other
                // slice of it alive.
                let slot = unsafe { work_floats(params, records_at + (head * nth + ith) * record, record) };
                slot[0] = part.max;
                slot[1] = part.sum;
                if !keys.is_empty() {
                    slot[2..].copy_from_slice(g.acc(i));
                }
            }
            first += members.len();
        }
        params.barrier();

        for head in (ith..n_head).step_by(nth) {
            let (mut max, mut sum) = (f32::NEG_INFINITY, 0.0f32);
            let acc = g.acc(0);
            acc.fill(0.0);
            for t in (0..nth).filter(|t| t * chunk < n_kv) {
                // SAFETY: the records were written before the barrier and nobody writes them
                // any more; each head's records are read by one thread, one at a time.
                let slot = unsafe { work_floats(params, records_at + (head * nth + t) * record, record) };
                let (m, part_sum) = (slot[0], slot[1]);
                if part_sum == 0.0 {
                    continue;
                }
                let new_max = max.max(m);
                let (old_scale, new_scale) = ((max - new_max).exp(), (m - new_max).exp());
                for (a, &x) in acc.iter_mut().zip(&slot[2..]) {
                    *a = a.mul_add(old_scale, x * new_scale);
                }
                sum = sum.mul_add(old_scale, part_sum * new_scale);
                max = new_max;
            }
            if sum != 0.0 {
                scale_f32(acc, 1.0 / sum);
            }
            self.write(head, acc);
        }
    }
}
