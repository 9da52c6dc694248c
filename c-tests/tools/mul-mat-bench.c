// mul-mat-bench: times one MUL_MAT graph, weights of a given type (M rows of K) against N f32
// activation columns, on the CPU backend (ggml_backend_graph_compute). Built once against the
// reference and once against ggml-rs from this same source; scripts/bench-mul-mat alternates
// the two and prints the ratio.
//
//   mul-mat-bench TYPE M N K THREADS ITERS [CACHE_DIR]
//
// With MUL_MAT_BENCH_BUFT=NAME in the environment the weights go into the CPU device's extra
// buffer type of that name (ggml_backend_dev_get_extra_bufts), as llama.cpp puts them there
// when it loads a model: "CPU_REPACK" has the reference repack Q4_0, Q4_K, IQ4_NL, ... weights
// into its interleaved layouts. Where the library has no such type the run stops with a
// message (exit 3), so that no number is reported for a layout that was not used.
// With MUL_MAT_BENCH_COPIES=C the graph holds C products, each with its own copy of the weights
// (the same values, its rows rotated): C copies larger than the last-level cache make every
// product stream its weights from memory, as a model's layers do one after the other in
// generation.
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
#include "ggml-alloc.h"
#include "ggml-backend.h"
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

// The quantized weights, from the cache or made (and cached), into `data` (ggml_nbytes(w)).
static void make_weights(const struct ggml_tensor * w, void * data, const char * cache_dir) {
    const int64_t m = w->ne[1], k = w->ne[0];
    const size_t size = ggml_nbytes(w);
    char path[4096] = "";
    if (cache_dir) {
        snprintf(path, sizeof path, "%s/%s-%lld-%lld.bin", cache_dir, ggml_type_name(w->type), (long long) m,
                 (long long) k);
        if (read_cache(path, data, size)) {
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
    ggml_quantize_chunk(w->type, values, data, 0, m, k, im);
    free(values);
    free(imatrix);
    if (cache_dir) {
        write_cache(path, data, size);
    }
}

// The buffer type the weights go into: the backend's default, or the extra one named.
static ggml_backend_buffer_type_t weight_buffer_type(ggml_backend_t backend, const char * name) {
    if (!name || !*name) {
        return ggml_backend_get_default_buffer_type(backend);
    }
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    typedef ggml_backend_buffer_type_t * (*extra_bufts_fn)(ggml_backend_dev_t);
    extra_bufts_fn extra =
        (extra_bufts_fn) ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts");
    for (ggml_backend_buffer_type_t * b = extra ? extra(dev) : NULL; b && *b; ++b) {
        if (strcmp(ggml_backend_buft_name(*b), name) == 0) {
            return *b;
        }
    }
    fprintf(stderr, "mul-mat-bench: this library has no extra buffer type %s\n", name);
    exit(3);
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

    ggml_backend_t backend = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(backend, threads);

    const char * copies_env = getenv("MUL_MAT_BENCH_COPIES");
    const int copies = copies_env && atoi(copies_env) > 0 ? atoi(copies_env) : 1;

    // the weights in their own context and buffer, as a model's are
    struct ggml_init_params wparams = { copies * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * wctx = ggml_init(wparams);
    struct ggml_tensor * ws[copies];
    for (int c = 0; c < copies; ++c) {
        ws[c] = ggml_new_tensor_2d(wctx, type, k, m);
    }
    ggml_backend_buffer_t wbuf =
        ggml_backend_alloc_ctx_tensors_from_buft(wctx, weight_buffer_type(backend, getenv("MUL_MAT_BENCH_BUFT")));
    void * wdata = malloc(ggml_nbytes(ws[0]));
    make_weights(ws[0], wdata, cache_dir);
    // each copy holds the rows rotated by its own count: the same values, but no two copies'
    // pages alike (a virtual machine may read pages it has seen repeated faster than fresh ones)
    const size_t row = ggml_row_size(type, k), total = ggml_nbytes(ws[0]);
    for (int c = 0; c < copies; ++c) {
        const size_t shift = (size_t) ((7 * (int64_t) c) % m) * row;
        ggml_backend_tensor_set(ws[c], (const char *) wdata + shift, 0, total - shift);
        if (shift > 0) {
            ggml_backend_tensor_set(ws[c], wdata, total - shift, shift);
        }
    }
    free(wdata);

    struct ggml_init_params params = { (2 + 2 * copies) * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    struct ggml_cgraph * graph = ggml_new_graph(ctx);
    for (int c = 0; c < copies; ++c) {
        ggml_build_forward_expand(graph, ggml_mul_mat(ctx, ws[c], x));
    }
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    float * xs = malloc(sizeof(float) * k * n);
    for (int64_t i = 0; i < k * n; ++i) {
        xs[i] = rng_uniform();
    }
    ggml_backend_tensor_set(x, xs, 0, ggml_nbytes(x));
    free(xs);

    double best = 1e300;
    for (int i = 0; i < iters; ++i) {
        const double t0 = now_us();
        if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "mul-mat-bench: compute failed\n");
            return 1;
        }
        const double t = now_us() - t0;
        best = t < best ? t : best;
    }
    printf("%.0f\n", best);
    ggml_backend_buffer_free(buf);
    ggml_backend_buffer_free(wbuf);
    ggml_free(ctx);
    ggml_free(wctx);
    ggml_backend_free(backend);
    return 0;
}
