// Row normalisations (NORM, RMS_NORM, L2_NORM) of F32 rows: one block per row, the row's
// statistics reduced across the block, then every element scaled.
// shared-memory budget: 128 bytes
#include "prelude.cuh"

// `dst` = `src` normalised row by row; the rows of both are packed (nb[0] = 4). Grid: one
// block per row (grid-stride over rows); blockDim.x a multiple of 32.
extern "C" __global__ void norm_f32(shape src, const char * x, shape dst, char * y, float eps) {
    __shared__ float scratch[WARP_SIZE];
    const i64 n = src.ne[0];
    for (i64 r = blockIdx.x; r < shape_rows(src); r += gridDim.x) {
        const float * row = (const float *) (x + shape_row_offset(src, r));
        float * out = (float *) (y + shape_row_offset(dst, r));
        float sum = 0.0f;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            sum += row[i];
        }
        const float mean = block_sum(sum, scratch) / (float) n;
        float var = 0.0f;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            const float d = row[i] - mean;
            var += d * d;
        }
        const float scale = rsqrtf(block_sum(var, scratch) / (float) n + eps);
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            out[i] = (row[i] - mean) * scale;
        }
    }
}

// Rows scaled by a function of their sum of squares: RMS_NORM's 1 / sqrt(mean square + eps)
// or L2_NORM's 1 / max(|x|, eps).
__device__ void scale_by_squares(shape src, const char * x, shape dst, char * y, float eps, bool l2) {
    __shared__ float scratch[WARP_SIZE];
    const i64 n = src.ne[0];
    for (i64 r = blockIdx.x; r < shape_rows(src); r += gridDim.x) {
        const float * row = (const float *) (x + shape_row_offset(src, r));
        float * out = (float *) (y + shape_row_offset(dst, r));
        float sum = 0.0f;
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            sum += row[i] * row[i];
        }
        sum = block_sum(sum, scratch);
        const float scale = l2 ? 1.0f / fmaxf(sqrtf(sum), eps) : rsqrtf(sum / (float) n + eps);
        for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
            out[i] = row[i] * scale;
        }
    }
}

extern "C" __global__ void rms_norm_f32(shape src, const char * x, shape dst, char * y, float eps) {
    scale_by_squares(src, x, dst, y, eps, false);
}

extern "C" __global__ void l2_norm_f32(shape src, const char * x, shape dst, char * y, float eps) {
    scale_by_squares(src, x, dst, y, eps, true);
}
