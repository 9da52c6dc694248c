// The CPU backend through the public C API (ggml-cpu.h, ggml-backend.h): start-up and the
// feature queries, ggml_graph_plan/ggml_graph_compute with and without a thread pool,
// ggml_graph_compute_with_ctx, the abort callback, the per-type CPU traits and row
// conversions, and a CPU backend computing through ggml_backend_graph_compute, through a
// graph plan, and as the registry's device hands it out.
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

// A is 4 rows of 2, B is 3 rows of 2: mul_mat(A + A, B) is 3 rows of 4.
static const float A[4 * 2] = { 2, 8, 5, 1, 4, 2, 8, 6 };
static const float B[3 * 2] = { 10, 5, 9, 9, 5, 4 };

static float expected_at(int row, int col) {
    return 2 * (A[col * 2 + 0] * B[row * 2 + 0] + A[col * 2 + 1] * B[row * 2 + 1]);
}

struct model {
    struct ggml_context * ctx;
    struct ggml_tensor * a;
    struct ggml_tensor * b;
    struct ggml_tensor * out;
    struct ggml_cgraph * graph;
};

// Builds mul_mat(a + a, b); with `no_alloc` the data is set later.
static struct model build(bool no_alloc) {
    struct ggml_init_params params = { 1024 * 1024, NULL, no_alloc };
    struct model m;
    m.ctx = ggml_init(params);
    m.a = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F32, 2, 4);
    m.b = ggml_new_tensor_2d(m.ctx, GGML_TYPE_F32, 2, 3);
    if (!no_alloc) {
        memcpy(m.a->data, A, sizeof(A));
        memcpy(m.b->data, B, sizeof(B));
    }
    m.out = ggml_mul_mat(m.ctx, ggml_add(m.ctx, m.a, m.a), m.b);
    m.graph = ggml_new_graph(m.ctx);
    ggml_build_forward_expand(m.graph, m.out);
    return m;
}

static int result_ok(const float * out) {
    int ok = 1;
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 4; c++) {
            ok &= fabsf(out[r * 4 + c] - expected_at(r, c)) < 1e-4f;
        }
    }
    return ok;
}

static void test_queries(void) {
    ggml_cpu_init();
    ggml_cpu_init();
    int flags[] = {
        ggml_cpu_has_sse3(), ggml_cpu_has_ssse3(), ggml_cpu_has_avx(), ggml_cpu_has_avx_vnni(),
        ggml_cpu_has_avx2(), ggml_cpu_has_bmi2(), ggml_cpu_has_f16c(), ggml_cpu_has_fma(),
        ggml_cpu_has_avx512(), ggml_cpu_has_avx512_vbmi(), ggml_cpu_has_avx512_vnni(),
        ggml_cpu_has_avx512_bf16(), ggml_cpu_has_amx_int8(), ggml_cpu_has_neon(),
        ggml_cpu_has_arm_fma(), ggml_cpu_has_fp16_va(), ggml_cpu_has_dotprod(),
        ggml_cpu_has_matmul_int8(), ggml_cpu_has_sve(), ggml_cpu_has_sme(), ggml_cpu_has_sme2(),
        ggml_cpu_has_riscv_v(), ggml_cpu_has_vsx(), ggml_cpu_has_vxe(), ggml_cpu_has_wasm_simd(),
        ggml_cpu_has_llamafile(),
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        CHECK(flags[i] == 0 || flags[i] == 1);
    }
    CHECK(ggml_cpu_get_sve_cnt() >= 0 && ggml_cpu_get_rvv_vlen() >= 0);
#if defined(__x86_64__)
    CHECK(ggml_cpu_has_neon() == 0);
    CHECK(ggml_cpu_has_sse3() == 1); // every x86-64 processor this runs on has it
#endif
    ggml_numa_init(GGML_NUMA_STRATEGY_DISTRIBUTE);
    CHECK(ggml_is_numa() == ggml_is_numa());
}

static void test_scalars_and_rows(void) {
    struct ggml_init_params params = { 64 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * i = ggml_new_i32(ctx, -7);
    struct ggml_tensor * f = ggml_new_f32(ctx, 2.5f);
    CHECK(i->type == GGML_TYPE_I32 && ggml_nelements(i) == 1 && ggml_get_i32_1d(i, 0) == -7);
    CHECK(f->type == GGML_TYPE_F32 && ggml_nelements(f) == 1 && ggml_get_f32_1d(f, 0) == 2.5f);
    ggml_free(ctx);

    const float x[5] = { 1.0f, -2.5f, 0.333251953125f, 65504.0f, -0.0f };
    ggml_fp16_t h[5];
    ggml_bf16_t bf[5];
    float back[5];
    int32_t n[5];
    ggml_cpu_fp32_to_fp16(x, h, 5);
    ggml_cpu_fp16_to_fp32(h, back, 5);
    CHECK(memcmp(back, x, sizeof(x)) == 0);
    ggml_cpu_fp32_to_bf16(x, bf, 2);
    ggml_cpu_bf16_to_fp32(bf, back, 2);
    CHECK(back[0] == 1.0f && back[1] == -2.5f);
    ggml_cpu_fp32_to_i32(x, n, 2);
    CHECK(n[0] == 1 && n[1] == -2);
    ggml_cpu_fp32_to_fp32(x, back, 5);
    CHECK(memcmp(back, x, sizeof(x)) == 0);

    const struct ggml_type_traits_cpu * q4 = ggml_get_type_traits_cpu(GGML_TYPE_Q4_0);
    CHECK(q4->vec_dot_type == GGML_TYPE_Q8_0 && q4->nrows == 1 && q4->from_float && q4->vec_dot);
    const struct ggml_type_traits_cpu * f16 = ggml_get_type_traits_cpu(GGML_TYPE_F16);
    CHECK(f16->vec_dot_type == GGML_TYPE_F16);
    f16->from_float(x, h, 4);
    float dot = 0.0f;
    f16->vec_dot(4, &dot, 0, h, 0, h, 0, 1);
    CHECK(fabsf(dot - (1.0f + 6.25f + 0.333251953125f * 0.333251953125f + 65504.0f * 65504.0f)) < 1e4f);
    CHECK(ggml_get_type_traits_cpu(GGML_TYPE_Q4_K)->vec_dot_type == GGML_TYPE_Q8_K);
}

static void test_graph_compute(void) {
    // with the context's memory as scratch
    struct model m = build(false);
    CHECK(ggml_graph_compute_with_ctx(m.ctx, m.graph, 2) == GGML_STATUS_SUCCESS);
    CHECK(result_ok((const float *) m.out->data));
    ggml_free(m.ctx);

    // plan + compute, on a pool made for the call and on one made here
    for (int n_threads = 1; n_threads <= 3; n_threads++) {
        m = build(false);
        struct ggml_cplan plan = ggml_graph_plan(m.graph, n_threads, NULL);
        CHECK(plan.n_threads >= 1 && plan.n_threads <= n_threads && plan.threadpool == NULL);
        uint8_t * work = plan.work_size ? malloc(plan.work_size) : NULL;
        plan.work_data = work;
        CHECK(ggml_graph_compute(m.graph, &plan) == GGML_STATUS_SUCCESS);
        CHECK(result_ok((const float *) m.out->data));

        struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
        struct ggml_threadpool * pool = ggml_threadpool_new(&tpp);
        CHECK(pool != NULL);
        memset(m.out->data, 0, ggml_nbytes(m.out));
        plan = ggml_graph_plan(m.graph, -1, pool);
        CHECK(plan.threadpool == pool);
        plan.work_data = work;
        ggml_threadpool_pause(pool);
        ggml_threadpool_resume(pool);
        CHECK(ggml_graph_compute(m.graph, &plan) == GGML_STATUS_SUCCESS);
        CHECK(result_ok((const float *) m.out->data));
        ggml_threadpool_free(pool);
        free(work);
        ggml_free(m.ctx);
    }
    ggml_threadpool_free(NULL);
}

static bool abort_now(void * data) {
    (*(int *) data)++;
    return true;
}

static void test_abort(void) {
    struct model m = build(false);
    struct ggml_cplan plan = ggml_graph_plan(m.graph, 2, NULL);
    uint8_t * work = plan.work_size ? malloc(plan.work_size) : NULL;
    int calls = 0;
    plan.work_data = work;
    plan.abort_callback = abort_now;
    plan.abort_callback_data = &calls;
    CHECK(ggml_graph_compute(m.graph, &plan) == GGML_STATUS_ABORTED);
    CHECK(calls == 1);
    free(work);
    ggml_free(m.ctx);
}

// Computes the model on `backend` with tensors in a backend buffer.
static void compute_on(ggml_backend_t backend, bool through_plan, enum ggml_status want) {
    struct model m = build(true);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(m.ctx, backend);
    CHECK(buf != NULL);
    ggml_backend_tensor_set(m.a, A, 0, sizeof(A));
    ggml_backend_tensor_set(m.b, B, 0, sizeof(B));
    enum ggml_status status;
    if (through_plan) {
        ggml_backend_graph_plan_t plan = ggml_backend_graph_plan_create(backend, m.graph);
        CHECK(plan != NULL);
        status = ggml_backend_graph_plan_compute(backend, plan);
        ggml_backend_graph_plan_free(backend, plan);
    } else {
        status = ggml_backend_graph_compute(backend, m.graph);
    }
    CHECK(status == want);
    if (want == GGML_STATUS_SUCCESS) {
        float out[12];
        ggml_backend_tensor_get(m.out, out, 0, sizeof(out));
        CHECK(result_ok(out));
    }
    ggml_backend_buffer_free(buf);
    ggml_free(m.ctx);
}

static int aborts = 0;

static bool count_and_abort(void * data) {
    (void) data;
    aborts++;
    return true;
}

static void test_backend(void) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    CHECK(backend != NULL);
    CHECK(ggml_backend_is_cpu(backend));
    CHECK(!ggml_backend_is_cpu(NULL));
    CHECK(strcmp(ggml_backend_name(backend), "CPU") == 0);
    CHECK(ggml_backend_get_device(backend) == ggml_backend_reg_dev_get(ggml_backend_cpu_reg(), 0));

    for (int n_threads = 1; n_threads <= 4; n_threads++) {
        ggml_backend_cpu_set_n_threads(backend, n_threads);
        compute_on(backend, false, GGML_STATUS_SUCCESS);
        compute_on(backend, true, GGML_STATUS_SUCCESS);
    }
    ggml_backend_cpu_set_use_ref(backend, true);
    compute_on(backend, false, GGML_STATUS_SUCCESS);
    ggml_backend_cpu_set_use_ref(backend, false);

    // a lent pool, then back to the backend's own
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(2);
    struct ggml_threadpool * pool = ggml_threadpool_new(&tpp);
    ggml_backend_cpu_set_threadpool(backend, pool);
    ggml_backend_cpu_set_n_threads(backend, -1); // the pool's size
    compute_on(backend, false, GGML_STATUS_SUCCESS);
    ggml_backend_cpu_set_threadpool(backend, NULL);
    ggml_backend_cpu_set_n_threads(backend, 2);
    compute_on(backend, false, GGML_STATUS_SUCCESS);
    ggml_threadpool_free(pool);

    ggml_backend_cpu_set_abort_callback(backend, count_and_abort, NULL);
    compute_on(backend, false, GGML_STATUS_ABORTED);
    CHECK(aborts == 1);
    ggml_backend_cpu_set_abort_callback(backend, NULL, NULL);
    compute_on(backend, false, GGML_STATUS_SUCCESS);

    // supports_op: the model's nodes are supported
    struct model m = build(true);
    CHECK(ggml_backend_supports_op(backend, m.out));
    ggml_free(m.ctx);

    ggml_backend_free(backend);
}

static void test_registry(void) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    const char * names[] = {
        "ggml_backend_set_n_threads", "ggml_backend_dev_get_extra_bufts", "ggml_backend_get_features",
        "ggml_backend_set_abort_callback", "ggml_backend_cpu_numa_init", "ggml_backend_cpu_is_numa",
        "ggml_backend_cpu_set_use_ref", "ggml_threadpool_new", "ggml_threadpool_free",
        "ggml_backend_cpu_set_threadpool",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (ggml_backend_reg_get_proc_address(reg, names[i]) == NULL) {
            fprintf(stderr, "missing proc address: %s\n", names[i]);
            CHECK(false);
        }
    }
    CHECK(ggml_backend_reg_get_proc_address(reg, "ggml_backend_no_such_function") == NULL);

    ggml_backend_get_features_t get_features =
        (ggml_backend_get_features_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
    if (get_features) {
        int n = 0;
        for (struct ggml_backend_feature * f = get_features(reg); f->name; f++) {
            CHECK(f->value != NULL);
            n++;
        }
        CHECK(n < 64);
    }

    // the device starts CPU backends, and the registry's setter reaches them
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
    ggml_backend_t backend = ggml_backend_dev_init(dev, NULL);
    CHECK(backend != NULL);
    if (backend) {
        CHECK(ggml_backend_is_cpu(backend));
        ggml_backend_set_n_threads_t set_n_threads =
            (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
        if (set_n_threads) {
            set_n_threads(backend, 3);
        }
        compute_on(backend, false, GGML_STATUS_SUCCESS);
        ggml_backend_free(backend);
    }
}

int main(void) {
    test_queries();
    test_scalars_and_rows();
    test_graph_compute();
    test_abort();
    test_backend();
    test_registry();
    printf("%d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
