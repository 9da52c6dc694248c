/* The C-variadic entry points of the API. Stable Rust cannot define C-variadic functions, so
 * these format their arguments here; the exported symbols are naked Rust functions that
 * tail-jump to them (see variadic.rs). Everything here is hidden: internal to the library. */
#include <stdarg.h>
#include <stdio.h>

#include "../../include/ggml.h"

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN void ggml_rs_abort_text(const char *file, int line, const char *message) __attribute__((noreturn));
HIDDEN void ggml_rs_log_text(int level, const char *text);
HIDDEN char *ggml_rs_tensor_name_buffer(struct ggml_tensor *tensor);

HIDDEN void ggml_rs_abort_c(const char *file, int line, const char *fmt, ...) {
    char message[2048];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof(message), fmt, args);
    va_end(args);
    ggml_rs_abort_text(file, line, message);
}

HIDDEN struct ggml_tensor *ggml_rs_format_name_c(struct ggml_tensor *tensor, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(ggml_rs_tensor_name_buffer(tensor), 64, fmt, args);
    va_end(args);
    return tensor;
}

HIDDEN void ggml_rs_log_internal_c(enum ggml_log_level level, const char *format, ...) {
    char text[4096];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    ggml_rs_log_text(level, text);
}
