// Differential tool for ggml-cpu's exported row helpers (ggml_vec_silu_f32,
// ggml_vec_swiglu_f32, ggml_vec_soft_max_f32, ggml_vec_log_soft_max_f32, ggml_vec_cvar_f32)
// and llamafile_sgemm, over deterministic inputs. Built against the reference and against
// ggml-rs by scripts/compare-cpu-kernels, which compares the printed lines
// "LABEL TOL V1 V2 ...". The prototypes are the reference's private ones (ggml-cpu/vec.h,
// ggml-cpu/llamafile/sgemm.h, ggml-cpu-impl.h), declared here.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

void ggml_vec_silu_f32(const int n, float * y, const float * x);
void ggml_vec_swiglu_f32(const int n, float * y, const float * x, const float * g);
double ggml_vec_soft_max_f32(const int n, float * y, const float * x, float max);
double ggml_vec_log_soft_max_f32(const int n, float * y, const float * x, float max);
double ggml_vec_cvar_f32(const int n, float * y, const float * x, const float mean);

// struct ggml_compute_params (ggml-cpu-impl.h)
struct ggml_compute_params {
    int ith, nth;
    size_t wsize;
    void * wdata;
    struct ggml_threadpool * threadpool;
    bool use_ref;
};

bool llamafile_sgemm(const struct ggml_compute_params * params, int64_t m, int64_t n, int64_t k, const void * A,
                     int64_t lda, const void * B, int64_t ldb, void * C, int64_t ldc, int Atype, int Btype, int Ctype);
void quantize_row_q8_0(const float * x, void * y, int64_t k);
void quantize_row_q8_1(const float * x, void * y, int64_t k);
void quantize_row_q8_K(const float * x, void * y, int64_t k);

// The row helpers' SIMD code and ours may round the last bit of an exponential differently
// now and then; sums in double agree closely.
#define TOL_ROW 1e-6
// Products of 32..128 terms summed in each build's order.
#define TOL_GEMM 1e-5

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static float next_value(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / (float)0x800000 - 1.0f;
}

static void fill(float * x, int n, float scale) {
    for (int i = 0; i < n; i++) {
        x[i] = next_value() * scale;
    }
}

static void print_floats(const char * label, double tol, const float * v, int count) {
    printf("%s %g", label, tol);
    for (int i = 0; i < count; i++) {
        printf(" %.9g", v[i]);
    }
    printf("\n");
}

#define N_MAX 1024

static void rows(int n) {
    static float x[N_MAX], g[N_MAX], y[N_MAX];
    char label[64];
    fill(x, n, 8.0f);
    fill(g, n, 2.0f);

    ggml_vec_silu_f32(n, y, x);
    snprintf(label, sizeof label, "silu_n%d", n);
    print_floats(label, TOL_ROW, y, n);

    ggml_vec_swiglu_f32(n, y, x, g);
    snprintf(label, sizeof label, "swiglu_n%d", n);
    print_floats(label, TOL_ROW, y, n);

    float max = -INFINITY, mean = 0.0f;
    for (int i = 0; i < n; i++) {
        max = x[i] > max ? x[i] : max;
        mean += x[i] / n;
    }
    float sum = (float)ggml_vec_soft_max_f32(n, y, x, max);
    snprintf(label, sizeof label, "soft_max_sum_n%d", n);
    print_floats(label, TOL_ROW, &sum, 1);
    snprintf(label, sizeof label, "soft_max_n%d", n);
    print_floats(label, TOL_ROW, y, n);

    sum = (float)ggml_vec_log_soft_max_f32(n, y, x, max);
    snprintf(label, sizeof label, "log_soft_max_sum_n%d", n);
    print_floats(label, TOL_ROW, &sum, 1);
    snprintf(label, sizeof label, "log_soft_max_n%d", n);
    print_floats(label, TOL_ROW, y, n);

    sum = (float)ggml_vec_cvar_f32(n, y, x, mean);
    snprintf(label, sizeof label, "cvar_n%d", n);
    print_floats(label, TOL_ROW, &sum, 1);
    snprintf(label, sizeof label, "cvar_centred_n%d", n);
    print_floats(label, TOL_ROW, y, n);

    // in place, as the reference's loops allow
    memcpy(y, x, n * sizeof(float));
    ggml_vec_silu_f32(n, y, y);
    snprintf(label, sizeof label, "silu_in_place_n%d", n);
    print_floats(label, TOL_ROW, y, n);
}

// Rows of `type` from floats, `stride` bytes apart: floats converted, Q8_0, Q8_1 and Q8_K
// activations as the CPU quantizes them, other quantized types through ggml_quantize_chunk.
static void convert_rows(enum ggml_type type, const float * x, int rows, int k, uint8_t * out, size_t stride) {
    for (int r = 0; r < rows; r++) {
        const float * src = x + (size_t)r * k;
        uint8_t * dst = out + r * stride;
        if (type == GGML_TYPE_F32) {
            memcpy(dst, src, k * sizeof(float));
        } else if (type == GGML_TYPE_F16) {
            ggml_fp32_to_fp16_row(src, (ggml_fp16_t *)dst, k);
        } else if (type == GGML_TYPE_BF16) {
            ggml_fp32_to_bf16_row(src, (ggml_bf16_t *)dst, k);
        } else if (type == GGML_TYPE_Q8_0) {
            quantize_row_q8_0(src, dst, k);
        } else if (type == GGML_TYPE_Q8_1) {
            quantize_row_q8_1(src, dst, k);
        } else if (type == GGML_TYPE_Q8_K) {
            quantize_row_q8_K(src, dst, k);
        } else {
            ggml_quantize_chunk(type, src, dst, 0, 1, k, NULL);
        }
    }
}

struct gemm_case {
    enum ggml_type a, b, c;
    int m, n, k; // k in values
    int nth;     // members, called one after the other (the quantized products do not meet)
};

static void gemm(struct ggml_threadpool * pool, const struct gemm_case * t) {
    static float xa[64 * 256], xb[64 * 256], c[64 * 64];
    static uint8_t qa[64 * 1024], qb[64 * 1024];
    const int64_t blck = ggml_blck_size(t->a);
    const int64_t lda = t->k / blck + 3, ldb = t->k / ggml_blck_size(t->b) + 1, ldc = t->m + 2;
    fill(xa, t->m * t->k, 1.0f);
    fill(xb, t->n * t->k, 1.0f);
    convert_rows(t->a, xa, t->m, t->k, qa, lda * ggml_type_size(t->a));
    convert_rows(t->b, xb, t->n, t->k, qb, ldb * ggml_type_size(t->b));
    for (int i = 0; i < 64 * 64; i++) {
        c[i] = -1.0f;
    }
    float ok = 1.0f;
    for (int ith = 0; ith < t->nth; ith++) {
        struct ggml_compute_params p = {ith, t->nth, 0, NULL, pool, false};
        ok = llamafile_sgemm(&p, t->m, t->n, t->k / blck, qa, lda, qb, ldb, c, ldc, t->a, t->b, t->c) ? 1.0f : 0.0f;
    }
    char label[96];
    snprintf(label, sizeof label, "sgemm_%s_%s_%s_m%d_n%d_k%d_nth%d_ok", ggml_type_name(t->a), ggml_type_name(t->b),
             ggml_type_name(t->c), t->m, t->n, t->k, t->nth);
    print_floats(label, 0, &ok, 1);
    if (ok != 0.0f) {
        label[strlen(label) - 3] = '\0';
        for (int j = 0; j < t->n; j++) {
            char col[112];
            snprintf(col, sizeof col, "%s_col%d", label, j);
            print_floats(col, TOL_GEMM, c + ldc * j, t->m);
        }
    }
}

int main(void) {
    ggml_cpu_init();

    const int sizes[] = {5, 64, 1000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        rows(sizes[i]);
    }

    // the float products need a pool: the reference meets at its barrier
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(1);
    struct ggml_threadpool * pool = ggml_threadpool_new(&tpp);
    const struct gemm_case cases[] = {
        // taken
        {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, 12, 5, 64, 1},
        {GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F32, 8, 3, 128, 1},
        {GGML_TYPE_BF16, GGML_TYPE_BF16, GGML_TYPE_F32, 4, 2, 32, 1},
        {GGML_TYPE_Q8_0, GGML_TYPE_Q8_0, GGML_TYPE_F32, 7, 5, 96, 1},
        {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_F32, 5, 3, 64, 1},
        {GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, GGML_TYPE_F32, 9, 4, 128, 1},
        {GGML_TYPE_IQ4_NL, GGML_TYPE_Q8_0, GGML_TYPE_F32, 6, 6, 64, 1},
        {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_F32, 19, 7, 256, 2},
        {GGML_TYPE_Q8_0, GGML_TYPE_Q8_0, GGML_TYPE_F32, 33, 9, 64, 3},
        // declined
        {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, 8, 1, 64, 1},
        {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, 6, 4, 64, 1},
        {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, 8, 4, 12, 1},
        {GGML_TYPE_F16, GGML_TYPE_F32, GGML_TYPE_F32, 8, 4, 64, 1},
        {GGML_TYPE_Q4_1, GGML_TYPE_Q8_1, GGML_TYPE_F32, 8, 4, 64, 1},
        {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_F16, 8, 4, 64, 1},
        {GGML_TYPE_Q4_K, GGML_TYPE_Q8_K, GGML_TYPE_F32, 8, 4, 256, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gemm(pool, &cases[i]);
    }
    ggml_threadpool_free(pool);
    return 0;
}
