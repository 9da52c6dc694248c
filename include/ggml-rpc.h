#pragma once

// ggml-rpc.h - backends on remote machines (RPC protocol 7.0.0), and the server that serves
// local devices to them.

#include "ggml-backend.h"

#ifdef  __cplusplus
extern "C" {
#endif

// The protocol version; a client talks to servers of the same major and an equal or lower minor.
#define RPC_PROTO_MAJOR_VERSION    7
#define RPC_PROTO_MINOR_VERSION    0
#define RPC_PROTO_PATCH_VERSION    0

#ifdef  __cplusplus
// op numbers travel on the wire: a new op changes the protocol
static_assert(GGML_OP_COUNT == 101, "GGML_OP_COUNT has changed - update RPC_PROTO_PATCH_VERSION");
#endif

// Most servers one client is expected to use.
#define GGML_RPC_MAX_SERVERS       16

// A backend on device `device` of the server at `endpoint` ("host:port"); NULL when the server
// cannot be reached or has no such device.
GGML_BACKEND_API ggml_backend_t ggml_backend_rpc_init(const char * endpoint, uint32_t device);

// True when the backend is an RPC backend.
GGML_BACKEND_API bool ggml_backend_is_rpc(ggml_backend_t backend);

// The buffer type of a server device (kept for the life of the process).
GGML_BACKEND_API ggml_backend_buffer_type_t ggml_backend_rpc_buffer_type(const char * endpoint, uint32_t device);

// Free and total memory of a server device, as the server reports them.
GGML_BACKEND_API void ggml_backend_rpc_get_device_memory(const char * endpoint, uint32_t device, size_t * free, size_t * total);

// Serves `devices` at `endpoint` to one client at a time, until the process ends. `cache_dir`
// (or NULL) is where uploaded weights are kept by hash, so a client can skip sending them again.
GGML_BACKEND_API void ggml_backend_rpc_start_server(const char * endpoint, const char * cache_dir,
                                                    size_t n_threads, size_t n_devices, ggml_backend_dev_t * devices);

// The "RPC" registry (no devices of its own) and the registry of one server's devices.
GGML_BACKEND_API ggml_backend_reg_t ggml_backend_rpc_reg(void);
GGML_BACKEND_API ggml_backend_reg_t ggml_backend_rpc_add_server(const char * endpoint);

#ifdef  __cplusplus
}
#endif
