// Graph building through the public C API: overhead sizes, node and leaf classification and
// order, automatic names, compute flags, lookups, copies, clearing, gradients, and aborts on
// misuse (checked in a forked child).
#include "ggml.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "check.h"

static struct ggml_context * new_ctx(size_t size, bool no_alloc) {
    struct ggml_init_params params = { size, NULL, no_alloc };
    return ggml_init(params);
}

// The sizes ggml 0.25.1 reports: programs size their contexts with them.
static void test_overheads(void) {
    CHECK(ggml_graph_overhead() == 82608);
    CHECK(ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, false) == 82608);
    CHECK(ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, true) == 148192);
    CHECK(ggml_graph_overhead_custom(0, false) == 160);
    CHECK(ggml_graph_overhead_custom(16, false) == 848);
    CHECK(ggml_graph_overhead_custom(16, true) == 1440);
    CHECK(ggml_graph_overhead_custom(65536, true) == 4735936);

    struct ggml_context * ctx = new_ctx(ggml_graph_overhead() + ggml_graph_overhead_custom(100, true), true);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    CHECK(ggml_used_mem(ctx) == ggml_graph_overhead());
    CHECK(ggml_graph_size(g) == GGML_DEFAULT_GRAPH_SIZE);
    CHECK(ggml_graph_n_nodes(g) == 0);
    struct ggml_cgraph * g2 = ggml_new_graph_custom(ctx, 100, true);
    CHECK(ggml_used_mem(ctx) == ggml_graph_overhead() + ggml_graph_overhead_custom(100, true));
    CHECK(ggml_graph_size(g2) == 100);
    ggml_free(ctx);
}

static void test_forward_order(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, true);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_name(b, "b");
    struct ggml_tensor * c = ggml_add(ctx, a, b);
    struct ggml_tensor * d = ggml_mul(ctx, c, a);
    struct ggml_tensor * e = ggml_scale(ctx, d, 2.0f);
    ggml_set_name(e, "e");

    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 16, false);
    ggml_build_forward_expand(g, e);
    CHECK(ggml_graph_n_nodes(g) == 3);
    CHECK(ggml_graph_node(g, 0) == c);
    CHECK(ggml_graph_node(g, 1) == d);
    CHECK(ggml_graph_node(g, 2) == e);
    CHECK(ggml_graph_node(g, -1) == e);
    CHECK(ggml_graph_node(g, -3) == c);
    CHECK(ggml_graph_nodes(g)[1] == d);

    // unnamed tensors are named after their place in the graph; named ones keep their name
    CHECK(strcmp(ggml_get_name(a), "leaf_0") == 0);
    CHECK(strcmp(ggml_get_name(b), "b") == 0);
    CHECK(strcmp(ggml_get_name(c), "node_0") == 0);
    CHECK(strcmp(ggml_get_name(d), "node_1") == 0);
    CHECK(ggml_graph_get_tensor(g, "leaf_0") == a);
    CHECK(ggml_graph_get_tensor(g, "b") == b);
    CHECK(ggml_graph_get_tensor(g, "e") == e);
    CHECK(ggml_graph_get_tensor(g, "nope") == NULL);

    // ops to be computed are flagged; leafs are not
    CHECK((e->flags & GGML_TENSOR_FLAG_COMPUTE) != 0);
    CHECK((c->flags & GGML_TENSOR_FLAG_COMPUTE) != 0);
    CHECK((a->flags & GGML_TENSOR_FLAG_COMPUTE) == 0);

    // expanding with a tensor already in the graph adds nothing
    ggml_build_forward_expand(g, d);
    CHECK(ggml_graph_n_nodes(g) == 3);

    // a trainable parameter is a node even without an op
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_param(w);
    struct ggml_tensor * f = ggml_add(ctx, w, e);
    ggml_build_forward_expand(g, f);
    CHECK(ggml_graph_n_nodes(g) == 5);
    CHECK(ggml_graph_node(g, 3) == w);
    CHECK(ggml_graph_node(g, 4) == f);
    CHECK(strcmp(ggml_get_name(w), "node_3") == 0);

    // without gradient tables there are no gradients
    CHECK(ggml_graph_get_grad(g, f) == NULL);
    CHECK(ggml_graph_get_grad_acc(g, f) == NULL);

    // clearing empties the graph; add_node appends without the hash set
    ggml_graph_clear(g);
    CHECK(ggml_graph_n_nodes(g) == 0);
    CHECK(ggml_graph_get_tensor(g, "e") == NULL);
    ggml_graph_add_node(g, e);
    CHECK(ggml_graph_n_nodes(g) == 1 && ggml_graph_node(g, 0) == e);
    ggml_graph_clear(g);
    ggml_build_forward_expand(g, e);
    CHECK(ggml_graph_n_nodes(g) == 3);

    ggml_free(ctx);
}

static void test_order_and_select(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, true);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * p = ggml_sqr(ctx, a);
    struct ggml_tensor * q = ggml_sqrt(ctx, a);
    struct ggml_tensor * r = ggml_neg(ctx, a);

    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 16, false);
    ggml_build_forward_order(g, p);
    CHECK(ggml_graph_n_nodes(g) == 1);
    CHECK((p->flags & GGML_TENSOR_FLAG_COMPUTE) == 0);

    struct ggml_tensor * options[2] = { q, r };
    struct ggml_tensor * chosen = ggml_build_forward_select(g, options, 2, 1);
    CHECK(chosen == r);
    CHECK(ggml_graph_n_nodes(g) == 3);
    CHECK(ggml_graph_node(g, 1) == q && ggml_graph_node(g, 2) == r);
    CHECK((q->flags & GGML_TENSOR_FLAG_COMPUTE) == 0);
    CHECK((r->flags & GGML_TENSOR_FLAG_COMPUTE) != 0);

    // a later expand through an ordered node marks it
    ggml_build_forward_expand(g, p);
    CHECK((p->flags & GGML_TENSOR_FLAG_COMPUTE) != 0);
    CHECK(ggml_graph_n_nodes(g) == 3);
    ggml_free(ctx);
}

static void test_copies(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, true);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 4);
    struct ggml_tensor * m = ggml_mul_mat(ctx, a, ggml_cont(ctx, ggml_transpose(ctx, b)));
    struct ggml_tensor * s = ggml_soft_max(ctx, m);

    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 32, false);
    ggml_build_forward_expand(g, s);
    const int n = ggml_graph_n_nodes(g);
    CHECK(n == 4);

    struct ggml_cgraph * d = ggml_graph_dup(ctx, g, false);
    CHECK(ggml_graph_size(d) == 32);
    CHECK(ggml_graph_n_nodes(d) == n);
    for (int i = 0; i < n; i++) {
        CHECK(ggml_graph_node(d, i) == ggml_graph_node(g, i));
    }
    CHECK(ggml_graph_get_tensor(d, ggml_get_name(a)) == a);

    // the copy knows the tensors: expanding it again adds nothing
    ggml_build_forward_expand(d, s);
    CHECK(ggml_graph_n_nodes(d) == n);

    struct ggml_cgraph * big = ggml_new_graph_custom(ctx, 256, true);
    ggml_graph_cpy(g, big);
    CHECK(ggml_graph_n_nodes(big) == n);
    CHECK(ggml_graph_node(big, -1) == s);
    CHECK(ggml_graph_get_grad(big, s) == NULL);

    struct ggml_cgraph * forced = ggml_graph_dup(ctx, g, true);
    CHECK(ggml_graph_n_nodes(forced) == n);
    ggml_free(ctx);
}

static void test_backward(void) {
    struct ggml_context * ctx = new_ctx(16 << 20, false);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    ggml_set_name(w, "w");
    ggml_set_param(w);
    struct ggml_tensor * y = ggml_relu(ctx, ggml_mul_mat(ctx, w, x));
    struct ggml_tensor * loss = ggml_sum(ctx, ggml_sqr(ctx, y));
    ggml_set_loss(loss);

    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(gf, loss);
    const int n_forward = ggml_graph_n_nodes(gf);
    struct ggml_cgraph * gb = ggml_graph_dup(ctx, gf, true);
    ggml_build_backward_expand(ctx, gb, NULL);
    CHECK(ggml_graph_n_nodes(gb) > n_forward);
    CHECK(ggml_graph_n_nodes(gf) == n_forward);

    struct ggml_tensor * gw = ggml_graph_get_grad(gb, w);
    CHECK(gw != NULL);
    if (gw) {
        CHECK(ggml_are_same_shape(gw, w));
        CHECK(strcmp(ggml_get_name(gw), "grad for w") == 0);
        CHECK(gw->op == GGML_OP_OUT_PROD);
    }
    CHECK(ggml_graph_get_grad(gb, x) == NULL);
    CHECK(ggml_graph_get_grad_acc(gb, w) == NULL);

    struct ggml_tensor * gl = ggml_graph_get_grad_acc(gb, loss);
    CHECK(gl != NULL && gl == ggml_graph_get_grad(gb, loss));
    if (gl) {
        *(float *) gl->data = 7.0f;
        ggml_graph_reset(gb);
        CHECK(*(float *) gl->data == 1.0f);
    }
    ggml_graph_reset(NULL);

    // the dot file of the backward graph
    const char * path = "test-graph.tmp.dot";
    ggml_graph_dump_dot(gb, gf, path);
    FILE * f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        char line[64] = {0};
        CHECK(fgets(line, sizeof(line), f) != NULL && strcmp(line, "digraph G {\n") == 0);
        fclose(f);
        remove(path);
    }
    ggml_free(ctx);
}

static void expect_abort(void (*fn)(void), const char * what) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, STDERR_FILENO);
        }
        fn();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)) {
        fprintf(stderr, "expected an abort: %s\n", what);
    }
}

static void overfill_graph(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, true);
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    for (int i = 0; i < 4; i++) {
        t = ggml_neg(ctx, t);
    }
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 2, false);
    ggml_build_forward_expand(g, t);
}

static void node_out_of_range(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, true);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 4, false);
    ggml_build_forward_expand(g, ggml_neg(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4)));
    ggml_graph_node(g, -2);
}

static void copy_into_small_graph(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, true);
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    for (int i = 0; i < 4; i++) {
        t = ggml_neg(ctx, t);
    }
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 16, false);
    ggml_build_forward_expand(g, t);
    ggml_graph_cpy(g, ggml_new_graph_custom(ctx, 2, false));
}

static void backward_without_loss(void) {
    struct ggml_context * ctx = new_ctx(1 << 20, true);
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_param(w);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 16, true);
    ggml_build_forward_expand(g, ggml_sum(ctx, w));
    ggml_build_backward_expand(ctx, g, NULL);
}

int main(void) {
    test_overheads();
    test_forward_order();
    test_order_and_select();
    test_copies();
    test_backward();
    expect_abort(overfill_graph, "more nodes than the graph holds");
    expect_abort(node_out_of_range, "negative node index before the first node");
    expect_abort(copy_into_small_graph, "graph copy into a smaller graph");
    expect_abort(backward_without_loss, "backward pass without a loss");

    printf("test-graph: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
