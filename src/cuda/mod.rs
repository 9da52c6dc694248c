//! The CUDA device backend, in progress: its kernels (`kernels/*.cu`, CUDA C compiled by NVRTC
//! for the GPU at hand, checked for every architecture by scripts/cuda-check), the GPU interface
//! the backend drives (`gpu`) and, with the `cuda-emulator` feature, the emulated device that
//! runs the same sources on the CPU.

pub mod backend;
pub mod buffer;
pub mod device;
pub mod driver;
#[cfg(feature = "cuda-emulator")]
pub mod emulator;
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
