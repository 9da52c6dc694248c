// gen-model: writes a random-weight Llama-style model as GGUF, for end-to-end comparisons of
// llama.cpp on two ggml builds (scripts/llama-quality, scripts/llama-bench-compare,
// scripts/cuda-emulator-llama).
//
//   [GEN_MODEL_SIZE=tiny|tiny-moe] gen-model VOCAB.gguf OUT.gguf [f32|f16|bf16] [SEED]   (defaults: f32, 42)
//
// Shape: width 1024, 12 layers, 16 heads of 64, 4 KV heads (GQA), FFN 2816, context 2048,
// rope theta 10000, RMS eps 1e-5, a separate (untied) output.weight, like Llama 2.
// GEN_MODEL_SIZE=tiny: width 256, 2 layers, 4 heads of 64, 2 KV heads (still GQA), FFN 768,
// context 512, for the emulated GPU, where every product runs on host threads. Every row length
// (256, 768) is a multiple of 256, so llama-quantize's K-quants apply to every matrix: a row that
// is not gets a fallback type (Q4_K to Q5_0, Q6_K to Q8_0). GEN_MODEL_SIZE=tiny-moe: the tiny
// shape with a mixture of 8 experts of FFN 512 in place of each FFN, 2 used a token (Mixtral's
// layout: a router ffn_gate_inp and 3-D ffn_{gate,up,down}_exps). The default file is unchanged
// byte for byte by these options, as scripts/llama-quality caches it.
// The tokenizer is every tokenizer.* key of VOCAB.gguf (the reference tree's
// models/ggml-vocab-llama-spm.gguf: a 32000-token SPM vocabulary, no weights).
//
// Weights: uniform with standard deviation gain/sqrt(fan_in) from a splitmix64 stream seeded by
// the tensor name and SEED, so a tensor's values do not depend on the output type or on the order
// of the tensors: the f16 and bf16 files are the f32 file rounded. The norms are 1, the token
// embeddings have unit variance (the first RMS norm rescales them anyway) and the output
// projection has gain 3, so the logits spread over a few units and the softmax is neither flat
// nor one-hot. 1-D tensors stay F32 whatever the type, as llama.cpp's own converters do.
//
// The file is written by gguf_write_to_file of the linked library (ggml-rs when built by
// scripts/llama-quality), so the model also exercises that GGUF writer.

#include "ggml.h"
#include "gguf.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shape {
    int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
    int64_t n_expert, n_expert_used; // 0: a dense FFN; otherwise each expert's FFN is n_ff
};
static const struct shape SHAPE_DEFAULT = { 1024, 12, 16, 4, 2816, 2048, 0, 0 };
static const struct shape SHAPE_TINY = { 256, 2, 4, 2, 768, 512, 0, 0 };
static const struct shape SHAPE_TINY_MOE = { 256, 2, 4, 2, 512, 512, 8, 2 };

// llama_ftype values for general.file_type (llama.h)
enum { FTYPE_ALL_F32 = 0, FTYPE_MOSTLY_F16 = 1, FTYPE_MOSTLY_BF16 = 32 };

static uint64_t splitmix64(uint64_t * state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t name_seed(const char * name, uint64_t seed) {
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (const char * p = name; *p; ++p) {
        h ^= (uint8_t) *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

// n values uniform on [-a, a) with a = sqrt(3) * std (a uniform's variance is a^2 / 3)
static void fill_uniform(float * dst, int64_t n, float std, uint64_t state) {
    const float a = sqrtf(3.0f) * std;
    for (int64_t i = 0; i < n; ++i) {
        const float u = (float) (splitmix64(&state) >> 40) * (1.0f / 16777216.0f); // [0, 1), 24 bits
        dst[i] = (2.0f * u - 1.0f) * a;
    }
}

struct writer {
    struct ggml_context * ctx;
    struct gguf_context * gguf;
    enum ggml_type type; // of the matrices
    uint64_t seed;
    float * scratch; // f32 values of one tensor before conversion
};

// Adds a tensor of shape ne0 x ne1 x ne2 (ne1 == 1: a 1-D norm; ne2 > 1: a stack of experts'
// matrices) filled with std gain/sqrt(ne0), or with ones when gain is 0.
static void add_tensor(struct writer * w, const char * name, int64_t ne0, int64_t ne1, int64_t ne2, float gain) {
    const bool matrix = ne1 > 1;
    const enum ggml_type type = matrix ? w->type : GGML_TYPE_F32;
    struct ggml_tensor * t = matrix ? ggml_new_tensor_3d(w->ctx, type, ne0, ne1, ne2) : ggml_new_tensor_1d(w->ctx, type, ne0);
    ggml_set_name(t, name);
    const int64_t n = ne0 * ne1 * ne2;
    if (gain == 0.0f) {
        for (int64_t i = 0; i < n; ++i) {
            w->scratch[i] = 1.0f;
        }
    } else {
        fill_uniform(w->scratch, n, gain / sqrtf((float) ne0), name_seed(name, w->seed));
    }
    switch (type) {
        case GGML_TYPE_F32:  memcpy(t->data, w->scratch, (size_t) n * sizeof(float)); break;
        case GGML_TYPE_F16:  ggml_fp32_to_fp16_row(w->scratch, t->data, n); break;
        case GGML_TYPE_BF16: ggml_fp32_to_bf16_row(w->scratch, t->data, n); break;
        default:             fprintf(stderr, "gen-model: unsupported type\n"); exit(1);
    }
    gguf_add_tensor(w->gguf, t);
}

// Copies key `id` of src into dst, whatever its type.
static void copy_kv(struct gguf_context * dst, const struct gguf_context * src, int64_t id) {
    const char * key = gguf_get_key(src, id);
    switch (gguf_get_kv_type(src, id)) {
        case GGUF_TYPE_UINT8:   gguf_set_val_u8(dst, key, gguf_get_val_u8(src, id)); break;
        case GGUF_TYPE_INT8:    gguf_set_val_i8(dst, key, gguf_get_val_i8(src, id)); break;
        case GGUF_TYPE_UINT16:  gguf_set_val_u16(dst, key, gguf_get_val_u16(src, id)); break;
        case GGUF_TYPE_INT16:   gguf_set_val_i16(dst, key, gguf_get_val_i16(src, id)); break;
        case GGUF_TYPE_UINT32:  gguf_set_val_u32(dst, key, gguf_get_val_u32(src, id)); break;
        case GGUF_TYPE_INT32:   gguf_set_val_i32(dst, key, gguf_get_val_i32(src, id)); break;
        case GGUF_TYPE_FLOAT32: gguf_set_val_f32(dst, key, gguf_get_val_f32(src, id)); break;
        case GGUF_TYPE_UINT64:  gguf_set_val_u64(dst, key, gguf_get_val_u64(src, id)); break;
        case GGUF_TYPE_INT64:   gguf_set_val_i64(dst, key, gguf_get_val_i64(src, id)); break;
        case GGUF_TYPE_FLOAT64: gguf_set_val_f64(dst, key, gguf_get_val_f64(src, id)); break;
        case GGUF_TYPE_BOOL:    gguf_set_val_bool(dst, key, gguf_get_val_bool(src, id)); break;
        case GGUF_TYPE_STRING:  gguf_set_val_str(dst, key, gguf_get_val_str(src, id)); break;
        case GGUF_TYPE_ARRAY: {
            const size_t n = gguf_get_arr_n(src, id);
            const enum gguf_type elem = gguf_get_arr_type(src, id);
            if (elem == GGUF_TYPE_STRING) {
                const char ** strs = malloc(n * sizeof(*strs));
                for (size_t i = 0; i < n; ++i) {
                    strs[i] = gguf_get_arr_str(src, id, i);
                }
                gguf_set_arr_str(dst, key, strs, n);
                free(strs);
            } else {
                gguf_set_arr_data(dst, key, elem, gguf_get_arr_data(src, id), n);
            }
            break;
        }
        default: fprintf(stderr, "gen-model: key %s has an unknown type\n", key); exit(1);
    }
}

// The number of tokens, from tokenizer.ggml.tokens.
static uint32_t copy_tokenizer(struct gguf_context * dst, const char * vocab_path) {
    struct gguf_init_params params = { .no_alloc = true, .ctx = NULL };
    struct gguf_context * vocab = gguf_init_from_file(vocab_path, params);
    if (!vocab) {
        fprintf(stderr, "gen-model: cannot read %s\n", vocab_path);
        exit(1);
    }
    for (int64_t id = 0; id < gguf_get_n_kv(vocab); ++id) {
        if (strncmp(gguf_get_key(vocab, id), "tokenizer.", 10) == 0) {
            copy_kv(dst, vocab, id);
        }
    }
    const int64_t tokens = gguf_find_key(vocab, "tokenizer.ggml.tokens");
    if (tokens < 0) {
        fprintf(stderr, "gen-model: %s has no tokenizer.ggml.tokens\n", vocab_path);
        exit(1);
    }
    const uint32_t n_vocab = (uint32_t) gguf_get_arr_n(vocab, tokens);
    gguf_free(vocab);
    return n_vocab;
}

int main(int argc, char ** argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s VOCAB.gguf OUT.gguf [f32|f16|bf16] [SEED]\n", argv[0]);
        return 2;
    }
    const char * type_name = argc > 3 ? argv[3] : "f32";
    enum ggml_type type;
    uint32_t ftype;
    if (strcmp(type_name, "f32") == 0) {
        type = GGML_TYPE_F32, ftype = FTYPE_ALL_F32;
    } else if (strcmp(type_name, "f16") == 0) {
        type = GGML_TYPE_F16, ftype = FTYPE_MOSTLY_F16;
    } else if (strcmp(type_name, "bf16") == 0) {
        type = GGML_TYPE_BF16, ftype = FTYPE_MOSTLY_BF16;
    } else {
        fprintf(stderr, "gen-model: type %s: expected f32, f16 or bf16 (quantize with llama-quantize)\n", type_name);
        return 2;
    }
    const uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 42;
    const char * size = getenv("GEN_MODEL_SIZE");
    struct shape sh = SHAPE_DEFAULT;
    if (size && strcmp(size, "tiny") == 0) {
        sh = SHAPE_TINY;
    } else if (size && strcmp(size, "tiny-moe") == 0) {
        sh = SHAPE_TINY_MOE;
    } else if (size && *size) {
        fprintf(stderr, "gen-model: GEN_MODEL_SIZE=%s: expected tiny or tiny-moe (or unset)\n", size);
        return 2;
    }
    const int64_t n_embd = sh.n_embd, n_layer = sh.n_layer, n_ff = sh.n_ff, n_expert = sh.n_expert;
    const int64_t n_ffn = n_expert > 0 ? n_expert : 1; // FFN matrices a layer stacks
    const int64_t head_dim = n_embd / sh.n_head, n_embd_kv = sh.n_head_kv * head_dim;
    char model_name[64];
    snprintf(model_name, sizeof(model_name), "ggml-rs random llama %lldx%lld", (long long) n_embd, (long long) n_layer);

    struct gguf_context * gguf = gguf_init_empty();
    gguf_set_val_str(gguf, "general.architecture", "llama");
    gguf_set_val_str(gguf, "general.name", model_name);
    gguf_set_val_u32(gguf, "general.file_type", ftype);
    const uint32_t n_vocab = copy_tokenizer(gguf, argv[1]);
    gguf_set_val_u32(gguf, "llama.vocab_size", n_vocab);
    gguf_set_val_u32(gguf, "llama.context_length", (uint32_t) sh.n_ctx);
    gguf_set_val_u32(gguf, "llama.embedding_length", (uint32_t) n_embd);
    gguf_set_val_u32(gguf, "llama.block_count", (uint32_t) n_layer);
    gguf_set_val_u32(gguf, "llama.feed_forward_length", (uint32_t) n_ff);
    gguf_set_val_u32(gguf, "llama.attention.head_count", (uint32_t) sh.n_head);
    gguf_set_val_u32(gguf, "llama.attention.head_count_kv", (uint32_t) sh.n_head_kv);
    gguf_set_val_u32(gguf, "llama.rope.dimension_count", (uint32_t) head_dim);
    gguf_set_val_f32(gguf, "llama.rope.freq_base", 10000.0f);
    gguf_set_val_f32(gguf, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (n_expert > 0) {
        gguf_set_val_u32(gguf, "llama.expert_count", (uint32_t) n_expert);
        gguf_set_val_u32(gguf, "llama.expert_used_count", (uint32_t) sh.n_expert_used);
    }

    // every tensor's data lives in one context until the file is written
    const int64_t n_tensors = 3 + 10 * n_layer;
    const int64_t n_router = n_expert > 0 ? n_embd * n_expert : 0;
    const int64_t n_matrix = 2 * n_embd * n_vocab +
        n_layer * (2 * n_embd * n_embd + 2 * n_embd * n_embd_kv + 3 * n_embd * n_ff * n_ffn + n_router);
    const int64_t n_norm = (2 * n_layer + 1) * n_embd;
    const size_t mem = (size_t) n_tensors * (ggml_tensor_overhead() + GGML_MEM_ALIGN) +
        (size_t) n_matrix * ggml_type_size(type) + (size_t) n_norm * sizeof(float);
    struct ggml_init_params ip = { .mem_size = mem, .mem_buffer = NULL, .no_alloc = false };
    struct writer w = {
        .ctx = ggml_init(ip),
        .gguf = gguf,
        .type = type,
        .seed = seed,
        .scratch = malloc((size_t) n_embd * n_vocab * sizeof(float)), // the largest tensor
    };
    if (!w.ctx || !w.scratch) {
        fprintf(stderr, "gen-model: out of memory (%zu bytes)\n", mem);
        return 1;
    }

    add_tensor(&w, "token_embd.weight", n_embd, n_vocab, 1, sqrtf((float) n_embd));
    for (int il = 0; il < n_layer; ++il) {
        char name[64];
#define LAYER(suffix, ne0, ne1, ne2, gain)                             \
    snprintf(name, sizeof(name), "blk.%d." suffix ".weight", il);      \
    add_tensor(&w, name, ne0, ne1, ne2, gain)
        LAYER("attn_norm", n_embd, 1, 1, 0.0f);
        LAYER("attn_q", n_embd, n_embd, 1, 1.0f);
        LAYER("attn_k", n_embd, n_embd_kv, 1, 1.0f);
        LAYER("attn_v", n_embd, n_embd_kv, 1, 1.0f);
        LAYER("attn_output", n_embd, n_embd, 1, 1.0f);
        LAYER("ffn_norm", n_embd, 1, 1, 0.0f);
        if (n_expert > 0) {
            LAYER("ffn_gate_inp", n_embd, n_expert, 1, 8.0f);
            LAYER("ffn_gate_exps", n_embd, n_ff, n_expert, 1.0f);
            LAYER("ffn_up_exps", n_embd, n_ff, n_expert, 1.0f);
            LAYER("ffn_down_exps", n_ff, n_embd, n_expert, 1.0f);
        } else {
            LAYER("ffn_gate", n_embd, n_ff, 1, 1.0f);
            LAYER("ffn_up", n_embd, n_ff, 1, 1.0f);
            LAYER("ffn_down", n_ff, n_embd, 1, 1.0f);
        }
#undef LAYER
    }
    add_tensor(&w, "output_norm.weight", n_embd, 1, 1, 0.0f);
    add_tensor(&w, "output.weight", n_embd, n_vocab, 1, 3.0f);
    free(w.scratch);

    if (!gguf_write_to_file(gguf, argv[2], false)) {
        fprintf(stderr, "gen-model: cannot write %s\n", argv[2]);
        return 1;
    }
    printf("gen-model: wrote %s (%s, %lld tensors, %u-token vocabulary, seed %llu)\n", argv[2], type_name,
           (long long) gguf_get_n_tensors(gguf), n_vocab, (unsigned long long) seed);
    gguf_free(gguf);
    ggml_free(w.ctx);
    return 0;
}
