/*
 * The body of libggml.so.0 and libggml-cpu.so.0.
 *
 * ggml-rs keeps all of its code in one shared library, installed as libggml-base.so.0. The
 * reference splits the same symbols over three libraries, and programs built against it carry
 * DT_NEEDED entries for all three sonames. These shims give those sonames something to load:
 * each holds no ggml code, only a DT_NEEDED entry on libggml-base.so.0 (found through
 * RUNPATH=$ORIGIN), so every process sees exactly one copy of the library state.
 */

__attribute__((used)) static const char ggml_rs_shim_note[] =
    "ggml-rs soname shim: the code lives in libggml-base.so.0";
