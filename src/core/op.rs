//! Operations: `enum ggml_op`, `enum ggml_unary_op`, `enum ggml_glu_op`, and the names and
//! symbols that `ggml_op_name`, `ggml_op_symbol`, `ggml_unary_op_name` and `ggml_glu_op_name`
//! return (graph dumps and logs print them, so they are part of the observable behaviour).

/// `enum ggml_op`, as a transparent integer so that any value C passes is representable.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Op(pub i32);

impl Op {
    pub const NONE: Op = Op(0);
    pub const DUP: Op = Op(1);
    pub const ADD: Op = Op(2);
    pub const ADD_ID: Op = Op(3);
    pub const ADD1: Op = Op(4);
    pub const ACC: Op = Op(5);
    pub const SUB: Op = Op(6);
    pub const MUL: Op = Op(7);
    pub const DIV: Op = Op(8);
    pub const SQR: Op = Op(9);
    pub const SQRT: Op = Op(10);
    pub const LOG: Op = Op(11);
    pub const SIN: Op = Op(12);
    pub const COS: Op = Op(13);
    pub const SUM: Op = Op(14);
    pub const SUM_ROWS: Op = Op(15);
    pub const CUMSUM: Op = Op(16);
    pub const MEAN: Op = Op(17);
    pub const ARGMAX: Op = Op(18);
    pub const COUNT_EQUAL: Op = Op(19);
    pub const REPEAT: Op = Op(20);
    pub const REPEAT_BACK: Op = Op(21);
    pub const CONCAT: Op = Op(22);
    pub const SILU_BACK: Op = Op(23);
    pub const NORM: Op = Op(24);
    pub const RMS_NORM: Op = Op(25);
    pub const RMS_NORM_BACK: Op = Op(26);
    pub const GROUP_NORM: Op = Op(27);
    pub const L2_NORM: Op = Op(28);
    pub const MUL_MAT: Op = Op(29);
    pub const MUL_MAT_ID: Op = Op(30);
    pub const OUT_PROD: Op = Op(31);
    pub const SCALE: Op = Op(32);
    pub const SET: Op = Op(33);
    pub const CPY: Op = Op(34);
    pub const CONT: Op = Op(35);
    pub const RESHAPE: Op = Op(36);
    pub const VIEW: Op = Op(37);
    pub const PERMUTE: Op = Op(38);
    pub const TRANSPOSE: Op = Op(39);
    pub const GET_ROWS: Op = Op(40);
    pub const GET_ROWS_BACK: Op = Op(41);
    pub const SET_ROWS: Op = Op(42);
    pub const DIAG: Op = Op(43);
    pub const DIAG_MASK_INF: Op = Op(44);
    pub const DIAG_MASK_ZERO: Op = Op(45);
    pub const SOFT_MAX: Op = Op(46);
    pub const SOFT_MAX_BACK: Op = Op(47);
    pub const ROPE: Op = Op(48);
    pub const ROPE_BACK: Op = Op(49);
    pub const CLAMP: Op = Op(50);
    pub const CONV_TRANSPOSE_1D: Op = Op(51);
    pub const IM2COL: Op = Op(52);
    pub const IM2COL_BACK: Op = Op(53);
    pub const IM2COL_3D: Op = Op(54);
    pub const COL2IM_1D: Op = Op(55);
    pub const CONV_2D: Op = Op(56);
    pub const CONV_3D: Op = Op(57);
    pub const CONV_2D_DW: Op = Op(58);
    pub const CONV_TRANSPOSE_2D: Op = Op(59);
    pub const POOL_1D: Op = Op(60);
    pub const POOL_2D: Op = Op(61);
    pub const POOL_2D_BACK: Op = Op(62);
    pub const UPSCALE: Op = Op(63);
    pub const PAD: Op = Op(64);
    pub const PAD_REFLECT_1D: Op = Op(65);
    pub const ROLL: Op = Op(66);
    pub const ARANGE: Op = Op(67);
    pub const TIMESTEP_EMBEDDING: Op = Op(68);
    pub const ARGSORT: Op = Op(69);
    pub const TOP_K: Op = Op(70);
    pub const LEAKY_RELU: Op = Op(71);
    pub const TRI: Op = Op(72);
    pub const FILL: Op = Op(73);
    pub const FLASH_ATTN_EXT: Op = Op(74);
    pub const FLASH_ATTN_BACK: Op = Op(75);
    pub const SSM_CONV: Op = Op(76);
    pub const SSM_SCAN: Op = Op(77);
    pub const WIN_PART: Op = Op(78);
    pub const WIN_UNPART: Op = Op(79);
    pub const GET_REL_POS: Op = Op(80);
    pub const ADD_REL_POS: Op = Op(81);
    pub const RWKV_WKV6: Op = Op(82);
    pub const GATED_LINEAR_ATTN: Op = Op(83);
    pub const RWKV_WKV7: Op = Op(84);
    pub const SOLVE_TRI: Op = Op(85);
    pub const GATED_DELTA_NET: Op = Op(86);
    pub const LIGHTNING_INDEXER: Op = Op(87);
    pub const DSV4_HC_COMB: Op = Op(88);
    pub const DSV4_HC_PRE: Op = Op(89);
    pub const DSV4_HC_POST: Op = Op(90);
    pub const UNARY: Op = Op(91);
    pub const MAP_CUSTOM1: Op = Op(92);
    pub const MAP_CUSTOM2: Op = Op(93);
    pub const MAP_CUSTOM3: Op = Op(94);
    pub const CUSTOM: Op = Op(95);
    pub const CROSS_ENTROPY_LOSS: Op = Op(96);
    pub const CROSS_ENTROPY_LOSS_BACK: Op = Op(97);
    pub const OPT_STEP_ADAMW: Op = Op(98);
    pub const OPT_STEP_SGD: Op = Op(99);
    pub const GLU: Op = Op(100);
    pub const COUNT: i32 = 101;

    pub fn name(self) -> &'static str {
        OP_NAMES.get(self.0 as usize).copied().unwrap_or("NONE")
    }

    pub fn symbol(self) -> &'static str {
        OP_SYMBOLS.get(self.0 as usize).copied().unwrap_or("none")
    }

    /// Whether the op only views its source's memory (a reshape, view, permute or transpose):
    /// it computes nothing, and runs wherever its source lives.
    pub const fn is_view(self) -> bool {
        matches!(self, Op::VIEW | Op::RESHAPE | Op::PERMUTE | Op::TRANSPOSE)
    }

    /// `ggml_op_is_empty`: a view, or no op at all (a leaf); nothing to compute.
    pub const fn is_empty(self) -> bool {
        matches!(self, Op::NONE) || self.is_view()
    }
}

/// `enum ggml_unary_op`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct UnaryOp(pub i32);

impl UnaryOp {
    pub const ABS: UnaryOp = UnaryOp(0);
    pub const SGN: UnaryOp = UnaryOp(1);
    pub const NEG: UnaryOp = UnaryOp(2);
    pub const STEP: UnaryOp = UnaryOp(3);
    pub const TANH: UnaryOp = UnaryOp(4);
    pub const ELU: UnaryOp = UnaryOp(5);
    pub const RELU: UnaryOp = UnaryOp(6);
    pub const SIGMOID: UnaryOp = UnaryOp(7);
    pub const GELU: UnaryOp = UnaryOp(8);
    pub const GELU_QUICK: UnaryOp = UnaryOp(9);
    pub const SILU: UnaryOp = UnaryOp(10);
    pub const HARDSWISH: UnaryOp = UnaryOp(11);
    pub const HARDSIGMOID: UnaryOp = UnaryOp(12);
    pub const EXP: UnaryOp = UnaryOp(13);
    pub const EXPM1: UnaryOp = UnaryOp(14);
    pub const SOFTPLUS: UnaryOp = UnaryOp(15);
    pub const GELU_ERF: UnaryOp = UnaryOp(16);
    pub const XIELU: UnaryOp = UnaryOp(17);
    pub const FLOOR: UnaryOp = UnaryOp(18);
    pub const CEIL: UnaryOp = UnaryOp(19);
    pub const ROUND: UnaryOp = UnaryOp(20);
    pub const TRUNC: UnaryOp = UnaryOp(21);
    pub const COUNT: i32 = 22;

    pub fn name(self) -> &'static str {
        UNARY_OP_NAMES.get(self.0 as usize).copied().unwrap_or("NONE")
    }
}

/// `enum ggml_glu_op`.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct GluOp(pub i32);

impl GluOp {
    pub const REGLU: GluOp = GluOp(0);
    pub const GEGLU: GluOp = GluOp(1);
    pub const SWIGLU: GluOp = GluOp(2);
    pub const SWIGLU_OAI: GluOp = GluOp(3);
    pub const GEGLU_ERF: GluOp = GluOp(4);
    pub const GEGLU_QUICK: GluOp = GluOp(5);
    pub const SWIGLU_CLAMP: GluOp = GluOp(6);
    pub const COUNT: i32 = 7;

    pub fn name(self) -> &'static str {
        GLU_OP_NAMES.get(self.0 as usize).copied().unwrap_or("NONE")
    }
}

static OP_NAMES: [&str; 101] = [
    "NONE",
    "DUP",
    "ADD",
    "ADD_ID",
    "ADD1",
    "ACC",
    "SUB",
    "MUL",
    "DIV",
    "SQR",
    "SQRT",
    "LOG",
    "SIN",
    "COS",
    "SUM",
    "SUM_ROWS",
    "CUMSUM",
    "MEAN",
    "ARGMAX",
    "COUNT_EQUAL",
    "REPEAT",
    "REPEAT_BACK",
    "CONCAT",
    "SILU_BACK",
    "NORM",
    "RMS_NORM",
    "RMS_NORM_BACK",
    "GROUP_NORM",
    "L2_NORM",
    "MUL_MAT",
    "MUL_MAT_ID",
    "OUT_PROD",
    "SCALE",
    "SET",
    "CPY",
    "CONT",
    "RESHAPE",
    "VIEW",
    "PERMUTE",
    "TRANSPOSE",
    "GET_ROWS",
    "GET_ROWS_BACK",
    "SET_ROWS",
    "DIAG",
    "DIAG_MASK_INF",
    "DIAG_MASK_ZERO",
    "SOFT_MAX",
    "SOFT_MAX_BACK",
    "ROPE",
    "ROPE_BACK",
    "CLAMP",
    "CONV_TRANSPOSE_1D",
    "IM2COL",
    "IM2COL_BACK",
    "IM2COL_3D",
    "COL2IM_1D",
    "CONV_2D",
    "CONV_3D",
    "CONV_2D_DW",
    "CONV_TRANSPOSE_2D",
    "POOL_1D",
    "POOL_2D",
    "POOL_2D_BACK",
    "UPSCALE",
    "PAD",
    "PAD_REFLECT_1D",
    "ROLL",
    "ARANGE",
    "TIMESTEP_EMBEDDING",
    "ARGSORT",
    "TOP_K",
    "LEAKY_RELU",
    "TRI",
    "FILL",
    "FLASH_ATTN_EXT",
    "FLASH_ATTN_BACK",
    "SSM_CONV",
    "SSM_SCAN",
    "WIN_PART",
    "WIN_UNPART",
    "GET_REL_POS",
    "ADD_REL_POS",
    "RWKV_WKV6",
    "GATED_LINEAR_ATTN",
    "RWKV_WKV7",
    "SOLVE_TRI",
    "GATED_DELTA_NET",
    "LIGHTNING_INDEXER",
    "DSV4_HC_COMB",
    "DSV4_HC_PRE",
    "DSV4_HC_POST",
    "UNARY",
    "MAP_CUSTOM1",
    "MAP_CUSTOM2",
    "MAP_CUSTOM3",
    "CUSTOM",
    "CROSS_ENTROPY_LOSS",
    "CROSS_ENTROPY_LOSS_BACK",
    "OPT_STEP_ADAMW",
    "OPT_STEP_SGD",
    "GLU",
];

static OP_SYMBOLS: [&str; 101] = [
    "none",
    "x",
    "x+y",
    "x[i]+y",
    "x+y",
    "view(x,nb,offset)+=y->x",
    "x-y",
    "x*y",
    "x/y",
    "x^2",
    "√x",
    "log(x)",
    "sin(x)",
    "cos(x)",
    "Σx",
    "Σx_k",
    "cumsum(x)",
    "Σx/n",
    "argmax(x)",
    "count_equal(x)",
    "repeat(x)",
    "repeat_back(x)",
    "concat(x, y)",
    "silu_back(x)",
    "norm(x)",
    "rms_norm(x)",
    "rms_norm_back(x)",
    "group_norm(x)",
    "l2_norm(x)",
    "X*Y",
    "X[i]*Y",
    "X*Y",
    "x*v",
    "y-\\>view(x)",
    "x-\\>y",
    "cont(x)",
    "reshape(x)",
    "view(x)",
    "permute(x)",
    "transpose(x)",
    "get_rows(x)",
    "get_rows_back(x)",
    "set_rows(x)",
    "diag(x)",
    "diag_mask_inf(x)",
    "diag_mask_zero(x)",
    "soft_max(x)",
    "soft_max_back(x)",
    "rope(x)",
    "rope_back(x)",
    "clamp(x)",
    "conv_transpose_1d(x)",
    "im2col(x)",
    "im2col_back(x)",
    "im2col_3d(x)",
    "col2im_1d(x)",
    "conv_2d(x)",
    "conv_3d(x)",
    "conv_2d_dw(x)",
    "conv_transpose_2d(x)",
    "pool_1d(x)",
    "pool_2d(x)",
    "pool_2d_back(x)",
    "upscale(x)",
    "pad(x)",
    "pad_reflect_1d(x)",
    "roll(x)",
    "arange(start, stop, step)",
    "timestep_embedding(timesteps, dim, max_period)",
    "argsort(x)",
    "top_k(x)",
    "leaky_relu(x)",
    "tri(x)",
    "fill(x, c)",
    "flash_attn_ext(x)",
    "flash_attn_back(x)",
    "ssm_conv(x)",
    "ssm_scan(x)",
    "win_part(x)",
    "win_unpart(x)",
    "get_rel_pos(x)",
    "add_rel_pos(x)",
    "rwkv_wkv6(k, v, r, tf, td, s)",
    "gated_linear_attn(k, v, q, gate, s)",
    "rwkv_wkv7(r, w, k, v, a, b, s)",
    "A X = B, A triangular, solve X",
    "gated_delta_net(q, k, v, g, beta, s)",
    "lightning_indexer(q, k, weights, mask)",
    "dsv4_hc_comb(mixes, scale, base)",
    "dsv4_hc_pre(x, weights)",
    "dsv4_hc_post(x, residual, post, comb)",
    "unary(x)",
    "map_custom(x)",
    "map_custom(x,y)",
    "map_custom(x,y,z)",
    "custom(x)",
    "cross_entropy_loss(x,y)",
    "cross_entropy_loss_back(x,y)",
    "adamw(x)",
    "sgd(x)",
    "glu(x)",
];

static UNARY_OP_NAMES: [&str; 22] = [
    "ABS",
    "SGN",
    "NEG",
    "STEP",
    "TANH",
    "ELU",
    "RELU",
    "SIGMOID",
    "GELU",
    "GELU_QUICK",
    "SILU",
    "HARDSWISH",
    "HARDSIGMOID",
    "EXP",
    "EXPM1",
    "SOFTPLUS",
    "GELU_ERF",
    "XIELU",
    "FLOOR",
    "CEIL",
    "ROUND",
    "TRUNC",
];

static GLU_OP_NAMES: [&str; 7] = ["REGLU", "GEGLU", "SWIGLU", "SWIGLU_OAI", "GEGLU_ERF", "GEGLU_QUICK", "SWIGLU_CLAMP"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_line_up_with_values() {
        assert_eq!(Op::MUL_MAT.name(), "MUL_MAT");
        assert_eq!(Op::GLU.name(), "GLU");
        assert_eq!(Op::ADD.symbol(), "x+y");
        assert_eq!(UnaryOp::TRUNC.name(), "TRUNC");
        assert_eq!(GluOp::SWIGLU_CLAMP.name(), "SWIGLU_CLAMP");
    }
}
