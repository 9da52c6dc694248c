// ROPE in every layout ggml knows: normal (elements 2i, 2i + 1 turn together), NeoX and the
// multi-section modes (i, i + n_pairs). Each pair turns by an angle that grows with the
// token's position and falls with the pair's index, with YaRN's blend of interpolated and
// extrapolated angles. The multi-section modes (M-RoPE, interleaved M-RoPE, vision) take four
// positions per token (time, height, width, extra) and give each pair the position of its
// section. The rotated elements start at `n_offs`; the others are copied. A thread per
// rotated pair or copied element.
// shared-memory budget: 0 bytes
#include "prelude.cuh"

#define ROPE_NORMAL 0
#define ROPE_MROPE 8   // the bit every multi-section mode has
#define ROPE_VISION 24
#define ROPE_IMROPE 40

struct rope_params {
    int n_dims;
    int mode;
    int n_offs;          // the first rotated element of a row
    int n_pairs;         // pairs rotated per row
    int sections[4];     // pairs per position slot, in the multi-section modes
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

// The position slot (0 time, 1 height, 2 width, 3 extra) of the pair at `sector` of its
// cycle through the sections: the sections in turn, or interleaved (t h w t h w ..., each
// slot for three times its size, the rest extra).
__device__ __forceinline__ int section_slot(const rope_params & p, int sector) {
    const int * s = p.sections;
    if (p.mode == ROPE_IMROPE) {
        const int m = sector % 3;
        if (m == 1 && sector < 3 * s[1]) return 1;
        if (m == 2 && sector < 3 * s[2]) return 2;
        if (m == 0 && sector < 3 * s[0]) return 0;
        return 3;
    }
    if (sector >= s[0] && sector < s[0] + s[1]) return 1;
    if (sector >= s[0] + s[1] && sector < s[0] + s[1] + s[2]) return 2;
    if (sector >= s[0] + s[1] + s[2]) return 3;
    return 0;
}

// Vision RoPE starts each slot's angle again at the first pair of its section, every cycle:
// the power of theta_scale that pair `pair` (at `sector`, of slot `slot`) takes. A slot
// whose section starts where an earlier one does (an empty section before it) never starts
// again, as in ggml, whose check takes the first slot starting there.
__device__ __forceinline__ int vision_power(const rope_params & p, int pair, int sector, int slot, int cycle) {
    const int * s = p.sections;
    const int starts[4] = { 0, s[0], s[0] + s[1], s[0] + s[1] + s[2] };
    for (int q = 0; q < slot; ++q) {
        if (starts[q] == starts[slot]) {
            return pair;
        }
    }
    if (starts[slot] >= cycle) {
        return pair;
    }
    if (sector >= starts[slot]) {
        return sector - starts[slot];
    }
    return pair >= cycle ? sector + cycle - starts[slot] : pair;  // started in the cycle before
}

// `x` and `dst` of one type (F32 or F16) and one shape [head size, heads, tokens, sequences];
// `pos` holds a position per token (four blocks of them, one per slot, in the multi-section
// modes); `freq_factors` (null for none) divides each pair's angle.
extern "C" __global__ void rope(rope_params p, shape sx, const char * x, shape sd, char * d, int type,
                                const i32 * pos, const float * freq_factors) {
    const i64 per_row = sx.ne[0] - p.n_pairs;  // a thread per rotated pair and per copied element
    const i64 n = per_row * sx.ne[1] * sx.ne[2] * sx.ne[3];
    const int cycle = p.sections[0] + p.sections[1] + p.sections[2] + p.sections[3];
    for (i64 k = (i64) blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (i64) gridDim.x * blockDim.x) {
        const i64 j = k % per_row;
        i64 r = k / per_row;
        const i64 i1 = r % sx.ne[1];
        r /= sx.ne[1];
        const i64 i2 = r % sx.ne[2];
        const i64 i3 = r / sx.ne[2];
        if (j >= p.n_pairs) {
            // the elements before n_offs, then those after the rotated ones
            i64 e = j - p.n_pairs;
            e += e >= p.n_offs ? 2 * p.n_pairs : 0;
            store_as(type, d + shape_offset(sd, e, i1, i2, i3), load_as(type, x + shape_offset(sx, e, i1, i2, i3)));
            continue;
        }
        const int pair = (int) j;
        int slot = 0;
        int power = pair;
        if (p.mode & ROPE_MROPE) {
            const int sector = pair % cycle;
            slot = section_slot(p, sector);
            if (p.mode == ROPE_VISION) {
                power = vision_power(p, pair, sector, slot, cycle);
            }
        }
        const float ff = freq_factors ? freq_factors[pair] : 1.0f;
        const float theta = (float) pos[i2 + slot * sx.ne[2]] * powf(p.theta_scale, (float) power) / ff;
        float c, s;
        yarn(p, theta, pair, c, s);
        // normal: neighbours; the others: the pair's index in each half of the rotated elements
        const i64 a = p.n_offs + (p.mode == ROPE_NORMAL ? 2 * pair : pair);
        const i64 b = a + (p.mode == ROPE_NORMAL ? 1 : p.n_pairs);
        const float x0 = load_as(type, x + shape_offset(sx, a, i1, i2, i3));
        const float x1 = load_as(type, x + shape_offset(sx, b, i1, i2, i3));
        store_as(type, d + shape_offset(sd, a, i1, i2, i3), x0 * c - x1 * s);
        store_as(type, d + shape_offset(sd, b, i1, i2, i3), x0 * s + x1 * c);
    }
}
