# Sourced, not run: what the scripts that evaluate the stock llama.cpp programs on our library
# share (scripts/llama-quality, scripts/cuda-emulator-llama): the reference programs, the swap of
# our libraries under them, the text, the random-weight models of c-tests/tools/gen-model.c and
# the numbers read back from llama-perplexity's log.
#
# The sourcing script sets, before calling anything here:
#   root     the repository          prefix   our installed library (PREFIX/lib)
#   work     its cache: work/models, work/logs, work/text.txt, work/gen-model
#   threads  for llama-quantize and llama-imatrix
#   me       its name, for messages
# and may set model_size (GEN_MODEL_SIZE of gen-model: "" for the default shape, tiny or
# tiny-moe), which names the models (and their logs) of the other shapes apart; it may change
# between calls.
# Environment read here: QUANTIZE_ARGS (extra llama-quantize options); the reference comes from
# scripts/reference (its cache, GGML_REF_CACHE).

src=$("$root/scripts/reference" src)
vocab=$src/models/ggml-vocab-llama-spm.gguf
text=$work/text.txt
gen=$work/gen-model
mkdir -p "$work/models" "$work/logs"

# llama_programs PROG...: builds the reference programs (where missing) and sets bin, the
# directory that holds them
llama_programs() {
  bin=$(nice "$root/scripts/reference" build "$@")/bin || { echo "$me: reference build failed" >&2; exit 1; }
}

# ours COMMAND...: the reference programs with PREFIX's ggml first on the library path
ours() { LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
# llama_check_swap: under `ours`, llama-perplexity really loads PREFIX's ggml
llama_check_swap() {
  local resolved
  resolved=$(ours ldd "$bin/llama-perplexity" | awk '$1 == "libggml-base.so.0" {print $3}')
  [[ $resolved == "$prefix/lib/libggml-base.so.0" ]] ||
    { echo "$me: with PREFIX first, libggml-base.so.0 resolves to '$resolved'" >&2; exit 1; }
}

# llama_text: work/text.txt, the prose of the reference tree's README.md and docs/*.md (in name
# order), code blocks, tables, HTML, bullet lists and link targets removed, first 16000 bytes;
# rewritten only when it changes, so that caches newer than it stay valid
llama_text() {
  for f in "$src/README.md" "$src"/docs/*.md; do cat "$f"; echo; done |
    awk '/^[[:space:]]*```/ { code = !code; next } !code && NF && !/^[[:space:]]*[|<!>[-]/' |
    sed -e 's/^#* *//' -e 's/[`*]//g' -e 's/\[\([^]]*\)\]([^)]*)/\1/g' | head -c 16000 > "$text.tmp" || true
  if cmp -s "$text.tmp" "$text"; then rm "$text.tmp"; else mv "$text.tmp" "$text"; fi
}

# llama_gen_model: gen-model built against PREFIX, so that our GGUF writer writes the models
llama_gen_model() {
  gcc -std=gnu11 -O2 -Wall -Wextra -Werror "$root/c-tests/tools/gen-model.c" -o "$gen" \
    -I"$prefix/include" -L"$prefix/lib" -lggml-base -lm -Wl,-rpath,"$prefix/lib"
}

# the model (or log) of the current shape: its name, and the shape unless the default one
shaped() { echo "${model_size:+$model_size-}$1"; }
model() { echo "$work/models/model-$(shaped "$1").gguf"; }
# make_model TYPE: f32, f16 and bf16 from gen-model (reused while gen-model.c is unchanged), the
# others quantized from f32 by the reference llama-quantize with its default mixture (mxfp4
# --pure, iq2_xs with an importance matrix)
make_model() {
  local m; m=$(model "$1")
  case $1 in
    f32|f16|bf16) [[ -f $m && $m -nt $root/c-tests/tools/gen-model.c ]] && return ;;
    *) make_model f32; [[ -f $m && $m -nt $(model f32) ]] && return ;;
  esac
  case $1 in
    f32|f16|bf16) GEN_MODEL_SIZE=${model_size:-} nice "$gen" "$vocab" "$m.tmp" "$1" > "$work/logs/$(shaped "$1").gen.log" 2>&1 ;;
    *)
      local args=() ftype=${1^^}
      case $1 in
        mxfp4) args=(--pure) ftype=MXFP4_MOE ;;
        iq2_xs) make_imatrix; args=(--imatrix "$(imatrix)") ;;
      esac
      # shellcheck disable=SC2086  # QUANTIZE_ARGS is a list of options
      nice "$bin/llama-quantize" ${QUANTIZE_ARGS:-} "${args[@]}" "$(model f32)" "$m.tmp" "$ftype" "$threads" \
        > "$work/logs/$(shaped "$1").quantize.log" 2>&1 ;;
  esac || { echo "$me: making the $1 model failed: $work/logs/$(shaped "$1").*.log" >&2; exit 1; }
  mv "$m.tmp" "$m"
}
# make_imatrix: the importance matrix of the f32 model over the text, computed on the reference
imatrix() { echo "$work/models/$(shaped imatrix).gguf"; }
make_imatrix() {
  local m; m=$(imatrix)
  [[ -f $m && $m -nt $(model f32) && $m -nt $text ]] && return
  nice "$bin/llama-imatrix" -m "$(model f32)" -f "$text" -c 512 --chunks 4 -t "$threads" -o "$m.tmp.gguf" \
    > "$work/logs/imatrix.log" 2>&1 ||
    { echo "$me: llama-imatrix failed: $work/logs/imatrix.log" >&2; exit 1; }
  mv "$m.tmp.gguf" "$m"
}

# field VALUE_PATTERN LOG: the first number after the pattern
field() { sed -n "s/^.*$1 *\([-0-9.e+]*\).*/\1/p" "$2" | head -n 1; }
