// FLASH_ATTN_EXT: softmax(scale * K q + slope * mask) V for each query row, with logit
// soft-capping, ALiBi slopes, key/value heads shared by groups of query heads and an optional
// sink per head, without materialising the scores: one block per query row walks the keys in
// chunks with an online softmax (a running maximum M and sum S, the weighted values rescaled
// whenever M grows).
// shared-memory budget: 5632 bytes
#include "prelude.cuh"

// The largest head size (of K and of V) the kernel holds; the host refuses larger ones.
#define ATTN_MAX_D 576
// The most threads a block: each scores one key of a chunk before the chunk's values are
// weighed in, one score per key in shared memory.
#define ATTN_CHUNK 128

// The node's settings: op params 0..2 and ALiBi's constants (see alibi_slope).
struct attention_params {
    float scale;
    float max_bias;
    float logit_softcap;
    int n_head_log2;
    float m0;
    float m1;
};

// q F32 [d_k, n_q, n_head, n_seq]; k [d_k, n_kv, n_head_kv, n_seq'] and v [d_v, n_kv,
// n_head_v, n_seq''] of `k_type`/`v_type` (any type of the prelude, rows whole blocks),
// shared by n_head / n_head_kv query heads and n_seq / n_seq' sequences; mask F16 [n_kv, >= n_q, m2, m3] (null for none)
// repeating over heads and sequences; sinks F32 [n_head] (null for none). The result F32 is
// permuted: dst[:, head, row, seq]. Any row strides (elements of a row are packed, as on the
// CPU). d_k and d_v at most
// ATTN_MAX_D (checked by the host). Grid: any number of blocks, each taking query rows
// blockIdx.x, blockIdx.x + gridDim.x, ...; blockDim.x at most ATTN_CHUNK.
extern "C" __global__ void flash_attn_ext(attention_params p, shape sq, const char * q, shape sk, const char * k, int k_type,
                                          shape sv, const char * v, int v_type, shape sm, const char * mask,
                                          const float * sinks, shape sd, char * d) {
    __shared__ float query[ATTN_MAX_D];
    // the weighted values of the row, each element owned by one thread for the whole walk
    __shared__ float acc[ATTN_MAX_D];
    __shared__ float score[ATTN_CHUNK];
    __shared__ float weight[ATTN_CHUNK];

    const i64 dk = sk.ne[0];
    const i64 dv = sv.ne[0];
    const i64 n_kv = sk.ne[1];
    // soft-capping computes cap * tanh(s * (scale / cap)), as the CPU does
    const float scale = p.logit_softcap != 0.0f ? p.scale / p.logit_softcap : p.scale;

    for (i64 r = blockIdx.x; r < shape_rows(sq); r += gridDim.x) {
        const i64 iq1 = r % sq.ne[1];
        const i64 iq2 = (r / sq.ne[1]) % sq.ne[2];
        const i64 iq3 = r / (sq.ne[1] * sq.ne[2]);
        const char * krows = k + (iq2 / (sq.ne[2] / sk.ne[2])) * sk.nb[2] + (iq3 / (sq.ne[3] / sk.ne[3])) * sk.nb[3];
        const char * vrows = v + (iq2 / (sq.ne[2] / sv.ne[2])) * sv.nb[2] + (iq3 / (sq.ne[3] / sv.ne[3])) * sv.nb[3];
        const char * mrow = mask ? mask + shape_offset(sm, 0, iq1, iq2 % sm.ne[2], iq3 % sm.ne[3]) : nullptr;
        const float slope = alibi_slope(p.max_bias, (int) iq2, p.n_head_log2, p.m0, p.m1);

        for (i64 i = threadIdx.x; i < dk; i += blockDim.x) {
            query[i] = load_f32(q + shape_offset(sq, i, iq1, iq2, iq3));
        }
        for (i64 i = threadIdx.x; i < dv; i += blockDim.x) {
            acc[i] = 0.0f;
        }
        __syncthreads();

        // every thread keeps the same M and S: each reads the same scores in the same order
        float max = NEG_INF;
        float sum = 0.0f;
        for (i64 c0 = 0; c0 < n_kv; c0 += blockDim.x) {
            const int n = (int) min((i64) blockDim.x, n_kv - c0);

            // a thread per key, so that scoring needs no exchange between threads. A key the
            // mask hides scores -inf and its row is never read (a cache's unused rows may hold
            // anything).
            if ((int) threadIdx.x < n) {
                const i64 ic = c0 + threadIdx.x;
                const float m = mrow ? slope * load_f16(mrow + ic * sm.nb[0]) : 0.0f;
                float s = NEG_INF;
                if (m != NEG_INF) {
                    const char * key = krows + ic * sk.nb[1];
                    float dot = 0.0f;
                    for (i64 i = 0; i < dk; ++i) {
                        dot += query[i] * row_value(k_type, key, i);
                    }
                    s = dot * scale;
                    if (p.logit_softcap != 0.0f) {
                        s = p.logit_softcap * tanhf(s);
                    }
                    s += m;
                }
                score[threadIdx.x] = s;
            }
            __syncthreads();

            float chunk_max = NEG_INF;
            for (int j = 0; j < n; ++j) {
                chunk_max = fmaxf(chunk_max, score[j]);
            }
            const float new_max = fmaxf(max, chunk_max);
            if (new_max == NEG_INF) {
                __syncthreads();  // every key so far hidden; scores are rewritten next
                continue;
            }
            for (int j = threadIdx.x; j < n; j += blockDim.x) {
                weight[j] = score[j] == NEG_INF ? 0.0f : expf(score[j] - new_max);
            }
            __syncthreads();

            const float grow = expf(max - new_max);  // 0 while max is -inf
            float chunk_sum = 0.0f;
            for (int j = 0; j < n; ++j) {
                chunk_sum += weight[j];
            }
            sum = sum * grow + chunk_sum;
            max = new_max;
            // each thread its own elements of the values: consecutive threads read
            // consecutive elements of a value row. Keys of weight 0 (hidden, or too small to
            // count) are skipped, so hidden rows are never read.
            for (i64 i = threadIdx.x; i < dv; i += blockDim.x) {
                float a = acc[i] * grow;
                for (int j = 0; j < n; ++j) {
                    const float w = weight[j];
                    if (w != 0.0f) {
                        a += w * row_value(v_type, vrows + (c0 + j) * sv.nb[1], i);
                    }
                }
                acc[i] = a;
            }
            __syncthreads();  // scores and weights are rewritten next
        }

        // the sink: one more logit with no value row
        float grow = 1.0f;
        if (sinks) {
            const float s = sinks[iq2];
            if (s > max) {
                grow = expf(max - s);
                sum = sum * grow + 1.0f;
            } else {
                sum += expf(s - max);
            }
        }
        // a row that sees no key (and no sink) is 0, as on the CPU
        const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
        for (i64 i = threadIdx.x; i < dv; i += blockDim.x) {
            store_f32(d + shape_offset(sd, i, iq2, iq1, iq3), acc[i] * grow * inv);
        }
        __syncthreads();  // the next row rewrites the query
    }
}
