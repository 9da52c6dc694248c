// ROPE, normal and NeoX: each pair of a row's first `n_dims` values turns by an angle that
// grows with the token's position and falls with the pair's index, with YaRN's blend of
// interpolated and extrapolated angles; values past `n_dims` are copied. One thread per pair.
// shared-memory budget: 0 bytes
#include "prelude.cuh"

#define ROPE_NEOX 2

struct rope_params {
    int n_dims;
    int mode;
    float theta_scale;   // freq_base^(-2 / n_dims)
    float freq_scale;
    float ext_factor;
    float attn_factor;
    float corr_low;      // YaRN's correction range, in pairs (computed by the host)
    float corr_high;
};

// YaRN: the angle between interpolation (freq_scale * theta) and extrapolation (theta), and
// the magnitude scale that goes with it.
__device__ __forceinline__ void yarn(const rope_params & p, float theta_extrap, int pair, float & c, float & s) {
    const float theta_interp = p.freq_scale * theta_extrap;
    float theta = theta_interp;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
        const float y = ((float) pair - p.corr_low) / fmaxf(0.001f, p.corr_high - p.corr_low);
        const float ramp = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * p.ext_factor;
        theta = theta_interp * (1.0f - ramp) + theta_extrap * ramp;
        mscale *= 1.0f + 0.1f * logf(1.0f / p.freq_scale);
    }
    c = cosf(theta) * mscale;
    s = sinf(theta) * mscale;
}

// `x` and `dst` of one type (F32 or F16) and one shape [head size, heads, tokens, sequences];
// `pos` holds a position per token; `freq_factors` (null for none) divides each pair's angle.
extern "C" __global__ void rope(rope_params p, shape sx, const char * x, shape sd, char * d, int type,
                                const i32 * pos, const float * freq_factors) {
    const i64 half = sx.ne[0] / 2;
    const i64 n = half * sx.ne[1] * sx.ne[2] * sx.ne[3];
    for (i64 k = (i64) blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (i64) gridDim.x * blockDim.x) {
        const i64 i0 = 2 * (k % half);
        i64 r = k / half;
        const i64 i1 = r % sx.ne[1];
        r /= sx.ne[1];
        const i64 i2 = r % sx.ne[2];
        const i64 i3 = r / sx.ne[2];
        if (i0 >= p.n_dims) {
            for (int j = 0; j < 2; ++j) {
                const float v = load_as(type, x + shape_offset(sx, i0 + j, i1, i2, i3));
                store_as(type, d + shape_offset(sd, i0 + j, i1, i2, i3), v);
            }
            continue;
        }
        const int pair = (int) (i0 / 2);
        const float ff = freq_factors ? freq_factors[pair] : 1.0f;
        const float theta = (float) pos[i2] * powf(p.theta_scale, (float) pair) / ff;
        float c, s;
        yarn(p, theta, pair, c, s);
        // normal: neighbours (i0, i0 + 1); NeoX: the pair's index in each half of n_dims
        const i64 a = p.mode & ROPE_NEOX ? pair : i0;
        const i64 b = p.mode & ROPE_NEOX ? pair + p.n_dims / 2 : i0 + 1;
        const float x0 = load_as(type, x + shape_offset(sx, a, i1, i2, i3));
        const float x1 = load_as(type, x + shape_offset(sx, b, i1, i2, i3));
        store_as(type, d + shape_offset(sd, a, i1, i2, i3), x0 * c - x1 * s);
        store_as(type, d + shape_offset(sd, b, i1, i2, i3), x0 * s + x1 * c);
    }
}
