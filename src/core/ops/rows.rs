//! Row gathers and scatters (`get_rows`, its gradient `get_rows_back`, `set_rows`) and
//! `diag`, which spreads a row over a diagonal.

use super::view_tensor;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;

/// Gathers rows of `a` selected by the I32 indices `b`.
///
/// `a` is `[n, rows, ne2, ne3]`, `b` is `[k, ne2, ne3]`; the result is `[n, k, ne2, ne3]`,
/// F32 (I32 when `a` is I32).
pub fn get_rows(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.ne[2] == b.ne[1], "get_rows: a.ne[2] = {} but b.ne[1] = {}", a.ne[2], b.ne[1]);
    crate::ggml_assert!(a.ne[3] == b.ne[2], "get_rows: a.ne[3] = {} but b.ne[2] = {}", a.ne[3], b.ne[2]);
    crate::ggml_assert!(b.ne[3] == 1, "get_rows: indices must be at most 3-d");
    crate::ggml_assert!(b.type_ == Type::I32, "get_rows: indices must be I32, not {}", b.type_.name());

    let type_ = if a.type_ == Type::I32 { Type::I32 } else { Type::F32 };
    let result = ctx.new_tensor(type_, &[a.ne[0], b.ne[0], b.ne[1], b.ne[2]]);
    let r = result.get_mut();
    r.op = Op::GET_ROWS;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    result
}

/// Gradient of [`get_rows`]: accumulates the rows of `a` (the gradient of the gathered rows)
/// at the indices `b` into an F32 matrix shaped like `c` (the gathered-from data).
pub fn get_rows_back(ctx: &mut Context, a: TensorPtr, b: TensorPtr, c: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(
        a.is_matrix() && b.is_vector() && b.type_ == Type::I32,
        "get_rows_back: needs a matrix of gradients and an I32 vector of indices"
    );
    crate::ggml_assert!(
        c.is_matrix() && a.ne[0] == c.ne[0],
        "get_rows_back: the data must be a matrix with rows of {} elements",
        a.ne[0]
    );

    let result = ctx.new_tensor(Type::F32, &[c.ne[0], c.ne[1]]);
    let r = result.get_mut();
    r.op = Op::GET_ROWS_BACK;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    result
}

/// Scatters the rows of `b` into `a` at the indices `c` (I32 or I64); the result is a view of
/// `a`.
///
/// `a` is `[n, rows, ne2, ne3]`, `b` is `[n, k, ne2, ne3]`, `c` is `[k, i2, i3]` with `i2`
/// and `i3` dividing `ne2` and `ne3` (indices are broadcast).
///
/// Sources are stored as `[b, c, a]`, the order backends read them in.
pub fn set_rows(ctx: &mut Context, a: TensorPtr, b: TensorPtr, c: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.ne[0] == b.ne[0], "set_rows: row lengths differ ({} and {})", a.ne[0], b.ne[0]);
    crate::ggml_assert!(a.ne[2] == b.ne[2], "set_rows: a.ne[2] = {} but b.ne[2] = {}", a.ne[2], b.ne[2]);
    crate::ggml_assert!(a.ne[3] == b.ne[3], "set_rows: a.ne[3] = {} but b.ne[3] = {}", a.ne[3], b.ne[3]);
    crate::ggml_assert!(b.ne[1] == c.ne[0], "set_rows: {} rows but {} indices", b.ne[1], c.ne[0]);
    crate::ggml_assert!(b.ne[2] % c.ne[1] == 0, "set_rows: indices cannot broadcast over dimension 2");
    crate::ggml_assert!(b.ne[3] % c.ne[2] == 0, "set_rows: indices cannot broadcast over dimension 3");
    crate::ggml_assert!(c.ne[3] == 1, "set_rows: indices must be at most 3-d");
    crate::ggml_assert!(
        b.type_ == Type::F32 || b.type_ == Type::F16,
        "set_rows: source rows must be F32 or F16, not {}",
        b.type_.name()
    );
    crate::ggml_assert!(
        c.type_ == Type::I64 || c.type_ == Type::I32,
        "set_rows: indices must be I64 or I32, not {}",
        c.type_.name()
    );
    crate::ggml_assert!(a.is_contiguous_rows(), "set_rows: destination rows must be contiguous");
    crate::ggml_assert!(b.is_contiguous_rows(), "set_rows: source rows must be contiguous");

    let result = view_tensor(ctx, a);
    let r = result.get_mut();
    r.op = Op::SET_ROWS;
    r.src[0] = b.as_ptr();
    r.src[1] = c.as_ptr();
    r.src[2] = a.as_ptr();
    result
}

/// A square matrix per row of `a` (which must have one row per matrix), with that row on its
/// diagonal: `[n, 1, ne2, ne3]` becomes `[n, n, ne2, ne3]`.
pub fn diag(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.ne[1] == 1, "diag: input must have a single row, not {}", a.ne[1]);

    let result = ctx.new_tensor(a.type_, &[a.ne[0], a.ne[0], a.ne[2], a.ne[3]]);
    let r = result.get_mut();
    r.op = Op::DIAG;
    r.src[0] = a.as_ptr();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: false })
    }

    #[test]
    fn get_rows_result_type() {
        let mut c = ctx();
        let a = c.new_tensor(Type::Q8_0, &[64, 100, 2]);
        let b = c.new_tensor(Type::I32, &[7, 2]);
        let r = get_rows(&mut c, a, b);
        assert_eq!((r.type_, r.ne), (Type::F32, [64, 7, 2, 1]));
        assert_eq!((r.op, r.src(0), r.src(1)), (Op::GET_ROWS, Some(a), Some(b)));

        let a = c.new_tensor(Type::I32, &[3, 10]);
        let b = c.new_tensor(Type::I32, &[4]);
        assert_eq!(get_rows(&mut c, a, b).type_, Type::I32);
    }

    #[test]
    fn get_rows_back_takes_the_data_shape() {
        let mut c = ctx();
        let grad = c.new_tensor(Type::F32, &[8, 3]);
        let idx = c.new_tensor(Type::I32, &[3]);
        let data = c.new_tensor(Type::F16, &[8, 20]);
        let r = get_rows_back(&mut c, grad, idx, data);
        assert_eq!((r.type_, r.ne), (Type::F32, [8, 20, 1, 1]));
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(grad), Some(idx), None));
        assert_eq!(r.op, Op::GET_ROWS_BACK);
    }

    #[test]
    fn set_rows_views_the_destination() {
        let mut c = ctx();
        let dst = c.new_tensor(Type::F16, &[16, 32, 4]);
        dst.get_mut().set_name("cache");
        let rows = c.new_tensor(Type::F32, &[16, 3, 4]);
        let idx = c.new_tensor(Type::I64, &[3, 2]);
        let r = set_rows(&mut c, dst, rows, idx);
        assert_eq!(r.name(), "cache (view)");
        assert_eq!((r.type_, r.ne, r.nb), (Type::F16, dst.ne, dst.nb));
        assert_eq!(r.view_source(), Some(dst));
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(rows), Some(idx), Some(dst)));
        assert_eq!(r.op, Op::SET_ROWS);
    }

    #[test]
    fn diag_squares_the_row() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[5, 1, 3]);
        let r = diag(&mut c, a);
        assert_eq!(r.ne, [5, 5, 3, 1]);
        assert_eq!((r.op, r.src(0)), (Op::DIAG, Some(a)));
    }
}
