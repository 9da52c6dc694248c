#pragma once

// ggml-cuda.h - the CUDA backend (also built for ROCm/HIP and MUSA, which rename it).

#include "ggml.h"
#include "ggml-backend.h"

#ifdef  __cplusplus
extern "C" {
#endif

// Names of the backend and of its BLAS library, by platform.
#ifdef GGML_USE_HIP
#define GGML_CUDA_NAME "ROCm"
#define GGML_CUBLAS_NAME "hipBLAS"
#elif defined(GGML_USE_MUSA)
#define GGML_CUDA_NAME "MUSA"
#define GGML_CUBLAS_NAME "muBLAS"
#else
#define GGML_CUDA_NAME "CUDA"
#define GGML_CUBLAS_NAME "cuBLAS"
#endif

// Most devices the backend handles.
#define GGML_CUDA_MAX_DEVICES       16

// New CUDA backend on a device.
GGML_BACKEND_API ggml_backend_t ggml_backend_cuda_init(int device);

// True when the backend is a CUDA backend.
GGML_BACKEND_API bool ggml_backend_is_cuda(ggml_backend_t backend);

// Device memory buffer type of a device.
GGML_BACKEND_API ggml_backend_buffer_type_t ggml_backend_cuda_buffer_type(int device);

// Sums tensors[i] across n_backends CUDA backends in place; false if unsupported.
GGML_BACKEND_API bool ggml_backend_cuda_allreduce_tensor(
        ggml_backend_t * backends,
        struct ggml_tensor ** tensors,
        size_t n_backends);

// Pinned host memory buffer type, for faster transfers.
GGML_BACKEND_API ggml_backend_buffer_type_t ggml_backend_cuda_host_buffer_type(void);

// Number of CUDA devices.
GGML_BACKEND_API int ggml_backend_cuda_get_device_count(void);

// Writes the device's description into a buffer.
GGML_BACKEND_API void ggml_backend_cuda_get_device_description(
        int device,
        char * description,
        size_t description_size);

// Free and total memory of a device.
GGML_BACKEND_API void ggml_backend_cuda_get_device_memory(int device, size_t * free, size_t * total);

// Pins existing host memory for faster transfers.
GGML_BACKEND_API bool ggml_backend_cuda_register_host_buffer(void * buffer, size_t size);

// Unpins memory pinned by the register call.
GGML_BACKEND_API void ggml_backend_cuda_unregister_host_buffer(void * buffer);

// Registry of the CUDA backend.
GGML_BACKEND_API ggml_backend_reg_t ggml_backend_cuda_reg(void);

#ifdef __cplusplus
}
#endif
