//! Test helpers shared by the I-quant formats: a smooth sample signal and the relative RMS
//! error of a quantize/dequantize round trip over two super-blocks.

use super::k_quants::QK_K;
use super::{BlockFormat, dequantize_row, quantize_rows};

pub fn sample(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i as f32 * 0.61).sin() + (i as f32 * 0.173).cos() * 0.5) * 0.02).collect()
}

/// `|x - dequantize(quantize(x))| / |x|` for two super-blocks of [`sample`].
pub fn relative_error<B: BlockFormat>(imatrix: Option<&[f32]>) -> f32 {
    let x = sample(2 * QK_K);
    let mut q = vec![B::default(); 2];
    quantize_rows(&x, &mut q, QK_K, imatrix);
    let mut y = vec![0.0f32; 2 * QK_K];
    dequantize_row(&q, &mut y);
    let err: f32 = x.iter().zip(&y).map(|(a, b)| (a - b) * (a - b)).sum();
    let norm: f32 = x.iter().map(|a| a * a).sum();
    (err / norm).sqrt()
}
