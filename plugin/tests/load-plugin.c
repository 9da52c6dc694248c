// Loads libggml-rs-cpu.so into a process linked against the reference ggml, lists what it
// registered, and computes one small graph on it, checked against the reference CPU backend.
//
//   load-plugin PATH/libggml-rs-cpu.so
//
// Exit status 0 when every check passes. Built and run by scripts/plugin-backend-ops.
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                   \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                               \
        }                                                             \
    } while (0)

static const char * type_name(enum ggml_backend_dev_type t) {
    switch (t) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: return "CPU";
        case GGML_BACKEND_DEVICE_TYPE_GPU: return "GPU";
        case GGML_BACKEND_DEVICE_TYPE_IGPU: return "IGPU";
        case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "ACCEL";
        default: return "other";
    }
}

// out = mul_mat(a, b) + a-row broadcast, computed on `backend`; returns false on failure.
static bool compute(ggml_backend_t backend, float * out, size_t n_out) {
    struct ggml_init_params params = { 16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * c = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    struct ggml_tensor * r = ggml_add(ctx, ggml_mul_mat(ctx, a, b), c);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, r);

    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    bool ok = buf != NULL;
    if (ok) {
        float va[12], vb[8], vc[6];
        for (int i = 0; i < 12; i++) va[i] = 0.5f * (float) i - 2.0f;
        for (int i = 0; i < 8; i++) vb[i] = 1.0f - 0.25f * (float) i;
        for (int i = 0; i < 6; i++) vc[i] = (float) i;
        ggml_backend_tensor_set(a, va, 0, sizeof(va));
        ggml_backend_tensor_set(b, vb, 0, sizeof(vb));
        ggml_backend_tensor_set(c, vc, 0, sizeof(vc));
        ok = ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS && ggml_nelements(r) == (int64_t) n_out;
        if (ok) {
            ggml_backend_tensor_get(r, out, 0, n_out * sizeof(float));
        }
        ggml_backend_buffer_free(buf);
    }
    ggml_free(ctx);
    return ok;
}

int main(int argc, char ** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH/libggml-rs-cpu.so\n", argv[0]);
        return 2;
    }
    size_t n_dev_before = ggml_backend_dev_count();
    ggml_backend_reg_t reg = ggml_backend_load(argv[1]);
    CHECK(reg != NULL);
    if (reg == NULL) {
        return 1;
    }
    printf("registry %s: %zu device(s)\n", ggml_backend_reg_name(reg), ggml_backend_reg_dev_count(reg));
    CHECK(strcmp(ggml_backend_reg_name(reg), "RS") == 0);
    CHECK(ggml_backend_reg_dev_count(reg) == 1);
    CHECK(ggml_backend_dev_count() == n_dev_before + 1);
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        size_t free, total;
        ggml_backend_dev_memory(dev, &free, &total);
        printf("device %zu: %s (%s), type %s, registry %s, %zu MiB\n", i, ggml_backend_dev_name(dev),
               ggml_backend_dev_description(dev), type_name(ggml_backend_dev_type(dev)),
               ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev)), total >> 20);
    }

    ggml_backend_dev_t rs = ggml_backend_dev_by_name("RS-CPU");
    CHECK(rs != NULL && ggml_backend_dev_backend_reg(rs) == reg);
    CHECK(rs != NULL && ggml_backend_dev_type(rs) == GGML_BACKEND_DEVICE_TYPE_CPU);
    // the reference's own CPU device is still the first of its type
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    CHECK(cpu != NULL && strcmp(ggml_backend_dev_name(cpu), "CPU") == 0);
    CHECK(ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_use_ref") != NULL);
    CHECK(ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads") != NULL);
    CHECK(ggml_backend_reg_get_proc_address(reg, "ggml_backend_no_such_function") == NULL);
    if (rs == NULL || cpu == NULL) {
        return 1;
    }

    ggml_backend_t b_rs = ggml_backend_dev_init(rs, NULL);
    ggml_backend_t b_cpu = ggml_backend_dev_init(cpu, NULL);
    CHECK(b_rs != NULL && b_cpu != NULL);
    if (b_rs == NULL || b_cpu == NULL) {
        return 1;
    }
    printf("backends: %s, %s\n", ggml_backend_name(b_rs), ggml_backend_name(b_cpu));
    CHECK(strcmp(ggml_backend_name(b_rs), "RS-CPU") == 0);
    CHECK(ggml_backend_get_device(b_rs) == rs);
    CHECK(strcmp(ggml_backend_buft_name(ggml_backend_get_default_buffer_type(b_rs)), "RS-CPU") == 0);
    CHECK(ggml_backend_buft_get_device(ggml_backend_get_default_buffer_type(b_rs)) == rs);

    float got[6], want[6];
    CHECK(compute(b_rs, got, 6));
    CHECK(compute(b_cpu, want, 6));
    for (int i = 0; i < 6; i++) {
        printf("  [%d] RS-CPU %g, CPU %g\n", i, (double) got[i], (double) want[i]);
        CHECK(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i])));
    }
    ggml_backend_free(b_rs);
    ggml_backend_free(b_cpu);

    ggml_backend_unload(reg);
    CHECK(ggml_backend_dev_by_name("RS-CPU") == NULL);

    if (failures != 0) {
        printf("load-plugin: %d check(s) failed\n", failures);
        return 1;
    }
    printf("load-plugin: OK\n");
    return 0;
}
