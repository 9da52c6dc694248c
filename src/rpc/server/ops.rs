//! The ops a graph may compute, and what each needs before a kernel may run it.
//!
//! A kernel trusts its node: the shapes the op's constructor gives its result and sources,
//! the op parameters it stores, and the values of index tensors. A client can send any of
//! them, so each op served here is checked for exactly what its constructor asserts and what
//! the kernels rely on (and abort on, where ggml's CPU kernels assert). Ops that are not
//! listed are refused, among them the custom ops, whose parameters are function pointers.
//! Types and layouts are left to the backend's `supports_op`, which the caller asks next.
//!
//! Row indices cannot be checked here: they are data, possibly computed by the graph itself.
//! An op that reads them reports which source holds them and the bound they must stay below;
//! the caller reads them right before the node runs.

use crate::core::op::{GluOp, Op, UnaryOp};
use crate::core::ops::rope::rope_type;
use crate::core::tensor::{MAX_DIMS, Tensor, TensorPtr};
use crate::core::types::Type;

use super::tensor::elements_distinct;

/// A source whose values are row (or expert) indices, which must lie in `0..bound`.
pub(super) struct IndexUse {
    pub slot: usize,
    pub bound: i64,
}

type Verdict = Result<Option<IndexUse>, String>;

/// The most index values one node may use (a check reads them all before each run).
const MAX_INDICES: i64 = 1 << 26;
/// Head sizes and head counts of attention, and rotated row lengths, up to which the
/// backends' scratch sizes (products of several of them) stay small.
const MAX_HEAD: i64 = 1 << 16;
const MAX_HEADS: i64 = 1 << 20;
const MAX_ROPE_ROW: i64 = 1 << 20;
/// Expert routes (experts x slots x tokens) of MUL_MAT_ID, each a scratch entry.
const MAX_ROUTES: i64 = 1 << 32;

macro_rules! need {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Ops whose parameters are function pointers into the client.
pub(super) fn is_custom(op: Op) -> bool {
    matches!(op, Op::CUSTOM | Op::MAP_CUSTOM1 | Op::MAP_CUSTOM2 | Op::MAP_CUSTOM3)
}

/// Checks a computing node; `Some` names the index source to read before it runs.
pub(super) fn check(node: TensorPtr) -> Verdict {
    match node.op {
        Op::DUP | Op::CONT | Op::CPY => copy(node),
        Op::ADD | Op::SUB | Op::MUL | Op::DIV => broadcast(node),
        Op::ADD_ID => add_id(node),
        Op::ACC | Op::SET => window(node),
        Op::SCALE | Op::CLAMP | Op::LEAKY_RELU | Op::SQR | Op::SQRT | Op::LOG | Op::SIN | Op::COS | Op::UNARY => {
            elementwise(node)
        }
        Op::GLU => glu(node),
        Op::NORM | Op::RMS_NORM | Op::L2_NORM => norm(node),
        Op::MUL_MAT => mul_mat(node),
        Op::MUL_MAT_ID => mul_mat_id(node),
        Op::GET_ROWS => get_rows(node),
        Op::GET_ROWS_BACK => get_rows_back(node),
        Op::SET_ROWS => set_rows(node),
        Op::SOFT_MAX => soft_max(node),
        Op::ROPE => rope(node),
        Op::FLASH_ATTN_EXT => flash_attn_ext(node),
        Op::ARGSORT | Op::TOP_K => sort(node),
        Op::SUM | Op::SUM_ROWS | Op::MEAN => reduce(node),
        Op::REPEAT => repeat(node),
        Op::CONCAT => concat(node),
        Op::CUMSUM | Op::DIAG_MASK_INF | Op::DIAG_MASK_ZERO => same_shape(node),
        Op::ARGMAX => argmax(node),
        Op::PAD => pad(node),
        Op::IM2COL => im2col(node),
        op => Err(format!("op {} is not served", op.name())),
    }
}

fn src(node: TensorPtr, i: usize) -> Result<TensorPtr, String> {
    node.src(i).ok_or_else(|| format!("{} needs source {}", node.op.name(), i))
}

fn packed(t: &Tensor) -> bool {
    t.nb[0] == t.type_.type_size()
}

/// `big`'s extents are whole multiples of `small`'s (which has no empty dimension), so that
/// `small` repeats over `big`.
fn tiles(small: &Tensor, big: &Tensor) -> bool {
    (0..MAX_DIMS).all(|d| small.ne[d] >= 1 && big.ne[d] % small.ne[d] == 0)
}

fn copy(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!(
        a.nelements() == node.nelements(),
        "{}: {} elements into {}",
        node.op.name(),
        a.nelements(),
        node.nelements()
    );
    if node.op == Op::CPY {
        let b = src(node, 1)?;
        need!(b.ne == node.ne, "CPY: result {:?} is not the destination {:?}", node.ne, b.ne);
    }
    Ok(None)
}

fn broadcast(node: TensorPtr) -> Verdict {
    let (a, b) = (src(node, 0)?, src(node, 1)?);
    need!(tiles(&b, &a), "{}: {:?} does not repeat to {:?}", node.op.name(), b.ne, a.ne);
    need!(node.ne == a.ne, "{}: result {:?} is not shaped as {:?}", node.op.name(), node.ne, a.ne);
    Ok(None)
}

fn add_id(node: TensorPtr) -> Verdict {
    let (a, b, ids) = (src(node, 0)?, src(node, 1)?, src(node, 2)?);
    need!(a.ne[0] == b.ne[0], "ADD_ID: rows of {} and {}", a.ne[0], b.ne[0]);
    need!(ids.ne[0] == a.ne[1] && ids.ne[1] == a.ne[2], "ADD_ID: ids {:?} for rows {:?}", ids.ne, a.ne);
    need!(node.ne == a.ne, "ADD_ID: result {:?} is not shaped as {:?}", node.ne, a.ne);
    indices(&ids, &[Type::I32], 2, b.ne[1])
}

/// ACC and SET: `src[1]` goes into the window of the result that op_params[0..4] describe
/// (strides of dimensions 1 to 3 and a byte offset, as unsigned 32-bit numbers); every byte
/// of it must lie inside both the result and `src[0]`, which is copied into the result first.
fn window(node: TensorPtr) -> Verdict {
    let (a, b) = (src(node, 0)?, src(node, 1)?);
    need!(node.ne == a.ne, "{}: result {:?} is not shaped as {:?}", node.op.name(), node.ne, a.ne);
    // the CPU kernel of SET copies whole source rows (it asserts so, even for an empty source)
    need!(
        node.op != Op::SET || b.nb[0] == b.type_.type_size(),
        "SET: source rows with elements {} bytes apart",
        b.nb[0]
    );
    if b.is_empty() {
        return Ok(None);
    }
    let unit = a.type_.type_size() as u64;
    let p = |i: usize| u64::from(node.op_params[i] as u32);
    let strides = [unit, p(0), p(1), p(2)];
    // the kernels address the window's elements through typed pointers: offset and strides
    // must keep them aligned as the tensor's own data is (a fuzzed ACC at offset 2 read
    // misaligned floats)
    let align = unit.min(8);
    need!(
        (0..4).all(|i| p(i) % align == 0),
        "{}: window offset {} or strides {:?} not multiples of its {}-byte elements",
        node.op.name(),
        p(3),
        &strides[1..],
        unit
    );
    // threads add or copy the window's rows side by side, so no two of its elements may share
    // a byte (a fuzzed ACC of 2^30 elements into a window of strides 0 ran for seconds)
    need!(
        elements_distinct(a.type_, b.ne.map(|n| n as u64), strides),
        "{}: a window of {:?} with strides {:?} whose elements overlap",
        node.op.name(),
        b.ne,
        &strides[1..]
    );
    let last = (0..MAX_DIMS).try_fold(p(3), |acc, d| acc.checked_add((b.ne[d] as u64 - 1).checked_mul(strides[d])?));
    let room = (node.nbytes() as u64).min(a.nbytes() as u64);
    need!(
        last.and_then(|l| l.checked_add(unit)).is_some_and(|end| end <= room),
        "{}: a window of {:?} at offset {} with strides {:?} leaves the {} bytes of its tensor",
        node.op.name(),
        b.ne,
        p(3),
        &strides[1..],
        room
    );
    Ok(None)
}

fn elementwise(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!(node.ne == a.ne, "{}: result {:?} is not shaped as {:?}", node.op.name(), node.ne, a.ne);
    if node.op == Op::UNARY {
        need!((0..UnaryOp::COUNT).contains(&node.op_params[0]), "UNARY: no function {}", node.op_params[0]);
    }
    Ok(None)
}

fn glu(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!((0..GluOp::COUNT).contains(&node.op_params[0]), "GLU: no function {}", node.op_params[0]);
    match node.src(1) {
        Some(b) => need!(b.ne == a.ne && node.ne == a.ne, "GLU: halves {:?} and {:?} into {:?}", a.ne, b.ne, node.ne),
        None => need!(
            node.ne[0] == a.ne[0] / 2 && node.ne[1..] == a.ne[1..],
            "GLU: rows of {:?} do not halve into {:?}",
            a.ne,
            node.ne
        ),
    }
    Ok(None)
}

fn norm(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!(node.ne == a.ne, "{}: result {:?} is not shaped as {:?}", node.op.name(), node.ne, a.ne);
    let eps = node.op_param_f32(0);
    // NaN compares as neither
    let valid = eps >= 0.0;
    need!(valid, "{}: eps {} is not a non-negative number", node.op.name(), eps);
    Ok(None)
}

fn mul_mat(node: TensorPtr) -> Verdict {
    let (a, b) = (src(node, 0)?, src(node, 1)?);
    need!(a.ne[0] == b.ne[0], "MUL_MAT: rows of {} and {}", a.ne[0], b.ne[0]);
    need!(
        a.ne[2] >= 1 && a.ne[3] >= 1 && b.ne[2] % a.ne[2] == 0 && b.ne[3] % a.ne[3] == 0,
        "MUL_MAT: {:?} does not broadcast over {:?}",
        a.ne,
        b.ne
    );
    need!(!a.is_transposed(), "MUL_MAT: the weights are transposed");
    need!(node.ne == [a.ne[1], b.ne[1], b.ne[2], b.ne[3]], "MUL_MAT: result {:?} for {:?} x {:?}", node.ne, a.ne, b.ne);
    Ok(None)
}

fn mul_mat_id(node: TensorPtr) -> Verdict {
    let (experts, b, ids) = (src(node, 0)?, src(node, 1)?, src(node, 2)?);
    need!(experts.ne[3] == 1 && b.ne[3] == 1, "MUL_MAT_ID: 4-d operands {:?} and {:?}", experts.ne, b.ne);
    need!(ids.ne[2] == 1 && ids.ne[3] == 1 && ids.ne[1] == b.ne[2], "MUL_MAT_ID: ids {:?} for {:?}", ids.ne, b.ne);
    need!(experts.ne[0] == b.ne[0], "MUL_MAT_ID: rows of {} and {}", experts.ne[0], b.ne[0]);
    need!(b.ne[1] >= 1 && ids.ne[0] % b.ne[1] == 0, "MUL_MAT_ID: {} slots over {} rows", ids.ne[0], b.ne[1]);
    need!(!experts.is_transposed(), "MUL_MAT_ID: the experts are transposed");
    need!(
        node.ne == [experts.ne[1], ids.ne[0], b.ne[2], 1],
        "MUL_MAT_ID: result {:?} for {:?}, {:?} and ids {:?}",
        node.ne,
        experts.ne,
        b.ne,
        ids.ne
    );
    let routes = experts.ne[2].checked_mul(ids.ne[0]).and_then(|n| n.checked_mul(ids.ne[1]));
    need!(routes.is_some_and(|n| n <= MAX_ROUTES), "MUL_MAT_ID: too many routes for {:?} and {:?}", experts.ne, ids.ne);
    indices(&ids, &[Type::I32], 2, experts.ne[2])
}

fn get_rows(node: TensorPtr) -> Verdict {
    let (a, ids) = (src(node, 0)?, src(node, 1)?);
    need!(a.ne[2] == ids.ne[1] && a.ne[3] == ids.ne[2] && ids.ne[3] == 1, "GET_ROWS: ids {:?} for {:?}", ids.ne, a.ne);
    need!(
        node.ne == [a.ne[0], ids.ne[0], ids.ne[1], ids.ne[2]],
        "GET_ROWS: result {:?} for {:?} and ids {:?}",
        node.ne,
        a.ne,
        ids.ne
    );
    indices(&ids, &[Type::I32], 1, a.ne[1])
}

fn get_rows_back(node: TensorPtr) -> Verdict {
    let (grad, ids, like) = (src(node, 0)?, src(node, 1)?, src(node, 2)?);
    need!(grad.is_matrix() && like.is_matrix(), "GET_ROWS_BACK: {:?} and {:?} are not matrices", grad.ne, like.ne);
    // the kernel walks the indices as one packed vector, row i of the gradient for index i
    need!(
        ids.is_vector() && ids.is_contiguous() && ids.ne[0] == grad.ne[1],
        "GET_ROWS_BACK: ids {:?} for {:?}",
        ids.ne,
        grad.ne
    );
    need!(grad.ne[0] == like.ne[0], "GET_ROWS_BACK: rows of {} and {}", grad.ne[0], like.ne[0]);
    need!(node.ne == [like.ne[0], like.ne[1], 1, 1], "GET_ROWS_BACK: result {:?} for {:?}", node.ne, like.ne);
    indices(&ids, &[Type::I32], 1, node.ne[1])
}

fn set_rows(node: TensorPtr) -> Verdict {
    let (rows, ids) = (src(node, 0)?, src(node, 1)?);
    need!(
        node.ne[0] == rows.ne[0] && node.ne[2] == rows.ne[2] && node.ne[3] == rows.ne[3],
        "SET_ROWS: rows {:?} into {:?}",
        rows.ne,
        node.ne
    );
    need!(
        rows.ne[1] == ids.ne[0]
            && ids.ne[1] >= 1
            && ids.ne[2] >= 1
            && ids.ne[3] == 1
            && rows.ne[2] % ids.ne[1] == 0
            && rows.ne[3] % ids.ne[2] == 0,
        "SET_ROWS: ids {:?} for rows {:?}",
        ids.ne,
        rows.ne
    );
    indices(&ids, &[Type::I32, Type::I64], 1, node.ne[1])
}

fn soft_max(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!(node.ne == a.ne, "SOFT_MAX: result {:?} is not shaped as {:?}", node.ne, a.ne);
    need!(packed(&a) && packed(&node), "SOFT_MAX: rows are not packed");
    if let Some(mask) = node.src(1) {
        need!(
            packed(&mask) && mask.ne[0] >= a.ne[0] && mask.ne[1] >= a.ne[1] && mask.ne[2] >= 1 && mask.ne[3] >= 1,
            "SOFT_MAX: mask {:?} does not cover {:?}",
            mask.ne,
            a.ne
        );
    }
    if let Some(sinks) = node.src(2) {
        // read as one packed vector, a value per head
        need!(sinks.is_contiguous() && sinks.nelements() >= a.ne[2], "SOFT_MAX: sinks {:?} for {:?}", sinks.ne, a.ne);
    }
    Ok(None)
}

/// op_params of ROPE: n_dims, mode, M-RoPE sections, the offset of the rotated part.
const ROPE_N_DIMS: usize = 1;
const ROPE_MODE: usize = 2;
const ROPE_SECTIONS: std::ops::Range<usize> = 11..15;
const ROPE_N_OFFS: usize = 15;

fn rope(node: TensorPtr) -> Verdict {
    let (a, pos) = (src(node, 0)?, src(node, 1)?);
    let ne0 = a.ne[0];
    need!(node.ne == a.ne && node.type_ == a.type_, "ROPE: result {:?} is not shaped as {:?}", node.ne, a.ne);
    need!(packed(&a) && packed(&node), "ROPE: rows are not packed");
    need!(ne0 <= MAX_ROPE_ROW, "ROPE: rows of {}", ne0);
    let mode = node.op_params[ROPE_MODE];
    need!(rope_type::ALL.contains(&mode), "ROPE: unknown mode {}", mode);
    let multi = mode & rope_type::MROPE != 0;
    let per_token = if multi { 4 } else { 1 };
    // the kernel reads the positions (and frequency factors) as packed vectors
    need!(
        pos.type_ == Type::I32 && pos.is_vector() && pos.is_contiguous() && pos.ne[0] >= a.ne[2] * per_token,
        "ROPE: positions {:?} for {} tokens",
        pos.ne,
        a.ne[2]
    );
    let (n_dims, n_offs) = (i64::from(node.op_params[ROPE_N_DIMS]), i64::from(node.op_params[ROPE_N_OFFS]));
    need!(n_dims >= 0 && n_dims % 2 == 0 && n_dims <= ne0, "ROPE: {} dimensions of rows of {}", n_dims, ne0);
    need!(n_offs >= 0 && n_offs % 2 == 0 && n_offs + n_dims <= ne0, "ROPE: offset {} in rows of {}", n_offs, ne0);
    if mode == rope_type::VISION {
        need!(n_dims == ne0 / 2 && n_offs == 0, "ROPE: vision rotates half rows");
    }
    if multi {
        let sections = &node.op_params[ROPE_SECTIONS];
        let total: i64 = sections.iter().map(|&s| i64::from(s)).sum();
        need!(
            sections.iter().all(|&s| s >= 0) && sections[..3].iter().any(|&s| s > 0) && total <= ne0,
            "ROPE: sections {:?} for rows of {}",
            sections,
            ne0
        );
    }
    if let Some(factors) = node.src(2) {
        let pairs = if mode == rope_type::VISION { ne0 / 2 } else { n_dims / 2 };
        need!(
            factors.is_contiguous() && factors.nelements() >= pairs,
            "ROPE: frequency factors {:?} for {} pairs",
            factors.ne,
            pairs
        );
    }
    Ok(None)
}

fn flash_attn_ext(node: TensorPtr) -> Verdict {
    let (q, k, v) = (src(node, 0)?, src(node, 1)?, src(node, 2)?);
    let (dk, dv, n_kv) = (k.ne[0], v.ne[0], k.ne[1]);
    need!(q.ne[0] == dk && v.ne[1] == n_kv, "FLASH_ATTN_EXT: q {:?}, k {:?}, v {:?}", q.ne, k.ne, v.ne);
    need!(dk <= MAX_HEAD && dv <= MAX_HEAD && q.ne[2] <= MAX_HEADS, "FLASH_ATTN_EXT: heads of q {:?}", q.ne);
    for kv in [&k, &v] {
        need!(
            kv.ne[2] >= 1 && kv.ne[3] >= 1 && q.ne[2] % kv.ne[2] == 0 && q.ne[3] % kv.ne[3] == 0,
            "FLASH_ATTN_EXT: {:?} does not broadcast over q {:?}",
            kv.ne,
            q.ne
        );
    }
    need!(packed(&q) && packed(&k) && packed(&v) && packed(&node), "FLASH_ATTN_EXT: rows are not packed");
    need!(node.ne == [dv, q.ne[2], q.ne[1], q.ne[3]], "FLASH_ATTN_EXT: result {:?} for q {:?}", node.ne, q.ne);
    if let Some(mask) = node.src(3) {
        need!(
            packed(&mask) && mask.ne[0] >= n_kv && mask.ne[1] >= q.ne[1] && mask.ne[2] >= 1 && mask.ne[3] >= 1,
            "FLASH_ATTN_EXT: mask {:?} for {} keys and q {:?}",
            mask.ne,
            n_kv,
            q.ne
        );
    }
    if let Some(sinks) = node.src(4) {
        need!(sinks.is_contiguous() && sinks.nelements() >= q.ne[2], "FLASH_ATTN_EXT: sinks {:?}", sinks.ne);
    }
    Ok(None)
}

fn sort(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    if node.op == Op::ARGSORT {
        need!(node.ne == a.ne, "ARGSORT: result {:?} is not shaped as {:?}", node.ne, a.ne);
        need!(matches!(node.op_params[0], 0 | 1), "ARGSORT: unknown order {}", node.op_params[0]);
    } else {
        need!(node.ne[0] <= a.ne[0] && node.ne[1..] == a.ne[1..], "TOP_K: result {:?} for {:?}", node.ne, a.ne);
    }
    Ok(None)
}

fn reduce(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    let want = if node.op == Op::SUM { [1; MAX_DIMS] } else { [1, a.ne[1], a.ne[2], a.ne[3]] };
    need!(node.ne == want, "{}: result {:?} for {:?}", node.op.name(), node.ne, a.ne);
    Ok(None)
}

fn repeat(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!(tiles(&a, &node), "REPEAT: {:?} does not tile {:?}", a.ne, node.ne);
    Ok(None)
}

fn concat(node: TensorPtr) -> Verdict {
    let (a, b) = (src(node, 0)?, src(node, 1)?);
    let dim = node.op_params[0];
    need!((0..MAX_DIMS as i32).contains(&dim), "CONCAT: no dimension {}", dim);
    let joined = (0..MAX_DIMS).all(|d| {
        if d == dim as usize {
            a.ne[d].checked_add(b.ne[d]) == Some(node.ne[d])
        } else {
            a.ne[d] == b.ne[d] && a.ne[d] == node.ne[d]
        }
    });
    need!(joined, "CONCAT: {:?} and {:?} along {} into {:?}", a.ne, b.ne, dim, node.ne);
    Ok(None)
}

/// Ops whose result is shaped as their source and that read nothing else (DIAG_MASK_*'s
/// `n_past` and its layouts are `supports_op`'s to check).
fn same_shape(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!(node.ne == a.ne, "{}: result {:?} is not shaped as {:?}", node.op.name(), node.ne, a.ne);
    Ok(None)
}

fn argmax(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    need!(node.ne == [a.ne[1], 1, 1, 1], "ARGMAX: result {:?} for {:?}", node.ne, a.ne);
    Ok(None)
}

/// PAD: op_params hold a (before, after) pair per dimension and a circular flag; the result
/// is the source with so many positions added, which the kernel takes back off each index.
fn pad(node: TensorPtr) -> Verdict {
    let a = src(node, 0)?;
    let padded = (0..MAX_DIMS).all(|d| {
        let (before, after) = (node.op_params[2 * d], node.op_params[2 * d + 1]);
        before >= 0 && after >= 0 && a.ne[d].checked_add(i64::from(before) + i64::from(after)) == Some(node.ne[d])
    });
    need!(padded, "PAD: {:?} padded by {:?} is not {:?}", a.ne, &node.op_params[..8], node.ne);
    // a circular pad wraps indices around each extent
    need!(node.op_params[8] == 0 || !a.is_empty(), "PAD: a circular pad of an empty {:?}", a.ne);
    Ok(None)
}

/// Strides, paddings and dilations of IM2COL up to which its index arithmetic stays far from
/// overflow (positions are checked against the image before each read).
const MAX_UNFOLD_PARAM: i32 = 1 << 16;

/// IM2COL: the result holds a row of the kernel's size (`src[0]`: [KW, KH, IC, ..], or
/// [KW, IC, ..] in 1D) per output position of every image of `src[1]`; the kernel writes it
/// packed and reads the image only where a position falls inside it.
fn im2col(node: TensorPtr) -> Verdict {
    let (kernel, image) = (src(node, 0)?, src(node, 1)?);
    let params = &node.op_params[..7];
    need!(
        params[..6].iter().all(|p| p.unsigned_abs() <= MAX_UNFOLD_PARAM as u32) && matches!(params[6], 0 | 1),
        "IM2COL: parameters {:?}",
        params
    );
    // image channels, kernel channels, the kernel's size, and the images of result and image
    let (channels, kernel_channels, row, images) = if params[6] == 1 {
        let row = kernel.ne[2].checked_mul(kernel.ne[1]).and_then(|n| n.checked_mul(kernel.ne[0]));
        (image.ne[2], kernel.ne[2], row, [node.ne[3], image.ne[3]])
    } else {
        need!(image.ne[3] == 1 && node.ne[3] == 1, "IM2COL: 1-d image {:?} into {:?}", image.ne, node.ne);
        (image.ne[1], kernel.ne[1], kernel.ne[1].checked_mul(kernel.ne[0]), [node.ne[2], image.ne[2]])
    };
    need!(channels == kernel_channels, "IM2COL: kernel {:?} for image {:?}", kernel.ne, image.ne);
    need!(
        row == Some(node.ne[0]) && images[0] == images[1],
        "IM2COL: result {:?} for kernel {:?} and image {:?}",
        node.ne,
        kernel.ne,
        image.ne
    );
    need!(node.is_contiguous() && packed(&image), "IM2COL: the result must be contiguous, the image rows packed");
    Ok(None)
}

/// The index source in `slot`: one of `types`, no more than [`MAX_INDICES`] values.
fn indices(ids: &Tensor, types: &[Type], slot: usize, bound: i64) -> Verdict {
    need!(types.contains(&ids.type_), "indices of type {}", ids.type_.name());
    need!(ids.nelements() <= MAX_INDICES, "{} indices", ids.nelements());
    Ok(Some(IndexUse { slot, bound }))
}
