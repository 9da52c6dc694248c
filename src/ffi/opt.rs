//! Training (`ggml-opt.h`): thin wrappers over [`crate::opt`]. Datasets, optimization
//! contexts and results are boxed Rust values that C sees as the opaque `ggml_opt_dataset_t`,
//! `ggml_opt_context_t` and `ggml_opt_result_t`.

use std::ffi::{c_char, c_void};
use std::ptr::NonNull;

use super::static_c_str;
use crate::core::context::Context;
use crate::core::graph::{Graph, GraphPtr};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::ffi::handle::{arg, opt_arg};
use crate::opt::context::{BorrowedSched, InitArgs};
use crate::opt::epoch::{self, Callback, EpochResults, FitSettings, Progress};
use crate::opt::params::{self, GetOptimizerParams, LossType, OptParams, OptimizerParams, OptimizerType};
use crate::opt::{Dataset, OptContext, OptResult};
use crate::sched::Sched;

/// `ggml_opt_epoch_callback`.
pub type EpochCallback = Option<
    unsafe extern "C" fn(
        train: bool,
        opt_ctx: *mut OptContext,
        dataset: *mut Dataset,
        result: *mut OptResult,
        ibatch: i64,
        ibatch_max: i64,
        t_start_us: i64,
    ),
>;

fn tensor_out(t: Option<TensorPtr>) -> *mut Tensor {
    t.map_or(std::ptr::null_mut(), TensorPtr::as_ptr)
}

/// Frees a handle made by `Box::into_raw` (NULL is ignored).
///
/// # Safety
/// `ptr` must be NULL or a live handle of this module, not used afterwards.
unsafe fn free_handle<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: guaranteed by the caller.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

// ---- datasets ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_init(
    type_data: Type,
    type_label: Type,
    ne_datapoint: i64,
    ne_label: i64,
    ndata: i64,
    ndata_shard: i64,
) -> *mut Dataset {
    Box::into_raw(Box::new(Dataset::new(type_data, type_label, ne_datapoint, ne_label, ndata, ndata_shard)))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_free(dataset: *mut Dataset) {
    // SAFETY: C frees each dataset once, after its last use.
    unsafe { free_handle(dataset) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_ndata(ds: *mut Dataset) -> i64 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ds).ndata() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_data(ds: *mut Dataset) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ds).data().as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_labels(ds: *mut Dataset) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(ds).labels()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_shuffle(opt_ctx: *mut OptContext, ds: *mut Dataset, idata: i64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ds).shuffle(arg!(opt_ctx).rng(), idata) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_get_batch(
    ds: *mut Dataset,
    data_batch: *mut Tensor,
    labels_batch: *mut Tensor,
    ibatch: i64,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(ds).get_batch(arg!(data_batch), opt_arg!(labels_batch), ibatch) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_dataset_get_batch_host(
    ds: *mut Dataset,
    data_batch: *mut c_void,
    nb_data_batch: usize,
    labels_batch: *mut c_void,
    ibatch: i64,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let ds = unsafe { arg!(ds) };
    crate::ggml_assert!(!data_batch.is_null() || nb_data_batch == 0, "NULL data batch");
    // SAFETY: the caller provides nb_data_batch writable bytes at data_batch.
    let data = unsafe { bytes_mut(data_batch, nb_data_batch) };
    let nb_labels = ds.labels_bytes_for(nb_data_batch);
    // SAFETY: with labels, the caller provides room for the batch's labels at labels_batch.
    let labels = (!labels_batch.is_null()).then(|| unsafe { bytes_mut(labels_batch, nb_labels) });
    ds.get_batch_host(data, labels, ibatch);
}

/// `len` writable bytes at `ptr` (any pointer when `len` is 0).
///
/// # Safety
/// When `len > 0`, `ptr` must be valid for writes of `len` bytes, not otherwise in use.
unsafe fn bytes_mut<'a>(ptr: *mut c_void, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts_mut(ptr.cast(), len) }
}

// ---- optimizer parameters ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_get_default_optimizer_params(userdata: *mut c_void) -> OptimizerParams {
    params::default_optimizer_params(userdata)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_get_constant_optimizer_params(userdata: *mut c_void) -> OptimizerParams {
    // SAFETY: ggml's contract for this callback: userdata points to the parameters.
    unsafe { params::constant_optimizer_params(userdata) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_default_params(backend_sched: *mut Sched, loss_type: LossType) -> OptParams {
    OptParams { get_opt_pars: Some(ggml_opt_get_default_optimizer_params), ..OptParams::new(backend_sched, loss_type) }
}

// ---- optimization contexts ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_init(params: OptParams) -> *mut OptContext {
    // SAFETY: the C caller's contract: the scheduler outlives the optimization context, and the
    // compute context and tensors passed in are NULL or live.
    let args = unsafe {
        InitArgs {
            scheduler: Box::new(BorrowedSched::new(params.backend_sched)),
            ctx_compute: opt_arg!(params.ctx_compute),
            inputs: opt_arg!(params.inputs),
            outputs: opt_arg!(params.outputs),
            loss_type: params.loss_type,
            build_type: params.build_type,
            opt_period: params.opt_period,
            get_opt_pars: params.get_opt_pars,
            get_opt_pars_ud: params.get_opt_pars_ud,
            optimizer: params.optimizer,
        }
    };
    // SAFETY: ggml's contract: the compute context, the callback and its user data stay valid
    // until ggml_opt_free, and C uses them one call at a time.
    Box::into_raw(Box::new(unsafe { OptContext::new(args) }))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_free(opt_ctx: *mut OptContext) {
    // SAFETY: C frees each context once, after its last use.
    unsafe { free_handle(opt_ctx) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_reset(opt_ctx: *mut OptContext, optimizer: bool) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(opt_ctx).reset(optimizer) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_static_graphs(opt_ctx: *mut OptContext) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(opt_ctx).static_graphs() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_inputs(opt_ctx: *mut OptContext) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(opt_ctx).inputs()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_outputs(opt_ctx: *mut OptContext) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(opt_ctx).outputs()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_labels(opt_ctx: *mut OptContext) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(opt_ctx).labels()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_loss(opt_ctx: *mut OptContext) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(opt_ctx).loss()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_pred(opt_ctx: *mut OptContext) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(opt_ctx).pred()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_ncorrect(opt_ctx: *mut OptContext) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(opt_ctx).ncorrect()) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_grad_acc(opt_ctx: *mut OptContext, node: *mut Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { tensor_out(arg!(opt_ctx).grad_acc(arg!(node))) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_context_optimizer_type(opt_ctx: *mut OptContext) -> OptimizerType {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(opt_ctx).optimizer_type() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_optimizer_name(optimizer: OptimizerType) -> *const c_char {
    static_c_str(optimizer.name())
}

// ---- results ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_result_init() -> *mut OptResult {
    Box::into_raw(Box::new(OptResult::new()))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_result_free(result_: *mut OptResult) {
    // SAFETY: C frees each result once, after its last use.
    unsafe { free_handle(result_) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_result_reset(result_: *mut OptResult) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(result_).reset() };
}

/// Writes `value` to an output argument the caller may leave NULL.
fn write_out<T>(ptr: *mut T, value: T) {
    // SAFETY: a non-null output argument points to writable memory for one value.
    if let Some(out) = unsafe { ptr.as_mut() } {
        *out = value;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_result_ndata(result_: *mut OptResult, ndata: *mut i64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { write_out(ndata, arg!(result_).ndata()) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_result_loss(result_: *mut OptResult, loss: *mut f64, unc: *mut f64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let (l, u) = unsafe { arg!(result_).loss() };
    write_out(loss, l);
    write_out(unc, u);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_result_pred(result_: *mut OptResult, pred: *mut i32) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let values = unsafe { arg!(result_).pred() };
    if values.is_empty() {
        return;
    }
    crate::ggml_assert!(!pred.is_null(), "NULL prediction buffer");
    // SAFETY: the caller provides room for ndata predictions, one per evaluated data point.
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), pred, values.len()) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_result_accuracy(result_: *mut OptResult, accuracy: *mut f64, unc: *mut f64) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let (a, u) = unsafe { arg!(result_).accuracy() };
    write_out(accuracy, a);
    write_out(unc, u);
}

// ---- running ----

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_prepare_alloc(
    opt_ctx: *mut OptContext,
    ctx_compute: *mut Context,
    gf: *mut Graph,
    inputs: *mut Tensor,
    outputs: *mut Tensor,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let gf = unsafe { GraphPtr::new(NonNull::from(arg!(gf))) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let opt = unsafe { arg!(opt_ctx) };
    // SAFETY: ggml's contract: the compute context stays valid while the context uses it.
    unsafe { opt.prepare_alloc(arg!(ctx_compute), gf, arg!(inputs), arg!(outputs)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_alloc(opt_ctx: *mut OptContext, backward: bool) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(opt_ctx).alloc(backward) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_eval(opt_ctx: *mut OptContext, result_: *mut OptResult) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(opt_ctx).eval(opt_arg!(result_)) };
}

/// A C epoch callback as the closure [`epoch::epoch`] calls.
fn c_callback(
    cb: unsafe extern "C" fn(bool, *mut OptContext, *mut Dataset, *mut OptResult, i64, i64, i64),
) -> impl FnMut(&mut OptContext, &mut Dataset, Option<&mut OptResult>, Progress) {
    move |ctx, ds, result, p| {
        let result = result.map_or(std::ptr::null_mut(), |r| r as *mut OptResult);
        // SAFETY: the caller's callback, given the same handles it passed to ggml_opt_epoch.
        unsafe { cb(p.train, ctx, ds, result, p.ibatch, p.ibatch_max, p.t_start_us) };
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_epoch(
    opt_ctx: *mut OptContext,
    ds: *mut Dataset,
    result_train: *mut OptResult,
    result_eval: *mut OptResult,
    idata_split: i64,
    callback_train: EpochCallback,
    callback_eval: EpochCallback,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let results = unsafe {
        if !result_train.is_null() && result_train == result_eval {
            EpochResults::Shared(arg!(result_train))
        } else {
            EpochResults::Separate { train: opt_arg!(result_train), eval: opt_arg!(result_eval) }
        }
    };
    let mut train = callback_train.map(c_callback);
    let mut eval = callback_eval.map(c_callback);
    let cb_train = train.as_mut().map(|c| c as Callback<'_>);
    let cb_eval = eval.as_mut().map(|c| c as Callback<'_>);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { epoch::epoch(arg!(opt_ctx), arg!(ds), results, idata_split, cb_train, cb_eval) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_epoch_callback_progress_bar(
    train: bool,
    opt_ctx: *mut OptContext,
    _dataset: *mut Dataset,
    result_: *mut OptResult,
    ibatch: i64,
    ibatch_max: i64,
    t_start_us: i64,
) {
    let progress = Progress { train, ibatch, ibatch_max, t_start_us };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { epoch::progress_bar(arg!(opt_ctx), opt_arg!(result_).map(|r| &*r), progress) };
}

#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub extern "C" fn ggml_opt_fit(
    backend_sched: *mut Sched,
    ctx_compute: *mut Context,
    inputs: *mut Tensor,
    outputs: *mut Tensor,
    ds: *mut Dataset,
    loss_type: LossType,
    optimizer: OptimizerType,
    get_opt_pars: GetOptimizerParams,
    nepoch: i64,
    nbatch_logical: i64,
    val_split: f32,
    silent: bool,
) {
    // SAFETY: the scheduler is live for the whole call (ggml's contract).
    let scheduler = Box::new(unsafe { BorrowedSched::new(backend_sched) });
    let settings = FitSettings { loss_type, optimizer, get_opt_pars, nepoch, nbatch_logical, val_split, silent };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { epoch::fit(scheduler, arg!(ctx_compute), arg!(inputs), arg!(outputs), arg!(ds), settings) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opt::params::BuildType;
    use std::ffi::CStr;

    #[test]
    fn datasets_through_the_c_api() {
        let ds = ggml_opt_dataset_init(Type::F32, Type::F32, 2, 1, 6, 2);
        assert_eq!(ggml_opt_dataset_ndata(ds), 6);
        let data = ggml_opt_dataset_data(ds);
        let labels = ggml_opt_dataset_labels(ds);
        assert!(!labels.is_null());
        // SAFETY: the dataset's tensors are host memory of 12 and 6 floats.
        unsafe {
            assert_eq!(((*data).ne, (*labels).ne), ([2, 6, 1, 1], [1, 6, 1, 1]));
            let d = std::slice::from_raw_parts_mut((*data).data.cast::<f32>(), 12);
            let l = std::slice::from_raw_parts_mut((*labels).data.cast::<f32>(), 6);
            for (i, v) in d.iter_mut().enumerate() {
                *v = i as f32;
            }
            for (i, v) in l.iter_mut().enumerate() {
                *v = 100.0 + i as f32;
            }
        }

        // A context with dynamic graphs needs no scheduler until it allocates.
        let opt = ggml_opt_init(ggml_opt_default_params(std::ptr::null_mut(), LossType::SUM));
        assert!(!ggml_opt_static_graphs(opt));
        assert!(ggml_opt_inputs(opt).is_null() && ggml_opt_loss(opt).is_null());
        assert_eq!(ggml_opt_context_optimizer_type(opt), OptimizerType::ADAMW);
        ggml_opt_dataset_shuffle(opt, ds, -1);

        let mut seen = Vec::new();
        for ibatch in 0..3 {
            let mut d = [0f32; 4];
            let mut l = [0f32; 2];
            ggml_opt_dataset_get_batch_host(ds, d.as_mut_ptr().cast(), 16, l.as_mut_ptr().cast(), ibatch);
            // Shards of two points stay together.
            assert_eq!(d[2], d[0] + 2.0);
            assert_eq!(l[0], 100.0 + d[0] / 2.0);
            seen.push(d[0] as i64 / 4);
        }
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2]);
        ggml_opt_free(opt);
        ggml_opt_dataset_free(ds);
        ggml_opt_free(std::ptr::null_mut());
        ggml_opt_dataset_free(std::ptr::null_mut());
    }

    #[test]
    fn parameters_names_and_results() {
        let p = ggml_opt_default_params(std::ptr::null_mut(), LossType::MEAN);
        assert_eq!((p.build_type, p.opt_period, p.optimizer), (BuildType::OPT, 1, OptimizerType::ADAMW));
        let get = p.get_opt_pars.unwrap();
        // SAFETY: the default callback ignores its user data.
        let defaults = unsafe { get(std::ptr::null_mut()) };
        assert_eq!(defaults, ggml_opt_get_default_optimizer_params(std::ptr::null_mut()));
        let mut constant = defaults;
        constant.adamw.alpha = 0.5;
        assert_eq!(ggml_opt_get_constant_optimizer_params((&raw mut constant).cast()), constant);

        let name = |o| {
            // SAFETY: optimizer names are static NUL-terminated strings.
            unsafe { CStr::from_ptr(ggml_opt_optimizer_name(o)) }.to_str().unwrap().to_string()
        };
        assert_eq!(name(OptimizerType::ADAMW), "adamw");
        assert_eq!(name(OptimizerType::SGD), "sgd");
        assert_eq!(name(OptimizerType(7)), "undefined");

        let r = ggml_opt_result_init();
        let (mut ndata, mut loss, mut unc, mut acc) = (-1i64, -1.0f64, 0.0f64, 0.0f64);
        ggml_opt_result_ndata(r, &mut ndata);
        ggml_opt_result_loss(r, &mut loss, &mut unc);
        ggml_opt_result_loss(r, &mut loss, std::ptr::null_mut());
        ggml_opt_result_accuracy(r, &mut acc, std::ptr::null_mut());
        ggml_opt_result_pred(r, std::ptr::null_mut());
        assert_eq!((ndata, loss), (0, 0.0));
        assert!(unc.is_nan() && acc.is_nan());
        ggml_opt_result_reset(r);
        ggml_opt_result_free(r);
    }
}
