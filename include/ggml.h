#pragma once

// ggml.h - tensors, contexts, operations and graphs.
//
// This is the public C interface of ggml-rs, a Rust implementation of the ggml tensor library
// that is binary compatible with ggml 0.25.1: the declarations below (names, types, struct
// layouts, enum values, macros) match that version, so code written for it compiles and links
// unchanged.
//
// The model in a few lines:
//   - a context (ggml_init) is an arena holding tensor headers, and their data unless
//     no_alloc is set (then a backend buffer holds the data, see ggml-backend.h);
//   - op constructors (ggml_add, ggml_mul_mat, ...) only describe work: each returns a new
//     tensor whose op and src fields record how it is computed;
//   - a graph (ggml_new_graph + ggml_build_forward_expand) collects the nodes a result needs;
//   - a backend computes the graph (ggml_backend_graph_compute, or ggml_graph_compute_with_ctx
//     from ggml-cpu.h for the CPU).
//
// Tensors have up to GGML_MAX_DIMS dimensions. ne[i] is the number of elements along dimension i
// (dimension 0 is the innermost, a row) and nb[i] the stride in bytes, so non-contiguous views
// (transposes, permutations, slices) share their source's data.

// GGML_API marks the functions of the library. Define GGML_SHARED when linking against the
// shared library (and GGML_BUILD when building it) to get the platform's import/export attributes.
#ifdef GGML_SHARED
#    if defined(_WIN32) && !defined(__MINGW32__)
#        ifdef GGML_BUILD
#            define GGML_API __declspec(dllexport) extern
#        else
#            define GGML_API __declspec(dllimport) extern
#        endif
#    else
#        define GGML_API __attribute__ ((visibility ("default"))) extern
#    endif
#else
#    define GGML_API extern
#endif

// GGML_DEPRECATED(declaration, message): the declaration, flagged so that uses warn with message.
#ifdef __GNUC__
#    define GGML_DEPRECATED(func, hint) func __attribute__((deprecated(hint)))
#elif defined(_MSC_VER)
#    define GGML_DEPRECATED(func, hint) __declspec(deprecated(hint)) func
#else
#    define GGML_DEPRECATED(func, hint) func
#endif

// GGML_ATTRIBUTE_FORMAT(fmt_index, first_arg_index): printf-style argument checking.
#ifndef __GNUC__
#    define GGML_ATTRIBUTE_FORMAT(...)
#elif defined(__MINGW32__) && !defined(__clang__)
#    define GGML_ATTRIBUTE_FORMAT(...) __attribute__((format(gnu_printf, __VA_ARGS__)))
#else
#    define GGML_ATTRIBUTE_FORMAT(...) __attribute__((format(printf, __VA_ARGS__)))
#endif

// Windows: ask for the Windows 10 API unless the includer chose a version.
#if defined(_WIN32) && !defined(_WIN32_WINNT)
#    define _WIN32_WINNT 0x0A00
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Magic number ("ggml") and version of the legacy ggml model file format.
#define GGML_FILE_MAGIC   0x67676d6c
#define GGML_FILE_VERSION 2

// Version of the quantization formats; files store version * GGML_QNT_VERSION_FACTOR + ftype.
#define GGML_QNT_VERSION        2
#define GGML_QNT_VERSION_FACTOR 1000

// Fixed limits. These are part of the ABI: struct ggml_tensor and friends embed them.
#define GGML_MAX_DIMS           4    // dimensions of a tensor
#define GGML_MAX_PARAMS         2048 // legacy limit on trainable parameters
#define GGML_MAX_SRC            10   // operands of one op
#define GGML_MAX_N_THREADS      512  // threads of one computation
#define GGML_MAX_OP_PARAMS      64   // bytes of op parameters stored in a tensor

// Bytes of a tensor name, terminating NUL included. Changing it changes the ABI.
#ifndef GGML_MAX_NAME
#   define GGML_MAX_NAME        64
#endif

#define GGML_DEFAULT_N_THREADS  4    // threads used when the caller does not say
#define GGML_DEFAULT_GRAPH_SIZE 2048 // node capacity of ggml_new_graph

// Alignment of tensor data inside a context.
#if UINTPTR_MAX == 0xFFFFFFFF
    #define GGML_MEM_ALIGN 4
#elif defined(__EMSCRIPTEN__)
    // 64-bit wasm: max_align_t is 8 there
    #define GGML_MEM_ALIGN 8
#else
    #define GGML_MEM_ALIGN 16
#endif

// Legacy return codes of graph computation (see enum ggml_status for the current ones).
#define GGML_EXIT_SUCCESS 0
#define GGML_EXIT_ABORTED 1

// RoPE modes (the mode argument of the ggml_rope_* functions).
#define GGML_ROPE_TYPE_NORMAL 0  // rotate adjacent pairs (x0,x1), (x2,x3), ...
#define GGML_ROPE_TYPE_NEOX   2  // rotate pairs half a head apart (x0,x[n/2]), ...
#define GGML_ROPE_TYPE_MROPE  8  // multi-section positions (text/height/width/extra)
#define GGML_ROPE_TYPE_VISION 24 // M-RoPE variant for vision encoders
#define GGML_ROPE_TYPE_IMROPE 40 // interleaved M-RoPE

// Number of position sections of the multi-section RoPE modes.
#define GGML_MROPE_SECTIONS   4

// Silences unused-variable warnings.
#define GGML_UNUSED(x) (void)(x)
#ifdef __CUDACC__
template<typename... Args>
__host__ __device__ constexpr inline void ggml_unused_vars_impl(Args&&...) noexcept {}
#define GGML_UNUSED_VARS(...) ggml_unused_vars_impl(__VA_ARGS__)
#else
#define GGML_UNUSED_VARS(...) do { (void)sizeof((__VA_ARGS__, 0)); } while(0)
#endif // __CUDACC__

// Rounds x up to a multiple of n (n must be a power of two).
#define GGML_PAD(x, n) (((x) + (n) - 1) & ~((n) - 1))

// Marks code that cannot be reached: aborts in debug builds, an optimizer hint otherwise.
#ifndef NDEBUG
#   define GGML_UNREACHABLE() do { fprintf(stderr, "statement should be unreachable\n"); abort(); } while(0)
#elif defined(__GNUC__)
#   define GGML_UNREACHABLE() __builtin_unreachable()
#elif defined(_MSC_VER)
#   define GGML_UNREACHABLE() __assume(0)
#else
#   define GGML_UNREACHABLE() ((void) 0)
#endif

// Marks functions that never return.
#ifdef __cplusplus
#   define GGML_NORETURN [[noreturn]]
#elif defined(_MSC_VER)
#   define GGML_NORETURN __declspec(noreturn)
#else
#   define GGML_NORETURN _Noreturn
#endif

// GGML_ABORT(fmt, ...): fatal error with a printf-style message and the current source location.
// GGML_ASSERT(cond): fatal error unless cond holds. Both stay active in release builds.
#define GGML_ABORT(...) ggml_abort(__FILE__, __LINE__, __VA_ARGS__)
#define GGML_ASSERT(x) if (!(x)) GGML_ABORT("GGML_ASSERT(%s) failed", #x)

// Helpers for kernels: copy the four sizes or strides of a tensor into local constants.
//   GGML_TENSOR_LOCALS(int64_t, ne1, src1, ne) declares ne10, ne11, ne12, ne13 = src1->ne[0..3]
// (0 when the pointer is NULL). The _OP_LOCALS forms do it for src0/src1/src2/dst at once.
#define GGML_TENSOR_LOCALS_1(type, prefix, pointer, array) \
    const type prefix##0 = (pointer) ? (pointer)->array[0] : 0; \
    GGML_UNUSED(prefix##0);
#define GGML_TENSOR_LOCALS_2(type, prefix, pointer, array) \
    GGML_TENSOR_LOCALS_1    (type, prefix, pointer, array) \
    const type prefix##1 = (pointer) ? (pointer)->array[1] : 0; \
    GGML_UNUSED(prefix##1);
#define GGML_TENSOR_LOCALS_3(type, prefix, pointer, array) \
    GGML_TENSOR_LOCALS_2    (type, prefix, pointer, array) \
    const type prefix##2 = (pointer) ? (pointer)->array[2] : 0; \
    GGML_UNUSED(prefix##2);
#define GGML_TENSOR_LOCALS(type, prefix, pointer, array) \
    GGML_TENSOR_LOCALS_3  (type, prefix, pointer, array) \
    const type prefix##3 = (pointer) ? (pointer)->array[3] : 0; \
    GGML_UNUSED(prefix##3);

#define GGML_TENSOR_UNARY_OP_LOCALS \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne,  dst,  ne) \
    GGML_TENSOR_LOCALS(size_t,  nb,  dst,  nb)

#define GGML_TENSOR_BINARY_OP_LOCALS \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne1, src1, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb1, src1, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne,  dst,  ne) \
    GGML_TENSOR_LOCALS(size_t,  nb,  dst,  nb)

#define GGML_TENSOR_TERNARY_OP_LOCALS \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne1, src1, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb1, src1, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne2, src2, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb2, src2, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne,  dst,  ne) \
    GGML_TENSOR_LOCALS(size_t,  nb,  dst,  nb)

#define GGML_TENSOR_BINARY_OP_LOCALS01 \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne1, src1, ne) \
    GGML_TENSOR_LOCALS(size_t,  nb1, src1, nb)

#ifdef  __cplusplus
extern "C" {
#endif

    //
    // Fatal errors
    //

    // Handler for fatal errors: receives the formatted message.
    typedef void (*ggml_abort_callback_t)(const char * error_message);

    // Installs the handler called with the message of a fatal error before the process aborts;
    // NULL restores the default (print to stderr). Returns the previous handler.
    GGML_API ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback);

    // Reports a fatal error at file:line with a printf-style message, then aborts. Never returns.
    // Use GGML_ABORT / GGML_ASSERT rather than calling it directly.
    GGML_NORETURN GGML_ATTRIBUTE_FORMAT(3, 4)
    GGML_API void ggml_abort(const char * file, int line, const char * fmt, ...);

    // Outcome of allocating or computing.
    enum ggml_status {
        GGML_STATUS_ALLOC_FAILED = -2, // out of memory
        GGML_STATUS_FAILED = -1,       // any other error
        GGML_STATUS_SUCCESS = 0,
        GGML_STATUS_ABORTED = 1,       // stopped by an abort callback
    };

    // Human-readable name of a status code.
    GGML_API const char * ggml_status_to_string(enum ggml_status status);

    //
    // Half-precision numbers
    //

    // IEEE-754 binary16, stored as its bit pattern.
    typedef uint16_t ggml_fp16_t;

    // Converts one binary16 value to float.
    GGML_API float       ggml_fp16_to_fp32(ggml_fp16_t);

    // Converts one float to binary16 (round to nearest even).
    GGML_API ggml_fp16_t ggml_fp32_to_fp16(float);

    // Converts n binary16 values to float.
    GGML_API void        ggml_fp16_to_fp32_row(const ggml_fp16_t *, float *, int64_t);

    // Converts n floats to binary16.
    GGML_API void        ggml_fp32_to_fp16_row(const float *, ggml_fp16_t *, int64_t);

    // bfloat16 (the upper half of a float32), stored as its bit pattern.
    typedef struct { uint16_t bits; } ggml_bf16_t;

    // Converts one float to bfloat16 (round to nearest even, NaN kept quiet).
    GGML_API ggml_bf16_t ggml_fp32_to_bf16(float);

    // Widens one bfloat16 value to float (exact).
    GGML_API float       ggml_bf16_to_fp32(ggml_bf16_t);

    // Widens n bfloat16 values to float.
    GGML_API void        ggml_bf16_to_fp32_row(const ggml_bf16_t *, float *, int64_t);

    // Converts n floats to bfloat16 with the scalar reference rounding.
    GGML_API void        ggml_fp32_to_bf16_row_ref(const float *, ggml_bf16_t *, int64_t);

    // Converts n floats to bfloat16 (may use SIMD; same results as the _ref variant).
    GGML_API void        ggml_fp32_to_bf16_row(const float *, ggml_bf16_t *, int64_t);

    // Opaque types.
    struct ggml_object;  // an entry of a context's arena
    struct ggml_context; // the arena (see ggml_init)
    struct ggml_cgraph;  // a computation graph (see ggml_new_graph)

    // Element types of tensors. Values are stored in files: new types only ever get new numbers.
    // Quantized types store blocks of ggml_blck_size(type) elements in ggml_type_size(type) bytes.
    enum ggml_type {
        GGML_TYPE_F32     = 0,
        GGML_TYPE_F16     = 1,
        GGML_TYPE_Q4_0    = 2,
        GGML_TYPE_Q4_1    = 3,
        // 4 and 5 were Q4_2 and Q4_3, no longer supported
        GGML_TYPE_Q5_0    = 6,
        GGML_TYPE_Q5_1    = 7,
        GGML_TYPE_Q8_0    = 8,
        GGML_TYPE_Q8_1    = 9,
        GGML_TYPE_Q2_K    = 10,
        GGML_TYPE_Q3_K    = 11,
        GGML_TYPE_Q4_K    = 12,
        GGML_TYPE_Q5_K    = 13,
        GGML_TYPE_Q6_K    = 14,
        GGML_TYPE_Q8_K    = 15,
        GGML_TYPE_IQ2_XXS = 16,
        GGML_TYPE_IQ2_XS  = 17,
        GGML_TYPE_IQ3_XXS = 18,
        GGML_TYPE_IQ1_S   = 19,
        GGML_TYPE_IQ4_NL  = 20,
        GGML_TYPE_IQ3_S   = 21,
        GGML_TYPE_IQ2_S   = 22,
        GGML_TYPE_IQ4_XS  = 23,
        GGML_TYPE_I8      = 24,
        GGML_TYPE_I16     = 25,
        GGML_TYPE_I32     = 26,
        GGML_TYPE_I64     = 27,
        GGML_TYPE_F64     = 28,
        GGML_TYPE_IQ1_M   = 29,
        GGML_TYPE_BF16    = 30,
        // 31-33 were interleaved Q4_0 layouts, no longer stored in files
        GGML_TYPE_TQ1_0   = 34,
        GGML_TYPE_TQ2_0   = 35,
        // 36-38 were interleaved IQ4_NL layouts
        GGML_TYPE_MXFP4   = 39, // microscaling FP4: one block of 32 with an E8M0 scale
        GGML_TYPE_NVFP4   = 40, // FP4 in 4 sub-blocks with E4M3 scales
        GGML_TYPE_Q1_0    = 41,
        GGML_TYPE_Q2_0    = 42,
        GGML_TYPE_COUNT   = 43,
    };

    // Precision an op may use, for accumulation or for converting its sources; stored in the
    // op params of the op (see ggml_prec_set_acc / ggml_prec_set_src). Higher means less precise.
    enum ggml_prec {
        GGML_PREC_UNDEFINED = 0,
        GGML_PREC_DEFAULT   = 0,  // old name of GGML_PREC_UNDEFINED
        GGML_PREC_F32       = 10,
        GGML_PREC_BF16      = 15,
        GGML_PREC_F16       = 20,
        GGML_PREC_Q8        = 30,
        GGML_PREC_Q4        = 40,
    };

    // Extra knowledge about an op's operands that a backend may exploit.
    enum ggml_op_hint {
        GGML_HINT_NONE             = 0,
        GGML_HINT_SRC0_IS_HADAMARD = 1, // src0 is a Hadamard matrix
    };

    // Type a model file mostly uses (1-d tensors usually stay F32).
    enum ggml_ftype {
        GGML_FTYPE_UNKNOWN              = -1,
        GGML_FTYPE_ALL_F32              = 0,
        GGML_FTYPE_MOSTLY_F16           = 1,
        GGML_FTYPE_MOSTLY_Q4_0          = 2,
        GGML_FTYPE_MOSTLY_Q4_1          = 3,
        GGML_FTYPE_MOSTLY_Q4_1_SOME_F16 = 4, // token embeddings and output in F16
        GGML_FTYPE_MOSTLY_Q8_0          = 7,
        GGML_FTYPE_MOSTLY_Q5_0          = 8,
        GGML_FTYPE_MOSTLY_Q5_1          = 9,
        GGML_FTYPE_MOSTLY_Q2_K          = 10,
        GGML_FTYPE_MOSTLY_Q3_K          = 11,
        GGML_FTYPE_MOSTLY_Q4_K          = 12,
        GGML_FTYPE_MOSTLY_Q5_K          = 13,
        GGML_FTYPE_MOSTLY_Q6_K          = 14,
        GGML_FTYPE_MOSTLY_IQ2_XXS       = 15,
        GGML_FTYPE_MOSTLY_IQ2_XS        = 16,
        GGML_FTYPE_MOSTLY_IQ3_XXS       = 17,
        GGML_FTYPE_MOSTLY_IQ1_S         = 18,
        GGML_FTYPE_MOSTLY_IQ4_NL        = 19,
        GGML_FTYPE_MOSTLY_IQ3_S         = 20,
        GGML_FTYPE_MOSTLY_IQ2_S         = 21,
        GGML_FTYPE_MOSTLY_IQ4_XS        = 22,
        GGML_FTYPE_MOSTLY_IQ1_M         = 23,
        GGML_FTYPE_MOSTLY_BF16          = 24,
        GGML_FTYPE_MOSTLY_MXFP4         = 25,
        GGML_FTYPE_MOSTLY_NVFP4         = 26,
        GGML_FTYPE_MOSTLY_Q1_0          = 27,
        GGML_FTYPE_MOSTLY_Q2_0          = 28,
    };

    // What a tensor computes (its op field). The order is part of the ABI.
    enum ggml_op {
        GGML_OP_NONE = 0,

        GGML_OP_DUP,
        GGML_OP_ADD,
        GGML_OP_ADD_ID,
        GGML_OP_ADD1,
        GGML_OP_ACC,
        GGML_OP_SUB,
        GGML_OP_MUL,
        GGML_OP_DIV,
        GGML_OP_SQR,
        GGML_OP_SQRT,
        GGML_OP_LOG,
        GGML_OP_SIN,
        GGML_OP_COS,
        GGML_OP_SUM,
        GGML_OP_SUM_ROWS,
        GGML_OP_CUMSUM,
        GGML_OP_MEAN,
        GGML_OP_ARGMAX,
        GGML_OP_COUNT_EQUAL,
        GGML_OP_REPEAT,
        GGML_OP_REPEAT_BACK,
        GGML_OP_CONCAT,
        GGML_OP_SILU_BACK,
        GGML_OP_NORM,
        GGML_OP_RMS_NORM,
        GGML_OP_RMS_NORM_BACK,
        GGML_OP_GROUP_NORM,
        GGML_OP_L2_NORM,

        GGML_OP_MUL_MAT,
        GGML_OP_MUL_MAT_ID,
        GGML_OP_OUT_PROD,

        GGML_OP_SCALE,
        GGML_OP_SET,
        GGML_OP_CPY,
        GGML_OP_CONT,
        GGML_OP_RESHAPE,
        GGML_OP_VIEW,
        GGML_OP_PERMUTE,
        GGML_OP_TRANSPOSE,
        GGML_OP_GET_ROWS,
        GGML_OP_GET_ROWS_BACK,
        GGML_OP_SET_ROWS,
        GGML_OP_DIAG,
        GGML_OP_DIAG_MASK_INF,
        GGML_OP_DIAG_MASK_ZERO,
        GGML_OP_SOFT_MAX,
        GGML_OP_SOFT_MAX_BACK,
        GGML_OP_ROPE,
        GGML_OP_ROPE_BACK,
        GGML_OP_CLAMP,
        GGML_OP_CONV_TRANSPOSE_1D,
        GGML_OP_IM2COL,
        GGML_OP_IM2COL_BACK,
        GGML_OP_IM2COL_3D,
        GGML_OP_COL2IM_1D,
        GGML_OP_CONV_2D,
        GGML_OP_CONV_3D,
        GGML_OP_CONV_2D_DW,
        GGML_OP_CONV_TRANSPOSE_2D,
        GGML_OP_POOL_1D,
        GGML_OP_POOL_2D,
        GGML_OP_POOL_2D_BACK,
        GGML_OP_UPSCALE,
        GGML_OP_PAD,
        GGML_OP_PAD_REFLECT_1D,
        GGML_OP_ROLL,
        GGML_OP_ARANGE,
        GGML_OP_TIMESTEP_EMBEDDING,
        GGML_OP_ARGSORT,
        GGML_OP_TOP_K,
        GGML_OP_LEAKY_RELU,
        GGML_OP_TRI,
        GGML_OP_FILL,

        GGML_OP_FLASH_ATTN_EXT,
        GGML_OP_FLASH_ATTN_BACK,
        GGML_OP_SSM_CONV,
        GGML_OP_SSM_SCAN,
        GGML_OP_WIN_PART,
        GGML_OP_WIN_UNPART,
        GGML_OP_GET_REL_POS,
        GGML_OP_ADD_REL_POS,
        GGML_OP_RWKV_WKV6,
        GGML_OP_GATED_LINEAR_ATTN,
        GGML_OP_RWKV_WKV7,
        GGML_OP_SOLVE_TRI,
        GGML_OP_GATED_DELTA_NET,
        GGML_OP_LIGHTNING_INDEXER,
        GGML_OP_DSV4_HC_COMB,
        GGML_OP_DSV4_HC_PRE,
        GGML_OP_DSV4_HC_POST,

        GGML_OP_UNARY,

        GGML_OP_MAP_CUSTOM1,
        GGML_OP_MAP_CUSTOM2,
        GGML_OP_MAP_CUSTOM3,

        GGML_OP_CUSTOM,

        GGML_OP_CROSS_ENTROPY_LOSS,
        GGML_OP_CROSS_ENTROPY_LOSS_BACK,
        GGML_OP_OPT_STEP_ADAMW,
        GGML_OP_OPT_STEP_SGD,

        GGML_OP_GLU,

        GGML_OP_COUNT,
    };

    // Elementwise functions computed by GGML_OP_UNARY (the sub-op is in the op params).
    enum ggml_unary_op {
        GGML_UNARY_OP_ABS,
        GGML_UNARY_OP_SGN,
        GGML_UNARY_OP_NEG,
        GGML_UNARY_OP_STEP,
        GGML_UNARY_OP_TANH,
        GGML_UNARY_OP_ELU,
        GGML_UNARY_OP_RELU,
        GGML_UNARY_OP_SIGMOID,
        GGML_UNARY_OP_GELU,
        GGML_UNARY_OP_GELU_QUICK,
        GGML_UNARY_OP_SILU,
        GGML_UNARY_OP_HARDSWISH,
        GGML_UNARY_OP_HARDSIGMOID,
        GGML_UNARY_OP_EXP,
        GGML_UNARY_OP_EXPM1,
        GGML_UNARY_OP_SOFTPLUS,
        GGML_UNARY_OP_GELU_ERF,
        GGML_UNARY_OP_XIELU,
        GGML_UNARY_OP_FLOOR,
        GGML_UNARY_OP_CEIL,
        GGML_UNARY_OP_ROUND,
        GGML_UNARY_OP_TRUNC,

        GGML_UNARY_OP_COUNT,
    };

    // Gated linear units computed by GGML_OP_GLU (the sub-op is in the op params).
    enum ggml_glu_op {
        GGML_GLU_OP_REGLU,
        GGML_GLU_OP_GEGLU,
        GGML_GLU_OP_SWIGLU,
        GGML_GLU_OP_SWIGLU_OAI,
        GGML_GLU_OP_GEGLU_ERF,
        GGML_GLU_OP_GEGLU_QUICK,
        GGML_GLU_OP_SWIGLU_CLAMP,

        GGML_GLU_OP_COUNT,
    };

    // Kinds of objects in a context's arena.
    enum ggml_object_type {
        GGML_OBJECT_TYPE_TENSOR,
        GGML_OBJECT_TYPE_GRAPH,
        GGML_OBJECT_TYPE_WORK_BUFFER
    };

    // Severity of a log message (see ggml_log_set).
    enum ggml_log_level {
        GGML_LOG_LEVEL_NONE  = 0,
        GGML_LOG_LEVEL_DEBUG = 1,
        GGML_LOG_LEVEL_INFO  = 2,
        GGML_LOG_LEVEL_WARN  = 3,
        GGML_LOG_LEVEL_ERROR = 4,
        GGML_LOG_LEVEL_CONT  = 5, // continues the previous message
    };

    // Bits of ggml_tensor.flags: the tensor's role in a graph.
    enum ggml_tensor_flag {
        GGML_TENSOR_FLAG_INPUT   =  1, // fed by the caller
        GGML_TENSOR_FLAG_OUTPUT  =  2, // read by the caller after compute
        GGML_TENSOR_FLAG_PARAM   =  4, // trainable parameter
        GGML_TENSOR_FLAG_LOSS    =  8, // loss to minimise (several losses are summed)
        GGML_TENSOR_FLAG_COMPUTE = 16, // must be computed
    };

    // Which triangle ggml_tri keeps.
    enum ggml_tri_type {
        GGML_TRI_TYPE_UPPER_DIAG = 0, // upper triangle with the diagonal
        GGML_TRI_TYPE_UPPER      = 1, // strictly upper
        GGML_TRI_TYPE_LOWER_DIAG = 2, // lower triangle with the diagonal
        GGML_TRI_TYPE_LOWER      = 3  // strictly lower
    };

    // Arguments of ggml_init.
    struct ggml_init_params {
        size_t mem_size;   // size of the arena in bytes
        void * mem_buffer; // memory for the arena; NULL: allocated by ggml_init
        bool   no_alloc;   // true: tensors get headers only, their data lives elsewhere
    };

    // A tensor: shape, strides, type, where its data is, and how it is computed.
    struct ggml_tensor {
        enum ggml_type type;

        struct ggml_backend_buffer * buffer; // backend buffer holding the data, or NULL

        int64_t ne[GGML_MAX_DIMS]; // elements per dimension
        size_t  nb[GGML_MAX_DIMS]; // stride in bytes per dimension: nb[0] is the type size,
                                   // nb[1] the row size, nb[i] = nb[i-1]*ne[i-1] when contiguous

        enum ggml_op op; // how the tensor is computed (GGML_OP_NONE for leaves)

        // parameters of the op (int32-aligned storage)
        int32_t op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)];

        int32_t flags; // enum ggml_tensor_flag bits

        struct ggml_tensor * src[GGML_MAX_SRC]; // operands of the op

        // for views: the viewed tensor and the byte offset into its data
        struct ggml_tensor * view_src;
        size_t               view_offs;

        void * data; // the elements (host or device address), or NULL if not allocated

        char name[GGML_MAX_NAME];

        void * extra; // backend-specific data

        char padding[8]; // keeps the size a multiple of 16
    };

    static const size_t GGML_TENSOR_SIZE = sizeof(struct ggml_tensor);

    // Polled during computation; returning true stops it (the compute returns
    // GGML_STATUS_ABORTED).
    typedef bool (*ggml_abort_callback)(void * data);

    // 16-byte identifier of a backend implementation.
    typedef uint8_t ggml_guid[16];
    typedef ggml_guid * ggml_guid_t;

    //
    // Library information, timing, files
    //

    // True when both 16-byte identifiers are equal.
    GGML_API bool ggml_guid_matches(ggml_guid_t guid_a, ggml_guid_t guid_b);

    // Version string of this library (e.g. "0.25.1").
    GGML_API const char * ggml_version(void);

    // Source revision this library was built from.
    GGML_API const char * ggml_commit(void);

    // Starts the clock used by the timing helpers; call once at start-up.
    GGML_API void ggml_time_init(void);

    // Monotonic time in milliseconds since ggml_time_init.
    GGML_API int64_t ggml_time_ms(void);

    // Monotonic time in microseconds since ggml_time_init.
    GGML_API int64_t ggml_time_us(void);

    // Processor clock ticks (clock() based).
    GGML_API int64_t ggml_cycles(void);

    // Ticks of ggml_cycles per millisecond.
    GGML_API int64_t ggml_cycles_per_ms(void);

    // fopen that accepts UTF-8 paths on every platform.
    GGML_API FILE * ggml_fopen(const char * fname, const char * mode);

    // Prints one context object (debugging).
    GGML_API void ggml_print_object(const struct ggml_object * obj);

    // Prints all objects of a context (debugging).
    GGML_API void ggml_print_objects(const struct ggml_context * ctx);

    //
    // Tensor and type properties
    //

    // Number of elements: ne[0]*ne[1]*ne[2]*ne[3].
    GGML_API int64_t ggml_nelements(const struct ggml_tensor * tensor);

    // Number of rows: ne[1]*ne[2]*ne[3].
    GGML_API int64_t ggml_nrows(const struct ggml_tensor * tensor);

    // Bytes spanned by the tensor data, strides included.
    GGML_API size_t ggml_nbytes(const struct ggml_tensor * tensor);

    // ggml_nbytes rounded up to GGML_MEM_ALIGN.
    GGML_API size_t ggml_nbytes_pad(const struct ggml_tensor * tensor);

    // Elements per block of a type (1 for plain types, 32 or 256 for quantized ones).
    GGML_API int64_t ggml_blck_size(enum ggml_type type);

    // Bytes per block of a type.
    GGML_API size_t ggml_type_size(enum ggml_type type);

    // Bytes of a row of ne elements of a type (ne must be a multiple of the block size).
    GGML_API size_t ggml_row_size(enum ggml_type type, int64_t ne);

    // Bytes per element as a fraction (type_size / blck_size).
    GGML_DEPRECATED(GGML_API double ggml_type_sizef(enum ggml_type type),
        "use ggml_row_size() instead");

    // Short name of a type ("f32", "q4_0", ...).
    GGML_API const char * ggml_type_name(enum ggml_type type);

    // Name of an op ("ADD", "MUL_MAT", ...).
    GGML_API const char * ggml_op_name(enum ggml_op op);

    // Symbol or short name of an op ("x+y", ...), for graph dumps.
    GGML_API const char * ggml_op_symbol(enum ggml_op op);

    // Name of a unary op ("RELU", ...).
    GGML_API const char * ggml_unary_op_name(enum ggml_unary_op op);

    // Name of a gated linear unit op ("SWIGLU", ...).
    GGML_API const char * ggml_glu_op_name(enum ggml_glu_op op);

    // Name of the op of a tensor; for UNARY and GLU the name of the sub-op.
    GGML_API const char * ggml_op_desc(const struct ggml_tensor * t);

    // Bytes per block of the tensor's type (same as ggml_type_size(t->type)).
    GGML_API size_t ggml_element_size(const struct ggml_tensor * tensor);

    // True for block-quantized types.
    GGML_API bool ggml_is_quantized(enum ggml_type type);

    // Tensor type that a whole-file type mostly uses.
    GGML_API enum ggml_type ggml_ftype_to_ggml_type(enum ggml_ftype ftype);

    // True when dims 0 and 1 are swapped in memory (nb[0] > nb[1]).
    GGML_API bool ggml_is_transposed(const struct ggml_tensor * tensor);

    // True when the strides are not in increasing order.
    GGML_API bool ggml_is_permuted(const struct ggml_tensor * tensor);

    // True when some dimension is zero.
    GGML_API bool ggml_is_empty(const struct ggml_tensor * tensor);

    // True when the tensor views another tensor's data.
    GGML_API bool ggml_is_view(const struct ggml_tensor * tensor);

    // True for a single element.
    GGML_API bool ggml_is_scalar(const struct ggml_tensor * tensor);

    // True when only dim 0 may exceed 1.
    GGML_API bool ggml_is_vector(const struct ggml_tensor * tensor);

    // True when only dims 0 and 1 may exceed 1.
    GGML_API bool ggml_is_matrix(const struct ggml_tensor * tensor);

    // True when dim 3 is 1.
    GGML_API bool ggml_is_3d(const struct ggml_tensor * tensor);

    // Number of dimensions up to the last one above 1 (at least 1).
    GGML_API int ggml_n_dims(const struct ggml_tensor * tensor);

    // True when the data is one dense block in row-major order (same as _0).
    GGML_API bool ggml_is_contiguous(const struct ggml_tensor * tensor);

    // Same as ggml_is_contiguous.
    GGML_API bool ggml_is_contiguous_0(const struct ggml_tensor * tensor);

    // True when dims >= 1 are contiguous (rows may be padded).
    GGML_API bool ggml_is_contiguous_1(const struct ggml_tensor * tensor);

    // True when dims >= 2 are contiguous.
    GGML_API bool ggml_is_contiguous_2(const struct ggml_tensor * tensor);

    // True when dims 0..1 are dense.
    GGML_API bool ggml_is_contiguous_to_1(const struct ggml_tensor * tensor);

    // True when dims 0..2 are dense.
    GGML_API bool ggml_is_contiguous_to_2(const struct ggml_tensor * tensor);

    // True when dims 0..3 are dense.
    GGML_API bool ggml_is_contiguous_to_3(const struct ggml_tensor * tensor);

    // True when the elements occupy one gap-free range of memory, in any order.
    GGML_API bool ggml_is_contiguously_allocated(const struct ggml_tensor * tensor);

    // True for channels-last layout (dim 2 is innermost).
    GGML_API bool ggml_is_contiguous_channels(const struct ggml_tensor * tensor);

    // True when each row (dim 0) is dense.
    GGML_API bool ggml_is_contiguous_rows(const struct ggml_tensor * tensor);

    // True when ne matches in every dimension.
    GGML_API bool ggml_are_same_shape(const struct ggml_tensor * t0, const struct ggml_tensor * t1);

    // True when nb matches in every dimension.
    GGML_API bool ggml_are_same_stride(const struct ggml_tensor * t0, const struct ggml_tensor * t1);

    // True when t0 can be broadcast to t1 (every ne of t1 is a multiple of t0's).
    GGML_API bool ggml_can_repeat(const struct ggml_tensor * t0, const struct ggml_tensor * t1);

    // Bytes a tensor header takes in a context (object + struct ggml_tensor).
    GGML_API size_t ggml_tensor_overhead(void);

    // Checks that raw row data of a type holds no NaN/Inf and valid scales; false (with a log
    // message) otherwise.
    GGML_API bool ggml_validate_row_data(enum ggml_type type, const void * data, size_t nbytes);

    //
    // Contexts: arenas that own tensor headers (and data unless no_alloc)
    //

    // Creates a context over mem_size bytes (allocated here unless mem_buffer is given). NULL on
    // failure.
    GGML_API struct ggml_context * ggml_init(struct ggml_init_params params);

    // Forgets every object of the context, keeping its memory.
    GGML_API void ggml_reset(struct ggml_context * ctx);

    // Releases a context and the memory it allocated.
    GGML_API void ggml_free(struct ggml_context * ctx);

    // Bytes of the arena in use.
    GGML_API size_t ggml_used_mem(const struct ggml_context * ctx);

    // Whether new tensors get no data memory.
    GGML_API bool ggml_get_no_alloc(struct ggml_context * ctx);

    // Sets whether new tensors get data memory.
    GGML_API void ggml_set_no_alloc(struct ggml_context * ctx, bool no_alloc);

    // Start of the context's arena.
    GGML_API void * ggml_get_mem_buffer(const struct ggml_context * ctx);

    // Size of the context's arena in bytes.
    GGML_API size_t ggml_get_mem_size(const struct ggml_context * ctx);

    // Largest ggml_nbytes of the tensors in the context.
    GGML_API size_t ggml_get_max_tensor_size(const struct ggml_context * ctx);

    //
    // Creating and looking up tensors
    //

    // New tensor of n_dims dimensions with sizes ne[0..n_dims-1].
    GGML_API struct ggml_tensor * ggml_new_tensor(
            struct ggml_context * ctx,
            enum ggml_type type,
            int n_dims,
            const int64_t * ne);

    // New 1-d tensor.
    GGML_API struct ggml_tensor * ggml_new_tensor_1d(
            struct ggml_context * ctx,
            enum ggml_type type,
            int64_t ne0);

    // New 2-d tensor (ne0 columns, ne1 rows).
    GGML_API struct ggml_tensor * ggml_new_tensor_2d(
            struct ggml_context * ctx,
            enum ggml_type type,
            int64_t ne0,
            int64_t ne1);

    // New 3-d tensor.
    GGML_API struct ggml_tensor * ggml_new_tensor_3d(
            struct ggml_context * ctx,
            enum ggml_type type,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2);

    // New 4-d tensor.
    GGML_API struct ggml_tensor * ggml_new_tensor_4d(
            struct ggml_context * ctx,
            enum ggml_type type,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3);

    // Raw bytes from the context's arena.
    GGML_API void * ggml_new_buffer(struct ggml_context * ctx, size_t nbytes);

    // New tensor with the type and shape of src (data not copied).
    GGML_API struct ggml_tensor * ggml_dup_tensor(
            struct ggml_context * ctx,
            const struct ggml_tensor * src);

    // New tensor viewing all of src's data.
    GGML_API struct ggml_tensor * ggml_view_tensor(struct ggml_context * ctx, struct ggml_tensor * src);

    // First tensor of a context, for iteration; NULL if none.
    GGML_API struct ggml_tensor * ggml_get_first_tensor(const struct ggml_context * ctx);

    // Tensor after the given one in the context; NULL at the end.
    GGML_API struct ggml_tensor * ggml_get_next_tensor(
            const struct ggml_context * ctx,
            struct ggml_tensor * tensor);

    // Tensor of the context with this name; NULL if none.
    GGML_API struct ggml_tensor * ggml_get_tensor(struct ggml_context * ctx, const char * name);

    // Splits a flat element index into the four coordinates (any of i0..i3 may be NULL).
    GGML_API void ggml_unravel_index(
            const struct ggml_tensor * tensor,
            int64_t i,
            int64_t * i0,
            int64_t * i1,
            int64_t * i2,
            int64_t * i3);

    // Sub-op of a GGML_OP_UNARY tensor.
    GGML_API enum ggml_unary_op ggml_get_unary_op(const struct ggml_tensor * tensor);

    // Sub-op of a GGML_OP_GLU tensor.
    GGML_API enum ggml_glu_op ggml_get_glu_op(const struct ggml_tensor * tensor);

    // Pointer to the tensor's data (NULL when not allocated in host memory).
    GGML_API void * ggml_get_data(const struct ggml_tensor * tensor);

    // Data pointer of an F32 tensor.
    GGML_API float * ggml_get_data_f32(const struct ggml_tensor * tensor);

    // Name of the tensor (never NULL).
    GGML_API const char * ggml_get_name(const struct ggml_tensor * tensor);

    // Sets the name (truncated to GGML_MAX_NAME-1 chars); returns the tensor.
    GGML_API struct ggml_tensor * ggml_set_name(struct ggml_tensor * tensor, const char * name);

    // Sets the name from a printf format; returns the tensor.
    GGML_ATTRIBUTE_FORMAT(2, 3)
    GGML_API struct ggml_tensor * ggml_format_name(struct ggml_tensor * tensor, const char * fmt, ...);

    //
    // Tensor roles in a graph
    //

    // Marks the tensor as a graph input (allocated first, never overwritten by the allocator).
    GGML_API void ggml_set_input(struct ggml_tensor * tensor);

    // Marks the tensor as a graph output (its memory is not reused).
    GGML_API void ggml_set_output(struct ggml_tensor * tensor);

    // Marks the tensor as a trainable parameter (gradients are built for it).
    GGML_API void ggml_set_param(struct ggml_tensor * tensor);

    // Marks the tensor as a loss to minimise (must be a scalar F32).
    GGML_API void ggml_set_loss(struct ggml_tensor * tensor);

    //
    // Operations. Each call adds a node to the graph of its arguments and returns the
    // result tensor; nothing is computed until a backend runs the graph. The _inplace
    // variants return a view of their first argument that the op overwrites.
    //

    // Copy of a.
    GGML_API struct ggml_tensor * ggml_dup(struct ggml_context * ctx, struct ggml_tensor * a);

    // Copy of a, written over a.
    GGML_API struct ggml_tensor * ggml_dup_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // a + b, b broadcast over a.
    GGML_API struct ggml_tensor * ggml_add(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a += b.
    GGML_API struct ggml_tensor * ggml_add_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a + b with the result in the given type.
    GGML_API struct ggml_tensor * ggml_add_cast(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            enum ggml_type type);

    // a + b[ids]: adds the row of b selected per token by ids (mixture-of-experts biases).
    GGML_API struct ggml_tensor * ggml_add_id(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * ids);

    // a + b where b is a scalar.
    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_add1(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b),
        "use ggml_add instead");

    // a += b where b is a scalar.
    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_add1_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b),
        "use ggml_add_inplace instead");

    // Copy of a with b added into the view of a given by strides nb1..nb3 and a byte offset.
    GGML_API struct ggml_tensor * ggml_acc(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t nb1,
            size_t nb2,
            size_t nb3,
            size_t offset);

    // Like ggml_acc, written over a.
    GGML_API struct ggml_tensor * ggml_acc_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t nb1,
            size_t nb2,
            size_t nb3,
            size_t offset);

    // a - b, b broadcast over a.
    GGML_API struct ggml_tensor * ggml_sub(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a -= b.
    GGML_API struct ggml_tensor * ggml_sub_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a * b elementwise, b broadcast over a.
    GGML_API struct ggml_tensor * ggml_mul(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a *= b.
    GGML_API struct ggml_tensor * ggml_mul_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a / b elementwise, b broadcast over a.
    GGML_API struct ggml_tensor * ggml_div(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a /= b.
    GGML_API struct ggml_tensor * ggml_div_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a^2.
    GGML_API struct ggml_tensor * ggml_sqr(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = a^2.
    GGML_API struct ggml_tensor * ggml_sqr_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // sqrt(a).
    GGML_API struct ggml_tensor * ggml_sqrt(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = sqrt(a).
    GGML_API struct ggml_tensor * ggml_sqrt_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // ln(a).
    GGML_API struct ggml_tensor * ggml_log(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = ln(a).
    GGML_API struct ggml_tensor * ggml_log_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // exp(a) - 1.
    GGML_API struct ggml_tensor * ggml_expm1(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = exp(a) - 1.
    GGML_API struct ggml_tensor * ggml_expm1_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // log(1 + exp(a)).
    GGML_API struct ggml_tensor * ggml_softplus(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = log(1 + exp(a)).
    GGML_API struct ggml_tensor * ggml_softplus_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // sin(a).
    GGML_API struct ggml_tensor * ggml_sin(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = sin(a).
    GGML_API struct ggml_tensor * ggml_sin_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // cos(a).
    GGML_API struct ggml_tensor * ggml_cos(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = cos(a).
    GGML_API struct ggml_tensor * ggml_cos_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // Sum of all elements, as a 1-element tensor.
    GGML_API struct ggml_tensor * ggml_sum(struct ggml_context * ctx, struct ggml_tensor * a);

    // Sum of each row: [a,b,c,d] -> [1,b,c,d].
    GGML_API struct ggml_tensor * ggml_sum_rows(struct ggml_context * ctx, struct ggml_tensor * a);

    // Running sum along each row.
    GGML_API struct ggml_tensor * ggml_cumsum(struct ggml_context * ctx, struct ggml_tensor * a);

    // Mean of each row: [a,b,c,d] -> [1,b,c,d].
    GGML_API struct ggml_tensor * ggml_mean(struct ggml_context * ctx, struct ggml_tensor * a);

    // Index of the largest element of each row (I32).
    GGML_API struct ggml_tensor * ggml_argmax(struct ggml_context * ctx, struct ggml_tensor * a);

    // Number of equal elements of a and b (I64 scalar).
    GGML_API struct ggml_tensor * ggml_count_equal(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a tiled to the shape of b.
    GGML_API struct ggml_tensor * ggml_repeat(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a tiled to the given shape.
    GGML_API struct ggml_tensor * ggml_repeat_4d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3);

    // Sums a down to the shape of b (the gradient of ggml_repeat).
    GGML_API struct ggml_tensor * ggml_repeat_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a and b joined along dimension dim.
    GGML_API struct ggml_tensor * ggml_concat(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int dim);

    //
    // Unary elementwise functions
    //

    // |a|.
    GGML_API struct ggml_tensor * ggml_abs(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = |a|.
    GGML_API struct ggml_tensor * ggml_abs_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // sign(a): -1, 0 or 1.
    GGML_API struct ggml_tensor * ggml_sgn(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = sign(a).
    GGML_API struct ggml_tensor * ggml_sgn_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // -a.
    GGML_API struct ggml_tensor * ggml_neg(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = -a.
    GGML_API struct ggml_tensor * ggml_neg_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // 1 where a > 0, else 0.
    GGML_API struct ggml_tensor * ggml_step(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = step(a).
    GGML_API struct ggml_tensor * ggml_step_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // tanh(a).
    GGML_API struct ggml_tensor * ggml_tanh(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = tanh(a).
    GGML_API struct ggml_tensor * ggml_tanh_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // ELU: a for a > 0, exp(a) - 1 otherwise.
    GGML_API struct ggml_tensor * ggml_elu(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = elu(a).
    GGML_API struct ggml_tensor * ggml_elu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // max(a, 0).
    GGML_API struct ggml_tensor * ggml_relu(struct ggml_context * ctx, struct ggml_tensor * a);

    // a for a > 0, negative_slope*a otherwise.
    GGML_API struct ggml_tensor * ggml_leaky_relu(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float negative_slope,
            bool inplace);

    // a = max(a, 0).
    GGML_API struct ggml_tensor * ggml_relu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // 1 / (1 + exp(-a)).
    GGML_API struct ggml_tensor * ggml_sigmoid(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = sigmoid(a).
    GGML_API struct ggml_tensor * ggml_sigmoid_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // GELU, tanh approximation.
    GGML_API struct ggml_tensor * ggml_gelu(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = gelu(a).
    GGML_API struct ggml_tensor * ggml_gelu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // GELU with the exact erf formula.
    GGML_API struct ggml_tensor * ggml_gelu_erf(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = gelu_erf(a).
    GGML_API struct ggml_tensor * ggml_gelu_erf_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // GELU, sigmoid approximation a*sigmoid(1.702a).
    GGML_API struct ggml_tensor * ggml_gelu_quick(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = gelu_quick(a).
    GGML_API struct ggml_tensor * ggml_gelu_quick_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // a * sigmoid(a).
    GGML_API struct ggml_tensor * ggml_silu(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = silu(a).
    GGML_API struct ggml_tensor * ggml_silu_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // Gradient of silu: b is the incoming gradient, a the forward input.
    GGML_API struct ggml_tensor * ggml_silu_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a * relu6(a + 3) / 6.
    GGML_API struct ggml_tensor * ggml_hardswish(struct ggml_context * ctx, struct ggml_tensor * a);

    // relu6(a + 3) / 6.
    GGML_API struct ggml_tensor * ggml_hardsigmoid(struct ggml_context * ctx, struct ggml_tensor * a);

    // exp(a).
    GGML_API struct ggml_tensor * ggml_exp(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = exp(a).
    GGML_API struct ggml_tensor * ggml_exp_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // floor(a).
    GGML_API struct ggml_tensor * ggml_floor(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = floor(a).
    GGML_API struct ggml_tensor * ggml_floor_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // ceil(a).
    GGML_API struct ggml_tensor * ggml_ceil(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = ceil(a).
    GGML_API struct ggml_tensor * ggml_ceil_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // round(a), halves away from zero.
    GGML_API struct ggml_tensor * ggml_round(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = round(a).
    GGML_API struct ggml_tensor * ggml_round_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // trunc(a), toward zero.
    GGML_API struct ggml_tensor * ggml_trunc(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = trunc(a).
    GGML_API struct ggml_tensor * ggml_trunc_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // xIELU activation with parameters alpha_n, alpha_p, beta and eps.
    GGML_API struct ggml_tensor * ggml_xielu(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float alpha_n,
            float alpha_p,
            float beta,
            float eps);

    //
    // Gated linear units. The fused forms split a's rows in two halves, x and g, and
    // return act(x) * g (act(g) * x when swapped); the _split forms take x = a, g = b.
    //

    // GLU with the given activation on the two halves of a's rows.
    GGML_API struct ggml_tensor * ggml_glu(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_glu_op op,
            bool swapped);

    // relu(x) * g.
    GGML_API struct ggml_tensor * ggml_reglu(struct ggml_context * ctx, struct ggml_tensor * a);

    // relu(g) * x.
    GGML_API struct ggml_tensor * ggml_reglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a);

    // gelu(x) * g.
    GGML_API struct ggml_tensor * ggml_geglu(struct ggml_context * ctx, struct ggml_tensor * a);

    // gelu(g) * x.
    GGML_API struct ggml_tensor * ggml_geglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a);

    // silu(x) * g.
    GGML_API struct ggml_tensor * ggml_swiglu(struct ggml_context * ctx, struct ggml_tensor * a);

    // silu(g) * x.
    GGML_API struct ggml_tensor * ggml_swiglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a);

    // gelu_erf(x) * g.
    GGML_API struct ggml_tensor * ggml_geglu_erf(struct ggml_context * ctx, struct ggml_tensor * a);

    // gelu_erf(g) * x.
    GGML_API struct ggml_tensor * ggml_geglu_erf_swapped(struct ggml_context * ctx, struct ggml_tensor * a);

    // gelu_quick(x) * g.
    GGML_API struct ggml_tensor * ggml_geglu_quick(struct ggml_context * ctx, struct ggml_tensor * a);

    // gelu_quick(g) * x.
    GGML_API struct ggml_tensor * ggml_geglu_quick_swapped(
            struct ggml_context * ctx,
            struct ggml_tensor * a);

    // act(a) * b with the given activation.
    GGML_API struct ggml_tensor * ggml_glu_split(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            enum ggml_glu_op op);

    // relu(a) * b.
    GGML_API struct ggml_tensor * ggml_reglu_split(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // gelu(a) * b.
    GGML_API struct ggml_tensor * ggml_geglu_split(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // silu(a) * b.
    GGML_API struct ggml_tensor * ggml_swiglu_split(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // gelu_erf(a) * b.
    GGML_API struct ggml_tensor * ggml_geglu_erf_split(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // gelu_quick(a) * b.
    GGML_API struct ggml_tensor * ggml_geglu_quick_split(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // Clamped SwiGLU of gpt-oss: x clamped above by limit, g to [-limit, limit],
    // x*sigmoid(alpha*x)*(g+1).
    GGML_API struct ggml_tensor * ggml_swiglu_oai(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            float alpha,
            float limit);

    // SwiGLU with x and g clamped to +-limit before gating.
    GGML_API struct ggml_tensor * ggml_swiglu_clamp(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            float limit);

    //
    // Normalisation (along rows)
    //

    // (a - mean) / sqrt(var + eps) per row.
    GGML_API struct ggml_tensor * ggml_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);

    // ggml_norm written over a.
    GGML_API struct ggml_tensor * ggml_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float eps);

    // a / sqrt(mean(a^2) + eps) per row.
    GGML_API struct ggml_tensor * ggml_rms_norm(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float eps);

    // ggml_rms_norm written over a.
    GGML_API struct ggml_tensor * ggml_rms_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float eps);

    // Normalises n_groups groups of dim 2 (channels) together.
    GGML_API struct ggml_tensor * ggml_group_norm(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int n_groups,
            float eps);

    // ggml_group_norm written over a.
    GGML_API struct ggml_tensor * ggml_group_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int n_groups,
            float eps);

    // a / max(||a||, eps) per row.
    GGML_API struct ggml_tensor * ggml_l2_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps);

    // ggml_l2_norm written over a.
    GGML_API struct ggml_tensor * ggml_l2_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float eps);

    // Gradient of rms_norm: a is the forward input, b the incoming gradient.
    GGML_API struct ggml_tensor * ggml_rms_norm_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            float eps);

    //
    // Matrix products and precision hints
    //

    // Sets the lowest precision the op may accumulate in; false if the op does not take it.
    GGML_API bool ggml_prec_set_acc(struct ggml_tensor * a, enum ggml_prec prec);

    // Sets the lowest precision source i may be converted to before the op; false if not supported.
    GGML_API bool ggml_prec_set_src(struct ggml_tensor * a, enum ggml_prec prec, int idx);

    // Matrix product: a [k,n] and b [k,m] give [n,m] = b * a^T; dims 2,3 of a are broadcast over
    // b's.
    GGML_API struct ggml_tensor * ggml_mul_mat(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // Sets the accumulation precision of a MUL_MAT node.
    GGML_DEPRECATED(GGML_API void ggml_mul_mat_set_prec(struct ggml_tensor * a, enum ggml_prec prec),
        "use ggml_prec_set_acc() instead");

    // Attaches an ggml_op_hint to a MUL_MAT node.
    GGML_API void ggml_mul_mat_set_hint(struct ggml_tensor * a, enum ggml_op_hint hint);

    // Per-token expert matmul: as [k,n,n_as], b [k,n_used,n_tokens], ids [n_used,n_tokens] ->
    // [n,n_used,n_tokens].
    GGML_API struct ggml_tensor * ggml_mul_mat_id(
            struct ggml_context * ctx,
            struct ggml_tensor * as,
            struct ggml_tensor * b,
            struct ggml_tensor * ids);

    // Outer product: a [m,k] and b [n,k] give [m,n].
    GGML_API struct ggml_tensor * ggml_out_prod(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    //
    // Scaling, setting, copying and casting
    //

    // a * s.
    GGML_API struct ggml_tensor * ggml_scale(struct ggml_context * ctx, struct ggml_tensor * a, float s);

    // a *= s.
    GGML_API struct ggml_tensor * ggml_scale_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float s);

    // a * s + b.
    GGML_API struct ggml_tensor * ggml_scale_bias(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float s,
            float b);

    // a = a * s + b.
    GGML_API struct ggml_tensor * ggml_scale_bias_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float s,
            float b);

    // Copy of a with b written into the view given by strides nb1..nb3 and a byte offset.
    GGML_API struct ggml_tensor * ggml_set(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t nb1,
            size_t nb2,
            size_t nb3,
            size_t offset);

    // Like ggml_set, written over a.
    GGML_API struct ggml_tensor * ggml_set_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t nb1,
            size_t nb2,
            size_t nb3,
            size_t offset);

    // Copy of a with b written at a byte offset.
    GGML_API struct ggml_tensor * ggml_set_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t offset);

    // Like ggml_set_1d, written over a.
    GGML_API struct ggml_tensor * ggml_set_1d_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t offset);

    // Copy of a with b written into the 2-d view of row stride nb1 at a byte offset.
    GGML_API struct ggml_tensor * ggml_set_2d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t nb1,
            size_t offset);

    // Like ggml_set_2d, written over a.
    GGML_API struct ggml_tensor * ggml_set_2d_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            size_t nb1,
            size_t offset);

    // Copies a into b (converting types) and returns a view of b.
    GGML_API struct ggml_tensor * ggml_cpy(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a converted to type.
    GGML_API struct ggml_tensor * ggml_cast(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_type type);

    // Contiguous copy of a.
    GGML_API struct ggml_tensor * ggml_cont(struct ggml_context * ctx, struct ggml_tensor * a);

    // Contiguous copy of a with a new 1-d shape.
    GGML_API struct ggml_tensor * ggml_cont_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0);

    // Contiguous copy of a with a new 2-d shape.
    GGML_API struct ggml_tensor * ggml_cont_2d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1);

    // Contiguous copy of a with a new 3-d shape.
    GGML_API struct ggml_tensor * ggml_cont_3d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2);

    // Contiguous copy of a with a new 4-d shape.
    GGML_API struct ggml_tensor * ggml_cont_4d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3);

    //
    // Views: new shapes and strides over the same data
    //

    // a with the shape of b (a must be contiguous).
    GGML_API struct ggml_tensor * ggml_reshape(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // a as a 1-d tensor.
    GGML_API struct ggml_tensor * ggml_reshape_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0);

    // a as a 2-d tensor.
    GGML_API struct ggml_tensor * ggml_reshape_2d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1);

    // a as a 3-d tensor.
    GGML_API struct ggml_tensor * ggml_reshape_3d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2);

    // a as a 4-d tensor.
    GGML_API struct ggml_tensor * ggml_reshape_4d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3);

    // 1-d view of ne0 elements at a byte offset.
    GGML_API struct ggml_tensor * ggml_view_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            size_t offset);

    // 2-d view with row stride nb1 at a byte offset.
    GGML_API struct ggml_tensor * ggml_view_2d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            size_t nb1,
            size_t offset);

    // 3-d view with strides nb1, nb2 at a byte offset.
    GGML_API struct ggml_tensor * ggml_view_3d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            size_t nb1,
            size_t nb2,
            size_t offset);

    // 4-d view with strides nb1..nb3 at a byte offset.
    GGML_API struct ggml_tensor * ggml_view_4d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3,
            size_t nb1,
            size_t nb2,
            size_t nb3,
            size_t offset);

    // Moves dim 0 to axis0, dim 1 to axis1, and so on.
    GGML_API struct ggml_tensor * ggml_permute(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int axis0,
            int axis1,
            int axis2,
            int axis3);

    // Swaps dims 0 and 1 (alias of ggml_permute(ctx, a, 1, 0, 2, 3)).
    GGML_API struct ggml_tensor * ggml_transpose(struct ggml_context * ctx, struct ggml_tensor * a);

    //
    // Row gathering and scattering, masks, clamping
    //

    // Rows of a picked by the I32 indices in b: a [n_embd,ne1,ne2,ne3], b [n_rows,ne2,ne3] ->
    // [n_embd,n_rows,ne2,ne3].
    GGML_API struct ggml_tensor * ggml_get_rows(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // Gradient of get_rows: sums rows of a into a tensor shaped like c at the indices b.
    GGML_API struct ggml_tensor * ggml_get_rows_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c);

    // Writes the rows of b into a at the I64/I32 indices c; returns a view of a.
    GGML_API struct ggml_tensor * ggml_set_rows(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c);

    // Diagonal matrix from a row vector.
    GGML_API struct ggml_tensor * ggml_diag(struct ggml_context * ctx, struct ggml_tensor * a);

    // Sets elements above the diagonal shifted by n_past to -INF.
    GGML_API struct ggml_tensor * ggml_diag_mask_inf(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int n_past);

    // ggml_diag_mask_inf written over a.
    GGML_API struct ggml_tensor * ggml_diag_mask_inf_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int n_past);

    // Sets elements above the diagonal shifted by n_past to 0.
    GGML_API struct ggml_tensor * ggml_diag_mask_zero(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int n_past);

    // ggml_diag_mask_zero written over a.
    GGML_API struct ggml_tensor * ggml_diag_mask_zero_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int n_past);

    // a clamped to [min, max].
    GGML_API struct ggml_tensor * ggml_clamp(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float min,
            float max);

    // a = clamp(a, min, max).
    GGML_API struct ggml_tensor * ggml_clamp_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float min,
            float max);

    //
    // Softmax (along rows)
    //

    // softmax(a).
    GGML_API struct ggml_tensor * ggml_soft_max(struct ggml_context * ctx, struct ggml_tensor * a);

    // a = softmax(a).
    GGML_API struct ggml_tensor * ggml_soft_max_inplace(struct ggml_context * ctx, struct ggml_tensor * a);

    // softmax(a*scale + mask*slope): mask [ne0,ne1,ne2/k,ne3/l] is optional (F16/F32), max_bias > 0
    // enables ALiBi slopes.
    GGML_API struct ggml_tensor * ggml_soft_max_ext(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * mask,
            float scale,
            float max_bias);

    // ggml_soft_max_ext written over a.
    GGML_API struct ggml_tensor * ggml_soft_max_ext_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * mask,
            float scale,
            float max_bias);

    // Adds per-head attention sinks (F32 [ne2]) to a SOFT_MAX node.
    GGML_API void ggml_soft_max_add_sinks(struct ggml_tensor * a, struct ggml_tensor * sinks);

    // Gradient of soft_max_ext: a is the incoming gradient, b the softmax output.
    GGML_API struct ggml_tensor * ggml_soft_max_ext_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            float scale,
            float max_bias);

    // ggml_soft_max_ext_back written over a.
    GGML_API struct ggml_tensor * ggml_soft_max_ext_back_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            float scale,
            float max_bias);

    //
    // Rotary position embeddings. a is [head_dim, n_head, n_tokens, ...], b holds one I32
    // position per token (four per token for the multi-section modes); mode is a
    // GGML_ROPE_TYPE_* value.
    //

    // RoPE over the first n_dims of each head.
    GGML_API struct ggml_tensor * ggml_rope(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int n_dims,
            int mode);

    // ggml_rope written over a.
    GGML_API struct ggml_tensor * ggml_rope_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int n_dims,
            int mode);

    // RoPE with YaRN scaling; c holds optional per-dimension frequency factors.
    GGML_API struct ggml_tensor * ggml_rope_ext(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            int n_dims,
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow);

    // Multi-section RoPE (M-RoPE, vision): sections gives the dims of each position component.
    GGML_API struct ggml_tensor * ggml_rope_multi(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            int n_dims,
            int sections[GGML_MROPE_SECTIONS],
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow);

    // ggml_rope_ext written over a.
    GGML_API struct ggml_tensor * ggml_rope_ext_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            int n_dims,
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow);

    // ggml_rope_multi written over a.
    GGML_API struct ggml_tensor * ggml_rope_multi_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            int n_dims,
            int sections[GGML_MROPE_SECTIONS],
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow);

    // Old name of ggml_rope_ext without frequency factors.
    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_rope_custom(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int n_dims,
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow),
        "use ggml_rope_ext instead");

    // Old name of ggml_rope_ext_inplace without frequency factors.
    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_rope_custom_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int n_dims,
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow),
        "use ggml_rope_ext_inplace instead");

    // Computes the YaRN correction range [dims[0], dims[1]] for the given context and beta values.
    GGML_API void ggml_rope_yarn_corr_dims(
            int n_dims,
            int n_ctx_orig,
            float freq_base,
            float beta_fast,
            float beta_slow,
            float dims[2]);

    // Gradient of rope_ext: rotates a by the opposite angles.
    GGML_API struct ggml_tensor * ggml_rope_ext_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            int n_dims,
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow);

    // Gradient of rope_multi.
    GGML_API struct ggml_tensor * ggml_rope_multi_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            int n_dims,
            int sections[4],
            int mode,
            int n_ctx_orig,
            float freq_base,
            float freq_scale,
            float ext_factor,
            float attn_factor,
            float beta_fast,
            float beta_slow);

    // Rotates only the n_dims dims starting at offset within each head (not for vision mode); a
    // must be a ROPE or ROPE_BACK node.
    GGML_API struct ggml_tensor * ggml_rope_set_offset(struct ggml_tensor * a, int n_offs);

    //
    // Convolution and pooling
    //

    // Unfolds the patches of b that kernel a covers into columns (for 1-d when is_2D is false);
    // result in dst_type.
    GGML_API struct ggml_tensor * ggml_im2col(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int s1,
            int p0,
            int p1,
            int d0,
            int d1,
            bool is_2D,
            enum ggml_type dst_type);

    // Gradient of im2col: folds columns a back to the shape ne.
    GGML_API struct ggml_tensor * ggml_im2col_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int64_t * ne,
            int s0,
            int s1,
            int p0,
            int p1,
            int d0,
            int d1,
            bool is_2D);

    // Folds columns a back into a 1-d signal of length L_out, summing overlaps.
    GGML_API struct ggml_tensor * ggml_col2im_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int s0,
            int oc,
            int p0);

    // 1-d convolution of data b with kernel a (stride s0, padding p0, dilation d0).
    GGML_API struct ggml_tensor * ggml_conv_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int p0,
            int d0);

    // 1-d convolution with half padding: ggml_conv_1d(a, b, s, a->ne[0]/2, d).
    GGML_API struct ggml_tensor * ggml_conv_1d_ph(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s,
            int d);

    // Depthwise 1-d convolution.
    GGML_API struct ggml_tensor * ggml_conv_1d_dw(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int p0,
            int d0);

    // Depthwise 1-d convolution with half padding.
    GGML_API struct ggml_tensor * ggml_conv_1d_dw_ph(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int d0);

    // Transposed 1-d convolution.
    GGML_API struct ggml_tensor * ggml_conv_transpose_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int p0,
            int d0);

    // 2-d convolution (via im2col) of data b with kernel a.
    GGML_API struct ggml_tensor * ggml_conv_2d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int s1,
            int p0,
            int p1,
            int d0,
            int d1);

    // 3-d version of im2col; IC is the number of input channels.
    GGML_API struct ggml_tensor * ggml_im2col_3d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int64_t IC,
            int s0,
            int s1,
            int s2,
            int p0,
            int p1,
            int p2,
            int d0,
            int d1,
            int d2,
            enum ggml_type dst_type);

    // 3-d convolution (via im2col); IC input channels.
    GGML_API struct ggml_tensor * ggml_conv_3d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int64_t IC,
            int s0,
            int s1,
            int s2,
            int p0,
            int p1,
            int p2,
            int d0,
            int d1,
            int d2);

    // 2-d convolution with stride = kernel size and no padding.
    GGML_API struct ggml_tensor * ggml_conv_2d_sk_p0(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // 2-d convolution with stride 1 and half padding.
    GGML_API struct ggml_tensor * ggml_conv_2d_s1_ph(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // Depthwise 2-d convolution (via im2col).
    GGML_API struct ggml_tensor * ggml_conv_2d_dw(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int s1,
            int p0,
            int p1,
            int d0,
            int d1);

    // Depthwise 2-d convolution computed directly.
    GGML_API struct ggml_tensor * ggml_conv_2d_dw_direct(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int stride0,
            int stride1,
            int pad0,
            int pad1,
            int dilation0,
            int dilation1);

    // Transposed 2-d convolution, no padding.
    GGML_API struct ggml_tensor * ggml_conv_transpose_2d_p0(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int stride);

    // 2-d convolution computed directly (no im2col buffer).
    GGML_API struct ggml_tensor * ggml_conv_2d_direct(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int s1,
            int p0,
            int p1,
            int d0,
            int d1);

    // 3-d convolution computed directly; c and n_out_channels give the channel layout.
    GGML_API struct ggml_tensor * ggml_conv_3d_direct(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            int s0,
            int s1,
            int s2,
            int p0,
            int p1,
            int p2,
            int d0,
            int d1,
            int d2,
            int n_channels,
            int n_batch,
            int n_channels_out);

    // Pooling kinds.
    enum ggml_op_pool {
        GGML_OP_POOL_MAX,
        GGML_OP_POOL_AVG,
        GGML_OP_POOL_COUNT,
    };

    // 1-d pooling (max or average) with kernel k0, stride s0, padding p0.
    GGML_API struct ggml_tensor * ggml_pool_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_op_pool op,
            int k0,
            int s0,
            int p0);

    // 2-d pooling; padding may be fractional.
    GGML_API struct ggml_tensor * ggml_pool_2d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_op_pool op,
            int k0,
            int k1,
            int s0,
            int s1,
            float p0,
            float p1);

    // Gradient of pool_2d: a is the incoming gradient, af the forward input.
    GGML_API struct ggml_tensor * ggml_pool_2d_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * af,
            enum ggml_op_pool op,
            int k0,
            int k1,
            int s0,
            int s1,
            float p0,
            float p1);

    // Interpolation of ggml_interpolate (low byte of its mode argument).
    enum ggml_scale_mode {
        GGML_SCALE_MODE_NEAREST = 0,
        GGML_SCALE_MODE_BILINEAR = 1,
        GGML_SCALE_MODE_BICUBIC = 2,
        GGML_SCALE_MODE_COUNT
    };

    // Flags or-ed into the mode of ggml_interpolate.
    enum ggml_scale_flag {
        GGML_SCALE_FLAG_ALIGN_CORNERS = (1 << 8), // corner pixels of input and output coincide
        GGML_SCALE_FLAG_ANTIALIAS     = (1 << 9), // low-pass filter when downscaling
    };

    //
    // Resizing and padding
    //

    // Scales dims 0 and 1 up by an integer factor.
    GGML_API struct ggml_tensor * ggml_upscale(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int scale_factor,
            enum ggml_scale_mode mode);

    // Resizes to the given shape (old form of ggml_interpolate).
    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_upscale_ext(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int ne0,
            int ne1,
            int ne2,
            int ne3,
            enum ggml_scale_mode mode),
        "use ggml_interpolate instead");

    // Resizes to the given shape; mode is a ggml_scale_mode, optionally or-ed with ggml_scale_flag
    // bits.
    GGML_API struct ggml_tensor * ggml_interpolate(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3,
            uint32_t mode);

    // Pads each dim at the end with zeros.
    GGML_API struct ggml_tensor * ggml_pad(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int p0,
            int p1,
            int p2,
            int p3);

    // Pads each dim at the end with values wrapped from the start.
    GGML_API struct ggml_tensor * ggml_pad_circular(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int p0,
            int p1,
            int p2,
            int p3);

    // Pads each dim at the start (lp) and end (rp) with zeros.
    GGML_API struct ggml_tensor * ggml_pad_ext(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int lp0,
            int rp0,
            int lp1,
            int rp1,
            int lp2,
            int rp2,
            int lp3,
            int rp3);

    // Like ggml_pad_ext, with wrapped values instead of zeros.
    GGML_API struct ggml_tensor * ggml_pad_ext_circular(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int lp0,
            int rp0,
            int lp1,
            int rp1,
            int lp2,
            int rp2,
            int lp3,
            int rp3);

    // Pads dim 0 by reflection (p0 before, p1 after).
    GGML_API struct ggml_tensor * ggml_pad_reflect_1d(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int p0,
            int p1);

    // Shifts elements along each dim by the given amounts, wrapping around.
    GGML_API struct ggml_tensor * ggml_roll(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int shift0,
            int shift1,
            int shift2,
            int shift3);

    // Keeps the triangle of a given by type and zeroes the rest.
    GGML_API struct ggml_tensor * ggml_tri(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_tri_type type);

    // Tensor shaped like a, filled with c.
    GGML_API struct ggml_tensor * ggml_fill(struct ggml_context * ctx, struct ggml_tensor * a, float c);

    // Fills a with c.
    GGML_API struct ggml_tensor * ggml_fill_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            float c);

    // Sinusoidal timestep embedding of dim features, max_period as in diffusion models.
    GGML_API struct ggml_tensor * ggml_timestep_embedding(
            struct ggml_context * ctx,
            struct ggml_tensor * timesteps,
            int dim,
            int max_period);

    // Order of ggml_argsort.
    enum ggml_sort_order {
        GGML_SORT_ORDER_ASC,
        GGML_SORT_ORDER_DESC,
    };

    //
    // Sorting and ranges
    //

    // I32 indices that sort each row.
    GGML_API struct ggml_tensor * ggml_argsort(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_sort_order order);

    // Indices of the k largest elements per row, in sorted order (argsort followed by a view).
    GGML_API struct ggml_tensor * ggml_argsort_top_k(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int k);

    // Indices of the k largest elements per row, in no particular order.
    GGML_API struct ggml_tensor * ggml_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k);

    // F32 values start, start+step, ... below stop.
    GGML_API struct ggml_tensor * ggml_arange(
            struct ggml_context * ctx,
            float start,
            float stop,
            float step);

    //
    // Attention
    //

    // Fused attention softmax(q*k^T*scale + mask)*v with optional ALiBi and softcap. q
    // [n_embd_k,n_batch,n_head,ne3], k [n_embd_k,n_kv,n_head_kv,ne3], v
    // [n_embd_v,n_kv,n_head_kv,ne3], mask [n_kv,n_batch,ne32,ne33]; result
    // [n_embd_v,n_head,n_batch,ne3] (permuted).
    GGML_API struct ggml_tensor * ggml_flash_attn_ext(
            struct ggml_context * ctx,
            struct ggml_tensor * q,
            struct ggml_tensor * k,
            struct ggml_tensor * v,
            struct ggml_tensor * mask,
            float scale,
            float max_bias,
            float logit_softcap);

    // Sets the precision of a FLASH_ATTN_EXT node.
    GGML_DEPRECATED(GGML_API void ggml_flash_attn_ext_set_prec(struct ggml_tensor * a, enum ggml_prec prec),
        "use ggml_prec_set_acc() instead");

    // Precision of a FLASH_ATTN_EXT node.
    GGML_API enum ggml_prec ggml_flash_attn_ext_get_prec(const struct ggml_tensor * a);

    // Declares that each mask row has at most n_kv_max finite entries (sparse K/V); 0 disables.
    GGML_API void ggml_flash_attn_ext_set_n_kv_max(struct ggml_tensor * a, int32_t n_kv_max);

    // Adds per-head attention sinks (F32 [n_head]) to a FLASH_ATTN_EXT node.
    GGML_API void ggml_flash_attn_ext_add_sinks(struct ggml_tensor * a, struct ggml_tensor * sinks);

    // Gradient of flash attention (d is the incoming gradient).
    GGML_API struct ggml_tensor * ggml_flash_attn_back(
            struct ggml_context * ctx,
            struct ggml_tensor * q,
            struct ggml_tensor * k,
            struct ggml_tensor * v,
            struct ggml_tensor * d,
            bool masked);

    // Mamba causal 1-d convolution of the state-prefixed sequence sx with kernel c.
    GGML_API struct ggml_tensor * ggml_ssm_conv(
            struct ggml_context * ctx,
            struct ggml_tensor * sx,
            struct ggml_tensor * c);

    // Mamba selective scan over the sequence; ids picks each sequence's state.
    GGML_API struct ggml_tensor * ggml_ssm_scan(
            struct ggml_context * ctx,
            struct ggml_tensor * s,
            struct ggml_tensor * x,
            struct ggml_tensor * dt,
            struct ggml_tensor * A,
            struct ggml_tensor * B,
            struct ggml_tensor * C,
            struct ggml_tensor * ids,
            int64_t K);

    // Splits into non-overlapping windows of size w (padding with zeros) - for SAM.
    GGML_API struct ggml_tensor * ggml_win_part(struct ggml_context * ctx, struct ggml_tensor * a, int w);

    // Inverse of ggml_win_part back to width w0 and height h0.
    GGML_API struct ggml_tensor * ggml_win_unpart(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int w0,
            int h0,
            int w);

    // Applies a unary op.
    GGML_API struct ggml_tensor * ggml_unary(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_unary_op op);

    // Applies a unary op in place.
    GGML_API struct ggml_tensor * ggml_unary_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            enum ggml_unary_op op);

    // Relative position table of size [qh, kh] from a - for SAM.
    GGML_API struct ggml_tensor * ggml_get_rel_pos(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            int qh,
            int kh);

    // Adds decomposed relative position biases pw and ph to attention a - for SAM.
    GGML_API struct ggml_tensor * ggml_add_rel_pos(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * pw,
            struct ggml_tensor * ph);

    // ggml_add_rel_pos written over a.
    GGML_API struct ggml_tensor * ggml_add_rel_pos_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * pw,
            struct ggml_tensor * ph);

    // RWKV-6 WKV recurrence.
    GGML_API struct ggml_tensor * ggml_rwkv_wkv6(
            struct ggml_context * ctx,
            struct ggml_tensor * k,
            struct ggml_tensor * v,
            struct ggml_tensor * r,
            struct ggml_tensor * tf,
            struct ggml_tensor * td,
            struct ggml_tensor * state);

    // Gated linear attention recurrence.
    GGML_API struct ggml_tensor * ggml_gated_linear_attn(
            struct ggml_context * ctx,
            struct ggml_tensor * k,
            struct ggml_tensor * v,
            struct ggml_tensor * q,
            struct ggml_tensor * g,
            struct ggml_tensor * state,
            float scale);

    // RWKV-7 WKV recurrence.
    GGML_API struct ggml_tensor * ggml_rwkv_wkv7(
            struct ggml_context * ctx,
            struct ggml_tensor * r,
            struct ggml_tensor * w,
            struct ggml_tensor * k,
            struct ggml_tensor * v,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * state);

    // Solves a*x = b for x with a triangular (left/lower/unit-diagonal flags choose the form).
    GGML_API struct ggml_tensor * ggml_solve_tri(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            bool left,
            bool lower,
            bool uni);

    // Gated delta-rule recurrence: q, k [S_k,H_k,T,n_seqs], v [S_v,H_v,T,n_seqs], g, beta, state
    // [S_v,S_v,H_v,n_seqs]; output holds the attention result then K state snapshots (most recent
    // first).
    GGML_API struct ggml_tensor * ggml_gated_delta_net(
            struct ggml_context * ctx,
            struct ggml_tensor * q,
            struct ggml_tensor * k,
            struct ggml_tensor * v,
            struct ggml_tensor * g,
            struct ggml_tensor * beta,
            struct ggml_tensor * state,
            int64_t K);

    // Sparse-attention index scores: k [n_embd_idx,1,n_kv,ne3], weights [n_head_idx,n_batch,1,ne3]
    // (prescaled), F16 mask -> [n_kv,n_batch,1,ne3].
    GGML_API struct ggml_tensor * ggml_lightning_indexer(
            struct ggml_context * ctx,
            struct ggml_tensor * q,
            struct ggml_tensor * k,
            struct ggml_tensor * weights,
            struct ggml_tensor * mask);

    // Hyper-connection mixing matrix: logits from mixes*scale+base, softmax over dst then Sinkhorn
    // normalisation for n_iter rounds -> [hc,hc,n_tokens].
    GGML_API struct ggml_tensor * ggml_dsv4_hc_comb(
            struct ggml_context * ctx,
            struct ggml_tensor * mixes,
            struct ggml_tensor * scale,
            struct ggml_tensor * base,
            float eps,
            int32_t n_iter);

    // Hyper-connection read: sum over streams of x weighted per token -> [n_embd,n_tokens].
    GGML_API struct ggml_tensor * ggml_dsv4_hc_pre(
            struct ggml_context * ctx,
            struct ggml_tensor * x,
            struct ggml_tensor * weights);

    // Hyper-connection read with an elementwise sigmoid gate and a scale.
    GGML_API struct ggml_tensor * ggml_dsv4_hc_pre_gated(
            struct ggml_context * ctx,
            struct ggml_tensor * x,
            struct ggml_tensor * gate,
            float scale);

    // Hyper-connection write: x*post plus residual streams mixed by comb (identity when comb is
    // NULL).
    GGML_API struct ggml_tensor * ggml_dsv4_hc_post(
            struct ggml_context * ctx,
            struct ggml_tensor * x,
            struct ggml_tensor * residual,
            struct ggml_tensor * post,
            struct ggml_tensor * comb);

    // Callbacks of custom ops: compute part ith of nth of dst from the operands.
    typedef void (*ggml_custom1_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a, int ith, int nth, void * userdata);
    typedef void (*ggml_custom2_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b,
                                      int ith, int nth, void * userdata);
    typedef void (*ggml_custom3_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b,
                                      const struct ggml_tensor * c, int ith, int nth, void * userdata);

    // n_tasks value meaning "as many threads as the computation has".
#define GGML_N_TASKS_MAX (-1)

    //
    // Custom operations. The callback runs on each of n_tasks threads (GGML_N_TASKS_MAX:
    // as many as the backend uses) with its thread index ith of nth and writes dst.
    //

    // Custom op of one tensor; the result has a's shape.
    GGML_API struct ggml_tensor * ggml_map_custom1(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            ggml_custom1_op_t fun,
            int n_tasks,
            void * userdata);

    // Custom op of one tensor writing over a.
    GGML_API struct ggml_tensor * ggml_map_custom1_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            ggml_custom1_op_t fun,
            int n_tasks,
            void * userdata);

    // Custom op of two tensors; the result has a's shape.
    GGML_API struct ggml_tensor * ggml_map_custom2(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            ggml_custom2_op_t fun,
            int n_tasks,
            void * userdata);

    // Custom op of two tensors writing over a.
    GGML_API struct ggml_tensor * ggml_map_custom2_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            ggml_custom2_op_t fun,
            int n_tasks,
            void * userdata);

    // Custom op of three tensors; the result has a's shape.
    GGML_API struct ggml_tensor * ggml_map_custom3(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            ggml_custom3_op_t fun,
            int n_tasks,
            void * userdata);

    // Custom op of three tensors writing over a.
    GGML_API struct ggml_tensor * ggml_map_custom3_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c,
            ggml_custom3_op_t fun,
            int n_tasks,
            void * userdata);

    // Callback of ggml_custom_4d / ggml_custom_inplace: the operands are dst->src[0..n_args-1].
    typedef void (*ggml_custom_op_t)(struct ggml_tensor * dst, int ith, int nth, void * userdata);

    // Custom op of n_args tensors producing a new tensor of the given type and shape.
    GGML_API struct ggml_tensor * ggml_custom_4d(
            struct ggml_context * ctx,
            enum ggml_type type,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3,
            struct ggml_tensor ** args,
            int n_args,
            ggml_custom_op_t fun,
            int n_tasks,
            void * userdata);

    // Custom op of n_args tensors writing over a.
    GGML_API struct ggml_tensor * ggml_custom_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor ** args,
            int n_args,
            ggml_custom_op_t fun,
            int n_tasks,
            void * userdata);

    //
    // Losses and optimizer steps
    //

    // Cross-entropy of softmax(a) against the probabilities b, as a scalar.
    GGML_API struct ggml_tensor * ggml_cross_entropy_loss(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b);

    // Gradient of the cross-entropy loss: a the incoming gradient, b the logits, c the labels.
    GGML_API struct ggml_tensor * ggml_cross_entropy_loss_back(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * b,
            struct ggml_tensor * c);

    // One AdamW step on a with gradient grad and moments m, v; adamw_params holds 7 floats (alpha,
    // beta1, beta2, eps, wd, beta1h, beta2h).
    GGML_API struct ggml_tensor * ggml_opt_step_adamw(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * grad,
            struct ggml_tensor * m,
            struct ggml_tensor * v,
            struct ggml_tensor * adamw_params);

    // One SGD step on a; sgd_params holds 2 floats (alpha, wd).
    GGML_API struct ggml_tensor * ggml_opt_step_sgd(
            struct ggml_context * ctx,
            struct ggml_tensor * a,
            struct ggml_tensor * grad,
            struct ggml_tensor * sgd_params);

    //
    // Graphs
    //

    // Adds all n_tensors branches to the graph but computes only tensors[idx]; returns that tensor.
    GGML_API struct ggml_tensor * ggml_build_forward_select(
            struct ggml_cgraph * cgraph,
            struct ggml_tensor ** tensors,
            int n_tensors,
            int idx);

    // Adds tensor and every node it depends on to the graph.
    GGML_API void ggml_build_forward_expand(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

    // Like ggml_build_forward_expand, keeping the nodes in creation order.
    GGML_API void ggml_build_forward_order(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

    // Adds the gradient nodes for every parameter; grad_accs optionally gives accumulators per
    // node.
    GGML_API void ggml_build_backward_expand(
            struct ggml_context * ctx,
            struct ggml_cgraph * cgraph,
            struct ggml_tensor ** grad_accs);

    // New graph of GGML_DEFAULT_GRAPH_SIZE nodes, without gradients.
    GGML_API struct ggml_cgraph * ggml_new_graph(struct ggml_context * ctx);

    // New graph with room for size nodes, with gradient slots when grads is true.
    GGML_API struct ggml_cgraph * ggml_new_graph_custom(struct ggml_context * ctx, size_t size, bool grads);

    // Copy of a graph in ctx (with gradient slots if force_grads).
    GGML_API struct ggml_cgraph * ggml_graph_dup(
            struct ggml_context * ctx,
            struct ggml_cgraph * cgraph,
            bool force_grads);

    // Copies src's nodes into dst (dst must be at least as large).
    GGML_API void ggml_graph_cpy(struct ggml_cgraph * src, struct ggml_cgraph * dst);

    // Zeroes the gradients and optimizer moments of the graph.
    GGML_API void ggml_graph_reset(struct ggml_cgraph * cgraph);

    // Removes every node and leaf.
    GGML_API void ggml_graph_clear(struct ggml_cgraph * cgraph);

    // Capacity of the graph in nodes.
    GGML_API int ggml_graph_size(struct ggml_cgraph * cgraph);

    // Node i; negative i counts from the end (-1 is the last node).
    GGML_API struct ggml_tensor * ggml_graph_node(struct ggml_cgraph * cgraph, int i);

    // The graph's array of nodes.
    GGML_API struct ggml_tensor ** ggml_graph_nodes(struct ggml_cgraph * cgraph);

    // Number of nodes.
    GGML_API int ggml_graph_n_nodes(struct ggml_cgraph * cgraph);

    // Appends a node (capacity must allow it).
    GGML_API void ggml_graph_add_node(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

    // Context bytes a default-size graph takes.
    GGML_API size_t ggml_graph_overhead(void);

    // Context bytes a graph of this size takes.
    GGML_API size_t ggml_graph_overhead_custom(size_t size, bool grads);

    // Node or leaf with this name; NULL if none.
    GGML_API struct ggml_tensor * ggml_graph_get_tensor(
            const struct ggml_cgraph * cgraph,
            const char * name);

    // Gradient of a node; NULL if none.
    GGML_API struct ggml_tensor * ggml_graph_get_grad(
            const struct ggml_cgraph * cgraph,
            const struct ggml_tensor * node);

    // Gradient accumulator of a node; NULL if none.
    GGML_API struct ggml_tensor * ggml_graph_get_grad_acc(
            const struct ggml_cgraph * cgraph,
            const struct ggml_tensor * node);

    // Logs the nodes and leafs of a graph.
    GGML_API void ggml_graph_print(const struct ggml_cgraph * cgraph);

    // Writes the graph in Graphviz dot format (gb is the backward graph or NULL).
    GGML_API void ggml_graph_dump_dot(
            const struct ggml_cgraph * gb,
            const struct ggml_cgraph * cgraph,
            const char * filename);

    // Receives every log message; text is one message or part of one (GGML_LOG_LEVEL_CONT).
    typedef void (*ggml_log_callback)(enum ggml_log_level level, const char * text, void * user_data);

    //
    // Logging
    //

    // Current log callback and its user data.
    GGML_API void ggml_log_get(ggml_log_callback * log_callback, void ** user_data);

    // Sets the log callback (NULL: log to stderr).
    GGML_API void ggml_log_set(ggml_log_callback log_callback, void * user_data);

    // Fills the tensor's data with zeros; returns it.
    GGML_API struct ggml_tensor * ggml_set_zero(struct ggml_tensor * tensor);

    //
    // Quantization
    //

    // Prepares the tables a quantized type needs (no-op for most types).
    GGML_API void ggml_quantize_init(enum ggml_type type);

    // Releases the tables of ggml_quantize_init.
    GGML_API void ggml_quantize_free(void);

    // True when quantizing to this type needs an importance matrix.
    GGML_API bool ggml_quantize_requires_imatrix(enum ggml_type type);

    // Quantizes nrows rows of n_per_row floats, from row start, into dst; returns the bytes
    // written.
    GGML_API size_t ggml_quantize_chunk(
            enum ggml_type type,
            const float * src,
            void * dst,
            int64_t start,
            int64_t nrows,
            int64_t n_per_row,
            const float * imatrix);

    // GGML_RESTRICT: the restrict qualifier, spelled as the compiler wants it.
#ifdef __cplusplus
#    if defined(__GNUC__)
#        define GGML_RESTRICT __restrict__
#    elif defined(__clang__)
#        define GGML_RESTRICT __restrict
#    elif defined(_MSC_VER)
#        define GGML_RESTRICT __restrict
#    else
#        define GGML_RESTRICT
#    endif
#else
#    if defined (_MSC_VER) && (__STDC_VERSION__ < 201112L)
#        define GGML_RESTRICT __restrict
#    else
#        define GGML_RESTRICT restrict
#    endif
#endif

    //
    // Type traits
    //

    // Row converters: k elements of a type to floats, and back.
    typedef void (*ggml_to_float_t)  (const void  * GGML_RESTRICT x, float * GGML_RESTRICT y, int64_t k);
    typedef void (*ggml_from_float_t)(const float * GGML_RESTRICT x, void  * GGML_RESTRICT y, int64_t k);

    // What the library knows about a type, independent of any backend.
    struct ggml_type_traits {
        const char      * type_name;            // short name ("q4_0")
        int64_t           blck_size;            // elements per block
        int64_t           blck_size_interleave; // blocks interleaved in repacked layouts (1 otherwise)
        size_t            type_size;            // bytes per block
        bool              is_quantized;
        ggml_to_float_t   to_float;             // dequantize a row (NULL if not supported)
        ggml_from_float_t from_float_ref;       // quantize a row, scalar reference (NULL if not supported)
    };

    // Properties and reference converters of a type.
    GGML_API const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type);

    //
    // Thread pools (created by ggml_threadpool_new in ggml-cpu.h)
    //

    // Scheduling priority of worker threads.
    enum ggml_sched_priority {
        GGML_SCHED_PRIO_LOW = -1,
        GGML_SCHED_PRIO_NORMAL,
        GGML_SCHED_PRIO_MEDIUM,
        GGML_SCHED_PRIO_HIGH,
        GGML_SCHED_PRIO_REALTIME
    };

    // How a thread pool is set up.
    struct ggml_threadpool_params {
        bool                cpumask[GGML_MAX_N_THREADS]; // CPUs the threads may run on (all false: no pinning)
        int                 n_threads;                   // number of threads
        enum ggml_sched_priority prio;                   // thread priority
        uint32_t            poll;                        // busy-wait level, 0 (none) to 100 (most)
        bool                strict_cpu;                  // pin each thread to one CPU of the mask
        bool                paused;                      // start with the workers asleep
    };

    struct ggml_threadpool; // opaque: a set of worker threads
    typedef struct ggml_threadpool * ggml_threadpool_t;

    //
    // Thread pool parameters
    //

    // Default parameters for n_threads threads.
    GGML_API struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads);

    // Sets p to the defaults for n_threads threads.
    GGML_API void ggml_threadpool_params_init(struct ggml_threadpool_params * p, int n_threads);

    // True when both parameter sets are equal.
    GGML_API bool ggml_threadpool_params_match(
            const struct ggml_threadpool_params * p0,
            const struct ggml_threadpool_params * p1);

#ifdef __cplusplus
}
#endif
