//! `e^x` for vectors of `f32`, computed as ggml's x86 builds compute it, so that the softmax,
//! flash attention's tile softmax and SiLU agree with them bit for bit.
//!
//! The method: `x = n·ln 2 + b` with `n` an integer found by the shifter trick (adding
//! 1.5·2²³ rounds `x·log₂e` to an integer in the low mantissa bits) and `b` reduced with ln 2
//! split in two floats; `e^b` by a degree-5 polynomial with minimax coefficients; then scaled
//! by `2^n`. The error is below 2 ulps over the whole range.
//!
//! ggml has two forms of it, and a result depends on which one ran:
//! - [`exp8`], its AVX2 form: the polynomial leaves out the constant term and the scaling is
//!   one fused `k·p + k` with `k = 2^n` built in the exponent bits; near the ends of the range
//!   (`|n| > 126`) `2^n` is applied as two factors, and beyond `|n| > 192` the result is 0 or
//!   infinity.
//! - [`exp16`], its AVX-512 form (F and DQ): the constant term is in the polynomial and
//!   `vscalefps` applies `2^n`; beyond `|n| > 192` the result is 0 or infinity.
//!
//! Callers pick the form of the widest vectors the processor has, as ggml's build for it
//! would, and take leftover elements one at a time through libm's `expf` (Rust's `f32::exp`),
//! as ggml's loops do.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// 1.5·2²³: added to `x·log₂e`, it leaves the rounded integer in the low mantissa bits.
const SHIFTER: f32 = f32::from_bits(0x4b40_0000);
/// log₂e rounded to `f32`.
const LOG2_E: f32 = f32::from_bits(0x3fb8_aa3b);
/// ln 2 as a short high part (exact times any `n` in range) and the rest.
const LN_2_HI: f32 = f32::from_bits(0x3f31_7200);
const LN_2_LO: f32 = f32::from_bits(0x35bf_be8e);
/// The polynomial `e^b ≈ 1 + C1·b + C2·b² + C3·b³ + C4·b⁴ + C5·b⁵`.
const C1: f32 = f32::from_bits(0x3f7f_fff6);
const C2: f32 = f32::from_bits(0x3eff_fedb);
const C3: f32 = f32::from_bits(0x3e2a_af33);
const C4: f32 = f32::from_bits(0x3d2b_9f17);
const C5: f32 = f32::from_bits(0x3c07_2010);
/// Beyond this `|n|` the AVX2 form applies `2^n` as two factors.
const SPLIT_SCALE: f32 = 126.0;
/// Beyond this `|n|` the result is 0 (below) or infinity (above).
const SATURATE: f32 = 192.0;

/// The AVX2 form of ggml's `e^x`, in each of eight lanes.
///
/// # Safety
/// The processor has AVX2 and FMA (callers without those features enabled must check).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
pub fn exp8(x: __m256) -> __m256 {
    let set = _mm256_set1_ps;
    let shifted = _mm256_fmadd_ps(x, set(LOG2_E), set(SHIFTER));
    let n = _mm256_sub_ps(shifted, set(SHIFTER));
    let b = _mm256_fnmadd_ps(n, set(LN_2_LO), _mm256_fnmadd_ps(n, set(LN_2_HI), x));
    // 2^n: n sits in the low bits of `shifted`; moved up into the exponent field, then 1.0's
    // bits added
    let exponent = _mm256_slli_epi32::<23>(_mm256_castps_si256(shifted));
    let k = _mm256_castsi256_ps(_mm256_add_epi32(exponent, _mm256_castps_si256(set(1.0))));
    let magnitude = _mm256_andnot_ps(set(-0.0), n);
    let split = _mm256_cmp_ps::<_CMP_GT_OQ>(magnitude, set(SPLIT_SCALE));
    let b2 = _mm256_mul_ps(b, b);
    // p = e^b − 1
    let p = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(set(C5), b, set(C4)), b2, _mm256_fmadd_ps(set(C3), b, set(C2))),
        b2,
        _mm256_mul_ps(set(C1), b),
    );
    let scaled = _mm256_fmadd_ps(k, p, k);
    if _mm256_movemask_ps(split) == 0 {
        return scaled;
    }
    // |n| > 126: 2^n = s1 · s2, with s1 = 2^-125 for n ≤ 0 and 2^127 above, and s2 the rest
    let low = _mm256_and_si256(
        _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(n, _mm256_setzero_ps())),
        _mm256_set1_epi32(0x8200_0000u32 as i32),
    );
    let s1 = _mm256_castsi256_ps(_mm256_add_epi32(low, _mm256_set1_epi32(0x7f00_0000)));
    let s2 = _mm256_castsi256_ps(_mm256_sub_epi32(exponent, low));
    let split_scaled = _mm256_mul_ps(_mm256_fmadd_ps(s2, p, s2), s1);
    let saturated = _mm256_cmp_ps::<_CMP_GT_OQ>(magnitude, set(SATURATE));
    _mm256_blendv_ps(_mm256_blendv_ps(scaled, split_scaled, split), _mm256_mul_ps(s1, s1), saturated)
}

/// The AVX-512 form of ggml's `e^x`, in each of sixteen lanes.
///
/// # Safety
/// The processor has AVX-512 F and DQ, AVX2 and FMA (callers without those features enabled
/// must check).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
pub fn exp16(x: __m512) -> __m512 {
    let set = _mm512_set1_ps;
    let n = _mm512_sub_ps(_mm512_fmadd_ps(x, set(LOG2_E), set(SHIFTER)), set(SHIFTER));
    let b = _mm512_fnmadd_ps(n, set(LN_2_LO), _mm512_fnmadd_ps(n, set(LN_2_HI), x));
    let saturated = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(_mm512_abs_ps(n), set(SATURATE));
    let b2 = _mm512_mul_ps(b, b);
    // e^b
    let p = _mm512_fmadd_ps(
        _mm512_fmadd_ps(_mm512_fmadd_ps(set(C5), b, set(C4)), b2, _mm512_fmadd_ps(set(C3), b, set(C2))),
        b2,
        _mm512_fmadd_ps(set(C1), b, set(1.0)),
    );
    let scaled = _mm512_scalef_ps(p, n);
    if saturated == 0 {
        return scaled;
    }
    let towards_zero = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(n, _mm512_setzero_ps());
    let limit = _mm512_mask_blend_ps(towards_zero, set(f32::INFINITY), _mm512_setzero_ps());
    _mm512_mask_blend_ps(saturated, scaled, limit)
}

/// Scalar models of the two forms, one lane at a time, for the tests.
#[cfg(test)]
mod model {
    use super::*;

    /// The shifted product, `n`, and `b` of both forms.
    fn reduce(x: f32) -> (f32, f32, f32) {
        let shifted = x.mul_add(LOG2_E, SHIFTER);
        let n = shifted - SHIFTER;
        (shifted, n, (-n).mul_add(LN_2_LO, (-n).mul_add(LN_2_HI, x)))
    }

    /// The polynomial's terms of degree 2 and above, as both forms group them.
    fn high_terms(b: f32) -> (f32, f32) {
        let b2 = b * b;
        (C5.mul_add(b, C4).mul_add(b2, C3.mul_add(b, C2)), b2)
    }

    /// One lane of [`exp8`].
    pub fn exp8_lane(x: f32) -> f32 {
        let (shifted, n, b) = reduce(x);
        let (high, b2) = high_terms(b);
        let p = high.mul_add(b2, C1 * b);
        let exponent = shifted.to_bits() << 23;
        let k = f32::from_bits(exponent.wrapping_add(1.0f32.to_bits()));
        let low = if n <= 0.0 { 0x8200_0000u32 } else { 0 };
        let s1 = f32::from_bits(low.wrapping_add(0x7f00_0000));
        let s2 = f32::from_bits(exponent.wrapping_sub(low));
        if n.abs() > SATURATE {
            s1 * s1
        } else if n.abs() > SPLIT_SCALE {
            s2.mul_add(p, s2) * s1
        } else {
            k.mul_add(p, k)
        }
    }

    /// One lane of [`exp16`].
    pub fn exp16_lane(x: f32) -> f32 {
        let (_, n, b) = reduce(x);
        let (high, b2) = high_terms(b);
        let p = high.mul_add(b2, C1.mul_add(b, 1.0));
        if n.abs() > SATURATE {
            return if n <= 0.0 { 0.0 } else { f32::INFINITY };
        }
        // vscalefps rounds p·2^n once; the f64 product is exact for |n| <= 192
        (f64::from(p) * 2f64.powi(n as i32)) as f32
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::cpu::features::features;
    use crate::cpu::kernels::testing::Rng;

    /// Inputs over the whole range, the ends of the range and the special values.
    fn inputs() -> Vec<f32> {
        let mut rng = Rng::new(9);
        let mut xs: Vec<f32> = (0..4000).map(|_| rng.uniform(-110.0, 95.0)).collect();
        xs.extend((0..400).map(|i| -3.0 + i as f32 * 0.015));
        xs.extend([0.0, -0.0, 1.0, -1.0, 88.3, 88.7, 88.73, 89.0, -87.3, -87.4, -103.0, -103.9, -104.5, 133.0, -140.0]);
        xs.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN, f32::from_bits(1)]);
        while !xs.len().is_multiple_of(16) {
            xs.push(0.5);
        }
        xs
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Each form against its scalar model, bit for bit, and both within 2 ulps of libm's
    /// `expf` (or a few steps of the subnormals) wherever that is finite.
    #[test]
    fn both_forms_match_their_models_and_stay_close_to_libm() {
        let xs = inputs();
        // (name, results over the inputs, the scalar model)
        type Form = (&'static str, Vec<f32>, fn(f32) -> f32);
        let mut forms: Vec<Form> = Vec::new();
        if features().has_avx2_fma() {
            let mut ys = vec![0.0f32; xs.len()];
            for (x, y) in xs.chunks_exact(8).zip(ys.chunks_exact_mut(8)) {
                // SAFETY: AVX2 and FMA were detected; each chunk holds eight floats.
                unsafe { _mm256_storeu_ps(y.as_mut_ptr(), exp8(_mm256_loadu_ps(x.as_ptr()))) };
            }
            forms.push(("exp8", ys, model::exp8_lane));
        }
        if features().has_avx512() {
            let mut ys = vec![0.0f32; xs.len()];
            for (x, y) in xs.chunks_exact(16).zip(ys.chunks_exact_mut(16)) {
                // SAFETY: AVX-512 was detected; each chunk holds sixteen floats.
                unsafe { _mm512_storeu_ps(y.as_mut_ptr(), exp16(_mm512_loadu_ps(x.as_ptr()))) };
            }
            forms.push(("exp16", ys, model::exp16_lane));
        }
        for (name, ys, lane) in forms {
            for (&x, &y) in xs.iter().zip(&ys) {
                assert!(same(y, lane(x)), "{name}({x:e}) = {y:e}, its model gives {:e}", lane(x));
                let want = x.exp();
                if x.is_nan() {
                    assert!(y.is_nan(), "{name}(NaN) = {y}");
                } else if want.is_infinite() || want == 0.0 {
                    assert!(y == want || (y - want).abs() <= f32::from_bits(4), "{name}({x:e}) = {y:e}, libm {want:e}");
                } else {
                    let tolerance = 2.5e-7 * want + f32::from_bits(4);
                    assert!((y - want).abs() <= tolerance, "{name}({x:e}) = {y:e}, libm {want:e}");
                }
            }
        }
    }
}
