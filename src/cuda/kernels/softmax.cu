// SOFT_MAX of F32 rows: softmax(x * scale + slope * mask), with an optional attention sink
// per head that joins the normalisation but not the output. One block per row.
// shared-memory budget: 128 bytes
#include "prelude.cuh"

// Rows of `x` and `dst` are packed; the mask (F32 or F16, `mask` null for none) has a row per
// row of a head and repeats over heads and sequences; `sinks` (F32, null for none) holds one
// value per head (dimension 2).
extern "C" __global__ void soft_max_f32(shape sx, const char * x, shape sm, const char * mask, int mask_type,
                                        const float * sinks, shape sd, char * d, float scale, float max_bias,
                                        int n_head_log2, float m0, float m1) {
    __shared__ float scratch[WARP_SIZE];
    const i64 n = sx.ne[0];
    for (i64 r = blockIdx.x; r < shape_rows(sx); r += gridDim.x) {
        const i64 i1 = r % sx.ne[1];
        const i64 i2 = (r / sx.ne[1]) % sx.ne[2];
        const i64 i3 = r / (sx.ne[1] * sx.ne[2]);
        const float * row = (const float *) (x + shape_offset(sx, 0, i1, i2, i3));
        float * out = (float *) (d + shape_offset(sd, 0, i1, i2, i3));
        const char * mrow = mask ? mask + shape_offset(sm, 0, i1 % sm.ne[1], i2 % sm.ne[2], i3 % sm.ne[3]) : nullptr;
        const float slope = alibi_slope(max_bias, (int) i2, n_head_log2, m0, m1);

        // pass 1: the largest logit (and the sink)
        float max = NEG_INF;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            float v = row[i] * scale;
            if (mrow) {
                v += slope * (mask_type == TYPE_F16 ? load_f16(mrow + 2 * i) : load_f32(mrow + 4 * i));
            }
            out[i] = v;
            max = fmaxf(max, v);
        }
        max = block_max(max, scratch);
        const float sink = sinks ? sinks[i2] : NEG_INF;
        max = fmaxf(max, sink);

        // pass 2: exponentials and their sum
        float sum = 0.0f;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            const float e = expf(out[i] - max);
            out[i] = e;
            sum += e;
        }
        sum = block_sum(sum, scratch);
        if (sinks) {
            sum += expf(sink - max);
        }

        // pass 3: normalise (a row of -inf everywhere gives 0/0, as on the CPU)
        const float inv = 1.0f / sum;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            out[i] *= inv;
        }
    }
}
