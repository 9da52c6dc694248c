// Element by element: binary arithmetic with broadcasting (ADD, SUB, MUL, DIV), the unary
// functions (UNARY and the plain ops SQR, SQRT, LOG, SIN, COS, SCALE, CLAMP, LEAKY_RELU) and
// the gated linear units (GLU). One thread per result element over a grid-stride loop; the
// element types are launch arguments (F32, F16, BF16), uniform across a launch.
// shared-memory budget: 0 bytes
#include "prelude.cuh"

// ---- binary ----------------------------------------------------------------------------

#define BIN_ADD 0
#define BIN_SUB 1
#define BIN_MUL 2
#define BIN_DIV 3

// dst = a (op) b, with b repeated over dst (each of b's extents divides dst's).
extern "C" __global__ void binary(int op, shape sa, const char * a, int ta, shape sb, const char * b, int tb,
                                  shape sd, char * d, int td) {
    GRID_STRIDE(i, shape_elements(sd)) {
        i64 c[4];
        shape_coords(sd, sd.ne[0], i, c);
        const float x = load_as(ta, a + shape_offset(sa, c[0], c[1], c[2], c[3]));
        const float y = load_as(tb, b + shape_offset(sb, c[0] % sb.ne[0], c[1] % sb.ne[1], c[2] % sb.ne[2], c[3] % sb.ne[3]));
        float z;
        switch (op) {
            case BIN_ADD: z = x + y; break;
            case BIN_SUB: z = x - y; break;
            case BIN_MUL: z = x * y; break;
            default: z = x / y; break;
        }
        store_as(td, d + shape_offset(sd, c[0], c[1], c[2], c[3]), z);
    }
}

// ---- unary -----------------------------------------------------------------------------

// ggml_unary_op's numbers, then the plain ops as numbers of our own from 100.
#define UN_ABS 0
#define UN_SGN 1
#define UN_NEG 2
#define UN_STEP 3
#define UN_TANH 4
#define UN_ELU 5
#define UN_RELU 6
#define UN_SIGMOID 7
#define UN_GELU 8
#define UN_GELU_QUICK 9
#define UN_SILU 10
#define UN_HARDSWISH 11
#define UN_HARDSIGMOID 12
#define UN_EXP 13
#define UN_EXPM1 14
#define UN_SOFTPLUS 15
#define UN_GELU_ERF 16
#define UN_FLOOR 18
#define UN_CEIL 19
#define UN_ROUND 20
#define UN_TRUNC 21
#define UN_SQR 100
#define UN_SQRT 101
#define UN_LOG 102
#define UN_SIN 103
#define UN_COS 104
#define UN_SCALE 105       // p0 * x + p1
#define UN_CLAMP 106       // between p0 and p1
#define UN_LEAKY_RELU 107  // slope p0

#define GELU_COEF_A 0.044715f
#define GELU_QUICK_COEF -1.702f
#define SQRT_2_OVER_PI 0.79788456080286535587989211986876f
#define SQRT_2_INV 0.70710678118654752440084436210484f

__device__ __forceinline__ float gelu(float x) {
    return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
}

__device__ __forceinline__ float gelu_quick(float x) {
    return x * (1.0f / (1.0f + expf(GELU_QUICK_COEF * x)));
}

__device__ __forceinline__ float gelu_erf(float x) {
    return 0.5f * x * (1.0f + erff(x * SQRT_2_INV));
}

__device__ __forceinline__ float silu(float x) {
    return x / (1.0f + expf(-x));
}

__device__ __forceinline__ float unary_value(int fn, float x, float p0, float p1) {
    switch (fn) {
        case UN_ABS: return fabsf(x);
        case UN_SGN: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
        case UN_NEG: return -x;
        case UN_STEP: return x > 0.0f ? 1.0f : 0.0f;
        case UN_TANH: return tanhf(x);
        case UN_ELU: return x > 0.0f ? x : expm1f(x);
        case UN_RELU: return x > 0.0f ? x : 0.0f;
        case UN_SIGMOID: return 1.0f / (1.0f + expf(-x));
        case UN_GELU: return gelu(x);
        case UN_GELU_QUICK: return gelu_quick(x);
        case UN_SILU: return silu(x);
        case UN_HARDSWISH: return x * fminf(1.0f, fmaxf(0.0f, (x + 3.0f) / 6.0f));
        case UN_HARDSIGMOID: return fminf(1.0f, fmaxf(0.0f, (x + 3.0f) / 6.0f));
        case UN_EXP: return expf(x);
        case UN_EXPM1: return expm1f(x);
        case UN_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
        case UN_GELU_ERF: return gelu_erf(x);
        case UN_FLOOR: return floorf(x);
        case UN_CEIL: return ceilf(x);
        case UN_ROUND: return roundf(x);
        case UN_TRUNC: return truncf(x);
        case UN_SQR: return x * x;
        case UN_SQRT: return sqrtf(x);
        case UN_LOG: return logf(x);
        case UN_SIN: return sinf(x);
        case UN_COS: return cosf(x);
        case UN_SCALE: return p0 * x + p1;
        case UN_CLAMP: return fminf(fmaxf(x, p0), p1);
        default: return x > 0.0f ? x : p0 * x;  // UN_LEAKY_RELU
    }
}

// dst = fn(a), element by element (same shape).
extern "C" __global__ void unary(int fn, float p0, float p1, shape sa, const char * a, int ta, shape sd, char * d, int td) {
    GRID_STRIDE(i, shape_elements(sd)) {
        i64 c[4];
        shape_coords(sd, sd.ne[0], i, c);
        const float x = load_as(ta, a + shape_offset(sa, c[0], c[1], c[2], c[3]));
        store_as(td, d + shape_offset(sd, c[0], c[1], c[2], c[3]), unary_value(fn, x, p0, p1));
    }
}

// ---- gated linear units ----------------------------------------------------------------

#define GLU_REGLU 0
#define GLU_GEGLU 1
#define GLU_SWIGLU 2
#define GLU_SWIGLU_OAI 3
#define GLU_GEGLU_ERF 4
#define GLU_GEGLU_QUICK 5
#define GLU_SWIGLU_CLAMP 6

__device__ __forceinline__ float glu_value(int fn, float x, float g, float alpha, float limit) {
    switch (fn) {
        case GLU_REGLU: return x > 0.0f ? x * g : 0.0f;
        case GLU_GEGLU: return gelu(x) * g;
        case GLU_SWIGLU: return silu(x) * g;
        case GLU_SWIGLU_OAI: {
            x = fminf(x, limit);
            g = fminf(fmaxf(g, -limit), limit);
            return x / (1.0f + expf(-alpha * x)) * (g + 1.0f);
        }
        case GLU_GEGLU_ERF: return gelu_erf(x) * g;
        case GLU_GEGLU_QUICK: return gelu_quick(x) * g;
        default: {  // GLU_SWIGLU_CLAMP
            x = fminf(x, limit);
            g = fminf(fmaxf(g, -limit), limit);
            return silu(x) * g;
        }
    }
}

// dst = fn(x) * g. With `b` null both halves come from the rows of `a` (x first, or g first
// when `swapped`); otherwise x from `a` and g from `b`, same shape as dst.
extern "C" __global__ void glu(int fn, int swapped, float alpha, float limit, shape sa, const char * a, shape sb,
                               const char * b, int t, shape sd, char * d) {
    const i64 nc = sd.ne[0];
    GRID_STRIDE(i, shape_elements(sd)) {
        i64 c[4];
        shape_coords(sd, sd.ne[0], i, c);
        const char * px;
        const char * pg;
        if (b == nullptr) {
            const char * first = a + shape_offset(sa, c[0], c[1], c[2], c[3]);
            const char * second = a + shape_offset(sa, c[0] + nc, c[1], c[2], c[3]);
            px = swapped ? second : first;
            pg = swapped ? first : second;
        } else {
            px = a + shape_offset(sa, c[0], c[1], c[2], c[3]);
            pg = b + shape_offset(sb, c[0], c[1], c[2], c[3]);
        }
        const float v = glu_value(fn, load_as(t, px), load_as(t, pg), alpha, limit);
        store_as(t, d + shape_offset(sd, c[0], c[1], c[2], c[3]), v);
    }
}
