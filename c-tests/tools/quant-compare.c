// quant-compare: prints what the element-format part of the public ggml API produces for a
// fixed set of inputs, so that two builds (the reference libggml-base and ggml-rs) can be
// diffed line by line. See scripts/compare-quants.
//
// Covered: struct ggml_type_traits for every type, ggml_quantize_requires_imatrix,
// fp16/bf16 scalar and row conversions (all 65536 16-bit patterns one way, a dense sample of
// the 2^32 float patterns the other), ggml_quantize_chunk with and without an importance
// matrix for each implemented type on seeded random and edge-case rows, the type traits'
// to_float/from_float_ref on those rows, and ggml_validate_row_data on crafted rows.
//
// Output is text on stdout (line-buffered, so library messages on stderr interleave in call
// order when both go to one file). Exits 0 unless an argument is wrong.

#include "ggml.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- helpers ----------------------------------------------------------------------------------

static uint64_t fnv(uint64_t h, const void * data, size_t n) {
    const uint8_t * p = (const uint8_t *) data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static const uint64_t FNV_INIT = 0xcbf29ce484222325ull;

static uint64_t hash(const void * data, size_t n) {
    return fnv(FNV_INIT, data, n);
}

static uint64_t rng_state;

static void rng_seed(uint64_t seed) {
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
}

static uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

// uniform in [0, 1)
static double rng_unit(void) {
    return (double) (rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static float rng_uniform(float lo, float hi) {
    return lo + (hi - lo) * (float) rng_unit();
}

static float rng_normal(void) {
    double u1 = rng_unit();
    double u2 = rng_unit();
    if (u1 < 1e-300) {
        u1 = 1e-300;
    }
    return (float) (sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static void print_hex(const char * label, const void * data, size_t n) {
    const uint8_t * p = (const uint8_t *) data;
    printf("  %s", label);
    for (size_t i = 0; i < n; ++i) {
        printf("%s%02x", i % 4 == 0 ? " " : "", p[i]);
    }
    printf("\n");
}

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

static float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

// ---- type traits -------------------------------------------------------------------------------

// The types whose conversions ggml-rs implements; the presence of to_float/from_float_ref is
// compared only for these (the other types get theirs in later work).
static const enum ggml_type IMPLEMENTED[] = {
    GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
    GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q8_1, GGML_TYPE_Q2_K,
    GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_K,
    GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_MXFP4, GGML_TYPE_NVFP4, GGML_TYPE_TQ1_0,
    GGML_TYPE_TQ2_0, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
    GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M,
};
#define N_IMPLEMENTED (sizeof(IMPLEMENTED) / sizeof(IMPLEMENTED[0]))

static bool is_implemented(enum ggml_type t) {
    for (size_t i = 0; i < N_IMPLEMENTED; ++i) {
        if (IMPLEMENTED[i] == t) {
            return true;
        }
    }
    return false;
}

static bool is_retired(const struct ggml_type_traits * tt) {
    return tt->blck_size == 0;
}

static void compare_traits(void) {
    printf("== type traits\n");
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const struct ggml_type_traits * tt = ggml_get_type_traits((enum ggml_type) t);
        printf("type %2d %-58s blck %3" PRId64 " interleave %" PRId64 " size %3zu quantized %d imatrix %d",
            t, tt->type_name, tt->blck_size, tt->blck_size_interleave, tt->type_size, tt->is_quantized,
            ggml_quantize_requires_imatrix((enum ggml_type) t));
        if (is_implemented((enum ggml_type) t)) {
            printf(" to_float %d from_float_ref %d", tt->to_float != NULL, tt->from_float_ref != NULL);
        }
        printf("\n");
    }
}

// ---- fp16 / bf16 -------------------------------------------------------------------------------

// Low 16 bits appended to every high half when sampling float patterns: the exact halfway
// points and their neighbours for both binary16 (bit 12) and bfloat16 (bit 15) rounding.
static const uint16_t LOW_BITS[] = {
    0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x5a5a,
    0x7fff, 0x8000, 0x8001, 0x9000, 0xa000, 0xb000, 0xe000, 0xf000, 0xffff,
};
#define N_LOW_BITS (sizeof(LOW_BITS) / sizeof(LOW_BITS[0]))

static void compare_halves(void) {
    printf("== fp16/bf16 to fp32, all 65536 patterns\n");
    {
        static uint16_t h[65536];
        static ggml_bf16_t b[65536];
        static float y[65536];
        uint64_t hs = FNV_INIT, hb = FNV_INIT;
        for (int i = 0; i < 65536; ++i) {
            h[i] = (uint16_t) i;
            b[i].bits = (uint16_t) i;
            uint32_t a = f32_bits(ggml_fp16_to_fp32((ggml_fp16_t) i));
            uint32_t c = f32_bits(ggml_bf16_to_fp32(b[i]));
            hs = fnv(hs, &a, 4);
            hb = fnv(hb, &c, 4);
        }
        printf("fp16_to_fp32 scalar %016" PRIx64 "\n", hs);
        printf("bf16_to_fp32 scalar %016" PRIx64 "\n", hb);
        ggml_fp16_to_fp32_row(h, y, 65536);
        printf("fp16_to_fp32_row    %016" PRIx64 "\n", hash(y, sizeof(y)));
        ggml_bf16_to_fp32_row(b, y, 65536);
        printf("bf16_to_fp32_row    %016" PRIx64 "\n", hash(y, sizeof(y)));
        printf("fp16 0x3c00 %a 0x0001 %a 0x7bff %a 0xfc00 %a\n", (double) ggml_fp16_to_fp32(0x3c00),
            (double) ggml_fp16_to_fp32(0x0001), (double) ggml_fp16_to_fp32(0x7bff), (double) ggml_fp16_to_fp32(0xfc00));
    }

    printf("== fp32 to fp16/bf16: every high half with %zu low halves, hashed per 2^12 high halves\n", N_LOW_BITS);
    {
        enum { CHUNK = 4096 };
        static float x[CHUNK * N_LOW_BITS];
        static ggml_fp16_t h[CHUNK * N_LOW_BITS];
        static ggml_bf16_t b[CHUNK * N_LOW_BITS];
        static ggml_bf16_t b_ref[CHUNK * N_LOW_BITS];
        const size_t n = CHUNK * N_LOW_BITS;
        uint64_t all_h = FNV_INIT, all_b = FNV_INIT;
        for (uint32_t hi0 = 0; hi0 < 65536; hi0 += CHUNK) {
            size_t k = 0;
            for (uint32_t hi = hi0; hi < hi0 + CHUNK; ++hi) {
                for (size_t j = 0; j < N_LOW_BITS; ++j) {
                    x[k++] = bits_f32((hi << 16) | LOW_BITS[j]);
                }
            }
            ggml_fp32_to_fp16_row(x, h, (int64_t) n);
            ggml_fp32_to_bf16_row(x, b, (int64_t) n);
            ggml_fp32_to_bf16_row_ref(x, b_ref, (int64_t) n);
            uint64_t hs = FNV_INIT, bs = FNV_INIT;
            for (size_t i = 0; i < n; ++i) {
                ggml_fp16_t hh = ggml_fp32_to_fp16(x[i]);
                ggml_bf16_t bb = ggml_fp32_to_bf16(x[i]);
                hs = fnv(hs, &hh, 2);
                bs = fnv(bs, &bb.bits, 2);
            }
            printf("hi %04x-%04x fp16 scalar %016" PRIx64 " row %016" PRIx64 "  bf16 scalar %016" PRIx64
                   " row %016" PRIx64 " row_ref %016" PRIx64 "\n",
                hi0, hi0 + CHUNK - 1, hs, hash(h, sizeof(h)), bs, hash(b, sizeof(b)), hash(b_ref, sizeof(b_ref)));
            all_h = fnv(all_h, h, sizeof(h));
            all_b = fnv(all_b, b, sizeof(b));
        }
        printf("fp32_to_fp16 all %016" PRIx64 " fp32_to_bf16 all %016" PRIx64 "\n", all_h, all_b);
    }

    printf("== fp32 to fp16/bf16: 2^22 random patterns\n");
    {
        enum { N = 1 << 22 };
        float * x = malloc(sizeof(float) * N);
        ggml_fp16_t * h = malloc(sizeof(ggml_fp16_t) * N);
        ggml_bf16_t * b = malloc(sizeof(ggml_bf16_t) * N);
        if (!x || !h || !b) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        rng_seed(7);
        for (size_t i = 0; i < N; ++i) {
            x[i] = bits_f32((uint32_t) rng_next());
        }
        ggml_fp32_to_fp16_row(x, h, N);
        ggml_fp32_to_bf16_row_ref(x, b, N);
        printf("fp32_to_fp16_row %016" PRIx64 " fp32_to_bf16_row_ref %016" PRIx64 "\n",
            hash(h, sizeof(ggml_fp16_t) * N), hash(b, sizeof(ggml_bf16_t) * N));
        free(x);
        free(h);
        free(b);
    }
}

// ---- quantization ------------------------------------------------------------------------------

enum dataset {
    DS_NORMAL, DS_UNIFORM, DS_ZEROS, DS_TINY, DS_SUBNORMAL, DS_HUGE, DS_OVERFLOW, DS_SPIKE,
    DS_POSITIVE, DS_NEGATIVE, DS_CONSTANT, DS_INTEGERS, DS_HALFSTEPS, DS_MIXED_SCALE, DS_INF,
    DS_NAN, DS_COUNT,
};

static const char * DS_NAMES[DS_COUNT] = {
    "normal", "uniform", "zeros", "tiny", "subnormal", "huge", "overflow", "spike",
    "positive", "negative", "constant", "integers", "halfsteps", "mixed-scale", "inf",
    "nan",
};

static void fill(enum dataset ds, float * x, size_t n, uint64_t seed) {
    rng_seed(seed);
    for (size_t i = 0; i < n; ++i) {
        float v = 0.0f;
        switch (ds) {
            case DS_NORMAL:    v = rng_normal(); break;
            case DS_UNIFORM:   v = rng_uniform(-1.0f, 1.0f); break;
            case DS_ZEROS:     v = 0.0f; break;
            case DS_TINY:      v = rng_normal() * 1e-6f; break;
            case DS_SUBNORMAL: v = rng_normal() * 1e-20f; break;
            case DS_HUGE:      v = rng_normal() * 3e4f; break;
            case DS_OVERFLOW:  v = rng_normal() * 1e30f; break;
            case DS_SPIKE:     v = (i % 32 == (seed % 32)) ? 100.0f : rng_normal() * 0.01f; break;
            case DS_POSITIVE:  v = rng_uniform(0.5f, 2.0f); break;
            case DS_NEGATIVE:  v = rng_uniform(-2.0f, -0.5f); break;
            case DS_CONSTANT:  v = 0.75f; break;
            case DS_INTEGERS:  v = (float) ((int) (rng_next() % 16) - 8); break;
            case DS_HALFSTEPS: v = (float) ((int) (rng_next() % 33) - 16) * 0.5f; break;
            case DS_MIXED_SCALE: v = rng_normal() * powf(10.0f, (float) ((i / 32) % 9) - 4.0f); break;
            // non-finite inputs: ggml does not reject them, so what it makes of them is compared
            case DS_INF: v = (i % 45 == seed % 7) ? ((i & 1) ? INFINITY : -INFINITY) : rng_normal(); break;
            case DS_NAN: v = (i % 51 == seed % 5) ? NAN : rng_normal(); break;
            case DS_COUNT: break;
        }
        x[i] = v;
    }
}

enum weights { W_NONE, W_RANDOM, W_ONES, W_SPARSE, W_COUNT };
static const char * W_NAMES[W_COUNT] = { "none", "random", "ones", "sparse" };

static void fill_weights(enum weights w, float * q, size_t n, uint64_t seed) {
    rng_seed(seed ^ 0x5151);
    for (size_t i = 0; i < n; ++i) {
        switch (w) {
            case W_RANDOM: q[i] = rng_uniform(0.0f, 4.0f) * rng_uniform(0.0f, 1.0f); break;
            case W_ONES:   q[i] = 1.0f; break;
            case W_SPARSE: q[i] = (rng_next() % 3 == 0) ? rng_uniform(0.1f, 10.0f) : 0.0f; break;
            default:       q[i] = 0.0f; break;
        }
    }
}

static const enum ggml_type CHUNK_TYPES[] = {
    GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
    GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
    GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0,
    GGML_TYPE_MXFP4, GGML_TYPE_NVFP4, GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, GGML_TYPE_IQ4_NL,
    GGML_TYPE_IQ4_XS,
};
#define N_CHUNK_TYPES (sizeof(CHUNK_TYPES) / sizeof(CHUNK_TYPES[0]))

// One ggml_quantize_chunk call writing rows [row0, row0 + nrows) of a matrix of total_rows
// rows into a buffer pre-filled with 0xa5, then the output checked three ways: its bytes, its
// dequantization through the traits, and ggml_validate_row_data.
static void quantize_case(enum ggml_type type, enum dataset ds, enum weights w, int64_t n_per_row,
                          int64_t total_rows, int64_t row0, int64_t nrows, uint64_t seed) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(type);
    const size_t row_size = ggml_row_size(type, n_per_row);
    const size_t n = (size_t) (total_rows * n_per_row);
    float * src = malloc(sizeof(float) * n);
    float * imatrix = malloc(sizeof(float) * (size_t) n_per_row);
    uint8_t * dst = malloc(row_size * (size_t) total_rows);
    float * back = malloc(sizeof(float) * n);
    if (!src || !imatrix || !dst || !back) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    fill(ds, src, n, seed);
    fill_weights(w, imatrix, (size_t) n_per_row, seed);
    memset(dst, 0xa5, row_size * (size_t) total_rows);

    size_t written = ggml_quantize_chunk(type, src, dst, row0 * n_per_row, nrows, n_per_row,
                                         w == W_NONE ? NULL : imatrix);

    printf("%-5s %-11s w=%-6s n_per_row %4" PRId64 " rows %" PRId64 "+%" PRId64 "/%" PRId64
           " seed %2" PRIu64 ": wrote %zu hash %016" PRIx64,
        tt->type_name, DS_NAMES[ds], W_NAMES[w], n_per_row, row0, nrows, total_rows, seed, written,
        hash(dst, row_size * (size_t) total_rows));

    uint8_t * out = dst + row0 * row_size;
    if (tt->to_float) {
        tt->to_float(out, back, nrows * n_per_row);
        printf(" deq %016" PRIx64, hash(back, sizeof(float) * (size_t) (nrows * n_per_row)));
    }
    printf("\n");
    // ggml prints validation problems itself (stderr); keep them next to this case
    fflush(stdout);
    bool valid = ggml_validate_row_data(type, out, row_size * (size_t) nrows);
    printf("  valid %d\n", valid);
    print_hex("first bytes", out, row_size < 48 ? row_size : 48);
    if (tt->to_float) {
        printf("  first values");
        for (int i = 0; i < 6 && i < n_per_row; ++i) {
            printf(" %a", (double) back[i]);
        }
        printf("\n");
    }
    // the reference quantizer through the traits must agree with the unweighted chunk.
    // Not for iq4_nl when the first block is all below 1e-15 (zeros, subnormal): ggml's
    // quantize_row_iq4_nl_ref then packs an uninitialised stack buffer.
    bool unreproducible = false;
    if (type == GGML_TYPE_IQ4_NL) {
        unreproducible = true;
        for (int i = 0; i < 32; ++i) {
            unreproducible &= !(fabsf(src[row0 * n_per_row + i]) >= 1e-15f);
        }
    }
    if (tt->from_float_ref && w == W_NONE && !unreproducible) {
        uint8_t * again = malloc(row_size * (size_t) nrows);
        if (!again) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        tt->from_float_ref(src + row0 * n_per_row, again, nrows * n_per_row);
        printf("  from_float_ref %016" PRIx64 " same %d\n", hash(again, row_size * (size_t) nrows),
            memcmp(again, out, row_size * (size_t) nrows) == 0);
        free(again);
    }
    free(src);
    free(imatrix);
    free(dst);
    free(back);
}

static void compare_quantization(void) {
    printf("== ggml_quantize_chunk\n");
    // 1, 3 and 8 blocks (32, 96, 256 for blocks of 32); super-block types 1, 2 and 3
    static const int64_t ROW_BLOCKS[] = { 1, 3, 8 };
    static const int64_t ROW_BLOCKS_K[] = { 1, 2, 3 };
    for (size_t ti = 0; ti < N_CHUNK_TYPES; ++ti) {
        const enum ggml_type type = CHUNK_TYPES[ti];
        const int64_t blck = ggml_blck_size(type);
        const bool super_blocks = blck == 256;
        const int64_t * row_blocks = super_blocks ? ROW_BLOCKS_K : ROW_BLOCKS;
        int64_t row_lengths[3];
        for (int li = 0; li < 3; ++li) {
            row_lengths[li] = row_blocks[li] * (blck > 1 ? blck : 32);
        }
        const int64_t short_row = blck > 64 ? blck : 64;
        for (int ds = 0; ds < DS_COUNT; ++ds) {
            for (int w = 0; w < W_COUNT; ++w) {
                for (size_t li = 0; li < 3; ++li) {
                    for (uint64_t seed = 1; seed <= 2; ++seed) {
                        quantize_case(type, (enum dataset) ds, (enum weights) w, row_lengths[li], 4, 0, 4,
                                      seed + 10 * li);
                    }
                }
            }
        }
        // a chunk starting at a later row, and a long row
        quantize_case(type, DS_NORMAL, W_NONE, short_row, 5, 2, 3, 3);
        quantize_case(type, DS_NORMAL, W_RANDOM, short_row, 5, 2, 3, 3);
        quantize_case(type, DS_MIXED_SCALE, W_RANDOM, 4096, 2, 0, 2, 4);
        quantize_case(type, DS_UNIFORM, W_NONE, 4096, 2, 1, 1, 5);
    }

    // The grid I-quants, on finite data only: the reference reads past a group for some
    // non-finite inputs, so those cases have no defined answer to compare with. Types that
    // require an importance matrix are not quantized without one.
    printf("== ggml_quantize_chunk, grid I-quants\n");
    static const enum ggml_type GRID_TYPES[] = {
        GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
        GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M,
    };
    static const enum dataset GRID_DATASETS[] = {
        DS_NORMAL, DS_UNIFORM, DS_ZEROS, DS_TINY, DS_SPIKE, DS_POSITIVE, DS_CONSTANT, DS_MIXED_SCALE,
    };
    for (size_t ti = 0; ti < sizeof(GRID_TYPES) / sizeof(GRID_TYPES[0]); ++ti) {
        const enum ggml_type type = GRID_TYPES[ti];
        for (size_t di = 0; di < sizeof(GRID_DATASETS) / sizeof(GRID_DATASETS[0]); ++di) {
            for (int w = 0; w < W_COUNT; ++w) {
                if (w == W_NONE && ggml_quantize_requires_imatrix(type)) {
                    continue;
                }
                quantize_case(type, GRID_DATASETS[di], (enum weights) w, 256, 2, 0, 2, 21 + di);
                quantize_case(type, GRID_DATASETS[di], (enum weights) w, 512, 3, 1, 2, 31 + di);
            }
        }
    }
    ggml_quantize_free();

    // q8_1 has only a reference quantizer (no chunk path): through the traits
    printf("== q8_1 through from_float_ref\n");
    {
        const struct ggml_type_traits * tt = ggml_get_type_traits(GGML_TYPE_Q8_1);
        float x[256];
        uint8_t y[36 * 8];
        for (int ds = 0; ds < DS_COUNT; ++ds) {
            fill((enum dataset) ds, x, 256, 9);
            tt->from_float_ref(x, y, 256);
            printf("q8_1 %-11s %016" PRIx64 "\n", DS_NAMES[ds], hash(y, sizeof(y)));
            print_hex("first bytes", y, 40);
        }
    }
}

// q8_K has no traits converters; its exported row functions are not in ggml.h
void quantize_row_q8_K_ref(const float * x, void * y, int64_t k);
void dequantize_row_q8_K(const void * x, float * y, int64_t k);

static void compare_q8_K(void) {
    printf("== q8_K through quantize_row_q8_K_ref / dequantize_row_q8_K\n");
    float x[512];
    float back[512];
    uint8_t y[292 * 2];
    for (int ds = 0; ds < DS_COUNT; ++ds) {
        fill((enum dataset) ds, x, 512, 11);
        // all-zero blocks leave bsums unwritten: the fill shows that
        memset(y, 0xa5, sizeof(y));
        quantize_row_q8_K_ref(x, y, 512);
        dequantize_row_q8_K(y, back, 512);
        printf("q8_K %-11s %016" PRIx64 " deq %016" PRIx64 "\n", DS_NAMES[ds], hash(y, sizeof(y)),
            hash(back, sizeof(back)));
        print_hex("first bytes", y, 40);
    }
}

// ---- validation --------------------------------------------------------------------------------

static void validate_case(const char * label, enum ggml_type type, const void * data, size_t nbytes) {
    // (no ggml_type_name for an invalid type: the reference indexes its table with it)
    printf("validate %-5s %-28s", type >= 0 && type < GGML_TYPE_COUNT ? ggml_type_name(type) : "?", label);
    fflush(stdout);
    bool ok = ggml_validate_row_data(type, data, nbytes);
    printf(" -> %d\n", ok);
}

static void compare_validation(void) {
    printf("== ggml_validate_row_data\n");
    static uint8_t buf[4 * 512];

    // float rows
    {
        float f[16];
        for (int i = 0; i < 16; ++i) {
            f[i] = (float) i - 3.5f;
        }
        validate_case("f32 finite", GGML_TYPE_F32, f, sizeof(f));
        f[5] = NAN;
        validate_case("f32 nan at 5", GGML_TYPE_F32, f, sizeof(f));
        f[3] = -INFINITY;
        validate_case("f32 -inf at 3, nan at 5", GGML_TYPE_F32, f, sizeof(f));
        validate_case("f32 odd size", GGML_TYPE_F32, f, 10);
        f[3] = 1.0f;
        f[5] = 2.0f;
        f[11] = INFINITY;
        validate_case("f32 inf at 11", GGML_TYPE_F32, f, sizeof(f));
        double d[5] = { 1.0, -2.0, 3.0, 4.0, 5.0 };
        validate_case("f64 finite", GGML_TYPE_F64, d, sizeof(d));
        d[4] = NAN;
        validate_case("f64 nan at 4", GGML_TYPE_F64, d, sizeof(d));
        d[2] = INFINITY;
        validate_case("f64 inf at 2", GGML_TYPE_F64, d, sizeof(d));

        ggml_fp16_t h[40];
        for (int i = 0; i < 40; ++i) {
            h[i] = ggml_fp32_to_fp16((float) i * 0.25f);
        }
        validate_case("f16 finite", GGML_TYPE_F16, h, sizeof(h));
        h[33] = 0x7c00;
        validate_case("f16 inf at 33", GGML_TYPE_F16, h, sizeof(h));
        h[20] = 0xfe01;
        validate_case("f16 nan at 20", GGML_TYPE_F16, h, sizeof(h));
        validate_case("f16 odd size", GGML_TYPE_F16, h, 7);

        ggml_bf16_t b[24];
        for (int i = 0; i < 24; ++i) {
            b[i] = ggml_fp32_to_bf16((float) i);
        }
        validate_case("bf16 finite", GGML_TYPE_BF16, b, sizeof(b));
        b[2].bits = 0x7f80;
        b[9].bits = 0xff80;
        validate_case("bf16 2 infs", GGML_TYPE_BF16, b, sizeof(b));
        b[4].bits = 0x7fc0;
        b[5].bits = 0xff81;
        b[6].bits = 0x7f81;
        validate_case("bf16 3 nans 2 infs", GGML_TYPE_BF16, b, sizeof(b));
    }

    // every valid, non-retired type: fills, and a marker moved over every position of a block
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const enum ggml_type type = (enum ggml_type) t;
        const struct ggml_type_traits * tt = ggml_get_type_traits(type);
        if (is_retired(tt)) {
            continue;
        }
        const size_t ts = tt->type_size;
        const size_t nb = 2 * ts;
        static const uint8_t FILLS[] = { 0x00, 0xff, 0x7c, 0x7f, 0x80, 0x3c };
        for (size_t f = 0; f < sizeof(FILLS); ++f) {
            char label[64];
            snprintf(label, sizeof(label), "fill %02x", FILLS[f]);
            memset(buf, FILLS[f], nb);
            validate_case(label, type, buf, nb);
        }
        memset(buf, 0, nb);
        memset(buf + ts, 0xff, ts);
        validate_case("second block 0xff", type, buf, nb);
        validate_case("one byte short", type, buf, nb - 1);
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            rng_seed(seed + 100 * (uint64_t) t);
            for (size_t i = 0; i < nb; ++i) {
                buf[i] = (uint8_t) rng_next();
            }
            char label[64];
            snprintf(label, sizeof(label), "random bytes %" PRIu64, seed);
            validate_case(label, type, buf, nb);
        }
        // markers: binary16 inf / nan, f32 inf, 0xff byte at each offset; results as a string
        static const uint8_t MARKERS[][4] = {
            { 0x00, 0x7c, 0, 0 }, { 0x01, 0xfc, 0, 0 }, { 0x00, 0x00, 0x80, 0x7f }, { 0xff, 0, 0, 0 },
        };
        static const size_t MARKER_LEN[] = { 2, 2, 4, 1 };
        for (size_t m = 0; m < 4; ++m) {
            char result[1024];
            size_t k = 0;
            printf("markers %-5s %zu:", tt->type_name, m);
            fflush(stdout);
            for (size_t at = 0; at + MARKER_LEN[m] <= ts && k + 1 < sizeof(result); ++at) {
                memset(buf, 0, ts);
                memcpy(buf + at, MARKERS[m], MARKER_LEN[m]);
                result[k++] = ggml_validate_row_data(type, buf, ts) ? '1' : '0';
            }
            result[k] = '\0';
            printf(" %s\n", result);
        }
    }
    validate_case("type 99", (enum ggml_type) 99, buf, 4);
}

int main(int argc, char ** argv) {
    (void) argv;
    if (argc != 1) {
        fprintf(stderr, "usage: quant-compare (no arguments)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    compare_traits();
    compare_halves();
    compare_quantization();
    compare_q8_K();
    compare_validation();
    ggml_quantize_free();
    printf("== done\n");
    return 0;
}
