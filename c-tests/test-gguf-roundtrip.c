// GGUF write/read round trip through the public gguf.h / ggml.h API.
//
// Writes a context holding every value type, arrays of every element type and tensors of
// several types; checks the bytes against the format (header layout, alignment padding,
// gguf_get_meta_data equal to the file's head); reads the file back through every entry
// point, with and without a ggml context (allocated or not) and checks every value, tensor
// description and tensor byte; and writes the parsed context again, which must reproduce the
// file exactly. Given GGUF files as arguments, also checks that each one is rewritten
// byte for byte. Exits 0 when every check passes.

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

struct blob {
    uint8_t * p;
    size_t    n;
};

static struct blob read_all(FILE * f) {
    struct blob b = {0};
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    rewind(f);
    b.n = (size_t) size;
    b.p = malloc(b.n + 1);
    if (!b.p || fread(b.p, 1, b.n, f) != b.n) {
        abort();
    }
    return b;
}

static struct blob read_path(const char * path) {
    FILE * f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        abort();
    }
    struct blob b = read_all(f);
    fclose(f);
    return b;
}

static bool same_bytes(struct blob a, struct blob b) {
    return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

// ---- the context under test ----

#define N_TENSORS 4

struct tensor_spec {
    const char *   name;
    enum ggml_type type;
    int            n_dims;
    int64_t        ne[4];
};

static const struct tensor_spec specs[N_TENSORS] = {
    { "blk.0.weight", GGML_TYPE_F32,  2, { 5, 3, 1, 1 } },
    { "blk.0.bias",   GGML_TYPE_F16,  1, { 7, 1, 1, 1 } },
    { "blk.1.quant",  GGML_TYPE_Q8_0, 2, { 64, 2, 1, 1 } },
    { "cube",         GGML_TYPE_I32,  4, { 2, 3, 4, 5 } },
};

static const char * const str_values[] = { "alpha", "", "gamma with spaces", "\xce\xb4\xce\xad\xce\xbb\xcf\x84\xce\xb1" };

static uint8_t pattern(size_t tensor, size_t i) {
    return (uint8_t) (tensor * 31 + i * 13 + 5);
}

static struct gguf_context * make_context(struct ggml_context ** ctx_out) {
    struct gguf_context * g = gguf_init_empty();

    gguf_set_val_u8  (g, "v.u8",   200);
    gguf_set_val_i8  (g, "v.i8",   -100);
    gguf_set_val_u16 (g, "v.u16",  60000);
    gguf_set_val_i16 (g, "v.i16",  -30000);
    gguf_set_val_u32 (g, "v.u32",  4000000000u);
    gguf_set_val_i32 (g, "v.i32",  -2000000000);
    gguf_set_val_f32 (g, "v.f32",  1.25f);
    gguf_set_val_bool(g, "v.bool", true);
    gguf_set_val_str (g, "v.str",  "hello gguf");
    gguf_set_val_u64 (g, "v.u64",  UINT64_MAX - 1);
    gguf_set_val_i64 (g, "v.i64",  INT64_MIN + 1);
    gguf_set_val_f64 (g, "v.f64",  -2.5);

    // replaced values move to the back; removed keys disappear
    gguf_set_val_u32(g, "v.replaced", 1);
    gguf_set_val_i32(g, "v.removed", 2);
    gguf_set_val_str(g, "v.replaced", "now a string");
    CHECK(gguf_remove_key(g, "v.removed") == 12, "remove_key returns the old index");
    CHECK(gguf_remove_key(g, "v.removed") == -1, "remove_key of a missing key");

    const uint8_t  a_u8[]   = { 1, 2, 255 };
    const int8_t   a_i8[]   = { -1, 0, 127, -128 };
    const uint16_t a_u16[]  = { 1, 65535 };
    const int16_t  a_i16[]  = { -32768, 32767, 0 };
    const uint32_t a_u32[]  = { 7, 8, 9, 4294967295u };
    const int32_t  a_i32[]  = { -5 };
    const float    a_f32[]  = { 0.5f, -1.0f, 3.25f };
    const bool     a_bool[] = { true, false, true, true, false };
    const uint64_t a_u64[]  = { UINT64_MAX, 0 };
    const int64_t  a_i64[]  = { INT64_MIN, INT64_MAX, 3 };
    const double   a_f64[]  = { 1e300, -1e-300 };
    gguf_set_arr_data(g, "a.u8",   GGUF_TYPE_UINT8,   a_u8,   3);
    gguf_set_arr_data(g, "a.i8",   GGUF_TYPE_INT8,    a_i8,   4);
    gguf_set_arr_data(g, "a.u16",  GGUF_TYPE_UINT16,  a_u16,  2);
    gguf_set_arr_data(g, "a.i16",  GGUF_TYPE_INT16,   a_i16,  3);
    gguf_set_arr_data(g, "a.u32",  GGUF_TYPE_UINT32,  a_u32,  4);
    gguf_set_arr_data(g, "a.i32",  GGUF_TYPE_INT32,   a_i32,  1);
    gguf_set_arr_data(g, "a.f32",  GGUF_TYPE_FLOAT32, a_f32,  3);
    gguf_set_arr_data(g, "a.bool", GGUF_TYPE_BOOL,    a_bool, 5);
    gguf_set_arr_data(g, "a.u64",  GGUF_TYPE_UINT64,  a_u64,  2);
    gguf_set_arr_data(g, "a.i64",  GGUF_TYPE_INT64,   a_i64,  3);
    gguf_set_arr_data(g, "a.f64",  GGUF_TYPE_FLOAT64, a_f64,  2);
    gguf_set_arr_data(g, "a.empty", GGUF_TYPE_FLOAT32, NULL,  0);
    gguf_set_arr_str (g, "a.str",  (const char **) str_values, 4);

    struct ggml_init_params ip = { 16 * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    for (size_t i = 0; i < N_TENSORS; ++i) {
        struct ggml_tensor * t = ggml_new_tensor(ctx, specs[i].type, specs[i].n_dims, specs[i].ne);
        ggml_set_name(t, specs[i].name);
        uint8_t * data = t->data;
        for (size_t j = 0; j < ggml_nbytes(t); ++j) {
            data[j] = pattern(i, j);
        }
        gguf_add_tensor(g, t);
    }
    *ctx_out = ctx;
    return g;
}

static void check_values(const struct gguf_context * g, const char * how) {
    CHECK(gguf_get_version(g) == GGUF_VERSION, "%s: version", how);
    CHECK(gguf_get_alignment(g) == GGUF_DEFAULT_ALIGNMENT, "%s: alignment", how);
    CHECK(gguf_get_n_kv(g) == 26, "%s: n_kv = %lld", how, (long long) gguf_get_n_kv(g));

#define KEY(name) gguf_find_key(g, name)
    CHECK(gguf_get_val_u8  (g, KEY("v.u8"))   == 200, "%s: u8", how);
    CHECK(gguf_get_val_i8  (g, KEY("v.i8"))   == -100, "%s: i8", how);
    CHECK(gguf_get_val_u16 (g, KEY("v.u16"))  == 60000, "%s: u16", how);
    CHECK(gguf_get_val_i16 (g, KEY("v.i16"))  == -30000, "%s: i16", how);
    CHECK(gguf_get_val_u32 (g, KEY("v.u32"))  == 4000000000u, "%s: u32", how);
    CHECK(gguf_get_val_i32 (g, KEY("v.i32"))  == -2000000000, "%s: i32", how);
    CHECK(gguf_get_val_f32 (g, KEY("v.f32"))  == 1.25f, "%s: f32", how);
    CHECK(gguf_get_val_bool(g, KEY("v.bool")) == true, "%s: bool", how);
    CHECK(strcmp(gguf_get_val_str(g, KEY("v.str")), "hello gguf") == 0, "%s: str", how);
    CHECK(gguf_get_val_u64 (g, KEY("v.u64"))  == UINT64_MAX - 1, "%s: u64", how);
    CHECK(gguf_get_val_i64 (g, KEY("v.i64"))  == INT64_MIN + 1, "%s: i64", how);
    CHECK(gguf_get_val_f64 (g, KEY("v.f64"))  == -2.5, "%s: f64", how);
    CHECK(*(const uint16_t *) gguf_get_val_data(g, KEY("v.u16")) == 60000, "%s: val_data", how);

    CHECK(KEY("v.removed") == -1, "%s: removed key", how);
    CHECK(KEY("v.replaced") == 12, "%s: replaced key moved to the back", how);
    CHECK(gguf_get_kv_type(g, KEY("v.replaced")) == GGUF_TYPE_STRING, "%s: replaced type", how);
    CHECK(strcmp(gguf_get_key(g, 0), "v.u8") == 0, "%s: first key", how);
    CHECK(KEY("no.such.key") == -1, "%s: missing key", how);

    static const struct { const char * key; enum gguf_type type; size_t n; size_t size; } arrays[] = {
        { "a.u8", GGUF_TYPE_UINT8, 3, 1 },   { "a.i8", GGUF_TYPE_INT8, 4, 1 },
        { "a.u16", GGUF_TYPE_UINT16, 2, 2 }, { "a.i16", GGUF_TYPE_INT16, 3, 2 },
        { "a.u32", GGUF_TYPE_UINT32, 4, 4 }, { "a.i32", GGUF_TYPE_INT32, 1, 4 },
        { "a.f32", GGUF_TYPE_FLOAT32, 3, 4 }, { "a.bool", GGUF_TYPE_BOOL, 5, 1 },
        { "a.u64", GGUF_TYPE_UINT64, 2, 8 }, { "a.i64", GGUF_TYPE_INT64, 3, 8 },
        { "a.f64", GGUF_TYPE_FLOAT64, 2, 8 },
    };
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); ++i) {
        const int64_t id = KEY(arrays[i].key);
        CHECK(id >= 0, "%s: %s present", how, arrays[i].key);
        if (id < 0) {
            continue;
        }
        CHECK(gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY, "%s: %s kv type", how, arrays[i].key);
        CHECK(gguf_get_arr_type(g, id) == arrays[i].type, "%s: %s arr type", how, arrays[i].key);
        CHECK(gguf_get_arr_n(g, id) == arrays[i].n, "%s: %s arr n", how, arrays[i].key);
        CHECK(((uintptr_t) gguf_get_arr_data(g, id)) % arrays[i].size == 0, "%s: %s data alignment", how, arrays[i].key);
    }
    CHECK(((const int8_t   *) gguf_get_arr_data(g, KEY("a.i8")))[3] == -128, "%s: a.i8", how);
    CHECK(((const uint32_t *) gguf_get_arr_data(g, KEY("a.u32")))[3] == 4294967295u, "%s: a.u32", how);
    CHECK(((const float    *) gguf_get_arr_data(g, KEY("a.f32")))[2] == 3.25f, "%s: a.f32", how);
    CHECK(((const int8_t   *) gguf_get_arr_data(g, KEY("a.bool")))[3] == 1, "%s: a.bool", how);
    CHECK(((const int64_t  *) gguf_get_arr_data(g, KEY("a.i64")))[0] == INT64_MIN, "%s: a.i64", how);
    CHECK(((const double   *) gguf_get_arr_data(g, KEY("a.f64")))[1] == -1e-300, "%s: a.f64", how);
    CHECK(gguf_get_arr_n(g, KEY("a.empty")) == 0, "%s: empty array", how);

    const int64_t id_str = KEY("a.str");
    CHECK(gguf_get_arr_type(g, id_str) == GGUF_TYPE_STRING && gguf_get_arr_n(g, id_str) == 4, "%s: a.str", how);
    for (size_t i = 0; i < 4; ++i) {
        CHECK(strcmp(gguf_get_arr_str(g, id_str, i), str_values[i]) == 0, "%s: a.str[%zu]", how, i);
    }
#undef KEY

    CHECK(gguf_get_n_tensors(g) == N_TENSORS, "%s: n_tensors", how);
    size_t expected_offset = 0;
    for (size_t i = 0; i < N_TENSORS; ++i) {
        const int64_t id = gguf_find_tensor(g, specs[i].name);
        CHECK(id == (int64_t) i, "%s: tensor %s index", how, specs[i].name);
        CHECK(strcmp(gguf_get_tensor_name(g, i), specs[i].name) == 0, "%s: tensor name", how);
        CHECK(gguf_get_tensor_type(g, i) == specs[i].type, "%s: tensor %zu type", how, i);
        const int64_t * ne = gguf_get_tensor_ne(g, i);
        CHECK(memcmp(ne, specs[i].ne, sizeof(specs[i].ne)) == 0, "%s: tensor %zu shape", how, i);
        CHECK(gguf_get_tensor_offset(g, i) == expected_offset, "%s: tensor %zu offset", how, i);
        const size_t size = gguf_get_tensor_size(g, i);
        expected_offset += (size + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
    }
    CHECK(gguf_get_tensor_size(g, 2) == 2 * 2 * 34, "%s: q8_0 size", how);
    CHECK(gguf_find_tensor(g, "missing") == -1, "%s: missing tensor", how);
}

static void check_ggml_tensors(struct ggml_context * ctx, bool with_data, const char * how) {
    struct ggml_tensor * t = ggml_get_first_tensor(ctx);
    if (with_data) {
        CHECK(t && strcmp(ggml_get_name(t), "GGUF tensor data binary blob") == 0, "%s: blob first", how);
        CHECK(t && t->type == GGML_TYPE_I8, "%s: blob type", how);
        t = t ? ggml_get_next_tensor(ctx, t) : NULL;
    }
    for (size_t i = 0; i < N_TENSORS; ++i) {
        CHECK(t != NULL, "%s: tensor %zu present", how, i);
        if (!t) {
            return;
        }
        CHECK(strcmp(ggml_get_name(t), specs[i].name) == 0, "%s: tensor %zu name", how, i);
        CHECK(ggml_get_tensor(ctx, specs[i].name) == t, "%s: ggml_get_tensor(%s)", how, specs[i].name);
        CHECK(t->type == specs[i].type && memcmp(t->ne, specs[i].ne, sizeof(t->ne)) == 0, "%s: tensor %zu shape", how, i);
        if (with_data) {
            bool same = t->data != NULL;
            for (size_t j = 0; same && j < ggml_nbytes(t); ++j) {
                same = ((const uint8_t *) t->data)[j] == pattern(i, j);
            }
            CHECK(same, "%s: tensor %zu data", how, i);
        } else {
            CHECK(t->data == NULL, "%s: tensor %zu not allocated", how, i);
        }
        t = ggml_get_next_tensor(ctx, t);
    }
    CHECK(t == NULL, "%s: no extra tensors", how);
}

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

static void put_raw(uint8_t * dst, size_t * n, const void * src, size_t size) {
    memcpy(dst + *n, src, size);
    *n += size;
}
static void put_u32(uint8_t * dst, size_t * n, uint32_t v) { put_raw(dst, n, &v, sizeof(v)); }
static void put_i32(uint8_t * dst, size_t * n, int32_t  v) { put_raw(dst, n, &v, sizeof(v)); }
static void put_u64(uint8_t * dst, size_t * n, uint64_t v) { put_raw(dst, n, &v, sizeof(v)); }
static void put_i64(uint8_t * dst, size_t * n, int64_t  v) { put_raw(dst, n, &v, sizeof(v)); }

// The exact bytes of a tiny context, spelled out from the format description.
static void check_exact_layout(void) {
    struct gguf_context * g = gguf_init_empty();
    gguf_set_val_u32(g, "n", 7);
    gguf_set_val_bool(g, "b", true);
    struct ggml_init_params ip = { 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 1);
    ggml_set_name(t, "x");
    ((float *) t->data)[0] = 1.0f;
    ((float *) t->data)[1] = 2.0f;
    ((float *) t->data)[2] = 3.0f;
    gguf_add_tensor(g, t);

    uint8_t expect[128] = {0};
    size_t n = 0;
    put_raw(expect, &n, "GGUF", 4);
    put_u32(expect, &n, 3);
    put_i64(expect, &n, 1);            // tensors
    put_i64(expect, &n, 2);            // kv pairs
    put_u64(expect, &n, 1); put_raw(expect, &n, "n", 1);
    put_i32(expect, &n, GGUF_TYPE_UINT32);
    put_u32(expect, &n, 7);
    put_u64(expect, &n, 1); put_raw(expect, &n, "b", 1);
    put_i32(expect, &n, GGUF_TYPE_BOOL);
    put_raw(expect, &n, "\x01", 1);
    put_u64(expect, &n, 1); put_raw(expect, &n, "x", 1);
    put_u32(expect, &n, 1);            // n_dims: trailing 1s are not written
    put_i64(expect, &n, 3);
    put_i32(expect, &n, GGML_TYPE_F32);
    put_u64(expect, &n, 0);
    const size_t meta_size = (n + 31) / 32 * 32;
    n = meta_size;
    const float values[3] = { 1.0f, 2.0f, 3.0f };
    put_raw(expect, &n, values, sizeof(values));
    const size_t file_size = meta_size + 32;

    CHECK(gguf_get_meta_size(g) == meta_size, "layout: meta size %zu, expected %zu", gguf_get_meta_size(g), meta_size);
    uint8_t meta[128];
    gguf_get_meta_data(g, meta);
    CHECK(memcmp(meta, expect, meta_size) == 0, "layout: meta bytes");

    FILE * f = tmpfile();
    CHECK(gguf_write_to_file_ptr(g, f, false), "layout: write");
    struct blob b = read_all(f);
    fclose(f);
    CHECK(b.n == file_size && memcmp(b.p, expect, file_size) == 0, "layout: file bytes (%zu, expected %zu)", b.n, file_size);
    free(b.p);

    // a type change moves the following tensors; the data offset of an empty context
    struct ggml_tensor * u = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    ggml_set_name(u, "y");
    gguf_add_tensor(g, u);
    struct ggml_tensor * v = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    ggml_set_name(v, "z");
    gguf_add_tensor(g, v);
    CHECK(gguf_get_tensor_offset(g, 2) == 32 + 256, "set_tensor_type: offset before");
    gguf_set_tensor_type(g, "y", GGML_TYPE_Q4_0);
    CHECK(gguf_get_tensor_size(g, 1) == 2 * 18, "set_tensor_type: size");
    CHECK(gguf_get_tensor_offset(g, 2) == 32 + 64, "set_tensor_type: offset after");

    ggml_free(ctx);
    gguf_free(g);

    struct gguf_context * e = gguf_init_empty();
    CHECK(gguf_get_meta_size(e) == 32 && gguf_get_data_offset(e) == 0, "empty context");
    gguf_free(e);
}

static void check_type_names(void) {
    static const char * names[GGUF_TYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64" };
    for (int i = 0; i < GGUF_TYPE_COUNT; ++i) {
        CHECK(gguf_type_name((enum gguf_type) i) && strcmp(gguf_type_name((enum gguf_type) i), names[i]) == 0,
              "gguf_type_name(%d)", i);
    }
    CHECK(gguf_type_name(GGUF_TYPE_COUNT) == NULL, "gguf_type_name(COUNT)");
    CHECK(gguf_type_name((enum gguf_type) -1) == NULL, "gguf_type_name(-1)");
}

static char path_full[256];
static char path_meta[256];
static char path_again[256];

static void round_trip(void) {
    struct ggml_context * ctx0 = NULL;
    struct gguf_context * g0 = make_context(&ctx0);
    check_values(g0, "original");

    CHECK(gguf_write_to_file(g0, path_full, false), "write full");
    CHECK(gguf_write_to_file(g0, path_meta, true), "write meta");
    const struct blob full = read_path(path_full);
    const struct blob meta_file = read_path(path_meta);

    // the head of the file is the metadata, padded to the alignment
    const size_t meta_size = gguf_get_meta_size(g0);
    uint8_t * meta = malloc(meta_size);
    gguf_get_meta_data(g0, meta);
    CHECK(meta_size % GGUF_DEFAULT_ALIGNMENT == 0, "meta size aligned");
    CHECK(meta_file.n == meta_size && memcmp(meta_file.p, meta, meta_size) == 0, "only_meta file == meta data");
    CHECK(full.n > meta_size && memcmp(full.p, meta, meta_size) == 0, "file head == meta data");
    CHECK(full.n % GGUF_DEFAULT_ALIGNMENT == 0, "file size aligned");
    CHECK(memcmp(full.p, "GGUF", 4) == 0, "magic");

    // writing through a FILE * after a prefix gives the same bytes after the prefix
    FILE * f = tmpfile();
    fputs("1234567", f);
    CHECK(gguf_write_to_file_ptr(g0, f, false), "write_to_file_ptr");
    const struct blob prefixed = read_all(f);
    CHECK(prefixed.n == full.n + 7 && memcmp(prefixed.p + 7, full.p, full.n) == 0, "prefixed write");

    for (int way = 0; way < 5; ++way) {
        static const char * ways[] = { "file", "file_ptr", "file_ptr+7", "buffer", "callback" };
        for (int variant = 0; variant < 3; ++variant) {
            // 0: metadata only, 1: tensors without data, 2: tensors with data
            char how[64];
            snprintf(how, sizeof(how), "%s/%s", ways[way], variant == 0 ? "meta" : variant == 1 ? "no_alloc" : "alloc");
            struct ggml_context * ctx = NULL;
            struct gguf_init_params params = { variant == 1, variant == 0 ? NULL : &ctx };
            struct gguf_context * g = NULL;
            struct span s = { full.p, full.n };
            switch (way) {
                case 0: g = gguf_init_from_file(path_full, params); break;
                case 1: {
                    FILE * ff = fopen(path_full, "rb");
                    g = gguf_init_from_file_ptr(ff, params);
                    fclose(ff);
                } break;
                case 2:
                    fseek(f, 7, SEEK_SET);
                    g = gguf_init_from_file_ptr(f, params);
                    break;
                case 3: g = gguf_init_from_buffer(full.p, full.n, params); break;
                case 4: g = gguf_init_from_callback(read_span, &s, 5, 1u << 30, params); break;
            }
            CHECK(g != NULL, "%s: loads", how);
            if (!g) {
                continue;
            }
            check_values(g, how);
            CHECK(gguf_get_data_offset(g) == meta_size + (way == 2 ? 7 : 0), "%s: data offset", how);
            if (variant > 0) {
                CHECK(ctx != NULL, "%s: ggml context", how);
                if (ctx) {
                    check_ggml_tensors(ctx, variant == 2, how);
                }
            }
            if (variant == 2 && way == 3 && ctx) {
                // point the parsed context at the loaded data and write it again
                for (size_t i = 0; i < N_TENSORS; ++i) {
                    gguf_set_tensor_data(g, specs[i].name, ggml_get_tensor(ctx, specs[i].name)->data);
                }
                CHECK(gguf_write_to_file(g, path_again, false), "rewrite");
                const struct blob again = read_path(path_again);
                CHECK(same_bytes(again, full), "rewritten file is identical");
                free(again.p);
            }
            ggml_free(ctx);
            gguf_free(g);
        }
    }
    fclose(f);

    // metadata-only files: readable without data, not with it
    struct gguf_init_params meta_only = { false, NULL };
    struct gguf_context * gm = gguf_init_from_buffer(meta_file.p, meta_file.n, meta_only);
    CHECK(gm != NULL, "only_meta file loads");
    if (gm) {
        check_values(gm, "only_meta");
    }
    struct ggml_context * ctx_fail = NULL;
    struct gguf_init_params with_data = { false, &ctx_fail };
    CHECK(gguf_init_from_buffer(meta_file.p, meta_file.n, with_data) == NULL && ctx_fail == NULL,
          "only_meta file has no data");

    // copying every pair into an empty context, and into itself
    struct gguf_context * gc = gguf_init_empty();
    gguf_set_kv(gc, g0);
    CHECK(gguf_get_n_kv(gc) == gguf_get_n_kv(g0), "set_kv: count");
    for (int64_t i = 0; i < gguf_get_n_kv(g0); ++i) {
        CHECK(strcmp(gguf_get_key(gc, i), gguf_get_key(g0, i)) == 0, "set_kv: key %lld", (long long) i);
        CHECK(gguf_get_kv_type(gc, i) == gguf_get_kv_type(g0, i), "set_kv: type %lld", (long long) i);
    }
#ifndef TEST_AGAINST_GGML_REFERENCE
    // (ggml's own gguf_set_kv reads keys it has just freed when both contexts are the same)
    gguf_set_kv(gc, gc);
    CHECK(gguf_get_n_kv(gc) == gguf_get_n_kv(g0), "set_kv onto itself");
    for (int64_t i = 0; i < gguf_get_n_kv(g0); ++i) {
        CHECK(strcmp(gguf_get_key(gc, i), gguf_get_key(g0, i)) == 0, "set_kv onto itself: key %lld", (long long) i);
    }
#endif
    gguf_free(gc);

    gguf_free(gm);
    free(meta);
    free(full.p);
    free(meta_file.p);
    free(prefixed.p);
    ggml_free(ctx0);
    gguf_free(g0);
}

// Any GGUF file: read it with its data and write it again; the bytes must not change.
static void rewrite_file(const char * path) {
    struct ggml_context * ctx = NULL;
    struct gguf_init_params params = { false, &ctx };
    struct gguf_context * g = gguf_init_from_file(path, params);
    CHECK(g != NULL, "%s: loads", path);
    if (!g) {
        return;
    }
    for (int64_t i = 0; i < gguf_get_n_tensors(g); ++i) {
        const char * name = gguf_get_tensor_name(g, i);
        gguf_set_tensor_data(g, name, ggml_get_tensor(ctx, name)->data);
    }
    CHECK(gguf_write_to_file(g, path_again, false), "%s: rewrite", path);
    const struct blob orig = read_path(path);
    const struct blob again = read_path(path_again);
    // Files written by other tools may end unpadded when they hold no tensors; ggml pads the
    // metadata to the alignment in every case, so the rewrite may add zeros at the end.
    const size_t align = gguf_get_alignment(g);
    bool same = again.n == (orig.n + align - 1) / align * align && memcmp(orig.p, again.p, orig.n) == 0;
    for (size_t i = orig.n; same && i < again.n; ++i) {
        same = again.p[i] == 0;
    }
    CHECK(same, "%s: rewritten bytes differ (%zu vs %zu bytes)", path, orig.n, again.n);
    free(orig.p);
    free(again.p);
    ggml_free(ctx);
    gguf_free(g);
}

int main(int argc, char ** argv) {
    const int pid = (int) getpid();
    snprintf(path_full, sizeof(path_full), "/tmp/test-gguf-roundtrip-%d-full.gguf", pid);
    snprintf(path_meta, sizeof(path_meta), "/tmp/test-gguf-roundtrip-%d-meta.gguf", pid);
    snprintf(path_again, sizeof(path_again), "/tmp/test-gguf-roundtrip-%d-again.gguf", pid);

    check_type_names();
    check_exact_layout();
    round_trip();
    for (int i = 1; i < argc; ++i) {
        rewrite_file(argv[i]);
    }

    remove(path_full);
    remove(path_meta);
    remove(path_again);

    printf("%d/%d checks passed\n", n_checks - n_failed, n_checks);
    return n_failed == 0 ? 0 : 1;
}
