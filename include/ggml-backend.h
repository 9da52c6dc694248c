#pragma once

// ggml-backend.h - devices, memory and computation.
//
// The pieces, from the bottom up:
//   - a registry (ggml_backend_reg_t) is one backend implementation (CPU, CUDA, ...) and lists
//     its devices; registries are built in or loaded from plugins (ggml_backend_load);
//   - a device (ggml_backend_dev_t) describes one piece of hardware and creates backends and
//     buffer types for it;
//   - a buffer type (ggml_backend_buffer_type_t) allocates buffers (ggml_backend_buffer_t) of
//     one kind of memory; tensors are placed in buffers (see ggml-alloc.h);
//   - a backend (ggml_backend_t) is a queue of work on a device: it copies tensor data and
//     computes graphs;
//   - the scheduler (ggml_backend_sched_t) runs one graph over several backends.

#include "ggml.h"
#include "ggml-alloc.h"

// GGML_BACKEND_API marks functions of backend libraries (ggml-cpu.h, ggml-cuda.h, ...).
// Define GGML_BACKEND_SHARED when linking against a shared backend library (and
// GGML_BACKEND_BUILD when building one).
#ifdef GGML_BACKEND_SHARED
#    if defined(_WIN32) && !defined(__MINGW32__)
#        ifdef GGML_BACKEND_BUILD
#            define GGML_BACKEND_API __declspec(dllexport) extern
#        else
#            define GGML_BACKEND_API __declspec(dllimport) extern
#        endif
#    else
#        define GGML_BACKEND_API __attribute__ ((visibility ("default"))) extern
#    endif
#else
#    define GGML_BACKEND_API extern
#endif

#ifdef  __cplusplus
extern "C" {
#endif

    // Handles (all opaque here; backend implementations see the structs in ggml-backend-impl.h).
    typedef struct ggml_backend_buffer_type * ggml_backend_buffer_type_t;
    typedef struct ggml_backend_buffer * ggml_backend_buffer_t;
    typedef struct ggml_backend_event * ggml_backend_event_t;
    typedef struct ggml_backend * ggml_backend_t;
    typedef void * ggml_backend_graph_plan_t;
    typedef struct ggml_backend_reg * ggml_backend_reg_t;
    typedef struct ggml_backend_device * ggml_backend_dev_t;

    //
    // Buffer types: the kinds of memory a device can allocate
    //

    // Name of the buffer type.
    GGML_API const char * ggml_backend_buft_name(ggml_backend_buffer_type_t buft);

    // Allocates a buffer of size bytes; NULL on failure.
    GGML_API ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(
            ggml_backend_buffer_type_t buft,
            size_t size);

    // Alignment tensors in buffers of this type need.
    GGML_API size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft);

    // Largest single buffer this type can allocate.
    GGML_API size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft);

    // Bytes a tensor needs in this buffer type (may exceed ggml_nbytes).
    GGML_API size_t ggml_backend_buft_get_alloc_size(
            ggml_backend_buffer_type_t buft,
            const struct ggml_tensor * tensor);

    // True when the memory is directly addressable by the CPU.
    GGML_API bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft);

    // Device the buffer type belongs to (may be NULL).
    GGML_API ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft);

    // What a buffer holds; the scheduler uses it to decide where ops run.
    enum ggml_backend_buffer_usage {
        GGML_BACKEND_BUFFER_USAGE_ANY     = 0,
        GGML_BACKEND_BUFFER_USAGE_WEIGHTS = 1, // model weights
        GGML_BACKEND_BUFFER_USAGE_COMPUTE = 2, // intermediate results
    };

    //
    // Buffers
    //

    // Name of the buffer's type.
    GGML_API const char * ggml_backend_buffer_name(ggml_backend_buffer_t buffer);

    // Releases a buffer (NULL is allowed).
    GGML_API void ggml_backend_buffer_free(ggml_backend_buffer_t buffer);

    // Address of the start of the buffer.
    GGML_API void * ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer);

    // Size of the buffer in bytes.
    GGML_API size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer);

    // Lets the buffer set up backend state for a tensor placed in it.
    GGML_API enum ggml_status ggml_backend_buffer_init_tensor(
            ggml_backend_buffer_t buffer,
            struct ggml_tensor * tensor);

    // Alignment of the buffer's type.
    GGML_API size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer);

    // Largest size of the buffer's type.
    GGML_API size_t ggml_backend_buffer_get_max_size(ggml_backend_buffer_t buffer);

    // Bytes the tensor needs in this buffer.
    GGML_API size_t ggml_backend_buffer_get_alloc_size(
            ggml_backend_buffer_t buffer,
            const struct ggml_tensor * tensor);

    // Sets every byte of the buffer to value.
    GGML_API void ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value);

    // True when the buffer is host memory.
    GGML_API bool ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer);

    // Records what the buffer holds (weights, compute, ...).
    GGML_API void ggml_backend_buffer_set_usage(
            ggml_backend_buffer_t buffer,
            enum ggml_backend_buffer_usage usage);

    // What the buffer holds.
    GGML_API enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer);

    // Type of the buffer.
    GGML_API ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer);

    // Drops per-tensor state the buffer keeps.
    GGML_API void ggml_backend_buffer_reset(ggml_backend_buffer_t buffer);

    // Copies src's data into dst, across buffers of any kind (same layout required).
    GGML_API void ggml_backend_tensor_copy(const struct ggml_tensor * src, struct ggml_tensor * dst);

    //
    // Backends: a stream of work on one device
    //

    // Identifier of the backend's implementation.
    GGML_API ggml_guid_t ggml_backend_guid(ggml_backend_t backend);

    // Name of the backend.
    GGML_API const char * ggml_backend_name(ggml_backend_t backend);

    // Releases the backend (NULL is allowed).
    GGML_API void ggml_backend_free(ggml_backend_t backend);

    // Buffer type the backend prefers.
    GGML_API ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend);

    // Allocates a buffer of the default type.
    GGML_API ggml_backend_buffer_t ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size);

    // Alignment of the default buffer type.
    GGML_API size_t ggml_backend_get_alignment(ggml_backend_t backend);

    // Largest size of the default buffer type.
    GGML_API size_t ggml_backend_get_max_size(ggml_backend_t backend);

    // Queues a copy of size bytes from data into the tensor at offset.
    GGML_API void ggml_backend_tensor_set_async(
            ggml_backend_t backend,
            struct ggml_tensor * tensor,
            const void * data,
            size_t offset,
            size_t size);

    // Queues a copy of size bytes of the tensor at offset into data.
    GGML_API void ggml_backend_tensor_get_async(
            ggml_backend_t backend,
            const struct ggml_tensor * tensor,
            void * data,
            size_t offset,
            size_t size);

    // Queues n_copies copies of size bytes, advancing by the two strides.
    GGML_API void ggml_backend_tensor_set_2d_async(
            ggml_backend_t backend,
            struct ggml_tensor * tensor,
            const void * data,
            size_t offset,
            size_t size,
            size_t n_copies,
            size_t stride_tensor,
            size_t stride_data);

    // Queues n_copies reads of size bytes, advancing by the two strides.
    GGML_API void ggml_backend_tensor_get_2d_async(
            ggml_backend_t backend,
            const struct ggml_tensor * tensor,
            void * data,
            size_t offset,
            size_t size,
            size_t n_copies,
            size_t stride_tensor,
            size_t stride_data);

    // Copies size bytes from data into the tensor at offset (tensor must be allocated).
    GGML_API void ggml_backend_tensor_set(
            struct ggml_tensor * tensor,
            const void * data,
            size_t offset,
            size_t size);

    // Copies size bytes of the tensor at offset into data.
    GGML_API void ggml_backend_tensor_get(
            const struct ggml_tensor * tensor,
            void * data,
            size_t offset,
            size_t size);

    // Copies n_copies chunks of size bytes into the tensor, advancing by the two strides.
    GGML_API void ggml_backend_tensor_set_2d(
            struct ggml_tensor * tensor,
            const void * data,
            size_t offset,
            size_t size,
            size_t n_copies,
            size_t stride_tensor,
            size_t stride_data);

    // Copies n_copies chunks of size bytes out of the tensor, advancing by the two strides.
    GGML_API void ggml_backend_tensor_get_2d(
            const struct ggml_tensor * tensor,
            void * data,
            size_t offset,
            size_t size,
            size_t n_copies,
            size_t stride_tensor,
            size_t stride_data);

    // Sets size bytes of the tensor at offset to value.
    GGML_API void ggml_backend_tensor_memset(
            struct ggml_tensor * tensor,
            uint8_t value,
            size_t offset,
            size_t size);

    // Waits until all queued work of the backend is done.
    GGML_API void ggml_backend_synchronize(ggml_backend_t backend);

    // Prepares a reusable plan for computing cgraph.
    GGML_API ggml_backend_graph_plan_t ggml_backend_graph_plan_create(
            ggml_backend_t backend,
            struct ggml_cgraph * cgraph);

    // Releases a plan.
    GGML_API void ggml_backend_graph_plan_free(ggml_backend_t backend, ggml_backend_graph_plan_t plan);

    // Runs a plan.
    GGML_API enum ggml_status ggml_backend_graph_plan_compute(
            ggml_backend_t backend,
            ggml_backend_graph_plan_t plan);

    // Computes the graph and waits for it.
    GGML_API enum ggml_status ggml_backend_graph_compute(
            ggml_backend_t backend,
            struct ggml_cgraph * cgraph);

    // Starts computing the graph; ggml_backend_synchronize waits for it.
    GGML_API enum ggml_status ggml_backend_graph_compute_async(
            ggml_backend_t backend,
            struct ggml_cgraph * cgraph);

    // True when the backend can compute op.
    GGML_API bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor * op);

    // True when the backend can use buffers of this type.
    GGML_API bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft);

    // True when op is worth moving to this backend even though its weights live elsewhere.
    GGML_API bool ggml_backend_offload_op(ggml_backend_t backend, const struct ggml_tensor * op);

    // Queues a copy between tensors of two backends (synchronous fallback).
    GGML_API void ggml_backend_tensor_copy_async(
            ggml_backend_t backend_src,
            ggml_backend_t backend_dst,
            const struct ggml_tensor * src,
            struct ggml_tensor * dst);

    // Device of the backend.
    GGML_API ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend);

    //
    // Events: synchronisation points between backends
    //

    // New event on a device; NULL if unsupported.
    GGML_API ggml_backend_event_t ggml_backend_event_new(ggml_backend_dev_t device);

    // Releases an event.
    GGML_API void ggml_backend_event_free(ggml_backend_event_t event);

    // Marks the current point of backend's queue.
    GGML_API void ggml_backend_event_record(ggml_backend_event_t event, ggml_backend_t backend);

    // Waits on the host for the event.
    GGML_API void ggml_backend_event_synchronize(ggml_backend_event_t event);

    // Makes backend's queue wait for the event.
    GGML_API void ggml_backend_event_wait(ggml_backend_t backend, ggml_backend_event_t event);

    // Kinds of devices.
    enum ggml_backend_dev_type {
        GGML_BACKEND_DEVICE_TYPE_CPU,   // the host CPU, through system memory
        GGML_BACKEND_DEVICE_TYPE_GPU,   // a GPU with its own memory
        GGML_BACKEND_DEVICE_TYPE_IGPU,  // a GPU sharing host memory
        GGML_BACKEND_DEVICE_TYPE_ACCEL, // an accelerator used alongside the CPU (BLAS, AMX, ...)
        GGML_BACKEND_DEVICE_TYPE_META,  // several devices acting as one (see ggml_backend_meta_device)
    };

    // What a device can do.
    struct ggml_backend_dev_caps {
        bool async;                // asynchronous copies and compute
        bool host_buffer;          // a pinned host buffer type
        bool buffer_from_host_ptr; // wrapping host memory as a buffer
        bool events;               // events for synchronisation
        bool mmap_support;         // buffers from memory-mapped files
    };

    // Description of a device (ggml_backend_dev_get_props).
    struct ggml_backend_dev_props {
        const char * name;             // as ggml_backend_dev_name
        const char * description;      // as ggml_backend_dev_description
        size_t memory_free;            // bytes
        size_t memory_total;           // bytes
        enum ggml_backend_dev_type type;
        const char * device_id;        // stable identifier such as a PCI bus id; may be NULL
        struct ggml_backend_dev_caps caps;
    };

    //
    // Devices
    //

    // Short name of the device ("CPU", "CUDA0", ...).
    GGML_API const char * ggml_backend_dev_name(ggml_backend_dev_t device);

    // Longer description (e.g. the hardware model).
    GGML_API const char * ggml_backend_dev_description(ggml_backend_dev_t device);

    // Free and total memory of the device in bytes.
    GGML_API void ggml_backend_dev_memory(ggml_backend_dev_t device, size_t * free, size_t * total);

    // Kind of device.
    GGML_API enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t device);

    // Fills props with the device's properties.
    GGML_API void ggml_backend_dev_get_props(
            ggml_backend_dev_t device,
            struct ggml_backend_dev_props * props);

    // Registry the device comes from.
    GGML_API ggml_backend_reg_t ggml_backend_dev_backend_reg(ggml_backend_dev_t device);

    // Starts a backend on the device (params is backend-specific, may be NULL).
    GGML_API ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t device, const char * params);

    // Default buffer type of the device.
    GGML_API ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t device);

    // Host (pinned) buffer type for fast transfers; NULL if none.
    GGML_API ggml_backend_buffer_type_t ggml_backend_dev_host_buffer_type(ggml_backend_dev_t device);

    // Wraps existing host memory as a buffer; NULL if unsupported.
    GGML_API ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(
            ggml_backend_dev_t device,
            void * ptr,
            size_t size,
            size_t max_tensor_size);

    // True when the device can compute op.
    GGML_API bool ggml_backend_dev_supports_op(ggml_backend_dev_t device, const struct ggml_tensor * op);

    // True when the device can use buffers of this type.
    GGML_API bool ggml_backend_dev_supports_buft(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft);

    // True when op is worth moving to this device.
    GGML_API bool ggml_backend_dev_offload_op(ggml_backend_dev_t device, const struct ggml_tensor * op);

    //
    // Registries: one per backend implementation, listing its devices
    //

    // Name of the backend implementation.
    GGML_API const char * ggml_backend_reg_name(ggml_backend_reg_t reg);

    // Number of devices it provides.
    GGML_API size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg);

    // Device index.
    GGML_API ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index);

    // Address of an optional extension function by name (e.g. "ggml_backend_set_n_threads"); NULL
    // if absent.
    GGML_API void * ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char * name);

    //
    // Types of the optional functions a registry may offer through
    // ggml_backend_reg_get_proc_address (the name to ask for is the type's name without _t)
    //

    // Communication between backends for tensor parallelism: set up a group, release it, and
    // sum one tensor per backend in place across the group.
    typedef void * (*ggml_backend_comm_init_t)(ggml_backend_t * backends, size_t n_backends);
    typedef void   (*ggml_backend_comm_free_t)(void * comm_ctx);
    typedef bool   (*ggml_backend_comm_allreduce_tensor_t)(void * comm_ctx, struct ggml_tensor ** tensors);

    // Buffer type splitting matrices by rows across devices in the given proportions.
    typedef ggml_backend_buffer_type_t (*ggml_backend_split_buffer_type_t)(int main_device, const float * tensor_split);

    // Sets the number of threads of a backend.
    typedef void (*ggml_backend_set_n_threads_t)(ggml_backend_t backend, int n_threads);

    // NULL-terminated list of additional buffer types a device supports (e.g. repacked weights).
    typedef ggml_backend_buffer_type_t * (*ggml_backend_dev_get_extra_bufts_t)(ggml_backend_dev_t device);

    // Sets the abort callback of a backend.
    typedef void (*ggml_backend_set_abort_callback_t)(ggml_backend_t backend, ggml_abort_callback abort_callback, void * abort_callback_data);

    // A build or run-time feature of a backend, as a name/value pair.
    struct ggml_backend_feature {
        const char * name;
        const char * value;
    };

    // List of features, ended by an entry with a NULL name.
    typedef struct ggml_backend_feature * (*ggml_backend_get_features_t)(ggml_backend_reg_t reg);

    // Adds a registry to the global list.
    GGML_API void ggml_backend_register(ggml_backend_reg_t reg);

    // Adds a device to the global list.
    GGML_API void ggml_backend_device_register(ggml_backend_dev_t device);

    // Number of registered backends.
    GGML_API size_t ggml_backend_reg_count(void);

    // Registry index.
    GGML_API ggml_backend_reg_t ggml_backend_reg_get(size_t index);

    // Registry with this name (case-insensitive); NULL if none.
    GGML_API ggml_backend_reg_t ggml_backend_reg_by_name(const char * name);

    // Number of registered devices.
    GGML_API size_t ggml_backend_dev_count(void);

    // Device index.
    GGML_API ggml_backend_dev_t ggml_backend_dev_get(size_t index);

    // Device with this name (case-insensitive); NULL if none.
    GGML_API ggml_backend_dev_t ggml_backend_dev_by_name(const char * name);

    // First device of this type; NULL if none.
    GGML_API ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type);

    // Starts a backend on the device with this name.
    GGML_API ggml_backend_t ggml_backend_init_by_name(const char * name, const char * params);

    // Starts a backend on the first device of this type.
    GGML_API ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char * params);

    // Starts a backend on the best device: a GPU if any, else the CPU.
    GGML_API ggml_backend_t ggml_backend_init_best(void);

    // Loads a backend plugin from a shared library and registers it; NULL on failure.
    GGML_API ggml_backend_reg_t ggml_backend_load(const char * path);

    // Unregisters a loaded backend and unloads its library.
    GGML_API void ggml_backend_unload(ggml_backend_reg_t reg);

    // Loads every backend plugin found in the usual places.
    GGML_API void ggml_backend_load_all(void);

    // Loads every backend plugin found in dir_path (NULL: the usual places).
    GGML_API void ggml_backend_load_all_from_path(const char * dir_path);

    // Opaque scheduler.
    typedef struct ggml_backend_sched * ggml_backend_sched_t;

    // Observes nodes during ggml_backend_sched_graph_compute. It is called twice per node: first
    // with ask == true, returning whether the caller wants to see this node (nodes nobody wants
    // are computed together); then, for wanted nodes, with ask == false once the node is
    // computed, returning false to stop the computation.
    typedef bool (*ggml_backend_sched_eval_callback)(struct ggml_tensor * t, bool ask, void * user_data);

    //
    // Scheduler: splits a graph across several backends, copying data between
    // them as needed. Backends are given in priority order; the last must be the CPU.
    //

    // New scheduler over n_backends backends (bufts may be NULL for defaults); parallel keeps
    // several copies of inputs in flight.
    GGML_API ggml_backend_sched_t ggml_backend_sched_new(
            ggml_backend_t * backends,
            ggml_backend_buffer_type_t * bufts,
            int n_backends,
            size_t graph_size,
            bool parallel,
            bool op_offload);

    // Releases the scheduler.
    GGML_API void ggml_backend_sched_free(ggml_backend_sched_t sched);

    // Writes into sizes the buffer size each backend would need for measure_graph.
    GGML_API void ggml_backend_sched_reserve_size(
            ggml_backend_sched_t sched,
            struct ggml_cgraph * measure_graph,
            size_t * sizes);

    // Allocates buffers large enough for measure_graph; false on failure.
    GGML_API bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph);

    // Number of backends.
    GGML_API int ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched);

    // Backend i.
    GGML_API ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i);

    // Number of splits of the last graph.
    GGML_API int ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched);

    // Number of input copies kept (parallel mode).
    GGML_API int ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched);

    // Buffer type used for a backend.
    GGML_API ggml_backend_buffer_type_t ggml_backend_sched_get_buffer_type(
            ggml_backend_sched_t sched,
            ggml_backend_t backend);

    // Size of the compute buffer of a backend.
    GGML_API size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);

    // Pins a node to a backend.
    GGML_API void ggml_backend_sched_set_tensor_backend(
            ggml_backend_sched_t sched,
            struct ggml_tensor * node,
            ggml_backend_t backend);

    // Backend a node was assigned to.
    GGML_API ggml_backend_t ggml_backend_sched_get_tensor_backend(
            ggml_backend_sched_t sched,
            struct ggml_tensor * node);

    // Assigns backends and splits the graph without allocating.
    GGML_API void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph);

    // Splits and allocates the graph; false on failure.
    GGML_API bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph);

    // Computes the graph and waits for it.
    GGML_API enum ggml_status ggml_backend_sched_graph_compute(
            ggml_backend_sched_t sched,
            struct ggml_cgraph * graph);

    // Starts computing the graph.
    GGML_API enum ggml_status ggml_backend_sched_graph_compute_async(
            ggml_backend_sched_t sched,
            struct ggml_cgraph * graph);

    // Waits for all backends of the scheduler.
    GGML_API void ggml_backend_sched_synchronize(ggml_backend_sched_t sched);

    // Forgets the assignments and allocations of the last graph.
    GGML_API void ggml_backend_sched_reset(ggml_backend_sched_t sched);

    // Sets a callback to observe nodes as they are computed.
    GGML_API void ggml_backend_sched_set_eval_callback(
            ggml_backend_sched_t sched,
            ggml_backend_sched_eval_callback callback,
            void * user_data);

    // Most devices one meta device combines.
#define GGML_BACKEND_META_MAX_DEVICES 16

    // How a tensor is spread over the devices of a meta device.
    enum ggml_backend_meta_split_axis {
        GGML_BACKEND_SPLIT_AXIS_0 = 0,          // sliced along dimension 0
        GGML_BACKEND_SPLIT_AXIS_1 = 1,          // ... dimension 1
        GGML_BACKEND_SPLIT_AXIS_2 = 2,          // ... dimension 2
        GGML_BACKEND_SPLIT_AXIS_3 = 3,          // ... dimension 3
        GGML_BACKEND_SPLIT_AXIS_MIRRORED = 10,  // a full copy on every device
        GGML_BACKEND_SPLIT_AXIS_PARTIAL  = 11,  // every device holds a partial sum
        GGML_BACKEND_SPLIT_AXIS_NONE     = 98,  // internal bookkeeping
        GGML_BACKEND_SPLIT_AXIS_UNKNOWN  = 99,  // internal bookkeeping
    };

    //
    // Meta device: one virtual device made of several, tensors split between them
    //

    // Name of a split axis.
    GGML_API const char * ggml_backend_meta_split_axis_name(enum ggml_backend_meta_split_axis split_axis);

    // Split of one tensor. For the dimension axes the tensor is cut into n_segments segments
    // along the axis (usually 1; more for fused tensors such as a QKV matrix, where each part
    // is split on its own), and each segment is divided between the devices:
    // ne[segment*n_devices + device] elements go to each device, and segment s repeats nr[s]
    // times. Over all segments and repetitions the slices add up to the tensor's size.
    struct ggml_backend_meta_split_state {
        enum ggml_backend_meta_split_axis axis;
        int64_t  ne[16*GGML_BACKEND_META_MAX_DEVICES];
        uint32_t nr[16];
        uint32_t n_segments;
    };

    // Chooses the split of a weight tensor (splits of computed tensors follow from these).
    typedef struct ggml_backend_meta_split_state(*ggml_backend_meta_get_split_state_t)(const struct ggml_tensor * tensor, void * userdata);

    // Meta device over n_devs devices; get_split_state says how each weight tensor is split.
    GGML_API ggml_backend_dev_t ggml_backend_meta_device(
            ggml_backend_dev_t * devs,
            size_t n_devs,
            ggml_backend_meta_get_split_state_t get_split_state,
            void * get_split_state_ud);

    // Result of ggml_backend_graph_copy.
    struct ggml_backend_graph_copy {
        ggml_backend_buffer_t buffer;           // holds the copied data
        struct ggml_context * ctx_allocated;    // tensors with data in buffer
        struct ggml_context * ctx_unallocated;  // views and other tensors without own data
        struct ggml_cgraph * graph;             // the copied graph
    };

    //
    // Utilities
    //

    // Copies a graph and its data into a new buffer of the backend.
    GGML_API struct ggml_backend_graph_copy ggml_backend_graph_copy(
            ggml_backend_t backend,
            struct ggml_cgraph * graph);

    // Releases what ggml_backend_graph_copy allocated.
    GGML_API void ggml_backend_graph_copy_free(struct ggml_backend_graph_copy copy);

    // Receives node node_index as computed by each of the two backends; returning false stops
    // the comparison.
    typedef bool (*ggml_backend_eval_callback)(int node_index, struct ggml_tensor * t1, struct ggml_tensor * t2, void * user_data);

    // Runs graph on two backends and calls callback with each pair of nodes (restricted to
    // test_nodes if given); false if the graphs could not be compared.
    GGML_API bool ggml_backend_compare_graph_backend(
            ggml_backend_t backend1,
            ggml_backend_t backend2,
            struct ggml_cgraph * graph,
            ggml_backend_eval_callback callback,
            void * user_data,
            struct ggml_tensor const * const * test_nodes,
            size_t num_test_nodes);

    // Places a tensor at addr inside buffer.
    GGML_API enum ggml_status ggml_backend_tensor_alloc(
            ggml_backend_buffer_t buffer,
            struct ggml_tensor * tensor,
            void * addr);

    // Sets up a view tensor in its source's buffer.
    GGML_API enum ggml_status ggml_backend_view_init(struct ggml_tensor * tensor);

    // Wraps host memory as a CPU buffer.
    GGML_API ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void * ptr, size_t size);

    // The CPU buffer type (plain host memory).
    GGML_API ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void);

#ifdef __cplusplus
}
#endif
