// Sizes from outside that the machine cannot hold are refused before anything is allocated:
// ggml_init with impossible pool sizes, CPU buffers of petabytes, and a GGUF file whose
// tensor data is larger than the machine's memory. Each returns NULL with a logged reason and
// the process stays small; what the machine can hold still works afterwards.
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int checks = 0;
static int failures = 0;

#define CHECK(cond, ...)                                      \
    do {                                                      \
        checks++;                                             \
        if (!(cond)) {                                        \
            failures++;                                       \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                     \
            fputc('\n', stderr);                              \
        }                                                     \
    } while (0)

// The errors logged while a case runs: each refusal must say why.
static int n_errors = 0;
static void count_errors(enum ggml_log_level level, const char * text, void * data) {
    (void) data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        n_errors++;
        fprintf(stderr, "  logged: %s", text);
    }
}

static long peak_rss_mb(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}

static void impossible_contexts(void) {
    const size_t sizes[] = { (size_t) 1 << 50, SIZE_MAX - 100, SIZE_MAX };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        n_errors = 0;
        struct ggml_init_params p = { sizes[i], NULL, false };
        struct ggml_context * ctx = ggml_init(p);
        CHECK(ctx == NULL, "ggml_init of %zu bytes gave a context", sizes[i]);
        CHECK(n_errors == 1, "ggml_init of %zu bytes logged %d errors", sizes[i], n_errors);
        ggml_free(ctx);
    }
    struct ggml_init_params p = { 1 << 20, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    CHECK(ctx && ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1000), "a 1 MiB context after the refusals");
    ggml_free(ctx);
}

static void impossible_buffers(void) {
    n_errors = 0;
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), (size_t) 1 << 52);
    CHECK(b == NULL, "a CPU buffer of 4 PiB");
    CHECK(n_errors == 1, "the CPU buffer refusal logged %d errors", n_errors);
    ggml_backend_buffer_free(b);
}

// A GGUF file of one F32 tensor of `ne0` x `ne1` whose data is served as zeros by the
// callback: only the header is real.
struct big_file {
    uint8_t header[256];
    size_t header_size;
    uint64_t total;
    uint64_t bytes_read;
};

static size_t read_big(void * userdata, void * output, uint64_t offset, size_t len) {
    struct big_file * f = userdata;
    if (offset >= f->total) {
        return 0;
    }
    size_t n = len < f->total - offset ? len : (size_t) (f->total - offset);
    for (size_t i = 0; i < n; ++i) {
        ((uint8_t *) output)[i] = offset + i < f->header_size ? f->header[offset + i] : 0;
    }
    f->bytes_read += n;
    return n;
}

static void put(struct big_file * f, const void * p, size_t n) {
    memcpy(f->header + f->header_size, p, n);
    f->header_size += n;
}

static struct big_file big_file(int64_t ne0, int64_t ne1) {
    struct big_file f = { .header_size = 0 };
    const uint32_t version = GGUF_VERSION, n_dims = 2, type = GGML_TYPE_F32;
    const int64_t n_tensors = 1, n_kv = 0;
    const char * name = "huge";
    const uint64_t name_len = strlen(name), offset = 0;
    put(&f, "GGUF", 4);
    put(&f, &version, 4);
    put(&f, &n_tensors, 8);
    put(&f, &n_kv, 8);
    put(&f, &name_len, 8);
    put(&f, name, name_len);
    put(&f, &n_dims, 4);
    put(&f, &ne0, 8);
    put(&f, &ne1, 8);
    put(&f, &type, 4);
    put(&f, &offset, 8);
    f.header_size = (f.header_size + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
    f.total = f.header_size + (uint64_t) ne0 * (uint64_t) ne1 * 4;
    return f;
}

static void gguf_larger_than_the_machine(void) {
    const uint64_t memory = (uint64_t) sysconf(_SC_PHYS_PAGES) * (uint64_t) sysconf(_SC_PAGE_SIZE);
    const int64_t ne0 = 1 << 20;
    // twice the machine's memory
    const int64_t ne1 = (int64_t) (2 * memory / (4 * (uint64_t) ne0)) + 1;

    struct big_file f = big_file(ne0, ne1);
    struct ggml_context * ctx = NULL;
    struct gguf_init_params with_data = { false, &ctx };
    n_errors = 0;
    struct gguf_context * g = gguf_init_from_callback(read_big, &f, 0, f.total, with_data);
    CHECK(g == NULL && ctx == NULL, "a GGUF of %llu bytes loaded with its data", (unsigned long long) f.total);
    CHECK(n_errors >= 1, "the GGUF refusal logged nothing");
    CHECK(f.bytes_read <= f.header_size, "%llu bytes read before refusing", (unsigned long long) f.bytes_read);
    gguf_free(g);

    // its metadata alone is fine
    struct gguf_init_params metadata = { true, &ctx };
    g = gguf_init_from_callback(read_big, &f, 0, f.total, metadata);
    CHECK(g != NULL && ctx != NULL, "the metadata of a large GGUF");
    if (g) {
        CHECK(gguf_get_tensor_size(g, 0) == (size_t) (ne0 * ne1 * 4), "tensor size");
        CHECK(ggml_nbytes(ggml_get_first_tensor(ctx)) == (size_t) (ne0 * ne1 * 4), "tensor bytes");
    }
    ggml_free(ctx);
    gguf_free(g);
}

// A GGUF may ask for any power-of-two alignment up to 2^31, and its metadata is padded to
// it: the size is reported without building the padding, and a file is written with it in
// small pieces.
static void gguf_huge_alignment(void) {
    // a writer keeps the default alignment; a reader takes the key's
    struct gguf_context * w = gguf_init_empty();
    gguf_set_val_u32(w, "general.alignment", 1u << 31);
    uint8_t meta[256];
    const size_t n = gguf_get_meta_size(w);
    CHECK(n <= sizeof(meta), "metadata of %zu bytes", n);
    gguf_get_meta_data(w, meta);
    gguf_free(w);

    struct gguf_init_params params = { true, NULL };
    struct gguf_context * g = gguf_init_from_buffer(meta, n, params);
    CHECK(g && gguf_get_alignment(g) == (size_t) 1 << 31, "alignment 2^31 read back");
    if (g) {
        const size_t size = gguf_get_meta_size(g);
        CHECK(size == (size_t) 1 << 31, "metadata of %zu bytes, expected 2^31", size);
    }
    gguf_free(g);
}

int main(void) {
    ggml_log_set(count_errors, NULL);
    impossible_contexts();
    impossible_buffers();
    gguf_larger_than_the_machine();
    gguf_huge_alignment();
    ggml_log_set(NULL, NULL);

    const long rss = peak_rss_mb();
    CHECK(rss < 256, "peak resident memory %ld MiB", rss);
    printf("%d/%d checks passed (peak resident memory %ld MiB)\n", checks - failures, checks, rss);
    return failures == 0 ? 0 : 1;
}
