//! `ggml-cpu.h` in Rust terms, one file per part of it: start-up, NUMA discovery, what the
//! processor offers, row conversions, and planning and computing a
//! graph with the CPU kernels. `ffi::cpu` exports these to C.

mod convert;
mod features;
mod graph;
mod numa;
mod settings;

pub use convert::{bf16_to_fp32, fp16_to_fp32, fp32_to_bf16, fp32_to_fp16, fp32_to_i32};
pub use features::{CpuFeature, backend_features, cpu_has};
pub use graph::{graph_compute, graph_compute_with_ctx, graph_plan};
pub use numa::{NumaTopology, is_numa, numa_init, numa_strategy, numa_topology};
pub use settings::{cpu_init, fusion_enabled};
