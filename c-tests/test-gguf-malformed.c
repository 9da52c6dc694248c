// Malformed GGUF files must be rejected (NULL, no ggml context left behind), never crash.
//
// Every case starts from one valid file (two key-value pairs, general.alignment and two
// tensors with their data) and changes one thing in it. The unchanged file, and the variants
// that ggml accepts, must load through every entry point: buffer, FILE *, file name and
// callback. Uses only the public gguf.h / ggml.h API; exits 0 when every check passes.

#include "ggml.h"
#include "gguf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_checks = 0;
static int n_failed = 0;

#define CHECK(cond, ...)                                    \
    do {                                                    \
        n_checks++;                                         \
        if (!(cond)) {                                      \
            n_failed++;                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                   \
            fprintf(stderr, "\n");                          \
        }                                                   \
    } while (0)

// ---- a growable byte buffer ----

struct bytes {
    uint8_t * p;
    size_t    n;
    size_t    cap;
};

static void put(struct bytes * b, const void * data, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n) + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) {
            abort();
        }
    }
    if (n > 0) {
        memcpy(b->p + b->n, data, n);
    }
    b->n += n;
}

static void put_u32(struct bytes * b, uint32_t v) { put(b, &v, sizeof(v)); }
static void put_i32(struct bytes * b, int32_t  v) { put(b, &v, sizeof(v)); }
static void put_u64(struct bytes * b, uint64_t v) { put(b, &v, sizeof(v)); }
static void put_i64(struct bytes * b, int64_t  v) { put(b, &v, sizeof(v)); }

static void put_str(struct bytes * b, const char * s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static void pad_to(struct bytes * b, size_t align) {
    const uint8_t zero = 0;
    while (b->n % align != 0) {
        put(b, &zero, 1);
    }
}

// ---- the cases ----

enum defect {
    NONE,
    // header
    BAD_MAGIC, VERSION_0, VERSION_1, VERSION_FUTURE, VERSION_OTHER_ENDIAN,
    N_TENSORS_NEGATIVE, N_TENSORS_HUGE, N_TENSORS_TOO_MANY, N_KV_NEGATIVE, N_KV_HUGE, N_KV_TOO_MANY,
    // key-value pairs
    KEY_SIZE_HUGE, KEY_SIZE_PAST_END, KEY_EMPTY, KV_TYPE_COUNT, KV_TYPE_NEGATIVE, KV_NESTED_ARRAY,
    KV_ARRAY_TYPE_COUNT, KV_DUPLICATE_KEY, STRING_SIZE_HUGE, STRING_SIZE_PAST_END, ARRAY_N_HUGE,
    ARRAY_N_PAST_END, STRING_ARRAY_N_HUGE,
    // alignment
    ALIGN_ZERO, ALIGN_13, ALIGN_48, ALIGN_WRONG_TYPE, ALIGN_AS_ARRAY, ALIGN_1, ALIGN_64,
    // tensor infos
    NAME_TOO_LONG, NAME_MAX_LENGTH, NAME_SIZE_HUGE, DUPLICATE_NAME, N_DIMS_5, SHAPE_NEGATIVE, SHAPE_ZERO,
    NE_TOO_BIG, NBYTES_TOO_BIG, TYPE_COUNT, TYPE_NEGATIVE, TYPE_RETIRED, ROW_NOT_BLOCKS,
    OFFSET_HUGE, OFFSET_MISALIGNED, OFFSET_GAP, OFFSET_FIRST_NONZERO, META_TRUNCATED,
    // data
    DATA_ONE_BYTE_SHORT, DATA_MISSING, DATA_MEM_SIZE_OVERFLOW,
    N_DEFECTS,
};

static const char * defect_name(enum defect d) {
    static const char * names[N_DEFECTS] = {
        "NONE",
        "BAD_MAGIC", "VERSION_0", "VERSION_1", "VERSION_FUTURE", "VERSION_OTHER_ENDIAN",
        "N_TENSORS_NEGATIVE", "N_TENSORS_HUGE", "N_TENSORS_TOO_MANY", "N_KV_NEGATIVE", "N_KV_HUGE", "N_KV_TOO_MANY",
        "KEY_SIZE_HUGE", "KEY_SIZE_PAST_END", "KEY_EMPTY", "KV_TYPE_COUNT", "KV_TYPE_NEGATIVE", "KV_NESTED_ARRAY",
        "KV_ARRAY_TYPE_COUNT", "KV_DUPLICATE_KEY", "STRING_SIZE_HUGE", "STRING_SIZE_PAST_END", "ARRAY_N_HUGE",
        "ARRAY_N_PAST_END", "STRING_ARRAY_N_HUGE",
        "ALIGN_ZERO", "ALIGN_13", "ALIGN_48", "ALIGN_WRONG_TYPE", "ALIGN_AS_ARRAY", "ALIGN_1", "ALIGN_64",
        "NAME_TOO_LONG", "NAME_MAX_LENGTH", "NAME_SIZE_HUGE", "DUPLICATE_NAME", "N_DIMS_5", "SHAPE_NEGATIVE", "SHAPE_ZERO",
        "NE_TOO_BIG", "NBYTES_TOO_BIG", "TYPE_COUNT", "TYPE_NEGATIVE", "TYPE_RETIRED", "ROW_NOT_BLOCKS",
        "OFFSET_HUGE", "OFFSET_MISALIGNED", "OFFSET_GAP", "OFFSET_FIRST_NONZERO", "META_TRUNCATED",
        "DATA_ONE_BYTE_SHORT", "DATA_MISSING", "DATA_MEM_SIZE_OVERFLOW",
    };
    return names[d];
}

enum outcome {
    LOADS,           // every read succeeds
    BAD_META,        // every read fails
    BAD_DATA,        // metadata reads succeed, loading the tensor data fails
};

static enum outcome expected(enum defect d) {
    switch (d) {
        case NONE: case ALIGN_1: case ALIGN_64: case NAME_MAX_LENGTH: case SHAPE_ZERO:
            return LOADS;
        case DATA_ONE_BYTE_SHORT: case DATA_MISSING: case DATA_MEM_SIZE_OVERFLOW:
            return BAD_DATA;
        default:
            return BAD_META;
    }
}

// Two tensors: t0 (f32, 3 elements) and t1 (f16, 2x2), data padded to the alignment.
static struct bytes build(enum defect d) {
    struct bytes b = {0};
    const uint32_t align = d == ALIGN_1 ? 1 : d == ALIGN_64 ? 64 : 32;

    put(&b, d == BAD_MAGIC ? "GGUG" : "GGUF", 4);
    put_u32(&b, d == VERSION_0 ? 0 : d == VERSION_1 ? 1 : d == VERSION_FUTURE ? GGUF_VERSION + 1 :
                d == VERSION_OTHER_ENDIAN ? 0x03000000u : GGUF_VERSION);

    int64_t n_tensors = 2;
    if (d == N_TENSORS_NEGATIVE) { n_tensors = -1; }
    if (d == N_TENSORS_HUGE)     { n_tensors = INT64_MAX; }
    if (d == N_TENSORS_TOO_MANY) { n_tensors = 3; }
    if (d == DATA_MEM_SIZE_OVERFLOW) { n_tensors = 4; }
    put_i64(&b, n_tensors);

    int64_t n_kv = 3;
    if (d == N_KV_NEGATIVE) { n_kv = -1; }
    if (d == N_KV_HUGE)     { n_kv = (int64_t) 1 << 40; }
    if (d == N_KV_TOO_MANY) { n_kv = 4; }
    put_i64(&b, n_kv);

    // kv 0: a string
    if (d == KEY_SIZE_HUGE) {
        put_u64(&b, UINT64_MAX);
        put(&b, "general.name", 12);
    } else if (d == KEY_SIZE_PAST_END) {
        put_u64(&b, 1u << 20);
        put(&b, "general.name", 12);
    } else {
        put_str(&b, d == KEY_EMPTY ? "" : "general.name");
    }
    put_i32(&b, d == KV_TYPE_COUNT ? GGUF_TYPE_COUNT : d == KV_TYPE_NEGATIVE ? -1 : GGUF_TYPE_STRING);
    if (d == STRING_SIZE_HUGE) {
        put_u64(&b, UINT64_MAX / 2);
        put(&b, "malformed", 9);
    } else if (d == STRING_SIZE_PAST_END) {
        put_u64(&b, 1u << 20);
        put(&b, "malformed", 9);
    } else {
        put_str(&b, "malformed");
    }

    // kv 1: an array of u16 (or of strings for STRING_ARRAY_N_HUGE)
    put_str(&b, d == KV_DUPLICATE_KEY ? "general.name" : "test.array");
    put_i32(&b, GGUF_TYPE_ARRAY);
    if (d == STRING_ARRAY_N_HUGE) {
        put_i32(&b, GGUF_TYPE_STRING);
        put_u64(&b, UINT64_MAX / 8);
        put_str(&b, "a");
    } else {
        put_i32(&b, d == KV_NESTED_ARRAY ? GGUF_TYPE_ARRAY : d == KV_ARRAY_TYPE_COUNT ? GGUF_TYPE_COUNT : GGUF_TYPE_UINT16);
        put_u64(&b, d == ARRAY_N_HUGE ? UINT64_MAX / 2 : d == ARRAY_N_PAST_END ? 1u << 20 : 3);
        const uint16_t values[3] = {1, 2, 3};
        put(&b, values, sizeof(values));
    }

    // kv 2: the alignment
    put_str(&b, GGUF_KEY_GENERAL_ALIGNMENT);
    if (d == ALIGN_WRONG_TYPE) {
        put_i32(&b, GGUF_TYPE_INT32);
        put_i32(&b, 32);
    } else if (d == ALIGN_AS_ARRAY) {
        put_i32(&b, GGUF_TYPE_ARRAY);
        put_i32(&b, GGUF_TYPE_UINT32);
        put_u64(&b, 1);
        put_u32(&b, 32);
    } else {
        put_i32(&b, GGUF_TYPE_UINT32);
        put_u32(&b, d == ALIGN_ZERO ? 0 : d == ALIGN_13 ? 13 : d == ALIGN_48 ? 48 : align);
    }

    if (d == DATA_MEM_SIZE_OVERFLOW) {
        // four byte tensors whose padded sizes add up to almost SIZE_MAX
        const int64_t ne = INT64_C(0x3FFFFFFFFFFFFFE0);
        for (int i = 0; i < 4; ++i) {
            char name[8];
            snprintf(name, sizeof(name), "big%d", i);
            put_str(&b, name);
            put_u32(&b, 1);
            put_i64(&b, ne);
            put_i32(&b, GGML_TYPE_I8);
            put_u64(&b, (uint64_t) i * (uint64_t) ne);
        }
        pad_to(&b, align);
        for (int i = 0; i < 64; ++i) {
            const uint8_t v = (uint8_t) i;
            put(&b, &v, 1);
        }
        return b;
    }

    // tensor 0: f32 [3]
    if (d == NAME_SIZE_HUGE) {
        put_u64(&b, UINT64_MAX);
        put(&b, "t0", 2);
    } else if (d == NAME_TOO_LONG || d == NAME_MAX_LENGTH) {
        char name[GGML_MAX_NAME + 1];
        const size_t len = d == NAME_TOO_LONG ? GGML_MAX_NAME : GGML_MAX_NAME - 1;
        memset(name, 'n', len);
        name[len] = '\0';
        put_str(&b, name);
    } else {
        put_str(&b, "t0");
    }
    if (d == N_DIMS_5) {
        put_u32(&b, 5);
        for (int i = 0; i < 5; ++i) {
            put_i64(&b, 1);
        }
    } else if (d == NE_TOO_BIG) {
        put_u32(&b, 2);
        put_i64(&b, 4 * (int64_t) INT32_MAX);
        put_i64(&b, 4 * (int64_t) INT32_MAX);
    } else if (d == NBYTES_TOO_BIG) {
        // 2^62 elements fit in int64_t, their 2^65 bytes do not fit in size_t
        put_u32(&b, 2);
        put_i64(&b, (int64_t) 1 << 31);
        put_i64(&b, (int64_t) 1 << 31);
    } else if (d == SHAPE_ZERO) {
        put_u32(&b, 2);
        put_i64(&b, 3);
        put_i64(&b, 0);
    } else {
        put_u32(&b, 1);
        put_i64(&b, d == SHAPE_NEGATIVE ? -3 : 3);
    }
    int32_t type0 = d == NBYTES_TOO_BIG ? GGML_TYPE_I64 : GGML_TYPE_F32;
    if (d == TYPE_COUNT)     { type0 = GGML_TYPE_COUNT; }
    if (d == TYPE_NEGATIVE)  { type0 = -1; }
    if (d == TYPE_RETIRED)   { type0 = 4; } // the removed Q4_2
    if (d == ROW_NOT_BLOCKS) { type0 = GGML_TYPE_Q4_0; }
    put_i32(&b, type0);
    put_u64(&b, d == OFFSET_HUGE ? UINT64_MAX : d == OFFSET_FIRST_NONZERO ? 32 : 0);
    const size_t size0 = d == SHAPE_ZERO ? 0 : 12;

    // tensor 1: f16 [2, 2]
    put_str(&b, d == DUPLICATE_NAME ? "t0" : "t1");
    put_u32(&b, 2);
    put_i64(&b, 2);
    put_i64(&b, 2);
    put_i32(&b, GGML_TYPE_F16);
    uint64_t offset1 = (size0 + align - 1) / align * align;
    if (d == OFFSET_MISALIGNED) { offset1 = 12; }
    if (d == OFFSET_GAP)        { offset1 += 32; }
    put_u64(&b, offset1);

    if (d == META_TRUNCATED) {
        b.n -= 3;
        return b;
    }
    pad_to(&b, align);

    size_t data_size = (size_t) offset1 + (8 + align - 1) / align * align;
    if (d == DATA_ONE_BYTE_SHORT) { data_size -= 1; }
    if (d == DATA_MISSING)        { data_size = 0; }
    for (size_t i = 0; i < data_size; ++i) {
        const uint8_t v = (uint8_t) (i * 7 + 1);
        put(&b, &v, 1);
    }
    return b;
}

// ---- the ways in ----

enum mode { FROM_BUFFER, FROM_FILE_PTR, FROM_FILE_NAME, FROM_CALLBACK, N_MODES };
static const char * mode_names[N_MODES] = { "buffer", "file_ptr", "file_name", "callback" };

struct span {
    const uint8_t * p;
    size_t n;
};

static size_t read_span(void * userdata, void * output, uint64_t offset, size_t len) {
    const struct span * s = userdata;
    if (offset > s->n) {
        return 0;
    }
    const size_t n = len < s->n - offset ? len : s->n - (size_t) offset;
    memcpy(output, s->p + offset, n);
    return n;
}

static char tmp_path[256];

static struct gguf_context * open_as(enum mode m, const struct bytes * b, struct gguf_init_params params) {
    switch (m) {
        case FROM_BUFFER:
            return gguf_init_from_buffer(b->p, b->n, params);
        case FROM_FILE_PTR: {
            FILE * f = tmpfile();
            if (!f) { abort(); }
            // a prefix before the GGUF data: reading starts at the current position
            fputs("prefix", f);
            fwrite(b->p, 1, b->n, f);
            fseek(f, 6, SEEK_SET);
            struct gguf_context * ctx = gguf_init_from_file_ptr(f, params);
            fclose(f);
            return ctx;
        }
        case FROM_FILE_NAME: {
            FILE * f = fopen(tmp_path, "wb");
            if (!f) { abort(); }
            fwrite(b->p, 1, b->n, f);
            fclose(f);
            return gguf_init_from_file(tmp_path, params);
        }
        case FROM_CALLBACK: {
            struct span s = { b->p, b->n };
            return gguf_init_from_callback(read_span, &s, 7, b->n, params);
        }
        default:
            abort();
    }
}

static void check_valid_contents(enum defect d, struct gguf_context * g, struct ggml_context * ctx) {
    CHECK(gguf_get_n_kv(g) == 3, "%s: n_kv", defect_name(d));
    CHECK(gguf_get_n_tensors(g) == 2, "%s: n_tensors", defect_name(d));
    const int64_t id = gguf_find_key(g, "test.array");
    CHECK(id == 1 && gguf_get_arr_n(g, id) == 3 && ((const uint16_t *) gguf_get_arr_data(g, id))[2] == 3,
          "%s: array", defect_name(d));
    CHECK(strcmp(gguf_get_val_str(g, gguf_find_key(g, "general.name")), "malformed") == 0, "%s: name", defect_name(d));
    const size_t align = d == ALIGN_1 ? 1 : d == ALIGN_64 ? 64 : 32;
    CHECK(gguf_get_alignment(g) == align, "%s: alignment", defect_name(d));
    if (ctx) {
        const struct ggml_tensor * blob = ggml_get_first_tensor(ctx);
        CHECK(blob && strcmp(ggml_get_name(blob), "GGUF tensor data binary blob") == 0, "%s: blob", defect_name(d));
        const struct ggml_tensor * t1 = ggml_get_tensor(ctx, "t1");
        CHECK(t1 && t1->type == GGML_TYPE_F16 && t1->ne[0] == 2 && t1->ne[1] == 2, "%s: t1 shape", defect_name(d));
        if (t1) {
            const size_t off = gguf_get_tensor_offset(g, 1);
            const uint8_t * data = t1->data;
            bool same = true;
            for (size_t i = 0; i < 8; ++i) {
                same = same && data[i] == (uint8_t) ((off + i) * 7 + 1);
            }
            CHECK(same, "%s: t1 data", defect_name(d));
        }
    }
}

static void run_case(enum defect d) {
    const struct bytes b = build(d);
    const enum outcome want = expected(d);

    for (int m = 0; m < N_MODES; ++m) {
        for (int variant = 0; variant < 3; ++variant) {
            // 0: metadata only, 1: tensors without data, 2: tensors with data
            struct ggml_context * ctx = NULL;
            struct gguf_init_params params = { variant == 1, variant == 0 ? NULL : &ctx };
            struct gguf_context * g = open_as((enum mode) m, &b, params);

            const bool should_load = want == LOADS || (want == BAD_DATA && variant != 2);
            CHECK((g != NULL) == should_load, "%s via %s (variant %d): expected %s", defect_name(d),
                  mode_names[m], variant, should_load ? "a context" : "NULL");
            CHECK(g != NULL || ctx == NULL, "%s via %s: ggml context left behind", defect_name(d), mode_names[m]);
            CHECK(variant == 0 || g == NULL || ctx != NULL, "%s via %s: no ggml context", defect_name(d), mode_names[m]);
            if (g && want == LOADS && d != SHAPE_ZERO && d != NAME_MAX_LENGTH) {
                check_valid_contents(d, g, variant == 2 ? ctx : NULL);
            }
            ggml_free(ctx);
            gguf_free(g);
        }
    }
    free(b.p);
}

static void run_argument_checks(void) {
    struct gguf_init_params params = { false, NULL };
    const struct bytes b = build(NONE);

    CHECK(gguf_init_from_buffer(NULL, 10, params) == NULL, "NULL buffer");
    CHECK(gguf_init_from_buffer(b.p, 0, params) == NULL, "empty buffer");
    CHECK(gguf_init_from_file_ptr(NULL, params) == NULL, "NULL FILE");
    CHECK(gguf_init_from_callback(NULL, NULL, 0, 100, params) == NULL, "NULL callback");
    CHECK(gguf_init_from_file("/nonexistent/dir/file.gguf", params) == NULL, "missing file");

    // every strict prefix of the metadata fails; a read that is told the data is shorter fails
    struct span s = { b.p, b.n };
    bool all_null = true;
    for (size_t n = 0; n < b.n - 64; ++n) {
        struct gguf_context * g = gguf_init_from_buffer(b.p, n, params);
        all_null = all_null && g == NULL;
        gguf_free(g);
    }
    CHECK(all_null, "a truncated header loaded");

    struct ggml_context * ctx = NULL;
    struct gguf_init_params with_data = { false, &ctx };
    CHECK(gguf_init_from_callback(read_span, &s, 0, b.n - 1, with_data) == NULL && ctx == NULL, "max_expected_size");
    struct gguf_context * g = gguf_init_from_callback(read_span, &s, 0, b.n, with_data);
    CHECK(g != NULL && ctx != NULL, "unlimited chunk size");
    ggml_free(ctx);
    gguf_free(g);

    // an empty file (only the header) is valid
    struct bytes h = {0};
    put(&h, "GGUF", 4);
    put_u32(&h, GGUF_VERSION);
    put_i64(&h, 0);
    put_i64(&h, 0);
    g = gguf_init_from_buffer(h.p, h.n, params);
    CHECK(g && gguf_get_n_kv(g) == 0 && gguf_get_n_tensors(g) == 0 && gguf_get_data_offset(g) == 24, "empty file");
    gguf_free(g);
    free(h.p);
    free(b.p);
}

int main(void) {
    snprintf(tmp_path, sizeof(tmp_path), "/tmp/test-gguf-malformed-%d.gguf", (int) getpid());

    for (int d = 0; d < N_DEFECTS; ++d) {
        run_case((enum defect) d);
    }
    run_argument_checks();
    remove(tmp_path);

    printf("%d/%d checks passed\n", n_checks - n_failed, n_checks);
    return n_failed == 0 ? 0 : 1;
}
