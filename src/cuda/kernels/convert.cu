// Values moving between layouts and types: GET_ROWS (any float or block type of the prelude
// into F32), SET_ROWS (float rows into float or block rows), CPY/DUP/CONT (between float types, from
// any decodable type into a float type, or from F32 into a block type), the dense F32/F16/BF16
// operands of a GEMM, and activations rounded as the CPU rounds them for its products.
// Quantization is ggml's reference rounding, one thread per block.
// shared-memory budget: 0 bytes
#include "prelude.cuh"

// The byte offset of the `i`-th unit (element, or block with ne[0] counted in blocks) of `s`
// in logical order.
__device__ __forceinline__ i64 offset_of(const shape & s, i64 ne0, i64 i) {
    i64 c[4];
    shape_coords(s, ne0, i, c);
    return shape_offset(s, c[0], c[1], c[2], c[3]);
}

// ---- quantization of one block of 32 values ---------------------------------------------

__device__ void quantize_q8_0(const float * x, block_q8_0 & b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
        amax = fmaxf(amax, fabsf(x[j]));
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = f32_to_f16(d);
    for (int j = 0; j < 32; ++j) {
        b.qs[j] = (i8) roundf(x[j] * id);
    }
}

// The value of largest magnitude, with its sign.
__device__ __forceinline__ float signed_max(const float * x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

__device__ void quantize_q4_0(const float * x, block_q4_0 & b) {
    const float d = signed_max(x) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = f32_to_f16(d);
    for (int j = 0; j < 16; ++j) {
        const int lo = min(15, (int) (i8) (x[j] * id + 8.5f));
        const int hi = min(15, (int) (i8) (x[j + 16] * id + 8.5f));
        b.qs[j] = (u8) (lo | (hi << 4));
    }
}

__device__ void quantize_q5_0(const float * x, block_q5_0 & b) {
    const float d = signed_max(x) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = f32_to_f16(d);
    u32 qh = 0;
    for (int j = 0; j < 16; ++j) {
        const int lo = min(31, (int) (i8) (x[j] * id + 16.5f));
        const int hi = min(31, (int) (i8) (x[j + 16] * id + 16.5f));
        b.qs[j] = (u8) ((lo & 0x0f) | ((hi & 0x0f) << 4));
        qh |= ((u32) (lo & 0x10) >> 4) << j;
        qh |= ((u32) (hi & 0x10) >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; ++k) {
        b.qh[k] = (u8) (qh >> (8 * k));
    }
}

__device__ __forceinline__ void min_max(const float * x, float & lo, float & hi) {
    lo = x[0];
    hi = x[0];
    for (int j = 1; j < 32; ++j) {
        lo = fminf(lo, x[j]);
        hi = fmaxf(hi, x[j]);
    }
}

__device__ void quantize_q4_1(const float * x, block_q4_1 & b) {
    float lo, hi;
    min_max(x, lo, hi);
    const float d = (hi - lo) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(lo);
    for (int j = 0; j < 16; ++j) {
        const int q0 = min(15, (int) (i8) ((x[j] - lo) * id + 0.5f));
        const int q1 = min(15, (int) (i8) ((x[j + 16] - lo) * id + 0.5f));
        b.qs[j] = (u8) (q0 | (q1 << 4));
    }
}

__device__ void quantize_q5_1(const float * x, block_q5_1 & b) {
    float lo, hi;
    min_max(x, lo, hi);
    const float d = (hi - lo) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(lo);
    u32 qh = 0;
    for (int j = 0; j < 16; ++j) {
        const int q0 = (int) (u8) ((x[j] - lo) * id + 0.5f);
        const int q1 = (int) (u8) ((x[j + 16] - lo) * id + 0.5f);
        b.qs[j] = (u8) ((q0 & 0x0f) | ((q1 & 0x0f) << 4));
        qh |= ((u32) (q0 & 0x10) >> 4) << j;
        qh |= ((u32) (q1 & 0x10) >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; ++k) {
        b.qh[k] = (u8) (qh >> (8 * k));
    }
}

__device__ void quantize_block(int type, const float * x, char * out) {
    switch (type) {
        case TYPE_Q4_0: quantize_q4_0(x, *(block_q4_0 *) out); break;
        case TYPE_Q4_1: quantize_q4_1(x, *(block_q4_1 *) out); break;
        case TYPE_Q5_0: quantize_q5_0(x, *(block_q5_0 *) out); break;
        case TYPE_Q5_1: quantize_q5_1(x, *(block_q5_1 *) out); break;
        default: quantize_q8_0(x, *(block_q8_0 *) out); break;
    }
}

// ---- GET_ROWS ------------------------------------------------------------------------------

// dst[i0, i10, i11, i12] = src[i0, ids[i10, i11, i12], i11, i12] as F32; `ids` I32.
extern "C" __global__ void get_rows(shape ss, const char * src, int type, shape si, const char * ids, shape sd, char * dst) {
    GRID_STRIDE(i, shape_elements(sd)) {
        const i64 i0 = i % sd.ne[0];
        i64 r = i / sd.ne[0];
        const i64 i10 = r % sd.ne[1];
        r /= sd.ne[1];
        const i64 i11 = r % sd.ne[2];
        const i64 i12 = r / sd.ne[2];
        const i64 row = *(const i32 *) (ids + shape_offset(si, i10, i11, i12, 0));
        const char * src_row = src + row * ss.nb[1] + i11 * ss.nb[2] + i12 * ss.nb[3];
        store_f32(dst + shape_offset(sd, i0, i10, i11, i12), row_value(type, src_row, i0));
    }
}

// ---- SET_ROWS ------------------------------------------------------------------------------

// Row (i, i02, i03) of the source (F32, F16 or BF16: `ts`) goes to row ids[i, i02 % ne11,
// i03 % ne12] of dst at (i02, i03). `ids` is I32 or I64 (`ids_64`). Float destinations: one
// thread per element; block destinations: one per block.
extern "C" __global__ void set_rows(shape ss, const char * src, int ts, shape si, const char * ids, int ids_64, shape sd,
                                    char * dst, int type) {
    const i64 per_row = is_block_type(type) ? ss.ne[0] / 32 : ss.ne[0];
    const i64 n = per_row * ss.ne[1] * ss.ne[2] * ss.ne[3];
    GRID_STRIDE(k, n) {
        const i64 j = k % per_row;
        i64 r = k / per_row;
        const i64 i = r % ss.ne[1];
        r /= ss.ne[1];
        const i64 i02 = r % ss.ne[2];
        const i64 i03 = r / ss.ne[2];
        const char * id = ids + shape_offset(si, i, i02 % si.ne[1], i03 % si.ne[2], 0);
        const i64 row = ids_64 ? *(const i64 *) id : (i64) *(const i32 *) id;
        const char * src_row = src + shape_offset(ss, 0, i, i02, i03);
        char * dst_row = dst + row * sd.nb[1] + i02 * sd.nb[2] + i03 * sd.nb[3];
        if (is_block_type(type)) {
            float v[32];
            for (int e = 0; e < 32; ++e) {
                v[e] = row_value(ts, src_row, 32 * j + e);
            }
            quantize_block(type, v, dst_row + j * group_bytes(type));
        } else {
            store_as(type, dst_row + j * (group_bytes(type) / 32), row_value(ts, src_row, j));
        }
    }
}

// ---- CPY, DUP, CONT ------------------------------------------------------------------------

// Element i of the source in logical order becomes element i of dst, a float type: from a
// float type (any strides), or decoded from any type `row_value` reads (rows of whole blocks).
extern "C" __global__ void copy_float(shape ss, const char * src, int ts, shape sd, char * dst, int td) {
    const bool plain = ts == TYPE_F32 || ts == TYPE_F16 || ts == TYPE_BF16;
    GRID_STRIDE(i, shape_elements(sd)) {
        float v;
        if (plain) {
            v = row_value(ts, src + offset_of(ss, ss.ne[0], i), 0);
        } else {
            i64 c[4];
            shape_coords(ss, ss.ne[0], i, c);
            v = row_value(ts, src + shape_offset(ss, 0, c[1], c[2], c[3]), c[0]);
        }
        store_as(td, dst + offset_of(sd, sd.ne[0], i), v);
    }
}

// F32 into a block type: block b of dst takes source elements 32b .. 32b + 31 in logical
// order. dst rows are whole blocks (ne[0] % 32 == 0).
extern "C" __global__ void copy_to_blocks(shape ss, const char * src, shape sd, char * dst, int td) {
    const i64 n = shape_elements(sd) / 32;
    GRID_STRIDE(b, n) {
        float x[32];
        for (int j = 0; j < 32; ++j) {
            x[j] = load_f32(src + offset_of(ss, ss.ne[0], 32 * b + j));
        }
        quantize_block(td, x, dst + offset_of(sd, sd.ne[0] / 32, b));
    }
}

// ---- operands of a GEMM --------------------------------------------------------------------

// The rows of `ss` (any type `row_value` reads: rows of a block type are whole groups of 32
// values, rows of F32, F16 and BF16 any length) written packed as `td` (F32, F16 or BF16) at
// `dst`, in logical row order: the dense matrices a cuBLAS product takes. One thread per group
// of 32 values, decoded together, the last group of a float row as far as the row goes.
extern "C" __global__ void unpack_rows(shape ss, const char * src, int ts, char * dst, int td) {
    const i64 groups = (ss.ne[0] + 31) / 32;
    const i64 size = td == TYPE_F32 ? 4 : 2;
    GRID_STRIDE(i, groups * shape_rows(ss)) {
        const i64 r = i / groups;
        const i64 g = i % groups;
        float v[32];
        const int n = group_values(ts, src + shape_row_offset(ss, r), ss.ne[0], g, v);
        char * out = dst + (r * ss.ne[0] + 32 * g) * size;
        for (int j = 0; j < n; ++j) {
            store_as(td, out + j * size, v[j]);
        }
    }
}

// ---- activations rounded as the CPU rounds them --------------------------------------------

// The F32 rows of `sx` written packed as `td` (F32 or F16) at `dst`, each value rounded
// through the 8-bit blocks the CPU backend quantizes activations to before it multiplies them
// by quantized weights: blocks of 32 (`block` 32: Q8_0 and Q8_1, scale amax/127 kept as F16,
// quants rounded half to even) or of 256 (`block` 256: Q8_K, scale max/-127 kept as F32).
// One thread per block; rows are whole blocks.
extern "C" __global__ void round_activations(shape sx, const char * x, int block, char * dst, int td) {
    const i64 blocks = sx.ne[0] / block;
    const i64 size = td == TYPE_F32 ? 4 : 2;
    GRID_STRIDE(i, blocks * shape_rows(sx)) {
        const i64 r = i / blocks;
        const i64 b = i % blocks;
        const float * v = (const float *) (x + shape_row_offset(sx, r)) + b * block;
        char * out = dst + (r * sx.ne[0] + b * block) * size;
        float amax = 0.0f;
        float max = 0.0f;
        for (int j = 0; j < block; ++j) {
            if (fabsf(v[j]) > amax) {
                amax = fabsf(v[j]);
                max = v[j];
            }
        }
        float d = 0.0f;
        float id = 0.0f;
        if (amax != 0.0f && block == 32) {
            d = f16_to_f32(f32_to_f16(amax / 127.0f));
            id = 127.0f / amax;
        } else if (amax != 0.0f) {
            id = -127.0f / max;
            d = 1.0f / id;
        }
        for (int j = 0; j < block; ++j) {
            store_as(td, out + j * size, d * fminf(rintf(v[j] * id), 127.0f));
        }
    }
}

// The F32 rows of `sx` written packed as F32 at `dst`, each value rounded to `through` (F16 or
// BF16): the activations the CPU backend multiplies by F16 or BF16 weights.
extern "C" __global__ void round_to_half(shape sx, const char * x, int through, char * dst) {
    GRID_STRIDE(i, shape_elements(sx)) {
        const float v = ((const float *) (x + shape_row_offset(sx, i / sx.ne[0])))[i % sx.ne[0]];
        ((float *) dst)[i] = through == TYPE_BF16 ? bf16_to_f32(f32_to_bf16(v)) : f16_to_f32(f32_to_f16(v));
    }
}
