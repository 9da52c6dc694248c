// Misuse of the gguf API ends in ggml_abort with a message, never in a segfault: key and
// tensor ids out of range, values read as the wrong type, arrays read as scalars and back,
// duplicate or unknown tensors, reserved keys with bad values. The reference asserts each
// (gguf.cpp) or, for NULL handles, would crash on it.
#include "misuse.h"
#include "gguf.h"

// A context with a u32 "n", a string "s", an f32 array "fa", a string array "sa" and one
// tensor "w" of 32 floats.
static struct gguf_context * sample(void) {
    struct gguf_context * g = gguf_init_empty();
    gguf_set_val_u32(g, "n", 7);
    gguf_set_val_str(g, "s", "text");
    float fa[3] = { 1, 2, 3 };
    gguf_set_arr_data(g, "fa", GGUF_TYPE_FLOAT32, fa, 3);
    const char * sa[2] = { "a", "b" };
    gguf_set_arr_str(g, "sa", sa, 2);
    struct ggml_context * ctx = misuse_ctx(4 * ggml_tensor_overhead(), true);
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 32);
    ggml_set_name(w, "w");
    gguf_add_tensor(g, w);
    return g;
}

static int64_t key(struct gguf_context * g, const char * name) { return gguf_find_key(g, name); }

MISUSE(null_ctx_n_kv) { gguf_get_n_kv(NULL); }
MISUSE(null_ctx_find_key) { gguf_find_key(NULL, "n"); }
MISUSE(null_tensor_add) { gguf_add_tensor(gguf_init_empty(), NULL); }
MISUSE(key_id_past_end) { gguf_get_key(sample(), 4); }
MISUSE(key_id_negative) { gguf_get_kv_type(sample(), -1); }
MISUSE(val_key_id_past_end) { gguf_get_val_u32(sample(), 99); }
MISUSE(val_wrong_type) {
    struct gguf_context * g = sample();
    gguf_get_val_i32(g, key(g, "n"));
}
MISUSE(val_str_of_u32) {
    struct gguf_context * g = sample();
    gguf_get_val_str(g, key(g, "n"));
}
MISUSE(val_of_array) {
    struct gguf_context * g = sample();
    gguf_get_val_f32(g, key(g, "fa"));
}
MISUSE(val_data_of_string) {
    struct gguf_context * g = sample();
    gguf_get_val_data(g, key(g, "s"));
}
MISUSE(arr_type_of_scalar) {
    struct gguf_context * g = sample();
    gguf_get_arr_type(g, key(g, "n"));
}
MISUSE(arr_str_of_floats) {
    struct gguf_context * g = sample();
    gguf_get_arr_str(g, key(g, "fa"), 0);
}
MISUSE(arr_data_of_strings) {
    struct gguf_context * g = sample();
    gguf_get_arr_data(g, key(g, "sa"));
}
MISUSE(tensor_id_past_end) { gguf_get_tensor_name(sample(), 1); }
MISUSE(tensor_offset_negative) { gguf_get_tensor_offset(sample(), -1); }
MISUSE(tensor_type_past_end) { gguf_get_tensor_type(sample(), 5); }
MISUSE(tensor_size_past_end) { gguf_get_tensor_size(sample(), 1); }
MISUSE(duplicate_tensor) {
    struct gguf_context * g = sample();
    struct ggml_context * ctx = misuse_ctx(2 * ggml_tensor_overhead(), true);
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    ggml_set_name(w, "w");
    gguf_add_tensor(g, w);
}
MISUSE(set_type_unknown_tensor) { gguf_set_tensor_type(sample(), "nope", GGML_TYPE_F16); }
MISUSE(set_type_partial_blocks) {
    struct gguf_context * g = gguf_init_empty();
    struct ggml_context * ctx = misuse_ctx(2 * ggml_tensor_overhead(), true);
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 33);
    ggml_set_name(w, "w");
    gguf_add_tensor(g, w);
    gguf_set_tensor_type(g, "w", GGML_TYPE_Q4_0);
}
MISUSE(set_data_unknown_tensor) {
    float x = 0;
    gguf_set_tensor_data(sample(), "nope", &x);
}
MISUSE(alignment_not_power_of_two) { gguf_set_val_u32(gguf_init_empty(), "general.alignment", 24); }
MISUSE(alignment_not_u32) { gguf_set_val_i32(gguf_init_empty(), "general.alignment", 32); }

int main(void) {
    RUN(null_ctx_n_kv, "gguf_get_n_kv", "NULL");
    RUN(null_ctx_find_key, "gguf_find_key", "NULL");
    RUN(null_tensor_add, "gguf_add_tensor", "NULL");
    RUN(key_id_past_end, "gguf_get_key", "key_id");
    RUN(key_id_negative, "gguf_get_kv_type", "key_id");
    RUN(val_key_id_past_end, "gguf_get_val_u32", "key_id");
    RUN(val_wrong_type, "gguf_get_val_i32", "holds u32, not i32");
    RUN(val_str_of_u32, "gguf_get_val_str", "not strings");
    RUN(val_of_array, "gguf_get_val_f32", "single value");
    RUN(val_data_of_string, "gguf_get_val_data", "holds strings");
    RUN(arr_type_of_scalar, "gguf_get_arr_type", "array");
    RUN(arr_str_of_floats, "gguf_get_arr_str", "not strings");
    RUN(arr_data_of_strings, "gguf_get_arr_data", "holds strings");
    RUN(tensor_id_past_end, "gguf_get_tensor_name", "tensor_id");
    RUN(tensor_offset_negative, "gguf_get_tensor_offset", "tensor_id");
    RUN(tensor_type_past_end, "gguf_get_tensor_type", "tensor_id");
    RUN(tensor_size_past_end, "gguf_get_tensor_size", "tensor_id");
    RUN(duplicate_tensor, "gguf_add_tensor", "duplicate");
    RUN(set_type_unknown_tensor, "gguf_set_tensor_type", "not found");
    RUN(set_type_partial_blocks, "gguf_set_tensor_type", "block");
    RUN(set_data_unknown_tensor, "gguf_set_tensor_data", "not found");
    RUN(alignment_not_power_of_two, "gguf_set_val_u32", "power of 2");
    RUN(alignment_not_u32, "gguf_set_val_i32", "u32");
    return misuse_report("test-misuse-gguf");
}
