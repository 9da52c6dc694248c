//! The CPU backend's machinery: a pool of worker threads with a spinning-then-sleeping
//! barrier, the planner that sizes a computation (`ggml_cplan`) and the driver that walks a
//! graph's nodes on the pool, and what the processor offers ([`features`]), which the kernels
//! and the repacked layout both choose by. The kernels plug in through [`plan::OpTable`] and
//! [`compute::Kernel`].

pub mod barrier;
pub mod compute;
pub mod features;
pub mod futex;
pub mod plan;
pub mod threadpool;

pub use compute::{ComputeParams, Kernel, compute};
pub use plan::{OpTable, Plan, plan};
pub use threadpool::{Team, Threadpool};
pub mod api;
pub mod backend;
pub mod device;
pub mod kernels;
pub mod repack;
pub mod tables;
