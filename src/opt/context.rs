//! `struct ggml_opt_context`: turns a forward graph into the three graphs of training and
//! runs them through a scheduler.
//!
//! - `gf`, the forward graph: the caller's outputs followed by the loss (and, for a
//!   cross-entropy loss, the predictions and the count of correct ones);
//! - `gb_grad`: `gf` plus the backward pass, whose gradients accumulate into per-parameter
//!   tensors when several physical batches make one optimizer step;
//! - `gb_opt`: `gb_grad` plus one optimizer step (AdamW or SGD) per parameter.
//!
//! With static graphs (compute context, inputs and outputs given at init) the graphs are built
//! once and the tensors that must survive between evaluations (labels, loss, gradient
//! accumulators, optimizer moments) live in a static buffer; each evaluation allocates a copy
//! of the graph, so the scheduler's placement of intermediate tensors never touches the
//! originals. Without static graphs the caller hands over a fresh forward graph before every
//! allocation and the graphs are rebuilt each time; only accumulators and moments persist.

use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::NonNull;

use super::dataset::Mt19937;
use super::params::{BuildType, GetOptimizerParams, LossType, OptimizerParams, OptimizerType};
use super::result::OptResult;
use crate::backend::buffer::{self, BufferPtr, BufferTypePtr};
use crate::backend::{host_buffer, tallocr};
use crate::core::context::{Context, InitParams, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::graph::{DEFAULT_GRAPH_SIZE, Graph, GraphPtr, cgraph};
use crate::core::ops::{elementwise as ew, loss, reduce};
use crate::core::status::Status;
use crate::core::tensor::{MAX_SRC, TensorPtr, flag};
use crate::core::types::Type;
use crate::sched::Sched;

/// What an optimization context needs of `ggml_backend_sched`: the C layer adapts a
/// scheduler handle to this, tests use stand-ins.
pub trait Scheduler {
    /// Forgets the allocation of the previous graph (`ggml_backend_sched_reset`).
    fn reset(&mut self);
    /// Places every tensor of `graph` on a backend and allocates it; false on failure.
    fn alloc_graph(&mut self, graph: GraphPtr) -> bool;
    /// Runs an allocated graph.
    fn compute(&mut self, graph: GraphPtr) -> Status;
    /// Where the optimizer's persistent tensors go: the default buffer type of the
    /// scheduler's first backend.
    fn static_buffer_type(&mut self) -> BufferTypePtr;
}

/// A scheduler the caller owns (`ggml_backend_sched_t`), borrowed for the life of an
/// optimization context. A missing one is reported when first needed.
pub struct BorrowedSched(Option<NonNull<Sched>>);

impl BorrowedSched {
    /// # Safety
    /// `sched`, when not null, must stay alive for as long as the handle is used, and not be
    /// used by anything else while one of the handle's methods runs.
    pub unsafe fn new(sched: *mut Sched) -> BorrowedSched {
        BorrowedSched(NonNull::new(sched))
    }

    fn get(&mut self) -> &mut Sched {
        match self.0.as_mut() {
            // SAFETY: guaranteed by the constructor's caller; each borrow lasts one call.
            Some(s) => unsafe { s.as_mut() },
            None => crate::ggml_abort!("the optimization context has no backend scheduler"),
        }
    }
}

impl Scheduler for BorrowedSched {
    fn reset(&mut self) {
        self.get().reset();
    }

    fn alloc_graph(&mut self, graph: GraphPtr) -> bool {
        self.get().alloc_graph(graph.get_mut())
    }

    fn compute(&mut self, graph: GraphPtr) -> Status {
        self.get().graph_compute(graph.get_mut())
    }

    fn static_buffer_type(&mut self) -> BufferTypePtr {
        let sched = self.get();
        crate::ggml_assert!(sched.n_backends() > 0, "the scheduler has no backends");
        sched.backend(0).default_buffer_type()
    }
}

/// Arguments of [`OptContext::new`]: `struct ggml_opt_params` with Rust types.
pub struct InitArgs<'a> {
    pub scheduler: Box<dyn Scheduler>,
    /// Given (with inputs and outputs) for static graphs; absent for graphs supplied later.
    pub ctx_compute: Option<&'a mut Context>,
    pub inputs: Option<TensorPtr>,
    pub outputs: Option<TensorPtr>,
    pub loss_type: LossType,
    pub build_type: BuildType,
    pub opt_period: i32,
    pub get_opt_pars: GetOptimizerParams,
    pub get_opt_pars_ud: *mut c_void,
    pub optimizer: OptimizerType,
}

/// The caller's compute context, which the optimization context borrows across calls (see
/// [`OptContext::new`]).
#[derive(Clone, Copy)]
struct ComputeContext(NonNull<Context>);

impl ComputeContext {
    fn get(&mut self) -> &mut Context {
        // SAFETY: OptContext::new and prepare_alloc require the context to outlive its use
        // here; no other Rust reference to it is live while graphs are being built.
        unsafe { self.0.as_mut() }
    }
}

/// The tensors a loss adds after the outputs.
struct LossNodes {
    labels: Option<TensorPtr>,
    loss: TensorPtr,
    /// Whether the loss is a mean over data points.
    per_datapoint: bool,
}

/// An optimization context.
pub struct OptContext {
    scheduler: Box<dyn Scheduler>,
    /// The graph most recently allocated, and the copy of it that the scheduler holds.
    allocated_graph: Option<GraphPtr>,
    allocated_graph_copy: Option<GraphPtr>,
    /// Gradient accumulators, optimizer moments and (static graphs) labels and loss tensors.
    ctx_static: Option<Box<Context>>,
    /// The optimizer's hyper-parameter tensor, in host memory.
    ctx_cpu: Option<Box<Context>>,
    ctx_compute: Option<ComputeContext>,
    /// Holds the copy of a static graph made for allocation.
    ctx_copy: Option<Box<Context>>,
    buf_static: Option<BufferPtr>,
    buf_cpu: Option<BufferPtr>,
    rng: Mt19937,
    loss_type: LossType,
    /// The graph the next evaluation runs, and the largest one built.
    build_type: BuildType,
    build_type_alloc: BuildType,

    inputs: Option<TensorPtr>,
    outputs: Option<TensorPtr>,
    labels: Option<TensorPtr>,
    loss: Option<TensorPtr>,
    pred: Option<TensorPtr>,
    ncorrect: Option<TensorPtr>,

    gf: Option<GraphPtr>,
    gb_grad: Option<GraphPtr>,
    gb_opt: Option<GraphPtr>,
    static_graphs: bool,
    eval_ready: bool,
    /// Per forward node: its gradient accumulator and AdamW moments, if it has them.
    grad_accs: Vec<Option<TensorPtr>>,
    grad_m: Vec<Option<TensorPtr>>,
    grad_v: Vec<Option<TensorPtr>>,

    /// Optimizer steps taken plus one (AdamW's bias correction counts from 1).
    iter: i64,
    opt_period: i32,
    /// Physical batches evaluated, modulo `opt_period`.
    opt_i: i32,
    loss_per_datapoint: bool,

    get_opt_pars: GetOptimizerParams,
    get_opt_pars_ud: *mut c_void,
    opt_step_params: Option<TensorPtr>,
    optimizer: OptimizerType,
}

const TENSOR_OVERHEAD: usize = OBJECT_SIZE + TENSOR_SIZE;

fn set_input(t: TensorPtr) {
    t.get_mut().flags |= flag::INPUT;
}

fn set_output(t: TensorPtr) {
    t.get_mut().flags |= flag::OUTPUT;
}

fn set_loss(t: TensorPtr) {
    crate::ggml_assert!(t.is_scalar() && t.type_ == Type::F32, "the loss must be an F32 scalar");
    t.get_mut().flags |= flag::LOSS;
}

fn named(t: TensorPtr, name: &[u8]) -> TensorPtr {
    t.get_mut().set_name_bytes(name);
    t
}

/// Adds the loss of `loss_type` over `outputs` to `ctx`. Losses that are means over data
/// points are also divided by the accumulation period, so that accumulating `opt_period`
/// physical batches gives the mean over the logical batch.
fn build_loss(ctx: &mut Context, outputs: TensorPtr, loss_type: LossType, opt_period: i32) -> LossNodes {
    let mean_scale = 1.0 / (i64::from(opt_period) * outputs.nelements()) as f32;
    let new_labels = |ctx: &mut Context| {
        let labels = named(ctx.dup_tensor(outputs), b"labels");
        set_input(labels);
        labels
    };
    match loss_type {
        LossType::MEAN => {
            let sum = named(reduce::sum(ctx, outputs), b"loss_sum");
            let loss = named(ew::scale(ctx, sum, mean_scale), b"loss_mean");
            LossNodes { labels: None, loss, per_datapoint: true }
        }
        LossType::SUM => {
            let loss = named(reduce::sum(ctx, outputs), b"loss_sum");
            LossNodes { labels: None, loss, per_datapoint: false }
        }
        LossType::CROSS_ENTROPY => {
            let labels = new_labels(ctx);
            let mut loss = named(loss::cross_entropy_loss(ctx, outputs, labels), b"loss_cross_entropy");
            if opt_period > 1 {
                loss = named(ew::scale(ctx, loss, 1.0 / opt_period as f32), b"loss_cross_entropy_scaled");
            }
            LossNodes { labels: Some(labels), loss, per_datapoint: true }
        }
        LossType::MEAN_SQUARED_ERROR => {
            let labels = new_labels(ctx);
            let error = named(ew::sub(ctx, outputs, labels), b"loss_error");
            let squared = named(ew::sqr(ctx, error), b"loss_squared_error");
            let sum = named(reduce::sum(ctx, squared), b"loss_sum_squared_error");
            let loss = named(ew::scale(ctx, sum, mean_scale), b"loss_mean_squared_error");
            LossNodes { labels: Some(labels), loss, per_datapoint: true }
        }
        other => crate::ggml_abort!("unknown loss type {}", other.0),
    }
}

/// A copy of `t` in `ctx` with the same data, buffer, op, flags and name, whose sources and
/// view source are copies too (memoised in `map`).
fn copy_tensor(map: &mut HashMap<TensorPtr, TensorPtr>, ctx: &mut Context, t: TensorPtr) -> TensorPtr {
    if let Some(&copy) = map.get(&t) {
        return copy;
    }
    let copy = ctx.dup_tensor(t);
    map.insert(t, copy);
    let view_src = t.view_source().map(|v| copy_tensor(map, ctx, v));
    let src: [Option<TensorPtr>; MAX_SRC] = std::array::from_fn(|i| t.src(i).map(|s| copy_tensor(map, ctx, s)));

    let c = copy.get_mut();
    c.op = t.op;
    c.nb = t.nb;
    c.flags = t.flags;
    c.op_params = t.op_params;
    c.name = t.name;
    c.data = t.data;
    c.buffer = t.buffer;
    c.extra = t.extra;
    c.view_offs = t.view_offs;
    c.view_src = view_src.map_or(std::ptr::null_mut(), TensorPtr::as_ptr);
    c.src = src.map(|s| s.map_or(std::ptr::null_mut(), TensorPtr::as_ptr));
    copy
}

/// A copy of `src` built from copies of its tensors, with the same gradients recorded per
/// node, so the scheduler can assign memory to it without changing `src`'s tensors.
fn copy_graph(ctx: &mut Context, src: &Graph) -> GraphPtr {
    let mut map = HashMap::new();
    let dst = cgraph::new_graph_custom(ctx, usize::try_from(src.size).unwrap_or(0), true);
    for leaf in src.leafs() {
        let copy = copy_tensor(&mut map, ctx, leaf);
        dst.get_mut().build_forward_expand(copy);
    }
    crate::ggml_assert!(dst.n_leafs == src.n_leafs, "graph copy has {} leafs, not {}", dst.n_leafs, src.n_leafs);
    for node in src.nodes() {
        let copy = copy_tensor(&mut map, ctx, node);
        dst.get_mut().build_forward_expand(copy);
    }
    crate::ggml_assert!(dst.n_nodes == src.n_nodes, "graph copy has {} nodes, not {}", dst.n_nodes, src.n_nodes);

    for i in 0..src.node_slots().len() {
        let slot_of = |g: &Graph| match g.visited_hash_set.find_existing(g.node(i).as_ptr()) {
            Some(slot) => slot,
            None => crate::ggml_abort!("graph node {} is missing from its hash set", i),
        };
        let (from, to) = (slot_of(src), slot_of(&dst));
        let grad = src.grad_slots().get(from).copied().flatten();
        let grad_acc = src.grad_acc_slots().get(from).copied().flatten();
        crate::ggml_assert!(to < dst.visited_hash_set.size, "hash slot out of range");
        // SAFETY: `dst` was made with gradient tables of visited_hash_set.size slots each and
        // `to` is one of them (checked above); no slice of those tables is live.
        unsafe {
            *dst.grads.add(to) = grad;
            *dst.grad_accs.add(to) = grad_acc;
        }
    }
    dst
}

fn to_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

impl OptContext {
    /// `ggml_opt_init`. With a compute context (and inputs and outputs) the graphs are built
    /// here; otherwise they come with each [`OptContext::prepare_alloc`].
    ///
    /// # Safety
    /// `ctx_compute`, when given, is used by the returned context until it is dropped: it
    /// must stay alive (and not be reset) for that long, and no other reference to it may be
    /// in use while the context's methods run. `get_opt_pars` must be safe to call with
    /// `get_opt_pars_ud` for as long.
    pub unsafe fn new(args: InitArgs<'_>) -> OptContext {
        crate::ggml_assert!(
            args.opt_period >= 1,
            "the accumulation period must be at least 1, not {}",
            args.opt_period
        );
        let static_graphs = args.ctx_compute.is_some();
        let mut ctx = OptContext {
            scheduler: args.scheduler,
            allocated_graph: None,
            allocated_graph_copy: None,
            ctx_static: None,
            ctx_cpu: None,
            ctx_compute: args.ctx_compute.map(|c| ComputeContext(NonNull::from(c))),
            ctx_copy: None,
            buf_static: None,
            buf_cpu: None,
            rng: Mt19937::default(),
            loss_type: args.loss_type,
            build_type: args.build_type,
            build_type_alloc: args.build_type,
            inputs: args.inputs,
            outputs: args.outputs,
            labels: None,
            loss: None,
            pred: None,
            ncorrect: None,
            gf: None,
            gb_grad: None,
            gb_opt: None,
            static_graphs,
            eval_ready: false,
            grad_accs: Vec::new(),
            grad_m: Vec::new(),
            grad_v: Vec::new(),
            iter: 1,
            opt_period: args.opt_period,
            opt_i: 0,
            loss_per_datapoint: false,
            get_opt_pars: args.get_opt_pars,
            get_opt_pars_ud: args.get_opt_pars_ud,
            opt_step_params: None,
            optimizer: args.optimizer,
        };

        if !static_graphs {
            crate::ggml_assert!(ctx.inputs.is_none(), "inputs given without a compute context");
            crate::ggml_assert!(ctx.outputs.is_none(), "outputs given without a compute context");
            return ctx;
        }
        crate::ggml_assert!(ctx.inputs.is_some(), "static graphs need the inputs");
        let Some(outputs) = ctx.outputs else { crate::ggml_abort!("static graphs need the outputs") };
        let Some(mut compute) = ctx.ctx_compute else { crate::ggml_abort!("static graphs need a compute context") };

        let gf = cgraph::new_graph_custom(compute.get(), DEFAULT_GRAPH_SIZE, true);
        gf.get_mut().build_forward_expand(outputs);
        ctx.gf = Some(gf);
        ctx.build();
        ctx
    }

    /// Builds the graphs up to the current build type (`ggml_opt_build`).
    fn build(&mut self) {
        let Some(mut compute) = self.ctx_compute else {
            crate::ggml_abort!(
                "no compute context set, either use static graphs or set one with ggml_opt_prepare_alloc"
            )
        };
        let (Some(inputs), Some(outputs), Some(gf)) = (self.inputs, self.outputs, self.gf) else {
            crate::ggml_abort!("no forward graph set, either use static graphs or set one with ggml_opt_prepare_alloc")
        };
        crate::ggml_assert!(
            !self.static_graphs || !inputs.data.is_null(),
            "when using static graphs the inputs must be allocated statically"
        );

        let accumulate = self.build_type_alloc >= BuildType::GRAD
            && !(self.static_graphs && self.build_type_alloc == BuildType::OPT && self.opt_period == 1);
        let need_momenta = self.build_type_alloc == BuildType::OPT && self.optimizer == OptimizerType::ADAMW;

        set_input(inputs);
        set_output(outputs);

        let mut n_param = 0;
        for node in gf.nodes() {
            if node.flags & flag::PARAM != 0 {
                n_param += 1;
            }
            crate::ggml_assert!(node.flags & flag::LOSS == 0, "support for extra loss terms not implemented");
        }

        let fixed = if self.static_graphs { 9 } else { 0 };
        let ctx_static: &mut Context = self.ctx_static.get_or_insert_with(|| {
            // One gradient per loss; per parameter an accumulator and two moments as needed;
            // with static graphs also labels, the loss chain, predictions and their count.
            let per_param = usize::from(accumulate) + if need_momenta { 2 } else { 0 };
            Context::new(InitParams {
                mem_size: (1 + per_param * n_param + fixed) * TENSOR_OVERHEAD,
                mem_buffer: std::ptr::null_mut(),
                no_alloc: true,
            })
        });
        crate::ggml_assert!(self.build_type <= self.build_type_alloc, "building more graphs than allocated for");

        // The host tensor of optimizer hyper-parameters is made anew with every build.
        if let Some(buf) = self.buf_cpu.take() {
            buf.free();
        }
        self.opt_step_params = None;
        let ctx_cpu: &mut Context = self.ctx_cpu.insert(Context::new(InitParams {
            mem_size: TENSOR_OVERHEAD,
            mem_buffer: std::ptr::null_mut(),
            no_alloc: true,
        }));

        let ctx_results = if self.static_graphs { &mut *ctx_static } else { compute.get() };
        let nodes = build_loss(ctx_results, outputs, self.loss_type, self.opt_period);
        self.labels = nodes.labels;
        self.loss = Some(nodes.loss);
        self.loss_per_datapoint = nodes.per_datapoint;
        set_output(nodes.loss);
        set_loss(nodes.loss);
        gf.get_mut().build_forward_expand(nodes.loss);

        self.pred = None;
        self.ncorrect = None;
        if let (LossType::CROSS_ENTROPY, Some(labels)) = (self.loss_type, nodes.labels) {
            let pred = named(reduce::argmax(ctx_results, outputs), b"pred");
            set_output(pred);
            gf.get_mut().build_forward_expand(pred);
            let label_class = reduce::argmax(ctx_results, labels);
            let ncorrect = named(reduce::count_equal(ctx_results, pred, label_class), b"ncorrect");
            set_output(ncorrect);
            gf.get_mut().build_forward_expand(ncorrect);
            self.pred = Some(pred);
            self.ncorrect = Some(ncorrect);
        }

        if self.buf_static.is_some() {
            if self.build_type == BuildType::FORWARD {
                return;
            }
        } else if self.build_type_alloc == BuildType::FORWARD {
            self.buf_static = tallocr::alloc_ctx_tensors(ctx_static, self.scheduler.static_buffer_type());
            return;
        }

        if self.grad_accs.is_empty() {
            crate::ggml_assert!(self.build_type_alloc >= BuildType::GRAD, "gradients needed without a gradient build");
            let mut per_node = |wanted: &dyn Fn(TensorPtr) -> bool| -> Vec<Option<TensorPtr>> {
                gf.nodes().map(|node| wanted(node).then(|| ctx_static.new_tensor(Type::F32, &node.ne))).collect()
            };
            self.grad_accs = per_node(&|n| (accumulate && n.flags & flag::PARAM != 0) || n.flags & flag::LOSS != 0);
            if need_momenta {
                self.grad_m = per_node(&|n| n.flags & flag::PARAM != 0);
                self.grad_v = per_node(&|n| n.flags & flag::PARAM != 0);
            }
        }

        let gb_grad = cgraph::dup(compute.get(), &gf, true);
        gb_grad.get_mut().build_backward_expand(compute.get(), Some(&self.grad_accs));
        self.gb_grad = Some(gb_grad);

        if self.buf_static.is_some() {
            if self.build_type == BuildType::GRAD {
                return;
            }
        } else if self.build_type_alloc == BuildType::GRAD {
            // A gradient-only build is complete here (ggml 0.25.1 goes on and trips over its
            // own check that the build type is OPT).
            self.buf_static = tallocr::alloc_ctx_tensors(ctx_static, self.scheduler.static_buffer_type());
            gb_grad.get_mut().reset();
            return;
        }
        crate::ggml_assert!(self.build_type_alloc == BuildType::OPT, "unknown build type {}", self.build_type_alloc.0);

        let gb_opt = cgraph::dup(compute.get(), &gb_grad, true);
        self.gb_opt = Some(gb_opt);

        let name = self.optimizer.name();
        let step_params = ctx_cpu.new_tensor(Type::F32, &[if need_momenta { 7 } else { 2 }]);
        set_input(step_params);
        named(step_params, format!("{name}_params").as_bytes());
        self.opt_step_params = Some(step_params);

        for i in (0..gf.node_slots().len()).rev() {
            let node = gb_opt.node(i);
            let Some(grad) = gb_opt.grad(node.as_ptr()) else { continue };
            if node.flags & flag::PARAM == 0 {
                continue;
            }
            let ctx = compute.get();
            let step = match self.optimizer {
                OptimizerType::ADAMW => {
                    let moment = |moments: &[Option<TensorPtr>], which: &[u8]| match moments.get(i).copied().flatten() {
                        Some(m) => named(m, &[b"AdamW ".as_slice(), which, b" for ", node.name_bytes()].concat()),
                        None => crate::ggml_abort!("parameter '{}' has no AdamW moments", node.name()),
                    };
                    let m = moment(&self.grad_m, b"m");
                    let v = moment(&self.grad_v, b"v");
                    loss::opt_step_adamw(ctx, node, grad, m, v, step_params)
                }
                OptimizerType::SGD => loss::opt_step_sgd(ctx, node, grad, step_params),
                other => crate::ggml_abort!("unknown optimizer type {}", other.0),
            };
            named(step, &[name.as_bytes(), b" step for ", node.name_bytes()].concat());
            gb_opt.get_mut().build_forward_expand(step);
        }

        if self.buf_static.is_none() {
            self.buf_static = tallocr::alloc_ctx_tensors(ctx_static, self.scheduler.static_buffer_type());
            gb_opt.get_mut().reset();
        }
        self.buf_cpu = tallocr::alloc_ctx_tensors(ctx_cpu, host_buffer::cpu_buffer_type());
    }

    /// `ggml_opt_reset`: zeroes the gradient accumulators, or (with `optimizer`) also the
    /// optimizer moments, restarting its step count.
    pub fn reset(&mut self, optimizer: bool) {
        if optimizer {
            if let Some(g) = self.gb_opt {
                g.get_mut().reset();
            }
            self.iter = 1;
        } else if let Some(g) = self.gb_grad {
            g.get_mut().reset();
        }
    }

    pub fn static_graphs(&self) -> bool {
        self.static_graphs
    }

    pub fn inputs(&self) -> Option<TensorPtr> {
        self.inputs
    }

    pub fn outputs(&self) -> Option<TensorPtr> {
        self.outputs
    }

    pub fn labels(&self) -> Option<TensorPtr> {
        self.labels
    }

    pub fn loss(&self) -> Option<TensorPtr> {
        self.loss
    }

    pub fn pred(&self) -> Option<TensorPtr> {
        self.pred
    }

    pub fn ncorrect(&self) -> Option<TensorPtr> {
        self.ncorrect
    }

    /// The gradient accumulator of `node` in the optimizer graph, if any.
    pub fn grad_acc(&self, node: TensorPtr) -> Option<TensorPtr> {
        self.gb_opt.and_then(|g| g.grad_acc(node.as_ptr()))
    }

    pub fn optimizer_type(&self) -> OptimizerType {
        self.optimizer
    }

    /// The random number generator that shuffles datasets.
    pub fn rng(&mut self) -> &mut Mt19937 {
        &mut self.rng
    }

    /// The forward, gradient and optimizer graphs currently built.
    pub fn graphs(&self) -> (Option<GraphPtr>, Option<GraphPtr>, Option<GraphPtr>) {
        (self.gf, self.gb_grad, self.gb_opt)
    }

    /// `ggml_opt_prepare_alloc`: the forward graph for the next allocation, without static
    /// graphs.
    ///
    /// # Safety
    /// As for the compute context of [`OptContext::new`]: `ctx_compute` must stay alive and
    /// otherwise unused while this context builds in it (until the next evaluation ends).
    pub unsafe fn prepare_alloc(
        &mut self,
        ctx_compute: &mut Context,
        gf: GraphPtr,
        inputs: TensorPtr,
        outputs: TensorPtr,
    ) {
        crate::ggml_assert!(!self.static_graphs, "ggml_opt_prepare_alloc on a context with static graphs");
        self.ctx_compute = Some(ComputeContext(NonNull::from(ctx_compute)));
        self.gf = Some(gf);
        self.inputs = Some(inputs);
        self.outputs = Some(outputs);
    }

    /// `ggml_opt_alloc`: chooses the graph of the next evaluation — forward only, or with the
    /// backward pass and (when this batch completes an accumulation period) the optimizer
    /// step — and has the scheduler allocate it.
    pub fn alloc(&mut self, backward: bool) {
        crate::ggml_assert!(!self.eval_ready, "ggml_opt_alloc called twice without ggml_opt_eval");
        // The last evaluation ended an accumulation period: the next gradients start from zero.
        let period_done = self.build_type == BuildType::OPT && self.opt_i == 0;
        if period_done
            && self.opt_period > 1
            && let Some(g) = self.gb_grad
        {
            g.get_mut().reset();
        }
        self.build_type = if !backward {
            BuildType::FORWARD
        } else if (self.opt_i + 1) % self.opt_period == 0 {
            BuildType::OPT
        } else {
            BuildType::GRAD
        };

        if !self.static_graphs {
            self.build();
            // Dynamic graphs always accumulate into the static accumulators, but their gradient
            // graph only exists from here on. ggml 0.25.1 never zeroes them (its reset above
            // finds no graph), so gradients would add up over the whole training.
            if period_done && let Some(g) = self.gb_grad {
                g.get_mut().reset();
            }
        }

        let graph = match self.build_type {
            BuildType::FORWARD => self.gf,
            BuildType::GRAD => self.gb_grad,
            _ => self.gb_opt,
        };
        let Some(graph) = graph else {
            crate::ggml_abort!("the context was not built for build type {}", self.build_type.0)
        };

        if self.allocated_graph == Some(graph) {
            self.eval_ready = true;
            return;
        }

        self.scheduler.reset();
        let copy = if self.static_graphs {
            let size = usize::try_from(graph.size).unwrap_or(0);
            self.ctx_copy = None;
            let mut ctx_copy = Context::new(InitParams {
                mem_size: size * TENSOR_OVERHEAD + cgraph::overhead_custom(size, graph.has_grads()),
                mem_buffer: std::ptr::null_mut(),
                no_alloc: true,
            });
            let copy = copy_graph(&mut ctx_copy, &graph);
            self.ctx_copy = Some(ctx_copy);
            copy
        } else {
            graph
        };

        crate::ggml_assert!(self.scheduler.alloc_graph(copy), "failed to allocate the optimization graph");
        self.allocated_graph = Some(graph);
        self.allocated_graph_copy = Some(copy);
        self.eval_ready = true;
    }

    /// Asks for the optimizer's hyper-parameters and stores them, with AdamW's bias
    /// corrections for the current step, where the optimizer step reads them.
    fn write_optimizer_params(&mut self) {
        let Some(get) = self.get_opt_pars else { crate::ggml_abort!("no optimizer parameter callback set") };
        // SAFETY: OptContext::new requires the callback to be callable with its user data.
        let p: OptimizerParams = unsafe { get(self.get_opt_pars_ud) };
        let values = match self.optimizer {
            OptimizerType::ADAMW => {
                let a = p.adamw;
                let (alpha_ok, eps_ok) = (a.alpha > 0.0, a.eps >= 0.0);
                crate::ggml_assert!(alpha_ok, "AdamW learning rate {} must be positive", a.alpha);
                crate::ggml_assert!((0.0..=1.0).contains(&a.beta1), "AdamW beta1 {} outside [0, 1]", a.beta1);
                crate::ggml_assert!((0.0..=1.0).contains(&a.beta2), "AdamW beta2 {} outside [0, 1]", a.beta2);
                crate::ggml_assert!(eps_ok, "AdamW eps {} must not be negative", a.eps);
                crate::ggml_assert!((0.0..=1.0).contains(&a.wd), "AdamW weight decay {} outside [0, 1]", a.wd);
                let iter = self.iter as f32;
                let beta1h = 1.0 / (1.0 - a.beta1.powf(iter));
                let beta2h = 1.0 / (1.0 - a.beta2.powf(iter));
                vec![a.alpha, a.beta1, a.beta2, a.eps, a.wd, beta1h, beta2h]
            }
            OptimizerType::SGD => {
                let s = p.sgd;
                let alpha_ok = s.alpha > 0.0;
                crate::ggml_assert!(alpha_ok, "SGD learning rate {} must be positive", s.alpha);
                crate::ggml_assert!((0.0..=1.0).contains(&s.wd), "SGD weight decay {} outside [0, 1]", s.wd);
                vec![s.alpha, s.wd]
            }
            other => crate::ggml_abort!("unknown optimizer type {}", other.0),
        };
        let Some(t) = self.opt_step_params else { crate::ggml_abort!("optimizer parameters tensor missing") };
        buffer::tensor_set(t, &to_bytes(&values), 0);
    }

    /// `ggml_opt_eval`: runs the allocated graph and adds the batch's loss, predictions and
    /// correct predictions to `result`.
    pub fn eval(&mut self, result: Option<&mut OptResult>) {
        crate::ggml_assert!(self.eval_ready, "ggml_opt_eval without ggml_opt_alloc");
        let (Some(graph), Some(copy)) = (self.allocated_graph, self.allocated_graph_copy) else {
            crate::ggml_abort!("no graph allocated")
        };
        let optimizer_step = self.gb_opt == Some(graph);
        if optimizer_step {
            self.write_optimizer_params();
        }

        let status = self.scheduler.compute(copy);
        if status != Status::SUCCESS {
            crate::log_error!("ggml_opt_eval: graph computation failed with status {}\n", status.0);
        }
        self.iter += i64::from(optimizer_step);
        self.opt_i = (self.opt_i + 1) % self.opt_period;

        if !self.static_graphs {
            self.gf = None;
            self.gb_grad = None;
            self.gb_opt = None;
            self.allocated_graph = None;
            self.allocated_graph_copy = None;
        }
        self.eval_ready = false;

        if let Some(result) = result {
            self.collect(result);
        }
    }

    /// Reads the loss, predictions and correct-prediction count of the last evaluation.
    fn collect(&self, result: &mut OptResult) {
        result.check_conventions(self.loss_per_datapoint, i64::from(self.opt_period));
        let (Some(outputs), Some(loss)) = (self.outputs, self.loss) else { crate::ggml_abort!("no loss to read") };
        let ndata = outputs.ne[1];

        crate::ggml_assert!(loss.is_scalar() && loss.type_ == Type::F32, "the loss must be an F32 scalar");
        let mut bytes = [0u8; 4];
        buffer::tensor_get(loss, &mut bytes, 0);
        let loss_value = f32::from_ne_bytes(bytes);

        let pred = self.pred.map(|p| {
            crate::ggml_assert!(p.type_ == Type::I32, "predictions must be I32");
            let mut bytes = vec![0u8; p.nbytes()];
            buffer::tensor_get(p, &mut bytes, 0);
            let pred: Vec<i32> = bytes.chunks_exact(4).map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
            crate::ggml_assert!(pred.len() as i64 == ndata, "{} predictions for {} data points", pred.len(), ndata);
            pred
        });
        result.add_batch(ndata, loss_value, pred.as_deref());

        let ncorrect = self.ncorrect.map(|t| {
            crate::ggml_assert!(
                t.is_scalar() && t.type_ == Type::I64,
                "the correct-prediction count must be an I64 scalar"
            );
            let mut bytes = [0u8; 8];
            buffer::tensor_get(t, &mut bytes, 0);
            i64::from_ne_bytes(bytes)
        });
        result.add_ncorrect(ncorrect);
    }
}

impl Drop for OptContext {
    fn drop(&mut self) {
        for buf in [self.buf_static.take(), self.buf_cpu.take()].into_iter().flatten() {
            buf.free();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::op::Op;
    use crate::core::ops::elementwise as ew;
    use crate::opt::test_support::{Model, fake, host_backend, read_f32, unit_steps};
    use std::cell::RefCell;
    use std::rc::Rc;

    fn names(g: &Graph) -> Vec<String> {
        g.nodes().map(|n| n.name().to_string()).collect()
    }

    #[test]
    fn training_through_the_backend_scheduler() {
        for optimizer in [OptimizerType::ADAMW, OptimizerType::SGD] {
            let mut sched = Sched::new(&[host_backend()], None, DEFAULT_GRAPH_SIZE, false, false);
            let mut model = Model::new(1);
            // SAFETY: the scheduler outlives the optimization context.
            let scheduler = unsafe { BorrowedSched::new(&mut *sched) };
            let args =
                InitArgs { get_opt_pars: Some(unit_steps), ..model.args(scheduler, LossType::SUM, optimizer, 1) };
            // SAFETY: the model outlives the optimization context.
            let mut opt = unsafe { OptContext::new(args) };
            let mut result = OptResult::new();
            for idata in 0..6 {
                opt.alloc(idata >= 3);
                Model::set(model.inputs, &[idata as f32]);
                opt.eval(Some(&mut result));
            }
            // Three forward passes at w = 3, then three steps of -1 (the gradient is 1).
            assert_eq!(model.weight(), 0.0);
            assert_eq!(result.ndata(), 6);
            assert_eq!(result.loss().0, (3.0 + 4.0 + 5.0) + (6.0 + 6.0 + 6.0));
            drop(opt);
            drop(sched);
        }
    }

    #[test]
    fn dynamic_training_through_the_backend_scheduler() {
        let mut sched = Sched::new(&[host_backend()], None, DEFAULT_GRAPH_SIZE, false, false);
        let mut model = Model::new(1);
        // SAFETY: the scheduler outlives the optimization context.
        let scheduler = unsafe { BorrowedSched::new(&mut *sched) };
        let args = InitArgs {
            ctx_compute: None,
            inputs: None,
            outputs: None,
            get_opt_pars: Some(unit_steps),
            ..model.args(scheduler, LossType::MEAN, OptimizerType::SGD, 1)
        };
        // SAFETY: no compute context yet; the model's, given below, outlives the context.
        let mut opt = unsafe { OptContext::new(args) };
        let mut result = OptResult::new();
        for idata in 0..4 {
            // A fresh forward graph each time, as a caller that resets its compute context does.
            let ctx = &mut model.ctx_compute;
            let sum = ew::add(ctx, model.inputs, model.weights);
            let outputs = ew::scale(ctx, sum, 1.0);
            let gf = cgraph::new_graph_custom(ctx, 64, true);
            gf.get_mut().build_forward_expand(outputs);
            // SAFETY: the model's compute context outlives the optimization context.
            unsafe { opt.prepare_alloc(&mut model.ctx_compute, gf, model.inputs, outputs) };
            opt.alloc(true);
            Model::set(model.inputs, &[idata as f32]);
            opt.eval(Some(&mut result));
            assert!(!opt.loss().unwrap().data.is_null());
        }
        assert_eq!(model.weight(), -1.0);
        assert_eq!(result.ndata(), 4);
        assert_eq!(result.loss(), (3.0, 0.0));
        drop(opt);
        drop(sched);
    }

    #[test]
    fn static_graphs_with_adamw() {
        let mut model = Model::new(1);
        let (sched, log) = fake(|_| {});
        // SAFETY: the model (and its compute context) outlives the optimization context.
        let opt = unsafe { OptContext::new(model.args(sched, LossType::SUM, OptimizerType::ADAMW, 1)) };
        assert!(opt.static_graphs());
        assert_eq!(opt.optimizer_type(), OptimizerType::ADAMW);
        let (gf, gb_grad, gb_opt) = opt.graphs();
        let (gf, gb_grad, gb_opt) = (gf.unwrap(), gb_grad.unwrap(), gb_opt.unwrap());

        // weights (a parameter, hence a node), the add, the scale, then the loss.
        let loss = opt.loss().unwrap();
        assert_eq!(names(&gf)[gf.n_nodes as usize - 1], "loss_sum");
        assert_eq!(loss.op, Op::SUM);
        assert!(loss.flags & flag::LOSS != 0 && loss.flags & flag::OUTPUT != 0);
        assert!(model.inputs.flags & flag::INPUT != 0 && model.outputs.flags & flag::OUTPUT != 0);
        assert!(opt.labels().is_none() && opt.pred().is_none() && opt.ncorrect().is_none());
        // The loss lives in the static context, allocated once.
        assert!(!loss.data.is_null());

        // The backward graph computes the gradient of the weights.
        let gw = gb_grad.grad(model.weights.as_ptr()).expect("weights have a gradient");
        assert!(gb_grad.n_nodes > gf.n_nodes);
        assert!(gb_grad.nodes().any(|n| n == gw));

        // The optimizer graph ends with one AdamW step, named after the parameter.
        let step = gb_opt.node_at(-1);
        assert_eq!(step.op, Op::OPT_STEP_ADAMW);
        assert_eq!(step.name(), "adamw step for weights");
        assert_eq!(step.src(0), Some(model.weights));
        let hp = step.src(4).unwrap();
        assert_eq!((hp.name(), hp.ne[0]), ("adamw_params", 7));
        assert_eq!(step.src(2).unwrap().name(), "AdamW m for weights");
        assert_eq!(step.src(3).unwrap().name(), "AdamW v for weights");
        // No accumulation with a period of 1: the weights have no accumulator, the loss does.
        assert!(opt.grad_acc(model.weights).is_none());
        let loss_acc = gb_opt.grad_acc(loss.as_ptr()).unwrap();
        assert_eq!(read_f32(loss_acc), [1.0]);
        assert!(log.borrow().allocated.is_empty());
        drop(opt);
    }

    #[test]
    fn cross_entropy_and_sgd_with_accumulation() {
        let mut model = Model::new(3);
        let (sched, _log) = fake(|_| {});
        // SAFETY: as above.
        let opt = unsafe { OptContext::new(model.args(sched, LossType::CROSS_ENTROPY, OptimizerType::SGD, 2)) };
        let (gf, _, gb_opt) = opt.graphs();
        let (gf, gb_opt) = (gf.unwrap(), gb_opt.unwrap());
        let n = names(&gf);
        let tail: Vec<&str> = n.iter().rev().take(4).map(String::as_str).collect();
        // The argmax of the labels is unnamed, so the graph names it after its position.
        assert_eq!(tail, ["ncorrect", "node_6", "pred", "loss_cross_entropy_scaled"]);
        let labels = opt.labels().unwrap();
        assert_eq!((labels.name(), labels.ne), ("labels", model.outputs.ne));
        assert!(labels.flags & flag::INPUT != 0);
        assert_eq!(opt.loss().unwrap().op_param_f32(0), 0.5);
        assert_eq!(opt.pred().unwrap().type_, Type::I32);
        assert_eq!(opt.ncorrect().unwrap().type_, Type::I64);

        let step = gb_opt.node_at(-1);
        assert_eq!((step.op, step.name()), (Op::OPT_STEP_SGD, "sgd step for weights"));
        assert_eq!(step.src(2).unwrap().ne[0], 2);
        // Gradients accumulate into a zeroed static tensor.
        let acc = opt.grad_acc(model.weights).unwrap();
        assert_eq!(read_f32(acc), [0.0]);
    }

    #[test]
    fn smaller_build_types_stop_early() {
        for (build_type, grads) in [(BuildType::FORWARD, false), (BuildType::GRAD, true)] {
            let mut model = Model::new(2);
            let (sched, log) = fake(|_| {});
            let args = InitArgs { build_type, ..model.args(sched, LossType::SUM, OptimizerType::ADAMW, 2) };
            // SAFETY: the model outlives the optimization context.
            let mut opt = unsafe { OptContext::new(args) };
            let (gf, gb_grad, gb_opt) = opt.graphs();
            assert!(gf.is_some() && gb_opt.is_none());
            assert_eq!(gb_grad.is_some(), grads);
            // The loss is static either way; forward evaluation works.
            assert!(!opt.loss().unwrap().data.is_null());
            if grads {
                // The first of two accumulated batches needs only the gradient graph (every
                // evaluation counts towards the period, so it must come first).
                opt.alloc(true);
                opt.eval(None);
            }
            opt.alloc(false);
            opt.eval(None);
            assert_eq!(log.borrow().computed.len(), 1 + usize::from(grads));
        }
    }

    #[test]
    fn mean_and_mse_losses_are_scaled() {
        for (loss_type, last, first) in [
            (LossType::MEAN, "loss_mean", "loss_sum"),
            (LossType::MEAN_SQUARED_ERROR, "loss_mean_squared_error", "loss_error"),
        ] {
            let mut model = Model::new(4);
            let (sched, _log) = fake(|_| {});
            // SAFETY: as above.
            let opt = unsafe { OptContext::new(model.args(sched, loss_type, OptimizerType::ADAMW, 2)) };
            let loss = opt.loss().unwrap();
            assert_eq!((loss.name(), loss.op), (last, Op::SCALE));
            assert_eq!(loss.op_param_f32(0), 1.0 / 8.0);
            let gf = opt.graphs().0.unwrap();
            assert!(gf.nodes().any(|n| n.name() == first));
        }
    }

    #[test]
    fn evaluation_runs_copies_and_collects_results() {
        let mut model = Model::new(1);
        let hp_seen = Rc::new(RefCell::new(Vec::new()));
        let seen = hp_seen.clone();
        let (sched, log) = fake(move |g| {
            // Stand-in for a backend: the loss is 2.5; record the optimizer's parameters.
            let loss = g.tensor_named(b"loss_sum").unwrap();
            buffer::tensor_set(loss, &2.5f32.to_ne_bytes(), 0);
            if let Some(step) = g.nodes().find(|n| n.op == Op::OPT_STEP_ADAMW) {
                seen.borrow_mut().push(read_f32(step.src(4).unwrap()));
            }
        });
        // SAFETY: as above.
        let mut opt = unsafe { OptContext::new(model.args(sched, LossType::SUM, OptimizerType::ADAMW, 1)) };
        let gb_opt = opt.graphs().2.unwrap();
        let mut result = OptResult::new();

        opt.alloc(true);
        opt.eval(Some(&mut result));
        {
            // The scheduler got a copy of the optimizer graph (valid until the next one).
            let copy = log.borrow().computed[0];
            assert_ne!(copy, gb_opt);
            assert_eq!((copy.n_nodes, copy.n_leafs), (gb_opt.n_nodes, gb_opt.n_leafs));
            assert!(copy.nodes().zip(gb_opt.nodes()).all(|(a, b)| a != b && a.name() == b.name() && a.op == b.op));
            let loss = opt.loss().unwrap();
            let loss_copy = copy.tensor_named(b"loss_sum").unwrap();
            assert_eq!((loss_copy.data, loss_copy.buffer), (loss.data, loss.buffer));
        }
        opt.alloc(true);
        opt.eval(Some(&mut result));
        opt.alloc(false);
        opt.eval(Some(&mut result));

        let log = log.borrow();
        // The same optimizer graph twice: allocated once; then the forward graph.
        assert_eq!(log.allocated.len(), 2);
        assert_eq!(log.resets, 2);
        assert_eq!(log.computed.len(), 3);

        let hp = hp_seen.borrow();
        assert_eq!(hp.len(), 2);
        let beta1h = |iter: i32| 1.0 / (1.0 - 0.9f32.powf(iter as f32));
        assert_eq!(hp[0][..5], [0.001, 0.9, 0.999, 1e-8, 0.0]);
        assert_eq!(hp[0][5], beta1h(1));
        assert_eq!(hp[1][5], beta1h(2));

        assert_eq!(result.ndata(), 3);
        assert_eq!(result.loss().0, 7.5);
        assert!(result.accuracy().0.is_nan());
        opt.reset(true);
    }

    #[test]
    fn dynamic_graphs_are_rebuilt_per_allocation() {
        let mut model = Model::new(2);
        let (sched, log) = fake(|_| {});
        let args = InitArgs {
            ctx_compute: None,
            inputs: None,
            outputs: None,
            ..model.args(sched, LossType::MEAN, OptimizerType::SGD, 1)
        };
        // SAFETY: no compute context yet; the one given below outlives the context.
        let mut opt = unsafe { OptContext::new(args) };
        assert!(!opt.static_graphs());
        assert!(opt.graphs().0.is_none());

        for backward in [true, false] {
            let gf = cgraph::new_graph_custom(&mut model.ctx_compute, DEFAULT_GRAPH_SIZE, true);
            gf.get_mut().build_forward_expand(model.outputs);
            // SAFETY: the model's compute context outlives the optimization context.
            unsafe { opt.prepare_alloc(&mut model.ctx_compute, gf, model.inputs, model.outputs) };
            opt.alloc(backward);
            let (g, gb_grad, gb_opt) = opt.graphs();
            assert_eq!(g, Some(gf));
            // Once the static tensors exist, a forward pass builds only the forward graph.
            assert_eq!((gb_grad.is_some(), gb_opt.is_some()), (backward, backward));
            let expected = if backward { gb_opt.unwrap() } else { gf };
            assert_eq!(log.borrow().allocated.last().copied(), Some(expected));
            // The loss of a dynamic graph lives in the compute context.
            assert!(opt.loss().unwrap().data.is_null());
            assert_eq!(opt.loss().unwrap().name(), "loss_mean");
            opt.eval(None);
            assert!(opt.graphs().0.is_none());
        }
    }
}
