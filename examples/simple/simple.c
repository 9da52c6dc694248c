// The smallest complete ggml program: multiply two matrices on the CPU.
// It uses only the public API (ggml.h, ggml-backend.h, ggml-cpu.h), as installed by
// scripts/install, and so each of ggml's three libraries: ggml-base, ggml (the device
// registry) and ggml-cpu.
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <stdio.h>

int main(void) {
    // The devices this ggml offers, from its registry: the CPU at least.
    printf("devices:");
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        printf(" %s", ggml_backend_dev_name(ggml_backend_dev_get(i)));
    }
    printf("\n");

    // A is 4x2 (4 rows of 2), B is 3x2; ggml_mul_mat(A, B) gives B * A^T, 4 columns by 3 rows.
    const float a[4 * 2] = { 2, 8, 5, 1, 4, 2, 8, 6 };
    const float b[3 * 2] = { 10, 5, 9, 9, 5, 4 };

    struct ggml_init_params params = {
        .mem_size   = 1024 * 1024,
        .mem_buffer = NULL,
        .no_alloc   = false,
    };
    struct ggml_context * ctx = ggml_init(params);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init failed\n");
        return 1;
    }

    struct ggml_tensor * ta = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 4);
    struct ggml_tensor * tb = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 3);
    for (int i = 0; i < 4 * 2; i++) { ((float *) ta->data)[i] = a[i]; }
    for (int i = 0; i < 3 * 2; i++) { ((float *) tb->data)[i] = b[i]; }

    struct ggml_tensor * result = ggml_mul_mat(ctx, ta, tb);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, result);
    if (ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "compute failed\n");
        return 1;
    }

    // expected: [ 60 55 50 110 ; 90 54 54 126 ; 42 29 28 64 ]
    const float expected[3 * 4] = { 60, 55, 50, 110, 90, 54, 54, 126, 42, 29, 28, 64 };
    int ok = 1;
    printf("mul_mat (%d x %d):\n", (int) result->ne[0], (int) result->ne[1]);
    for (int j = 0; j < result->ne[1]; j++) {
        printf("  [");
        for (int i = 0; i < result->ne[0]; i++) {
            const float v = ((float *) result->data)[j * result->ne[0] + i];
            printf(" %.0f", v);
            ok &= v == expected[j * 4 + i];
        }
        printf(" ]\n");
    }
    ggml_free(ctx);
    printf("%s\n", ok ? "ok" : "WRONG RESULT");
    return ok ? 0 : 1;
}
