// logits-dump: runs a llama.cpp model on a fixed token sequence on the CPU and writes the logits
// of every position to a file, so that two builds (llama.cpp on the reference ggml and on
// ggml-rs) can be compared. See scripts/compare-logits.
//
//   logits-dump MODEL OUT N_THREADS [auto|on|off]   flash attention (default auto)
//   logits-dump compare REF OURS THRESHOLD
//
// Dump: N_TOKENS token ids drawn with a fixed seed from [0, n_vocab), decoded twice, each time in
// a fresh context: "full" (one batch) and "split" (two batches, the second one attending to the
// KV cache or recurrent state the first one left). Models that need an encoder pass (the
// encoder-decoder ones, and those test-llama-archs encodes first: the diffusion models, whose
// attention is not causal) get llama_encode before llama_decode and the full run only.
// Output: int32 n_tokens, int32 n_vocab, int32 n_runs, then n_runs * n_tokens * n_vocab float32.
// Exit status: 0 written, 1 error, 3 skipped (no decoder, or a pooled embedding model: no logits).
//
// Compare: prints the normalized MSE sum((ours-ref)^2) / sum(ref^2) of each run and exits 0 when
// every one is finite and <= THRESHOLD, 1 otherwise (2 when the files do not match in shape).

#include "llama.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

// 80 tokens in one ubatch and 19 + 61 in two: ggml's CPU FLASH_ATTN_EXT takes its tiled F32 path
// for 64 query rows or more and its row-by-row path (F16 queries and value sums) below that, so
// the full run exercises the one and the split run the other
static const int N_TOKENS = 80;
static const int SPLIT_AT = 19; // odd, so neither part is a multiple of a SIMD width
static const int EXIT_SKIP = 3;

// the architectures test-llama-archs runs through llama_encode before llama_decode
static bool needs_encode(const llama_model * model) {
    char arch[64] = {0};
    llama_model_meta_val_str(model, "general.architecture", arch, sizeof(arch));
    for (const char * name : {"t5", "dream", "llada", "llada-moe", "rnd1"}) {
        if (strcmp(arch, name) == 0) {
            return true;
        }
    }
    return llama_model_has_encoder(model);
}

static void quiet_log(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LOGITS_DUMP_VERBOSE") != nullptr) {
        fputs(text, stderr);
    }
}

// decodes tokens in batches of the given sizes in one fresh context; appends the logits of every
// position to out; returns false on failure, sets *skip when the model yields no logits
static bool run(llama_model * model, llama_context_params cparams, const std::vector<llama_token> & tokens,
                const std::vector<int> & parts, bool encode, int n_vocab, std::vector<float> & out, bool * skip) {
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == nullptr) {
        fprintf(stderr, "logits-dump: failed to create a context\n");
        return false;
    }
    const enum llama_pooling_type pooling = llama_pooling_type(ctx);
    if (pooling != LLAMA_POOLING_TYPE_NONE && pooling != LLAMA_POOLING_TYPE_UNSPECIFIED) {
        fprintf(stderr, "logits-dump: pooled embedding model (pooling type %d), no logits\n", (int) pooling);
        *skip = true;
        llama_free(ctx);
        return false;
    }
    bool ok  = true;
    int  pos = 0;
    for (int n : parts) {
        llama_batch batch = llama_batch_init(n, 0, 1);
        for (int i = 0; i < n; i++) {
            batch.token[i]     = tokens[pos + i];
            batch.pos[i]       = pos + i;
            batch.n_seq_id[i]  = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i]    = true;
        }
        batch.n_tokens = n;
        if (encode && llama_encode(ctx, batch) != 0) {
            fprintf(stderr, "logits-dump: llama_encode failed at position %d\n", pos);
            ok = false;
        } else if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "logits-dump: llama_decode failed at position %d\n", pos);
            ok = false;
        } else {
            for (int i = 0; i < n; i++) {
                const float * logits = llama_get_logits_ith(ctx, i);
                out.insert(out.end(), logits, logits + n_vocab);
            }
        }
        llama_batch_free(batch);
        pos += n;
        if (!ok) {
            break;
        }
    }
    llama_free(ctx);
    return ok;
}

static int dump(const char * model_path, const char * out_path, int n_threads, const char * fa) {
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers       = 0;
    llama_model * model        = llama_model_load_from_file(model_path, mparams);
    if (model == nullptr) {
        fprintf(stderr, "logits-dump: cannot load %s\n", model_path);
        return 1;
    }
    if (!llama_model_has_decoder(model)) {
        fprintf(stderr, "logits-dump: %s is encoder-only, no logits\n", model_path);
        llama_model_free(model);
        return EXIT_SKIP;
    }

    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> pick(0, n_vocab - 1);
    std::vector<llama_token> tokens(N_TOKENS);
    for (llama_token & t : tokens) {
        t = pick(rng);
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx                = 0; // the model's training context (256 for test-llama-archs models)
    cparams.n_batch              = N_TOKENS;
    cparams.n_ubatch             = N_TOKENS;
    cparams.n_threads            = n_threads;
    cparams.n_threads_batch      = n_threads;
    cparams.flash_attn_type      = strcmp(fa, "on") == 0  ? LLAMA_FLASH_ATTN_TYPE_ENABLED :
                                   strcmp(fa, "off") == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED :
                                                            LLAMA_FLASH_ATTN_TYPE_AUTO;

    const bool encode = needs_encode(model);
    std::vector<std::vector<int>> runs = {{N_TOKENS}};
    if (!encode) {
        runs.push_back({SPLIT_AT, N_TOKENS - SPLIT_AT});
    }
    std::vector<float> logits;
    bool skip = false;
    for (const std::vector<int> & parts : runs) {
        if (!run(model, cparams, tokens, parts, encode, n_vocab, logits, &skip)) {
            llama_model_free(model);
            return skip ? EXIT_SKIP : 1;
        }
    }
    llama_model_free(model);

    FILE * f = fopen(out_path, "wb");
    if (f == nullptr) {
        fprintf(stderr, "logits-dump: cannot write %s\n", out_path);
        return 1;
    }
    const int32_t header[3] = {N_TOKENS, n_vocab, (int32_t) runs.size()};
    const bool written = fwrite(header, sizeof(header), 1, f) == 1 &&
                         fwrite(logits.data(), sizeof(float), logits.size(), f) == logits.size();
    if (fclose(f) != 0 || !written) {
        fprintf(stderr, "logits-dump: cannot write %s\n", out_path);
        return 1;
    }
    return 0;
}

static bool load(const char * path, int32_t header[3], std::vector<float> & data) {
    FILE * f = fopen(path, "rb");
    if (f == nullptr) {
        return false;
    }
    bool ok = fread(header, sizeof(int32_t), 3, f) == 3 && header[0] > 0 && header[1] > 0 && header[2] > 0;
    if (ok) {
        data.resize((size_t) header[0] * header[1] * header[2]);
        ok = fread(data.data(), sizeof(float), data.size(), f) == data.size();
    }
    fclose(f);
    return ok;
}

static int compare(const char * ref_path, const char * ours_path, double threshold) {
    int32_t hr[3], ho[3];
    std::vector<float> ref, ours;
    if (!load(ref_path, hr, ref) || !load(ours_path, ho, ours) || memcmp(hr, ho, sizeof(hr)) != 0) {
        fprintf(stderr, "logits-dump: %s and %s are unreadable or differ in shape\n", ref_path, ours_path);
        return 2;
    }
    const char * names[] = {"full", "split"};
    const size_t per_run = (size_t) hr[0] * hr[1];
    bool pass = true;
    for (int r = 0; r < hr[2]; r++) {
        double err = 0.0, norm = 0.0;
        for (size_t i = r * per_run; i < (r + 1) * per_run; i++) {
            const double d = (double) ours[i] - ref[i];
            err += d * d;
            norm += (double) ref[i] * ref[i];
        }
        const double nmse = err / norm; // NaN when either side produced NaN
        pass = pass && std::isfinite(nmse) && nmse <= threshold;
        printf("%s%s %.3e", r ? " " : "", r < 2 ? names[r] : "run", nmse);
    }
    printf("\n");
    return pass ? 0 : 1;
}

int main(int argc, char ** argv) {
    if (argc == 5 && strcmp(argv[1], "compare") == 0) {
        return compare(argv[2], argv[3], atof(argv[4]));
    }
    if (argc == 4 || argc == 5) {
        return dump(argv[1], argv[2], atoi(argv[3]), argc == 5 ? argv[4] : "auto");
    }
    fprintf(stderr, "usage: %s MODEL OUT N_THREADS [auto|on|off]\n       %s compare REF OURS THRESHOLD\n", argv[0],
            argv[0]);
    return 1;
}
