// Buffer types, buffers and tensor data through the public C API: the CPU buffer types,
// tensor set/get/memset/2-D/copy, views, the linear tensor allocator and context allocation,
// and the aborts that guard out-of-bounds access (checked in a forked child).
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static struct ggml_context * new_ctx(bool no_alloc) {
    struct ggml_init_params params = { 64 * 1024, NULL, no_alloc };
    return ggml_init(params);
}

static void test_cpu_buffer_type(void) {
    ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
    CHECK(buft != NULL && buft == ggml_backend_cpu_buffer_type());
    CHECK(strcmp(ggml_backend_buft_name(buft), "CPU") == 0);
    CHECK(ggml_backend_buft_get_alignment(buft) == 32);
    CHECK(ggml_backend_buft_get_max_size(buft) == SIZE_MAX);
    CHECK(ggml_backend_buft_is_host(buft));

    ggml_backend_buffer_t empty = ggml_backend_buft_alloc_buffer(buft, 0);
    CHECK(empty != NULL);
    CHECK(ggml_backend_buffer_get_size(empty) == 0);
    CHECK(ggml_backend_buffer_get_base(empty) == NULL);
    CHECK(ggml_backend_buffer_get_type(empty) == buft);
    ggml_backend_buffer_clear(empty, 1);
    ggml_backend_buffer_free(empty);
    ggml_backend_buffer_free(NULL);

    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, 1000);
    CHECK(buf != NULL);
    CHECK(ggml_backend_buffer_get_size(buf) == 1000);
    CHECK((uintptr_t) ggml_backend_buffer_get_base(buf) % 32 == 0);
    CHECK(strcmp(ggml_backend_buffer_name(buf), "CPU") == 0);
    CHECK(ggml_backend_buffer_get_alignment(buf) == 32);
    CHECK(ggml_backend_buffer_get_max_size(buf) == SIZE_MAX);
    CHECK(ggml_backend_buffer_is_host(buf));
    CHECK(ggml_backend_buffer_get_usage(buf) == GGML_BACKEND_BUFFER_USAGE_ANY);
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    CHECK(ggml_backend_buffer_get_usage(buf) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_buffer_clear(buf, 0x7F);
    const unsigned char * base = ggml_backend_buffer_get_base(buf);
    int all = 1;
    for (int i = 0; i < 1000; i++) {
        all &= base[i] == 0x7F;
    }
    CHECK(all);
    ggml_backend_buffer_reset(buf);
    ggml_backend_buffer_free(buf);
}

static void test_buffer_from_ptr(void) {
    void * mem = aligned_alloc(64, 256);
    memset(mem, 0, 256);
    ggml_backend_buffer_t buf = ggml_backend_cpu_buffer_from_ptr(mem, 256);
    CHECK(ggml_backend_buffer_get_base(buf) == mem);
    CHECK(ggml_backend_buffer_get_size(buf) == 256);
    CHECK(strcmp(ggml_backend_buffer_name(buf), "CPU_Mapped") == 0);
    CHECK(ggml_backend_buffer_is_host(buf));

    struct ggml_context * ctx = new_ctx(true);
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    CHECK(ggml_backend_tensor_alloc(buf, t, (char *) mem + 64) == GGML_STATUS_SUCCESS);
    CHECK(t->buffer == buf && t->data == (char *) mem + 64);
    const float vals[4] = { 1.0f, 2.0f, 3.0f, 4.0f };
    ggml_backend_tensor_set(t, vals, 0, sizeof(vals));
    CHECK(memcmp((char *) mem + 64, vals, sizeof(vals)) == 0);
    ggml_free(ctx);

    ggml_backend_buffer_clear(buf, 9);
    ggml_backend_buffer_free(buf);
    // The memory still belongs to us.
    CHECK(((unsigned char *) mem)[255] == 9);
    free(mem);
}

static void test_tallocr(void) {
    struct ggml_context * ctx = new_ctx(true);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);   // 12 bytes
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 5, 3); // 30 bytes
    struct ggml_tensor * c = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, 1);    // 1 byte
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 96);
    char * base = ggml_backend_buffer_get_base(buf);

    struct ggml_tallocr talloc = ggml_tallocr_new(buf);
    CHECK(talloc.buffer == buf && talloc.base == base && talloc.alignment == 32 && talloc.offset == 0);
    CHECK(ggml_tallocr_alloc(&talloc, a) == GGML_STATUS_SUCCESS);
    CHECK(ggml_tallocr_alloc(&talloc, b) == GGML_STATUS_SUCCESS);
    CHECK(ggml_tallocr_alloc(&talloc, c) == GGML_STATUS_SUCCESS);
    CHECK(a->data == base && b->data == base + 32 && c->data == base + 64);
    CHECK(talloc.offset == 96);
    CHECK(a->buffer == buf && b->buffer == buf && c->buffer == buf);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

static void test_data_access(void) {
    struct ggml_context * ctx = new_ctx(true);
    struct ggml_tensor * m = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 3);
    struct ggml_tensor * n = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 3);
    struct ggml_tensor * row = ggml_view_1d(ctx, m, 4, m->nb[1]); // the second row
    ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();

    CHECK(ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, buft) == 64 + 64);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    CHECK(buf != NULL && ggml_backend_buffer_get_size(buf) == 128);
    CHECK(m->buffer == buf && n->buffer == buf && row->buffer == buf);
    CHECK((char *) row->data == (char *) m->data + 16);
    CHECK(ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, buft) == 0);
    CHECK(ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft) == NULL);

    int32_t vals[12];
    for (int i = 0; i < 12; i++) {
        vals[i] = i + 1;
    }
    ggml_backend_tensor_set(m, vals, 0, sizeof(vals));
    int32_t got[12] = { 0 };
    ggml_backend_tensor_get(row, got, 0, 4 * sizeof(int32_t));
    CHECK(got[0] == 5 && got[3] == 8);

    ggml_backend_tensor_memset(m, 0, 4, 8); // elements 1 and 2
    ggml_backend_tensor_get(m, got, 0, sizeof(got));
    CHECK(got[0] == 1 && got[1] == 0 && got[2] == 0 && got[3] == 4 && got[11] == 12);

    // 2-D: the first two elements of each row, packed on the host side.
    int32_t cols[6] = { 0 };
    ggml_backend_tensor_get_2d(m, cols, 0, 2 * sizeof(int32_t), 3, m->nb[1], 2 * sizeof(int32_t));
    CHECK(cols[0] == 1 && cols[1] == 0 && cols[2] == 5 && cols[3] == 6 && cols[4] == 9 && cols[5] == 10);
    const int32_t ones[6] = { -1, -2, -3, -4, -5, -6 };
    ggml_backend_tensor_set_2d(m, ones, 2 * sizeof(int32_t), 2 * sizeof(int32_t), 3, m->nb[1], 2 * sizeof(int32_t));
    ggml_backend_tensor_get(m, got, 0, sizeof(got));
    CHECK(got[2] == -1 && got[3] == -2 && got[6] == -3 && got[7] == -4 && got[10] == -5 && got[11] == -6);
    CHECK(got[0] == 1 && got[4] == 5 && got[8] == 9);

    ggml_backend_tensor_copy(m, n);
    int32_t copied[12] = { 0 };
    ggml_backend_tensor_get(n, copied, 0, sizeof(copied));
    CHECK(memcmp(copied, got, sizeof(got)) == 0);

    // A view made after allocation is initialised by hand.
    struct ggml_tensor * last = ggml_view_1d(ctx, n, 2, 10 * sizeof(int32_t));
    CHECK(ggml_backend_view_init(last) == GGML_STATUS_SUCCESS);
    CHECK(last->buffer == buf && (char *) last->data == (char *) n->data + 40);
    int32_t tail[2] = { 0 };
    ggml_backend_tensor_get(last, tail, 0, sizeof(tail));
    CHECK(tail[0] == -5 && tail[1] == -6);

    CHECK(ggml_backend_buft_get_alloc_size(buft, m) == ggml_nbytes(m));
    CHECK(ggml_backend_buffer_get_alloc_size(buf, m) == ggml_nbytes(m));
    CHECK(ggml_backend_buffer_init_tensor(buf, m) == GGML_STATUS_SUCCESS);

    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

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

static struct ggml_tensor * allocated_tensor(void) {
    struct ggml_context * ctx = new_ctx(true);
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    return t;
}

static void write_past_end(void) {
    float v[2] = { 0 };
    ggml_backend_tensor_set(allocated_tensor(), v, 12, sizeof(v));
}

static void read_past_end(void) {
    float v[8];
    ggml_backend_tensor_get(allocated_tensor(), v, 0, sizeof(v));
}

static void set_without_buffer(void) {
    struct ggml_context * ctx = new_ctx(true);
    float v = 0;
    ggml_backend_tensor_set(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), &v, 0, sizeof(v));
}

static void overfill_tallocr(void) {
    struct ggml_context * ctx = new_ctx(true);
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    struct ggml_tallocr talloc = ggml_tallocr_new(buf);
    ggml_tallocr_alloc(&talloc, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 17));
}

static void unaligned_from_ptr(void) {
    static char mem[128];
    ggml_backend_cpu_buffer_from_ptr(mem + ((uintptr_t) (mem + 1) % 32 == 0 ? 2 : 1), 64);
}

static void alloc_ctx_with_memory(void) {
    struct ggml_context * ctx = new_ctx(false);
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
}

int main(void) {
    test_cpu_buffer_type();
    test_buffer_from_ptr();
    test_tallocr();
    test_data_access();
    expect_abort(write_past_end, "tensor write out of bounds");
    expect_abort(read_past_end, "tensor read out of bounds");
    expect_abort(set_without_buffer, "tensor buffer not set");
    expect_abort(overfill_tallocr, "not enough space in the buffer");
    expect_abort(unaligned_from_ptr, "buffer pointer must be aligned");
    expect_abort(alloc_ctx_with_memory, "no_alloc");
    printf("test-backend-buffer: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
