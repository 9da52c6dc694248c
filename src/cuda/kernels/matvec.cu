// MUL_MAT of a few activation columns (1 to 8, token generation and small batches), and
// MUL_MAT_ID of one column per expert slot: a warp per weight row reads each weight once, for
// every column at once. Weights F32, F16, BF16 or any block format of the prelude (32-value
// blocks and 256-value super-blocks); activations and result F32.
// shared-memory budget: 0 bytes
#include "prelude.cuh"

#define MAX_COLS 8

// Adds the products of the weights of group `g` of a weight row of `k` values (its 32 values,
// or those left at the end of a float row) with the matching values of each column. `x`
// points at the group's first value in column 0; columns are `x_stride` floats apart.
__device__ __forceinline__ void group_dot(int type, const char * row, i64 k, i64 g, const float * x, i64 x_stride,
                                          int ncols, float acc[MAX_COLS]) {
    float v[32];
    const int n = group_values(type, row, k, g, v);
#pragma unroll
    for (int c = 0; c < MAX_COLS; ++c) {
        if (c < ncols) {
            float s = 0.0f;
            for (int j = 0; j < n; ++j) {
                s += v[j] * x[c * x_stride + j];
            }
            acc[c] += s;
        }
    }
}

// dst[m, n, i12, i13] = sum_k w[k, m, i12 / r2, i13 / r3] * x[k, n, i12, i13] for n < ncols
// (= x.ne[1] <= 8). The rows of `w` are packed, whole blocks of a block type;
// the columns of `x` are packed F32 rows. Grid: x = weight rows / warps per block,
// y = x.ne[2] * x.ne[3]; each warp takes one weight row.
extern "C" __global__ void mul_mat_vec(shape sw, const char * w, int type, shape sx, const char * x, shape sd, char * d) {
    const int warps = blockDim.x / WARP_SIZE;
    const i64 m = (i64) blockIdx.x * warps + threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    if (m >= sw.ne[1]) {
        return;  // the whole warp leaves together
    }
    const i64 i12 = blockIdx.y % sx.ne[2];
    const i64 i13 = blockIdx.y / sx.ne[2];
    const i64 i02 = i12 / (sx.ne[2] / sw.ne[2]);
    const i64 i03 = i13 / (sx.ne[3] / sw.ne[3]);
    const char * row = w + m * sw.nb[1] + i02 * sw.nb[2] + i03 * sw.nb[3];
    const float * col = (const float *) (x + i12 * sx.nb[2] + i13 * sx.nb[3]);
    const i64 x_stride = sx.nb[1] / 4;
    const int ncols = (int) sx.ne[1];

    float acc[MAX_COLS] = { 0.0f };
    const i64 groups = (sw.ne[0] + 31) / 32;
    for (i64 g = lane; g < groups; g += WARP_SIZE) {
        group_dot(type, row, sw.ne[0], g, col + 32 * g, x_stride, ncols, acc);
    }
#pragma unroll
    for (int n = 0; n < MAX_COLS; ++n) {
        acc[n] = warp_sum(acc[n]);
    }
    if (lane == 0) {
        for (int n = 0; n < ncols; ++n) {
            *(float *) (d + shape_offset(sd, m, n, i12, i13)) = acc[n];
        }
    }
}

// MUL_MAT_ID, one activation column per (slot, token): dst[m, e, t] = sum_k w[k, m, ids[e, t]]
// * x[k, e % x.ne[1], t]. Grid: x = weight rows / warps per block, y = slots * tokens; each
// warp takes one weight row.
extern "C" __global__ void mul_mat_id_vec(shape sw, const char * w, int type, shape sx, const char * x, shape si,
                                          const char * ids, shape sd, char * d) {
    const int warps = blockDim.x / WARP_SIZE;
    const i64 m = (i64) blockIdx.x * warps + threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    if (m >= sw.ne[1]) {
        return;  // the whole warp leaves together
    }
    const i64 e = blockIdx.y % si.ne[0];
    const i64 t = blockIdx.y / si.ne[0];
    const i64 expert = *(const i32 *) (ids + e * si.nb[0] + t * si.nb[1]);
    if (expert < 0 || expert >= sw.ne[2]) {
        return;  // an id naming no expert: the column is left unwritten
    }
    const char * row = w + m * sw.nb[1] + expert * sw.nb[2];
    const float * col = (const float *) (x + (e % sx.ne[1]) * sx.nb[1] + t * sx.nb[2]);

    float acc[MAX_COLS] = { 0.0f };
    for (i64 g = lane; g < (sw.ne[0] + 31) / 32; g += WARP_SIZE) {
        group_dot(type, row, sw.ne[0], g, col + 32 * g, 0, 1, acc);
    }
    const float sum = warp_sum(acc[0]);
    if (lane == 0) {
        *(float *) (d + shape_offset(sd, m, e, t, 0)) = sum;
    }
}
