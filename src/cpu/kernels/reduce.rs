//! Reductions and tilings: `sum`, `sum_rows`, `mean`, `argmax`, `count_equal`, `cumsum`,
//! `repeat`, `repeat_back` and `concat`.
//!
//! Sums of `f32` accumulate in `f64` as the reference's do (`ggml_float`); sums of F16 and
//! BF16 in `f32`. Orders of summation follow the reference so that results agree bit for bit.

use super::copy::{Elem, F16, addr, extents, nrows, row_addr, row_coords, split, src};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::quants::half::Bf16;

/// Reads element `i` of a row at byte stride `s`.
///
/// # Safety
/// The row holds more than `i` elements of type `T` at that stride.
unsafe fn elem<T: Elem>(row: *const u8, i: usize, s: usize) -> f32 {
    // SAFETY: the caller's contract.
    unsafe { row.add(i * s).cast::<T>().read_unaligned().to_f32() }
}

/// The sum of an `f32` row, accumulated in `f64`.
///
/// # Safety
/// `row` holds `n` floats at byte stride `s`.
unsafe fn row_sum_f64(row: *const u8, n: usize, s: usize) -> f64 {
    let mut sum = 0.0f64;
    for i in 0..n {
        // SAFETY: i < n (caller's contract).
        sum += f64::from(unsafe { elem::<f32>(row, i, s) });
    }
    sum
}

/// The sum of a 16-bit float row, accumulated in `f32`.
///
/// # Safety
/// `row` holds `n` elements of `T` at byte stride `s`.
unsafe fn row_sum_f32<T: Elem>(row: *const u8, n: usize, s: usize) -> f32 {
    let mut sum = 0.0f32;
    for i in 0..n {
        // SAFETY: i < n (caller's contract).
        sum += unsafe { elem::<T>(row, i, s) };
    }
    sum
}

// ---- sum, sum_rows, mean ----

/// Whether [`sum`] covers `node`.
pub fn sum_supports(node: &Tensor) -> bool {
    node.source(0).is_some_and(|a| matches!(a.type_, Type::F32 | Type::F16 | Type::BF16) && node.type_ == a.type_)
}

/// `GGML_OP_SUM`: the sum of all elements, as a scalar of the source's type (thread 0 only).
pub fn sum(params: &ComputeParams, dst: TensorPtr) {
    if params.ith != 0 {
        return;
    }
    let a = src(dst, 0);
    crate::ggml_assert!(sum_supports(&dst), "sum: unsupported type {}", a.type_.name());
    let ne = extents(&a);
    let s = a.nb[0];
    let rows = (0..nrows(&a)).map(|ir| row_addr(&a, row_coords(ir, ne)).cast_const());
    // SAFETY: each row holds ne0 elements of the source's type; `dst` is one element of it.
    unsafe {
        match a.type_ {
            Type::F32 => {
                let total: f64 = rows.map(|r| row_sum_f64(r, ne[0], s)).sum();
                dst.data.cast::<f32>().write_unaligned(total as f32);
            }
            Type::F16 => {
                let total = rows.fold(0.0f32, |acc, r| acc + row_sum_f32::<F16>(r, ne[0], s));
                dst.data.cast::<F16>().write_unaligned(F16::from_f32(total));
            }
            _ => {
                let total = rows.fold(0.0f32, |acc, r| acc + row_sum_f32::<Bf16>(r, ne[0], s));
                dst.data.cast::<Bf16>().write_unaligned(Bf16::from_f32(total));
            }
        }
    }
}

/// Whether [`sum_rows`] and [`mean`] cover `node`.
pub fn sum_rows_supports(node: &Tensor) -> bool {
    node.source(0).is_some_and(|a| {
        a.type_ == Type::F32 && node.type_ == Type::F32 && node.ne[0] == 1 && (1..4).all(|d| node.ne[d] == a.ne[d])
    })
}

/// `GGML_OP_SUM_ROWS`: each row's sum.
pub fn sum_rows(params: &ComputeParams, dst: TensorPtr) {
    row_sums(params, dst, false);
}

/// `GGML_OP_MEAN`: each row's mean.
pub fn mean(params: &ComputeParams, dst: TensorPtr) {
    row_sums(params, dst, true);
}

fn row_sums(params: &ComputeParams, dst: TensorPtr, mean: bool) {
    let a = src(dst, 0);
    crate::ggml_assert!(sum_rows_supports(&dst), "{}: needs f32 rows and a column result", dst.op.name());
    let ne = extents(&a);
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        // SAFETY: row `r` of `a` holds ne0 floats; element 0 of row `r` of `dst` is one float;
        // rows are split between threads.
        unsafe {
            let mut v = row_sum_f64(row_addr(&a, r), ne[0], a.nb[0]) as f32;
            if mean {
                v /= ne[0] as f32;
            }
            row_addr(&dst, r).cast::<f32>().write_unaligned(v);
        }
    }
}

// ---- argmax, count_equal ----

/// Whether [`argmax`] covers `node`.
pub fn argmax_supports(node: &Tensor) -> bool {
    node.source(0)
        .is_some_and(|a| a.type_ == Type::F32 && node.type_ == Type::I32 && a.is_matrix() && node.ne[0] == a.ne[1])
}

/// `GGML_OP_ARGMAX`: the index of each row's largest element (the last one among equals, as
/// the reference's running comparison gives).
pub fn argmax(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    crate::ggml_assert!(argmax_supports(&dst), "argmax: needs an f32 matrix");
    let ne = extents(&a);
    for i1 in split(ne[1], params.ith, params.nth) {
        let row = row_addr(&a, [i1, 0, 0]);
        let mut max = f32::NEG_INFINITY;
        let mut index = 0i32;
        for i in 0..ne[0] {
            // SAFETY: i < ne0 in row i1 of `a`.
            let x = unsafe { elem::<f32>(row, i, a.nb[0]) };
            max = if max > x { max } else { x };
            if max == x {
                index = i as i32;
            }
        }
        // SAFETY: element i1 of the i32 result vector; rows are split between threads.
        unsafe { addr(&dst, [i1, 0, 0, 0]).cast::<i32>().write_unaligned(index) };
    }
}

/// Whether [`count_equal`] covers `node`.
pub fn count_equal_supports(node: &Tensor) -> bool {
    match (node.source(0), node.source(1)) {
        (Some(a), Some(b)) => {
            a.type_ == Type::I32 && b.type_ == Type::I32 && a.same_shape(b) && node.type_ == Type::I64
        }
        _ => false,
    }
}

/// Scratch bytes for a COUNT_EQUAL node: one `i64` per thread.
pub fn count_equal_work_size(_node: &Tensor, n_tasks: usize) -> usize {
    std::mem::size_of::<i64>() * n_tasks
}

/// `GGML_OP_COUNT_EQUAL`: how many elements of the two I32 tensors are equal, as an I64.
/// Threads count their rows, leave the counts in the scratch and thread 0 adds them up.
pub fn count_equal(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let b = src(dst, 1);
    crate::ggml_assert!(count_equal_supports(&dst), "count_equal: needs two i32 tensors of one shape");
    let ne = extents(&a);
    let mut count = 0i64;
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        let (x, y) = (row_addr(&a, r), row_addr(&b, r));
        for i in 0..ne[0] {
            // SAFETY: element i < ne0 of row `r` in both tensors.
            let equal = unsafe {
                x.add(i * a.nb[0]).cast::<i32>().read_unaligned() == y.add(i * b.nb[0]).cast::<i32>().read_unaligned()
            };
            count += i64::from(equal);
        }
    }
    if params.nth == 1 {
        // SAFETY: `dst` is one i64.
        unsafe { dst.data.cast::<i64>().write_unaligned(count) };
        return;
    }
    let slots = params.wdata.cast::<i64>();
    crate::ggml_assert!(
        !slots.is_null() && params.wsize >= std::mem::size_of::<i64>() * params.nth,
        "count_equal: the plan has no scratch for {} threads",
        params.nth
    );
    // SAFETY: the scratch holds `nth` i64s (checked above); slot `ith` is this thread's.
    unsafe { slots.add(params.ith).write_unaligned(count) };
    params.barrier();
    if params.ith == 0 {
        // SAFETY: every thread wrote its slot before the barrier; `dst` is one i64.
        unsafe {
            let total: i64 = (0..params.nth).map(|t| slots.add(t).read_unaligned()).sum();
            dst.data.cast::<i64>().write_unaligned(total);
        }
    }
}

// ---- cumsum ----

/// Whether [`cumsum`] covers `node`.
pub fn cumsum_supports(node: &Tensor) -> bool {
    node.source(0).is_some_and(|a| a.type_ == Type::F32 && node.type_ == Type::F32 && a.same_shape(node))
}

/// `GGML_OP_CUMSUM`: running sums along each row, in `f32`.
pub fn cumsum(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    crate::ggml_assert!(cumsum_supports(&dst), "cumsum: needs f32 tensors of one shape");
    let ne = extents(&a);
    for ir in split(nrows(&a), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        let (x, y) = (row_addr(&a, r), row_addr(&dst, r));
        let mut acc = 0.0f32;
        for i in 0..ne[0] {
            // SAFETY: element i < ne0 of row `r` in both tensors; this thread's rows.
            unsafe {
                let v = x.add(i * a.nb[0]).cast::<f32>().read_unaligned();
                acc = if i == 0 { v } else { acc + v };
                y.add(i * dst.nb[0]).cast::<f32>().write_unaligned(acc);
            }
        }
    }
}

// ---- repeat, repeat_back ----

/// Whether [`repeat`] covers `node`.
pub fn repeat_supports(node: &Tensor) -> bool {
    node.source(0).is_some_and(|a| {
        a.type_ == node.type_ && !a.type_.is_quantized() && a.type_.blck_size() == 1 && a.can_repeat_to(node)
    })
}

/// `GGML_OP_REPEAT`: `src[0]` tiled over `dst`.
pub fn repeat(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    crate::ggml_assert!(repeat_supports(&dst), "repeat: {:?} does not tile {:?}", a.ne, dst.ne);
    let unit = a.type_.type_size();
    let (ne_a, ne) = (extents(&a), extents(&dst));
    for ir in split(nrows(&dst), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        let from = row_addr(&a, [r[0] % ne_a[1], r[1] % ne_a[2], r[2] % ne_a[3]]);
        let to = row_addr(&dst, r);
        for i0 in 0..ne[0] {
            // `copy`, not `copy_nonoverlapping`: a graph (an RPC client's, say) may place `dst`
            // over `a`, even element on element, and memory that overlaps must still be
            // copied, not be undefined behaviour.
            // SAFETY: element i0 < ne0 of this thread's row of `dst` and element i0 % ne00
            // of the matching row of `a`.
            unsafe { std::ptr::copy(from.add((i0 % ne_a[0]) * a.nb[0]), to.add(i0 * dst.nb[0]), unit) };
        }
    }
}

/// Whether [`repeat_back`] covers `node`.
pub fn repeat_back_supports(node: &Tensor) -> bool {
    node.source(0).is_some_and(|a| a.type_ == Type::F32 && node.type_ == Type::F32 && node.can_repeat_to(a))
}

/// `GGML_OP_REPEAT_BACK`: the tiles of `src[0]` summed into `dst` (the gradient of repeat),
/// tile by tile in the reference's order.
pub fn repeat_back(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    crate::ggml_assert!(repeat_back_supports(&dst), "repeat_back: {:?} is not tiled by {:?}", a.ne, dst.ne);
    let (ne_a, ne) = (extents(&a), extents(&dst));
    let reps = [ne_a[0] / ne[0], ne_a[1] / ne[1], ne_a[2] / ne[2], ne_a[3] / ne[3]];
    for ir in split(nrows(&dst), params.ith, params.nth) {
        let [k1, k2, k3] = row_coords(ir, ne);
        for k0 in 0..ne[0] {
            let mut acc = 0.0f32;
            for i3 in 0..reps[3] {
                for i2 in 0..reps[2] {
                    for i1 in 0..reps[1] {
                        for i0 in 0..reps[0] {
                            let at = [i0 * ne[0] + k0, i1 * ne[1] + k1, i2 * ne[2] + k2, i3 * ne[3] + k3];
                            // SAFETY: in-bounds coordinates of `a` (each below the repeats
                            // times the extents of `dst`).
                            acc += unsafe { addr(&a, at).cast::<f32>().read_unaligned() };
                        }
                    }
                }
            }
            // SAFETY: an element of this thread's row of `dst`.
            unsafe { addr(&dst, [k0, k1, k2, k3]).cast::<f32>().write_unaligned(acc) };
        }
    }
}

// ---- concat ----

/// Whether [`concat()`] covers `node`.
pub fn concat_supports(node: &Tensor) -> bool {
    let dim = node.op_params[0];
    match (node.source(0), node.source(1)) {
        (Some(a), Some(b)) => {
            let ty = a.type_;
            (0..4).contains(&dim)
                && b.type_ == ty
                && node.type_ == ty
                && ty.is_valid()
                && ty.blck_size() > 0
                && (!ty.is_quantized()
                    || (a.nb[0] == ty.type_size()
                        && b.nb[0] == ty.type_size()
                        && node.nb[0] == ty.type_size()
                        && (dim != 0 || a.ne[0] % ty.blck_size() == 0)))
        }
        _ => false,
    }
}

/// `GGML_OP_CONCAT`: `src[0]` and `src[1]` joined along dimension `op_params[0]`.
pub fn concat(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let b = src(dst, 1);
    crate::ggml_assert!(concat_supports(&dst), "concat: unsupported tensors");
    let dim = dst.op_params[0] as usize;
    let ty = a.type_;
    let unit = ty.type_size();
    let blck = ty.blck_size() as usize;
    let (ne_a, ne_b, ne) = (extents(&a), extents(&b), extents(&dst));
    for ir in split(nrows(&dst), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        let to = row_addr(&dst, r);
        if dim == 0 {
            // SAFETY: row `r` exists in `a`, `b` and `dst` (equal extents outside dim 0); the
            // pieces are ne00 and ne10 elements of the rows; this thread's rows of `dst`.
            unsafe {
                copy_units(to, dst.nb[0], row_addr(&a, r), a.nb[0], ne_a[0] / blck, unit);
                copy_units(
                    to.add(ne_a[0] / blck * dst.nb[0]),
                    dst.nb[0],
                    row_addr(&b, r),
                    b.nb[0],
                    ne_b[0] / blck,
                    unit,
                );
            }
            continue;
        }
        let c = [r[0], r[1], r[2]];
        let k = dim - 1;
        let (from, nb0) = if c[k] < ne_a[dim] {
            (row_addr(&a, c), a.nb[0])
        } else {
            let mut cb = c;
            cb[k] -= ne_a[dim];
            (row_addr(&b, cb), b.nb[0])
        };
        // SAFETY: the source row exists (its coordinate is below that source's extent) and
        // has ne0 elements as does this thread's row of `dst`.
        unsafe { copy_units(to, dst.nb[0], from, nb0, ne[0] / blck, unit) };
    }
}

/// Copies `n` units of `unit` bytes between strided rows, which may overlap (as in
/// [`repeat`], a graph may place `dst` over a source).
///
/// # Safety
/// Both rows hold `n` units at their strides.
unsafe fn copy_units(to: *mut u8, sto: usize, from: *const u8, sfrom: usize, n: usize, unit: usize) {
    if sto == unit && sfrom == unit {
        // SAFETY: the caller's contract, for packed rows.
        unsafe { std::ptr::copy(from, to, n * unit) };
        return;
    }
    for i in 0..n {
        // SAFETY: unit i < n of each row.
        unsafe { std::ptr::copy(from.add(i * sfrom), to.add(i * sto), unit) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::{reduce as ops, shape};
    use crate::cpu::kernels::testing::*;

    #[test]
    fn sums_and_means() {
        for_each_team(|nth, use_ref| {
            for ty in [Type::F32, Type::F16, Type::BF16] {
                let mut c = ctx();
                let base = c.new_tensor(ty, &[9, 4, 3]);
                put(base, |i| (noise(i, 1) * 16.0).round() / 8.0);
                let a = shape::permute(&mut c, base, 1, 0, 2, 3);
                let r = ops::sum(&mut c, a);
                assert!(sum_supports(&r));
                run(&mut c, r, sum, nth, 0, use_ref);
                let total: f64 = values(a).iter().sum();
                assert_eq!(values(r)[0], total, "sum {}", ty.name());
            }
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[7, 3, 2]);
            put(a, |i| noise(i, 2));
            let v = values(a);
            let r = ops::sum_rows(&mut c, a);
            assert!(sum_rows_supports(&r));
            run(&mut c, r, sum_rows, nth, 0, use_ref);
            let want: Vec<f64> = v.chunks(7).map(|row| row.iter().sum::<f64>() as f32 as f64).collect();
            assert_close(&values(r), &want, 1e-7, "sum_rows");
            let r = ops::mean(&mut c, a);
            run(&mut c, r, mean, nth, 0, use_ref);
            let want: Vec<f64> = v.chunks(7).map(|row| row.iter().sum::<f64>() / 7.0).collect();
            assert_close(&values(r), &want, 1e-6, "mean");
        });
    }

    #[test]
    fn argmax_count_equal_cumsum() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[6, 4]);
            let data = [
                1.0, 5.0, 2.0, 5.0, 0.0, -1.0, -3.0, -2.0, -9.0, -2.5, -7.0, -8.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0,
                3.0, 2.0, 1.0, 0.0, 9.0,
            ];
            put(a, |i| data[i]);
            let r = ops::argmax(&mut c, a);
            assert!(argmax_supports(&r));
            run(&mut c, r, argmax, nth, 0, use_ref);
            assert_eq!(values(r), [3.0, 1.0, 5.0, 5.0]);

            let x = c.new_tensor(Type::I32, &[10, 3, 2]);
            let y = c.new_tensor(Type::I32, &[10, 3, 2]);
            put(x, |i| (i % 7) as f64);
            put(y, |i| (i % 5) as f64);
            let r = ops::count_equal(&mut c, x, y);
            assert!(count_equal_supports(&r));
            run(&mut c, r, count_equal, nth, count_equal_work_size(&r, nth), use_ref);
            let want = (0..60).filter(|i| i % 7 == i % 5).count() as i64;
            // SAFETY: the result is one i64.
            assert_eq!(unsafe { r.data.cast::<i64>().read() }, want);

            let a = c.new_tensor(Type::F32, &[5, 3]);
            put(a, |i| i as f64 * 0.5);
            let r = ops::cumsum(&mut c, a);
            assert!(cumsum_supports(&r));
            run(&mut c, r, cumsum, nth, 0, use_ref);
            let v = values(a);
            let mut want = Vec::new();
            for row in v.chunks(5) {
                let mut acc = 0.0;
                for x in row {
                    acc += x;
                    want.push(acc);
                }
            }
            assert_close(&values(r), &want, 1e-7, "cumsum");
        });
    }

    #[test]
    fn repeat_and_back() {
        for_each_team(|nth, use_ref| {
            for ty in [Type::F32, Type::F16, Type::BF16, Type::I32] {
                let mut c = ctx();
                let a = c.new_tensor(ty, &[3, 2, 1, 2]);
                put(a, |i| i as f64);
                let b = c.new_tensor(ty, &[6, 4, 2, 2]);
                let r = ops::repeat(&mut c, a, b);
                assert!(repeat_supports(&r));
                run(&mut c, r, repeat, nth, 0, use_ref);
                let got = values(r);
                for (k, &v) in got.iter().enumerate() {
                    let (i0, i1, i3) = (k % 6, k / 6 % 4, k / 48);
                    assert_eq!(v, ((i0 % 3) + 3 * (i1 % 2) + 6 * (i3 % 2)) as f64);
                }
            }
            let mut c = ctx();
            let big = c.new_tensor(Type::F32, &[6, 4, 2, 1]);
            put(big, |i| i as f64);
            let small = c.new_tensor(Type::F32, &[3, 2, 1, 1]);
            let r = ops::repeat_back(&mut c, big, small);
            assert!(repeat_back_supports(&r));
            run(&mut c, r, repeat_back, nth, 0, use_ref);
            let v = values(big);
            let mut want = vec![0.0; 6];
            for (k, x) in v.iter().enumerate() {
                let (i0, i1) = (k % 6, k / 6 % 4);
                want[(i0 % 3) + 3 * (i1 % 2)] += x;
            }
            assert_eq!(values(r), want);
        });
    }

    /// Found by fuzzing the RPC server (fuzz/fuzz_targets/graph.rs): a client's REPEAT whose
    /// destination covers its source copied elements onto themselves with
    /// `copy_nonoverlapping`, undefined behaviour that debug builds abort on.
    #[test]
    fn repeat_over_its_source() {
        let mut c = ctx();
        let a = c.new_tensor(Type::F32, &[4]);
        let shape = c.new_tensor(Type::F32, &[8]);
        let r = ops::repeat(&mut c, a, shape);
        // `a` is the first half of the result: its elements are copied onto themselves
        a.get_mut().data = r.data;
        put(a, |i| i as f64);
        run(&mut c, r, repeat, 1, 0, false);
        assert_eq!(values(r), [0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn concat_along_each_dimension() {
        for_each_team(|nth, use_ref| {
            for ty in [Type::F32, Type::F16, Type::I32] {
                for dim in 0..4 {
                    let mut c = ctx();
                    let mut ne_b = [4i64, 3, 2, 2];
                    ne_b[dim] = 1 + dim as i64;
                    // a permuted view as the first operand
                    let base = c.new_tensor(ty, &[3, 4, 2, 2]);
                    let a = shape::permute(&mut c, base, 1, 0, 2, 3);
                    let b = c.new_tensor(ty, &ne_b);
                    put(a, |i| i as f64);
                    put(b, |i| 1000.0 + i as f64);
                    let r = ops::concat(&mut c, a, b, dim as i32);
                    assert!(concat_supports(&r));
                    run(&mut c, r, concat, nth, 0, use_ref);
                    let (va, vb) = (values(a), values(b));
                    let ne = r.ne.map(|x| x as usize);
                    let flat = |c4: [usize; 4], n: [usize; 4]| c4[0] + n[0] * (c4[1] + n[1] * (c4[2] + n[2] * c4[3]));
                    for (k, &v) in values(r).iter().enumerate() {
                        let c4 =
                            [k % ne[0], k / ne[0] % ne[1], k / (ne[0] * ne[1]) % ne[2], k / (ne[0] * ne[1] * ne[2])];
                        let want = if c4[dim] < [4, 3, 2, 2][dim] {
                            va[flat(c4, [4, 3, 2, 2])]
                        } else {
                            let mut cb = c4;
                            cb[dim] -= [4, 3, 2, 2][dim];
                            vb[flat(cb, ne_b.map(|x| x as usize))]
                        };
                        assert_eq!(v, want, "{} dim {dim}", ty.name());
                    }
                }
            }
        });
    }
}
