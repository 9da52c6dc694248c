//! ggml-cpu's internal kernel entry points, which the reference's `libggml-cpu.so` exports
//! (declared in its private headers: `ops.h`, `vec.h`, `quants.h`, `repack.h`, `iqp.h`,
//! `traits.h`, `llamafile/sgemm.h`) and so does ours, each with the reference's meaning over
//! our kernels: the per-op `ggml_compute_forward_*`, the dot products and activation
//! quantizers of each type, the interleaved products of the reference's repacked layouts,
//! and the thread team's barrier and chunk counter.

pub mod dot;
pub mod extra;
pub mod forward;
pub mod iqp;
pub mod params;
pub mod quantize;
pub mod repack;
pub mod sgemm;
pub mod team;
pub mod type_traits;
pub mod vec;
