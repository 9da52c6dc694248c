#pragma once

// ggml-alloc.h - placing tensors in backend buffers.
//
// Two allocators: ggml_tallocr hands out consecutive ranges of one buffer (for weights), and
// ggml_gallocr plans a whole graph, so that intermediate results whose last reader has run
// share memory.

#include "ggml.h"

#ifdef  __cplusplus
extern "C" {
#endif

// Handles of ggml-backend.h, repeated here so this header stands alone.
typedef struct ggml_backend_buffer_type * ggml_backend_buffer_type_t;
typedef struct ggml_backend_buffer * ggml_backend_buffer_t;
typedef struct ggml_backend * ggml_backend_t;

// Linear allocator state: the next tensor goes at base + offset, rounded up to alignment.
struct ggml_tallocr {
    ggml_backend_buffer_t buffer;
    void * base;
    size_t alignment;
    size_t offset;
};

// Opaque graph allocator.
typedef struct ggml_gallocr * ggml_gallocr_t;

//
// Linear allocator: places tensors one after another in a buffer
//

// Allocator starting at the base of buffer.
GGML_API struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer);

// Gives tensor the next aligned range of the buffer.
GGML_API enum ggml_status ggml_tallocr_alloc(struct ggml_tallocr * talloc, struct ggml_tensor * tensor);

//
// Graph allocator: plans tensor memory for a whole graph, reusing memory of
// intermediate results that are no longer needed
//

// Graph allocator over one buffer type.
GGML_API ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft);

// Graph allocator over n_bufs buffer types.
GGML_API ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t * bufts, int n_bufs);

// Releases the allocator and its buffers.
GGML_API void ggml_gallocr_free(ggml_gallocr_t galloc);

// Sizes the buffers for the worst case of graph (optional: alloc_graph grows them as needed); false
// on failure.
GGML_API bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph);

// Computes the buffer sizes reserve_n would need, without allocating.
GGML_API void ggml_gallocr_reserve_n_size(
        ggml_gallocr_t galloc,
        struct ggml_cgraph * graph,
        const int * node_buffer_ids,
        const int * leaf_buffer_ids,
        size_t * sizes);

// Like reserve with an explicit buffer for each node and leaf.
GGML_API bool ggml_gallocr_reserve_n(
        ggml_gallocr_t galloc,
        struct ggml_cgraph * graph,
        const int * node_buffer_ids,
        const int * leaf_buffer_ids);

// Allocates every tensor of graph; false on failure.
GGML_API bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph);

// Size of buffer buffer_id.
GGML_API size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);

//
// Allocating all tensors of a context in one backend buffer
//

// Bytes ggml_backend_alloc_ctx_tensors_from_buft would allocate.
GGML_API size_t ggml_backend_alloc_ctx_tensors_from_buft_size(
        struct ggml_context * ctx,
        ggml_backend_buffer_type_t buft);

// Allocates a buffer of type buft holding every unallocated tensor of ctx; NULL on failure.
GGML_API struct ggml_backend_buffer * ggml_backend_alloc_ctx_tensors_from_buft(
        struct ggml_context * ctx,
        ggml_backend_buffer_type_t buft);

// Same, with the backend's default buffer type.
GGML_API struct ggml_backend_buffer * ggml_backend_alloc_ctx_tensors(
        struct ggml_context * ctx,
        ggml_backend_t backend);

#ifdef __cplusplus
}
#endif
