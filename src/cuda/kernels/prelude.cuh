// The prelude every kernel source is compiled with: 16-bit float conversions, ggml's block
// formats, tensor descriptions and warp reductions. It includes no header, so NVRTC needs
// nothing but itself, and it compiles as host C++ (the emulator supplies the CUDA built-ins),
// where the conversions fall back to portable bit arithmetic.

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

// ---- tensors ----------------------------------------------------------------------------

// A tensor as a kernel sees it: extents in elements, strides in bytes (ggml's ne and nb).
struct shape {
    i64 ne[4];
    i64 nb[4];
};

__device__ __forceinline__ i64 shape_rows(const shape & s) {
    return s.ne[1] * s.ne[2] * s.ne[3];
}

// The byte offset of row `r` (rows counted over dimensions 1..3 in order).
__device__ __forceinline__ i64 shape_row_offset(const shape & s, i64 r) {
    const i64 i1 = r % s.ne[1];
    const i64 i2 = (r / s.ne[1]) % s.ne[2];
    const i64 i3 = r / (s.ne[1] * s.ne[2]);
    return i1 * s.nb[1] + i2 * s.nb[2] + i3 * s.nb[3];
}

// The byte offset of the element at (i0, i1, i2, i3).
__device__ __forceinline__ i64 shape_offset(const shape & s, i64 i0, i64 i1, i64 i2, i64 i3) {
    return i0 * s.nb[0] + i1 * s.nb[1] + i2 * s.nb[2] + i3 * s.nb[3];
}

__device__ __forceinline__ i64 shape_elements(const shape & s) {
    return s.ne[0] * s.ne[1] * s.ne[2] * s.ne[3];
}

// The coordinates of the `i`-th unit of `s` in logical order, where dimension 0 holds `ne0`
// units (its elements, or its blocks of a block type).
__device__ __forceinline__ void shape_coords(const shape & s, i64 ne0, i64 i, i64 c[4]) {
    c[0] = i % ne0;
    i /= ne0;
    c[1] = i % s.ne[1];
    i /= s.ne[1];
    c[2] = i % s.ne[2];
    c[3] = i / s.ne[2];
}

// A loop of the whole grid over 0..n, each thread taking every (grid size)-th index.
#define GRID_STRIDE(i, n) for (i64 i = (i64) blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64) gridDim.x * blockDim.x)

// ---- 16-bit floats ----------------------------------------------------------------------

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float f16_to_f32(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ u16 f32_to_f16(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#else
__device__ __forceinline__ float f16_to_f32(u16 h) {
    const u32 sign = (u32) (h & 0x8000) << 16;
    const u32 exp = (h >> 10) & 0x1f;
    const u32 man = h & 0x3ff;
    u32 bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        // subnormal: normalise
        int e = -1;
        u32 m = man;
        do {
            m <<= 1;
            ++e;
        } while ((m & 0x400) == 0);
        bits = sign | ((u32) (112 - e) << 23) | ((m & 0x3ff) << 13);
    }
    return __uint_as_float(bits);
}

__device__ __forceinline__ u16 f32_to_f16(float f) {
    const u32 x = __float_as_uint(f);
    const u32 sign = (x >> 16) & 0x8000;
    const u32 abs = x & 0x7fffffff;
    if (abs > 0x7f800000u) {
        return (u16) (sign | 0x7e00);  // NaN
    }
    if (abs >= 0x477ff000u) {
        return (u16) (sign | 0x7c00);  // rounds to infinity
    }
    if (abs < 0x38800000u) {
        // subnormal or zero: round the shifted mantissa to nearest even
        if (abs < 0x33000000u) {
            return (u16) sign;
        }
        const u32 e = abs >> 23;
        const u32 m = (abs & 0x7fffff) | 0x800000;
        const u32 shift = 126 - e;
        u32 r = m >> shift;
        const u32 rest = m & ((1u << shift) - 1);
        const u32 half = 1u << (shift - 1);
        r += (rest > half || (rest == half && (r & 1))) ? 1 : 0;
        return (u16) (sign | r);
    }
    u32 r = abs - 0x38000000u;  // rebias the exponent
    r = (r + 0xfff + ((r >> 13) & 1)) >> 13;
    return (u16) (sign | r);
}
#endif

// bfloat16 is the top half of a float; rounding to nearest even, NaNs kept quiet.
__device__ __forceinline__ float bf16_to_f32(u16 h) {
    return __uint_as_float((u32) h << 16);
}

__device__ __forceinline__ u16 f32_to_bf16(float f) {
    const u32 x = __float_as_uint(f);
    if ((x & 0x7fffffff) > 0x7f800000u) {
        return (u16) ((x >> 16) | 64);
    }
    return (u16) ((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

// ---- element access by ggml type -------------------------------------------------------

// ggml's type numbers for the types kernels name.
#define TYPE_F32 0
#define TYPE_F16 1
#define TYPE_Q4_0 2
#define TYPE_Q4_1 3
#define TYPE_Q5_0 6
#define TYPE_Q5_1 7
#define TYPE_Q8_0 8
#define TYPE_Q2_K 10
#define TYPE_Q3_K 11
#define TYPE_Q4_K 12
#define TYPE_Q5_K 13
#define TYPE_Q6_K 14
#define TYPE_IQ4_NL 20
#define TYPE_IQ4_XS 23
#define TYPE_I32 26
#define TYPE_BF16 30
#define TYPE_MXFP4 39

__device__ __forceinline__ float load_f32(const void * p) { return *(const float *) p; }
__device__ __forceinline__ float load_f16(const void * p) { return f16_to_f32(*(const u16 *) p); }
__device__ __forceinline__ float load_bf16(const void * p) { return bf16_to_f32(*(const u16 *) p); }
__device__ __forceinline__ float load_i32(const void * p) { return (float) *(const i32 *) p; }
__device__ __forceinline__ void store_f32(void * p, float v) { *(float *) p = v; }
__device__ __forceinline__ void store_f16(void * p, float v) { *(u16 *) p = f32_to_f16(v); }
__device__ __forceinline__ void store_bf16(void * p, float v) { *(u16 *) p = f32_to_bf16(v); }
__device__ __forceinline__ void store_i32(void * p, float v) { *(i32 *) p = (i32) v; }

// An element of a plain type (F32, F16, BF16, I32) read or written as a float; the type is a
// launch argument, the same for every thread.
__device__ __forceinline__ float load_as(int type, const char * p) {
    switch (type) {
        case TYPE_F16: return load_f16(p);
        case TYPE_BF16: return load_bf16(p);
        case TYPE_I32: return load_i32(p);
        default: return load_f32(p);
    }
}

__device__ __forceinline__ void store_as(int type, char * p, float v) {
    switch (type) {
        case TYPE_F16: store_f16(p, v); break;
        case TYPE_BF16: store_bf16(p, v); break;
        case TYPE_I32: store_i32(p, v); break;
        default: store_f32(p, v); break;
    }
}

// ---- block formats (ggml's layouts, byte for byte) -------------------------------------

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32

struct block_q4_0 {
    u16 d;
    u8 qs[QK4_0 / 2];
};

struct block_q4_1 {
    u16 d;
    u16 m;
    u8 qs[QK4_1 / 2];
};

struct block_q5_0 {
    u16 d;
    u8 qh[4];
    u8 qs[QK5_0 / 2];
};

struct block_q5_1 {
    u16 d;
    u16 m;
    u8 qh[4];
    u8 qs[QK5_1 / 2];
};

struct block_q8_0 {
    u16 d;
    i8 qs[QK8_0];
};

// The value at position `j` (0..31) of a block. In the 4- and 5-bit formats the low nibbles
// hold positions 0..15 and the high nibbles 16..31; the fifth bits sit in `qh`, bit j.
__device__ __forceinline__ float q4_0_value(const block_q4_0 & b, int j) {
    const int q = j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
    return (float) (q - 8) * f16_to_f32(b.d);
}

__device__ __forceinline__ float q4_1_value(const block_q4_1 & b, int j) {
    const int q = j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
    return (float) q * f16_to_f32(b.d) + f16_to_f32(b.m);
}

__device__ __forceinline__ int fifth_bit(const u8 qh[4], int j) {
    const u32 bits = (u32) qh[0] | ((u32) qh[1] << 8) | ((u32) qh[2] << 16) | ((u32) qh[3] << 24);
    return (int) ((bits >> j) & 1) << 4;
}

__device__ __forceinline__ float q5_0_value(const block_q5_0 & b, int j) {
    const int low = j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
    return (float) ((low | fifth_bit(b.qh, j)) - 16) * f16_to_f32(b.d);
}

__device__ __forceinline__ float q5_1_value(const block_q5_1 & b, int j) {
    const int low = j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
    return (float) (low | fifth_bit(b.qh, j)) * f16_to_f32(b.d) + f16_to_f32(b.m);
}

__device__ __forceinline__ float q8_0_value(const block_q8_0 & b, int j) {
    return (float) b.qs[j] * f16_to_f32(b.d);
}

// ---- 32-value non-linear formats ------------------------------------------------------

#define QK4_NL 32
#define QK_MXFP4 32

struct block_iq4_nl {
    u16 d;
    u8 qs[QK4_NL / 2];
};

// Four bits and a power-of-two scale (E8M0, exponent bias 127) shared by 32 values.
struct block_mxfp4 {
    u8 e;
    u8 qs[QK_MXFP4 / 2];
};

// The levels IQ4_NL and IQ4_XS index: spaced for the bell shape of weights, not evenly.
__device__ const i8 iq4_levels[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
// E2M1's sixteen values, doubled so they are integers (the scale is halved to match).
__device__ const i8 fp4_levels[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

// The nibble of position `j` (0..31) in 16 bytes: low nibbles hold 0..15, high 16..31.
__device__ __forceinline__ int nibble32(const u8 * qs, int j) {
    return j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
}

__device__ __forceinline__ float iq4_nl_value(const block_iq4_nl & b, int j) {
    return f16_to_f32(b.d) * (float) iq4_levels[nibble32(b.qs, j)];
}

// Half of 2^(e - 127): the factor for the doubled levels (2^-128 and 2^-127 are subnormal).
__device__ __forceinline__ float e8m0_half(u8 e) {
    return __uint_as_float(e < 2 ? 0x00200000u << e : (u32) (e - 1) << 23);
}

__device__ __forceinline__ float mxfp4_value(const block_mxfp4 & b, int j) {
    return (float) fp4_levels[nibble32(b.qs, j)] * e8m0_half(b.e);
}

// ---- 256-value super-blocks (the K-quants and IQ4_XS) ----------------------------------
//
// A super-block holds 256 values in sub-blocks of 16 or 32, each with a small integer scale
// (and for Q2_K, Q4_K, Q5_K a minimum) that multiplies the super-block's binary16 scale.
// Each function below gives value `j` (0..255) exactly as ggml's dequantizer computes it.

#define QK_K 256

struct block_q2_K {
    u8 scales[QK_K / 16];  // per 16 values: scale in the low nibble, minimum in the high
    u8 qs[QK_K / 4];       // four 2-bit values a byte
    u16 d;
    u16 dmin;
};

struct block_q3_K {
    u8 hmask[QK_K / 8];  // the third bits
    u8 qs[QK_K / 4];     // the low two bits
    u8 scales[12];       // sixteen 6-bit scales, biased by 32
    u16 d;
};

struct block_q4_K {
    u16 d;
    u16 dmin;
    u8 scales[12];  // eight 6-bit scales and eight 6-bit minimums
    u8 qs[QK_K / 2];
};

struct block_q5_K {
    u16 d;
    u16 dmin;
    u8 scales[12];
    u8 qh[QK_K / 8];  // the fifth bits
    u8 qs[QK_K / 2];
};

struct block_q6_K {
    u8 ql[QK_K / 2];   // the low four bits
    u8 qh[QK_K / 4];   // the high two bits
    i8 scales[QK_K / 16];
    u16 d;
};

struct block_iq4_xs {
    u16 d;
    u16 scales_h;  // the high two bits of eight 6-bit scales
    u8 scales_l[QK_K / 64];
    u8 qs[QK_K / 2];
};

// Q2_K and Q3_K: each half of 128 values takes 32 bytes of `qs`, value j of it in bits
// 2 * (j / 32) of byte j % 32; sub-blocks of 16 values.
__device__ __forceinline__ int two_bits(const u8 * qs, int j) {
    return (qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
}

__device__ __forceinline__ float q2_K_value(const block_q2_K & b, int j) {
    const int sc = b.scales[j / 16];
    const float dl = f16_to_f32(b.d) * (float) (sc & 0x0f);
    const float ml = f16_to_f32(b.dmin) * (float) (sc >> 4);
    return dl * (float) two_bits(b.qs, j) - ml;
}

// Q3_K's scale of sub-block `s` (0..15): four low bits from byte s % 8 (nibble s / 8), two high
// bits from byte 8 + s % 4 (pair s / 4).
__device__ __forceinline__ int q3_K_scale(const u8 * scales, int s) {
    const int low = (scales[s % 8] >> (4 * (s / 8))) & 0x0f;
    const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
    return (low | (high << 4)) - 32;
}

__device__ __forceinline__ float q3_K_value(const block_q3_K & b, int j) {
    const float dl = f16_to_f32(b.d) * (float) q3_K_scale(b.scales, j / 16);
    // a clear high bit means 4 less: the values are -4..3
    const int high = (b.hmask[j % 32] >> (j / 32)) & 1;
    return dl * (float) (two_bits(b.qs, j) - (high ? 0 : 4));
}

// Q4_K and Q5_K: the scale and minimum of sub-block `s` (0..7) of 32 values. The first four
// are the low six bits of bytes s and s + 4; the last four take their low four bits from byte
// s + 4 and their top two from the spare bits of the first ones.
__device__ __forceinline__ void k4_scale_min(const u8 * q, int s, float & sc, float & m) {
    if (s < 4) {
        sc = (float) (q[s] & 63);
        m = (float) (q[s + 4] & 63);
    } else {
        sc = (float) ((q[s + 4] & 0x0f) | ((q[s - 4] >> 6) << 4));
        m = (float) ((q[s + 4] >> 4) | ((q[s] >> 6) << 4));
    }
}

// Each 64 values take 32 bytes: the first 32 the low nibbles, the next 32 the high ones.
__device__ __forceinline__ int nibble64(const u8 * qs, int j) {
    const u8 q = qs[32 * (j / 64) + j % 32];
    return (j % 64) < 32 ? (q & 0x0f) : (q >> 4);
}

__device__ __forceinline__ float q4_K_value(const block_q4_K & b, int j) {
    float sc, m;
    k4_scale_min(b.scales, j / 32, sc, m);
    const float d = f16_to_f32(b.d) * sc;
    const float min = f16_to_f32(b.dmin) * m;
    return d * (float) nibble64(b.qs, j) - min;
}

__device__ __forceinline__ float q5_K_value(const block_q5_K & b, int j) {
    float sc, m;
    k4_scale_min(b.scales, j / 32, sc, m);
    const float d = f16_to_f32(b.d) * sc;
    const float min = f16_to_f32(b.dmin) * m;
    // the fifth bit of value j is bit j / 32 of byte j % 32
    const int q = nibble64(b.qs, j) | (((b.qh[j % 32] >> (j / 32)) & 1) << 4);
    return d * (float) q - min;
}

// Q6_K: each 128 values take 64 bytes of `ql` and 32 of `qh`; quarter k (32 values) takes the
// low (k < 2) or high nibbles of ql bytes 32 * (k % 2) .. and bits 2k of the qh bytes.
__device__ __forceinline__ float q6_K_value(const block_q6_K & b, int j) {
    const int half = j / 128, k = (j % 128) / 32, l = j % 32;
    const u8 low = b.ql[64 * half + 32 * (k % 2) + l];
    const int high = (b.qh[32 * half + l] >> (2 * k)) & 3;
    const int q = ((k < 2 ? (low & 0x0f) : (low >> 4)) | (high << 4)) - 32;
    return f16_to_f32(b.d) * (float) b.scales[j / 16] * (float) q;
}

__device__ __forceinline__ float iq4_xs_value(const block_iq4_xs & b, int j) {
    const int s = j / 32;
    const int ls = ((b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0f) | (((b.scales_h >> (2 * s)) & 3) << 4);
    const float dl = f16_to_f32(b.d) * (float) (ls - 32);
    return dl * (float) iq4_levels[nibble32(b.qs + 16 * s, j % 32)];
}

// ---- any type by position --------------------------------------------------------------

// The 32-value formats SET_ROWS and CPY quantize into.
__device__ __forceinline__ bool is_block_type(int type) {
    return type == TYPE_Q4_0 || type == TYPE_Q4_1 || type == TYPE_Q5_0 || type == TYPE_Q5_1 || type == TYPE_Q8_0;
}

// Bytes of 32 consecutive values of a row of a plain type or a 32-value format (the
// super-block formats have no whole number of bytes per 32 values).
__device__ __forceinline__ i64 group_bytes(int type) {
    switch (type) {
        case TYPE_Q4_0: return sizeof(block_q4_0);
        case TYPE_Q4_1: return sizeof(block_q4_1);
        case TYPE_Q5_0: return sizeof(block_q5_0);
        case TYPE_Q5_1: return sizeof(block_q5_1);
        case TYPE_Q8_0: return sizeof(block_q8_0);
        case TYPE_IQ4_NL: return sizeof(block_iq4_nl);
        case TYPE_MXFP4: return sizeof(block_mxfp4);
        case TYPE_F16:
        case TYPE_BF16: return 64;
        default: return 128;
    }
}

// Value `j` of block `b` of a row of `type` (a plain type's "block" is one element).
#define BLOCK_VALUE(T, f, row, b, j) f(((const T *) (row))[b], j)

// Value `i` of a row of `type` starting at `row`; a block type's row is whole blocks.
__device__ __forceinline__ float row_value(int type, const char * row, i64 i) {
    const int j32 = (int) (i % 32), j256 = (int) (i % QK_K);
    const i64 b32 = i / 32, b256 = i / QK_K;
    switch (type) {
        case TYPE_Q4_0: return BLOCK_VALUE(block_q4_0, q4_0_value, row, b32, j32);
        case TYPE_Q4_1: return BLOCK_VALUE(block_q4_1, q4_1_value, row, b32, j32);
        case TYPE_Q5_0: return BLOCK_VALUE(block_q5_0, q5_0_value, row, b32, j32);
        case TYPE_Q5_1: return BLOCK_VALUE(block_q5_1, q5_1_value, row, b32, j32);
        case TYPE_Q8_0: return BLOCK_VALUE(block_q8_0, q8_0_value, row, b32, j32);
        case TYPE_IQ4_NL: return BLOCK_VALUE(block_iq4_nl, iq4_nl_value, row, b32, j32);
        case TYPE_MXFP4: return BLOCK_VALUE(block_mxfp4, mxfp4_value, row, b32, j32);
        case TYPE_Q2_K: return BLOCK_VALUE(block_q2_K, q2_K_value, row, b256, j256);
        case TYPE_Q3_K: return BLOCK_VALUE(block_q3_K, q3_K_value, row, b256, j256);
        case TYPE_Q4_K: return BLOCK_VALUE(block_q4_K, q4_K_value, row, b256, j256);
        case TYPE_Q5_K: return BLOCK_VALUE(block_q5_K, q5_K_value, row, b256, j256);
        case TYPE_Q6_K: return BLOCK_VALUE(block_q6_K, q6_K_value, row, b256, j256);
        case TYPE_IQ4_XS: return BLOCK_VALUE(block_iq4_xs, iq4_xs_value, row, b256, j256);
        default: return load_as(type, row + i * (group_bytes(type) / 32));
    }
}

// Values 32g .. 32g + n - 1 of a row of `k` values of `type` into `v`, returning n: 32, or
// what is left of a float row in its last group (rows of a block type are whole groups).
#define GROUP_VALUES(T, f, per_block)                                  \
    do {                                                               \
        const T & b = ((const T *) row)[g / ((per_block) / 32)];       \
        const int first = (int) (32 * (g % ((per_block) / 32)));       \
        for (int j = 0; j < 32; ++j) v[j] = f(b, first + j);           \
    } while (0)

__device__ __forceinline__ int group_values(int type, const char * row, i64 k, i64 g, float v[32]) {
    const int n = (int) min((i64) 32, k - 32 * g);
    switch (type) {
        case TYPE_Q4_0: GROUP_VALUES(block_q4_0, q4_0_value, 32); break;
        case TYPE_Q4_1: GROUP_VALUES(block_q4_1, q4_1_value, 32); break;
        case TYPE_Q5_0: GROUP_VALUES(block_q5_0, q5_0_value, 32); break;
        case TYPE_Q5_1: GROUP_VALUES(block_q5_1, q5_1_value, 32); break;
        case TYPE_Q8_0: GROUP_VALUES(block_q8_0, q8_0_value, 32); break;
        case TYPE_IQ4_NL: GROUP_VALUES(block_iq4_nl, iq4_nl_value, 32); break;
        case TYPE_MXFP4: GROUP_VALUES(block_mxfp4, mxfp4_value, 32); break;
        case TYPE_Q2_K: GROUP_VALUES(block_q2_K, q2_K_value, QK_K); break;
        case TYPE_Q3_K: GROUP_VALUES(block_q3_K, q3_K_value, QK_K); break;
        case TYPE_Q4_K: GROUP_VALUES(block_q4_K, q4_K_value, QK_K); break;
        case TYPE_Q5_K: GROUP_VALUES(block_q5_K, q5_K_value, QK_K); break;
        case TYPE_Q6_K: GROUP_VALUES(block_q6_K, q6_K_value, QK_K); break;
        case TYPE_IQ4_XS: GROUP_VALUES(block_iq4_xs, iq4_xs_value, QK_K); break;
        case TYPE_F16:
            for (int j = 0; j < n; ++j) v[j] = load_f16(row + 2 * (32 * g + j));
            break;
        case TYPE_BF16:
            for (int j = 0; j < n; ++j) v[j] = load_bf16(row + 2 * (32 * g + j));
            break;
        default:
            for (int j = 0; j < n; ++j) v[j] = load_f32(row + 4 * (32 * g + j));
            break;
    }
    return n;
}

// ---- attention -----------------------------------------------------------------------

// ALiBi's slope for head `h`: 1 without a bias; otherwise powers of m0 for the first
// `n_head_log2` heads and odd powers of m1 after them (the host computes the three).
__device__ __forceinline__ float alibi_slope(float max_bias, int h, int n_head_log2, float m0, float m1) {
    if (max_bias <= 0.0f) {
        return 1.0f;
    }
    return h < n_head_log2 ? powf(m0, (float) (h + 1)) : powf(m1, (float) (2 * (h - n_head_log2) + 1));
}

// ---- reductions --------------------------------------------------------------------------

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu
// -infinity without math.h
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(FULL_MASK, v, offset);
    }
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, offset));
    }
    return v;
}

// The reduction `warp` makes within a warp, over the whole block (`identity` changes nothing),
// returned to every thread. `scratch` holds 32 floats of shared memory; blockDim.x is a
// multiple of 32, at most 1024.
__device__ __forceinline__ float block_reduce(float v, float * scratch, float (*warp)(float), float identity) {
    v = warp(v);
    if (blockDim.x == WARP_SIZE) {
        return v;
    }
    const int w = threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) {
        scratch[w] = v;
    }
    __syncthreads();
    v = lane < (int) (blockDim.x / WARP_SIZE) ? scratch[lane] : identity;
    return warp(v);
}

__device__ __forceinline__ float block_sum(float v, float * scratch) {
    return block_reduce(v, scratch, warp_sum, 0.0f);
}

__device__ __forceinline__ float block_max(float v, float * scratch) {
    return block_reduce(v, scratch, warp_max, NEG_INF);
}
