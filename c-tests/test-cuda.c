// ggml-cuda.h through the installed package. Without a GPU (or without the driver) every
// function answers as for zero devices, with no abort: the registry lists no CUDA entry, no
// backend or buffer type is made, and the reasons are logged. With a GPU (the emulated one of
// `scripts/install --cuda-emulator` included) the device is listed, a backend on it
// computes, and its buffers keep what is written. The test says which of the two it ran.
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cuda.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static void without_a_gpu(void) {
    CHECK(ggml_backend_cuda_get_device_count() == 0);
    CHECK(ggml_backend_cuda_init(0) == NULL);
    CHECK(ggml_backend_cuda_buffer_type(0) == NULL);
    CHECK(ggml_backend_cuda_host_buffer_type() == NULL);
    char description[64] = "untouched";
    ggml_backend_cuda_get_device_description(0, description, sizeof(description));
    CHECK(description[0] == '\0');
    size_t free_mem = 1, total_mem = 1;
    ggml_backend_cuda_get_device_memory(0, &free_mem, &total_mem);
    CHECK(free_mem == 0 && total_mem == 0);
    char block[64];
    CHECK(!ggml_backend_cuda_register_host_buffer(block, sizeof(block)));
    ggml_backend_cuda_unregister_host_buffer(block);

    ggml_backend_reg_t reg = ggml_backend_cuda_reg();
    CHECK(reg != NULL && strcmp(ggml_backend_reg_name(reg), "CUDA") == 0);
    CHECK(ggml_backend_reg_dev_count(reg) == 0);
    CHECK(ggml_backend_reg_by_name("CUDA") == NULL);
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        CHECK(strncmp(ggml_backend_dev_name(ggml_backend_dev_get(i)), "CUDA", 4) != 0);
    }
}

static void with_a_gpu(void) {
    const int n = ggml_backend_cuda_get_device_count();
    CHECK(ggml_backend_reg_by_name("CUDA") == ggml_backend_cuda_reg());
    CHECK(ggml_backend_reg_dev_count(ggml_backend_cuda_reg()) == (size_t) n);
    CHECK(ggml_backend_cuda_init(n) == NULL);
    CHECK(ggml_backend_cuda_buffer_type(-1) == NULL);

    char description[256];
    ggml_backend_cuda_get_device_description(0, description, sizeof(description));
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(ggml_backend_cuda_reg(), 0);
    CHECK(strcmp(description, ggml_backend_dev_description(dev)) == 0);
    CHECK(strcmp(ggml_backend_dev_name(dev), "CUDA0") == 0);
    size_t free_mem = 0, total_mem = 0;
    ggml_backend_cuda_get_device_memory(0, &free_mem, &total_mem);
    CHECK(total_mem > 0 && free_mem <= total_mem);
    CHECK(ggml_backend_buft_is_host(ggml_backend_cuda_host_buffer_type()));
    CHECK(!ggml_backend_buft_is_host(ggml_backend_cuda_buffer_type(0)));
    CHECK(ggml_backend_buft_get_alignment(ggml_backend_cuda_buffer_type(0)) == 128);

    // a + b * 2 on the device
    ggml_backend_t backend = ggml_backend_cuda_init(0);
    CHECK(backend != NULL && ggml_backend_is_cuda(backend));
    if (backend == NULL) {
        return;
    }
    struct ggml_init_params params = { 16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100);
    struct ggml_tensor * out = ggml_add(ctx, a, ggml_scale(ctx, b, 2.0f));
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    CHECK(buf != NULL && strcmp(ggml_backend_buffer_name(buf), "CUDA0") == 0);
    float va[100], vb[100], got[100];
    for (int i = 0; i < 100; i++) {
        va[i] = (float) i;
        vb[i] = 0.5f * (float) i - 3.0f;
    }
    ggml_backend_tensor_set(a, va, 0, sizeof(va));
    ggml_backend_tensor_set_async(backend, b, vb, 0, sizeof(vb));
    ggml_backend_synchronize(backend);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    CHECK(ggml_backend_supports_op(backend, out));
    CHECK(ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS);
    ggml_backend_tensor_get(out, got, 0, sizeof(got));
    int wrong = 0;
    for (int i = 0; i < 100; i++) {
        wrong += fabsf(got[i] - (va[i] + 2.0f * vb[i])) > 1e-6f;
    }
    CHECK(wrong == 0);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(backend);
}

int main(void) {
    if (ggml_backend_cuda_get_device_count() == 0) {
        printf("test-cuda: no CUDA device: checking the answers for zero devices\n");
        without_a_gpu();
    } else {
        printf("test-cuda: %d CUDA device(s): checking the first\n", ggml_backend_cuda_get_device_count());
        with_a_gpu();
    }
    printf("test-cuda: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
