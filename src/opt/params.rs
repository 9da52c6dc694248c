//! The settings of an optimization context: the enums of `ggml-opt.h`, the optimizer
//! hyper-parameters (`struct ggml_opt_optimizer_params`), the arguments of `ggml_opt_init`
//! (`struct ggml_opt_params`) and their defaults.
//!
//! The structs are laid out byte for byte as in ggml 0.25.1: C callers fill them in and pass
//! them by value.

use std::ffi::c_void;

use crate::core::context::Context;
use crate::core::tensor::Tensor;
use crate::sched::Sched;

/// `enum ggml_opt_loss_type`: how the outputs become a scalar loss.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LossType(pub i32);

impl LossType {
    pub const MEAN: LossType = LossType(0);
    pub const SUM: LossType = LossType(1);
    pub const CROSS_ENTROPY: LossType = LossType(2);
    pub const MEAN_SQUARED_ERROR: LossType = LossType(3);
}

/// `enum ggml_opt_build_type`: which graphs a context builds. The values are ordered: each
/// build type includes the graphs of the smaller ones.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct BuildType(pub i32);

impl BuildType {
    pub const FORWARD: BuildType = BuildType(10);
    pub const GRAD: BuildType = BuildType(20);
    pub const OPT: BuildType = BuildType(30);
}

/// `enum ggml_opt_optimizer_type`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OptimizerType(pub i32);

impl OptimizerType {
    pub const ADAMW: OptimizerType = OptimizerType(0);
    pub const SGD: OptimizerType = OptimizerType(1);
    pub const COUNT: OptimizerType = OptimizerType(2);

    /// `ggml_opt_optimizer_name`: "adamw", "sgd", or "undefined" for anything else.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerType::ADAMW => "adamw",
            OptimizerType::SGD => "sgd",
            _ => "undefined",
        }
    }
}

/// The AdamW part of [`OptimizerParams`].
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct AdamWParams {
    /// Learning rate.
    pub alpha: f32,
    /// Decay of the first moment.
    pub beta1: f32,
    /// Decay of the second moment.
    pub beta2: f32,
    /// Added to the denominator for numerical stability.
    pub eps: f32,
    /// Weight decay (0 disables it).
    pub wd: f32,
}

/// The SGD part of [`OptimizerParams`].
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct SgdParams {
    /// Learning rate.
    pub alpha: f32,
    /// Weight decay (0 disables it).
    pub wd: f32,
}

/// `struct ggml_opt_optimizer_params` (28 bytes): asked for before every optimizer step.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct OptimizerParams {
    pub adamw: AdamWParams,
    pub sgd: SgdParams,
}

const _: () = assert!(std::mem::size_of::<OptimizerParams>() == 28);
const _: () = assert!(std::mem::offset_of!(OptimizerParams, sgd) == 20);

impl Default for OptimizerParams {
    /// `ggml_opt_get_default_optimizer_params`: learning rate 1e-3, AdamW moments 0.9/0.999,
    /// eps 1e-8, no weight decay.
    fn default() -> Self {
        OptimizerParams {
            adamw: AdamWParams { alpha: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8, wd: 0.0 },
            sgd: SgdParams { alpha: 1e-3, wd: 0.0 },
        }
    }
}

/// `ggml_opt_get_optimizer_params`: returns the hyper-parameters for the next step.
pub type GetOptimizerParams = Option<unsafe extern "C" fn(userdata: *mut c_void) -> OptimizerParams>;

/// The default hyper-parameter callback: ignores its user data.
pub extern "C" fn default_optimizer_params(_userdata: *mut c_void) -> OptimizerParams {
    OptimizerParams::default()
}

/// The callback that returns `*(struct ggml_opt_optimizer_params *) userdata`.
///
/// # Safety
/// `userdata` must point to a readable `OptimizerParams`.
pub unsafe extern "C" fn constant_optimizer_params(userdata: *mut c_void) -> OptimizerParams {
    crate::ggml_assert!(!userdata.is_null(), "constant optimizer parameters need a pointer to them as user data");
    // SAFETY: guaranteed by the caller.
    unsafe { *userdata.cast::<OptimizerParams>() }
}

/// `struct ggml_opt_params` (72 bytes): the arguments of `ggml_opt_init`.
///
/// When `ctx_compute`, `inputs` and `outputs` are all set the graphs are built once, at init
/// ("static graphs"); otherwise a forward graph is given before each evaluation.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OptParams {
    /// The backends the graphs run on.
    pub backend_sched: *mut Sched,
    pub ctx_compute: *mut Context,
    pub inputs: *mut Tensor,
    pub outputs: *mut Tensor,
    pub loss_type: LossType,
    pub build_type: BuildType,
    /// Physical batches whose gradients are accumulated per optimizer step.
    pub opt_period: i32,
    pub get_opt_pars: GetOptimizerParams,
    pub get_opt_pars_ud: *mut c_void,
    pub optimizer: OptimizerType,
}

const _: () = assert!(std::mem::size_of::<OptParams>() == 72);
const _: () = assert!(std::mem::offset_of!(OptParams, loss_type) == 32);
const _: () = assert!(std::mem::offset_of!(OptParams, opt_period) == 40);
const _: () = assert!(std::mem::offset_of!(OptParams, get_opt_pars) == 48);
const _: () = assert!(std::mem::offset_of!(OptParams, optimizer) == 64);

impl OptParams {
    /// `ggml_opt_default_params`: dynamic graphs, full optimizer build, no gradient
    /// accumulation, default AdamW hyper-parameters.
    pub fn new(backend_sched: *mut Sched, loss_type: LossType) -> OptParams {
        OptParams {
            backend_sched,
            ctx_compute: std::ptr::null_mut(),
            inputs: std::ptr::null_mut(),
            outputs: std::ptr::null_mut(),
            loss_type,
            build_type: BuildType::OPT,
            opt_period: 1,
            get_opt_pars: Some(default_optimizer_params),
            get_opt_pars_ud: std::ptr::null_mut(),
            optimizer: OptimizerType::ADAMW,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_reference() {
        let p = default_optimizer_params(std::ptr::null_mut());
        assert_eq!(p.adamw, AdamWParams { alpha: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8, wd: 0.0 });
        assert_eq!(p.sgd, SgdParams { alpha: 0.001, wd: 0.0 });

        let d = OptParams::new(std::ptr::null_mut(), LossType::CROSS_ENTROPY);
        assert_eq!(d.loss_type, LossType::CROSS_ENTROPY);
        assert_eq!(d.build_type, BuildType::OPT);
        assert_eq!(d.opt_period, 1);
        assert_eq!(d.optimizer, OptimizerType::ADAMW);
        assert!(d.ctx_compute.is_null() && d.inputs.is_null() && d.outputs.is_null());
        assert!(d.get_opt_pars.is_some() && d.get_opt_pars_ud.is_null());
    }

    #[test]
    fn constant_params_are_read_from_the_user_data() {
        let mut p = OptimizerParams::default();
        p.sgd.alpha = 0.5;
        p.adamw.wd = 0.25;
        // SAFETY: the user data points to a live OptimizerParams.
        let got = unsafe { constant_optimizer_params((&raw mut p).cast()) };
        assert_eq!(got, p);
    }

    #[test]
    fn names_and_ordering() {
        assert_eq!(OptimizerType::ADAMW.name(), "adamw");
        assert_eq!(OptimizerType::SGD.name(), "sgd");
        assert_eq!(OptimizerType::COUNT.name(), "undefined");
        assert!(BuildType::FORWARD < BuildType::GRAD && BuildType::GRAD < BuildType::OPT);
    }
}
