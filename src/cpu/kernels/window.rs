//! Kernels of SAM's windowing and relative positions: `win_part`, `win_unpart`, `get_rel_pos`
//! and `add_rel_pos`.

use super::conv::{at, load, store};
use crate::core::tensor::{Tensor, TensorPtr};
use crate::core::types::Type;
use crate::cpu::compute::ComputeParams;
use crate::cpu::kernels::copy::{split, src};

fn all_f32(node: &Tensor, n_src: usize) -> bool {
    node.type_ == Type::F32 && (0..n_src).all(|i| node.source(i).is_some_and(|s| s.type_ == Type::F32))
}

/// WIN_PART and WIN_UNPART: F32 in and out.
pub fn win_supports(node: &Tensor) -> bool {
    all_f32(node, 1)
}

/// WIN_PART: cuts `[C, W, H]` into `w`×`w` windows `[C, w, w, npx*npy]`, zero past the image.
/// Runs on thread 0.
pub fn win_part(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(win_supports(&dst), "win_part: F32 only");
    if params.ith != 0 {
        return;
    }
    let (npx, npy, w) = (i64::from(dst.op_params[0]), i64::from(dst.op_params[1]), i64::from(dst.op_params[2]));
    for py in 0..npy {
        for px in 0..npx {
            let i3 = py * npx + px;
            for i2 in 0..dst.ne[2] {
                for i1 in 0..dst.ne[1] {
                    let (y, xx) = (py * w + i2, px * w + i1);
                    let inside = y < x.ne[2] && xx < x.ne[1];
                    for i0 in 0..dst.ne[0] {
                        // SAFETY: the source coordinates are checked against x; the output
                        // ones are inside dst; only thread 0 runs.
                        unsafe {
                            let v = if inside { load(&x, at(&x, i0, xx, y, 0)) } else { 0.0 };
                            store(&dst, at(&dst, i0, i1, i2, i3), v);
                        }
                    }
                }
            }
        }
    }
}

/// WIN_UNPART: reassembles `w`×`w` windows into a `[C, W, H]` image (dropping the padding).
/// Runs on thread 0.
pub fn win_unpart(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(win_supports(&dst), "win_unpart: F32 only");
    if params.ith != 0 {
        return;
    }
    let w = i64::from(dst.op_params[0]);
    let px = (w - dst.ne[1] % w) % w;
    let npx = (px + dst.ne[1]) / w;
    for i2 in 0..dst.ne[2] {
        for i1 in 0..dst.ne[1] {
            let window = (i2 / w) * npx + i1 / w;
            for i0 in 0..dst.ne[0] {
                // SAFETY: the window and in-window coordinates are inside x by construction
                // of the windowing; the output is inside dst; only thread 0 runs.
                unsafe { store(&dst, at(&dst, i0, i1, i2, 0), load(&x, at(&x, i0, i1 % w, i2 % w, window))) };
            }
        }
    }
}

/// GET_REL_POS: F16 or BF16 table, F16 out (the 16-bit patterns are copied as they are).
pub fn get_rel_pos_supports(node: &Tensor) -> bool {
    node.type_ == Type::F16 && node.source(0).is_some_and(|s| matches!(s.type_, Type::F16 | Type::BF16))
}

/// GET_REL_POS: `dst[:, i1, i2] = table[:, (kh - 1 - i1) + i2]`. Runs on thread 0.
pub fn get_rel_pos(params: &ComputeParams, dst: TensorPtr) {
    let x = src(dst, 0);
    crate::ggml_assert!(get_rel_pos_supports(&dst), "get_rel_pos: {} is not supported", x.type_.name());
    if params.ith != 0 {
        return;
    }
    let w = dst.ne[1];
    for i2 in 0..dst.ne[2] {
        for i1 in 0..dst.ne[1] {
            let pos = (w - i1 - 1) + i2;
            for i0 in 0..dst.ne[0] {
                // SAFETY: `pos < 2*w - 1 = x.ne[1]` and `i0 < x.ne[0]`; 16-bit elements on both
                // sides; only thread 0 runs.
                unsafe {
                    let v = x.data.cast::<u8>().add(at(&x, i0, pos, 0, 0)).cast::<u16>().read_unaligned();
                    dst.data.cast::<u8>().add(at(&dst, i0, i1, i2, 0)).cast::<u16>().write_unaligned(v);
                }
            }
        }
    }
}

/// ADD_REL_POS: F32 scores and terms, F32 out.
pub fn add_rel_pos_supports(node: &Tensor) -> bool {
    all_f32(node, 3)
}

/// ADD_REL_POS: adds the decomposed relative-position terms to attention scores: for
/// position `p` of `pw`/`ph` (flattened), `ph[p]` goes to the `W` consecutive scores of row
/// `p` and `pw[p]` to `W` scores strided `W` apart. Threads split dimension 3 of `pw`; each
/// first copies its planes of the scores unless the op runs in place.
pub fn add_rel_pos(params: &ComputeParams, dst: TensorPtr) {
    let (a, pw, ph) = (src(dst, 0), src(dst, 1), src(dst, 2));
    crate::ggml_assert!(add_rel_pos_supports(&dst), "add_rel_pos: F32 only");
    crate::ggml_assert!(a.is_contiguous() && dst.is_contiguous() && pw.is_contiguous() && ph.is_contiguous());
    if dst.is_empty() {
        return;
    }
    let inplace = dst.op_params[0] != 0;
    let [ne10, ne11, ne12, ne13] = pw.ne.map(|n| n as usize);
    let plane = ne10 * ne10 * ne11 * ne12;
    crate::ggml_assert!(dst.nelements() as usize == plane * ne13, "add_rel_pos: scores and terms disagree");
    let out = dst.data.cast::<f32>();
    let (w_terms, h_terms) = (pw.data.cast::<f32>().cast_const(), ph.data.cast::<f32>().cast_const());
    for i13 in split(ne13, params.ith, params.nth) {
        if !inplace {
            // SAFETY: plane `i13` lies inside both contiguous tensors of equal size; the
            // planes are this thread's. `copy` tolerates the (impossible here) overlap.
            unsafe { std::ptr::copy(a.data.cast::<f32>().add(i13 * plane), out.add(i13 * plane), plane) };
        }
        for i12 in 0..ne12 {
            for i11 in 0..ne11 {
                let jp1 = ((i13 * ne12 + i12) * ne11 + i11) * ne10;
                for i10 in 0..ne10 {
                    let jp0 = jp1 + i10;
                    let jdh = jp0 * ne10;
                    let jdw = jdh - (ne10 - 1) * i10;
                    // SAFETY: `jp0` indexes pw/ph (same shape); `jdh + j` and `jdw + j*ne10`
                    // stay inside plane `i13` of the scores, which is this thread's.
                    unsafe {
                        let (tw, th) = (*w_terms.add(jp0), *h_terms.add(jp0));
                        for j in 0..ne10 {
                            *out.add(jdh + j) += th;
                            *out.add(jdw + j * ne10) += tw;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ops::window as ops;
    use crate::cpu::kernels::testing::*;

    fn get(v: &[f64], ne: [i64; 4], i: [i64; 4]) -> f64 {
        v[(i[0] + ne[0] * (i[1] + ne[1] * (i[2] + ne[2] * i[3]))) as usize]
    }

    #[test]
    fn windows_round_trip() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let a = c.new_tensor(Type::F32, &[3, 7, 5]);
            put(a, |i| noise(i, 3));
            let x = values(a);
            let p = ops::win_part(&mut c, a, 4);
            run(&mut c, p, win_part, nth, 0, use_ref);
            let pv = values(p);
            // window (1, 1) holds pixels x 4..8, y 4..8: only x 4..7, y 4..5 are inside
            let w = 3; // px 1 + 2 windows per row * py 1
            assert_eq!(get(&pv, p.ne, [2, 0, 0, w]), get(&x, a.ne, [2, 4, 4, 0]));
            assert_eq!(get(&pv, p.ne, [1, 3, 0, w]), 0.0);
            assert_eq!(get(&pv, p.ne, [1, 0, 1, w]), 0.0);
            let u = ops::win_unpart(&mut c, p, 7, 5, 4);
            run(&mut c, u, win_unpart, nth, 0, use_ref);
            assert_close(&values(u), &x, 0.0, "win_unpart");
        });
    }

    #[test]
    fn relative_positions() {
        for_each_team(|nth, use_ref| {
            let mut c = ctx();
            let table = c.new_tensor(Type::F16, &[6, 9]);
            put(table, |i| noise(i, 4));
            let t = values(table);
            let r = ops::get_rel_pos(&mut c, table, 5, 5);
            run(&mut c, r, get_rel_pos, nth, 0, use_ref);
            let mut want = Vec::new();
            for q in 0..5 {
                for k in 0..5 {
                    for i in 0..6 {
                        want.push(t[((4 - k + q) * 6 + i) as usize]);
                    }
                }
            }
            assert_close(&values(r), &want, 0.0, "get_rel_pos");

            for inplace in [false, true] {
                let scores = c.new_tensor(Type::F32, &[9, 6, 2]);
                put(scores, |i| noise(i, 5));
                let s = values(scores);
                let pw = c.new_tensor(Type::F32, &[3, 3, 2, 2]);
                let ph = c.new_tensor(Type::F32, &[3, 3, 2, 2]);
                put(pw, |i| noise(i, 6));
                put(ph, |i| noise(i, 7));
                let (wv, hv) = (values(pw), values(ph));
                let r = if inplace {
                    ops::add_rel_pos_inplace(&mut c, scores, pw, ph)
                } else {
                    ops::add_rel_pos(&mut c, scores, pw, ph)
                };
                run(&mut c, r, add_rel_pos, nth, 0, use_ref);
                // score (kw + 3*kh, q, b) gains pw[kw, q] + ph[kh, q] for q over (3, 2) positions
                let mut want = s.clone();
                for b in 0..2 {
                    for q in 0..6 {
                        for kh in 0..3 {
                            for kw in 0..3 {
                                let i = ((b * 6 + q) * 9 + kh * 3 + kw) as usize;
                                want[i] += wv[((b * 6 + q) * 3 + kw) as usize] + hv[((b * 6 + q) * 3 + kh) as usize];
                            }
                        }
                    }
                }
                assert_close(&values(r), &want, 1e-6, "add_rel_pos");
            }
        });
    }
}
