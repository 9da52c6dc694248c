// repack: the interleaved ("repacked") weight layouts' entry points of libggml-cpu
// (repack.h): every ggml_gemv_* / ggml_gemm_* on deterministic pseudo-random interleaved
// weights, and the ggml_quantize_mat_* activation quantizers. Built and compared against the
// reference by scripts/compare-cpu-kernels.
//
// Lines: "LABEL TOL V1 V2 ...". The quantizers' output bytes are printed whole (TOL 0, the
// scales' bytes included); the products' floats with a relative tolerance, since the order
// of a sum of floats is the implementation's.
//
// The weights are random bytes with sane scales written over the scale fields (fp16 from
// ggml_fp32_to_fp16, e8m0 exponents near 1): every byte pattern of the quants and of the
// K-quants' packed sub-block scales is a valid weight. gemv's activations are plain q8_0 /
// q8_K blocks built here; gemm's come from the quantize_mat function its layout pairs with.

#include "ggml.h"
#include "ggml-cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the reference's internal prototypes (ggml-cpu/repack.h) -----------------------------------

typedef void (*mat_fn)(int n, float * s, size_t bs, const void * vx, const void * vy, int nr, int nc);
typedef void (*quantize_mat_fn)(const float * x, void * vy, int64_t k);

#define MAT(name) void name(int n, float * s, size_t bs, const void * vx, const void * vy, int nr, int nc);
#define LAYOUTS(X)                                                      \
    X(q4_0_4x4_q8_0) X(q4_0_4x8_q8_0) X(q4_0_8x8_q8_0)                  \
    X(q8_0_4x4_q8_0) X(q8_0_4x8_q8_0)                                   \
    X(iq4_nl_4x4_q8_0) X(iq4_nl_8x8_q8_0)                               \
    X(mxfp4_4x4_q8_0) X(mxfp4_8x8_q8_0)                                 \
    X(q1_0_4x4_q8_0) X(q1_0_4x8_q8_0)                                   \
    X(q2_K_8x8_q8_K) X(q4_K_8x4_q8_K) X(q4_K_8x8_q8_K)                 \
    X(q5_K_8x4_q8_K) X(q5_K_8x8_q8_K) X(q6_K_8x4_q8_K) X(q6_K_8x8_q8_K)
#define DECLARE(l) MAT(ggml_gemv_##l) MAT(ggml_gemm_##l)
LAYOUTS(DECLARE)
MAT(ggml_gemv_q4_0_8x8_q8_0_generic) MAT(ggml_gemm_q4_0_8x8_q8_0_generic)
MAT(ggml_gemv_iq4_nl_8x8_q8_0_generic) MAT(ggml_gemm_iq4_nl_8x8_q8_0_generic)
MAT(ggml_gemv_mxfp4_8x8_q8_0_generic) MAT(ggml_gemm_mxfp4_8x8_q8_0_generic)
MAT(ggml_gemv_q2_K_8x8_q8_K_generic) MAT(ggml_gemm_q2_K_8x8_q8_K_generic)
MAT(ggml_gemv_q4_K_8x8_q8_K_generic) MAT(ggml_gemm_q4_K_8x8_q8_K_generic)

void ggml_quantize_mat_q8_0_4x4(const float * x, void * vy, int64_t k);
void ggml_quantize_mat_q8_0_4x8(const float * x, void * vy, int64_t k);
void ggml_quantize_mat_q8_0_4x8_generic(const float * x, void * vy, int64_t k);
void ggml_quantize_mat_q8_K_4x4(const float * x, void * vy, int64_t k);
void ggml_quantize_mat_q8_K_4x8(const float * x, void * vy, int64_t k);
void ggml_quantize_mat_q8_K_4x8_generic(const float * x, void * vy, int64_t k);

// ---- the blocks (ggml-common.h, repack.h) ------------------------------------------------------

#define QK_K 256
typedef struct { ggml_fp16_t d; int8_t qs[32]; } block_q8_0;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;
// four rows of activations, quants dealt B bytes at a time
typedef struct { ggml_fp16_t d[4]; int8_t qs[128]; } block_q8_0x4;
typedef struct { float d[4]; int8_t qs[QK_K * 4]; int16_t bsums[QK_K / 4]; } block_q8_Kx4;
// N weight rows: scales first, then the quants dealt B bytes at a time
typedef struct { ggml_fp16_t d[4]; uint8_t qs[64]; } block_q4_0x4;
typedef struct { ggml_fp16_t d[8]; uint8_t qs[128]; } block_q4_0x8;
typedef struct { ggml_fp16_t d[4]; int8_t qs[128]; } block_q8_0x4w;
typedef struct { ggml_fp16_t d[4]; uint8_t qs[64]; } block_q1_0x4;
typedef struct { uint8_t e[4]; uint8_t qs[64]; } block_mxfp4x4;
typedef struct { uint8_t e[8]; uint8_t qs[128]; } block_mxfp4x8;
typedef struct { ggml_fp16_t d[8], dmin[8]; uint8_t scales[128]; uint8_t qs[512]; } block_q2_Kx8;
typedef struct { ggml_fp16_t d[8], dmin[8]; uint8_t scales[96]; uint8_t qs[1024]; } block_q4_Kx8;
typedef struct { ggml_fp16_t d[8], dmin[8]; uint8_t scales[96]; uint8_t qh[256]; uint8_t qs[1024]; } block_q5_Kx8;
typedef struct { ggml_fp16_t d[8]; int8_t scales[128]; uint8_t ql[1024]; uint8_t qh[512]; } block_q6_Kx8;

_Static_assert(sizeof(block_q8_Kx4) == 1168, "block_q8_Kx4");
_Static_assert(sizeof(block_q5_Kx8) == 1408, "block_q5_Kx8");
_Static_assert(sizeof(block_q6_Kx8) == 1680, "block_q6_Kx8");

// ---- helpers -----------------------------------------------------------------------------------

static uint64_t rng_state;

static void rng_seed(uint64_t seed) { rng_state = seed * 0x9e3779b97f4a7c15ull + 1; }

static uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

// uniform in [lo, hi)
static float rng_float(float lo, float hi) { return lo + (hi - lo) * (float) (rng_next() >> 40) / (float) (1 << 24); }

static void fill_bytes(void * p, size_t n) {
    for (size_t i = 0; i < n; ++i) ((uint8_t *) p)[i] = (uint8_t) rng_next();
}

static void print_floats(const char * label, const char * tol, const float * v, size_t n) {
    printf("%s %s", label, tol);
    for (size_t i = 0; i < n; ++i) printf(" %.9g", v[i]);
    printf("\n");
}

static void print_bytes(const char * label, const void * p, size_t n) {
    printf("%s 0", label);
    for (size_t i = 0; i < n; ++i) printf(" %u", ((const uint8_t *) p)[i]);
    printf("\n");
}

// ---- layouts -----------------------------------------------------------------------------------

enum scales { HALVES, E8M0 };

struct layout {
    const char * name;
    mat_fn gemv, gemm;
    size_t bytes;       // one interleaved block
    int cols;           // rows interleaved (N)
    int qk;             // values per block
    int k_quant;        // activations q8_K (else q8_0)
    enum scales scales; // what the first fields are
    int n_scales;       // how many of them (d, and dmin for the K-quants)
    quantize_mat_fn quantize; // gemm's activations
};

#define L(name, gv, gm, blk, n, qk, kq, sc, ns, qz) { name, gv, gm, sizeof(blk), n, qk, kq, sc, ns, qz }
#define QM0_4 ggml_quantize_mat_q8_0_4x4
#define QM0_8 ggml_quantize_mat_q8_0_4x8
#define QMK_4 ggml_quantize_mat_q8_K_4x4
#define QMK_8 ggml_quantize_mat_q8_K_4x8

static const struct layout layouts[] = {
    L("q4_0_4x4", ggml_gemv_q4_0_4x4_q8_0, ggml_gemm_q4_0_4x4_q8_0, block_q4_0x4, 4, 32, 0, HALVES, 4, QM0_4),
    L("q4_0_4x8", ggml_gemv_q4_0_4x8_q8_0, ggml_gemm_q4_0_4x8_q8_0, block_q4_0x4, 4, 32, 0, HALVES, 4, QM0_8),
    L("q4_0_8x8", ggml_gemv_q4_0_8x8_q8_0, ggml_gemm_q4_0_8x8_q8_0, block_q4_0x8, 8, 32, 0, HALVES, 8, QM0_8),
    L("q4_0_8x8_generic", ggml_gemv_q4_0_8x8_q8_0_generic, ggml_gemm_q4_0_8x8_q8_0_generic, block_q4_0x8, 8, 32, 0, HALVES, 8, QM0_8),
    L("q8_0_4x4", ggml_gemv_q8_0_4x4_q8_0, ggml_gemm_q8_0_4x4_q8_0, block_q8_0x4w, 4, 32, 0, HALVES, 4, QM0_4),
    L("q8_0_4x8", ggml_gemv_q8_0_4x8_q8_0, ggml_gemm_q8_0_4x8_q8_0, block_q8_0x4w, 4, 32, 0, HALVES, 4, QM0_8),
    L("iq4_nl_4x4", ggml_gemv_iq4_nl_4x4_q8_0, ggml_gemm_iq4_nl_4x4_q8_0, block_q4_0x4, 4, 32, 0, HALVES, 4, QM0_4),
    L("iq4_nl_8x8", ggml_gemv_iq4_nl_8x8_q8_0, ggml_gemm_iq4_nl_8x8_q8_0, block_q4_0x8, 8, 32, 0, HALVES, 8, QM0_8),
    L("iq4_nl_8x8_generic", ggml_gemv_iq4_nl_8x8_q8_0_generic, ggml_gemm_iq4_nl_8x8_q8_0_generic, block_q4_0x8, 8, 32, 0, HALVES, 8, QM0_8),
    L("mxfp4_4x4", ggml_gemv_mxfp4_4x4_q8_0, ggml_gemm_mxfp4_4x4_q8_0, block_mxfp4x4, 4, 32, 0, E8M0, 4, QM0_4),
    L("mxfp4_8x8", ggml_gemv_mxfp4_8x8_q8_0, ggml_gemm_mxfp4_8x8_q8_0, block_mxfp4x8, 8, 32, 0, E8M0, 8, QM0_8),
    L("mxfp4_8x8_generic", ggml_gemv_mxfp4_8x8_q8_0_generic, ggml_gemm_mxfp4_8x8_q8_0_generic, block_mxfp4x8, 8, 32, 0, E8M0, 8, QM0_8),
    L("q1_0_4x4", ggml_gemv_q1_0_4x4_q8_0, ggml_gemm_q1_0_4x4_q8_0, block_q1_0x4, 4, 128, 0, HALVES, 4, QM0_4),
    L("q1_0_4x8", ggml_gemv_q1_0_4x8_q8_0, ggml_gemm_q1_0_4x8_q8_0, block_q1_0x4, 4, 128, 0, HALVES, 4, QM0_8),
    L("q2_K_8x8", ggml_gemv_q2_K_8x8_q8_K, ggml_gemm_q2_K_8x8_q8_K, block_q2_Kx8, 8, QK_K, 1, HALVES, 16, QMK_8),
    L("q2_K_8x8_generic", ggml_gemv_q2_K_8x8_q8_K_generic, ggml_gemm_q2_K_8x8_q8_K_generic, block_q2_Kx8, 8, QK_K, 1, HALVES, 16, QMK_8),
    L("q4_K_8x4", ggml_gemv_q4_K_8x4_q8_K, ggml_gemm_q4_K_8x4_q8_K, block_q4_Kx8, 8, QK_K, 1, HALVES, 16, QMK_4),
    L("q4_K_8x8", ggml_gemv_q4_K_8x8_q8_K, ggml_gemm_q4_K_8x8_q8_K, block_q4_Kx8, 8, QK_K, 1, HALVES, 16, QMK_8),
    L("q4_K_8x8_generic", ggml_gemv_q4_K_8x8_q8_K_generic, ggml_gemm_q4_K_8x8_q8_K_generic, block_q4_Kx8, 8, QK_K, 1, HALVES, 16, QMK_8),
    L("q5_K_8x4", ggml_gemv_q5_K_8x4_q8_K, ggml_gemm_q5_K_8x4_q8_K, block_q5_Kx8, 8, QK_K, 1, HALVES, 16, QMK_4),
    L("q5_K_8x8", ggml_gemv_q5_K_8x8_q8_K, ggml_gemm_q5_K_8x8_q8_K, block_q5_Kx8, 8, QK_K, 1, HALVES, 16, QMK_8),
    L("q6_K_8x4", ggml_gemv_q6_K_8x4_q8_K, ggml_gemm_q6_K_8x4_q8_K, block_q6_Kx8, 8, QK_K, 1, HALVES, 8, QMK_4),
    L("q6_K_8x8", ggml_gemv_q6_K_8x8_q8_K, ggml_gemm_q6_K_8x8_q8_K, block_q6_Kx8, 8, QK_K, 1, HALVES, 8, QMK_8),
};

// Random interleaved weights for nc rows of n values.
static uint8_t * make_weights(const struct layout * l, int n, int nc) {
    const size_t nblocks = (size_t) (nc / l->cols) * (size_t) (n / l->qk);
    uint8_t * w = malloc(nblocks * l->bytes);
    fill_bytes(w, nblocks * l->bytes);
    for (size_t b = 0; b < nblocks; ++b) {
        uint8_t * blk = w + b * l->bytes;
        for (int i = 0; i < l->n_scales; ++i) {
            if (l->scales == E8M0) {
                blk[i] = (uint8_t) (120 + rng_next() % 12);
            } else {
                // d may be negative (q4_0's is), the K-quants' dmin (the second half) is not
                const float mag = rng_float(0.002f, 0.03f);
                const int negative = i < l->cols && (rng_next() & 1);
                ggml_fp16_t h = ggml_fp32_to_fp16(negative ? -mag : mag);
                memcpy(blk + 2 * i, &h, 2);
            }
        }
    }
    return w;
}

// One plain activation row of n values: q8_0 or q8_K blocks (bsums consistent with the quants).
static void * make_row(const struct layout * l, int n) {
    if (!l->k_quant) {
        block_q8_0 * y = malloc(sizeof(block_q8_0) * (size_t) (n / 32));
        for (int b = 0; b < n / 32; ++b) {
            y[b].d = ggml_fp32_to_fp16(rng_float(0.001f, 0.02f));
            for (int i = 0; i < 32; ++i) y[b].qs[i] = (int8_t) (rng_next() % 255 - 127);
        }
        return y;
    }
    block_q8_K * y = malloc(sizeof(block_q8_K) * (size_t) (n / QK_K));
    for (int b = 0; b < n / QK_K; ++b) {
        y[b].d = rng_float(0.001f, 0.02f);
        for (int g = 0; g < QK_K / 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i] = (int8_t) (rng_next() % 255 - 127);
            y[b].bsums[g] = (int16_t) sum;
        }
    }
    return y;
}

// nr rows of n floats, with a few exact ties and zeros among them.
static float * make_floats(int nr, int n) {
    float * x = malloc(sizeof(float) * (size_t) nr * (size_t) n);
    for (size_t i = 0; i < (size_t) nr * (size_t) n; ++i) x[i] = rng_float(-1.0f, 1.0f);
    // row 1: largest magnitudes both +1.5 and -1.5 (which the q8_K quantizers break apart)
    x[n + 7] = -1.5f;
    x[n + 9] = 1.5f;
    // row 2: scale 1 exactly (amax 127), then values halfway between two quants
    x[2 * n + 0] = 127.0f;
    x[2 * n + 1] = 2.5f;
    x[2 * n + 2] = -3.5f;
    x[2 * n + 3] = 0.5f;
    // row 3: a first block of zeros
    memset(x + 3 * n, 0, sizeof(float) * (size_t) (n < 256 ? n : 256));
    return x;
}

static void test_quantizers(void) {
    static const struct { const char * name; quantize_mat_fn f; int qk; size_t x4; } q[] = {
        { "q8_0_4x4", ggml_quantize_mat_q8_0_4x4, 32, sizeof(block_q8_0x4) },
        { "q8_0_4x8", ggml_quantize_mat_q8_0_4x8, 32, sizeof(block_q8_0x4) },
        { "q8_0_4x8_generic", ggml_quantize_mat_q8_0_4x8_generic, 32, sizeof(block_q8_0x4) },
        { "q8_K_4x4", ggml_quantize_mat_q8_K_4x4, QK_K, sizeof(block_q8_Kx4) },
        { "q8_K_4x8", ggml_quantize_mat_q8_K_4x8, QK_K, sizeof(block_q8_Kx4) },
        { "q8_K_4x8_generic", ggml_quantize_mat_q8_K_4x8_generic, QK_K, sizeof(block_q8_Kx4) },
    };
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); ++i) {
        for (int nb = 1; nb <= 2; ++nb) {
            const int k = nb * q[i].qk;
            rng_seed(100 + (uint64_t) nb); // the same rows for every quantizer
            float * x = make_floats(4, k);
            size_t bytes = (size_t) nb * q[i].x4;
            uint8_t * y = malloc(bytes);
            memset(y, 0xAA, bytes);
            q[i].f(x, y, k);
            char label[96];
            snprintf(label, sizeof label, "quantize_mat_%s_k%d", q[i].name, k);
            print_bytes(label, y, bytes);
            free(x);
            free(y);
        }
    }
}

static void test_layout(const struct layout * l, int li) {
    char label[128];
    // gemv: n of 1 and 3 blocks (at least 512 values for the 32-value formats)
    for (int shape = 0; shape < 2; ++shape) {
        const int n = l->qk * (l->qk == 32 ? (shape ? 24 : 16) : (shape ? 3 : 1));
        const int nc = l->cols * (shape ? 3 : 1);
        rng_seed(1000 + (uint64_t) li * 16 + (uint64_t) shape);
        uint8_t * w = make_weights(l, n, nc);
        void * y = make_row(l, n);
        float * s = malloc(sizeof(float) * (size_t) nc);
        l->gemv(n, s, (size_t) nc, w, y, 1, nc);
        snprintf(label, sizeof label, "gemv_%s_n%d_nc%d", l->name, n, nc);
        print_floats(label, "1e-4", s, (size_t) nc);
        free(w);
        free(y);
        free(s);
    }
    // gemm: 4 and 8 rows, results in rows wider than nc
    for (int shape = 0; shape < 2; ++shape) {
        const int n = l->qk * (l->qk == 32 ? 16 : 2);
        const int nr = shape ? 8 : 4;
        const int nc = l->cols * (shape ? 2 : 1);
        const size_t bs = (size_t) nc + 3;
        rng_seed(2000 + (uint64_t) li * 16 + (uint64_t) shape);
        uint8_t * w = make_weights(l, n, nc);
        float * x = make_floats(nr, n);
        const size_t x4 = l->k_quant ? sizeof(block_q8_Kx4) : sizeof(block_q8_0x4);
        const size_t act_bytes = (size_t) (n / (l->k_quant ? QK_K : 32)) * x4;
        uint8_t * y = malloc(act_bytes * (size_t) (nr / 4));
        for (int r = 0; r < nr / 4; ++r) l->quantize(x + (size_t) r * 4 * (size_t) n, y + (size_t) r * act_bytes, n);
        float * s = malloc(sizeof(float) * bs * (size_t) nr);
        for (size_t i = 0; i < bs * (size_t) nr; ++i) s[i] = -7.0f; // the gaps must stay as they are
        l->gemm(n, s, bs, w, y, nr, nc);
        snprintf(label, sizeof label, "gemm_%s_n%d_nr%d_nc%d", l->name, n, nr, nc);
        print_floats(label, "1e-4", s, bs * (size_t) nr);
        free(w);
        free(x);
        free(y);
        free(s);
    }
}

int main(void) {
    ggml_cpu_init();
    test_quantizers();
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); ++i) test_layout(&layouts[i], (int) i);
    return 0;
}
