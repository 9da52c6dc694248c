// Row normalisations (NORM, RMS_NORM, L2_NORM) of F32 rows: one block per row, the row's
// statistics reduced across the block, then every element scaled.
// shared-memory budget: 128 bytes
#include "prelude.cuh"

#define NORM 0      // (x - mean) / sqrt(variance + eps)
#define RMS_NORM 1  // x / sqrt(mean square + eps)
#define L2_NORM 2   // x / max(|x|, eps)

// `dst` = `src` normalised row by row; the rows of both are packed (nb[0] = 4). Grid: one
// block per row (grid-stride over rows); blockDim.x a multiple of 32.
__device__ void normalize_rows(shape src, const char * x, shape dst, char * y, float eps, int kind) {
    __shared__ float scratch[WARP_SIZE];
    const i64 n = src.ne[0];
    for (i64 r = blockIdx.x; r < shape_rows(src); r += gridDim.x) {
        const float * row = (const float *) (x + shape_row_offset(src, r));
        float * out = (float *) (y + shape_row_offset(dst, r));
        float mean = 0.0f;
        if (kind == NORM) {
            float sum = 0.0f;
            for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
                sum += row[i];
            }
            mean = block_sum(sum, scratch) / (float) n;
        }
        float squares = 0.0f;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            const float d = row[i] - mean;
            squares += d * d;
        }
        squares = block_sum(squares, scratch);
        const float scale = kind == L2_NORM ? 1.0f / fmaxf(sqrtf(squares), eps) : rsqrtf(squares / (float) n + eps);
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            out[i] = (row[i] - mean) * scale;
        }
    }
}

extern "C" __global__ void norm_f32(shape src, const char * x, shape dst, char * y, float eps) {
    normalize_rows(src, x, dst, y, eps, NORM);
}

extern "C" __global__ void rms_norm_f32(shape src, const char * x, shape dst, char * y, float eps) {
    normalize_rows(src, x, dst, y, eps, RMS_NORM);
}

extern "C" __global__ void l2_norm_f32(shape src, const char * x, shape dst, char * y, float eps) {
    normalize_rows(src, x, dst, y, eps, L2_NORM);
}
