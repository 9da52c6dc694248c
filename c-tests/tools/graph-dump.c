// graph-dump: builds representative ggml graphs through the public API and prints every leaf
// and node (op, type, shape, strides, flags, op_params, sources, view, data offset, use count,
// gradient), so that the output of two ggml implementations can be compared with diff.
//
// Usage: graph-dump [scenario...]   (no argument: all scenarios, in order)
//
// Only ggml.h is included. struct ggml_cgraph is opaque there; its layout is part of the ABI
// (backends read it), so a mirror of it is declared below to reach the leafs and use counts.
// Tensors are named by their creation index in their context ("t12"), which is the same for
// two implementations that create the same tensors in the same order; pointers never appear.

#include "ggml.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// struct ggml_cgraph and struct ggml_hash_set as laid out in ggml 0.25.1.
struct abi_hash_set {
    size_t size;
    uint32_t * used;
    struct ggml_tensor ** keys;
};

struct abi_cgraph {
    int size;
    int n_nodes;
    int n_leafs;
    struct ggml_tensor ** nodes;
    struct ggml_tensor ** grads;
    struct ggml_tensor ** grad_accs;
    struct ggml_tensor ** leafs;
    int32_t * use_counts;
    struct abi_hash_set visited_hash_set;
    int order;
    uint64_t uid;
};

static const struct abi_cgraph * abi(const struct ggml_cgraph * g) {
    return (const struct abi_cgraph *) g;
}

// exported by ggml-base but declared only in its internal header
struct abi_cgraph ggml_graph_view(struct ggml_cgraph * cgraph, int i0, int i1);
bool ggml_can_fuse_subgraph_ext(const struct ggml_cgraph * cgraph, const int * node_idxs, int count,
                                const enum ggml_op * ops, const int * outputs, int num_outputs);
size_t ggml_hash_size(size_t min_sz);
struct abi_hash_set ggml_hash_set_new(size_t size);
void ggml_hash_set_free(struct abi_hash_set * hash_set);

// the hash slot of a tensor in the graph's set, or -1
static long hash_slot(const struct ggml_cgraph * g, const struct ggml_tensor * t) {
    const struct abi_hash_set * hs = &abi(g)->visited_hash_set;
    size_t h = ((size_t) (uintptr_t) t >> 4) % hs->size;
    size_t i = h;
    do {
        if (!(hs->used[i >> 5] & (1u << (i & 31)))) {
            return -1;
        }
        if (hs->keys[i] == t) {
            return (long) i;
        }
        i = (i + 1) % hs->size;
    } while (i != h);
    return -1;
}

// ---------------------------------------------------------------------------------------------
// tensor naming by creation index

#define MAX_TENSORS 8192

static struct ggml_context * g_ctx;
static struct ggml_tensor * g_tensors[MAX_TENSORS];
static int g_n_tensors;

static void index_context(struct ggml_context * ctx) {
    g_ctx = ctx;
    g_n_tensors = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (g_n_tensors < MAX_TENSORS) {
            g_tensors[g_n_tensors++] = t;
        }
    }
}

static void tensor_id(const struct ggml_tensor * t, char * buf, size_t n) {
    if (t == NULL) {
        snprintf(buf, n, "-");
        return;
    }
    for (int i = 0; i < g_n_tensors; i++) {
        if (g_tensors[i] == t) {
            snprintf(buf, n, "t%d", i);
            return;
        }
    }
    snprintf(buf, n, "?%s", t->name);
}

// ---------------------------------------------------------------------------------------------
// printing

static void print_tensor(const char * kind, int i, const struct ggml_cgraph * g, const struct ggml_tensor * t) {
    char id[80];
    tensor_id(t, id, sizeof(id));
    printf("%s%-3d %-5s %-18s %-5s ne=[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]", kind, i, id, ggml_op_desc(t),
           ggml_type_name(t->type), t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    printf(" nb=[%zu,%zu,%zu,%zu] flags=0x%02x", t->nb[0], t->nb[1], t->nb[2], t->nb[3], (unsigned) t->flags);

    const uint8_t * p = (const uint8_t *) t->op_params;
    int last = (int) sizeof(t->op_params) - 1;
    while (last >= 0 && p[last] == 0) {
        last--;
    }
    printf(" params=");
    if (last < 0) {
        printf("0");
    }
    for (int j = 0; j <= last; j++) {
        printf("%02x", p[j]);
    }

    int n_src = 0;
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (t->src[j]) {
            n_src = j + 1;
        }
    }
    printf(" src=[");
    for (int j = 0; j < n_src; j++) {
        tensor_id(t->src[j], id, sizeof(id));
        printf("%s%s", j ? "," : "", id);
    }
    printf("]");

    tensor_id(t->view_src, id, sizeof(id));
    printf(" view=%s+%zu", id, t->view_offs);

    if (t->data == NULL) {
        printf(" data=-");
    } else {
        printf(" data=+%td", (const char *) t->data - (const char *) ggml_get_mem_buffer(g_ctx));
    }

    long slot = hash_slot(g, t);
    printf(" uses=%d", slot >= 0 ? abi(g)->use_counts[slot] : -1);
    if (abi(g)->grads != NULL && slot >= 0) {
        char gid[80];
        char aid[80];
        tensor_id(abi(g)->grads[slot], gid, sizeof(gid));
        tensor_id(abi(g)->grad_accs[slot], aid, sizeof(aid));
        printf(" grad=%s acc=%s", gid, aid);
    }
    printf(" name=\"%s\"\n", t->name);
}

static void dump_graph(const char * title, struct ggml_context * ctx, struct ggml_cgraph * g) {
    index_context(ctx);
    const struct abi_cgraph * a = abi(g);
    printf("== %s: size=%d n_nodes=%d n_leafs=%d hash=%zu grads=%s order=%d n_tensors=%d used_mem=%zu\n", title,
           ggml_graph_size(g), ggml_graph_n_nodes(g), a->n_leafs, a->visited_hash_set.size, a->grads ? "yes" : "no",
           a->order, g_n_tensors, ggml_used_mem(ctx));
    for (int i = 0; i < a->n_leafs; i++) {
        print_tensor("L", i, g, a->leafs[i]);
    }
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        print_tensor("N", i, g, ggml_graph_node(g, i));
    }
}

// ggml_graph_print and other log output, with the level, on stdout
static void log_to_stdout(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    printf("log[%d]: %s", (int) level, text);
}

// the Graphviz dump, with pointers replaced by tensor ids
static void dump_dot(struct ggml_context * ctx, struct ggml_cgraph * gb, struct ggml_cgraph * gf) {
    index_context(ctx);
    const char * path = "graph-dump.tmp.dot";
    ggml_graph_dump_dot(gb, gf, path);
    FILE * f = fopen(path, "r");
    if (f == NULL) {
        printf("dot: cannot read %s\n", path);
        return;
    }
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        printf("dot: ");
        for (char * s = line; *s;) {
            if (s[0] == '0' && s[1] == 'x') {
                void * ptr = NULL;
                int used = 0;
                if (sscanf(s, "%p%n", &ptr, &used) == 1 && used > 2) {
                    char id[80];
                    tensor_id((const struct ggml_tensor *) ptr, id, sizeof(id));
                    printf("%s", id);
                    s += used;
                    continue;
                }
            }
            putchar(*s++);
        }
    }
    fclose(f);
    remove(path);
}

static struct ggml_context * new_context(size_t mem) {
    struct ggml_init_params params = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(params);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init failed\n");
        exit(1);
    }
    return ctx;
}

static struct ggml_tensor * named(struct ggml_tensor * t, const char * name) {
    ggml_set_name(t, name);
    return t;
}

// ---------------------------------------------------------------------------------------------
// scenarios

// one llama-style transformer block with a KV cache, both attention paths and an MoE FFN
static void scenario_transformer(void) {
    struct ggml_context * ctx = new_context(64u << 20);

    const int n_embd = 64, n_head = 4, n_head_kv = 2, head_dim = 16, n_tokens = 5, n_kv = 8, kv_size = 16;
    const int n_ff = 96, n_vocab = 50, n_expert = 4, n_expert_used = 2;
    const int n_embd_kv = head_dim * n_head_kv;

    struct ggml_tensor * tok_embd   = named(ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, n_embd, n_vocab), "token_embd.weight");
    struct ggml_tensor * attn_norm  = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_embd), "attn_norm.weight");
    struct ggml_tensor * wq         = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd, n_embd), "attn_q.weight");
    struct ggml_tensor * wk         = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd, n_embd_kv), "attn_k.weight");
    struct ggml_tensor * wv         = named(ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, n_embd, n_embd_kv), "attn_v.weight");
    struct ggml_tensor * wo         = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd, n_embd), "attn_output.weight");
    struct ggml_tensor * ffn_norm   = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_embd), "ffn_norm.weight");
    struct ggml_tensor * w_gate     = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd, n_ff), "ffn_gate.weight");
    struct ggml_tensor * w_up       = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd, n_ff), "ffn_up.weight");
    struct ggml_tensor * w_gate_up  = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd, 2 * n_ff), "ffn_gate_up.weight");
    struct ggml_tensor * w_down     = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_ff, n_embd), "ffn_down.weight");
    struct ggml_tensor * gate_inp   = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_embd, n_expert), "ffn_gate_inp.weight");
    struct ggml_tensor * up_exps    = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F16, n_embd, n_ff, n_expert), "ffn_up_exps.weight");
    struct ggml_tensor * up_exps_b  = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_ff, n_expert), "ffn_up_exps.bias");
    struct ggml_tensor * gate_exps  = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F16, n_embd, n_ff, n_expert), "ffn_gate_exps.weight");
    struct ggml_tensor * down_exps  = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F16, n_ff, n_embd, n_expert), "ffn_down_exps.weight");
    struct ggml_tensor * out_norm   = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_embd), "output_norm.weight");
    struct ggml_tensor * output     = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd, n_vocab), "output.weight");
    struct ggml_tensor * k_cache    = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd_kv, kv_size), "cache_k");
    struct ggml_tensor * v_cache    = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_embd_kv, kv_size), "cache_v");

    struct ggml_tensor * inp_tokens = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_tokens);
    struct ggml_tensor * inp_pos    = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_tokens);
    struct ggml_tensor * kv_idxs    = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, n_tokens);
    struct ggml_tensor * kq_mask    = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_kv, n_tokens);
    struct ggml_tensor * kq_mask_16 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, n_tokens);
    ggml_set_input(inp_tokens);
    ggml_set_input(inp_pos);
    ggml_set_input(kv_idxs);
    ggml_set_input(kq_mask);
    ggml_set_input(kq_mask_16);

    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 512, false);

    struct ggml_tensor * inpL = ggml_get_rows(ctx, tok_embd, inp_tokens);
    struct ggml_tensor * cur = ggml_rms_norm(ctx, inpL, 1e-5f);
    cur = ggml_mul(ctx, cur, attn_norm);

    struct ggml_tensor * Qcur = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, wq, cur), head_dim, n_head, n_tokens);
    struct ggml_tensor * Kcur = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, wk, cur), head_dim, n_head_kv, n_tokens);
    struct ggml_tensor * Vcur = ggml_mul_mat(ctx, wv, cur);
    Qcur = ggml_rope_ext(ctx, Qcur, inp_pos, NULL, head_dim, GGML_ROPE_TYPE_NEOX, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    Kcur = ggml_rope_ext(ctx, Kcur, inp_pos, NULL, head_dim, GGML_ROPE_TYPE_NEOX, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    ggml_set_name(Qcur, "Qcur");
    ggml_set_name(Kcur, "Kcur");

    // store K with set_rows, V with a copy into a view of the cache
    struct ggml_tensor * k_store = ggml_set_rows(ctx, k_cache, ggml_reshape_2d(ctx, Kcur, n_embd_kv, n_tokens), kv_idxs);
    ggml_build_forward_expand(gf, k_store);
    struct ggml_tensor * v_dst = ggml_view_2d(ctx, v_cache, n_embd_kv, n_tokens, v_cache->nb[1], 3 * v_cache->nb[1]);
    ggml_build_forward_expand(gf, ggml_cpy(ctx, Vcur, v_dst));

    struct ggml_tensor * q = ggml_permute(ctx, Qcur, 0, 2, 1, 3);
    struct ggml_tensor * k = ggml_view_3d(ctx, k_cache, head_dim, n_kv, n_head_kv, k_cache->nb[1],
                                          ggml_row_size(k_cache->type, head_dim), 0);

    // attention with explicit soft_max
    struct ggml_tensor * kq = ggml_mul_mat(ctx, k, q);
    kq = ggml_soft_max_ext(ctx, kq, kq_mask, 1.0f / sqrtf((float) head_dim), 0.0f);
    struct ggml_tensor * v_rows = ggml_view_2d(ctx, v_cache, n_embd_kv, n_kv, v_cache->nb[1], 0);
    struct ggml_tensor * vt = ggml_reshape_3d(ctx, ggml_cont(ctx, ggml_transpose(ctx, v_rows)), n_kv, head_dim, n_head_kv);
    struct ggml_tensor * kqv = ggml_mul_mat(ctx, vt, kq);
    struct ggml_tensor * attn_a = ggml_cont_2d(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3), n_embd, n_tokens);

    // attention with flash_attn_ext
    struct ggml_tensor * v = ggml_view_3d(ctx, v_cache, head_dim, n_kv, n_head_kv, v_cache->nb[1],
                                          ggml_row_size(v_cache->type, head_dim), 0);
    struct ggml_tensor * fa = ggml_flash_attn_ext(ctx, q, k, v, kq_mask_16, 1.0f / sqrtf((float) head_dim), 0.0f, 0.0f);
    ggml_prec_set_acc(fa, GGML_PREC_F32);
    struct ggml_tensor * attn_b = ggml_reshape_2d(ctx, fa, n_embd, n_tokens);

    struct ggml_tensor * paths[2] = { attn_a, attn_b };
    cur = ggml_build_forward_select(gf, paths, 2, 1);

    cur = ggml_mul_mat(ctx, wo, cur);
    struct ggml_tensor * ffn_inp = ggml_add(ctx, cur, inpL);

    cur = ggml_mul(ctx, ggml_rms_norm(ctx, ffn_inp, 1e-5f), ffn_norm);

    // dense FFN, split and fused SwiGLU
    struct ggml_tensor * gate = ggml_mul_mat(ctx, w_gate, cur);
    struct ggml_tensor * up = ggml_mul_mat(ctx, w_up, cur);
    struct ggml_tensor * par = ggml_swiglu_split(ctx, gate, up);
    struct ggml_tensor * par2 = ggml_swiglu(ctx, ggml_mul_mat(ctx, w_gate_up, cur));
    par = ggml_add(ctx, par, par2);
    struct ggml_tensor * dense = ggml_mul_mat(ctx, w_down, par);

    // MoE FFN
    struct ggml_tensor * router = ggml_soft_max(ctx, ggml_mul_mat(ctx, gate_inp, cur));
    struct ggml_tensor * selected = ggml_argsort_top_k(ctx, router, n_expert_used);
    struct ggml_tensor * weights = ggml_get_rows(ctx, ggml_reshape_3d(ctx, router, 1, n_expert, n_tokens), selected);
    struct ggml_tensor * cur3 = ggml_reshape_3d(ctx, cur, n_embd, 1, n_tokens);
    struct ggml_tensor * e_up = ggml_add_id(ctx, ggml_mul_mat_id(ctx, up_exps, cur3, selected), up_exps_b, selected);
    struct ggml_tensor * e_gate = ggml_mul_mat_id(ctx, gate_exps, cur3, selected);
    struct ggml_tensor * e_par = ggml_swiglu_split(ctx, e_gate, e_up);
    struct ggml_tensor * experts = ggml_mul(ctx, ggml_mul_mat_id(ctx, down_exps, e_par, selected), weights);
    struct ggml_tensor * moe = ggml_add(ctx,
        ggml_view_2d(ctx, experts, n_embd, n_tokens, experts->nb[2], 0),
        ggml_view_2d(ctx, experts, n_embd, n_tokens, experts->nb[2], experts->nb[1]));

    cur = ggml_add(ctx, ggml_add(ctx, dense, moe), ffn_inp);
    cur = ggml_mul(ctx, ggml_rms_norm(ctx, cur, 1e-5f), out_norm);
    struct ggml_tensor * logits = ggml_mul_mat(ctx, output, cur);
    ggml_set_output(logits);
    ggml_set_name(logits, "result_output");
    ggml_build_forward_expand(gf, logits);

    dump_graph("transformer", ctx, gf);

    // a view of the middle of the graph, and copies of it
    struct ggml_cgraph * gd = ggml_graph_dup(ctx, gf, false);
    dump_graph("transformer dup", ctx, gd);
    struct ggml_cgraph * gc = ggml_new_graph_custom(ctx, 1024, true);
    ggml_graph_cpy(gf, gc);
    dump_graph("transformer cpy into larger graph", ctx, gc);

    printf("get_tensor Qcur=%s result_output=%s missing=%s\n",
           ggml_graph_get_tensor(gf, "Qcur") == Qcur ? "ok" : "wrong",
           ggml_graph_get_tensor(gf, "result_output") == logits ? "ok" : "wrong",
           ggml_graph_get_tensor(gf, "no such tensor") == NULL ? "null" : "wrong");
    printf("node(-1) is logits: %s\n", ggml_graph_node(gf, -1) == logits ? "yes" : "no");
    ggml_graph_print(gf);

    ggml_free(ctx);
}

// convolution, pooling and resampling
static void scenario_conv(void) {
    struct ggml_context * ctx = new_context(64u << 20);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);

    struct ggml_tensor * img = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 16, 12, 3, 2), "img");
    struct ggml_tensor * kern = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 3, 3, 3, 8), "kernel");
    struct ggml_tensor * kern32 = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 3, 8), "kernel32");
    struct ggml_tensor * kdw = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 1, 3), "kernel_dw");
    struct ggml_tensor * seq = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 20, 4, 2), "seq");
    struct ggml_tensor * k1 = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 3, 4, 6), "kernel1d");
    struct ggml_tensor * kt = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 3, 4, 6), "kernel_t1d");
    struct ggml_tensor * kt2 = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 2, 4, 3), "kernel_t2d");

    struct ggml_tensor * c2 = ggml_conv_2d(ctx, kern, img, 1, 1, 1, 1, 1, 1);
    ggml_build_forward_expand(gf, c2);
    ggml_build_forward_expand(gf, ggml_conv_2d_direct(ctx, kern32, img, 2, 2, 0, 0, 1, 1));
    ggml_build_forward_expand(gf, ggml_conv_2d_dw(ctx, kdw, img, 1, 1, 1, 1, 1, 1));
    ggml_build_forward_expand(gf, ggml_im2col(ctx, kern, img, 2, 1, 0, 1, 1, 2, true, GGML_TYPE_F16));

    struct ggml_tensor * p = ggml_pool_2d(ctx, c2, GGML_OP_POOL_AVG, 2, 2, 2, 2, 0.0f, 0.0f);
    ggml_build_forward_expand(gf, p);
    ggml_build_forward_expand(gf, ggml_pool_2d(ctx, c2, GGML_OP_POOL_MAX, 3, 3, 1, 1, 1.0f, 1.0f));
    ggml_build_forward_expand(gf, ggml_upscale(ctx, p, 2, GGML_SCALE_MODE_NEAREST));
    ggml_build_forward_expand(gf, ggml_interpolate(ctx, p, 5, 7, 8, 2, GGML_SCALE_MODE_BILINEAR));
    ggml_build_forward_expand(gf, ggml_pad(ctx, p, 1, 2, 0, 0));
    ggml_build_forward_expand(gf, ggml_roll(ctx, img, 1, -2, 0, 0));
    ggml_build_forward_expand(gf, ggml_group_norm(ctx, img, 3, 1e-6f));

    struct ggml_tensor * c1 = ggml_conv_1d(ctx, k1, seq, 1, 1, 1);
    ggml_build_forward_expand(gf, c1);
    ggml_build_forward_expand(gf, ggml_pool_1d(ctx, c1, GGML_OP_POOL_MAX, 2, 2, 0));
    ggml_build_forward_expand(gf, ggml_conv_transpose_1d(ctx, kt, ggml_cont(ctx, ggml_view_2d(ctx, c1, 20, 6, c1->nb[1], 0)), 1, 0, 1));
    ggml_build_forward_expand(gf, ggml_conv_transpose_2d_p0(ctx, kt2, ggml_view_4d(ctx, img, 16, 12, 3, 1, img->nb[1], img->nb[2], img->nb[3], 0), 2));
    ggml_build_forward_expand(gf, ggml_pad_reflect_1d(ctx, seq, 2, 3));

    dump_graph("conv", ctx, gf);
    ggml_free(ctx);
}

// element-wise, reductions, shapes and the rest
static void scenario_misc(void) {
    struct ggml_context * ctx = new_context(64u << 20);
    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 512, false);

    struct ggml_tensor * a = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 6), "a");
    struct ggml_tensor * b = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 6), "b");
    struct ggml_tensor * row = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8), "row");
    struct ggml_tensor * big = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 6, 4), "big");
    struct ggml_tensor * ts = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3), "timesteps");
    struct ggml_tensor * labels = named(ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 6), "labels");

    struct ggml_tensor * outs[64];
    int n = 0;
    outs[n++] = ggml_add(ctx, a, row);
    outs[n++] = ggml_sub(ctx, a, b);
    outs[n++] = ggml_div(ctx, a, b);
    outs[n++] = ggml_mul_inplace(ctx, b, row);
    outs[n++] = ggml_sqr(ctx, a);
    outs[n++] = ggml_sqrt(ctx, a);
    outs[n++] = ggml_log(ctx, a);
    outs[n++] = ggml_sin(ctx, a);
    outs[n++] = ggml_cos(ctx, a);
    outs[n++] = ggml_scale(ctx, a, 0.25f);
    outs[n++] = ggml_scale_bias(ctx, a, 2.0f, -1.0f);
    outs[n++] = ggml_clamp(ctx, a, -1.0f, 1.0f);
    outs[n++] = ggml_gelu(ctx, a);
    outs[n++] = ggml_gelu_erf(ctx, a);
    outs[n++] = ggml_leaky_relu(ctx, a, 0.1f, false);
    outs[n++] = ggml_sigmoid(ctx, a);
    outs[n++] = ggml_tanh(ctx, a);
    outs[n++] = ggml_elu(ctx, a);
    outs[n++] = ggml_hardswish(ctx, a);
    outs[n++] = ggml_exp(ctx, a);
    outs[n++] = ggml_neg(ctx, a);
    outs[n++] = ggml_abs(ctx, a);
    outs[n++] = ggml_geglu(ctx, a);
    outs[n++] = ggml_reglu_swapped(ctx, a);
    outs[n++] = ggml_norm(ctx, a, 1e-5f);
    outs[n++] = ggml_l2_norm(ctx, a, 1e-6f);
    outs[n++] = ggml_sum(ctx, a);
    outs[n++] = ggml_sum_rows(ctx, a);
    outs[n++] = ggml_mean(ctx, a);
    outs[n++] = ggml_argmax(ctx, a);
    outs[n++] = ggml_count_equal(ctx, labels, labels);
    outs[n++] = ggml_cumsum(ctx, a);
    outs[n++] = ggml_repeat(ctx, row, big);
    outs[n++] = ggml_repeat_4d(ctx, a, 16, 6, 2, 1);
    outs[n++] = ggml_repeat_back(ctx, big, a);
    outs[n++] = ggml_concat(ctx, a, b, 1);
    outs[n++] = ggml_diag_mask_inf(ctx, big, 2);
    outs[n++] = ggml_soft_max(ctx, big);
    outs[n++] = ggml_argsort(ctx, a, GGML_SORT_ORDER_DESC);
    outs[n++] = ggml_top_k(ctx, a, 3);
    outs[n++] = ggml_arange(ctx, 0.0f, 10.0f, 0.5f);
    outs[n++] = ggml_timestep_embedding(ctx, ts, 32, 10000);
    outs[n++] = ggml_acc(ctx, a, ggml_view_1d(ctx, b, 4, 0), a->nb[1], a->nb[2], a->nb[3], 8);
    outs[n++] = ggml_set_1d(ctx, a, ggml_view_1d(ctx, b, 4, 0), 4);
    outs[n++] = ggml_set_2d(ctx, big, a, big->nb[1], big->nb[2]);
    outs[n++] = ggml_cpy(ctx, a, ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 6));
    outs[n++] = ggml_cast(ctx, a, GGML_TYPE_BF16);
    outs[n++] = ggml_dup(ctx, ggml_transpose(ctx, a));
    outs[n++] = ggml_cont_4d(ctx, ggml_permute(ctx, big, 2, 0, 1, 3), 4, 8, 6, 1);
    outs[n++] = ggml_view_4d(ctx, big, 4, 3, 2, 1, big->nb[1], big->nb[2], big->nb[3], 16);
    outs[n++] = ggml_win_part(ctx, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 10, 10), 4);
    outs[n++] = ggml_ssm_conv(ctx, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 7, 6, 2), ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 6));
    outs[n++] = ggml_cross_entropy_loss(ctx, a, b);
    outs[n++] = ggml_out_prod(ctx, a, b);

    for (int i = 0; i < n; i++) {
        ggml_build_forward_expand(gf, outs[i]);
    }
    dump_graph("misc", ctx, gf);

    // ordering without computing, then a clear and a rebuild
    struct ggml_cgraph * go = ggml_new_graph_custom(ctx, 64, false);
    struct ggml_tensor * x = ggml_add(ctx, a, b);
    struct ggml_tensor * y = ggml_mul(ctx, x, a);
    ggml_build_forward_order(go, y);
    ggml_build_forward_expand(go, ggml_scale(ctx, x, 3.0f));
    dump_graph("order then expand", ctx, go);
    ggml_graph_clear(go);
    ggml_build_forward_expand(go, y);
    dump_graph("after clear", ctx, go);

    ggml_free(ctx);
}

// a small training graph: forward, then gradients of a loss with ggml_build_backward_expand
static void scenario_backward(void) {
    struct ggml_context * ctx = new_context(64u << 20);

    struct ggml_tensor * x = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4), "x");
    struct ggml_tensor * w1 = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 16), "w1");
    struct ggml_tensor * b1 = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16), "b1");
    struct ggml_tensor * g1 = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16), "g1");
    struct ggml_tensor * emb = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 10), "emb");
    struct ggml_tensor * ids = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4), "ids");
    struct ggml_tensor * pos = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4), "pos");
    struct ggml_tensor * labels = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 16), "labels");
    struct ggml_tensor * img = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 6, 6, 2, 1), "img");
    struct ggml_tensor * kern = named(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 2, 2), "kern");
    ggml_set_param(w1);
    ggml_set_param(b1);
    ggml_set_param(g1);
    ggml_set_param(emb);
    ggml_set_param(img);

    struct ggml_tensor * e = ggml_get_rows(ctx, emb, ids);
    struct ggml_tensor * h = ggml_add(ctx, x, e);
    h = ggml_mul_mat(ctx, w1, h);
    h = ggml_add(ctx, h, b1);
    h = ggml_mul(ctx, ggml_rms_norm(ctx, h, 1e-6f), g1);
    h = ggml_swiglu_split(ctx, h, ggml_relu(ctx, h));
    h = ggml_silu(ctx, h);

    struct ggml_tensor * r = ggml_reshape_3d(ctx, h, 4, 4, 4);
    r = ggml_rope_ext(ctx, r, pos, NULL, 4, GGML_ROPE_TYPE_NORMAL, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    struct ggml_tensor * p = ggml_cont(ctx, ggml_permute(ctx, r, 1, 0, 2, 3));
    struct ggml_tensor * t = ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, p, 16, 4)));
    struct ggml_tensor * sm = ggml_soft_max_ext(ctx, ggml_diag_mask_inf(ctx, t, 1), NULL, 0.5f, 0.0f);

    struct ggml_tensor * loss1 = ggml_cross_entropy_loss(ctx, sm, labels);
    struct ggml_tensor * v = ggml_view_2d(ctx, sm, 2, 16, sm->nb[1], 4);
    struct ggml_tensor * loss2 = ggml_sum(ctx, ggml_sqr(ctx, ggml_scale(ctx, ggml_cont(ctx, v), 0.5f)));
    struct ggml_tensor * loss3 = ggml_sum(ctx, ggml_mean(ctx, ggml_sum_rows(ctx, ggml_sin(ctx, ggml_div(ctx, ggml_sub(ctx, t, sm), ggml_exp(ctx, t))))));

    struct ggml_tensor * conv = ggml_conv_2d(ctx, kern, img, 1, 1, 0, 0, 1, 1);
    struct ggml_tensor * pooled = ggml_pool_2d(ctx, conv, GGML_OP_POOL_AVG, 2, 2, 2, 2, 0.0f, 0.0f);
    struct ggml_tensor * loss4 = ggml_sum(ctx, ggml_log(ctx, ggml_sqr(ctx, pooled)));

    struct ggml_tensor * loss = ggml_add(ctx, ggml_add(ctx, loss1, loss2), ggml_add(ctx, loss3, loss4));
    ggml_set_loss(loss);
    ggml_set_name(loss, "loss");

    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 1024, true);
    ggml_build_forward_expand(gf, loss);
    struct ggml_cgraph * gb = ggml_graph_dup(ctx, gf, true);
    ggml_build_backward_expand(ctx, gb, NULL);

    dump_graph("backward: forward part", ctx, gf);
    dump_graph("backward: full", ctx, gb);

    ggml_graph_reset(gb);
    struct ggml_tensor * loss_grad = ggml_graph_get_grad(gb, loss);
    printf("loss grad after reset: %g (acc is grad: %s)\n", loss_grad ? (double) *(float *) loss_grad->data : -1.0,
           loss_grad == ggml_graph_get_grad_acc(gb, loss) ? "yes" : "no");
    struct ggml_tensor * w1_grad = ggml_graph_get_grad(gb, w1);
    printf("w1 grad: %s op=%s\n", w1_grad ? w1_grad->name : "(none)", w1_grad ? ggml_op_desc(w1_grad) : "-");
    ggml_graph_print(gb);
    dump_dot(ctx, gb, gf);

    ggml_free(ctx);
}

// more gradient rules, with caller-provided gradient accumulators for the parameters
static void scenario_backward2(void) {
    struct ggml_context * ctx = new_context(64u << 20);

    struct ggml_tensor * a = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 4), "a");
    struct ggml_tensor * b = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 4), "b");
    struct ggml_tensor * c = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 6), "c");
    struct ggml_tensor * e = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 5), "e");
    struct ggml_tensor * r = named(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3), "r");
    struct ggml_tensor * ids = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4), "ids");
    struct ggml_tensor * pos = named(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 12), "pos");
    ggml_set_param(a);
    ggml_set_param(b);
    ggml_set_param(c);
    ggml_set_param(e);
    ggml_set_param(r);

    struct ggml_tensor * t = ggml_sub(ctx, a, b);
    t = ggml_mul(ctx, t, c);
    t = ggml_div(ctx, t, b);
    t = ggml_sqrt(ctx, ggml_sqr(ctx, t));
    t = ggml_cos(ctx, t);
    t = ggml_neg(ctx, ggml_abs(ctx, t));
    t = ggml_softplus(ctx, ggml_expm1(ctx, t));
    t = ggml_add(ctx, t, ggml_repeat(ctx, c, a));
    t = ggml_acc(ctx, t, ggml_view_2d(ctx, b, 3, 2, b->nb[1], 4), t->nb[1], t->nb[2], t->nb[3], 8);
    t = ggml_set_2d(ctx, t, ggml_cont(ctx, ggml_view_2d(ctx, a, 2, 2, a->nb[1], 0)), t->nb[1], t->nb[1] + 4);
    t = ggml_cpy(ctx, t, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 4));
    t = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, t, 3, 2, 4), 2, 0, 1, 3));
    t = ggml_dup(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, t, 4, 6)));
    struct ggml_tensor * l1 = ggml_sum(ctx, ggml_add(ctx, ggml_sum_rows(ctx, t), ggml_repeat_back(ctx, t, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, 4))));

    struct ggml_tensor * g = ggml_get_rows(ctx, e, ids);
    struct ggml_tensor * sq = ggml_mul_mat(ctx, g, g);
    sq = ggml_soft_max_ext(ctx, ggml_diag_mask_zero(ctx, sq, 1), NULL, 0.3f, 0.0f);
    struct ggml_tensor * l2 = ggml_sum(ctx, ggml_log(ctx, sq));

    int sections[GGML_MROPE_SECTIONS] = { 2, 2, 0, 0 };
    struct ggml_tensor * rm = ggml_rope_multi(ctx, r, pos, NULL, 8, sections, GGML_ROPE_TYPE_MROPE, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    struct ggml_tensor * l3 = ggml_mean(ctx, ggml_reshape_1d(ctx, ggml_cont(ctx, rm), 48));

    struct ggml_tensor * loss = ggml_add(ctx, ggml_add(ctx, l1, l2), ggml_reshape_1d(ctx, l3, 1));
    ggml_set_loss(loss);
    ggml_set_name(loss, "loss");

    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 512, true);
    ggml_build_forward_expand(gf, loss);
    dump_graph("backward2: forward", ctx, gf);

    struct ggml_tensor * accs[512] = { NULL };
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        struct ggml_tensor * node = ggml_graph_node(gf, i);
        if (node->flags & GGML_TENSOR_FLAG_PARAM) {
            accs[i] = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, node->ne);
            ggml_format_name(accs[i], "acc %s", node->name);
        }
    }
    ggml_build_backward_expand(ctx, gf, accs);
    dump_graph("backward2: with gradients", ctx, gf);
    ggml_graph_reset(gf);
    printf("acc a after reset: %g\n", (double) *(float *) ggml_graph_get_grad_acc(gf, a)->data);
    ggml_free(ctx);
}

// graph views, fusion checks, evaluation order and the hash helpers
static void scenario_internals(void) {
    struct ggml_context * ctx = new_context(16u << 20);
    struct ggml_tensor * x = named(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 4), "x");
    struct ggml_tensor * w = named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16), "w");
    struct ggml_tensor * n = ggml_rms_norm(ctx, x, 1e-6f);
    struct ggml_tensor * m = ggml_mul(ctx, n, w);
    struct ggml_tensor * s = ggml_add(ctx, m, x);
    struct ggml_tensor * o = ggml_scale(ctx, ggml_add(ctx, s, n), 0.5f);
    ggml_set_output(o);

    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 64, false);
    ggml_build_forward_expand(gf, o);
    dump_graph("internals", ctx, gf);

    struct abi_cgraph view = ggml_graph_view(gf, 1, 3);
    printf("view: size=%d n_nodes=%d n_leafs=%d grads=%s order=%d uid=%llu same_hash=%s first=%s\n", view.size,
           view.n_nodes, view.n_leafs, view.grads ? "yes" : "no", view.order, (unsigned long long) view.uid,
           view.visited_hash_set.keys == abi(gf)->visited_hash_set.keys ? "yes" : "no",
           view.nodes[0] == ggml_graph_node(gf, 1) ? "node 1" : "other");
    printf("view node count via API: %d\n", ggml_graph_n_nodes((struct ggml_cgraph *) &view));

    const enum ggml_op ops[] = { GGML_OP_RMS_NORM, GGML_OP_MUL, GGML_OP_ADD, GGML_OP_ADD, GGML_OP_SCALE };
    const int idx01[] = { 0, 1 };
    const int idx12[] = { 1, 2 };
    const int idx04[] = { 0, 1, 2, 3, 4 };
    const int out1[] = { 1 };
    const int out2[] = { 2 };
    const int out4[] = { 4 };
    const int out0_4[] = { 0, 4 };
    printf("fuse rms_norm+mul out=1: %d\n", ggml_can_fuse_subgraph_ext(gf, idx01, 2, ops, out1, 1));
    printf("fuse mul+add out=2: %d\n", ggml_can_fuse_subgraph_ext(gf, idx12, 2, ops + 1, out2, 1));
    printf("fuse all out=4: %d\n", ggml_can_fuse_subgraph_ext(gf, idx04, 5, ops, out4, 1));
    printf("fuse all out=0,4: %d\n", ggml_can_fuse_subgraph_ext(gf, idx04, 5, ops, out0_4, 2));
    printf("fuse wrong ops: %d\n", ggml_can_fuse_subgraph_ext(gf, idx01, 2, ops + 1, out1, 1));

    // right-to-left evaluation order, set through the ABI
    struct ggml_cgraph * gr = ggml_new_graph_custom(ctx, 64, false);
    ((struct abi_cgraph *) gr)->order = 1;
    ggml_build_forward_expand(gr, o);
    dump_graph("internals right-to-left", ctx, gr);

    const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 6, 100, 4096, 4099, 4100, 2147483659u, 3000000000u };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        printf("hash_size(%zu) = %zu\n", sizes[i], ggml_hash_size(sizes[i]));
    }
    struct abi_hash_set hs = ggml_hash_set_new(100);
    printf("hash_set_new(100): size=%zu used[0..]=%u\n", hs.size, hs.used[0] | hs.used[hs.size / 32]);
    ggml_hash_set_free(&hs);
    ggml_free(ctx);
}

// overhead numbers and small structural facts
static void scenario_sizes(void) {
    printf("overhead default=%zu\n", ggml_graph_overhead());
    const size_t sizes[] = { 0, 1, 2, 3, 16, 100, 1000, 2048, 4096, 8192, 65536 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        printf("overhead size=%zu grads=0: %zu grads=1: %zu\n", sizes[i], ggml_graph_overhead_custom(sizes[i], false),
               ggml_graph_overhead_custom(sizes[i], true));
    }
    struct ggml_context * ctx = new_context(ggml_graph_overhead() + 16 * ggml_tensor_overhead());
    size_t before = ggml_used_mem(ctx);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    printf("new_graph used %zu size=%d n_nodes=%d\n", ggml_used_mem(ctx) - before, ggml_graph_size(g), ggml_graph_n_nodes(g));
    ggml_free(ctx);
}

struct scenario {
    const char * name;
    void (*run)(void);
};

static const struct scenario scenarios[] = {
    { "sizes", scenario_sizes },
    { "transformer", scenario_transformer },
    { "conv", scenario_conv },
    { "misc", scenario_misc },
    { "backward", scenario_backward },
    { "backward2", scenario_backward2 },
    { "internals", scenario_internals },
};

int main(int argc, char ** argv) {
    const int n = (int) (sizeof(scenarios) / sizeof(scenarios[0]));
    ggml_log_set(log_to_stdout, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < n; i++) {
        int selected = argc < 2;
        for (int j = 1; j < argc; j++) {
            selected |= strcmp(argv[j], scenarios[i].name) == 0;
        }
        if (selected) {
            printf("### %s\n", scenarios[i].name);
            scenarios[i].run();
        }
    }
    return 0;
}
