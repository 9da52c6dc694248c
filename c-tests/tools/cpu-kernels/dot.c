// Differential tool for ggml-cpu's exported dot products and row quantizers: every
// ggml_vec_dot_* (and its _generic twin) over deterministic rows, and every CPU quantize_row_*
// (and its _generic twin) on a deterministic row. Built against the reference and against
// ggml-rs by scripts/compare-cpu-kernels, which compares the printed lines
// "LABEL TOL V1 V2 ...". The prototypes are the reference's private ones (ggml-cpu/quants.h,
// ggml-cpu/vec.h), declared here.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

typedef void (*vec_dot_fn)(int n, float * s, size_t bs, const void * x, size_t bx, const void * y, size_t by, int nrc);
typedef void (*quantize_fn)(const float * x, void * y, int64_t k);

#define DOT(name) void name(int n, float * s, size_t bs, const void * x, size_t bx, const void * y, size_t by, int nrc);
#define QUANT(name) void name(const float * x, void * y, int64_t k);

DOT(ggml_vec_dot_f32) DOT(ggml_vec_dot_f16) DOT(ggml_vec_dot_bf16)
DOT(ggml_vec_dot_q1_0_q8_0) DOT(ggml_vec_dot_q1_0_q8_0_generic)
DOT(ggml_vec_dot_q2_0_q8_0)
DOT(ggml_vec_dot_q4_0_q8_0) DOT(ggml_vec_dot_q4_0_q8_0_generic)
DOT(ggml_vec_dot_q4_1_q8_1) DOT(ggml_vec_dot_q4_1_q8_1_generic)
DOT(ggml_vec_dot_q5_0_q8_0) DOT(ggml_vec_dot_q5_0_q8_0_generic)
DOT(ggml_vec_dot_q5_1_q8_1) DOT(ggml_vec_dot_q5_1_q8_1_generic)
DOT(ggml_vec_dot_q8_0_q8_0) DOT(ggml_vec_dot_q8_0_q8_0_generic)
DOT(ggml_vec_dot_mxfp4_q8_0) DOT(ggml_vec_dot_mxfp4_q8_0_generic)
DOT(ggml_vec_dot_nvfp4_q8_0) DOT(ggml_vec_dot_nvfp4_q8_0_generic)
DOT(ggml_vec_dot_iq4_nl_q8_0) DOT(ggml_vec_dot_iq4_nl_q8_0_generic)
DOT(ggml_vec_dot_q2_K_q8_K) DOT(ggml_vec_dot_q2_K_q8_K_generic)
DOT(ggml_vec_dot_q3_K_q8_K) DOT(ggml_vec_dot_q3_K_q8_K_generic)
DOT(ggml_vec_dot_q4_K_q8_K) DOT(ggml_vec_dot_q4_K_q8_K_generic)
DOT(ggml_vec_dot_q5_K_q8_K) DOT(ggml_vec_dot_q5_K_q8_K_generic)
DOT(ggml_vec_dot_q6_K_q8_K) DOT(ggml_vec_dot_q6_K_q8_K_generic)
DOT(ggml_vec_dot_tq1_0_q8_K) DOT(ggml_vec_dot_tq1_0_q8_K_generic)
DOT(ggml_vec_dot_tq2_0_q8_K) DOT(ggml_vec_dot_tq2_0_q8_K_generic)
DOT(ggml_vec_dot_iq4_xs_q8_K) DOT(ggml_vec_dot_iq4_xs_q8_K_generic)
DOT(ggml_vec_dot_iq2_xxs_q8_K) DOT(ggml_vec_dot_iq2_xxs_q8_K_generic)
DOT(ggml_vec_dot_iq2_xs_q8_K) DOT(ggml_vec_dot_iq2_xs_q8_K_generic)
DOT(ggml_vec_dot_iq2_s_q8_K) DOT(ggml_vec_dot_iq2_s_q8_K_generic)
DOT(ggml_vec_dot_iq3_xxs_q8_K) DOT(ggml_vec_dot_iq3_xxs_q8_K_generic)
DOT(ggml_vec_dot_iq3_s_q8_K) DOT(ggml_vec_dot_iq3_s_q8_K_generic)
DOT(ggml_vec_dot_iq1_s_q8_K) DOT(ggml_vec_dot_iq1_s_q8_K_generic)
DOT(ggml_vec_dot_iq1_m_q8_K) DOT(ggml_vec_dot_iq1_m_q8_K_generic)

QUANT(quantize_row_q1_0) QUANT(quantize_row_q2_0) QUANT(quantize_row_q4_0) QUANT(quantize_row_q4_1)
QUANT(quantize_row_q5_0) QUANT(quantize_row_q5_1) QUANT(quantize_row_q8_0) QUANT(quantize_row_q8_1)
QUANT(quantize_row_mxfp4) QUANT(quantize_row_nvfp4) QUANT(quantize_row_q2_K) QUANT(quantize_row_q3_K)
QUANT(quantize_row_q4_K) QUANT(quantize_row_q5_K) QUANT(quantize_row_q6_K) QUANT(quantize_row_q8_K)
QUANT(quantize_row_tq1_0) QUANT(quantize_row_tq2_0) QUANT(quantize_row_iq4_nl) QUANT(quantize_row_iq4_xs)
QUANT(quantize_row_q8_0_generic) QUANT(quantize_row_q8_1_generic) QUANT(quantize_row_q8_K_generic)

// Relative tolerances. Products of float terms (the block scales, the super-block sums) are
// summed in an order of each build's choosing, SIMD or scalar: of 2048 values, the K-quants'
// differ by up to 6e-6 and the scalar Q4_1 by 3e-6. The quantizers agree byte for byte.
#define TOL_SIMD 1e-5
#define TOL_GENERIC 1e-5

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float next_value(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    // a value in [-1, 1) with an occasional outlier, as activations have
    float v = (float)((rng_state >> 40) & 0xffffff) / (float)0x800000 - 1.0f;
    return ((rng_state >> 20) & 63) == 0 ? v * 6.0f : v;
}

static void fill(float * x, int n) {
    for (int i = 0; i < n; i++) {
        x[i] = next_value();
    }
}

struct dot_case {
    const char * name;
    enum ggml_type type;
    vec_dot_fn simd;
    vec_dot_fn generic; // NULL where the reference exports none
    quantize_fn activations;
};

#define N_ROWS 4
#define N_MAX 2048

// Weight rows of `type` from floats: the float types converted, the quantized ones through
// ggml_quantize_chunk (with an importance matrix where the type requires one).
static void weights(enum ggml_type type, const float * x, void * out, int n) {
    if (type == GGML_TYPE_F32) {
        memcpy(out, x, n * sizeof(float));
    } else if (type == GGML_TYPE_F16) {
        ggml_fp32_to_fp16_row(x, out, n);
    } else if (type == GGML_TYPE_BF16) {
        ggml_fp32_to_bf16_row(x, out, n);
    } else {
        static float imatrix[N_MAX];
        for (int i = 0; i < n; i++) {
            imatrix[i] = 0.5f + (float)((i * 37) % 17) / 8.0f;
        }
        ggml_quantize_chunk(type, x, out, 0, 1, n, ggml_quantize_requires_imatrix(type) ? imatrix : NULL);
    }
}

static void print_line(const char * label, double tol, const float * v, int count) {
    printf("%s %g", label, tol);
    for (int i = 0; i < count; i++) {
        printf(" %.9g", v[i]);
    }
    printf("\n");
}

static void run_dot(const struct dot_case * c, int n) {
    static float xf[N_MAX], yf[N_MAX];
    static uint8_t xq[N_MAX * 4], yq[N_MAX * 4];
    float simd[N_ROWS], generic[N_ROWS];
    for (int r = 0; r < N_ROWS; r++) {
        fill(xf, n);
        fill(yf, n);
        weights(c->type, xf, xq, n);
        if (c->activations) {
            c->activations(yf, yq, n);
        } else {
            weights(c->type, yf, yq, n);
        }
        simd[r] = NAN;
        c->simd(n, &simd[r], 0, xq, 0, yq, 0, 1);
        if (c->generic) {
            generic[r] = NAN;
            c->generic(n, &generic[r], 0, xq, 0, yq, 0, 1);
        }
    }
    char label[96];
    snprintf(label, sizeof label, "dot_%s_n%d", c->name, n);
    print_line(label, TOL_SIMD, simd, N_ROWS);
    if (c->generic) {
        snprintf(label, sizeof label, "dot_%s_generic_n%d", c->name, n);
        print_line(label, TOL_GENERIC, generic, N_ROWS);
    }
}

struct quant_case {
    const char * name;
    enum ggml_type type;
    quantize_fn fn;
};

static void run_quant(const struct quant_case * c, int n) {
    static float x[N_MAX];
    static uint8_t y[N_MAX * 4];
    fill(x, n);
    size_t size = ggml_row_size(c->type, n);
    memset(y, 0xa5, size);
    c->fn(x, y, n);
    printf("quantize_row_%s_n%d 0", c->name, n);
    for (size_t i = 0; i < size; i++) {
        printf(" %u", y[i]);
    }
    printf("\n");
}

int main(void) {
    ggml_cpu_init();

    const struct dot_case dots[] = {
        {"f32", GGML_TYPE_F32, ggml_vec_dot_f32, NULL, NULL},
        {"f16", GGML_TYPE_F16, ggml_vec_dot_f16, NULL, NULL},
        {"bf16", GGML_TYPE_BF16, ggml_vec_dot_bf16, NULL, NULL},
        {"q1_0_q8_0", GGML_TYPE_Q1_0, ggml_vec_dot_q1_0_q8_0, ggml_vec_dot_q1_0_q8_0_generic, quantize_row_q8_0},
        {"q2_0_q8_0", GGML_TYPE_Q2_0, ggml_vec_dot_q2_0_q8_0, NULL, quantize_row_q8_0},
        {"q4_0_q8_0", GGML_TYPE_Q4_0, ggml_vec_dot_q4_0_q8_0, ggml_vec_dot_q4_0_q8_0_generic, quantize_row_q8_0},
        {"q4_1_q8_1", GGML_TYPE_Q4_1, ggml_vec_dot_q4_1_q8_1, ggml_vec_dot_q4_1_q8_1_generic, quantize_row_q8_1},
        {"q5_0_q8_0", GGML_TYPE_Q5_0, ggml_vec_dot_q5_0_q8_0, ggml_vec_dot_q5_0_q8_0_generic, quantize_row_q8_0},
        {"q5_1_q8_1", GGML_TYPE_Q5_1, ggml_vec_dot_q5_1_q8_1, ggml_vec_dot_q5_1_q8_1_generic, quantize_row_q8_1},
        {"q8_0_q8_0", GGML_TYPE_Q8_0, ggml_vec_dot_q8_0_q8_0, ggml_vec_dot_q8_0_q8_0_generic, quantize_row_q8_0},
        {"mxfp4_q8_0", GGML_TYPE_MXFP4, ggml_vec_dot_mxfp4_q8_0, ggml_vec_dot_mxfp4_q8_0_generic, quantize_row_q8_0},
        {"nvfp4_q8_0", GGML_TYPE_NVFP4, ggml_vec_dot_nvfp4_q8_0, ggml_vec_dot_nvfp4_q8_0_generic, quantize_row_q8_0},
        {"iq4_nl_q8_0", GGML_TYPE_IQ4_NL, ggml_vec_dot_iq4_nl_q8_0, ggml_vec_dot_iq4_nl_q8_0_generic, quantize_row_q8_0},
        {"q2_K_q8_K", GGML_TYPE_Q2_K, ggml_vec_dot_q2_K_q8_K, ggml_vec_dot_q2_K_q8_K_generic, quantize_row_q8_K},
        {"q3_K_q8_K", GGML_TYPE_Q3_K, ggml_vec_dot_q3_K_q8_K, ggml_vec_dot_q3_K_q8_K_generic, quantize_row_q8_K},
        {"q4_K_q8_K", GGML_TYPE_Q4_K, ggml_vec_dot_q4_K_q8_K, ggml_vec_dot_q4_K_q8_K_generic, quantize_row_q8_K},
        {"q5_K_q8_K", GGML_TYPE_Q5_K, ggml_vec_dot_q5_K_q8_K, ggml_vec_dot_q5_K_q8_K_generic, quantize_row_q8_K},
        {"q6_K_q8_K", GGML_TYPE_Q6_K, ggml_vec_dot_q6_K_q8_K, ggml_vec_dot_q6_K_q8_K_generic, quantize_row_q8_K},
        {"tq1_0_q8_K", GGML_TYPE_TQ1_0, ggml_vec_dot_tq1_0_q8_K, ggml_vec_dot_tq1_0_q8_K_generic, quantize_row_q8_K},
        {"tq2_0_q8_K", GGML_TYPE_TQ2_0, ggml_vec_dot_tq2_0_q8_K, ggml_vec_dot_tq2_0_q8_K_generic, quantize_row_q8_K},
        {"iq4_xs_q8_K", GGML_TYPE_IQ4_XS, ggml_vec_dot_iq4_xs_q8_K, ggml_vec_dot_iq4_xs_q8_K_generic, quantize_row_q8_K},
        {"iq2_xxs_q8_K", GGML_TYPE_IQ2_XXS, ggml_vec_dot_iq2_xxs_q8_K, ggml_vec_dot_iq2_xxs_q8_K_generic, quantize_row_q8_K},
        {"iq2_xs_q8_K", GGML_TYPE_IQ2_XS, ggml_vec_dot_iq2_xs_q8_K, ggml_vec_dot_iq2_xs_q8_K_generic, quantize_row_q8_K},
        {"iq2_s_q8_K", GGML_TYPE_IQ2_S, ggml_vec_dot_iq2_s_q8_K, ggml_vec_dot_iq2_s_q8_K_generic, quantize_row_q8_K},
        {"iq3_xxs_q8_K", GGML_TYPE_IQ3_XXS, ggml_vec_dot_iq3_xxs_q8_K, ggml_vec_dot_iq3_xxs_q8_K_generic, quantize_row_q8_K},
        {"iq3_s_q8_K", GGML_TYPE_IQ3_S, ggml_vec_dot_iq3_s_q8_K, ggml_vec_dot_iq3_s_q8_K_generic, quantize_row_q8_K},
        {"iq1_s_q8_K", GGML_TYPE_IQ1_S, ggml_vec_dot_iq1_s_q8_K, ggml_vec_dot_iq1_s_q8_K_generic, quantize_row_q8_K},
        {"iq1_m_q8_K", GGML_TYPE_IQ1_M, ggml_vec_dot_iq1_m_q8_K, ggml_vec_dot_iq1_m_q8_K_generic, quantize_row_q8_K},
    };
    // 256 values: one super-block; 2048: several of every block size
    const int sizes[] = {256, 2048};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (size_t i = 0; i < sizeof dots / sizeof dots[0]; i++) {
            run_dot(&dots[i], sizes[s]);
        }
    }

    const struct quant_case quants[] = {
        {"q1_0", GGML_TYPE_Q1_0, quantize_row_q1_0},
        {"q2_0", GGML_TYPE_Q2_0, quantize_row_q2_0},
        {"q4_0", GGML_TYPE_Q4_0, quantize_row_q4_0},
        {"q4_1", GGML_TYPE_Q4_1, quantize_row_q4_1},
        {"q5_0", GGML_TYPE_Q5_0, quantize_row_q5_0},
        {"q5_1", GGML_TYPE_Q5_1, quantize_row_q5_1},
        {"q8_0", GGML_TYPE_Q8_0, quantize_row_q8_0},
        {"q8_1", GGML_TYPE_Q8_1, quantize_row_q8_1},
        {"mxfp4", GGML_TYPE_MXFP4, quantize_row_mxfp4},
        {"nvfp4", GGML_TYPE_NVFP4, quantize_row_nvfp4},
        {"q2_K", GGML_TYPE_Q2_K, quantize_row_q2_K},
        {"q3_K", GGML_TYPE_Q3_K, quantize_row_q3_K},
        {"q4_K", GGML_TYPE_Q4_K, quantize_row_q4_K},
        {"q5_K", GGML_TYPE_Q5_K, quantize_row_q5_K},
        {"q6_K", GGML_TYPE_Q6_K, quantize_row_q6_K},
        {"q8_K", GGML_TYPE_Q8_K, quantize_row_q8_K},
        {"tq1_0", GGML_TYPE_TQ1_0, quantize_row_tq1_0},
        {"tq2_0", GGML_TYPE_TQ2_0, quantize_row_tq2_0},
        {"iq4_nl", GGML_TYPE_IQ4_NL, quantize_row_iq4_nl},
        {"iq4_xs", GGML_TYPE_IQ4_XS, quantize_row_iq4_xs},
        {"q8_0_generic", GGML_TYPE_Q8_0, quantize_row_q8_0_generic},
        {"q8_1_generic", GGML_TYPE_Q8_1, quantize_row_q8_1_generic},
        {"q8_K_generic", GGML_TYPE_Q8_K, quantize_row_q8_K_generic},
    };
    const int qsizes[] = {256, 1024};
    for (size_t s = 0; s < sizeof qsizes / sizeof qsizes[0]; s++) {
        for (size_t i = 0; i < sizeof quants / sizeof quants[0]; i++) {
            run_quant(&quants[i], qsizes[s]);
        }
    }
    return 0;
}
