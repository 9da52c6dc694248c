//! The lookup tables libggml-cpu exports as data: `ggml_table_f32_f16`, `ggml_table_gelu_f16`,
//! `ggml_table_gelu_quick_f16`, `ggml_table_f32_e8m0_half` and `ggml_table_f32_ue4m3`. ggml's
//! CPU code (its SIMD mappings, a backend built against its headers) reads them after
//! `ggml_cpu_init`, which fills them; so does ours, with the reference's values. Our own
//! kernels compute without them.

use std::cell::UnsafeCell;
use std::sync::Once;

use super::kernels::unary::{gelu_formula, gelu_quick_formula};
use crate::quants::fp4::{e8m0_to_f32_half, ue4m3_to_f32_half};
use crate::quants::half::{fp16_to_fp32, fp32_to_fp16};

/// A table C code reads by its exported name: written once, by [`fill`], before
/// `ggml_cpu_init` returns, and only read after that.
#[repr(transparent)]
pub struct Table<T, const N: usize>(UnsafeCell<[T; N]>);

// SAFETY: the only writes happen inside `FILLED.call_once`, before any caller of
// `ggml_cpu_init` (the function that makes the values meaningful) can read them.
unsafe impl<T, const N: usize> Sync for Table<T, N> {}

impl<T: Copy, const N: usize> Table<T, N> {
    const fn zeroed(zero: T) -> Self {
        Table(UnsafeCell::new([zero; N]))
    }

    /// Entry `i` (C code reads the tables directly; only the tests read them from Rust).
    #[cfg(test)]
    fn get(&self, i: usize) -> T {
        // SAFETY: reads happen after `fill` (see the `Sync` argument); the index is checked.
        unsafe { (*self.0.get())[i] }
    }

    fn set(&self, f: impl Fn(usize) -> T) {
        // SAFETY: called only inside `FILLED.call_once`, with no reader yet (see `Sync`).
        let table = unsafe { &mut *self.0.get() };
        for (i, v) in table.iter_mut().enumerate() {
            *v = f(i);
        }
    }
}

#[unsafe(no_mangle)]
pub static ggml_table_f32_f16: Table<f32, 65536> = Table::zeroed(0.0);
#[unsafe(no_mangle)]
pub static ggml_table_gelu_f16: Table<u16, 65536> = Table::zeroed(0);
#[unsafe(no_mangle)]
pub static ggml_table_gelu_quick_f16: Table<u16, 65536> = Table::zeroed(0);
#[unsafe(no_mangle)]
pub static ggml_table_f32_e8m0_half: Table<f32, 256> = Table::zeroed(0.0);
#[unsafe(no_mangle)]
pub static ggml_table_f32_ue4m3: Table<f32, 256> = Table::zeroed(0.0);

static FILLED: Once = Once::new();

/// Fills the tables, once per process (`ggml_cpu_init`).
pub fn fill() {
    FILLED.call_once(|| {
        ggml_table_f32_f16.set(|i| fp16_to_fp32(i as u16));
        ggml_table_gelu_f16.set(|i| fp32_to_fp16(gelu_formula(fp16_to_fp32(i as u16))));
        ggml_table_gelu_quick_f16.set(|i| fp32_to_fp16(gelu_quick_formula(fp16_to_fp32(i as u16))));
        ggml_table_f32_e8m0_half.set(|i| e8m0_to_f32_half(i as u8));
        ggml_table_f32_ue4m3.set(|i| ue4m3_to_f32_half(i as u8));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_hold_the_reference_values_and_sizes() {
        fill();
        assert_eq!(std::mem::size_of_val(&ggml_table_f32_f16), 0x40000);
        assert_eq!(std::mem::size_of_val(&ggml_table_gelu_f16), 0x20000);
        assert_eq!(std::mem::size_of_val(&ggml_table_f32_ue4m3), 0x400);
        assert_eq!(ggml_table_f32_f16.get(0x3c00), 1.0);
        assert_eq!(ggml_table_f32_f16.get(0xc000), -2.0);
        // gelu(1) = 0.8412 and quick gelu(1) = 0.8458, as binary16.
        assert_eq!(ggml_table_gelu_f16.get(0x3c00), fp32_to_fp16(0.841_192));
        assert_eq!(ggml_table_gelu_quick_f16.get(0x3c00), fp32_to_fp16(0.845_784));
        assert_eq!(ggml_table_f32_e8m0_half.get(127), 0.5);
        // UE4M3 0x38 is 1.0 (exponent 7, mantissa 0); the table holds half of it.
        assert_eq!(ggml_table_f32_ue4m3.get(0x38), 0.5);
    }
}
