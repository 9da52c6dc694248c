// Misuse of contexts, tensors and operator constructors ends in ggml_abort with a message,
// never in a segfault: NULL handles, exhausted contexts, bad dimensions and types, shapes
// the operator cannot combine. Each case is one the reference asserts against (ggml.c) or,
// for NULL handles, one it would crash on.
#include "misuse.h"
#include "ggml-cpu.h"

static struct ggml_context * ctx_meta(void) { return misuse_ctx(64 * ggml_tensor_overhead(), true); }

static struct ggml_tensor * f32(struct ggml_context * ctx, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ne0, ne1, ne2, ne3);
}

static struct ggml_tensor * i32(struct ggml_context * ctx, int64_t ne0) {
    return ggml_new_tensor_1d(ctx, GGML_TYPE_I32, ne0);
}

// ---- NULL handles ------------------------------------------------------------------------

MISUSE(null_ctx_new_tensor) { ggml_new_tensor_1d(NULL, GGML_TYPE_F32, 4); }
MISUSE(null_ctx_used_mem) { ggml_used_mem(NULL); }
MISUSE(null_tensor_nbytes) { ggml_nbytes(NULL); }
MISUSE(null_tensor_nelements) { ggml_nelements(NULL); }
MISUSE(null_tensor_set_name) { ggml_set_name(NULL, "x"); }
MISUSE(null_tensor_get_data_f32) { ggml_get_data_f32(NULL); }
MISUSE(null_src_add) {
    struct ggml_context * ctx = ctx_meta();
    ggml_add(ctx, NULL, f32(ctx, 4, 1, 1, 1));
}
MISUSE(null_src_mul_mat) {
    struct ggml_context * ctx = ctx_meta();
    ggml_mul_mat(ctx, f32(ctx, 4, 1, 1, 1), NULL);
}

// ---- exhausted contexts ------------------------------------------------------------------

MISUSE(exhausted_data) {
    struct ggml_context * ctx = misuse_ctx(ggml_tensor_overhead() + 64, false);
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1024);
}
MISUSE(exhausted_objects) {
    struct ggml_context * ctx = misuse_ctx(2 * ggml_tensor_overhead(), true);
    for (int i = 0; i < 3; i++) {
        ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    }
}
MISUSE(exhausted_graph) {
    struct ggml_context * ctx = misuse_ctx(ggml_tensor_overhead(), true);
    ggml_new_graph(ctx);
}
MISUSE(exhausted_new_buffer) {
    struct ggml_context * ctx = misuse_ctx(1024, false);
    ggml_new_buffer(ctx, 1 << 20);
}

// ---- tensor creation ---------------------------------------------------------------------

MISUSE(too_many_dims) {
    int64_t ne[5] = { 1, 1, 1, 1, 1 };
    ggml_new_tensor(ctx_meta(), GGML_TYPE_F32, 5, ne);
}
MISUSE(zero_dims) {
    int64_t ne[1] = { 1 };
    ggml_new_tensor(ctx_meta(), GGML_TYPE_F32, 0, ne);
}
MISUSE(invalid_type) { ggml_new_tensor_1d(ctx_meta(), GGML_TYPE_COUNT, 4); }
MISUSE(row_not_whole_blocks) { ggml_new_tensor_1d(ctx_meta(), GGML_TYPE_Q4_0, 33); }
MISUSE(loss_not_f32) {
    struct ggml_context * ctx = ctx_meta();
    ggml_set_loss(ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 1));
}
MISUSE(unary_op_of_non_unary) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_tensor * a = f32(ctx, 4, 1, 1, 1);
    ggml_get_unary_op(ggml_add(ctx, a, a));
}
MISUSE(glu_op_of_non_glu) {
    struct ggml_context * ctx = ctx_meta();
    ggml_get_glu_op(f32(ctx, 4, 1, 1, 1));
}
MISUSE(set_i32_1d_quantized) {
    struct ggml_context * ctx = misuse_ctx(1 << 16, false);
    ggml_set_i32_1d(ggml_new_tensor_1d(ctx, GGML_TYPE_Q4_0, 32), 0, 1);
}
MISUSE(get_f32_1d_quantized) {
    struct ggml_context * ctx = misuse_ctx(1 << 16, false);
    ggml_get_f32_1d(ggml_new_tensor_1d(ctx, GGML_TYPE_Q8_0, 32), 0);
}

// ---- views and reshapes ------------------------------------------------------------------

MISUSE(view_past_end) {
    struct ggml_context * ctx = ctx_meta();
    ggml_view_1d(ctx, f32(ctx, 8, 1, 1, 1), 8, 4 * sizeof(float));
}
MISUSE(reshape_count) {
    struct ggml_context * ctx = ctx_meta();
    ggml_reshape_2d(ctx, f32(ctx, 6, 1, 1, 1), 4, 2);
}
MISUSE(reshape_like_count) {
    struct ggml_context * ctx = ctx_meta();
    ggml_reshape(ctx, f32(ctx, 6, 1, 1, 1), f32(ctx, 4, 1, 1, 1));
}
MISUSE(reshape_non_contiguous) {
    struct ggml_context * ctx = ctx_meta();
    ggml_reshape_1d(ctx, ggml_transpose(ctx, f32(ctx, 3, 2, 1, 1)), 6);
}
MISUSE(permute_repeated_axis) {
    struct ggml_context * ctx = ctx_meta();
    ggml_permute(ctx, f32(ctx, 2, 3, 4, 5), 0, 0, 2, 3);
}
MISUSE(permute_axis_out_of_range) {
    struct ggml_context * ctx = ctx_meta();
    ggml_permute(ctx, f32(ctx, 2, 3, 4, 5), 0, 1, 2, 4);
}
MISUSE(cpy_count) {
    struct ggml_context * ctx = ctx_meta();
    ggml_cpy(ctx, f32(ctx, 4, 1, 1, 1), f32(ctx, 5, 1, 1, 1));
}
MISUSE(set_1d_larger_source) {
    struct ggml_context * ctx = ctx_meta();
    ggml_set_1d(ctx, f32(ctx, 4, 1, 1, 1), f32(ctx, 8, 1, 1, 1), 0);
}

// ---- shapes operators cannot combine -----------------------------------------------------

MISUSE(add_not_broadcastable) {
    struct ggml_context * ctx = ctx_meta();
    ggml_add(ctx, f32(ctx, 4, 3, 1, 1), f32(ctx, 4, 2, 1, 1));
}
MISUSE(sub_not_broadcastable) {
    struct ggml_context * ctx = ctx_meta();
    ggml_sub(ctx, f32(ctx, 4, 1, 1, 1), f32(ctx, 3, 1, 1, 1));
}
MISUSE(mul_not_broadcastable) {
    struct ggml_context * ctx = ctx_meta();
    ggml_mul(ctx, f32(ctx, 4, 2, 1, 1), f32(ctx, 4, 1, 3, 1));
}
MISUSE(div_not_broadcastable) {
    struct ggml_context * ctx = ctx_meta();
    ggml_div(ctx, f32(ctx, 4, 1, 1, 1), f32(ctx, 4, 1, 1, 2));
}
MISUSE(add1_non_scalar) {
    struct ggml_context * ctx = ctx_meta();
    // deprecated, but still exported and still asserting
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    ggml_add1(ctx, f32(ctx, 4, 1, 1, 1), f32(ctx, 2, 1, 1, 1));
#pragma GCC diagnostic pop
}
MISUSE(repeat_not_repeatable) {
    struct ggml_context * ctx = ctx_meta();
    ggml_repeat(ctx, f32(ctx, 3, 1, 1, 1), f32(ctx, 4, 1, 1, 1));
}
MISUSE(count_equal_shapes) {
    struct ggml_context * ctx = ctx_meta();
    ggml_count_equal(ctx, i32(ctx, 4), i32(ctx, 5));
}
MISUSE(argmax_3d) {
    struct ggml_context * ctx = ctx_meta();
    ggml_argmax(ctx, f32(ctx, 4, 2, 2, 1));
}
MISUSE(mul_mat_inner_dim) {
    struct ggml_context * ctx = ctx_meta();
    ggml_mul_mat(ctx, f32(ctx, 4, 3, 1, 1), f32(ctx, 5, 2, 1, 1));
}
MISUSE(mul_mat_broadcast) {
    struct ggml_context * ctx = ctx_meta();
    ggml_mul_mat(ctx, f32(ctx, 4, 3, 2, 1), f32(ctx, 4, 2, 3, 1));
}
MISUSE(mul_mat_transposed_a) {
    struct ggml_context * ctx = ctx_meta();
    ggml_mul_mat(ctx, ggml_transpose(ctx, f32(ctx, 4, 4, 1, 1)), f32(ctx, 4, 2, 1, 1));
}
MISUSE(mul_mat_id_ids_type) {
    struct ggml_context * ctx = ctx_meta();
    ggml_mul_mat_id(ctx, f32(ctx, 4, 3, 2, 1), f32(ctx, 4, 1, 2, 1), f32(ctx, 1, 2, 1, 1));
}
MISUSE(out_prod_shapes) {
    struct ggml_context * ctx = ctx_meta();
    ggml_out_prod(ctx, f32(ctx, 4, 3, 1, 1), f32(ctx, 5, 2, 1, 1));
}
MISUSE(concat_dim_out_of_range) {
    struct ggml_context * ctx = ctx_meta();
    ggml_concat(ctx, f32(ctx, 4, 1, 1, 1), f32(ctx, 4, 1, 1, 1), 4);
}
MISUSE(concat_types) {
    struct ggml_context * ctx = ctx_meta();
    ggml_concat(ctx, f32(ctx, 4, 1, 1, 1), ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 4), 0);
}
MISUSE(concat_other_dims) {
    struct ggml_context * ctx = ctx_meta();
    ggml_concat(ctx, f32(ctx, 4, 2, 1, 1), f32(ctx, 4, 3, 1, 1), 0);
}
MISUSE(get_rows_f32_indices) {
    struct ggml_context * ctx = ctx_meta();
    ggml_get_rows(ctx, f32(ctx, 4, 8, 1, 1), f32(ctx, 2, 1, 1, 1));
}
MISUSE(get_rows_batch_mismatch) {
    struct ggml_context * ctx = ctx_meta();
    ggml_get_rows(ctx, f32(ctx, 4, 8, 3, 1), ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 2));
}
MISUSE(set_rows_row_length) {
    struct ggml_context * ctx = ctx_meta();
    ggml_set_rows(ctx, f32(ctx, 4, 8, 1, 1), f32(ctx, 5, 2, 1, 1), i32(ctx, 2));
}
MISUSE(set_rows_f32_indices) {
    struct ggml_context * ctx = ctx_meta();
    ggml_set_rows(ctx, f32(ctx, 4, 8, 1, 1), f32(ctx, 4, 2, 1, 1), f32(ctx, 2, 1, 1, 1));
}
MISUSE(rope_f32_positions) {
    struct ggml_context * ctx = ctx_meta();
    ggml_rope(ctx, f32(ctx, 8, 2, 3, 1), f32(ctx, 3, 1, 1, 1), 8, 0);
}
MISUSE(rope_position_count) {
    struct ggml_context * ctx = ctx_meta();
    ggml_rope(ctx, f32(ctx, 8, 2, 3, 1), i32(ctx, 4), 8, 0);
}
MISUSE(rope_odd_mode) {
    struct ggml_context * ctx = ctx_meta();
    ggml_rope(ctx, f32(ctx, 8, 2, 3, 1), i32(ctx, 3), 8, 1);
}
MISUSE(soft_max_mask_type) {
    struct ggml_context * ctx = ctx_meta();
    ggml_soft_max_ext(ctx, f32(ctx, 8, 2, 1, 1), ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 2), 1.0f, 0.0f);
}
MISUSE(soft_max_mask_width) {
    struct ggml_context * ctx = ctx_meta();
    ggml_soft_max_ext(ctx, f32(ctx, 8, 2, 1, 1), f32(ctx, 4, 2, 1, 1), 1.0f, 0.0f);
}
MISUSE(flash_attn_head_dim) {
    struct ggml_context * ctx = ctx_meta();
    ggml_flash_attn_ext(ctx, f32(ctx, 8, 2, 1, 1), f32(ctx, 4, 3, 1, 1), f32(ctx, 8, 3, 1, 1), NULL, 1.0f, 0.0f, 0.0f);
}
MISUSE(glu_split_shapes) {
    struct ggml_context * ctx = ctx_meta();
    ggml_swiglu_split(ctx, f32(ctx, 4, 2, 1, 1), f32(ctx, 4, 3, 1, 1));
}
MISUSE(pad_reflect_too_wide) {
    struct ggml_context * ctx = ctx_meta();
    ggml_pad_reflect_1d(ctx, f32(ctx, 4, 1, 1, 1), 4, 0);
}
MISUSE(roll_shift_too_far) {
    struct ggml_context * ctx = ctx_meta();
    ggml_roll(ctx, f32(ctx, 4, 2, 1, 1), 4, 0, 0, 0);
}
MISUSE(top_k_too_many) {
    struct ggml_context * ctx = ctx_meta();
    ggml_top_k(ctx, f32(ctx, 4, 2, 1, 1), 5);
}
MISUSE(arange_empty) { ggml_arange(ctx_meta(), 3.0f, 3.0f, 1.0f); }
MISUSE(interpolate_bad_mode) {
    struct ggml_context * ctx = ctx_meta();
    ggml_interpolate(ctx, f32(ctx, 4, 4, 1, 1), 8, 8, 1, 1, 0x7f);
}

int main(void) {
    RUN(null_ctx_new_tensor, "ggml_new_tensor_1d", "NULL");
    RUN(null_ctx_used_mem, "ggml_used_mem", "NULL");
    RUN(null_tensor_nbytes, "ggml_nbytes", "NULL");
    RUN(null_tensor_nelements, "ggml_nelements", "NULL");
    RUN(null_tensor_set_name, "ggml_set_name", "NULL");
    RUN(null_tensor_get_data_f32, "ggml_get_data_f32", "NULL");
    RUN(null_src_add, "ggml_add", "NULL");
    RUN(null_src_mul_mat, "ggml_mul_mat", "NULL");

    RUN(exhausted_data, "ggml_new_tensor_1d", "not enough space");
    RUN(exhausted_objects, "ggml_new_tensor_1d", "not enough space");
    RUN(exhausted_graph, "ggml_new_graph", "not enough space");
    RUN(exhausted_new_buffer, "ggml_new_buffer", "not enough space");

    RUN(too_many_dims, "ggml_new_tensor", "n_dims");
    RUN(zero_dims, "ggml_new_tensor", "n_dims");
    RUN(invalid_type, "ggml_new_tensor_1d", "type");
    RUN(row_not_whole_blocks, "ggml_new_tensor_1d", "block");
    RUN(loss_not_f32, "ggml_set_loss", "F32");
    RUN(unary_op_of_non_unary, "ggml_get_unary_op", "UNARY");
    RUN(glu_op_of_non_glu, "ggml_get_glu_op", "GLU");
    RUN(set_i32_1d_quantized, "ggml_set_i32_1d", "q4_0");
    RUN(get_f32_1d_quantized, "ggml_get_f32_1d", "q8_0");

    RUN(view_past_end, "ggml_view_1d", "view");
    RUN(reshape_count, "ggml_reshape_2d", "elements cannot take");
    RUN(reshape_like_count, "ggml_reshape", "elements cannot take");
    RUN(reshape_non_contiguous, "ggml_reshape_1d", "contiguous");
    RUN(permute_repeated_axis, "ggml_permute", "axis");
    RUN(permute_axis_out_of_range, "ggml_permute", "axis");
    RUN(cpy_count, "ggml_cpy", "destination 5");
    RUN(set_1d_larger_source, "ggml_set_1d", "source 8");

    RUN(add_not_broadcastable, "ggml_add", "cannot be broadcast");
    RUN(sub_not_broadcastable, "ggml_sub", "cannot be broadcast");
    RUN(mul_not_broadcastable, "ggml_mul", "cannot be broadcast");
    RUN(div_not_broadcastable, "ggml_div", "cannot be broadcast");
    RUN(add1_non_scalar, "ggml_add1", "scalar");
    RUN(repeat_not_repeatable, "ggml_repeat", "does not tile");
    RUN(count_equal_shapes, "ggml_count_equal", "differ");
    RUN(argmax_3d, "ggml_argmax", "matrix");
    RUN(mul_mat_inner_dim, "ggml_mul_mat", "cannot multiply");
    RUN(mul_mat_broadcast, "ggml_mul_mat", "cannot multiply");
    RUN(mul_mat_transposed_a, "ggml_mul_mat", "transposed");
    RUN(mul_mat_id_ids_type, "ggml_mul_mat_id", "I32");
    RUN(out_prod_shapes, "ggml_out_prod", "do not match");
    RUN(concat_dim_out_of_range, "ggml_concat", "dimension 4");
    RUN(concat_types, "ggml_concat", "f16");
    RUN(concat_other_dims, "ggml_concat", "differ");
    RUN(get_rows_f32_indices, "ggml_get_rows", "I32");
    RUN(get_rows_batch_mismatch, "ggml_get_rows", "b.ne[1] = 2");
    RUN(set_rows_row_length, "ggml_set_rows", "row lengths differ");
    RUN(set_rows_f32_indices, "ggml_set_rows", "I32");
    RUN(rope_f32_positions, "ggml_rope", "I32");
    RUN(rope_position_count, "ggml_rope", "positions");
    RUN(rope_odd_mode, "ggml_rope", "mode");
    RUN(soft_max_mask_type, "ggml_soft_max_ext", "mask");
    RUN(soft_max_mask_width, "ggml_soft_max_ext", "mask");
    RUN(flash_attn_head_dim, "ggml_flash_attn_ext", "cannot be multiplied");
    RUN(glu_split_shapes, "ggml_swiglu_split", "differ in shape");
    RUN(pad_reflect_too_wide, "ggml_pad_reflect_1d", "p0 = 4");
    RUN(roll_shift_too_far, "ggml_roll", "shift 4");
    RUN(top_k_too_many, "ggml_top_k", "k = 5");
    RUN(arange_empty, "ggml_arange", "from 3 to 3");
    RUN(interpolate_bad_mode, "ggml_interpolate", "mode");
    return misuse_report("test-misuse-tensor");
}
