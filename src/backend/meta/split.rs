//! Split states of meta tensors: the user's callback decides them for statically allocated
//! tensors; every other tensor derives its own from its op and its sources' states, so that
//! each device can compute its slice from its slices of the sources alone. Where that is not
//! possible (say, a reduction over a split dimension) the op is rejected.
//!
//! States are cached per meta buffer, keyed by tensor and validated against a snapshot of the
//! tensor's fields: a tensor struct reused for something else drops the whole cache.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;

use super::{MAX_SEGMENTS, SplitAxis, SplitState};
use crate::backend::interface::{Buffer, BufferUsage};
use crate::core::op::Op;
use crate::core::tensor::{MAX_DIMS, MAX_SRC, Tensor, TensorPtr};
use crate::core::types::Type;

/// The fields of a tensor that its split state depends on (all of them but the padding).
#[derive(Clone, Copy, PartialEq)]
pub struct Snapshot {
    type_: Type,
    buffer: *mut c_void,
    ne: [i64; MAX_DIMS],
    nb: [usize; MAX_DIMS],
    op: Op,
    op_params: [i32; 16],
    flags: i32,
    src: [*mut Tensor; MAX_SRC],
    view_src: *mut Tensor,
    view_offs: usize,
    data: *mut c_void,
    name: [std::ffi::c_char; 64],
    extra: *mut c_void,
}

impl Snapshot {
    fn of(t: &Tensor) -> Snapshot {
        Snapshot {
            type_: t.type_,
            buffer: t.buffer,
            ne: t.ne,
            nb: t.nb,
            op: t.op,
            op_params: t.op_params,
            flags: t.flags,
            src: t.src,
            view_src: t.view_src,
            view_offs: t.view_offs,
            data: t.data,
            name: t.name,
            extra: t.extra,
        }
    }
}

/// A meta buffer's cache: (tensor address, assume_sync) to the state and the tensor it was
/// derived for.
pub type SplitCache = RefCell<HashMap<(usize, bool), (SplitState, Snapshot)>>;

/// What a tensor's split state is found from: its meta buffer's cache, device count, log
/// setting and user rule, and the states of its sources (in whichever meta buffers they are).
pub struct Lookup<'a> {
    pub cache: &'a SplitCache,
    pub n: usize,
    pub debug: bool,
    /// The user's state for a statically allocated tensor.
    pub user: &'a dyn Fn(TensorPtr) -> SplitState,
    /// A source's state, partial sums taken as reduced.
    pub source: &'a dyn Fn(TensorPtr) -> SplitState,
}

/// The split state of a tensor in a meta buffer.
///
/// `assume_sync` says whether partial sums may be taken as already reduced: sources are
/// always looked at that way (the meta backend reduces before a partial result is used),
/// while reads and writes of the tensor itself see it as it is.
pub fn split_state(tensor: TensorPtr, assume_sync: bool, l: &Lookup) -> SplitState {
    let key = (tensor.as_ptr() as usize, assume_sync);
    let snapshot = Snapshot::of(&tensor);
    {
        let mut cache = l.cache.borrow_mut();
        match cache.get(&key) {
            Some((state, seen)) if *seen == snapshot => return *state,
            Some(_) => cache.clear(),
            None => {}
        }
    }

    let n = l.n;
    let state = derive(tensor, assume_sync, l);
    crate::ggml_assert!(state.axis != SplitAxis::NONE, "no split state derived for {}", tensor.name());
    if l.debug {
        log_state(tensor, &state, l);
    }
    l.cache.borrow_mut().insert(key, (state, snapshot));
    debug_assert!(state.split_dim().is_none_or(|d| state.total_extent(n) == tensor.ne[d]));
    state
}

fn shares(state: &SplitState, n: usize) -> String {
    (0..n).map(|j| format!("{}x{}", state.ne[j], state.nr[0])).collect::<Vec<_>>().join(", ")
}

fn log_state(tensor: TensorPtr, state: &SplitState, l: &Lookup) {
    let n = l.n;
    let srcs: Vec<String> = (0..MAX_SRC)
        .filter_map(|i| tensor.src(i).filter(|s| *s != tensor))
        .map(|s| {
            let ss = (l.source)(s);
            format!("{}[{}, {}, {{{}}}]", s.name(), s.op.name(), ss.axis.label(), shares(&ss, n))
        })
        .collect();
    crate::log_debug!(
        "SPLIT_STATE: {{{}}} -> {}[{}, {}, {{{}}}]\n",
        srcs.join(", "),
        tensor.name(),
        tensor.op.name(),
        state.axis.label(),
        shares(state, n)
    );
}

fn simple(axis: SplitAxis) -> SplitState {
    SplitState::new(axis)
}

/// The state the user's callback gives a statically allocated tensor, checked for sense.
fn user_state(tensor: TensorPtr, l: &Lookup) -> SplitState {
    let n = l.n;
    let state = (l.user)(tensor);
    crate::ggml_assert!(
        state.n_segments as usize <= MAX_SEGMENTS,
        "split state of {} has too many segments",
        tensor.name()
    );
    if let Some(d) = state.split_dim() {
        let granularity = if d == 0 { tensor.type_.blck_size() } else { 1 };
        for s in 0..state.n_segments as usize {
            for j in 0..n {
                crate::ggml_assert!(
                    state.piece(s, j, n) % granularity == 0,
                    "split of {} is not a whole number of blocks",
                    tensor.name()
                );
            }
        }
        crate::ggml_assert!(
            state.total_extent(n) == tensor.ne[d],
            "split of {} does not add up to its extent {}",
            tensor.name(),
            tensor.ne[d]
        );
    } else if state.axis == SplitAxis::PARTIAL {
        crate::ggml_assert!(state.is_simple(), "partial tensor {} has segments", tensor.name());
    }
    state
}

/// Derives a tensor's state (uncached).
fn derive(tensor: TensorPtr, assume_sync: bool, l: &Lookup) -> SplitState {
    let n = l.n;
    if tensor.nelements() == 0 {
        return simple(SplitAxis::UNKNOWN);
    }
    let buffer: *mut Buffer = tensor.buffer.cast();
    // SAFETY: a meta tensor's buffer is a live buffer.
    let usage = unsafe { (*buffer).usage };
    if usage != BufferUsage::COMPUTE && tensor.view_src.is_null() {
        return user_state(tensor, l);
    }

    let mut src_ss = [simple(SplitAxis::UNKNOWN); MAX_SRC];
    for (i, ss) in src_ss.iter_mut().enumerate() {
        let Some(src) = tensor.src(i).filter(|s| *s != tensor) else { continue };
        *ss = (l.source)(src);
        crate::ggml_assert!(
            ss.axis != SplitAxis::UNKNOWN,
            "source {} of {} has no split state",
            src.name(),
            tensor.name()
        );
    }
    let r = Rules { t: tensor, ss: &src_ss, n, assume_sync };
    let mut state = r.by_op();
    if state.split_dim().is_some() {
        r.take_over_shares(&mut state);
    }
    state
}

/// The propagation rules, for one tensor and its sources' states.
struct Rules<'a> {
    t: TensorPtr,
    ss: &'a [SplitState; MAX_SRC],
    n: usize,
    assume_sync: bool,
}

impl Rules<'_> {
    fn src(&self, i: usize) -> TensorPtr {
        match self.t.src(i) {
            Some(s) => s,
            None => crate::ggml_abort!("{} ({}) lacks source {}", self.t.name(), self.t.op.name(), i),
        }
    }

    fn axis(&self, i: usize) -> SplitAxis {
        self.ss[i].axis
    }

    fn by_op(&self) -> SplitState {
        match self.t.op {
            Op::NONE => simple(SplitAxis::MIRRORED),
            Op::ADD | Op::ADD_ID | Op::SUB | Op::MUL | Op::DIV => self.bin_bcast(),
            Op::DUP
            | Op::ADD1
            | Op::ACC
            | Op::SUM
            | Op::OUT_PROD
            | Op::SET
            | Op::GET_ROWS_BACK
            | Op::DIAG
            | Op::DIAG_MASK_INF
            | Op::DIAG_MASK_ZERO
            | Op::CONV_TRANSPOSE_1D
            | Op::IM2COL
            | Op::IM2COL_BACK
            | Op::IM2COL_3D
            | Op::CONV_2D
            | Op::CONV_3D
            | Op::CONV_2D_DW
            | Op::CONV_TRANSPOSE_2D
            | Op::POOL_1D
            | Op::POOL_2D
            | Op::POOL_2D_BACK
            | Op::UPSCALE
            | Op::PAD_REFLECT_1D
            | Op::ROLL
            | Op::ARANGE
            | Op::TIMESTEP_EMBEDDING
            | Op::TRI
            | Op::FLASH_ATTN_BACK
            | Op::SSM_SCAN
            | Op::WIN_PART
            | Op::WIN_UNPART
            | Op::GET_REL_POS
            | Op::ADD_REL_POS
            | Op::RWKV_WKV6
            | Op::GATED_LINEAR_ATTN
            | Op::RWKV_WKV7
            | Op::SOLVE_TRI
            | Op::DSV4_HC_COMB
            | Op::DSV4_HC_PRE
            | Op::DSV4_HC_POST
            | Op::MAP_CUSTOM1
            | Op::MAP_CUSTOM2
            | Op::MAP_CUSTOM3
            | Op::CUSTOM => self.generic(true),
            Op::SQR
            | Op::SQRT
            | Op::LOG
            | Op::SIN
            | Op::COS
            | Op::REPEAT
            | Op::REPEAT_BACK
            | Op::SILU_BACK
            | Op::SCALE
            | Op::SOFT_MAX
            | Op::SOFT_MAX_BACK
            | Op::CLAMP
            | Op::LEAKY_RELU
            | Op::FILL
            | Op::UNARY
            | Op::OPT_STEP_ADAMW
            | Op::OPT_STEP_SGD
            | Op::GLU => self.generic(false),
            Op::SUM_ROWS
            | Op::CUMSUM
            | Op::MEAN
            | Op::ARGMAX
            | Op::COUNT_EQUAL
            | Op::NORM
            | Op::RMS_NORM
            | Op::RMS_NORM_BACK
            | Op::GROUP_NORM
            | Op::L2_NORM
            | Op::ARGSORT
            | Op::TOP_K
            | Op::CROSS_ENTROPY_LOSS
            | Op::CROSS_ENTROPY_LOSS_BACK => self.per_row(),
            Op::CONCAT => self.concat(),
            Op::MUL_MAT | Op::MUL_MAT_ID => self.mul_mat(),
            Op::CPY => self.cpy(),
            Op::CONT | Op::RESHAPE => self.reshape(),
            Op::VIEW => self.view(),
            Op::PERMUTE => self.permute(),
            Op::TRANSPOSE => self.transpose(),
            Op::GET_ROWS => self.get_rows(),
            Op::SET_ROWS => self.set_rows(),
            Op::ROPE | Op::ROPE_BACK => self.rope(),
            Op::PAD => self.pad(),
            Op::FLASH_ATTN_EXT => self.flash_attn_ext(),
            Op::SSM_CONV => self.ssm_conv(),
            Op::GATED_DELTA_NET => self.gated_delta_net(),
            Op::LIGHTNING_INDEXER => self.lightning_indexer(),
            op => crate::ggml_abort!("ggml op not implemented by the meta backend: {}", op.name()),
        }
    }

    /// All sources must agree; `scalar_only` ops cannot work on slices along a dimension.
    fn generic(&self, scalar_only: bool) -> SplitState {
        let mut ret = simple(SplitAxis::NONE);
        for i in 0..MAX_SRC {
            if self.t.src(i).is_none_or(|s| s == self.t) {
                continue;
            }
            if ret.axis == SplitAxis::NONE {
                ret = self.ss[i];
            } else if !self.ss[i].same_shares(&ret, self.n) {
                ret = simple(SplitAxis::UNKNOWN);
                break;
            }
        }
        if ret.axis == SplitAxis::NONE || (scalar_only && ret.split_dim().is_some()) {
            ret = simple(SplitAxis::UNKNOWN);
        }
        crate::ggml_assert!(
            ret.axis != SplitAxis::UNKNOWN,
            "meta backend cannot split {} ({})",
            self.t.name(),
            self.t.op.name()
        );
        ret
    }

    /// Ops that work row by row: fine unless the rows themselves are cut.
    fn per_row(&self) -> SplitState {
        crate::ggml_assert!(self.axis(0) != SplitAxis::AXIS_0, "{} reduces over a split row", self.t.name());
        self.ss[0]
    }

    /// Binary ops that broadcast `src1` over `src0`.
    fn bin_bcast(&self) -> SplitState {
        if let Some(d) = self.ss[0].split_dim()
            && self.src(1).ne[d] == 1
            && self.axis(1) == SplitAxis::MIRRORED
        {
            return self.ss[0];
        }
        // ADD_ID: the expert ids are the same everywhere.
        if self.axis(2) == SplitAxis::MIRRORED
            && (self.axis(0) == self.axis(1)
                || (self.axis(0) == SplitAxis::MIRRORED && self.axis(1) == SplitAxis::PARTIAL))
        {
            return self.ss[0];
        }
        crate::ggml_assert!(self.t.src(2).is_none() || self.axis(2) == SplitAxis::MIRRORED);
        self.generic(false)
    }

    fn concat(&self) -> SplitState {
        let along = SplitAxis(self.t.op_param_i32(0));
        for (a, b) in [(0, 1), (1, 0)] {
            if self.axis(a) == SplitAxis::MIRRORED && self.ss[b].split_dim().is_some() {
                crate::ggml_assert!(along != self.axis(b), "concatenation along the split axis");
                return self.ss[b];
            }
        }
        if self.axis(0) == self.axis(1) && self.axis(0) != along {
            return self.ss[0];
        }
        self.generic(true)
    }

    fn mul_mat(&self) -> SplitState {
        let (a0, a1) = (self.axis(0), self.axis(1));
        const M: SplitAxis = SplitAxis::MIRRORED;
        if a0 == M && a1 == M {
            return simple(M);
        }
        // Weight rows split: each device computes its part of the output rows.
        if a0 == SplitAxis::AXIS_1 && a1 == M {
            let mut ret = self.ss[0];
            ret.axis = SplitAxis::AXIS_0;
            ret.nr[0] = 1;
            ret.n_segments = 1;
            return ret;
        }
        if a1 == SplitAxis::AXIS_1 && a0 == M {
            return self.ss[1];
        }
        // The shared dimension split: each device holds a partial sum of the full output.
        if a0 == SplitAxis::AXIS_0 && a1 == SplitAxis::AXIS_0 {
            crate::ggml_assert!(self.ss[0].same_shares(&self.ss[1], self.n), "mul_mat sources split differently");
            return simple(if self.assume_sync { M } else { SplitAxis::PARTIAL });
        }
        if a0 == a1 && matches!(a0, SplitAxis::AXIS_2 | SplitAxis::AXIS_3) {
            crate::ggml_assert!(self.ss[0].same_shares(&self.ss[1], self.n), "mul_mat sources split differently");
            return self.ss[0];
        }
        // Batches split across devices with a replicated activation.
        if matches!(a0, SplitAxis::AXIS_2 | SplitAxis::AXIS_3) && a1 == M {
            return self.ss[0];
        }
        crate::ggml_abort!(
            "unsupported mul_mat split states: node={} src0={} axis={} src1={} axis={}",
            self.t.name(),
            self.src(0).name(),
            a0.0,
            self.src(1).name(),
            a1.0
        )
    }

    /// Reinterpreting the shape: the split moves to the output dimension where the elements
    /// up to and including the source's split dimension end.
    fn reshape(&self) -> SplitState {
        let ss = &self.ss[0];
        let Some(axis) = ss.split_dim() else {
            return match ss.axis {
                SplitAxis::MIRRORED | SplitAxis::PARTIAL => *ss,
                a => crate::ggml_abort!("cannot reshape {} with split axis {}", self.t.name(), a.label()),
            };
        };
        let src = self.src(0);
        let mut base_in: i64 = src.ne[..=axis].iter().product();
        if ss.n_segments == 1 {
            base_in /= i64::from(ss.nr[0]);
            if axis as i32 == src.n_dims() - 1 && ss.nr[0] == 1 {
                return simple(SplitAxis::dim((self.t.n_dims() - 1) as usize));
            }
            if axis == 0 && self.t.ne[0] == src.ne[0] && self.t.ne[1] == 1 && ss.nr[0] == 1 {
                let whole_rows = (0..self.n).all(|j| ss.ne[j] == 0 || ss.ne[j] == src.ne[0]);
                if whole_rows {
                    // Whole rows per device: the split moves to the next, singleton dimension.
                    return simple(SplitAxis::AXIS_1);
                }
            }
        }
        // The output has one segment; the shares are merged from the source's segments.
        let mut base_out: i64 = 1;
        for d in 0..MAX_DIMS {
            base_out *= self.t.ne[d];
            if base_out % base_in == 0 {
                return SplitState::repeated(SplitAxis::dim(d), (base_out / base_in) as u32);
            }
            if base_out > base_in {
                crate::ggml_assert!(ss.is_simple(), "cannot reshape segmented {}", self.t.name());
                return simple(SplitAxis::dim(d));
            }
        }
        crate::ggml_abort!("shape mismatch for {}", self.t.op.name())
    }

    fn cpy(&self) -> SplitState {
        if self.ss[0].split_dim().is_some() { self.reshape() } else { self.generic(false) }
    }

    fn view(&self) -> SplitState {
        let (t, src) = (self.t, self.src(0));
        if t.is_contiguous() && src.is_contiguous() {
            return self.reshape();
        }
        let same_strides = (0..MAX_DIMS).all(|d| (t.ne[d] == 1 && src.ne[d] == 1) || t.nb[d] == src.nb[d]);
        if same_strides {
            return self.ss[0];
        }
        if let Some(axis) = self.ss[0].split_dim().filter(|&a| a < MAX_DIMS - 1)
            && !t.is_permuted()
            && !src.is_permuted()
        {
            for d in 0..MAX_DIMS - 1 {
                if t.nb[d + 1] == src.nb[axis + 1] {
                    return simple(SplitAxis::dim(d));
                }
            }
            crate::ggml_abort!("cannot place the split of view {}", t.name());
        }
        match self.axis(0) {
            SplitAxis::MIRRORED | SplitAxis::PARTIAL => self.ss[0],
            _ => crate::ggml_abort!("view of permuted tensor not implemented"),
        }
    }

    fn permute(&self) -> SplitState {
        let ss = &self.ss[0];
        match ss.split_dim() {
            Some(axis) => {
                crate::ggml_assert!(ss.n_segments == 1 || ss.nr[0] == 1);
                let to = self.t.op_param_i32(axis);
                crate::ggml_assert!((0..MAX_DIMS as i32).contains(&to), "bad permutation of {}", self.t.name());
                SplitState::repeated(SplitAxis::dim(to as usize), ss.nr[0])
            }
            None => self.pass_unsplit(),
        }
    }

    fn transpose(&self) -> SplitState {
        let ss = &self.ss[0];
        match ss.split_dim() {
            Some(axis @ (0 | 1)) => {
                crate::ggml_assert!(ss.n_segments == 1 || ss.nr[0] == 1);
                SplitState::repeated(SplitAxis::dim(axis ^ 1), ss.nr[0])
            }
            Some(_) => *ss,
            None => self.pass_unsplit(),
        }
    }

    fn pass_unsplit(&self) -> SplitState {
        match self.axis(0) {
            SplitAxis::MIRRORED | SplitAxis::PARTIAL => self.ss[0],
            a => crate::ggml_abort!("{} has source split axis {}", self.t.name(), a.label()),
        }
    }

    fn get_rows(&self) -> SplitState {
        if self.axis(0) == SplitAxis::AXIS_0 && self.axis(1) == SplitAxis::MIRRORED {
            return self.ss[0];
        }
        self.generic(true)
    }

    fn set_rows(&self) -> SplitState {
        crate::ggml_assert!(self.axis(0) != SplitAxis::AXIS_1, "set_rows into rows split across devices");
        crate::ggml_assert!(self.axis(1) == SplitAxis::MIRRORED, "set_rows with split values");
        crate::ggml_assert!(self.ss[0].same_shares(&self.ss[2], self.n), "set_rows with split indices");
        self.ss[0]
    }

    fn rope(&self) -> SplitState {
        crate::ggml_assert!(self.axis(1) == SplitAxis::MIRRORED, "rope positions must be mirrored");
        self.ss[0]
    }

    fn pad(&self) -> SplitState {
        if let Some(d) = self.ss[0].split_dim() {
            crate::ggml_assert!(
                self.t.op_param_i32(2 * d) == 0 && self.t.op_param_i32(2 * d + 1) == 0,
                "padding along the split axis"
            );
        }
        self.ss[0]
    }

    fn flash_attn_ext(&self) -> SplitState {
        const M: SplitAxis = SplitAxis::MIRRORED;
        let has = |i: usize| self.t.src(i).is_some();
        crate::ggml_assert!(!has(3) || self.axis(3) == M, "attention mask must be mirrored");
        if self.axis(0) == M {
            crate::ggml_assert!(self.axis(1) == M && self.axis(2) == M);
            crate::ggml_assert!(!has(4) || self.axis(4) == M);
            return simple(M);
        }
        crate::ggml_assert!(self.axis(0) == SplitAxis::AXIS_2, "attention queries must be split by head");
        let kv_split = self.axis(1) == SplitAxis::AXIS_2 && self.axis(2) == SplitAxis::AXIS_2;
        let kv_mirrored = self.axis(1) == M && self.axis(2) == M;
        crate::ggml_assert!(kv_split || kv_mirrored, "attention keys and values split differently");
        crate::ggml_assert!(!has(4) || self.axis(4) == SplitAxis::AXIS_0);
        simple(SplitAxis::AXIS_1)
    }

    fn lightning_indexer(&self) -> SplitState {
        for i in 0..4 {
            crate::ggml_assert!(self.axis(i) == SplitAxis::MIRRORED, "lightning indexer sources must be mirrored");
        }
        simple(SplitAxis::MIRRORED)
    }

    fn ssm_conv(&self) -> SplitState {
        if self.axis(0) == self.axis(1) {
            match self.axis(0) {
                SplitAxis::AXIS_0 => return simple(SplitAxis::AXIS_1),
                SplitAxis::AXIS_1 => return simple(SplitAxis::AXIS_0),
                _ => {}
            }
        }
        self.generic(false)
    }

    fn gated_delta_net(&self) -> SplitState {
        if (0..6).all(|i| self.axis(i) == SplitAxis::MIRRORED) {
            return self.ss[0];
        }
        for i in 0..5 {
            crate::ggml_assert!(self.axis(i) == SplitAxis::AXIS_1, "gated delta net sources must be split by head");
        }
        // The state is [S_v, S_v, H_v, n_seqs]: a split by head may land on any of its first
        // three axes depending on how the cache was viewed.
        crate::ggml_assert!(matches!(self.axis(5), SplitAxis::AXIS_0 | SplitAxis::AXIS_1 | SplitAxis::AXIS_2));
        simple(SplitAxis::AXIS_0)
    }

    /// Fills in the per-device shares of a split result: proportional to those of the first
    /// split source, which every other split source must agree with.
    fn take_over_shares(&self, state: &mut SplitState) {
        let (t, n) = (self.t, self.n);
        let Some(d) = state.split_dim() else { return };
        let mut first = true;
        for i in 0..MAX_SRC {
            let Some(src) = t.src(i) else { continue };
            let Some(sd) = self.ss[i].split_dim() else { continue };
            let ss = &self.ss[i];
            if first {
                for j in 0..n {
                    for s in 0..ss.n_segments as usize {
                        state.ne[s * n + j] = 0;
                    }
                    state.ne[j] = ss.device_extent(j, n) * t.ne[d];
                    if state.ne[j] != 0 || src.ne[sd] != 0 {
                        let div = src.ne[sd] * i64::from(state.nr[0]);
                        crate::ggml_assert!(div != 0 && state.ne[j] % div == 0, "uneven split of {}", t.name());
                        state.ne[j] /= div;
                    }
                }
                first = false;
            } else {
                crate::ggml_assert!(state.n_segments == 1, "segmented result {} with several split sources", t.name());
                for j in 0..n {
                    crate::ggml_assert!(
                        state.ne[j] * i64::from(state.nr[0]) * src.ne[sd] == ss.device_extent(j, n) * t.ne[d],
                        "sources of {} are split in different ratios",
                        t.name()
                    );
                }
            }
        }
        crate::ggml_assert!(!first, "{} is split but none of its sources is", t.name());
    }
}
