//! User-defined ops: `ggml_map_custom1/2/3` (a callback over one to three sources, result
//! shaped like the first) and `ggml_custom_4d`/`ggml_custom_inplace` (a callback over any
//! number of sources).
//!
//! The callback, its task count and its user data are stored in `op_params` as the C structs
//! `ggml_map_custom{1,2,3}_op_params` and `ggml_custom_op_params` (24 bytes: pointer, int, a
//! 4-byte hole, pointer). Backends written in C read them back with `memcpy`, so the bytes are
//! written field by field at the C offsets, the hole left zero.

use std::ffi::{c_int, c_void};

use super::set_op;
use super::view_or_dup;
use crate::core::context::Context;
use crate::core::op::Op;
use crate::core::tensor::{MAX_SRC, Tensor, TensorPtr};
use crate::core::types::Type;

/// `GGML_N_TASKS_MAX`: run the callback on as many threads as the backend has.
pub const N_TASKS_MAX: c_int = -1;

/// `ggml_custom1_op_t`.
pub type Custom1Fn =
    unsafe extern "C" fn(dst: *mut Tensor, a: *const Tensor, ith: c_int, nth: c_int, userdata: *mut c_void);
/// `ggml_custom2_op_t`.
pub type Custom2Fn = unsafe extern "C" fn(
    dst: *mut Tensor,
    a: *const Tensor,
    b: *const Tensor,
    ith: c_int,
    nth: c_int,
    userdata: *mut c_void,
);
/// `ggml_custom3_op_t`.
pub type Custom3Fn = unsafe extern "C" fn(
    dst: *mut Tensor,
    a: *const Tensor,
    b: *const Tensor,
    c: *const Tensor,
    ith: c_int,
    nth: c_int,
    userdata: *mut c_void,
);
/// `ggml_custom_op_t`.
pub type CustomFn = unsafe extern "C" fn(dst: *mut Tensor, ith: c_int, nth: c_int, userdata: *mut c_void);

/// The layout shared by `ggml_custom_op_params` and `ggml_map_custom{1,2,3}_op_params`, which
/// differ only in the callback's type.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CustomOpParams<F: Copy> {
    pub fun: Option<F>,
    pub n_tasks: c_int,
    pub userdata: *mut c_void,
}

/// `struct ggml_map_custom1_op_params`.
pub type MapCustom1OpParams = CustomOpParams<Custom1Fn>;
/// `struct ggml_map_custom2_op_params`.
pub type MapCustom2OpParams = CustomOpParams<Custom2Fn>;
/// `struct ggml_map_custom3_op_params`.
pub type MapCustom3OpParams = CustomOpParams<Custom3Fn>;
/// `struct ggml_custom_op_params`.
pub type CustomOpParamsAny = CustomOpParams<CustomFn>;

const PARAMS_SIZE: usize = 24;
const OFFS_FUN: usize = std::mem::offset_of!(CustomOpParams<CustomFn>, fun);
const OFFS_N_TASKS: usize = std::mem::offset_of!(CustomOpParams<CustomFn>, n_tasks);
const OFFS_USERDATA: usize = std::mem::offset_of!(CustomOpParams<CustomFn>, userdata);
const _: () = assert!(std::mem::size_of::<CustomOpParams<CustomFn>>() == PARAMS_SIZE);
const _: () = assert!(std::mem::size_of::<MapCustom3OpParams>() == PARAMS_SIZE);
const _: () = assert!(OFFS_FUN == 0 && OFFS_N_TASKS == 8 && OFFS_USERDATA == 16);

impl<F: Copy> CustomOpParams<F> {
    /// The C struct's bytes, its padding zeroed.
    fn to_bytes(self) -> [u8; PARAMS_SIZE] {
        // A function pointer and `Option` of one are pointer-sized, with `None` as null.
        const { assert!(std::mem::size_of::<Option<F>>() == std::mem::size_of::<usize>()) };
        // SAFETY: Option<F> for a function-pointer type F is a nullable pointer of usize size
        // (asserted above); copying its bits into an integer reads no uninitialised bytes.
        let fun: usize = unsafe { std::mem::transmute_copy(&self.fun) };
        let mut bytes = [0u8; PARAMS_SIZE];
        bytes[OFFS_FUN..OFFS_FUN + 8].copy_from_slice(&fun.to_ne_bytes());
        bytes[OFFS_N_TASKS..OFFS_N_TASKS + 4].copy_from_slice(&self.n_tasks.to_ne_bytes());
        bytes[OFFS_USERDATA..OFFS_USERDATA + 8].copy_from_slice(&(self.userdata as usize).to_ne_bytes());
        bytes
    }

    /// Reads the params a custom-op constructor stored in `t`'s `op_params`. Only meaningful
    /// for a tensor whose `op` is the matching custom op.
    pub fn from_op_params(t: &Tensor) -> Self {
        // SAFETY: op_params is 64 bytes, more than the 24 read; the read is unaligned because
        // op_params is only 4-aligned. Every bit pattern is a valid value of each field (the
        // callback is an Option of a function pointer, null meaning None).
        unsafe { std::ptr::read_unaligned(t.op_params.as_ptr().cast::<Self>()) }
    }
}

fn store<F: Copy>(result: TensorPtr, fun: Option<F>, n_tasks: c_int, userdata: *mut c_void) {
    let params = CustomOpParams { fun, n_tasks, userdata };
    result.get_mut().set_op_params_bytes(&params.to_bytes());
}

fn check_n_tasks(n_tasks: c_int) {
    crate::ggml_assert!(n_tasks == N_TASKS_MAX || n_tasks > 0, "n_tasks = {}", n_tasks);
}

fn map_custom1_impl(
    ctx: &mut Context,
    a: TensorPtr,
    fun: Option<Custom1Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
    inplace: bool,
) -> TensorPtr {
    check_n_tasks(n_tasks);
    let result = view_or_dup(ctx, a, inplace);
    store(result, fun, n_tasks, userdata);
    set_op(result, Op::MAP_CUSTOM1, &[a]);
    result
}

pub fn map_custom1(
    ctx: &mut Context,
    a: TensorPtr,
    fun: Option<Custom1Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    map_custom1_impl(ctx, a, fun, n_tasks, userdata, false)
}

pub fn map_custom1_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    fun: Option<Custom1Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    map_custom1_impl(ctx, a, fun, n_tasks, userdata, true)
}

fn map_custom2_impl(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    fun: Option<Custom2Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
    inplace: bool,
) -> TensorPtr {
    check_n_tasks(n_tasks);
    let result = view_or_dup(ctx, a, inplace);
    store(result, fun, n_tasks, userdata);
    set_op(result, Op::MAP_CUSTOM2, &[a, b]);
    result
}

pub fn map_custom2(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    fun: Option<Custom2Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    map_custom2_impl(ctx, a, b, fun, n_tasks, userdata, false)
}

pub fn map_custom2_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    fun: Option<Custom2Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    map_custom2_impl(ctx, a, b, fun, n_tasks, userdata, true)
}

#[allow(clippy::too_many_arguments)]
fn map_custom3_impl(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: TensorPtr,
    fun: Option<Custom3Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
    inplace: bool,
) -> TensorPtr {
    check_n_tasks(n_tasks);
    let result = view_or_dup(ctx, a, inplace);
    store(result, fun, n_tasks, userdata);
    set_op(result, Op::MAP_CUSTOM3, &[a, b, c]);
    result
}

pub fn map_custom3(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: TensorPtr,
    fun: Option<Custom3Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    map_custom3_impl(ctx, a, b, c, fun, n_tasks, userdata, false)
}

pub fn map_custom3_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    b: TensorPtr,
    c: TensorPtr,
    fun: Option<Custom3Fn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    map_custom3_impl(ctx, a, b, c, fun, n_tasks, userdata, true)
}

/// A new `ne`-shaped tensor of `type_` computed by `fun` from `args` (null entries stay null
/// source slots, as in C). `n_tasks` is stored unchecked, as the reference does.
pub fn custom_4d(
    ctx: &mut Context,
    type_: Type,
    ne: [i64; 4],
    args: &[Option<TensorPtr>],
    fun: Option<CustomFn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    crate::ggml_assert!(args.len() < MAX_SRC, "{} custom op arguments, at most {}", args.len(), MAX_SRC - 1);
    let result = ctx.new_tensor(type_, &ne);
    store(result, fun, n_tasks, userdata);
    let r = result.get_mut();
    r.op = Op::CUSTOM;
    for (slot, arg) in r.src.iter_mut().zip(args) {
        *slot = arg.map_or(std::ptr::null_mut(), TensorPtr::as_ptr);
    }
    result
}

/// A custom op that writes into `a` itself (a view of it); `args` follow `a` in `src[]`.
pub fn custom_inplace(
    ctx: &mut Context,
    a: TensorPtr,
    args: &[Option<TensorPtr>],
    fun: Option<CustomFn>,
    n_tasks: c_int,
    userdata: *mut c_void,
) -> TensorPtr {
    crate::ggml_assert!(args.len() < MAX_SRC - 1, "{} custom op arguments, at most {}", args.len(), MAX_SRC - 2);
    let result = super::view_tensor(ctx, a);
    store(result, fun, n_tasks, userdata);
    let r = result.get_mut();
    r.op = Op::CUSTOM;
    r.src[0] = a.as_ptr();
    for (slot, arg) in r.src[1..].iter_mut().zip(args) {
        *slot = arg.map_or(std::ptr::null_mut(), TensorPtr::as_ptr);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::InitParams;

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 16, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    unsafe extern "C" fn one(_: *mut Tensor, _: *const Tensor, _: c_int, _: c_int, _: *mut c_void) {}
    unsafe extern "C" fn any(_: *mut Tensor, _: c_int, _: c_int, _: *mut c_void) {}

    #[test]
    fn map_custom1_stores_the_c_struct() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4, 2]);
        let user = 0x1234usize as *mut c_void;
        let r = map_custom1(&mut c, a, Some(one), 3, user);
        assert_eq!(r.op, Op::MAP_CUSTOM1);
        assert_eq!(r.src(0), Some(a));
        assert_eq!(r.ne, a.ne);
        assert!(!r.is_view());
        // SAFETY: reading the 64 plain bytes of op_params.
        let bytes: [u8; 64] = unsafe { std::mem::transmute(r.op_params) };
        assert_eq!(usize::from_ne_bytes(bytes[0..8].try_into().unwrap()), one as *const () as usize);
        assert_eq!(i32::from_ne_bytes(bytes[8..12].try_into().unwrap()), 3);
        assert_eq!(&bytes[12..16], &[0; 4]);
        assert_eq!(usize::from_ne_bytes(bytes[16..24].try_into().unwrap()), 0x1234);
        let back = MapCustom1OpParams::from_op_params(&r);
        assert_eq!(back.fun.map(|f| f as usize), Some(one as *const () as usize));
        assert_eq!(back.n_tasks, 3);
        assert_eq!(back.userdata, user);

        let v = map_custom1_inplace(&mut c, a, None, N_TASKS_MAX, std::ptr::null_mut());
        assert_eq!(v.view_source(), Some(a));
        assert_eq!(v.op_params[0..6], [0, 0, -1, 0, 0, 0]);
    }

    #[test]
    fn map_custom3_orders_sources() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4]);
        let b = c.new_tensor(Type::F16, &[5]);
        let d = c.new_tensor(Type::I32, &[6]);
        let r = map_custom3(&mut c, a, b, d, None, 1, std::ptr::null_mut());
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(a), Some(b), Some(d)));
        assert_eq!(r.op, Op::MAP_CUSTOM3);
        let r2 = map_custom2_inplace(&mut c, a, b, None, 2, std::ptr::null_mut());
        assert_eq!((r2.op, r2.src(1), r2.view_source()), (Op::MAP_CUSTOM2, Some(b), Some(a)));
    }

    #[test]
    fn custom_ops_take_argument_lists() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4]);
        let b = c.new_tensor(Type::F32, &[3]);
        let r =
            custom_4d(&mut c, Type::F16, [1, 2, 3, 4], &[Some(a), None, Some(b)], Some(any), 7, std::ptr::null_mut());
        assert_eq!(r.op, Op::CUSTOM);
        assert_eq!(r.ne, [1, 2, 3, 4]);
        assert_eq!(r.type_, Type::F16);
        assert_eq!((r.src(0), r.src(1), r.src(2)), (Some(a), None, Some(b)));
        assert_eq!(CustomOpParamsAny::from_op_params(&r).n_tasks, 7);

        let r = custom_inplace(&mut c, a, &[Some(b)], Some(any), 1, std::ptr::null_mut());
        assert_eq!((r.src(0), r.src(1), r.view_source()), (Some(a), Some(b), Some(a)));
        assert_eq!(r.name(), " (view)");
    }
}
