//! The interleaved products and activation quantizers of the reference's repacked weight
//! layouts (`repack.h`): `ggml_gemv_<w>_<N>x<B>_<a>`, `ggml_gemm_...` and
//! `ggml_quantize_mat_<a>_4x<B>`, over [`crate::cpu::kernels::ggml_repack`].
//!
//! The reference's x86 build exports a name's plain form for every layout and a `_generic`
//! form only where it also has an AVX2 version; both mean the same product, so ours are the
//! same function. The quantizers are the exception: the AVX2 `4x8` ones round half to even
//! and pick scales as the x86 row quantizers do, the generic ones as ggml's C, and each of
//! ours makes the bytes of the one it stands for.
//!
//! The reference checks its arguments with `assert`, compiled out of release builds; we
//! abort on what it would catch (`n` not a whole number of blocks, `nc` not a whole number of
//! interleaved groups, a `gemm` whose `nr` is not a multiple of 4) rather than read past the
//! caller's buffers. Like the reference's, `gemv` ignores `nr` (it computes one row). A
//! `gemm` whose result rows overlap (`bs < nc`) is refused too: the reference would leave
//! whichever of the overlapping results its loop order writes last.

use std::ffi::{c_int, c_void};

use crate::cpu::kernels::dot::VecDot;
use crate::cpu::kernels::ggml_repack::activations::{
    Flavour, Q8_0X4_BYTES, Q8_KX4_BYTES, quantize_mat_q8_0, quantize_mat_q8_k,
};
use crate::cpu::kernels::ggml_repack::k_quants::{Q2K, Q4K, Q5K, Q6K};
use crate::cpu::kernels::ggml_repack::kernel::Rhs;
use crate::cpu::kernels::ggml_repack::legacy::{Iq4Nl, Mxfp4, Q4_0, Q8_0};
use crate::cpu::kernels::ggml_repack::low_bit::{Q1_0x4x4, Q1_0x4x8};
use crate::cpu::kernels::ggml_repack::{Activation, Interleaved, gemm, gemv};
use crate::quants::k_quants::QK_K;

/// The number of blocks in `n` values, and the number of interleaved groups in `nc` rows,
/// aborting where the reference asserts.
fn shape<L: Interleaved>(export: &str, n: c_int, nc: c_int) -> (usize, usize) {
    let qk = L::Block::QK;
    if n < 0 || !(n as usize).is_multiple_of(qk) {
        crate::ggml_abort!("{}: n = {} is not a multiple of the block size {}", export, n, qk);
    }
    if nc < 0 || !(nc as usize).is_multiple_of(L::COLS) {
        crate::ggml_abort!("{}: nc = {} is not a multiple of the {} interleaved rows", export, nc, L::COLS);
    }
    (n as usize / qk, nc as usize / L::COLS)
}

/// A slice of `len` elements at `p`, empty (and unread) when `len` is 0.
///
/// # Safety
/// When `len` is not 0, `p` points to `len` readable elements that nothing writes meanwhile.
unsafe fn view<'a, T>(export: &str, what: &str, p: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        return &[];
    }
    if p.is_null() {
        crate::ggml_abort!("{}: {} is NULL", export, what);
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// # Safety
/// `s` holds `nc` floats, `vx` the `nc / N` groups of `n / QK` interleaved blocks, `vy` one
/// activation row of `n / QK` units, as the reference's `gemv` takes them.
unsafe fn run_gemv<L: Interleaved>(
    export: &str,
    n: c_int,
    s: *mut f32,
    vx: *const c_void,
    vy: *const c_void,
    nc: c_int,
) {
    let (nb, groups) = shape::<L>(export, n, nc);
    let nc = groups * L::COLS;
    // SAFETY: the caller's contract, sizes as the reference reads them.
    unsafe {
        let x = view(export, "vx", vx.cast::<u8>(), groups * nb * L::BYTES);
        let y = view(export, "vy", vy.cast::<Rhs<L>>(), nb);
        if nc == 0 {
            return;
        }
        if s.is_null() {
            crate::ggml_abort!("{}: s is NULL", export);
        }
        gemv::<L>(nb * L::Block::QK, std::slice::from_raw_parts_mut(s, nc), x, y);
    }
}

/// # Safety
/// `s` holds rows of `nc` floats `bs` apart for `nr` rows, `vx` the `nc / N` groups of `n / QK`
/// interleaved blocks, `vy` the `nr / 4` runs of `n / QK` four-row activation units, as the
/// reference's `gemm` takes them.
#[allow(clippy::too_many_arguments)]
unsafe fn run_gemm<L: Interleaved>(
    export: &str,
    n: c_int,
    s: *mut f32,
    bs: usize,
    vx: *const c_void,
    vy: *const c_void,
    nr: c_int,
    nc: c_int,
) where
    Rhs<L>: Activation,
{
    let (nb, groups) = shape::<L>(export, n, nc);
    if nr < 0 || nr % 4 != 0 {
        crate::ggml_abort!("{}: nr = {} is not a multiple of 4", export, nr);
    }
    let (nr, nc) = (nr as usize, groups * L::COLS);
    if nr > 1 && bs < nc {
        crate::ggml_abort!("{}: rows of {} results {} floats apart overlap", export, nc, bs);
    }
    // SAFETY: the caller's contract, sizes as the reference reads and writes them.
    unsafe {
        let x = view(export, "vx", vx.cast::<u8>(), groups * nb * L::BYTES);
        let y = view(export, "vy", vy.cast::<u8>(), nr / 4 * nb * <Rhs<L> as Activation>::X4_BYTES);
        if nr == 0 || nc == 0 {
            return;
        }
        if s.is_null() {
            crate::ggml_abort!("{}: s is NULL", export);
        }
        let s = std::slice::from_raw_parts_mut(s, (nr - 1) * bs + nc);
        gemm::<L>(nb * L::Block::QK, s, bs, x, y, nr, nc);
    }
}

/// Exports the vector product (`ggml_gemv_*`) and the matrix product (`ggml_gemm_*`) of each
/// interleaved layout, both under the reference's names.
macro_rules! product_exports {
    ($($gemv:ident, $gemm:ident => $layout:ty,)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $gemv(
            n: c_int,
            s: *mut f32,
            bs: usize,
            vx: *const c_void,
            vy: *const c_void,
            nr: c_int,
            nc: c_int,
        ) {
            let _ = (bs, nr);
            // SAFETY: this function's C contract is `run_gemv`'s.
            unsafe { run_gemv::<$layout>(stringify!($gemv), n, s, vx, vy, nc) }
        }

        #[unsafe(no_mangle)]
        pub extern "C" fn $gemm(
            n: c_int,
            s: *mut f32,
            bs: usize,
            vx: *const c_void,
            vy: *const c_void,
            nr: c_int,
            nc: c_int,
        ) {
            // SAFETY: this function's C contract is `run_gemm`'s.
            unsafe { run_gemm::<$layout>(stringify!($gemm), n, s, bs, vx, vy, nr, nc) }
        }
    )*};
}

product_exports! {
    ggml_gemv_q4_0_4x4_q8_0, ggml_gemm_q4_0_4x4_q8_0 => Q4_0<4, 4>,
    ggml_gemv_q4_0_4x8_q8_0, ggml_gemm_q4_0_4x8_q8_0 => Q4_0<4, 8>,
    ggml_gemv_q4_0_8x8_q8_0, ggml_gemm_q4_0_8x8_q8_0 => Q4_0<8, 8>,
    ggml_gemv_q4_0_8x8_q8_0_generic, ggml_gemm_q4_0_8x8_q8_0_generic => Q4_0<8, 8>,
    ggml_gemv_q8_0_4x4_q8_0, ggml_gemm_q8_0_4x4_q8_0 => Q8_0<4, 4>,
    ggml_gemv_q8_0_4x8_q8_0, ggml_gemm_q8_0_4x8_q8_0 => Q8_0<4, 8>,
    ggml_gemv_iq4_nl_4x4_q8_0, ggml_gemm_iq4_nl_4x4_q8_0 => Iq4Nl<4, 4>,
    ggml_gemv_iq4_nl_8x8_q8_0, ggml_gemm_iq4_nl_8x8_q8_0 => Iq4Nl<8, 8>,
    ggml_gemv_iq4_nl_8x8_q8_0_generic, ggml_gemm_iq4_nl_8x8_q8_0_generic => Iq4Nl<8, 8>,
    ggml_gemv_mxfp4_4x4_q8_0, ggml_gemm_mxfp4_4x4_q8_0 => Mxfp4<4, 4>,
    ggml_gemv_mxfp4_8x8_q8_0, ggml_gemm_mxfp4_8x8_q8_0 => Mxfp4<8, 8>,
    ggml_gemv_mxfp4_8x8_q8_0_generic, ggml_gemm_mxfp4_8x8_q8_0_generic => Mxfp4<8, 8>,
    ggml_gemv_q1_0_4x4_q8_0, ggml_gemm_q1_0_4x4_q8_0 => Q1_0x4x4,
    ggml_gemv_q1_0_4x8_q8_0, ggml_gemm_q1_0_4x8_q8_0 => Q1_0x4x8,
    ggml_gemv_q2_K_8x8_q8_K, ggml_gemm_q2_K_8x8_q8_K => Q2K<8>,
    ggml_gemv_q2_K_8x8_q8_K_generic, ggml_gemm_q2_K_8x8_q8_K_generic => Q2K<8>,
    ggml_gemv_q4_K_8x4_q8_K, ggml_gemm_q4_K_8x4_q8_K => Q4K<4>,
    ggml_gemv_q4_K_8x8_q8_K, ggml_gemm_q4_K_8x8_q8_K => Q4K<8>,
    ggml_gemv_q4_K_8x8_q8_K_generic, ggml_gemm_q4_K_8x8_q8_K_generic => Q4K<8>,
    ggml_gemv_q5_K_8x4_q8_K, ggml_gemm_q5_K_8x4_q8_K => Q5K<4>,
    ggml_gemv_q5_K_8x8_q8_K, ggml_gemm_q5_K_8x8_q8_K => Q5K<8>,
    ggml_gemv_q6_K_8x4_q8_K, ggml_gemm_q6_K_8x4_q8_K => Q6K<4>,
    ggml_gemv_q6_K_8x8_q8_K, ggml_gemm_q6_K_8x8_q8_K => Q6K<8>,
}

/// # Safety
/// `x` holds four rows of `k` floats back to back, `vy` room for the `k / QK` four-row blocks
/// of `x4_bytes` each.
unsafe fn run_quantize_mat(
    export: &str,
    x: *const f32,
    vy: *mut c_void,
    k: i64,
    qk: usize,
    x4_bytes: usize,
    quantize: impl FnOnce(&[f32], &mut [u8], usize),
) {
    if k < 0 || !(k as usize).is_multiple_of(qk) {
        crate::ggml_abort!("{}: k = {} is not a multiple of the block size {}", export, k, qk);
    }
    let k = k as usize;
    if k == 0 {
        return;
    }
    if vy.is_null() {
        crate::ggml_abort!("{}: vy is NULL", export);
    }
    // SAFETY: the caller's contract.
    unsafe {
        let x = view(export, "x", x, 4 * k);
        let y = std::slice::from_raw_parts_mut(vy.cast::<u8>(), k / qk * x4_bytes);
        quantize(x, y, k);
    }
}

macro_rules! quantize_mat_exports {
    ($($name:ident => $quantize:ident, $qk:expr, $x4_bytes:expr, $chunk:expr, $flavour:expr,)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(x: *const f32, vy: *mut c_void, k: i64) {
            // SAFETY: this function's C contract is `run_quantize_mat`'s.
            unsafe {
                run_quantize_mat(stringify!($name), x, vy, k, $qk, $x4_bytes, |x, y, k| {
                    $quantize(x, y, k, $chunk, $flavour)
                })
            }
        }
    )*};
}

quantize_mat_exports! {
    ggml_quantize_mat_q8_0_4x4 => quantize_mat_q8_0, 32, Q8_0X4_BYTES, 4, Flavour::Generic,
    ggml_quantize_mat_q8_0_4x8 => quantize_mat_q8_0, 32, Q8_0X4_BYTES, 8, Flavour::X86,
    ggml_quantize_mat_q8_0_4x8_generic => quantize_mat_q8_0, 32, Q8_0X4_BYTES, 8, Flavour::Generic,
    ggml_quantize_mat_q8_K_4x4 => quantize_mat_q8_k, QK_K, Q8_KX4_BYTES, 4, Flavour::Generic,
    ggml_quantize_mat_q8_K_4x8 => quantize_mat_q8_k, QK_K, Q8_KX4_BYTES, 8, Flavour::X86,
    ggml_quantize_mat_q8_K_4x8_generic => quantize_mat_q8_k, QK_K, Q8_KX4_BYTES, 8, Flavour::Generic,
}
