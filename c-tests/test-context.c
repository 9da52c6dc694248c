// Contexts, tensors, views and element access through the public C API, plus the promise
// that misuse ends in ggml_abort with a message (checked in a forked child).
#include "ggml.h"
#include "ggml-cpu.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static struct ggml_context * new_ctx(size_t size, bool no_alloc) {
    struct ggml_init_params params = { size, NULL, no_alloc };
    return ggml_init(params);
}

static void test_pool_accounting(void) {
    struct ggml_context * ctx = new_ctx(16 * 1024, false);
    CHECK(ggml_used_mem(ctx) == 0);
    CHECK(ggml_get_mem_size(ctx) == 16 * 1024);

    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 10, 3);
    CHECK(ggml_used_mem(ctx) == ggml_tensor_overhead() + 128);
    CHECK((char *) ggml_get_data(a) == (char *) a + sizeof(struct ggml_tensor));
    CHECK(a->nb[0] == 4 && a->nb[1] == 40 && a->nb[2] == 120 && a->nb[3] == 120);
    CHECK(ggml_nelements(a) == 30 && ggml_nrows(a) == 3 && ggml_nbytes(a) == 120);
    CHECK(ggml_n_dims(a) == 2 && ggml_is_matrix(a) && !ggml_is_vector(a));

    struct ggml_tensor * q = ggml_new_tensor_1d(ctx, GGML_TYPE_Q4_0, 64);
    CHECK(ggml_nbytes(q) == 36 && ggml_row_size(GGML_TYPE_Q4_0, 64) == 36);
    CHECK(ggml_is_quantized(GGML_TYPE_Q4_0) && !ggml_is_quantized(GGML_TYPE_F16));
    CHECK(strcmp(ggml_type_name(GGML_TYPE_Q4_0), "q4_0") == 0);

    ggml_set_name(a, "a");
    ggml_format_name(q, "q_%d_%s", 7, "x");
    CHECK(strcmp(ggml_get_name(q), "q_7_x") == 0);
    CHECK(ggml_get_tensor(ctx, "a") == a);
    CHECK(ggml_get_tensor(ctx, "nope") == NULL);
    CHECK(ggml_get_first_tensor(ctx) == a);
    CHECK(ggml_get_next_tensor(ctx, a) == q);
    CHECK(ggml_get_next_tensor(ctx, q) == NULL);
    CHECK(ggml_get_max_tensor_size(ctx) == 120);

    ggml_reset(ctx);
    CHECK(ggml_used_mem(ctx) == 0 && ggml_get_first_tensor(ctx) == NULL);
    ggml_free(ctx);
}

static void test_no_alloc_and_views(void) {
    struct ggml_context * ctx = new_ctx(16 * 1024, true);
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 8, 4, 2);
    CHECK(a->data == NULL);
    CHECK(ggml_used_mem(ctx) == ggml_tensor_overhead());
    ggml_set_no_alloc(ctx, false);
    CHECK(!ggml_get_no_alloc(ctx));

    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);
    CHECK(b->data != NULL);
    ggml_free(ctx);
}

static void test_elements(void) {
    struct ggml_context * ctx = new_ctx(16 * 1024, false);
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    ggml_set_f32(t, 1.5f);
    CHECK(ggml_get_f32_1d(t, 5) == 1.5f);
    ggml_set_f32_1d(t, 4, -2.0f);
    CHECK(ggml_get_f32_nd(t, 1, 1, 0, 0) == -2.0f);
    CHECK(ggml_get_i32_1d(t, 4) == -2);

    struct ggml_tensor * h = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 4);
    ggml_set_f32(h, 0.1f);
    CHECK(ggml_get_f32_1d(h, 2) == ggml_fp16_to_fp32(ggml_fp32_to_fp16(0.1f)));

    int64_t i0, i1, i2, i3;
    struct ggml_tensor * u = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 3, 4, 5);
    ggml_unravel_index(u, 1 + 2 * 2 + 3 * 6 + 3 * 24, &i0, &i1, &i2, &i3);
    CHECK(i0 == 1 && i1 == 2 && i2 == 3 && i3 == 3);

    ggml_set_zero(t);
    CHECK(ggml_get_f32_1d(t, 4) == 0.0f);
    ggml_free(ctx);
}

static void test_flags(void) {
    struct ggml_context * ctx = new_ctx(16 * 1024, true);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    ggml_set_input(a);
    ggml_set_param(a);
    CHECK(a->flags == (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_PARAM));
    ggml_set_loss(a);
    CHECK(a->flags & GGML_TENSOR_FLAG_LOSS);
    ggml_free(ctx);
}

static void test_misc(void) {
    CHECK(strcmp(ggml_version(), "0.25.1") == 0);
    CHECK(strstr(ggml_commit(), "ggml-rs") != NULL);
    CHECK(strcmp(ggml_status_to_string(GGML_STATUS_SUCCESS), "GGML status: success") == 0);
    struct ggml_threadpool_params p = ggml_threadpool_params_default(3);
    struct ggml_threadpool_params r;
    ggml_threadpool_params_init(&r, 3);
    CHECK(p.n_threads == 3 && p.poll == 50 && ggml_threadpool_params_match(&p, &r));
    CHECK(ggml_time_us() > 0 && ggml_time_ms() >= 0);
}

// Runs `fn` in a child and checks that it aborts with `expected` in its stderr.
static void expect_abort(void (*fn)(void), const char * expected) {
    int pipefd[2];
    if (pipe(pipefd) != 0) { perror("pipe"); exit(1); }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        fn();
        _exit(0);
    }
    close(pipefd[1]);
    char buf[8192] = {0};
    size_t len = 0;
    ssize_t n;
    while (len < sizeof(buf) - 1 && (n = read(pipefd[0], buf + len, sizeof(buf) - 1 - len)) > 0) {
        len += (size_t) n;
    }
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(buf, expected) != NULL);
    if (strstr(buf, expected) == NULL) {
        fprintf(stderr, "expected '%s' in:\n%s\n", expected, buf);
    }
}

static void overflow_pool(void) {
    struct ggml_context * ctx = new_ctx(1024, false);
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1024);
}

static void bad_loss(void) {
    struct ggml_context * ctx = new_ctx(4096, true);
    ggml_set_loss(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2));
}

static void explicit_abort(void) {
    ggml_abort("here.c", 42, "custom %s %d", "reason", 7);
}

static void on_abort(const char * message) {
    fprintf(stderr, "callback saw: %s\n", message);
}
static void abort_with_callback(void) {
    ggml_set_abort_callback(on_abort);
    ggml_abort("cb.c", 1, "via callback");
}

int main(void) {
    test_pool_accounting();
    test_no_alloc_and_views();
    test_elements();
    test_flags();
    test_misc();
    expect_abort(overflow_pool, "not enough space in the context's memory pool");
    expect_abort(bad_loss, "scalar");
    expect_abort(explicit_abort, "here.c:42: custom reason 7");
    expect_abort(abort_with_callback, "callback saw: cb.c:1: via callback");
    printf("test-context: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
