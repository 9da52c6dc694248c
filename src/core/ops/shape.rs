//! Ops that move or reinterpret data rather than compute with it: writing one tensor into a
//! region of another (`set`), copies and casts, making a tensor contiguous, and the views that
//! only change shape and strides (`reshape`, `view_*`, `permute`, `transpose`).
//!
//! Views share their source's data: the result's `view_src` is the source (or its base) and
//! nothing is allocated for it.

use super::{name_after, view_or_dup, view_tensor};
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::{MAX_DIMS, TensorPtr};
use crate::core::types::Type;

/// Writes `b` into the region of (a copy of, or if `inplace` a view of) `a` described by the
/// strides `nb1..nb3` and the byte `offset` (`ggml_set_impl`).
#[allow(clippy::too_many_arguments)]
pub fn set_impl(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
    inplace: bool,
) -> TensorPtr {
    crate::ggml_assert!(
        a.nelements() >= b.nelements(),
        "set: destination has {} elements, source {}",
        a.nelements(),
        b.nelements()
    );
    let result = view_or_dup(ctx, a, inplace);
    crate::ggml_assert!(offset < (1usize << 30), "set: offset {} too large", offset);
    // The strides and offset are stored as 32-bit integers, as ggml does.
    result.get_mut().set_op_params_i32(&[nb1 as i32, nb2 as i32, nb3 as i32, offset as i32, i32::from(inplace)]);
    let r = result.get_mut();
    r.op = Op::SET;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    result
}

pub fn set(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> TensorPtr {
    set_impl(ctx, a, b, nb1, nb2, nb3, offset, false)
}

pub fn set_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> TensorPtr {
    set_impl(ctx, a, b, nb1, nb2, nb3, offset, true)
}

pub fn set_1d(ctx: &mut Context, a: TensorPtr, b: TensorPtr, offset: usize) -> TensorPtr {
    set_impl(ctx, a, b, a.nb[1], a.nb[2], a.nb[3], offset, false)
}

pub fn set_1d_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr, offset: usize) -> TensorPtr {
    set_impl(ctx, a, b, a.nb[1], a.nb[2], a.nb[3], offset, true)
}

pub fn set_2d(ctx: &mut Context, a: TensorPtr, b: TensorPtr, nb1: usize, offset: usize) -> TensorPtr {
    set_impl(ctx, a, b, nb1, a.nb[2], a.nb[3], offset, false)
}

pub fn set_2d_inplace(ctx: &mut Context, a: TensorPtr, b: TensorPtr, nb1: usize, offset: usize) -> TensorPtr {
    set_impl(ctx, a, b, nb1, a.nb[2], a.nb[3], offset, true)
}

/// Sets `t`'s name to the concatenation of `parts` (truncated to 63 bytes).
fn set_name_from(t: TensorPtr, parts: &[&[u8]]) {
    t.get_mut().set_name_bytes(&parts.concat());
}

/// Copies `a` into `b` (converting to `b`'s type); the result is a view of `b`.
pub fn cpy(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(
        a.nelements() == b.nelements(),
        "cpy: source has {} elements, destination {}",
        a.nelements(),
        b.nelements()
    );
    let result = view_tensor(ctx, b);
    if b.name_bytes().is_empty() {
        name_after(result, a, " (copy)");
    } else {
        set_name_from(result, &[b.name_bytes(), b" (copy of ", a.name_bytes(), b")"]);
    }
    let r = result.get_mut();
    r.op = Op::CPY;
    r.src[0] = a.as_ptr();
    r.src[1] = b.as_ptr();
    result
}

/// A copy of `a` converted to `type_`: a CPY whose destination is the result itself.
pub fn cast(ctx: &mut Context, a: TensorPtr, type_: Type) -> TensorPtr {
    let result = ctx.new_tensor(type_, &a.ne);
    name_after(result, a, " (copy)");
    let r = result.get_mut();
    r.op = Op::CPY;
    r.src[0] = a.as_ptr();
    // Backends expect a destination in src[1], as for `cpy`.
    r.src[1] = result.as_ptr();
    result
}

fn cont_op(result: TensorPtr, a: TensorPtr) -> TensorPtr {
    name_after(result, a, " (cont)");
    let r = result.get_mut();
    r.op = Op::CONT;
    r.src[0] = a.as_ptr();
    result
}

/// A contiguous copy of `a`, same shape.
pub fn cont(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    let result = ctx.dup_tensor(a);
    cont_op(result, a)
}

pub fn cont_1d(ctx: &mut Context, a: TensorPtr, ne0: i64) -> TensorPtr {
    cont_4d(ctx, a, ne0, 1, 1, 1)
}

pub fn cont_2d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64) -> TensorPtr {
    cont_4d(ctx, a, ne0, ne1, 1, 1)
}

pub fn cont_3d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64, ne2: i64) -> TensorPtr {
    cont_4d(ctx, a, ne0, ne1, ne2, 1)
}

/// A contiguous copy of `a` with a new shape of the same element count.
pub fn cont_4d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> TensorPtr {
    crate::ggml_assert!(
        a.nelements() == ne0.wrapping_mul(ne1).wrapping_mul(ne2).wrapping_mul(ne3),
        "cont_4d: {} elements cannot take the shape [{}, {}, {}, {}]",
        a.nelements(),
        ne0,
        ne1,
        ne2,
        ne3
    );
    let result = ctx.new_tensor(a.type_, &[ne0, ne1, ne2, ne3]);
    cont_op(result, a)
}

/// A view of contiguous `a` with the shape `ne` (1 to 4 extents).
fn reshape_to(ctx: &mut Context, a: TensorPtr, ne: &[i64]) -> TensorPtr {
    let result = ctx.new_tensor_impl(a.type_, ne, Some(a), 0);
    name_after(result, a, " (reshaped)");
    let r = result.get_mut();
    r.op = Op::RESHAPE;
    r.src[0] = a.as_ptr();
    result
}

fn check_reshape(a: TensorPtr, ne: &[i64]) {
    crate::ggml_assert!(a.is_contiguous(), "reshape: source must be contiguous");
    let n = ne.iter().fold(1i64, |acc, &x| acc.wrapping_mul(x));
    crate::ggml_assert!(a.nelements() == n, "reshape: {} elements cannot take the shape {:?}", a.nelements(), ne);
}

/// A view of contiguous `a` with `b`'s shape (only `b`'s shape matters, not its layout).
pub fn reshape(ctx: &mut Context, a: TensorPtr, b: TensorPtr) -> TensorPtr {
    crate::ggml_assert!(a.is_contiguous(), "reshape: source must be contiguous");
    crate::ggml_assert!(
        a.nelements() == b.nelements(),
        "reshape: {} elements cannot take the shape of {} elements",
        a.nelements(),
        b.nelements()
    );
    reshape_to(ctx, a, &b.ne)
}

pub fn reshape_1d(ctx: &mut Context, a: TensorPtr, ne0: i64) -> TensorPtr {
    check_reshape(a, &[ne0]);
    reshape_to(ctx, a, &[ne0])
}

pub fn reshape_2d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64) -> TensorPtr {
    check_reshape(a, &[ne0, ne1]);
    reshape_to(ctx, a, &[ne0, ne1])
}

pub fn reshape_3d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64, ne2: i64) -> TensorPtr {
    check_reshape(a, &[ne0, ne1, ne2]);
    reshape_to(ctx, a, &[ne0, ne1, ne2])
}

pub fn reshape_4d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> TensorPtr {
    check_reshape(a, &[ne0, ne1, ne2, ne3]);
    reshape_to(ctx, a, &[ne0, ne1, ne2, ne3])
}

/// A VIEW of `a` with shape `ne` starting `offset` bytes into it, with packed strides; the
/// callers then set the strides they were given. The offset is kept in `op_params`.
fn view_impl(ctx: &mut Context, a: TensorPtr, ne: &[i64], offset: usize) -> TensorPtr {
    let result = ctx.new_tensor_impl(a.type_, ne, Some(a), offset);
    name_after(result, a, " (view)");
    let r = result.get_mut();
    r.set_op_params_bytes(&offset.to_ne_bytes());
    r.op = Op::VIEW;
    r.src[0] = a.as_ptr();
    result
}

pub fn view_1d(ctx: &mut Context, a: TensorPtr, ne0: i64, offset: usize) -> TensorPtr {
    view_impl(ctx, a, &[ne0], offset)
}

pub fn view_2d(ctx: &mut Context, a: TensorPtr, ne0: i64, ne1: i64, nb1: usize, offset: usize) -> TensorPtr {
    let result = view_impl(ctx, a, &[ne0, ne1], offset);
    let r = result.get_mut();
    r.nb[1] = nb1;
    r.nb[2] = nb1.wrapping_mul(ne1 as usize);
    r.nb[3] = r.nb[2];
    result
}

#[allow(clippy::too_many_arguments)]
pub fn view_3d(
    ctx: &mut Context,
    a: TensorPtr,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    nb1: usize,
    nb2: usize,
    offset: usize,
) -> TensorPtr {
    let result = view_impl(ctx, a, &[ne0, ne1, ne2], offset);
    let r = result.get_mut();
    r.nb[1] = nb1;
    r.nb[2] = nb2;
    r.nb[3] = nb2.wrapping_mul(ne2 as usize);
    result
}

#[allow(clippy::too_many_arguments)]
pub fn view_4d(
    ctx: &mut Context,
    a: TensorPtr,
    ne0: i64,
    ne1: i64,
    ne2: i64,
    ne3: i64,
    nb1: usize,
    nb2: usize,
    nb3: usize,
    offset: usize,
) -> TensorPtr {
    let result = view_impl(ctx, a, &[ne0, ne1, ne2, ne3], offset);
    let r = result.get_mut();
    r.nb[1] = nb1;
    r.nb[2] = nb2;
    r.nb[3] = nb3;
    result
}

/// A view of `a` whose dimension `i` becomes dimension `axes[i]` of the result.
pub fn permute(ctx: &mut Context, a: TensorPtr, axis0: i32, axis1: i32, axis2: i32, axis3: i32) -> TensorPtr {
    let axes = [axis0, axis1, axis2, axis3];
    for (i, &axis) in axes.iter().enumerate() {
        crate::ggml_assert!((0..MAX_DIMS as i32).contains(&axis), "permute: axis{} = {} is out of range", i, axis);
    }
    for (i, &axis) in axes.iter().enumerate() {
        crate::ggml_assert!(
            !axes[i + 1..].contains(&axis),
            "permute: axis {} appears more than once in {:?}",
            axis,
            axes
        );
    }

    let result = view_tensor(ctx, a);
    name_after(result, a, " (permuted)");

    let r = result.get_mut();
    for (i, &axis) in axes.iter().enumerate() {
        r.ne[axis as usize] = a.ne[i];
        r.nb[axis as usize] = a.nb[i];
    }
    r.op = Op::PERMUTE;
    r.src[0] = a.as_ptr();
    r.set_op_params_i32(&axes);
    result
}

/// A view of `a` with its first two dimensions swapped.
pub fn transpose(ctx: &mut Context, a: TensorPtr) -> TensorPtr {
    let result = view_tensor(ctx, a);
    name_after(result, a, " (transposed)");
    let r = result.get_mut();
    r.ne[0] = a.ne[1];
    r.ne[1] = a.ne[0];
    r.nb[0] = a.nb[1];
    r.nb[1] = a.nb[0];
    r.op = Op::TRANSPOSE;
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

    fn named(t: TensorPtr, name: &str) -> TensorPtr {
        t.get_mut().set_name(name);
        t
    }

    #[test]
    fn set_stores_strides_and_offset_as_i32() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[8, 4]);
        let b = c.new_tensor(Type::F32, &[4, 2]);
        let r = set_2d(&mut c, a, b, 32, 8);
        assert_eq!(r.op, Op::SET);
        assert_eq!(r.src(0), Some(a));
        assert_eq!(r.src(1), Some(b));
        assert_eq!(&r.op_params[..6], &[32, 128, 128, 8, 0, 0]);
        assert!(!r.is_view());

        let r = set_1d_inplace(&mut c, a, b, 4);
        assert_eq!(&r.op_params[..5], &[32, 128, 128, 4, 1]);
        assert_eq!(r.view_source(), Some(a));
        assert_eq!(r.data, a.data);
    }

    #[test]
    fn cpy_names_and_views_the_destination() {
        let mut c = ctx();
        let a = named(c.new_tensor(Type::F32, &[6]), "a");
        let b = c.new_tensor(Type::F16, &[2, 3]);
        let r = cpy(&mut c, a, b);
        assert_eq!(r.name(), "a (copy)");
        assert_eq!(r.op, Op::CPY);
        assert_eq!(r.view_source(), Some(b));
        assert_eq!((r.type_, r.ne, r.nb), (Type::F16, b.ne, b.nb));
        assert_eq!((r.src(0), r.src(1)), (Some(a), Some(b)));

        named(b, "b");
        let r = cpy(&mut c, a, b);
        assert_eq!(r.name(), "b (copy of a)");
    }

    #[test]
    fn cast_refers_to_itself() {
        let mut c = ctx();
        let a = named(c.new_tensor(Type::F32, &[4, 2]), "x");
        let r = cast(&mut c, a, Type::F16);
        assert_eq!((r.type_, r.ne), (Type::F16, [4, 2, 1, 1]));
        assert_eq!(r.name(), "x (copy)");
        assert_eq!((r.src(0), r.src(1)), (Some(a), Some(r)));
        assert!(!r.is_view());
    }

    #[test]
    fn cont_makes_a_packed_copy() {
        let mut c = ctx();
        let a = named(c.new_tensor(Type::F32, &[4, 3]), "m");
        let t = transpose(&mut c, a);
        let r = cont(&mut c, t);
        assert_eq!(r.name(), "m (transposed) (cont)");
        assert_eq!((r.ne, r.nb), ([3, 4, 1, 1], [4, 12, 48, 48]));
        assert_eq!(r.op, Op::CONT);
        let r = cont_2d(&mut c, t, 6, 2);
        assert_eq!((r.ne, r.nb), ([6, 2, 1, 1], [4, 24, 48, 48]));
        assert_eq!(r.src(0), Some(t));
    }

    #[test]
    fn reshape_views_the_base() {
        let mut c = ctx();
        let a = named(c.new_tensor(Type::F32, &[6, 4]), "w");
        let r = reshape_3d(&mut c, a, 2, 3, 4);
        assert_eq!(r.name(), "w (reshaped)");
        assert_eq!((r.ne, r.nb), ([2, 3, 4, 1], [4, 8, 24, 96]));
        assert_eq!((r.op, r.src(0), r.view_source()), (Op::RESHAPE, Some(a), Some(a)));
        let shape = c.new_tensor(Type::I32, &[24]);
        let r2 = reshape(&mut c, r, shape);
        assert_eq!(r2.name(), "w (reshaped) (reshaped)");
        assert_eq!(r2.ne, [24, 1, 1, 1]);
        assert_eq!((r2.src(0), r2.view_source()), (Some(r), Some(a)));
    }

    #[test]
    fn views_record_their_offset() {
        let mut c = ctx();
        let a = named(c.new_tensor(Type::F32, &[8, 4]), "kv");
        let v = view_2d(&mut c, a, 4, 2, 32, 16);
        assert_eq!(v.name(), "kv (view)");
        assert_eq!(v.op, Op::VIEW);
        assert_eq!((v.ne, v.nb), ([4, 2, 1, 1], [4, 32, 64, 64]));
        assert_eq!(v.view_offs, 16);
        assert_eq!(v.data as usize, a.data as usize + 16);
        assert_eq!(&v.op_params[..3], &[16, 0, 0]);

        let v3 = view_3d(&mut c, v, 2, 2, 2, 8, 16, 4);
        assert_eq!(v3.nb, [4, 8, 16, 32]);
        assert_eq!((v3.src(0), v3.view_source(), v3.view_offs), (Some(v), Some(a), 20));

        let v4 = view_4d(&mut c, a, 2, 2, 2, 2, 8, 16, 32, 0);
        assert_eq!(v4.nb, [4, 8, 16, 32]);
        let v1 = view_1d(&mut c, a, 5, 8);
        assert_eq!((v1.ne, v1.nb), ([5, 1, 1, 1], [4, 20, 20, 20]));
    }

    #[test]
    fn permute_moves_extents_and_strides() {
        let mut c = ctx();
        let a = named(c.new_tensor(Type::F32, &[2, 3, 4, 5]), "q");
        let r = permute(&mut c, a, 0, 2, 1, 3);
        assert_eq!(r.name(), "q (permuted)");
        assert_eq!(r.ne, [2, 4, 3, 5]);
        assert_eq!(r.nb, [4, 24, 8, 96]);
        assert_eq!(&r.op_params[..4], &[0, 2, 1, 3]);
        assert_eq!((r.op, r.src(0), r.view_source()), (Op::PERMUTE, Some(a), Some(a)));

        let r = permute(&mut c, a, 3, 0, 1, 2);
        assert_eq!(r.ne, [3, 4, 5, 2]);
        assert_eq!(r.nb, [8, 24, 96, 4]);
    }

    #[test]
    fn transpose_swaps_the_first_two_dimensions() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F16, &[4, 3, 2]);
        let r = transpose(&mut c, a);
        assert_eq!(r.name(), " (transposed)");
        assert_eq!((r.ne, r.nb), ([3, 4, 2, 1], [8, 2, 24, 48]));
        assert!(r.is_transposed());
        assert_eq!(r.op, Op::TRANSPOSE);
    }
}
