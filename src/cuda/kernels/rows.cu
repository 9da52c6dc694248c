// Whole-row and whole-tensor rearrangements of F32 data: SUM_ROWS and MEAN (a block per row),
// ARGSORT (a bitonic sort of a row's indices in shared memory, rows up to 1024 values),
// REPEAT and CONCAT (a thread per result element).
// shared-memory budget: 4224 bytes
#include "prelude.cuh"

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
// of value. blockDim.x is the row length rounded up to a power of two, at most 1024 (MAX_SORT,
// the bound that keeps ptxas within a block's registers); the padding sorts last.
extern "C" __global__ void __launch_bounds__(1024) argsort_f32(shape sx, const char * x, shape sd, char * d, int descending) {
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
    GRID_STRIDE(i, shape_elements(sd)) {
        i64 c[4];
        shape_coords(sd, sd.ne[0], i, c);
        const float v = load_f32(x + shape_offset(sx, c[0] % sx.ne[0], c[1] % sx.ne[1], c[2] % sx.ne[2], c[3] % sx.ne[3]));
        store_f32(d + shape_offset(sd, c[0], c[1], c[2], c[3]), v);
    }
}

// dst = a followed by b along dimension `dim`, for every element type of 1, 2, 4 or 8 bytes
// (`size`): each element copied as it is.
extern "C" __global__ void concat(shape sa, const char * a, shape sb, const char * b, shape sd, char * d, int dim,
                                  int size) {
    GRID_STRIDE(i, shape_elements(sd)) {
        i64 c[4];
        shape_coords(sd, sd.ne[0], i, c);
        char * to = d + shape_offset(sd, c[0], c[1], c[2], c[3]);
        const i64 at = c[dim];
        const char * from;
        if (at < sa.ne[dim]) {
            from = a + shape_offset(sa, c[0], c[1], c[2], c[3]);
        } else {
            c[dim] = at - sa.ne[dim];
            from = b + shape_offset(sb, c[0], c[1], c[2], c[3]);
        }
        switch (size) {
            case 1: *(u8 *) to = *(const u8 *) from; break;
            case 2: *(u16 *) to = *(const u16 *) from; break;
            case 4: *(u32 *) to = *(const u32 *) from; break;
            default: *(u64 *) to = *(const u64 *) from; break;
        }
    }
}
