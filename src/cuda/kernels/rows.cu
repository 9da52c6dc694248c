// Whole-row and whole-tensor rearrangements of F32 data: SUM_ROWS and MEAN (a block per row),
// ARGSORT (a bitonic sort of a row's indices in shared memory, rows up to 1024 values),
// REPEAT and CONCAT (a thread per result element).
// shared-memory budget: 4224 bytes
#include "prelude.cuh"

#define GRID_STRIDE(i, n) for (i64 i = (i64) blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64) gridDim.x * blockDim.x)

// dst[0, r] = sum (or mean, when `mean`) of row r of x.
extern "C" __global__ void sum_rows_f32(shape sx, const char * x, shape sd, char * d, int mean) {
    __shared__ float scratch[WARP_SIZE];
    const i64 n = sx.ne[0];
    for (i64 r = blockIdx.x; r < shape_rows(sx); r += gridDim.x) {
        const char * row = x + shape_row_offset(sx, r);
        float sum = 0.0f;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            sum += load_f32(row + i * sx.nb[0]);
        }
        sum = block_sum(sum, scratch);
        if (threadIdx.x == 0) {
            store_f32(d + shape_row_offset(sd, r), mean ? sum / (float) n : sum);
        }
    }
}

#define MAX_SORT 1024

// dst row r = the indices of row r of x in ascending (`descending` = 0) or descending order
// of value. blockDim.x is the row length rounded up to a power of two, at most 1024; the
// padding sorts last.
extern "C" __global__ void argsort_f32(shape sx, const char * x, shape sd, char * d, int descending) {
    __shared__ int idx[MAX_SORT];
    const int n = (int) sx.ne[0];
    const int size = (int) blockDim.x;
    const int t = threadIdx.x;
    for (i64 r = blockIdx.x; r < shape_rows(sx); r += gridDim.x) {
        const char * row = x + shape_row_offset(sx, r);
        idx[t] = t;
        __syncthreads();
        // does the value at index a come after the one at index b?
        auto after = [&](int a, int b) {
            if (a >= n || b >= n) {
                return a >= n && b < n;  // padding goes last
            }
            const float va = load_f32(row + a * sx.nb[0]);
            const float vb = load_f32(row + b * sx.nb[0]);
            return descending ? va < vb : va > vb;
        };
        for (int k = 2; k <= size; k <<= 1) {
            for (int j = k >> 1; j > 0; j >>= 1) {
                const int p = t ^ j;
                if (p > t) {
                    // ascending runs where bit k of t is clear, descending where it is set
                    const bool swap = (t & k) == 0 ? after(idx[t], idx[p]) : after(idx[p], idx[t]);
                    if (swap) {
                        const int tmp = idx[t];
                        idx[t] = idx[p];
                        idx[p] = tmp;
                    }
                }
                __syncthreads();
            }
        }
        if (t < n) {
            *(i32 *) (d + shape_row_offset(sd, r) + (i64) t * sd.nb[0]) = idx[t];
        }
        __syncthreads();  // the next row reuses idx
    }
}

// dst[i] = x[i mod x's extents], F32.
extern "C" __global__ void repeat_f32(shape sx, const char * x, shape sd, char * d) {
    const i64 n = sd.ne[0] * sd.ne[1] * sd.ne[2] * sd.ne[3];
    GRID_STRIDE(i, n) {
        const i64 i0 = i % sd.ne[0];
        const i64 i1 = (i / sd.ne[0]) % sd.ne[1];
        const i64 i2 = (i / (sd.ne[0] * sd.ne[1])) % sd.ne[2];
        const i64 i3 = i / (sd.ne[0] * sd.ne[1] * sd.ne[2]);
        const float v = load_f32(x + shape_offset(sx, i0 % sx.ne[0], i1 % sx.ne[1], i2 % sx.ne[2], i3 % sx.ne[3]));
        store_f32(d + shape_offset(sd, i0, i1, i2, i3), v);
    }
}

// dst = a followed by b along dimension `dim`, F32.
extern "C" __global__ void concat_f32(shape sa, const char * a, shape sb, const char * b, shape sd, char * d, int dim) {
    const i64 n = sd.ne[0] * sd.ne[1] * sd.ne[2] * sd.ne[3];
    GRID_STRIDE(i, n) {
        i64 c[4];
        c[0] = i % sd.ne[0];
        c[1] = (i / sd.ne[0]) % sd.ne[1];
        c[2] = (i / (sd.ne[0] * sd.ne[1])) % sd.ne[2];
        c[3] = i / (sd.ne[0] * sd.ne[1] * sd.ne[2]);
        const i64 at = c[dim];
        float v;
        if (at < sa.ne[dim]) {
            v = load_f32(a + shape_offset(sa, c[0], c[1], c[2], c[3]));
        } else {
            c[dim] = at - sa.ne[dim];
            v = load_f32(b + shape_offset(sb, c[0], c[1], c[2], c[3]));
            c[dim] = at;
        }
        store_f32(d + shape_offset(sd, c[0], c[1], c[2], c[3]), v);
    }
}
