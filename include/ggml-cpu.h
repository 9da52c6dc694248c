#pragma once

// ggml-cpu.h - the CPU backend: computing graphs with a pool of threads, CPU feature queries,
// and element access helpers for tensors in host memory.

#include "ggml.h"
#include "ggml-backend.h"

#ifdef  __cplusplus
extern "C" {
#endif

    // Plan of a CPU computation, from ggml_graph_plan. If work_size > 0 the caller provides
    // work_data (at least work_size bytes) before calling ggml_graph_compute.
    struct ggml_cplan {
        size_t    work_size; // scratch bytes the graph needs
        uint8_t * work_data; // the scratch memory

        int n_threads;
        struct ggml_threadpool * threadpool; // NULL: threads are created for this computation

        // polled between nodes; returning true stops the computation
        ggml_abort_callback abort_callback;
        void *              abort_callback_data;

        bool use_ref; // use the scalar reference kernels
    };

    // Where threads and memory go on NUMA systems.
    enum ggml_numa_strategy {
        GGML_NUMA_STRATEGY_DISABLED   = 0,
        GGML_NUMA_STRATEGY_DISTRIBUTE = 1, // spread threads over all nodes
        GGML_NUMA_STRATEGY_ISOLATE    = 2, // keep threads on the node the process started on
        GGML_NUMA_STRATEGY_NUMACTL    = 3, // follow the CPU set given by numactl
        GGML_NUMA_STRATEGY_MIRROR     = 4,
        GGML_NUMA_STRATEGY_COUNT
    };

    //
    // NUMA
    //

    // Sets the NUMA placement strategy; call once before creating thread pools.
    GGML_BACKEND_API void ggml_numa_init(enum ggml_numa_strategy numa);

    // True when the system has more than one NUMA node.
    GGML_BACKEND_API bool ggml_is_numa(void);

    //
    // Element access helpers (tensor data must be in host memory)
    //

    // New I32 scalar tensor holding value.
    GGML_BACKEND_API struct ggml_tensor * ggml_new_i32(struct ggml_context * ctx, int32_t value);

    // New F32 scalar tensor holding value.
    GGML_BACKEND_API struct ggml_tensor * ggml_new_f32(struct ggml_context * ctx, float value);

    // Sets every element to value; returns the tensor.
    GGML_BACKEND_API struct ggml_tensor * ggml_set_i32(struct ggml_tensor * tensor, int32_t value);

    // Sets every element to value; returns the tensor.
    GGML_BACKEND_API struct ggml_tensor * ggml_set_f32(struct ggml_tensor * tensor, float value);

    // Element i (flat index) as int32.
    GGML_BACKEND_API int32_t ggml_get_i32_1d(const struct ggml_tensor * tensor, int i);

    // Sets element i (flat index) from an int32.
    GGML_BACKEND_API void ggml_set_i32_1d(const struct ggml_tensor * tensor, int i, int32_t value);

    // Element at (i0,i1,i2,i3) as int32.
    GGML_BACKEND_API int32_t ggml_get_i32_nd(
            const struct ggml_tensor * tensor,
            int i0,
            int i1,
            int i2,
            int i3);

    // Sets element (i0,i1,i2,i3) from an int32.
    GGML_BACKEND_API void ggml_set_i32_nd(
            const struct ggml_tensor * tensor,
            int i0,
            int i1,
            int i2,
            int i3,
            int32_t value);

    // Element i (flat index) as float.
    GGML_BACKEND_API float ggml_get_f32_1d(const struct ggml_tensor * tensor, int i);

    // Sets element i (flat index) from a float.
    GGML_BACKEND_API void ggml_set_f32_1d(const struct ggml_tensor * tensor, int i, float value);

    // Element at (i0,i1,i2,i3) as float.
    GGML_BACKEND_API float ggml_get_f32_nd(
            const struct ggml_tensor * tensor,
            int i0,
            int i1,
            int i2,
            int i3);

    // Sets element (i0,i1,i2,i3) from a float.
    GGML_BACKEND_API void ggml_set_f32_nd(
            const struct ggml_tensor * tensor,
            int i0,
            int i1,
            int i2,
            int i3,
            float value);

    //
    // Thread pools
    //

    // Starts a pool of worker threads.
    GGML_BACKEND_API struct ggml_threadpool * ggml_threadpool_new(struct ggml_threadpool_params * params);

    // Stops and releases a pool.
    GGML_BACKEND_API void ggml_threadpool_free(struct ggml_threadpool * threadpool);

    // Number of threads of the pool.
    GGML_BACKEND_API int ggml_threadpool_get_n_threads(struct ggml_threadpool * threadpool);

    // Puts the workers to sleep.
    GGML_BACKEND_API void ggml_threadpool_pause(struct ggml_threadpool * threadpool);

    // Wakes the workers.
    GGML_BACKEND_API void ggml_threadpool_resume(struct ggml_threadpool * threadpool);

    //
    // Computing graphs on the CPU
    //

    // Plans a computation: work buffer size and threads. The caller allocates cplan.work_data when
    // work_size > 0.
    GGML_BACKEND_API struct ggml_cplan ggml_graph_plan(
            const struct ggml_cgraph * cgraph,
            int n_threads,
            struct ggml_threadpool * threadpool);

    // Computes the graph with a plan.
    GGML_BACKEND_API enum ggml_status ggml_graph_compute(
            struct ggml_cgraph * cgraph,
            struct ggml_cplan * cplan);

    // Plans and computes the graph, taking the work buffer from ctx.
    GGML_BACKEND_API enum ggml_status ggml_graph_compute_with_ctx(
            struct ggml_context * ctx,
            struct ggml_cgraph * cgraph,
            int n_threads);

    //
    // CPU features (1 when the build uses it and the CPU has it, else 0)
    //

    // SSE3.
    GGML_BACKEND_API int ggml_cpu_has_sse3(void);

    // SSSE3.
    GGML_BACKEND_API int ggml_cpu_has_ssse3(void);

    // AVX.
    GGML_BACKEND_API int ggml_cpu_has_avx(void);

    // AVX-VNNI.
    GGML_BACKEND_API int ggml_cpu_has_avx_vnni(void);

    // AVX2.
    GGML_BACKEND_API int ggml_cpu_has_avx2(void);

    // BMI2.
    GGML_BACKEND_API int ggml_cpu_has_bmi2(void);

    // F16C.
    GGML_BACKEND_API int ggml_cpu_has_f16c(void);

    // FMA.
    GGML_BACKEND_API int ggml_cpu_has_fma(void);

    // AVX-512 F.
    GGML_BACKEND_API int ggml_cpu_has_avx512(void);

    // AVX-512 VBMI.
    GGML_BACKEND_API int ggml_cpu_has_avx512_vbmi(void);

    // AVX-512 VNNI.
    GGML_BACKEND_API int ggml_cpu_has_avx512_vnni(void);

    // AVX-512 BF16.
    GGML_BACKEND_API int ggml_cpu_has_avx512_bf16(void);

    // AMX INT8.
    GGML_BACKEND_API int ggml_cpu_has_amx_int8(void);

    // ARM NEON.
    GGML_BACKEND_API int ggml_cpu_has_neon(void);

    // ARM FMA.
    GGML_BACKEND_API int ggml_cpu_has_arm_fma(void);

    // ARM FP16 vector arithmetic.
    GGML_BACKEND_API int ggml_cpu_has_fp16_va(void);

    // ARM dot product.
    GGML_BACKEND_API int ggml_cpu_has_dotprod(void);

    // ARM INT8 matrix multiply (i8mm).
    GGML_BACKEND_API int ggml_cpu_has_matmul_int8(void);

    // ARM SVE.
    GGML_BACKEND_API int ggml_cpu_has_sve(void);

    // SVE vector length in bytes (0 without SVE).
    GGML_BACKEND_API int ggml_cpu_get_sve_cnt(void);

    // ARM SME.
    GGML_BACKEND_API int ggml_cpu_has_sme(void);

    // ARM SME2.
    GGML_BACKEND_API int ggml_cpu_has_sme2(void);

    // RISC-V vector extension.
    GGML_BACKEND_API int ggml_cpu_has_riscv_v(void);

    // RISC-V vector length in bytes (0 without RVV).
    GGML_BACKEND_API int ggml_cpu_get_rvv_vlen(void);

    // POWER VSX.
    GGML_BACKEND_API int ggml_cpu_has_vsx(void);

    // s390x vector extensions.
    GGML_BACKEND_API int ggml_cpu_has_vxe(void);

    // WebAssembly SIMD.
    GGML_BACKEND_API int ggml_cpu_has_wasm_simd(void);

    // llamafile SGEMM kernels.
    GGML_BACKEND_API int ggml_cpu_has_llamafile(void);

    // Dot products of n elements: s[0] = x . y. With nrc > 1, nrc results are computed at once,
    // x and y advancing by bx and by bytes and s by bs floats (for kernels that do several rows).
    typedef void (*ggml_vec_dot_t)  (int n, float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT x, size_t bx,
                                     const void * GGML_RESTRICT y, size_t by, int nrc);

    // CPU kernels of a type.
    struct ggml_type_traits_cpu {
        ggml_from_float_t from_float;   // converts a row of floats to this type
        ggml_vec_dot_t    vec_dot;      // dot product of a row of this type with a row of vec_dot_type
        enum ggml_type    vec_dot_type; // type the other operand of vec_dot must have
        int64_t           nrows;        // rows vec_dot handles per call
    };

    // CPU kernels of a type: conversion from float and dot product.
    GGML_BACKEND_API const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type);

    //
    // The CPU backend
    //

    // Initialises the CPU tables (called by ggml_init and the CPU backend; safe to call again).
    GGML_BACKEND_API void ggml_cpu_init(void);

    // New CPU backend.
    GGML_BACKEND_API ggml_backend_t ggml_backend_cpu_init(void);

    // True when the backend is a CPU backend.
    GGML_BACKEND_API bool ggml_backend_is_cpu(ggml_backend_t backend);

    // Number of threads the CPU backend computes with.
    GGML_BACKEND_API void ggml_backend_cpu_set_n_threads(ggml_backend_t backend_cpu, int n_threads);

    // Thread pool the CPU backend uses (NULL: its own).
    GGML_BACKEND_API void ggml_backend_cpu_set_threadpool(
            ggml_backend_t backend_cpu,
            ggml_threadpool_t threadpool);

    // Callback polled during compute; returning true aborts the computation.
    GGML_BACKEND_API void ggml_backend_cpu_set_abort_callback(
            ggml_backend_t backend_cpu,
            ggml_abort_callback abort_callback,
            void * abort_callback_data);

    // Makes the backend use the scalar reference kernels (for testing).
    GGML_BACKEND_API void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref);

    // Registry of the CPU backend.
    GGML_BACKEND_API ggml_backend_reg_t ggml_backend_cpu_reg(void);

    // Copies n floats.
    GGML_BACKEND_API void ggml_cpu_fp32_to_fp32(const float *, float *, int64_t);

    // Converts n floats to int32 (truncating).
    GGML_BACKEND_API void ggml_cpu_fp32_to_i32(const float *, int32_t *, int64_t);

    // Converts n floats to binary16 (SIMD).
    GGML_BACKEND_API void ggml_cpu_fp32_to_fp16(const float *, ggml_fp16_t *, int64_t);

    // Converts n binary16 values to float (SIMD).
    GGML_BACKEND_API void ggml_cpu_fp16_to_fp32(const ggml_fp16_t *, float *, int64_t);

    // Converts n floats to bfloat16 (SIMD).
    GGML_BACKEND_API void ggml_cpu_fp32_to_bf16(const float *, ggml_bf16_t *, int64_t);

    // Converts n bfloat16 values to float (SIMD).
    GGML_BACKEND_API void ggml_cpu_bf16_to_fp32(const ggml_bf16_t *, float *, int64_t);

#ifdef __cplusplus
}
#endif
