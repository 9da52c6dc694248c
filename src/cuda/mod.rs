//! The CUDA device backend: its kernels (`kernels/*.cu`, CUDA C compiled by NVRTC for the GPU at
//! hand, checked for every architecture by scripts/cuda-check), the GPU interface the backend
//! drives (`gpu`) and, with the `cuda-emulator` feature, the emulated device that runs the same
//! sources on the CPU. The op set llama.cpp offloads runs and matches the CPU (test-backend-ops
//! on the emulated device); the design is correctness first: batched products of quantized
//! weights are unpacked to F32 or F16 for a GEMM, and no kernel uses tensor cores or int8
//! products yet.

pub mod backend;
pub mod buffer;
pub mod device;
pub mod driver;
#[cfg(feature = "cuda-emulator")]
pub mod emulator;
pub mod event;
pub mod gpu;
pub mod gpus;
pub mod host_buffer;
mod ops;
pub mod registry;
mod scratch;
pub mod shape;
pub mod sources;

#[cfg(test)]
mod tests;
