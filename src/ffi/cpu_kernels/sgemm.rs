//! `llamafile_sgemm` (the reference's `llamafile/sgemm.h`): the matrix product ggml-cpu's
//! MUL_MAT tries first, `C[ldc·j + i] = A_i · B_j` for the `m` rows of `A` and the `n` rows of
//! `B`, each `k` units long (values for the float types, blocks for the quantized ones) and
//! `lda`, `ldb`, `ldc` units apart. Every member of the team calls it with its place in the
//! team (`params->ith` of `params->nth`) and computes its share of `C`; it returns false,
//! computing nothing, for the products it does not take, which the caller then computes
//! another way.
//!
//! It takes what the reference's x86 build takes: `C` in F32, at least two rows of `B`, and
//! - F32·F32, F16·F16 or BF16·BF16 when `m` is a multiple of 4 and `k` of the build's vector
//!   width (8 values with AVX2, 16 with AVX-512, 32 for BF16 with AVX512-BF16; here, the
//!   processor's);
//! - Q8_0, Q4_0, Q5_0 or IQ4_NL rows of `A` with Q8_0 rows of `B`, of any shape.
//!
//! The products are our dot kernels' tiles: for the quantized types each value is the one
//! `ggml_vec_dot_*` of the two rows gives; the float tiles sum in an order of their own. As in the reference, the float products end with the team at its barrier
//! (so `C` is whole when any member returns); the quantized ones do not meet.

use std::ffi::{c_int, c_void};

use super::params::{CComputeParams, with_team};
use crate::core::types::Type;
use crate::cpu::features::features;
use crate::cpu::kernels::dot::{DotKernel, MAX_PANEL_ROWS};
use crate::cpu::threadpool::Team;

/// The values a float product's `k` must be a multiple of: the reference build's vector width
/// for `ty` on this processor.
fn float_lanes(ty: Type) -> i64 {
    let f = features();
    match ty {
        Type::BF16 if f.avx512bf16 => 32,
        _ if f.has_avx512() => 16,
        _ => 8,
    }
}

/// The dot kernel of the product, if this is one `llamafile_sgemm` takes.
fn accepted(m: i64, n: i64, k: i64, a: Type, b: Type, c: Type) -> Option<DotKernel> {
    // (the reference leaves matrix-vector products, generation's, to the dot products)
    if n < 2 || c != Type::F32 {
        return None;
    }
    let takes = match a {
        Type::F32 | Type::F16 | Type::BF16 => b == a && m % 4 == 0 && k % float_lanes(a) == 0,
        Type::Q8_0 | Type::Q4_0 | Type::Q5_0 | Type::IQ4_NL => b == Type::Q8_0,
        _ => false,
    };
    takes.then(|| DotKernel::for_type(a)).flatten().filter(|kernel| kernel.vec_dot_type == b)
}

/// One product's operands: rows of bytes and where results go.
struct Operands {
    kernel: DotKernel,
    m: usize,
    n: usize,
    /// Values per row.
    values: usize,
    a: *const u8,
    a_stride: usize,
    b: *const u8,
    b_stride: usize,
    c: *mut f32,
    ldc: usize,
}

impl Operands {
    /// This member's share of `C`: tiles of up to [`MAX_PANEL_ROWS`] rows of `A` by the
    /// kernel's columns of `B`, dealt out in equal runs.
    ///
    /// # Safety
    /// The rows and `C` are as `llamafile_sgemm`'s contract says; no other member writes
    /// this member's tiles.
    unsafe fn compute_share(&self, team: &Team) {
        let (rm, rn) = (MAX_PANEL_ROWS, self.kernel.cols());
        let (row_tiles, col_tiles) = (self.m.div_ceil(rm), self.n.div_ceil(rn));
        let tiles = row_tiles * col_tiles;
        let duty = tiles.div_ceil(team.nth());
        let (a_len, b_len) =
            (self.kernel.type_.row_size(self.values as i64), self.kernel.vec_dot_type.row_size(self.values as i64));
        let mut out = [0.0f32; MAX_PANEL_ROWS * crate::cpu::kernels::dot::MAX_WIDE_COLS];
        for tile in (team.ith() * duty)..((team.ith() + 1) * duty).min(tiles) {
            let (i0, j0) = ((tile % row_tiles) * rm, (tile / row_tiles) * rn);
            let (rows, cols) = (rm.min(self.m - i0), rn.min(self.n - j0));
            // SAFETY: rows i0..i0 + rows of A and j0..j0 + cols of B exist, each the length
            // of `values` values (the caller's contract).
            let xs: [&[u8]; MAX_PANEL_ROWS] = std::array::from_fn(|r| unsafe {
                std::slice::from_raw_parts(self.a.add((i0 + r.min(rows - 1)) * self.a_stride), a_len)
            });
            // SAFETY: as above.
            let ys: [&[u8]; crate::cpu::kernels::dot::MAX_WIDE_COLS] = std::array::from_fn(|c| unsafe {
                std::slice::from_raw_parts(self.b.add((j0 + c.min(cols - 1)) * self.b_stride), b_len)
            });
            self.kernel.tile(self.values, &xs[..rows], &ys[..cols], &mut out, true);
            for r in 0..rows {
                for c in 0..cols {
                    // SAFETY: C holds column j0 + c at ldc·(j0 + c), with room for m rows; this
                    // tile is this member's alone.
                    unsafe { *self.c.add(self.ldc * (j0 + c) + i0 + r) = out[r * cols + c] };
                }
            }
        }
    }
}

/// `bool llamafile_sgemm(params, m, n, k, A, lda, B, ldb, C, ldc, Atype, Btype, Ctype)`.
///
/// The C contract: `params` describes this thread's place in its team (see
/// [`with_team`]); `A` holds `m` rows and `B` `n` rows of `k` units `lda`/`ldb` units apart,
/// and `C` room for `n` columns of `m` floats `ldc` apart.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn llamafile_sgemm(
    params: *const CComputeParams,
    m: i64,
    n: i64,
    k: i64,
    a: *const c_void,
    lda: i64,
    b: *const c_void,
    ldb: i64,
    c: *mut c_void,
    ldc: i64,
    a_type: c_int,
    b_type: c_int,
    c_type: c_int,
) -> bool {
    const EXPORT: &str = "llamafile_sgemm";
    // SAFETY: the C contract: NULL or valid compute params.
    let Some(params) = (unsafe { params.as_ref() }) else { crate::ggml_abort!("{}: NULL compute params", EXPORT) };
    if m < 0 || n < 0 || k < 0 || lda < k || ldb < k || ldc < m {
        crate::ggml_abort!("{}: a {}x{}x{} product with strides {}, {}, {}", EXPORT, m, n, k, lda, ldb, ldc);
    }
    let (a_type, b_type, c_type) = (Type(a_type), Type(b_type), Type(c_type));
    if ![a_type, b_type, c_type].iter().all(|t| t.is_valid()) {
        return false;
    }
    let Some(kernel) = accepted(m, n, k, a_type, b_type, c_type) else {
        return false;
    };
    if m > 0 && (a.is_null() || b.is_null() || c.is_null()) {
        crate::ggml_abort!("{}: NULL matrix", EXPORT);
    }
    let operands = Operands {
        kernel,
        m: m as usize,
        n: n as usize,
        values: (k * a_type.blck_size()) as usize,
        a: a.cast(),
        a_stride: lda as usize * a_type.type_size(),
        b: b.cast(),
        b_stride: ldb as usize * b_type.type_size(),
        c: c.cast(),
        ldc: ldc as usize,
    };
    let float = !a_type.is_quantized();
    // SAFETY: the C contract (above and `with_team`'s); members' tiles are disjoint.
    unsafe {
        with_team(params, EXPORT, |team| {
            operands.compute_share(team);
            if float {
                team.barrier();
            }
        })
    };
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::threadpool_params::ThreadpoolParams;
    use crate::cpu::threadpool::Threadpool;
    use crate::ffi::cpu_kernels::type_traits::type_traits_cpu;

    fn params(ith: c_int, nth: c_int, pool: Option<&Threadpool>) -> CComputeParams {
        CComputeParams {
            ith,
            nth,
            wsize: 0,
            wdata: std::ptr::null_mut(),
            threadpool: pool.map_or(std::ptr::null_mut(), |p| std::ptr::from_ref(p).cast_mut()),
            use_ref: false,
        }
    }

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len).map(|i| (((i * 7919 + seed * 104729) % 211) as f32 - 105.0) / 97.0).collect()
    }

    /// Rows converted with the CPU traits' `from_float` of `ty`, each `stride` bytes apart.
    fn convert(ty: Type, x: &[f32], rows: usize, k: usize, stride: usize) -> Vec<u8> {
        let mut out = vec![0u8; rows * stride];
        for r in 0..rows {
            // SAFETY: k floats in, room for one row of `ty` out.
            unsafe {
                (type_traits_cpu(ty).from_float.unwrap())(
                    x[r * k..].as_ptr(),
                    out[r * stride..].as_mut_ptr().cast(),
                    k as i64,
                )
            };
        }
        out
    }

    /// `llamafile_sgemm` of `a_type` against its activation type, `m`×`n`×`k` values with
    /// padded strides, on each of `nth` members (the pool's, or a lone member's), against the
    /// rows' own dot products.
    fn check(a_type: Type, m: usize, n: usize, k: usize, nth: usize) {
        let b_type = type_traits_cpu(a_type).vec_dot_type;
        let blck = a_type.blck_size() as usize;
        let (lda, ldb, ldc) = (k / blck + 2, k / blck + 1, m + 3);
        let (sa, sb) = (lda * a_type.type_size(), ldb * b_type.type_size());
        let qa = convert(a_type, &values(m * k, 1), m, k, sa);
        let qb = convert(b_type, &values(n * k, 2), n, k, sb);
        let mut c = vec![f32::NAN; n * ldc];
        let pool = Threadpool::new(&ThreadpoolParams::new(nth as c_int));
        let cp = c.as_mut_ptr() as usize;
        std::thread::scope(|s| {
            for ith in 0..nth {
                let (qa, qb, pool) = (&qa, &qb, &pool);
                s.spawn(move || {
                    let p = params(ith as c_int, nth as c_int, (nth > 1).then_some(pool));
                    let c = cp as *mut c_void;
                    let (kb, tys) = ((k / blck) as i64, (a_type.0, b_type.0, Type::F32.0));
                    let (la, lb, lc) = (lda as i64, ldb as i64, ldc as i64);
                    let ok = llamafile_sgemm(
                        &p,
                        m as i64,
                        n as i64,
                        kb,
                        qa.as_ptr().cast(),
                        la,
                        qb.as_ptr().cast(),
                        lb,
                        c,
                        lc,
                        tys.0,
                        tys.1,
                        tys.2,
                    );
                    assert!(ok, "{} {m}x{n}x{k}", a_type.name());
                });
            }
        });
        let dot = type_traits_cpu(a_type).vec_dot.unwrap();
        for j in 0..n {
            for i in 0..m {
                let mut want = 0.0f32;
                // SAFETY: one row of each, one result.
                unsafe {
                    dot(k as c_int, &mut want, 0, qa[i * sa..].as_ptr().cast(), 0, qb[j * sb..].as_ptr().cast(), 0, 1)
                };
                // (the quantized tiles sum as the dot products do; the float ones in their own
                // order)
                let tol = if a_type.is_quantized() { 0.0 } else { 1e-5 * want.abs().max(1.0) };
                assert!(
                    (c[ldc * j + i] - want).abs() <= tol,
                    "{} C[{j}][{i}]: {} vs {want}",
                    a_type.name(),
                    c[ldc * j + i]
                );
            }
            assert!(c[ldc * j + m..ldc * (j + 1)].iter().all(|v| v.is_nan()), "padding written");
        }
    }

    #[test]
    fn products_match_the_dot_products() {
        for nth in [1, 2] {
            check(Type::F32, 20, 7, 64, nth);
            check(Type::F16, 36, 3, 32, nth);
            check(Type::BF16, 4, 2, 64, nth);
            check(Type::Q8_0, 19, 5, 96, nth);
            check(Type::Q4_0, 3, 9, 64, nth);
            check(Type::Q5_0, 17, 2, 32, nth);
            check(Type::IQ4_NL, 5, 4, 128, nth);
        }
    }

    #[test]
    fn f32_against_the_naive_product() {
        let (m, n, k) = (8, 6, 32);
        let (a, b) = (values(m * k, 3), values(n * k, 4));
        let mut c = vec![0.0f32; m * n];
        let p = params(0, 1, None);
        let (mi, ni, ki) = (m as i64, n as i64, k as i64);
        let f = Type::F32.0;
        assert!(llamafile_sgemm(
            &p,
            mi,
            ni,
            ki,
            a.as_ptr().cast(),
            ki,
            b.as_ptr().cast(),
            ki,
            c.as_mut_ptr().cast(),
            mi,
            f,
            f,
            f
        ));
        for j in 0..n {
            for i in 0..m {
                let want: f32 = (0..k).map(|l| a[i * k + l] * b[j * k + l]).sum();
                assert!((c[m * j + i] - want).abs() < 1e-4 * want.abs().max(1.0), "C[{j}][{i}]");
            }
        }
    }

    #[test]
    fn declines_what_the_reference_declines() {
        let p = params(0, 1, None);
        let null = std::ptr::null();
        let decline = |m, n, k, a: Type, b: Type, c: Type| {
            !llamafile_sgemm(&p, m, n, k, null, k, null, k, std::ptr::null_mut(), m, a.0, b.0, c.0)
        };
        assert!(decline(8, 1, 64, Type::F32, Type::F32, Type::F32), "one column");
        assert!(decline(8, 4, 64, Type::F32, Type::F32, Type::F16), "F16 results");
        assert!(decline(6, 4, 64, Type::F32, Type::F32, Type::F32), "m not a multiple of 4");
        assert!(decline(8, 4, 12, Type::F32, Type::F32, Type::F32), "k not whole vectors");
        assert!(decline(8, 4, 64, Type::F16, Type::F32, Type::F32), "mixed floats");
        assert!(decline(8, 4, 2, Type::Q4_1, Type::Q8_1, Type::F32), "Q4_1");
        assert!(decline(8, 4, 2, Type::Q4_0, Type::Q8_1, Type::F32), "Q4_0 with Q8_1");
        assert!(decline(8, 4, 1, Type::Q4_K, Type::Q8_K, Type::F32), "K-quants");
    }
}
