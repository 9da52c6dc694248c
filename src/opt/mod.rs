//! Training (`ggml-opt.h`): datasets cut into shards and batches (`dataset`), optimizer
//! settings and their defaults (`params`), the optimization context that adds a loss, the
//! backward pass and an optimizer step to a forward graph and runs them through a scheduler
//! (`context`), the loss and accuracy statistics of evaluations (`result`), and the epoch
//! and fit loops built on them (`epoch`).
//!
//! Nothing here computes: graphs run on whatever backends the scheduler holds.

pub mod context;
pub mod dataset;
pub mod epoch;
pub mod params;
pub mod result;
#[cfg(test)]
pub(crate) mod test_support;

pub use context::{InitArgs, OptContext, Scheduler};
pub use dataset::{Dataset, Mt19937};
pub use params::{BuildType, LossType, OptParams, OptimizerParams, OptimizerType};
pub use result::OptResult;
