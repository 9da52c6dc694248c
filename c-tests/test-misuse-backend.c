// Misuse of graphs, backends, buffers, allocators and the scheduler ends in ggml_abort with a
// message, never in a segfault: NULL handles, full graphs, node indices out of range, tensor
// I/O out of bounds or without memory, bad scheduler set-ups. The reference asserts each
// (ggml.c, ggml-backend.cpp, ggml-alloc.c) or, for NULL handles, would crash on it.
#include "misuse.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

static struct ggml_context * ctx_meta(void) { return misuse_ctx(64 * ggml_tensor_overhead() + ggml_graph_overhead(), true); }

static struct ggml_tensor * f32(struct ggml_context * ctx, int64_t ne0) {
    return ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ne0);
}

// A CPU backend and a tensor of `n` floats allocated in one of its buffers.
static struct ggml_tensor * cpu_tensor(ggml_backend_t * backend, int64_t n) {
    *backend = ggml_backend_cpu_init();
    struct ggml_context * ctx = ctx_meta();
    struct ggml_tensor * t = f32(ctx, n);
    ggml_backend_alloc_ctx_tensors(ctx, *backend);
    return t;
}

// ---- NULL handles ------------------------------------------------------------------------

MISUSE(null_graph_n_nodes) { ggml_graph_n_nodes(NULL); }
MISUSE(null_graph_expand) { ggml_build_forward_expand(NULL, f32(ctx_meta(), 4)); }
MISUSE(null_tensor_expand) { ggml_build_forward_expand(ggml_new_graph(ctx_meta()), NULL); }
MISUSE(null_graph_compute) { ggml_graph_compute_with_ctx(ctx_meta(), NULL, 1); }
MISUSE(null_buffer_get_size) { ggml_backend_buffer_get_size(NULL); }
MISUSE(null_buffer_clear) { ggml_backend_buffer_clear(NULL, 0); }
MISUSE(null_buft_name) { ggml_backend_buft_name(NULL); }
MISUSE(null_buft_alloc) { ggml_backend_buft_alloc_buffer(NULL, 16); }
MISUSE(null_backend_default_buft) { ggml_backend_get_default_buffer_type(NULL); }
MISUSE(null_backend_graph_compute) { ggml_backend_graph_compute(NULL, ggml_new_graph(ctx_meta())); }
MISUSE(null_dev_name) { ggml_backend_dev_name(NULL); }
MISUSE(null_reg_name) { ggml_backend_reg_name(NULL); }
MISUSE(null_gallocr_alloc_graph) { ggml_gallocr_alloc_graph(NULL, ggml_new_graph(ctx_meta())); }
MISUSE(null_sched_reserve) { ggml_backend_sched_reserve(NULL, ggml_new_graph(ctx_meta())); }
MISUSE(null_tensor_backend_set) {
    float x = 0;
    ggml_backend_tensor_set(NULL, &x, 0, sizeof(x));
}

// ---- graphs ------------------------------------------------------------------------------

MISUSE(graph_nodes_overflow) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 2, false);
    struct ggml_tensor * t = f32(ctx, 4);
    for (int i = 0; i < 3; i++) {
        t = ggml_neg(ctx, t);
    }
    ggml_build_forward_expand(g, t);
}
MISUSE(graph_leafs_overflow) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 2, false);
    struct ggml_tensor * a = f32(ctx, 4);
    struct ggml_tensor * b = f32(ctx, 4);
    struct ggml_tensor * c = f32(ctx, 4);
    ggml_build_forward_expand(g, ggml_add(ctx, ggml_add(ctx, a, b), c));
}
MISUSE(graph_add_node_full) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 1, false);
    struct ggml_tensor * a = f32(ctx, 4);
    ggml_graph_add_node(g, ggml_neg(ctx, a));
    ggml_graph_add_node(g, ggml_neg(ctx, a));
}
MISUSE(graph_node_past_end) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_neg(ctx, f32(ctx, 4)));
    ggml_graph_node(g, 1);
}
MISUSE(graph_node_before_start) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_neg(ctx, f32(ctx, 4)));
    ggml_graph_node(g, -2);
}
MISUSE(graph_cpy_too_small) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_cgraph * src = ggml_new_graph(ctx);
    struct ggml_tensor * t = f32(ctx, 4);
    for (int i = 0; i < 3; i++) {
        t = ggml_neg(ctx, t);
    }
    ggml_build_forward_expand(src, t);
    ggml_graph_cpy(src, ggml_new_graph_custom(ctx, 2, false));
}
MISUSE(backward_without_params) {
    // room for a graph with gradient tables
    struct ggml_context * ctx = misuse_ctx(64 * ggml_tensor_overhead() + ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, true), true);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, GGML_DEFAULT_GRAPH_SIZE, true);
    struct ggml_tensor * loss = ggml_sum(ctx, f32(ctx, 4));
    ggml_set_loss(loss);
    ggml_build_forward_expand(g, loss);
    ggml_build_backward_expand(ctx, g, NULL);
}
MISUSE(backward_without_grads) {
    struct ggml_context * ctx = ctx_meta();
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    struct ggml_tensor * p = f32(ctx, 4);
    ggml_set_param(p);
    struct ggml_tensor * loss = ggml_sum(ctx, p);
    ggml_set_loss(loss);
    ggml_build_forward_expand(g, loss);
    ggml_build_backward_expand(ctx, g, NULL);
}

// ---- tensor I/O through backends ---------------------------------------------------------

MISUSE(tensor_set_no_buffer) {
    float x = 0;
    ggml_backend_tensor_set(f32(ctx_meta(), 4), &x, 0, sizeof(x));
}
MISUSE(tensor_get_no_buffer) {
    float x = 0;
    ggml_backend_tensor_get(f32(ctx_meta(), 4), &x, 0, sizeof(x));
}
MISUSE(tensor_set_out_of_bounds) {
    ggml_backend_t backend;
    struct ggml_tensor * t = cpu_tensor(&backend, 4);
    float x[4] = { 0 };
    ggml_backend_tensor_set(t, x, 2 * sizeof(float), sizeof(x));
}
MISUSE(tensor_get_out_of_bounds) {
    ggml_backend_t backend;
    struct ggml_tensor * t = cpu_tensor(&backend, 4);
    float x[5];
    ggml_backend_tensor_get(t, x, 0, sizeof(x));
}
MISUSE(tensor_memset_out_of_bounds) {
    ggml_backend_t backend;
    struct ggml_tensor * t = cpu_tensor(&backend, 4);
    ggml_backend_tensor_memset(t, 0, 8, 16);
}
MISUSE(tensor_set_async_out_of_bounds) {
    ggml_backend_t backend;
    struct ggml_tensor * t = cpu_tensor(&backend, 4);
    float x[8] = { 0 };
    ggml_backend_tensor_set_async(backend, t, x, 0, sizeof(x));
}
MISUSE(tensor_get_async_unallocated) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    float x[4];
    ggml_backend_tensor_get_async(backend, f32(ctx_meta(), 4), x, 0, sizeof(x));
}
MISUSE(tensor_copy_layouts) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    struct ggml_context * ctx = ctx_meta();
    struct ggml_tensor * a = f32(ctx, 4);
    struct ggml_tensor * b = f32(ctx, 5);
    ggml_backend_alloc_ctx_tensors(ctx, backend);
    ggml_backend_tensor_copy(a, b);
}

// ---- buffers and allocators --------------------------------------------------------------

MISUSE(alloc_ctx_tensors_with_data) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    struct ggml_context * ctx = misuse_ctx(1 << 16, false);
    f32(ctx, 4);
    ggml_backend_alloc_ctx_tensors(ctx, backend);
}
MISUSE(tallocr_exhausted) {
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    struct ggml_tallocr talloc = ggml_tallocr_new(buf);
    ggml_tallocr_alloc(&talloc, f32(ctx_meta(), 1024));
}
MISUSE(tensor_alloc_twice) {
    ggml_backend_t backend;
    struct ggml_tensor * t = cpu_tensor(&backend, 4);
    ggml_backend_tensor_alloc(t->buffer, t, t->data);
}
MISUSE(tensor_alloc_outside_buffer) {
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    char * base = ggml_backend_buffer_get_base(buf);
    ggml_backend_tensor_alloc(buf, f32(ctx_meta(), 8), base + 48);
}
MISUSE(view_init_unallocated_source) {
    struct ggml_context * ctx = ctx_meta();
    ggml_backend_view_init(ggml_view_1d(ctx, f32(ctx, 8), 4, 0));
}
MISUSE(gallocr_buffer_id_out_of_range) {
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_get_buffer_size(galloc, 1);
}

// ---- scheduler ---------------------------------------------------------------------------

MISUSE(sched_no_backends) {
    ggml_backend_t backends[1] = { ggml_backend_cpu_init() };
    ggml_backend_sched_new(backends, NULL, 0, GGML_DEFAULT_GRAPH_SIZE, false, true);
}
MISUSE(sched_too_many_backends) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    // the scheduler takes at most 16 backends (GGML_SCHED_MAX_BACKENDS, not in the headers)
    ggml_backend_t backends[17];
    for (int i = 0; i < 17; i++) {
        backends[i] = cpu;
    }
    ggml_backend_sched_new(backends, NULL, 17, GGML_DEFAULT_GRAPH_SIZE, false, true);
}

int main(void) {
    RUN(null_graph_n_nodes, "ggml_graph_n_nodes", "NULL");
    RUN(null_graph_expand, "ggml_build_forward_expand", "NULL");
    RUN(null_tensor_expand, "ggml_build_forward_expand", "NULL");
    RUN(null_graph_compute, "ggml_graph_compute_with_ctx", "NULL");
    RUN(null_buffer_get_size, "ggml_backend_buffer_get_size", "NULL");
    RUN(null_buffer_clear, "ggml_backend_buffer_clear", "NULL");
    RUN(null_buft_name, "ggml_backend_buft_name", "NULL");
    RUN(null_buft_alloc, "ggml_backend_buft_alloc_buffer", "NULL");
    RUN(null_backend_default_buft, "ggml_backend_get_default_buffer_type", "NULL");
    RUN(null_backend_graph_compute, "ggml_backend_graph_compute", "NULL");
    RUN(null_dev_name, "ggml_backend_dev_name", "NULL");
    RUN(null_reg_name, "ggml_backend_reg_name", "NULL");
    RUN(null_gallocr_alloc_graph, "ggml_gallocr_alloc_graph", "NULL");
    RUN(null_sched_reserve, "ggml_backend_sched_reserve", "NULL");
    RUN(null_tensor_backend_set, "ggml_backend_tensor_set", "NULL");

    RUN(graph_nodes_overflow, "ggml_build_forward_expand", "no room for more than 2 nodes");
    RUN(graph_leafs_overflow, "ggml_build_forward_expand", "no room for more than 2 leafs");
    RUN(graph_add_node_full, "ggml_graph_add_node", "full");
    RUN(graph_node_past_end, "ggml_graph_node", "index 1");
    RUN(graph_node_before_start, "ggml_graph_node", "index -2");
    RUN(graph_cpy_too_small, "ggml_graph_cpy", "too small");
    RUN(backward_without_params, "ggml_build_backward_expand", "param");
    RUN(backward_without_grads, "ggml_build_backward_expand", "grad");

    RUN(tensor_set_no_buffer, "ggml_backend_tensor_set", "buffer");
    RUN(tensor_get_no_buffer, "ggml_backend_tensor_get", "buffer");
    RUN(tensor_set_out_of_bounds, "ggml_backend_tensor_set", "out of bounds");
    RUN(tensor_get_out_of_bounds, "ggml_backend_tensor_get", "out of bounds");
    RUN(tensor_memset_out_of_bounds, "ggml_backend_tensor_memset", "out of bounds");
    RUN(tensor_set_async_out_of_bounds, "ggml_backend_tensor_set_async", "out of bounds");
    RUN(tensor_get_async_unallocated, "ggml_backend_tensor_get_async", "not allocated");
    RUN(tensor_copy_layouts, "ggml_backend_tensor_copy", "layout");

    RUN(alloc_ctx_tensors_with_data, "ggml_backend_alloc_ctx_tensors", "no_alloc");
    RUN(tallocr_exhausted, "ggml_tallocr_alloc", "not enough space");
    RUN(tensor_alloc_twice, "ggml_backend_tensor_alloc", "already has a buffer");
    RUN(tensor_alloc_outside_buffer, "ggml_backend_tensor_alloc", "buffer");
    RUN(view_init_unallocated_source, "ggml_backend_view_init", "no buffer");
    RUN(gallocr_buffer_id_out_of_range, "ggml_gallocr_get_buffer_size", "buffer_id");

    RUN(sched_no_backends, "ggml_backend_sched_new", "n_backends");
    RUN(sched_too_many_backends, "ggml_backend_sched_new", "n_backends");
    return misuse_report("test-misuse-backend");
}
