// ggml-cpu's per-op entry points (ggml_compute_forward_*), its thread-team functions, the IQ
// panel questions and the extra-buffer hooks, called directly as a CPU backend's driver would:
// for each case a node is built with the public API, planned with ggml_graph_plan for its
// scratch, and computed by one entry point on a team of one or two threads sharing a pool.
// Prints "LABEL TOL values..." for scripts/compare-cpu-kernels, which runs this against the
// reference's libraries and ours.
#include <ggml-cpu.h>
#include <ggml.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ggml-cpu-impl.h (private in ggml)
struct ggml_compute_params {
    int ith, nth;
    size_t wsize;
    void * wdata;
    struct ggml_threadpool * threadpool;
    bool use_ref;
};

typedef void (*forward_fn)(const struct ggml_compute_params *, struct ggml_tensor *);

#define FORWARD(name) void ggml_compute_forward_##name(const struct ggml_compute_params *, struct ggml_tensor *);
FORWARD(dup) FORWARD(cpy) FORWARD(cont) FORWARD(set) FORWARD(get_rows) FORWARD(set_rows) FORWARD(diag)
FORWARD(diag_mask_inf) FORWARD(diag_mask_zero) FORWARD(add) FORWARD(add_non_quantized) FORWARD(sub) FORWARD(mul)
FORWARD(div) FORWARD(add1) FORWARD(acc) FORWARD(scale) FORWARD(clamp) FORWARD(leaky_relu) FORWARD(fill) FORWARD(tri)
FORWARD(silu_back) FORWARD(sqr) FORWARD(sqrt) FORWARD(log) FORWARD(sin) FORWARD(cos) FORWARD(unary) FORWARD(glu)
FORWARD(abs) FORWARD(sgn) FORWARD(neg) FORWARD(step) FORWARD(tanh) FORWARD(elu) FORWARD(relu) FORWARD(sigmoid)
FORWARD(hardsigmoid) FORWARD(exp) FORWARD(hardswish) FORWARD(expm1) FORWARD(softplus) FORWARD(floor) FORWARD(ceil)
FORWARD(round) FORWARD(trunc) FORWARD(xielu) FORWARD(norm) FORWARD(rms_norm) FORWARD(group_norm) FORWARD(l2_norm)
FORWARD(mul_mat) FORWARD(out_prod) FORWARD(soft_max) FORWARD(rope) FORWARD(flash_attn_ext) FORWARD(im2col)
FORWARD(conv_transpose_1d) FORWARD(pool_1d) FORWARD(pool_2d) FORWARD(upscale) FORWARD(pad) FORWARD(roll)
FORWARD(sum) FORWARD(sum_rows) FORWARD(mean) FORWARD(argmax) FORWARD(count_equal) FORWARD(cumsum) FORWARD(repeat)
FORWARD(repeat_back) FORWARD(concat) FORWARD(arange) FORWARD(timestep_embedding) FORWARD(argsort) FORWARD(top_k)
FORWARD(win_part) FORWARD(fwht) FORWARD(mul_mat_iqp)

void ggml_compute_forward_rms_norm_mul_fused(const struct ggml_compute_params *, struct ggml_tensor *,
                                             struct ggml_tensor *);
void ggml_barrier(struct ggml_threadpool * tp);
void ggml_threadpool_chunk_set(struct ggml_threadpool * tp, int value);
int ggml_threadpool_chunk_add(struct ggml_threadpool * tp, int value);
bool ggml_cpu_iqp_supports_mul_mat(const struct ggml_tensor * dst);
size_t ggml_cpu_iqp_scratch_size(const struct ggml_tensor * dst);
bool ggml_cpu_extra_compute_forward(struct ggml_compute_params * params, struct ggml_tensor * op);
bool ggml_cpu_extra_work_size(int n_threads, const struct ggml_tensor * op, size_t * size);
void quantize_row_q8_K_ref(const float * x, void * y, int64_t k);

static struct ggml_context * ctx;
static struct ggml_threadpool * pools[3];
static uint64_t state = 88172645463325252ull;

static float uniform(float lo, float hi) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return lo + (hi - lo) * (float) ((state >> 11) * (1.0 / 9007199254740992.0));
}

static struct ggml_tensor * rnd(enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, float lo, float hi) {
    struct ggml_tensor * t = ggml_new_tensor_3d(ctx, type, ne0, ne1, ne2);
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        float v = uniform(lo, hi);
        if (type == GGML_TYPE_F32) {
            ((float *) t->data)[i] = v;
        } else if (type == GGML_TYPE_F16) {
            ((ggml_fp16_t *) t->data)[i] = ggml_fp32_to_fp16(v);
        } else if (type == GGML_TYPE_I32) {
            ((int32_t *) t->data)[i] = (int32_t) v;
        } else {
            abort();
        }
    }
    return t;
}

// weights of a block type: random floats quantized with the public quantizer
static struct ggml_tensor * quantized(enum ggml_type type, int64_t ne0, int64_t ne1) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, type, ne0, ne1);
    float * x = malloc(sizeof(float) * ne0 * ne1);
    for (int64_t i = 0; i < ne0 * ne1; i++) {
        x[i] = uniform(-1, 1);
    }
    ggml_quantize_chunk(type, x, t->data, 0, ne1, ne0, NULL);
    free(x);
    return t;
}

static void print_tensor(const char * label, double tol, const struct ggml_tensor * t) {
    printf("%s %g", label, tol);
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        switch (t->type) {
            case GGML_TYPE_F32: printf(" %.9g", ((const float *) t->data)[i]); break;
            case GGML_TYPE_F16: printf(" %.9g", ggml_fp16_to_fp32(((const ggml_fp16_t *) t->data)[i])); break;
            case GGML_TYPE_I32: printf(" %d", ((const int32_t *) t->data)[i]); break;
            case GGML_TYPE_I64: printf(" %lld", (long long) ((const int64_t *) t->data)[i]); break;
            default: abort();
        }
    }
    printf("\n");
}

struct member {
    forward_fn f;
    struct ggml_tensor * node;
    struct ggml_tensor * second;  // the MUL of the fused RMS_NORM case
    struct ggml_compute_params params;
};

static void * run_member(void * arg) {
    struct member * m = arg;
    if (m->second) {
        ggml_compute_forward_rms_norm_mul_fused(&m->params, m->node, m->second);
    } else {
        m->f(&m->params, m->node);
    }
    return NULL;
}

// computes `node` (and, for the fused case, `second`) with `f` on a team of `nth`; `plan_for`
// is the node whose plan sizes the scratch
static void compute(forward_fn f, struct ggml_tensor * node, struct ggml_tensor * second, int nth) {
    struct ggml_tensor * planned = second ? second : node;
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, planned);
    struct ggml_cplan plan = ggml_graph_plan(g, nth, pools[nth]);
    void * work = plan.work_size ? calloc(1, plan.work_size) : NULL;
    struct member members[2];
    pthread_t threads[2];
    for (int i = 0; i < nth; i++) {
        members[i] = (struct member) { f, node, second, { i, nth, plan.work_size, work, pools[nth], false } };
    }
    for (int i = 1; i < nth; i++) {
        pthread_create(&threads[i], NULL, run_member, &members[i]);
    }
    run_member(&members[0]);
    for (int i = 1; i < nth; i++) {
        pthread_join(threads[i], NULL);
    }
    free(work);
}

// Whether ggml_barrier on a pool holds back threads the caller started itself. A library built
// with OpenMP (as the reference's stock build is) has no barrier outside its own parallel
// region, so its two-thread runs are no oracle: its one-thread result stands for them.
static bool team_barrier_works;
static volatile int arrived[2];

static void * barrier_probe(void * arg) {
    int ith = (int) (intptr_t) arg;
    if (ith == 1) {
        usleep(50 * 1000);
    }
    arrived[ith] = 1;
    ggml_barrier(pools[2]);
    return (void *) (intptr_t) arrived[1 - ith];
}

static bool probe_team_barrier(void) {
    pthread_t other;
    void * seen_by_other;
    pthread_create(&other, NULL, barrier_probe, (void *) 1);
    void * seen = barrier_probe((void *) 0);
    pthread_join(other, &seen_by_other);
    return seen && seen_by_other;
}

static void check(const char * label, double tol, forward_fn f, struct ggml_tensor * node) {
    for (int nth = 1; nth <= 2; nth++) {
        memset(node->data, 0, ggml_nbytes(node));
        compute(f, node, NULL, team_barrier_works ? nth : 1);
        char name[128];
        snprintf(name, sizeof name, "%s/%d", label, nth);
        print_tensor(name, tol, node);
    }
}

int main(void) {
    alarm(120);
    setvbuf(stdout, NULL, _IOLBF, 0);
    ggml_cpu_init();
    ctx = ggml_init((struct ggml_init_params) { 256 << 20, NULL, false });
    for (int n = 1; n <= 2; n++) {
        struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n);
        pools[n] = ggml_threadpool_new(&tpp);
    }
    team_barrier_works = probe_team_barrier();
    fprintf(stderr, "forward: ggml_barrier %s threads started by the caller\n",
            team_barrier_works ? "holds" : "does not hold");

    struct ggml_tensor * a = rnd(GGML_TYPE_F32, 64, 6, 2, -2, 2);
    struct ggml_tensor * b = rnd(GGML_TYPE_F32, 64, 6, 2, -2, 2);
    struct ggml_tensor * row = rnd(GGML_TYPE_F32, 64, 1, 1, 0.5f, 2);
    struct ggml_tensor * pos = rnd(GGML_TYPE_F32, 64, 6, 2, 0.1f, 4);

    // element-wise, each on the node its public constructor builds
    check("add", 1e-6, ggml_compute_forward_add, ggml_add(ctx, a, b));
    check("add_non_quantized", 1e-6, ggml_compute_forward_add_non_quantized, ggml_add(ctx, a, row));
    check("sub", 1e-6, ggml_compute_forward_sub, ggml_sub(ctx, a, row));
    check("mul", 1e-6, ggml_compute_forward_mul, ggml_mul(ctx, a, row));
    check("div", 1e-6, ggml_compute_forward_div, ggml_div(ctx, a, row));
    check("acc", 1e-6, ggml_compute_forward_acc, ggml_acc(ctx, a, row, a->nb[1], a->nb[2], a->nb[3], a->nb[1]));
    check("scale", 1e-6, ggml_compute_forward_scale, ggml_scale(ctx, a, 0.37f));
    check("clamp", 0, ggml_compute_forward_clamp, ggml_clamp(ctx, a, -0.5f, 0.75f));
    check("leaky_relu", 1e-6, ggml_compute_forward_leaky_relu, ggml_leaky_relu(ctx, a, 0.1f, false));
    check("fill", 0, ggml_compute_forward_fill, ggml_fill(ctx, a, 1.25f));
    check("silu_back", 1e-5, ggml_compute_forward_silu_back, ggml_silu_back(ctx, a, b));
    check("sqr", 1e-6, ggml_compute_forward_sqr, ggml_sqr(ctx, a));
    check("sqrt", 1e-6, ggml_compute_forward_sqrt, ggml_sqrt(ctx, pos));
    check("log", 1e-6, ggml_compute_forward_log, ggml_log(ctx, pos));
    check("sin", 1e-6, ggml_compute_forward_sin, ggml_sin(ctx, a));
    check("cos", 1e-6, ggml_compute_forward_cos, ggml_cos(ctx, a));
    check("unary-gelu", 1e-4, ggml_compute_forward_unary, ggml_gelu(ctx, a));
    check("glu-swiglu", 1e-5, ggml_compute_forward_glu, ggml_swiglu(ctx, a));
    check("abs", 0, ggml_compute_forward_abs, ggml_abs(ctx, a));
    check("sgn", 0, ggml_compute_forward_sgn, ggml_sgn(ctx, a));
    check("neg", 0, ggml_compute_forward_neg, ggml_neg(ctx, a));
    check("step", 0, ggml_compute_forward_step, ggml_step(ctx, a));
    check("tanh", 1e-6, ggml_compute_forward_tanh, ggml_tanh(ctx, a));
    check("elu", 1e-6, ggml_compute_forward_elu, ggml_elu(ctx, a));
    check("relu", 0, ggml_compute_forward_relu, ggml_relu(ctx, a));
    check("sigmoid", 1e-6, ggml_compute_forward_sigmoid, ggml_sigmoid(ctx, a));
    check("hardsigmoid", 1e-6, ggml_compute_forward_hardsigmoid, ggml_hardsigmoid(ctx, a));
    check("exp", 1e-6, ggml_compute_forward_exp, ggml_exp(ctx, a));
    check("hardswish", 1e-6, ggml_compute_forward_hardswish, ggml_hardswish(ctx, a));
    check("expm1", 1e-6, ggml_compute_forward_expm1, ggml_expm1(ctx, a));
    check("softplus", 1e-6, ggml_compute_forward_softplus, ggml_softplus(ctx, a));
    check("floor", 0, ggml_compute_forward_floor, ggml_floor(ctx, a));
    check("ceil", 0, ggml_compute_forward_ceil, ggml_ceil(ctx, a));
    check("round", 0, ggml_compute_forward_round, ggml_round(ctx, a));
    check("trunc", 0, ggml_compute_forward_trunc, ggml_trunc(ctx, a));
    check("xielu", 1e-5, ggml_compute_forward_xielu, ggml_xielu(ctx, a, 0.8f, 0.6f, 0.5f, 1e-6f));
    // an entry point computes its own op whatever the node records
    check("abs-of-neg-node", 0, ggml_compute_forward_abs, ggml_neg(ctx, a));
    check("relu-of-sqr-node", 0, ggml_compute_forward_relu, ggml_sqr(ctx, a));

    // copies and rows
    check("dup", 0, ggml_compute_forward_dup, ggml_dup(ctx, a));
    check("cpy-f16", 0, ggml_compute_forward_cpy, ggml_cpy(ctx, a, ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 64, 6, 2)));
    check("cont-transposed", 0, ggml_compute_forward_cont, ggml_cont(ctx, ggml_transpose(ctx, a)));
    struct ggml_tensor * ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);
    int32_t id_values[4] = { 5, 0, 3, 3 };
    memcpy(ids->data, id_values, sizeof id_values);
    struct ggml_tensor * a2 = rnd(GGML_TYPE_F32, 64, 6, 1, -2, 2);
    check("get_rows", 0, ggml_compute_forward_get_rows, ggml_get_rows(ctx, a2, ids));
    struct ggml_tensor * ids64 = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, 2);
    ((int64_t *) ids64->data)[0] = 4;
    ((int64_t *) ids64->data)[1] = 1;
    check("set_rows", 0, ggml_compute_forward_set_rows,
          ggml_set_rows(ctx, rnd(GGML_TYPE_F32, 64, 6, 1, 0, 0), rnd(GGML_TYPE_F32, 64, 2, 1, -1, 1), ids64));
    check("set", 0, ggml_compute_forward_set, ggml_set_1d(ctx, a, row, 64 * 4 * 3));
    struct ggml_tensor * sq = rnd(GGML_TYPE_F32, 8, 8, 2, -1, 1);
    check("diag", 0, ggml_compute_forward_diag, ggml_diag(ctx, rnd(GGML_TYPE_F32, 8, 1, 2, -1, 1)));
    check("diag_mask_inf", 0, ggml_compute_forward_diag_mask_inf, ggml_diag_mask_inf(ctx, sq, 2));
    check("diag_mask_zero", 0, ggml_compute_forward_diag_mask_zero, ggml_diag_mask_zero(ctx, sq, 1));
    check("tri", 0, ggml_compute_forward_tri, ggml_tri(ctx, sq, GGML_TRI_TYPE_LOWER));

    // norms, including RMS_NORM fused with the MUL that takes it
    check("norm", 1e-5, ggml_compute_forward_norm, ggml_norm(ctx, a, 1e-5f));
    check("rms_norm", 1e-5, ggml_compute_forward_rms_norm, ggml_rms_norm(ctx, a, 1e-5f));
    check("group_norm", 1e-5, ggml_compute_forward_group_norm,
          ggml_group_norm(ctx, rnd(GGML_TYPE_F32, 8, 8, 4, -1, 1), 2, 1e-6f));
    check("l2_norm", 1e-5, ggml_compute_forward_l2_norm, ggml_l2_norm(ctx, a, 1e-6f));
    for (int nth = 1; nth <= 2; nth++) {
        struct ggml_tensor * norm = ggml_rms_norm(ctx, a, 1e-5f);
        struct ggml_tensor * mul = ggml_mul(ctx, norm, row);
        compute(NULL, norm, mul, team_barrier_works ? nth : 1);
        char name[64];
        snprintf(name, sizeof name, "rms_norm_mul_fused/%d", nth);
        print_tensor(name, 1e-5, mul);
    }

    // products
    struct ggml_tensor * x = rnd(GGML_TYPE_F32, 256, 9, 1, -1, 1);
    check("mul_mat-f32", 1e-5, ggml_compute_forward_mul_mat, ggml_mul_mat(ctx, rnd(GGML_TYPE_F32, 256, 16, 1, -1, 1), x));
    check("mul_mat-f16", 1e-3, ggml_compute_forward_mul_mat, ggml_mul_mat(ctx, rnd(GGML_TYPE_F16, 256, 16, 1, -1, 1), x));
    check("mul_mat-q4_0", 1e-3, ggml_compute_forward_mul_mat, ggml_mul_mat(ctx, quantized(GGML_TYPE_Q4_0, 256, 16), x));
    check("mul_mat-q4_K", 1e-3, ggml_compute_forward_mul_mat, ggml_mul_mat(ctx, quantized(GGML_TYPE_Q4_K, 256, 16), x));
    check("out_prod", 1e-5, ggml_compute_forward_out_prod,
          ggml_out_prod(ctx, rnd(GGML_TYPE_F32, 16, 8, 1, -1, 1), rnd(GGML_TYPE_F32, 12, 8, 1, -1, 1)));
    struct ggml_tensor * h = rnd(GGML_TYPE_F32, 64, 5, 1, -1, 1);
    struct ggml_tensor * hadamard = ggml_mul_mat(ctx, rnd(GGML_TYPE_F32, 64, 64, 1, -1, 1), h);
    check("fwht", 1e-6, ggml_compute_forward_fwht, hadamard);

    // attention pieces
    struct ggml_tensor * scores = rnd(GGML_TYPE_F32, 32, 8, 2, -3, 3);
    struct ggml_tensor * mask = rnd(GGML_TYPE_F16, 32, 8, 1, -1, 0);
    check("soft_max", 1e-5, ggml_compute_forward_soft_max, ggml_soft_max_ext(ctx, scores, mask, 0.5f, 0.0f));
    struct ggml_tensor * q = rnd(GGML_TYPE_F32, 64, 2, 5, -1, 1);
    struct ggml_tensor * positions = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 5);
    for (int i = 0; i < 5; i++) {
        ((int32_t *) positions->data)[i] = 3 * i + 1;
    }
    check("rope", 1e-5, ggml_compute_forward_rope,
          ggml_rope_ext(ctx, q, positions, NULL, 64, GGML_ROPE_TYPE_NEOX, 4096, 10000, 1, 0, 1, 32, 1));
    struct ggml_tensor * fq = rnd(GGML_TYPE_F32, 64, 4, 2, -1, 1);
    struct ggml_tensor * fk = rnd(GGML_TYPE_F16, 64, 32, 2, -1, 1);
    struct ggml_tensor * fv = rnd(GGML_TYPE_F16, 64, 32, 2, -1, 1);
    check("flash_attn_ext", 1e-3, ggml_compute_forward_flash_attn_ext,
          ggml_flash_attn_ext(ctx, fq, fk, fv, NULL, 0.125f, 0.0f, 0.0f));

    // reductions, layout and sequences
    check("sum", 1e-5, ggml_compute_forward_sum, ggml_sum(ctx, a));
    check("sum_rows", 1e-5, ggml_compute_forward_sum_rows, ggml_sum_rows(ctx, a));
    check("mean", 1e-5, ggml_compute_forward_mean, ggml_mean(ctx, a));
    check("argmax", 0, ggml_compute_forward_argmax, ggml_argmax(ctx, a2));
    check("count_equal", 0, ggml_compute_forward_count_equal,
          ggml_count_equal(ctx, rnd(GGML_TYPE_I32, 40, 1, 1, 0, 3), rnd(GGML_TYPE_I32, 40, 1, 1, 0, 3)));
    check("cumsum", 1e-5, ggml_compute_forward_cumsum, ggml_cumsum(ctx, a));
    check("repeat", 0, ggml_compute_forward_repeat, ggml_repeat(ctx, row, a));
    check("repeat_back", 1e-5, ggml_compute_forward_repeat_back, ggml_repeat_back(ctx, a, row));
    check("concat", 0, ggml_compute_forward_concat, ggml_concat(ctx, a, b, 1));
    check("arange", 0, ggml_compute_forward_arange, ggml_arange(ctx, 1.5f, 20.0f, 0.75f));
    check("timestep_embedding", 1e-5, ggml_compute_forward_timestep_embedding,
          ggml_timestep_embedding(ctx, rnd(GGML_TYPE_F32, 4, 1, 1, 0, 100), 32, 10000));
    check("argsort", 0, ggml_compute_forward_argsort, ggml_argsort(ctx, a2, GGML_SORT_ORDER_DESC));
    check("top_k", 0, ggml_compute_forward_top_k, ggml_top_k(ctx, a2, 5));
    check("pad", 0, ggml_compute_forward_pad, ggml_pad(ctx, a, 3, 2, 1, 0));
    check("roll", 0, ggml_compute_forward_roll, ggml_roll(ctx, a, 5, -2, 1, 0));
    check("upscale", 1e-6, ggml_compute_forward_upscale,
          ggml_upscale(ctx, rnd(GGML_TYPE_F32, 8, 6, 2, -1, 1), 2, GGML_SCALE_MODE_NEAREST));
    check("pool_1d", 1e-6, ggml_compute_forward_pool_1d, ggml_pool_1d(ctx, a, GGML_OP_POOL_AVG, 4, 2, 1));
    check("pool_2d", 1e-6, ggml_compute_forward_pool_2d,
          ggml_pool_2d(ctx, rnd(GGML_TYPE_F32, 12, 10, 3, -1, 1), GGML_OP_POOL_MAX, 3, 3, 2, 2, 1, 1));
    check("im2col", 0, ggml_compute_forward_im2col,
          ggml_im2col(ctx, rnd(GGML_TYPE_F16, 3, 3, 4, -1, 1), rnd(GGML_TYPE_F32, 10, 9, 4, -1, 1), 1, 1, 1, 1, 1, 1,
                      true, GGML_TYPE_F16));
    check("conv_transpose_1d", 1e-3, ggml_compute_forward_conv_transpose_1d,
          ggml_conv_transpose_1d(ctx, rnd(GGML_TYPE_F16, 5, 3, 4, -1, 1), rnd(GGML_TYPE_F32, 16, 4, 1, -1, 1), 2, 0, 1));
    check("win_part", 0, ggml_compute_forward_win_part, ggml_win_part(ctx, rnd(GGML_TYPE_F32, 4, 10, 9, -1, 1), 4));

    // the IQ panel product: the activations as Q8_K rows in the scratch, then the product
    struct ggml_tensor * iq = ggml_mul_mat(ctx, quantized(GGML_TYPE_IQ4_XS, 256, 16), rnd(GGML_TYPE_F32, 256, 8, 1, -1, 1));
    printf("iqp-supports 0 %d %d\n", ggml_cpu_iqp_supports_mul_mat(iq), ggml_cpu_iqp_supports_mul_mat(hadamard));
    printf("iqp-scratch 0 %zu\n", ggml_cpu_iqp_scratch_size(iq));
    {
        struct ggml_tensor * src1 = iq->src[1];
        size_t row_size = ggml_row_size(GGML_TYPE_Q8_K, src1->ne[0]);
        size_t panels = (row_size * src1->ne[1] + 63) / 64 * 64;
        size_t wsize = panels + 2 * ggml_cpu_iqp_scratch_size(iq);
        char * work = calloc(1, wsize);
        for (int64_t r = 0; r < src1->ne[1]; r++) {
            quantize_row_q8_K_ref((const float *) ((const char *) src1->data + r * src1->nb[1]), work + r * row_size,
                                  src1->ne[0]);
        }
        struct ggml_compute_params p = { 0, 1, wsize, work, pools[1], false };
        ggml_threadpool_chunk_set(pools[1], 1);  // ggml's driver starts the counter at nth
        ggml_compute_forward_mul_mat_iqp(&p, iq);
        print_tensor("mul_mat_iqp-iq4_xs", 1e-3, iq);
        free(work);
    }

    // the team's tools and the extra-buffer hooks (plain weights: not theirs)
    ggml_threadpool_chunk_set(pools[2], 5);
    int before = ggml_threadpool_chunk_add(pools[2], 3);
    printf("chunk 0 %d %d\n", before, ggml_threadpool_chunk_add(pools[2], 0));
    ggml_barrier(pools[1]);
    struct ggml_compute_params p = { 0, 1, 0, NULL, pools[1], false };
    size_t size = 12345;
    printf("extra 0 %d %d %zu\n", ggml_cpu_extra_compute_forward(&p, iq), ggml_cpu_extra_work_size(1, iq, &size), size);

    for (int n = 1; n <= 2; n++) {
        ggml_threadpool_free(pools[n]);
    }
    ggml_free(ctx);
    return 0;
}
