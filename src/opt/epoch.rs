//! The training loops: one epoch over a dataset (`ggml_opt_epoch`), the progress bar that
//! can follow it batch by batch, and `ggml_opt_fit`, which trains a model end to end.

use std::cell::Cell;
use std::io::Write;

use super::context::{InitArgs, OptContext, Scheduler};
use super::dataset::Dataset;
use super::params::{BuildType, GetOptimizerParams, LossType, OptimizerType};
use super::result::OptResult;
use crate::core::context::Context;
use crate::core::tensor::TensorPtr;
use crate::core::time;

/// Where an epoch has got to, as told to its callbacks after each batch.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Whether the batch was trained on (or only evaluated).
    pub train: bool,
    /// Batches done in this part of the epoch.
    pub ibatch: i64,
    /// Batches in this part of the epoch.
    pub ibatch_max: i64,
    /// When this part of the epoch started (`ggml_time_us`).
    pub t_start_us: i64,
}

/// Called after each batch with the context, the dataset and the result of that part.
pub type Callback<'a> = &'a mut dyn FnMut(&mut OptContext, &mut Dataset, Option<&mut OptResult>, Progress);

/// Where the two parts of an epoch put their results.
pub enum EpochResults<'a> {
    /// Each part its own result, or none.
    Separate { train: Option<&'a mut OptResult>, eval: Option<&'a mut OptResult> },
    /// Both parts into one result.
    Shared(&'a mut OptResult),
}

impl EpochResults<'_> {
    fn get(&mut self, train: bool) -> Option<&mut OptResult> {
        match self {
            EpochResults::Separate { train: t, .. } if train => t.as_deref_mut(),
            EpochResults::Separate { eval, .. } => eval.as_deref_mut(),
            EpochResults::Shared(r) => Some(r),
        }
    }
}

/// `ggml_opt_epoch`: trains on the batches before data point `idata_split` (all of them when
/// negative) and evaluates the rest, calling the callbacks after each batch.
pub fn epoch(
    ctx: &mut OptContext,
    dataset: &mut Dataset,
    mut results: EpochResults<'_>,
    idata_split: i64,
    mut callback_train: Option<Callback<'_>>,
    mut callback_eval: Option<Callback<'_>>,
) {
    crate::ggml_assert!(ctx.static_graphs(), "ggml_opt_epoch requires static graphs");
    let Some(inputs) = ctx.inputs() else { crate::ggml_abort!("the context has no inputs") };
    let labels = ctx.labels();
    let data = dataset.data();
    crate::ggml_assert!(
        data.ne[0] == inputs.ne[0],
        "data points of {} values for inputs of {}",
        data.ne[0],
        inputs.ne[0]
    );

    let ndata = data.ne[1];
    let ndata_batch = inputs.ne[1];
    crate::ggml_assert!(
        ndata % ndata_batch == 0,
        "{} data points are not a whole number of batches of {}",
        ndata,
        ndata_batch
    );
    let nbatches = ndata / ndata_batch;

    let idata_split = if idata_split < 0 { ndata } else { idata_split };
    crate::ggml_assert!(idata_split % ndata_batch == 0, "split at {} is not on a batch boundary", idata_split);
    let ibatch_split = idata_split / ndata_batch;

    let mut run = |train: bool, batches: std::ops::Range<i64>, callback: &mut Option<Callback<'_>>| {
        let t_start_us = time::us();
        let first = batches.start;
        let ibatch_max = batches.end - batches.start;
        for ibatch in batches {
            ctx.alloc(train);
            dataset.get_batch(inputs, labels, ibatch);
            ctx.eval(results.get(train));
            if let Some(cb) = callback.as_mut() {
                let progress = Progress { train, ibatch: ibatch + 1 - first, ibatch_max, t_start_us };
                cb(ctx, dataset, results.get(train), progress);
            }
        }
    };
    run(true, 0..ibatch_split, &mut callback_train);
    run(false, ibatch_split..nbatches, &mut callback_eval);
}

/// `printf`'s rendering of a non-finite double.
fn c_float(x: f64, precision: usize) -> String {
    match x {
        x if x.is_nan() => "nan".to_string(),
        x if x.is_infinite() => if x > 0.0 { "inf" } else { "-inf" }.to_string(),
        x => format!("{x:.precision$}"),
    }
}

/// Hours, minutes and seconds of a duration in microseconds.
fn hms(us: i64) -> String {
    let s = us / 1_000_000;
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

/// The progress bar's eight cells, each filled in eighths.
fn bar(ibatch: i64, ibatch_max: i64) -> String {
    const BLOCKS: [char; 9] =
        [' ', '\u{258F}', '\u{258E}', '\u{258D}', '\u{258C}', '\u{258B}', '\u{258A}', '\u{2589}', '\u{2588}'];
    const CELLS: i64 = 8;
    (0..CELLS)
        .map(|j| {
            let eighths = (1..=8).rev().find(|&k| ibatch_max * (8 * j + k) / CELLS < 8 * ibatch).unwrap_or(0);
            BLOCKS[eighths as usize]
        })
        .collect()
}

/// The progress line [`progress_bar`] prints.
pub fn progress_line(ctx: &OptContext, result: Option<&OptResult>, progress: Progress, now_us: i64) -> String {
    let Progress { train, ibatch, ibatch_max, t_start_us } = progress;
    let batch_size = ctx.inputs().map_or(0, |t| t.ne[1]);
    let (loss, loss_unc) = result.map_or((0.0, f64::NAN), OptResult::loss);
    let (accuracy, accuracy_unc) = result.map_or((f64::NAN, f64::NAN), OptResult::accuracy);

    let elapsed_us = now_us - t_start_us;
    let eta_us = if ibatch > 0 { elapsed_us * (ibatch_max - ibatch) / ibatch } else { 0 };
    let mut line = format!(
        "{}[{}] data={:07}/{:07} loss={}\u{b1}{} acc={}\u{b1}{}% t={} ETA={} \r",
        if train { "train: " } else { "val:   " },
        bar(ibatch, ibatch_max),
        ibatch * batch_size,
        ibatch_max * batch_size,
        c_float(loss, 5),
        c_float(loss_unc, 5),
        c_float(100.0 * accuracy, 2),
        c_float(100.0 * accuracy_unc, 2),
        hms(elapsed_us),
        hms(eta_us),
    );
    if ibatch == ibatch_max {
        line.push('\n');
    }
    line
}

/// `ggml_opt_epoch_callback_progress_bar`: prints a progress bar with the loss and accuracy
/// so far, the time taken and the time left to stderr, overwriting the previous one.
pub fn progress_bar(ctx: &OptContext, result: Option<&OptResult>, progress: Progress) {
    let line = progress_line(ctx, result, progress, time::us());
    let mut err = std::io::stderr().lock();
    // Progress output is best effort: a closed stderr must not stop training.
    let _ = err.write_all(line.as_bytes()).and_then(|()| err.flush());
}

/// The arguments of [`fit`] besides the scheduler and the model.
pub struct FitSettings {
    pub loss_type: LossType,
    pub optimizer: OptimizerType,
    /// Called with a pointer to the current epoch (an `int64_t`, counting from 1).
    pub get_opt_pars: GetOptimizerParams,
    pub nepoch: i64,
    /// Data points per optimizer step; a multiple of the inputs' batch size.
    pub nbatch_logical: i64,
    /// Fraction of the data kept for validation, in [0, 1).
    pub val_split: f32,
    pub silent: bool,
}

/// `ggml_opt_fit`: trains the model from `inputs` to `outputs` on `dataset` for `nepoch`
/// epochs with static graphs, reshuffling the training data every epoch and evaluating on the
/// validation part.
pub fn fit(
    scheduler: Box<dyn Scheduler>,
    ctx_compute: &mut Context,
    inputs: TensorPtr,
    outputs: TensorPtr,
    dataset: &mut Dataset,
    settings: FitSettings,
) {
    time::init();
    let t_start_us = time::us();

    let ndata = dataset.data().ne[1];
    let nbatch_physical = inputs.ne[1];
    let nbatch_logical = settings.nbatch_logical;
    crate::ggml_assert!(
        nbatch_logical > 0 && ndata % nbatch_logical == 0,
        "{} data points in logical batches of {}",
        ndata,
        nbatch_logical
    );
    crate::ggml_assert!(
        nbatch_logical % nbatch_physical == 0,
        "logical batch {} is not a multiple of the physical batch {}",
        nbatch_logical,
        nbatch_physical
    );
    let opt_period = nbatch_logical / nbatch_physical;
    let nbatches_logical = ndata / nbatch_logical;

    let val_split = settings.val_split;
    crate::ggml_assert!((0.0..1.0).contains(&val_split), "validation split {} outside [0, 1)", val_split);
    let ibatch_split = ((1.0 - val_split) * nbatches_logical as f32) as i64 * opt_period;
    let idata_split = ibatch_split * nbatch_physical;

    let epoch_number = Cell::new(1i64);
    let args = InitArgs {
        scheduler,
        ctx_compute: Some(ctx_compute),
        inputs: Some(inputs),
        outputs: Some(outputs),
        loss_type: settings.loss_type,
        build_type: BuildType::OPT,
        opt_period: i32::try_from(opt_period)
            .unwrap_or_else(|_| crate::ggml_abort!("accumulation period {} too large", opt_period)),
        get_opt_pars: settings.get_opt_pars,
        get_opt_pars_ud: epoch_number.as_ptr().cast(),
        optimizer: settings.optimizer,
    };
    // SAFETY: the context is dropped before this function returns, while `ctx_compute` is
    // still borrowed and `epoch_number` (the callback's user data) alive; the callback is the
    // caller's, given to be called with a pointer to the epoch.
    let mut ctx = unsafe { OptContext::new(args) };

    // Shuffling only matters when a batch does not hold all the data.
    if nbatch_logical < ndata {
        dataset.shuffle(ctx.rng(), -1);
    }

    let mut result_train = OptResult::new();
    let mut result_val = OptResult::new();
    let mut show = |ctx: &mut OptContext, _: &mut Dataset, result: Option<&mut OptResult>, p: Progress| {
        progress_bar(ctx, result.as_deref(), p);
    };
    let mut show_val = show;

    for e in 1..=settings.nepoch {
        epoch_number.set(e);
        if nbatch_logical < idata_split {
            dataset.shuffle(ctx.rng(), idata_split);
        }
        result_train.reset();
        result_val.reset();

        if !settings.silent {
            eprintln!("ggml_opt_fit: epoch {:04}/{:04}:", e, settings.nepoch);
        }
        let results = EpochResults::Separate { train: Some(&mut result_train), eval: Some(&mut result_val) };
        let (cb_train, cb_val): (Option<Callback<'_>>, Option<Callback<'_>>) =
            if settings.silent { (None, None) } else { (Some(&mut show), Some(&mut show_val)) };
        epoch(&mut ctx, dataset, results, idata_split, cb_train, cb_val);
        if !settings.silent {
            eprintln!();
        }
    }

    if !settings.silent {
        eprintln!("ggml_opt_fit: training took {}", hms(time::us() - t_start_us));
    }
    drop(ctx);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::buffer;
    use crate::core::graph::GraphPtr;
    use crate::core::op::Op;
    use crate::opt::context::InitArgs;
    use crate::opt::test_support::{Model, fake};

    // ---- ggml's test-opt scenarios, run on host memory through the graph allocator ----

    use crate::core::types::Type;
    use crate::opt::params::default_optimizer_params;
    use crate::opt::params::{AdamWParams, OptimizerParams, SgdParams};
    use crate::opt::test_support::{HostScheduler, read_f32};

    const NDATA: i64 = 6;

    /// test-opt's hyper-parameters: every step moves the weight by one unit of gradient.
    extern "C" fn test_opt_pars(_: *mut std::ffi::c_void) -> OptimizerParams {
        OptimizerParams {
            adamw: AdamWParams { alpha: 1.0, beta1: 0.0, beta2: 0.0, eps: 0.0, wd: 0.0 },
            sgd: SgdParams { alpha: 1.0, wd: 0.0 },
        }
    }

    fn host_context(model: &mut Model, loss_type: LossType, optimizer: OptimizerType, opt_period: i32) -> OptContext {
        let (sched, _) = HostScheduler::new();
        let args =
            InitArgs { get_opt_pars: Some(test_opt_pars), ..model.args(sched, loss_type, optimizer, opt_period) };
        // SAFETY: every test keeps the model alive until the context is dropped.
        unsafe { OptContext::new(args) }
    }

    /// test-opt's unsupervised dataset: data point i is the value i.
    fn unsupervised() -> Dataset {
        let ds = Dataset::new(Type::F32, Type::F32, 1, 0, NDATA, 1);
        let values: Vec<f32> = (0..NDATA).map(|i| i as f32).collect();
        Model::set(ds.data(), &values);
        ds
    }

    fn close(a: f64, b: f64, atol: f64) -> bool {
        (a - b).abs() < atol
    }

    #[test]
    fn gradients_accumulate_over_a_long_period() {
        for optimizer in [OptimizerType::ADAMW, OptimizerType::SGD] {
            let mut model = Model::new(1);
            let mut ctx = host_context(&mut model, LossType::SUM, optimizer, 999_999);
            let mut result = OptResult::new();
            for idata in 0..NDATA {
                ctx.alloc(true);
                Model::set(model.inputs, &[idata as f32]);
                ctx.eval(Some(&mut result));
                assert_eq!(read_f32(ctx.grad_acc(model.weights).unwrap()), [idata as f32 + 1.0]);
            }
        }
    }

    #[test]
    fn forward_then_backward() {
        for optimizer in [OptimizerType::ADAMW, OptimizerType::SGD] {
            for high_level in [false, true] {
                let mut model = Model::new(1);
                let mut ctx = host_context(&mut model, LossType::SUM, optimizer, 1);
                let mut ds = unsupervised();
                let mut result = OptResult::new();
                assert!(close(result.loss().0, 0.0, 1e-6) && result.loss().1.is_nan());

                if high_level {
                    let results = EpochResults::Separate { train: None, eval: Some(&mut result) };
                    epoch(&mut ctx, &mut ds, results, 0, None, None);
                } else {
                    for idata in 0..NDATA {
                        ctx.alloc(false);
                        Model::set(model.inputs, &[idata as f32]);
                        ctx.eval(Some(&mut result));
                    }
                }
                assert_eq!(model.weight(), 3.0);
                assert_eq!(result.ndata(), 6);
                let (loss, unc) = result.loss();
                assert!(close(loss, 33.0, 1e-10) && close(unc, 3.5f64.sqrt(), 1e-10), "{loss} {unc}");
                assert!(result.accuracy().0.is_nan() && result.accuracy().1.is_nan());

                for _ in 0..10 {
                    ctx.alloc(true);
                    ctx.eval(None);
                }
                Model::set(model.weights, &[3.0]);
                ctx.reset(false);
                result.reset();

                if high_level {
                    let results = EpochResults::Separate { train: Some(&mut result), eval: None };
                    epoch(&mut ctx, &mut ds, results, NDATA, None, None);
                } else {
                    for idata in 0..NDATA {
                        ctx.alloc(true);
                        Model::set(model.inputs, &[idata as f32]);
                        ctx.eval(Some(&mut result));
                    }
                }
                assert_eq!(model.weight(), -3.0);
                assert_eq!(result.ndata(), 6);
                let (loss, unc) = result.loss();
                assert!(close(loss, 18.0, 1e-10) && unc == 0.0, "{loss} {unc}");
            }
        }
    }

    #[test]
    fn epoch_and_fit_agree() {
        for optimizer in [OptimizerType::ADAMW, OptimizerType::SGD] {
            let weights_epoch = {
                let mut model = Model::new(1);
                let (sched, _) = HostScheduler::new();
                // SAFETY: the model outlives the context.
                let mut ctx = unsafe { OptContext::new(model.args(sched, LossType::SUM, optimizer, 1)) };
                let mut ds = unsupervised();
                let mut result = OptResult::new();
                ds.shuffle(ctx.rng(), -1);
                epoch(
                    &mut ctx,
                    &mut ds,
                    EpochResults::Separate { train: Some(&mut result), eval: None },
                    NDATA,
                    None,
                    None,
                );
                drop(ctx);
                model.weight()
            };
            let weights_fit = {
                let mut model = Model::new(1);
                let (sched, computed) = HostScheduler::new();
                let mut ds = unsupervised();
                let settings = FitSettings {
                    loss_type: LossType::SUM,
                    optimizer,
                    get_opt_pars: Some(default_optimizer_params),
                    nepoch: 1,
                    nbatch_logical: 1,
                    val_split: 0.0,
                    silent: true,
                };
                let (inputs, outputs) = (model.inputs, model.outputs);
                fit(Box::new(sched), &mut model.ctx_compute, inputs, outputs, &mut ds, settings);
                assert_eq!(*computed.borrow(), 6);
                model.weight()
            };
            assert_ne!(weights_epoch, 3.0);
            assert_eq!(weights_epoch, weights_fit);
        }
    }

    #[test]
    fn training_and_validation_split() {
        for high_level in [false, true] {
            let mut model = Model::new(1);
            let mut ctx = host_context(&mut model, LossType::SUM, OptimizerType::ADAMW, 1);
            let mut ds = unsupervised();
            let (mut result, mut result2) = (OptResult::new(), OptResult::new());
            let idata_split = NDATA * 2 / 3;
            for e in 1..=4 {
                if high_level {
                    let results = EpochResults::Separate { train: Some(&mut result), eval: Some(&mut result2) };
                    epoch(&mut ctx, &mut ds, results, idata_split, None, None);
                } else {
                    for idata in 0..NDATA {
                        let train = idata < idata_split;
                        ctx.alloc(train);
                        Model::set(model.inputs, &[idata as f32]);
                        ctx.eval(Some(if train { &mut result } else { &mut result2 }));
                    }
                }
                let ef = f64::from(e);
                assert_eq!(f64::from(model.weight()), 3.0 - ef * 4.0);
                assert_eq!(result.ndata(), idata_split);
                let (loss, unc) = result.loss();
                assert!(close(loss, 28.0 - ef * 16.0, 1e-10) && close(unc, 0.0, 1e-10), "{loss} {unc}");
                assert_eq!(result2.ndata(), NDATA - idata_split);
                let (loss, unc) = result2.loss();
                assert!(close(loss, 15.0 - ef * 8.0, 1e-10) && close(unc, 0.5f64.sqrt(), 1e-10), "{loss} {unc}");
                assert!(result2.accuracy().0.is_nan());
                result.reset();
                result2.reset();
            }
        }
    }

    #[test]
    fn gradient_accumulation() {
        for nbatch_physical in [1i64, 2] {
            for loss_type in [LossType::SUM, LossType::MEAN] {
                let mut model = Model::new(nbatch_physical);
                let period = (NDATA / nbatch_physical) as i32;
                let mut ctx = host_context(&mut model, loss_type, OptimizerType::ADAMW, period);
                let mut result = OptResult::new();
                let scale = if loss_type == LossType::MEAN { 1.0 / NDATA as f32 } else { 1.0 };
                for e in 1..=4 {
                    let mut grads = vec![0.0f32; NDATA as usize];
                    for idata in (0..NDATA).step_by(nbatch_physical as usize) {
                        ctx.alloc(true);
                        let inputs: Vec<f32> = (idata..idata + nbatch_physical).map(|i| i as f32).collect();
                        Model::set(model.inputs, &inputs);
                        ctx.eval(Some(&mut result));
                        let last = (idata + nbatch_physical - 1) as usize;
                        grads[last] = read_f32(ctx.grad_acc(model.weights).unwrap())[0];
                    }
                    for (i, g) in grads.iter().enumerate() {
                        let expected = if nbatch_physical == 1 || i % 2 == 1 { (i + 1) as f32 * scale } else { 0.0 };
                        assert!((g - expected).abs() < 1e-6, "gradient {i}: {g} != {expected}");
                    }
                    assert_eq!(model.weight(), 3.0 - e as f32);
                    assert_eq!(result.ndata(), NDATA / nbatch_physical);
                    let expected_loss = (39.0 - f64::from(e) * 6.0) * f64::from(scale);
                    assert!(close(result.loss().0, expected_loss, 1e-6), "{} != {expected_loss}", result.loss().0);
                    result.reset();
                }
            }
        }
    }

    // ---- on the CPU backend, through the backend scheduler ----

    use crate::core::context::InitParams;
    use crate::core::graph::DEFAULT_GRAPH_SIZE;
    use crate::core::ops::elementwise as ew;
    use crate::core::tensor::flag;
    use crate::opt::context::BorrowedSched;
    use crate::sched::Sched;

    /// A no-alloc context of `n` tensors (and, with `graphs`, room for three graphs).
    fn meta_context(n: usize, graphs: bool) -> Box<Context> {
        let tensor = crate::core::context::OBJECT_SIZE + crate::core::context::TENSOR_SIZE;
        let graph = crate::core::graph::cgraph::overhead_custom(DEFAULT_GRAPH_SIZE, true);
        let mem_size = n * tensor + if graphs { 3 * graph } else { 0 };
        Context::new(InitParams { mem_size, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    /// test-opt's regression: fit f(x) = a*x + b to 201 points of 1.2*x + 3.4 (with a little
    /// zero-mean noise) with a mean-squared-error loss, AdamW, 100 epochs.
    #[test]
    fn regression_on_the_cpu_backend() {
        let backend = crate::cpu::device::init();
        let sched = Sched::new(&[backend], None, DEFAULT_GRAPH_SIZE, false, false);
        let sched = Box::into_raw(sched);

        const N: i64 = 201;
        let mut ds = Dataset::new(Type::F32, Type::F32, 1, 1, N, N);
        let xs: Vec<f32> = (0..N).map(|i| -100.0 + 200.0 * i as f32 / (N - 1) as f32).collect();
        let ys: Vec<f32> =
            xs.iter().enumerate().map(|(i, x)| 1.2 * x + 3.4 + if i % 2 == 0 { 0.05 } else { -0.05 }).collect();
        Model::set(ds.data(), &xs);
        Model::set(ds.labels().unwrap(), &ys);

        let mut ctx_static = meta_context(3, false);
        let mut ctx_compute = meta_context(DEFAULT_GRAPH_SIZE, true);
        let x = ctx_static.new_tensor(Type::F32, &[1, N]);
        let a = ctx_static.new_tensor(Type::F32, &[1]);
        let b = ctx_static.new_tensor(Type::F32, &[1]);
        a.get_mut().flags |= flag::PARAM;
        b.get_mut().flags |= flag::PARAM;
        let ax = ew::mul(&mut ctx_compute, x, a);
        let f = ew::add(&mut ctx_compute, ax, b);
        let buf =
            crate::backend::tallocr::alloc_ctx_tensors(&ctx_static, crate::backend::host_buffer::cpu_buffer_type())
                .unwrap();
        Model::set(a, &[1.0]);
        Model::set(b, &[3.0]);

        extern "C" fn pars(_: *mut std::ffi::c_void) -> OptimizerParams {
            let mut p = default_optimizer_params(std::ptr::null_mut());
            p.adamw.alpha = 0.1;
            p
        }
        // SAFETY: the scheduler outlives the fit.
        let scheduler = Box::new(unsafe { BorrowedSched::new(sched) });
        let settings = FitSettings {
            loss_type: LossType::MEAN_SQUARED_ERROR,
            optimizer: OptimizerType::ADAMW,
            get_opt_pars: Some(pars),
            nepoch: 100,
            nbatch_logical: N,
            val_split: 0.0,
            silent: true,
        };
        fit(scheduler, &mut ctx_compute, x, f, &mut ds, settings);
        let (a_fit, b_fit) = (read_f32(a)[0], read_f32(b)[0]);
        assert!((a_fit - 1.2).abs() < 1e-2 && (b_fit - 3.4).abs() < 1e-2, "a = {a_fit}, b = {b_fit}");

        buf.free();
        // SAFETY: made by Box::into_raw above and no longer borrowed.
        drop(unsafe { Box::from_raw(sched) });
        backend.free();
    }

    /// Cross-entropy on the CPU backend: predictions and accuracy come back from the graph.
    #[test]
    fn classification_results_on_the_cpu_backend() {
        let backend = crate::cpu::device::init();
        let mut sched = Sched::new(&[backend], None, DEFAULT_GRAPH_SIZE, false, false);

        // Logits are the inputs plus a trainable bias per class; data point i votes for class
        // i % 2 and is labelled with class (i / 2) % 2, so half the predictions are right.
        let mut ds = Dataset::new(Type::F32, Type::F32, 2, 2, 6, 1);
        let onehot = |c: usize| if c == 0 { [1.0f32, 0.0] } else { [0.0, 1.0] };
        let data: Vec<f32> = (0..6).flat_map(|i| onehot(i % 2).map(|v| 4.0 * v)).collect();
        let labels: Vec<f32> = (0..6).flat_map(|i| onehot((i / 2) % 2)).collect();
        Model::set(ds.data(), &data);
        Model::set(ds.labels().unwrap(), &labels);

        let mut ctx_static = meta_context(2, false);
        let mut ctx_compute = meta_context(DEFAULT_GRAPH_SIZE, true);
        let inputs = ctx_static.new_tensor(Type::F32, &[2, 3]);
        let bias = ctx_static.new_tensor(Type::F32, &[2]);
        bias.get_mut().flags |= flag::PARAM;
        let outputs = ew::add(&mut ctx_compute, inputs, bias);
        let buf =
            crate::backend::tallocr::alloc_ctx_tensors(&ctx_static, crate::backend::host_buffer::cpu_buffer_type())
                .unwrap();
        Model::set(bias, &[0.0, 0.0]);

        // SAFETY: the scheduler and the contexts outlive the optimization context.
        let scheduler = unsafe { BorrowedSched::new(&mut *sched) };
        let args = InitArgs {
            scheduler: Box::new(scheduler),
            ctx_compute: Some(&mut ctx_compute),
            inputs: Some(inputs),
            outputs: Some(outputs),
            loss_type: LossType::CROSS_ENTROPY,
            build_type: BuildType::OPT,
            opt_period: 1,
            get_opt_pars: Some(default_optimizer_params),
            get_opt_pars_ud: std::ptr::null_mut(),
            optimizer: OptimizerType::ADAMW,
        };
        // SAFETY: as above.
        let mut ctx = unsafe { OptContext::new(args) };
        let mut result = OptResult::new();
        epoch(&mut ctx, &mut ds, EpochResults::Separate { train: None, eval: Some(&mut result) }, 0, None, None);

        assert_eq!(result.ndata(), 6);
        assert_eq!(result.pred(), &[0, 1, 0, 1, 0, 1]);
        let (accuracy, unc) = result.accuracy();
        assert!((accuracy - 0.5).abs() < 1e-12 && (unc - (0.25f64 / 5.0).sqrt()).abs() < 1e-12);
        let (loss, _) = result.loss();
        assert!(loss.is_finite() && loss > 0.0, "loss {loss}");

        // A training epoch moves the bias (its gradient is not zero for these labels).
        let mut train = OptResult::new();
        epoch(&mut ctx, &mut ds, EpochResults::Separate { train: Some(&mut train), eval: None }, 6, None, None);
        assert_eq!(train.ndata(), 6);
        assert!(read_f32(bias).iter().all(|b| b.is_finite()));
        drop(ctx);
        buf.free();
        drop(sched);
        backend.free();
    }

    #[test]
    fn progress_bars_fill_in_eighths() {
        assert_eq!(bar(0, 8), "        ");
        // As in ggml, the last cell never fills completely.
        assert_eq!(bar(8, 8), format!("{}\u{2589}", "\u{2588}".repeat(7)));
        assert_eq!(bar(4, 8), format!("{}\u{2589}    ", "\u{2588}".repeat(3)));
        assert_eq!(bar(1, 64), "        ");
        assert_eq!(bar(2, 64), "\u{258F}       ");
        assert_eq!(hms(3_723_000_000), "01:02:03");
        assert_eq!(c_float(f64::NAN, 5), "nan");
        assert_eq!(c_float(0.25, 5), "0.25000");
    }

    #[test]
    fn epochs_train_then_evaluate() {
        let mut model = Model::new(1);
        // Loss = 1 for every batch; the weights never change (no compute).
        let steps = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let seen_steps = steps.clone();
        let (sched, log) = fake(move |g: GraphPtr| {
            let loss = g.tensor_named(b"loss_sum").unwrap();
            buffer::tensor_set(loss, &1.0f32.to_ne_bytes(), 0);
            seen_steps.borrow_mut().push(g.nodes().any(|n| n.op == Op::OPT_STEP_SGD));
        });
        // SAFETY: the model outlives the optimization context.
        let mut ctx = unsafe { OptContext::new(model.args(sched, LossType::SUM, OptimizerType::SGD, 1)) };
        let mut ds = Dataset::new(crate::core::types::Type::F32, crate::core::types::Type::F32, 1, 0, 6, 1);

        let mut train = OptResult::new();
        let mut eval = OptResult::new();
        let mut seen = Vec::new();
        let mut cb = |ctx: &mut OptContext, _: &mut Dataset, r: Option<&mut OptResult>, p: Progress| {
            let line = progress_line(ctx, r.as_deref(), p, p.t_start_us);
            seen.push((p.train, p.ibatch, p.ibatch_max, r.map(|r| r.ndata()), line));
        };
        epoch(
            &mut ctx,
            &mut ds,
            EpochResults::Separate { train: Some(&mut train), eval: Some(&mut eval) },
            4,
            Some(&mut cb),
            None,
        );
        assert_eq!(train.ndata(), 4);
        assert_eq!(eval.ndata(), 2);
        assert_eq!(train.loss().0, 4.0);
        assert_eq!(seen.len(), 4);
        assert_eq!((seen[3].0, seen[3].1, seen[3].2, seen[3].3), (true, 4, 4, Some(4)));
        assert!(seen[3].4.starts_with("train: [") && seen[3].4.contains("data=0000004/0000004 loss=4.00000"));
        assert!(seen[3].4.ends_with(" \r\n"));

        assert_eq!(log.borrow().computed.len(), 6);
        // Four optimizer graphs, then two forward ones.
        assert_eq!(*steps.borrow(), [true, true, true, true, false, false]);
    }
}
