// mul-mat-bench: times one MUL_MAT graph, weights of a given type (M rows of K) against N f32
// activation columns, on the CPU through ggml_graph_plan/ggml_graph_compute. Built once
// against the reference and once against ggml-rs from this same source; scripts/bench-mul-mat
// alternates the two and prints the ratio.
//
//   mul-mat-bench TYPE M N K THREADS ITERS [CACHE_DIR]
//
// Prints the fastest of ITERS computes, in microseconds, on one line. Why the fastest: this
// runs on shared virtual machines where a neighbour can double a single run; the minimum is the
// number that repeats.
//
// The weights are seeded random values quantized with ggml_quantize_chunk (with an importance
// matrix of ones for the types that need one). Quantizing a 4096x4096 I-quant takes seconds, so
// with CACHE_DIR the quantized bytes are kept in a file per (TYPE, M, K) and read back by later
// runs: each process then starts at once, and the reference and ggml-rs time the same bytes.

#include "ggml.h"
#include "ggml-cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state = 0x853c49e6748fea9bull;

static float rng_uniform(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float) ((rng_state * 0x2545f4914f6cdd1dull) >> 40) / (float) (1 << 24) * 2.0f - 1.0f;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static enum ggml_type type_by_name(const char * name) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * n = ggml_type_name((enum ggml_type) t);
        if (n && strcmp(n, name) == 0 && ggml_blck_size((enum ggml_type) t) > 0) {
            return (enum ggml_type) t;
        }
    }
    fprintf(stderr, "mul-mat-bench: unknown type '%s'\n", name);
    exit(2);
}

static int read_cache(const char * path, void * data, size_t size) {
    FILE * f = fopen(path, "rb");
    if (!f) {
        return 0;
    }
    int ok = fread(data, 1, size, f) == size && fgetc(f) == EOF;
    fclose(f);
    return ok;
}

static void write_cache(const char * path, const void * data, size_t size) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int) getpid());
    FILE * f = fopen(tmp, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "mul-mat-bench: cannot write %s\n", tmp);
        exit(1);
    }
    rename(tmp, path); // atomic: a concurrent reader sees all of the file or none
}

static void fill_weights(struct ggml_tensor * w, const char * cache_dir) {
    const int64_t m = w->ne[1], k = w->ne[0];
    const size_t size = ggml_nbytes(w);
    char path[4096] = "";
    if (cache_dir) {
        snprintf(path, sizeof path, "%s/%s-%lld-%lld.bin", cache_dir, ggml_type_name(w->type), (long long) m,
                 (long long) k);
        if (read_cache(path, w->data, size)) {
            return;
        }
    }
    float * values = malloc(sizeof(float) * m * k);
    float * imatrix = malloc(sizeof(float) * k);
    for (int64_t i = 0; i < m * k; ++i) {
        values[i] = rng_uniform();
    }
    for (int64_t i = 0; i < k; ++i) {
        imatrix[i] = 1.0f;
    }
    const float * im = ggml_quantize_requires_imatrix(w->type) ? imatrix : NULL;
    ggml_quantize_init(w->type);
    ggml_quantize_chunk(w->type, values, w->data, 0, m, k, im);
    free(values);
    free(imatrix);
    if (cache_dir) {
        write_cache(path, w->data, size);
    }
}

int main(int argc, char ** argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: mul-mat-bench TYPE M N K THREADS ITERS [CACHE_DIR]\n");
        return 2;
    }
    const enum ggml_type type = type_by_name(argv[1]);
    const int64_t m = atoll(argv[2]), n = atoll(argv[3]), k = atoll(argv[4]);
    const int threads = atoi(argv[5]), iters = atoi(argv[6]);
    const char * cache_dir = argc > 7 ? argv[7] : NULL;

    const size_t mem = ggml_row_size(type, k) * m + sizeof(float) * (k * n + m * n) + 4 * ggml_tensor_overhead() +
                       ggml_graph_overhead() + 1024;
    struct ggml_init_params params = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, type, k, m);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    struct ggml_tensor * y = ggml_mul_mat(ctx, w, x);
    struct ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, y);

    fill_weights(w, cache_dir);
    float * xs = (float *) x->data;
    for (int64_t i = 0; i < k * n; ++i) {
        xs[i] = rng_uniform();
    }

    struct ggml_cplan plan = ggml_graph_plan(graph, threads, NULL);
    void * work = plan.work_size ? malloc(plan.work_size) : NULL;
    plan.work_data = work;

    double best = 1e300;
    for (int i = 0; i < iters; ++i) {
        const double t0 = now_us();
        if (ggml_graph_compute(graph, &plan) != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "mul-mat-bench: compute failed\n");
            return 1;
        }
        const double t = now_us() - t0;
        best = t < best ? t : best;
    }
    printf("%.0f\n", best);
    free(work);
    ggml_free(ctx);
    return 0;
}
