//! Scale searches shared by the quantizers: given a group of values (and optionally how much
//! each one matters), find the scale (and minimum) whose rounded levels reproduce the group
//! best. Every floating-point step keeps ggml's order of operations, because the chosen levels
//! and the stored scale must come out bit for bit the same.

/// Groups whose largest magnitude is below this are stored as all zeros.
pub const GROUP_MAX_EPS: f32 = 1e-15;

/// Rounds to the nearest integer, ties to even, the way ggml does it: adding 1.5 * 2^23 makes
/// the float unit do the rounding, and the integer is read back from the low mantissa bits.
/// Exact for |x| < 2^22; outside that range (and for inf/NaN) the result is the same garbage
/// ggml gets, which keeps outputs identical even on degenerate inputs.
#[inline]
pub fn nearest_int(x: f32) -> i32 {
    let shifted = x + 12_582_912.0;
    (shifted.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// C's `(int8_t)(float)` / `(uint8_t)(float)` as x86 compilers emit it: truncate to a 32-bit
/// integer (NaN and out-of-range values become `0x80000000`) and keep the low byte. Only
/// matters for degenerate inputs; in range it is plain truncation toward zero.
#[inline]
pub fn truncate_to_byte(x: f32) -> u8 {
    let wide = if x.is_nan() || x.abs() >= 2_147_483_648.0 { i32::MIN } else { x as i32 };
    wide as u8
}

/// Rounds half away from zero (`roundf`), then converts as [`truncate_to_byte`] does.
#[inline]
pub fn round_to_byte(x: f32) -> u8 {
    truncate_to_byte(x.round())
}

/// How each value of a group is weighted when judging a candidate scale.
#[derive(Clone, Copy)]
pub enum Weighting<'a> {
    /// Caller-supplied importance, one per value.
    Given(&'a [f32]),
    /// x²: big values matter most.
    Square,
    /// Every value the same.
    Flat,
    /// |x|.
    Abs,
    /// sqrt(|x|).
    SqrtAbs,
}

impl Weighting<'_> {
    #[inline]
    fn of(self, i: usize, x: f32) -> f32 {
        match self {
            Weighting::Given(w) => w[i],
            Weighting::Square => x * x,
            Weighting::Flat => 1.0,
            Weighting::Abs => x.abs(),
            Weighting::SqrtAbs => x.abs().sqrt(),
        }
    }
}

/// How hard [`symmetric_scale`] searches.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Take the scale that maps the largest magnitude onto `-nmax`; no refinement.
    MaxOnly,
    /// One weighted least-squares fit at that scale, averaged with it.
    Quick,
    /// The fit, then 18 nearby scales tried, keeping the one with the least weighted error.
    Full,
}

/// Symmetric quantization of `x` to levels `-nmax..nmax-1`, stored in `levels` offset by `nmax`
/// (so `0..2*nmax-1`). Returns the scale: `x[i] ≈ scale * (levels[i] - nmax)`.
/// (ggml's `make_qx_quants`; `Search` and `Weighting` stand in for its `rmse_type`.)
pub fn symmetric_scale(x: &[f32], nmax: i32, levels: &mut [i8], search: Search, weighting: Weighting) -> f32 {
    let n = x.len();
    let levels = &mut levels[..n];
    let mut max = 0.0f32;
    let mut amax = 0.0f32;
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
    let mut iscale = -(nmax as f32) / max;
    if search == Search::MaxOnly {
        for (l, &v) in levels.iter_mut().zip(x) {
            *l = (nmax + clamp(nearest_int(iscale * v))) as i8;
        }
        return 1.0 / iscale;
    }

    // Weighted sums Σ w·x·l and Σ w·l² for the levels at a given inverse scale.
    let sums = |iscale: f32| {
        let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
        for (i, &v) in x.iter().enumerate() {
            let l = clamp(nearest_int(iscale * v)) as f32;
            let w = weighting.of(i, v);
            sumlx += w * v * l;
            suml2 += w * l * l;
        }
        (sumlx, suml2)
    };
    let store = |levels: &mut [i8], iscale: f32| {
        for (l, &v) in levels.iter_mut().zip(x) {
            *l = (nmax + clamp(nearest_int(iscale * v))) as i8;
        }
    };

    store(levels, iscale);
    let (sumlx, suml2) = sums(iscale);
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    if search == Search::Quick {
        return if suml2 > 0.0 { 0.5 * (scale + 1.0 / iscale) } else { 1.0 / iscale };
    }
    let mut best = scale * sumlx;
    for step in (-9..=9).filter(|&s| s != 0) {
        iscale = -(nmax as f32 + 0.1 * step as f32) / max;
        let (sumlx, suml2) = sums(iscale);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            store(levels, iscale);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// Parameters of the scale sweep in [`affine_scale`].
#[derive(Clone, Copy)]
pub struct Sweep {
    /// Offset of the first candidate from `nmax` levels across the range.
    pub rmin: f32,
    /// Step between candidates.
    pub rdelta: f32,
    /// Number of steps (candidates are `0..=nstep`); below 1, no sweep at all.
    pub nstep: i32,
    /// Judge candidates by weighted absolute error instead of squared error.
    pub use_mad: bool,
}

/// Affine quantization of `x` to levels `0..nmax`: `x[i] ≈ scale * levels[i] - offset`, where
/// the returned pair is `(scale, offset)` and `offset >= 0` (the minimum is never above zero).
/// A sweep of candidate scales is each refitted by weighted least squares for both scale and
/// minimum; the best by weighted error wins. `scratch` holds a candidate's levels.
/// (ggml's `make_qkx3_quants`; without weights, x² is the weight.)
pub fn affine_scale(
    x: &[f32],
    nmax: i32,
    weights: Option<&[f32]>,
    levels: &mut [u8],
    scratch: &mut [u8],
    sweep: Sweep,
) -> (f32, f32) {
    let n = x.len();
    let levels = &mut levels[..n];
    let scratch = &mut scratch[..n];
    let weight = |i: usize| weights.map_or(x[i] * x[i], |w| w[i]);

    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weight(0);
    let mut sum_x = sum_w * x[0];
    for (i, &v) in x.iter().enumerate().skip(1) {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
        let w = weight(i);
        sum_w += w;
        sum_x += w * v;
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max <= min {
        levels.fill(0);
        return (0.0, -min);
    }

    let error = |d: f32| if sweep.use_mad { d.abs() } else { d * d };
    let level_at = |iscale: f32, v: f32, min: f32| nearest_int(iscale * (v - min)).clamp(0, nmax);

    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_err = 0.0f32;
    for (i, (l, &v)) in levels.iter_mut().zip(x).enumerate() {
        *l = level_at(iscale, v, min) as u8;
        let diff = scale * f32::from(*l) + min - v;
        best_err += weight(i) * error(diff);
    }
    if sweep.nstep < 1 {
        return (scale, -min);
    }

    // As in ggml, a better candidate's minimum becomes the origin of the following candidates.
    for step in 0..=sweep.nstep {
        iscale = (sweep.rmin + sweep.rdelta * step as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for (i, (l, &v)) in scratch.iter_mut().zip(x).enumerate() {
            let q = level_at(iscale, v, min);
            *l = q as u8;
            let w = weight(i);
            let q = q as f32;
            sum_l += w * q;
            sum_l2 += w * q * q;
            sum_xl += w * q * v;
        }
        let det = sum_w * sum_l2 - sum_l * sum_l;
        if det > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut err = 0.0f32;
            for (i, (&l, &v)) in scratch.iter().zip(x).enumerate() {
                let diff = this_scale * f32::from(l) + this_min - v;
                err += weight(i) * error(diff);
            }
            if err < best_err {
                levels.copy_from_slice(scratch);
                best_err = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_int_rounds_ties_to_even() {
        assert_eq!(nearest_int(0.5), 0);
        assert_eq!(nearest_int(1.5), 2);
        assert_eq!(nearest_int(2.5), 2);
        assert_eq!(nearest_int(-2.5), -2);
        assert_eq!(nearest_int(-2.6), -3);
        assert_eq!(nearest_int(4_194_303.0), 4_194_303);
        assert_eq!(nearest_int(f32::NAN), 0);
    }

    #[test]
    fn byte_conversions_follow_c() {
        assert_eq!(truncate_to_byte(15.9), 15);
        assert_eq!(truncate_to_byte(-1.5), 0xff);
        assert_eq!(truncate_to_byte(f32::NAN), 0);
        assert_eq!(truncate_to_byte(1.0e12), 0);
        assert_eq!(round_to_byte(-2.5), 0xfd);
        assert_eq!(round_to_byte(126.5), 127);
    }

    #[test]
    fn symmetric_scale_reproduces_exact_levels() {
        let x: Vec<f32> = (0..16).map(|i| (i as f32 - 8.0) * 0.25).collect();
        let mut levels = [0i8; 16];
        for search in [Search::MaxOnly, Search::Quick, Search::Full] {
            let scale = symmetric_scale(&x, 8, &mut levels, search, Weighting::Square);
            for (&l, &v) in levels.iter().zip(&x) {
                assert!((scale * (l as f32 - 8.0) - v).abs() < 1e-6);
            }
        }
        assert_eq!(symmetric_scale(&[0.0; 4], 8, &mut levels, Search::Full, Weighting::Flat), 0.0);
        assert_eq!(&levels[..4], &[0; 4]);
    }

    #[test]
    fn affine_scale_reproduces_exact_levels() {
        let x: Vec<f32> = (0..32).map(|i| -1.0 + (i % 16) as f32 * 0.125).collect();
        let (mut levels, mut scratch) = ([0u8; 32], [0u8; 32]);
        let sweep = Sweep { rmin: -0.9, rdelta: 0.05, nstep: 36, use_mad: false };
        let (scale, offset) = affine_scale(&x, 15, None, &mut levels, &mut scratch, sweep);
        for (&l, &v) in levels.iter().zip(&x) {
            assert!((scale * l as f32 - offset - v).abs() < 1e-5);
        }
        let (scale, offset) = affine_scale(&[2.0; 8], 15, None, &mut levels, &mut scratch, sweep);
        assert!(scale > 0.0 && offset == 0.0);
    }
}
