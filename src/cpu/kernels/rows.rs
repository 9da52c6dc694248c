//! Row gathers and scatters: `get_rows` (from the plain types and the block formats),
//! `get_rows_back` and `set_rows`; and `diag`, which spreads a row over a diagonal.

use super::copy::{
    addr, convert_row, dequantize_row_from, extents, is_block_type, is_dequantizable, is_float, is_plain, nrows,
    quantize_row_into, row_addr, row_coords, row_to_f32, split, src, use_simd,
};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;

/// Whether [`get_rows`] covers `node`.
pub fn get_rows_supports(node: &Tensor) -> bool {
    let (a, ids) = (node.source(0), node.source(1));
    let (Some(a), Some(ids)) = (a, ids) else { return false };
    if ids.type_ != Type::I32 || node.nb[0] != node.type_.type_size() {
        return false;
    }
    match a.type_ {
        Type::F32 | Type::F16 | Type::BF16 => node.type_ == Type::F32 || node.type_ == a.type_,
        Type::I32 => node.type_ == Type::I32,
        t if is_dequantizable(t) => node.type_ == Type::F32 && a.nb[0] == t.type_size(),
        _ => false,
    }
}

/// `GGML_OP_GET_ROWS`: row `[i10, i11, i12]` of `dst` is row `ids[i10, i11, i12]` of matrix
/// `[i11, i12]` of `src[0]`, converted to `dst`'s type.
pub fn get_rows(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    let ids = src(dst, 1);
    crate::ggml_assert!(ids.type_ == Type::I32, "get_rows: indices must be i32, not {}", ids.type_.name());
    let ne_ids = extents(&ids);
    let nc = extents(&a)[0];
    let n_src_rows = a.ne[1];
    let simd = use_simd(params);
    let n = ne_ids[0] * ne_ids[1] * ne_ids[2];
    let (from, to) = (a.type_, dst.type_);
    let mut tmp = if is_dequantizable(from) { vec![0.0f32; nc] } else { Vec::new() };
    for i in split(n, params.ith, params.nth) {
        let (i10, j1, j2) = (i % ne_ids[0], i / ne_ids[0] % ne_ids[1], i / (ne_ids[0] * ne_ids[1]));
        // SAFETY: the index element lies inside `ids`, an i32 tensor.
        let row = unsafe { addr(&ids, [i10, j1, j2, 0]).cast::<i32>().read_unaligned() };
        crate::ggml_assert!(
            row >= 0 && i64::from(row) < n_src_rows,
            "get_rows: index {} outside 0..{}",
            row,
            n_src_rows
        );
        let from_row = row_addr(&a, [row as usize, j1, j2]);
        let to_row = row_addr(&dst, [i10, j1, j2]);
        // SAFETY: `from_row` is a checked row of `a` (nc packed elements, or whole blocks),
        // `to_row` a row of `dst` with nc packed elements; rows are split between threads.
        unsafe {
            if is_dequantizable(from) {
                dequantize_row_from(from, from_row, &mut tmp);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), to_row.cast::<f32>(), nc);
            } else if from == Type::I32 || from == to {
                std::ptr::copy(from_row, to_row, nc * from.type_size());
            } else {
                convert_row(from, to, nc, from_row, to_row, simd);
            }
        }
    }
}

/// Whether [`get_rows_back`] covers `node`.
pub fn get_rows_back_supports(node: &Tensor) -> bool {
    let (g, ids) = (node.source(0), node.source(1));
    match (g, ids) {
        (Some(g), Some(ids)) => {
            matches!(g.type_, Type::F32 | Type::F16)
                && g.nb[0] == g.type_.type_size()
                && ids.type_ == Type::I32
                && node.type_ == Type::F32
                && node.is_contiguous()
        }
        _ => false,
    }
}

/// `GGML_OP_GET_ROWS_BACK`: the gradient of `get_rows`: `dst` is zeroed, then row `i` of
/// `src[0]` is added to row `ids[i]` of `dst`, in index order (thread 0 does it all, as the
/// reference does, so that repeated indices add up in the same order).
pub fn get_rows_back(params: &ComputeParams, dst: TensorPtr) {
    if params.ith != 0 {
        return;
    }
    let g = src(dst, 0);
    let ids = src(dst, 1);
    crate::ggml_assert!(dst.is_contiguous() && dst.type_ == Type::F32, "get_rows_back: result must be contiguous f32");
    crate::ggml_assert!(matches!(g.type_, Type::F32 | Type::F16), "get_rows_back: gradient must be f32 or f16");
    let nc = extents(&g)[0];
    crate::ggml_assert!(extents(&dst)[0] == nc, "get_rows_back: row lengths differ");
    // SAFETY: `dst` is contiguous; this thread alone writes it.
    unsafe { std::ptr::write_bytes(dst.data.cast::<u8>(), 0, dst.nbytes()) };
    let n = usize::try_from(ids.nelements()).unwrap_or(0);
    let mut row = vec![0.0f32; nc];
    for i in 0..n {
        // SAFETY: element `i` of the i32 index vector.
        let r = unsafe { ids.data.cast::<i32>().add(i).read_unaligned() };
        crate::ggml_assert!(r >= 0 && i64::from(r) < dst.ne[1], "get_rows_back: index {} outside 0..{}", r, dst.ne[1]);
        // SAFETY: row `i` of the gradient holds nc packed elements; row `r` of `dst` nc f32s.
        unsafe {
            row_to_f32(g.type_, nc, g.data.cast::<u8>().add(i * g.nb[1]), &mut row, false);
            let out = dst.data.cast::<u8>().add(r as usize * dst.nb[1]).cast::<f32>();
            for (j, v) in row.iter().enumerate() {
                *out.add(j) += *v;
            }
        }
    }
}

/// Whether [`set_rows`] covers `node`.
pub fn set_rows_supports(node: &Tensor) -> bool {
    let (b, ids) = (node.source(0), node.source(1));
    let (Some(b), Some(ids)) = (b, ids) else { return false };
    let to = node.type_;
    matches!(b.type_, Type::F32 | Type::F16)
        && b.nb[0] == b.type_.type_size()
        && matches!(ids.type_, Type::I32 | Type::I64)
        && (is_float(to) || (is_block_type(to) && node.ne[0] % to.blck_size() == 0))
        && (is_block_type(to) || node.nb[0] == to.type_size())
}

/// `GGML_OP_SET_ROWS`: row `i` of matrix `[i2, i3]` of `src[0]` is written, converted, to row
/// `ids[i, i2 % ne11, i3 % ne12]` of the same matrix of `dst` (I32 or I64 indices).
pub fn set_rows(params: &ComputeParams, dst: TensorPtr) {
    let b = src(dst, 0);
    let ids = src(dst, 1);
    let (from, to) = (b.type_, dst.type_);
    crate::ggml_assert!(
        matches!(from, Type::F32 | Type::F16),
        "set_rows: rows must be f32 or f16, not {}",
        from.name()
    );
    let wide = match ids.type_ {
        Type::I64 => true,
        Type::I32 => false,
        t => crate::ggml_abort!("set_rows: indices must be i32 or i64, not {}", t.name()),
    };
    crate::ggml_assert!(is_float(to) || is_block_type(to), "set_rows: cannot write rows of {}", to.name());
    let ne_b = extents(&b);
    let ne_ids = extents(&ids);
    let nc = ne_b[0];
    let simd = use_simd(params);
    let rows = split(ne_b[1], params.ith, params.nth);
    let direct = from == to || (from == Type::F32 && !is_block_type(to));
    let mut tmp = if direct { Vec::new() } else { vec![0.0f32; nc] };
    for i3 in 0..ne_b[3] {
        for i2 in 0..ne_b[2] {
            for i in rows.clone() {
                let at = addr(&ids, [i, i2 % ne_ids[1], i3 % ne_ids[2], 0]);
                // SAFETY: an in-bounds element of the index tensor, of the type matched above.
                let target = unsafe {
                    if wide { at.cast::<i64>().read_unaligned() } else { i64::from(at.cast::<i32>().read_unaligned()) }
                };
                crate::ggml_assert!(
                    target >= 0 && target < dst.ne[1],
                    "set_rows: index {} outside 0..{}",
                    target,
                    dst.ne[1]
                );
                let from_row = row_addr(&b, [i, i2, i3]);
                let to_row = row_addr(&dst, [target as usize, i2, i3]);
                // SAFETY: a source row of nc packed elements and a destination row of nc
                // elements (or whole blocks); threads take distinct source rows, and rows with
                // equal indices race as they do in the reference.
                unsafe {
                    if direct {
                        convert_row(from, to, nc, from_row, to_row, simd);
                    } else {
                        row_to_f32(from, nc, from_row, &mut tmp, simd);
                        if is_block_type(to) {
                            quantize_row_into(to, &tmp, to_row);
                        } else {
                            convert_row(Type::F32, to, nc, tmp.as_ptr().cast(), to_row, simd);
                        }
                    }
                }
            }
        }
    }
}

/// Whether [`diag`] covers `node`.
pub fn diag_supports(node: &Tensor) -> bool {
    let Some(a) = node.source(0) else { return false };
    is_plain(a.type_) && node.type_ == a.type_ && a.ne[1] == 1 && node.ne[0] == a.ne[0] && node.ne[1] == a.ne[0]
}

/// `GGML_OP_DIAG`: each row vector of `src[0]` spread over the diagonal of a square matrix.
pub fn diag(params: &ComputeParams, dst: TensorPtr) {
    let a = src(dst, 0);
    crate::ggml_assert!(a.ne[1] == 1 && dst.ne[0] == a.ne[0] && dst.ne[1] == a.ne[0], "diag: shapes do not match");
    crate::ggml_assert!(a.type_ == dst.type_ && is_plain(a.type_), "diag: unsupported type {}", a.type_.name());
    let unit = a.type_.type_size();
    let ne = extents(&dst);
    for ir in split(nrows(&dst), params.ith, params.nth) {
        let r = row_coords(ir, ne);
        for i0 in 0..ne[0] {
            let to = addr(&dst, [i0, r[0], r[1], r[2]]);
            // SAFETY: in-bounds elements of `dst` (this thread's rows) and of `a`.
            unsafe {
                if i0 == r[0] {
                    std::ptr::copy(addr(&a, [i0, 0, r[1], r[2]]), to, unit);
                } else {
                    std::ptr::write_bytes(to, 0, unit);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::{rows, shape};
    use crate::cpu::kernels::copy::cpy;
    use crate::cpu::kernels::testing::*;

    fn value(i: usize) -> f64 {
        // integers survive every plain type; fractions test the float ones
        (noise(i, 1) * 50.0).round() / 4.0
    }

    fn all_types() -> impl Iterator<Item = Type> {
        (0..Type::COUNT).map(Type).filter(|t| t.is_valid())
    }

    #[test]
    fn get_rows_from_every_supported_type() {
        let plain = [Type::F32, Type::F16, Type::BF16, Type::I32];
        for ty in plain.into_iter().chain(all_types().filter(|&t| is_dequantizable(t))) {
            for_each_team(|nth, use_ref| {
                let mut c = ctx();
                let a = c.new_tensor(ty, &[256, 5, 2]);
                if is_dequantizable(ty) {
                    let x: Vec<f32> = (0..256 * 10).map(|i| value(i) as f32).collect();
                    let imatrix = vec![1.0; 256];
                    // SAFETY: the tensor's bytes, contiguous and allocated by the context.
                    let bytes = unsafe { std::slice::from_raw_parts_mut(a.data.cast::<u8>(), a.nbytes()) };
                    crate::quants::chunk::quantize_chunk(ty, &x, bytes, 256, Some(&imatrix));
                } else {
                    put(a, value);
                }
                let ids = c.new_tensor(Type::I32, &[3, 2]);
                let idx = [4, 0, 4, 1, 3, 2];
                put(ids, |i| idx[i] as f64);
                let r = rows::get_rows(&mut c, a, ids);
                assert!(get_rows_supports(&r));
                run(&mut c, r, get_rows, nth, 0, use_ref);
                let reference = if is_dequantizable(ty) {
                    let back = c.new_tensor(Type::F32, &[256, 5, 2]);
                    let r = shape::cpy(&mut c, a, back);
                    run(&mut c, r, cpy, 1, 0, true);
                    values(back)
                } else {
                    values(a)
                };
                let mut want = Vec::new();
                for j in 0..2 {
                    for k in 0..3 {
                        let row = idx[k + 3 * j];
                        want.extend_from_slice(&reference[(row + 5 * j) * 256..(row + 5 * j + 1) * 256]);
                    }
                }
                assert_eq!(values(r), want, "{}", ty.name());
            });
        }
    }

    #[test]
    fn get_rows_back_accumulates_repeated_rows() {
        for ty in [Type::F32, Type::F16] {
            for_each_team(|nth, use_ref| {
                let mut c = ctx();
                let g = c.new_tensor(ty, &[7, 4]);
                put(g, |i| i as f64);
                let ids = c.new_tensor(Type::I32, &[4]);
                put(ids, |i| [2, 0, 2, 1][i] as f64);
                let shape_of = c.new_tensor(Type::F32, &[7, 3]);
                let r = rows::get_rows_back(&mut c, g, ids, shape_of);
                assert!(get_rows_back_supports(&r));
                run(&mut c, r, get_rows_back, nth, 0, use_ref);
                let mut want = vec![0.0; 21];
                for (i, &row) in [2usize, 0, 2, 1].iter().enumerate() {
                    for j in 0..7 {
                        want[row * 7 + j] += (i * 7 + j) as f64;
                    }
                }
                assert_eq!(values(r), want);
            });
        }
    }

    #[test]
    fn set_rows_with_both_index_types() {
        for from in [Type::F32, Type::F16] {
            for to in [Type::F32, Type::F16, Type::BF16, Type::Q8_0, Type::Q4_1] {
                for idx_ty in [Type::I32, Type::I64] {
                    for_each_team(|nth, use_ref| {
                        let mut c = ctx();
                        let dst = c.new_tensor(to, &[32, 6, 2, 1]);
                        let zeros = c.new_tensor(Type::F32, &[32, 6, 2, 1]);
                        put(zeros, |_| 0.0);
                        let r = shape::cpy(&mut c, zeros, dst);
                        run(&mut c, r, cpy, 1, 0, true);
                        let b = c.new_tensor(from, &[32, 3, 2, 1]);
                        put(b, |i| (i % 13) as f64 / 4.0);
                        let ids = c.new_tensor(idx_ty, &[3, 1]);
                        // broadcast over dimension 2
                        let idx = [5usize, 0, 3];
                        match idx_ty {
                            Type::I32 => put(ids, |i| idx[i] as f64),
                            _ => {
                                for (i, &v) in idx.iter().enumerate() {
                                    // SAFETY: element i of a contiguous i64 vector.
                                    unsafe { *ids.data.cast::<i64>().add(i) = v as i64 };
                                }
                            }
                        }
                        let r = rows::set_rows(&mut c, dst, b, ids);
                        assert!(set_rows_supports(&r));
                        run(&mut c, r, set_rows, nth, 0, use_ref);
                        let out = c.new_tensor(Type::F32, &[32, 6, 2, 1]);
                        let r2 = shape::cpy(&mut c, dst, out);
                        run(&mut c, r2, cpy, 1, 0, true);
                        let got = values(out);
                        let src_vals = values(b);
                        let mut want = vec![0.0; 32 * 12];
                        for m in 0..2 {
                            for (k, &row) in idx.iter().enumerate() {
                                for j in 0..32 {
                                    want[(m * 6 + row) * 32 + j] = src_vals[(m * 3 + k) * 32 + j];
                                }
                            }
                        }
                        let bound = if is_block_type(to) { 0.1 } else { 1e-2 };
                        assert_close(&got, &want, bound, to.name());
                    });
                }
            }
        }
    }

    #[test]
    fn diag_spreads_rows() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[4, 1, 2]);
            put(a, |i| i as f64 + 1.0);
            let r = rows::diag(&mut c, a);
            assert!(diag_supports(&r));
            run(&mut c, r, diag, nth, 0, use_ref);
            let got = values(r);
            for m in 0..2 {
                for i in 0..4 {
                    for j in 0..4 {
                        let want = if i == j { (m * 4 + i + 1) as f64 } else { 0.0 };
                        assert_eq!(got[m * 16 + i * 4 + j], want);
                    }
                }
            }
        });
    }
}
