//! The two scale searches only the K-quant formats use, in ggml's order of floating-point
//! operations (see `quants::search` for the ones shared with the 32-value formats).

use crate::quants::c_max;
use crate::quants::search::{GROUP_MAX_EPS, nearest_int};

/// Symmetric quantization of `x` to levels `-nmax..nmax-1` by x²-weighted least squares: start
/// from the scale that maps the largest magnitude onto `-nmax`, then move single values to the
/// level that best fits the others (up to five passes, stopping early once nothing moves).
/// Levels are stored offset by `nmax`; returns the fitted scale, `x[i] ≈ scale * (levels[i] -
/// nmax)`. (ggml's `make_q3_quants` with its least-squares refinement on.)
pub fn symmetric_scale_refined(x: &[f32], nmax: i32, levels: &mut [i8]) -> f32 {
    let levels = &mut levels[..x.len()];
    let mut amax = 0.0f32;
    let mut max = 0.0f32;
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        levels.fill(0);
        return 0.0;
    }
    let clamp = |l: i32| l.clamp(-nmax, nmax - 1);
    let iscale = -(nmax as f32) / max;

    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for (l, &v) in levels.iter_mut().zip(x) {
        let q = clamp(nearest_int(iscale * v));
        *l = q as i8;
        let w = v * v;
        sumlx += w * v * q as f32;
        suml2 += w * q as f32 * q as f32;
    }
    for _ in 0..5 {
        let mut changed = false;
        for (l, &v) in levels.iter_mut().zip(x) {
            let w = v * v;
            let current = f32::from(*l);
            let mut slx = sumlx - w * v * current;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * current * current;
                let candidate = clamp(nearest_int(v * sl2 / slx));
                if candidate != i32::from(*l) {
                    slx += w * v * candidate as f32;
                    sl2 += w * candidate as f32 * candidate as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *l = candidate as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for l in levels.iter_mut() {
        *l += nmax as i8;
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// Quantization of non-negative values (sub-block scales or minimums) to levels `0..=nmax`
/// with a zero offset, judged by the weights `w`: nine scales around `max / nmax` are tried,
/// the best refined by moving single values as in [`symmetric_scale_refined`]. Returns the
/// scale, `x[i] ≈ scale * levels[i]`. (ggml's `make_qp_quants`.)
///
/// Levels are bytes as in ggml: a negative input gives a negative level that wraps, and the
/// wrapped byte is what later steps see.
pub fn positive_scale(x: &[f32], nmax: i32, levels: &mut [u8], w: &[f32]) -> f32 {
    let levels = &mut levels[..x.len()];
    let max = x.iter().fold(0.0f32, |m, &v| c_max(m, v));
    if max < GROUP_MAX_EPS {
        levels.fill(0);
        return 0.0;
    }

    let mut iscale = nmax as f32 / max;
    for (l, &v) in levels.iter_mut().zip(x) {
        *l = nearest_int(iscale * v) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0.0f32;
    for (i, (&l, &v)) in levels.iter().zip(x).enumerate() {
        let diff = v - scale * f32::from(l);
        best_mse += w[i] * diff * diff;
    }
    for step in (-4..=4).filter(|&s| s != 0) {
        let iscale_step = (0.1 * step as f32 + nmax as f32) / max;
        let scale_step = 1.0 / iscale_step;
        let mut mse = 0.0f32;
        for (i, &v) in x.iter().enumerate() {
            let l = nearest_int(iscale_step * v).min(nmax);
            let diff = v - scale_step * l as f32;
            mse += w[i] * diff * diff;
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_step;
        }
    }

    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for (i, (l, &v)) in levels.iter_mut().zip(x).enumerate() {
        let q = nearest_int(iscale * v).min(nmax);
        *l = q as u8;
        sumlx += w[i] * v * q as f32;
        suml2 += w[i] * q as f32 * q as f32;
    }
    for _ in 0..5 {
        let mut changed = false;
        for (i, (l, &v)) in levels.iter_mut().zip(x).enumerate() {
            let current = f32::from(*l);
            let mut slx = sumlx - w[i] * v * current;
            let mut sl2 = suml2 - w[i] * current * current;
            if slx > 0.0 && sl2 > 0.0 {
                let candidate = nearest_int(v * sl2 / slx).min(nmax);
                if candidate != i32::from(*l) {
                    slx += w[i] * v * candidate as f32;
                    sl2 += w[i] * candidate as f32 * candidate as f32;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *l = candidate as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refined_symmetric_scale_fits_exact_levels() {
        let x: Vec<f32> = (0..16).map(|i| (i as f32 % 8.0 - 4.0) * 0.5).collect();
        let mut levels = [0i8; 16];
        let scale = symmetric_scale_refined(&x, 4, &mut levels);
        for (&l, &v) in levels.iter().zip(&x) {
            assert!((scale * (l as f32 - 4.0) - v).abs() < 1e-6, "{scale} {l} {v}");
        }
        assert_eq!(symmetric_scale_refined(&[0.0; 16], 4, &mut levels), 0.0);
        assert_eq!(levels, [0; 16]);
    }

    #[test]
    fn positive_scale_fits_multiples() {
        let x: Vec<f32> = (0..8).map(|i| i as f32 * 0.25).collect();
        let w = [1.0f32; 8];
        let mut levels = [0u8; 8];
        let scale = positive_scale(&x, 7, &mut levels, &w);
        for (&l, &v) in levels.iter().zip(&x) {
            assert!((scale * f32::from(l) - v).abs() < 1e-6);
        }
        assert_eq!(positive_scale(&[0.0; 8], 63, &mut levels, &w), 0.0);
        assert_eq!(levels, [0; 8]);
    }
}
