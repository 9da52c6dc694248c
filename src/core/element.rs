//! Reading and writing single elements of host tensors of the plain types (I8, I16, I32, F16,
//! BF16, F32): the `ggml_get/set_{i32,f32}_{1d,nd}` helpers and `ggml_set_{i32,f32}`.
//!
//! A flat index into a non-contiguous tensor is unravelled into coordinates first, so the
//! index always counts logical elements.

use half::{bf16, f16};

use super::tensor::{MAX_DIMS, Tensor};
use super::types::Type;

/// Coordinates of the `i`-th element in logical (row-major from dim 0) order.
pub fn unravel(t: &Tensor, i: i64) -> [i64; MAX_DIMS] {
    let [ne0, ne1, ne2, _] = t.ne;
    let i3 = i / (ne2 * ne1 * ne0);
    let i2 = (i - i3 * ne2 * ne1 * ne0) / (ne1 * ne0);
    let i1 = (i - i3 * ne2 * ne1 * ne0 - i2 * ne1 * ne0) / ne0;
    let i0 = i - i3 * ne2 * ne1 * ne0 - i2 * ne1 * ne0 - i1 * ne0;
    [i0, i1, i2, i3]
}

/// A scalar of any plain type, widened for reading.
#[derive(Clone, Copy)]
enum Scalar {
    Int(i32),
    Float(f32),
}

fn check_host(t: &Tensor) {
    crate::ggml_assert!(!t.data.is_null(), "tensor '{}' has no host data", t.name());
}

fn byte_offset(t: &Tensor, idx: [i64; MAX_DIMS]) -> usize {
    (0..MAX_DIMS).map(|d| idx[d] as usize * t.nb[d]).sum()
}

fn index(t: &Tensor, i: i64) -> usize {
    if t.is_contiguous() { i as usize * t.type_.type_size() } else { byte_offset(t, unravel(t, i)) }
}

fn read(t: &Tensor, offset: usize) -> Scalar {
    check_host(t);
    // SAFETY: the caller's index lies inside the tensor (ggml's contract for these helpers),
    // so `offset` addresses one element of `t`'s type inside its data; reads are unaligned-safe.
    unsafe {
        let p = t.data.cast::<u8>().add(offset);
        match t.type_ {
            Type::I8 => Scalar::Int(p.cast::<i8>().read() as i32),
            Type::I16 => Scalar::Int(p.cast::<i16>().read_unaligned() as i32),
            Type::I32 => Scalar::Int(p.cast::<i32>().read_unaligned()),
            Type::F16 => Scalar::Float(f16::from_bits(p.cast::<u16>().read_unaligned()).to_f32()),
            Type::BF16 => Scalar::Float(bf16::from_bits(p.cast::<u16>().read_unaligned()).to_f32()),
            Type::F32 => Scalar::Float(p.cast::<f32>().read_unaligned()),
            other => crate::ggml_abort!("element access is not supported for type {}", other.name()),
        }
    }
}

fn write(t: &Tensor, offset: usize, value: Scalar) {
    check_host(t);
    let as_f32 = match value {
        Scalar::Int(v) => v as f32,
        Scalar::Float(v) => v,
    };
    // Integer targets take integers as they are and floats truncated, as C's conversions do.
    let as_int = |v: Scalar| match v {
        Scalar::Int(v) => v as i64,
        Scalar::Float(v) => v as i64,
    };
    // SAFETY: as in `read`: `offset` addresses one element inside the tensor's data.
    unsafe {
        let p = t.data.cast::<u8>().add(offset);
        match t.type_ {
            Type::I8 => p.cast::<i8>().write(as_int(value) as i8),
            Type::I16 => p.cast::<i16>().write_unaligned(as_int(value) as i16),
            Type::I32 => p.cast::<i32>().write_unaligned(as_int(value) as i32),
            Type::F16 => p.cast::<u16>().write_unaligned(f16::from_f32(as_f32).to_bits()),
            Type::BF16 => p.cast::<u16>().write_unaligned(bf16::from_f32(as_f32).to_bits()),
            Type::F32 => p.cast::<f32>().write_unaligned(as_f32),
            other => crate::ggml_abort!("element access is not supported for type {}", other.name()),
        }
    }
}

pub fn get_f32_1d(t: &Tensor, i: i64) -> f32 {
    match read(t, index(t, i)) {
        Scalar::Int(v) => v as f32,
        Scalar::Float(v) => v,
    }
}

pub fn get_i32_1d(t: &Tensor, i: i64) -> i32 {
    match read(t, index(t, i)) {
        Scalar::Int(v) => v,
        Scalar::Float(v) => v as i32,
    }
}

pub fn get_f32_nd(t: &Tensor, idx: [i64; MAX_DIMS]) -> f32 {
    match read(t, byte_offset(t, idx)) {
        Scalar::Int(v) => v as f32,
        Scalar::Float(v) => v,
    }
}

pub fn get_i32_nd(t: &Tensor, idx: [i64; MAX_DIMS]) -> i32 {
    match read(t, byte_offset(t, idx)) {
        Scalar::Int(v) => v,
        Scalar::Float(v) => v as i32,
    }
}

pub fn set_f32_1d(t: &Tensor, i: i64, v: f32) {
    write(t, index(t, i), Scalar::Float(v));
}

pub fn set_i32_1d(t: &Tensor, i: i64, v: i32) {
    write(t, index(t, i), Scalar::Int(v));
}

pub fn set_f32_nd(t: &Tensor, idx: [i64; MAX_DIMS], v: f32) {
    write(t, byte_offset(t, idx), Scalar::Float(v));
}

pub fn set_i32_nd(t: &Tensor, idx: [i64; MAX_DIMS], v: i32) {
    write(t, byte_offset(t, idx), Scalar::Int(v));
}

fn fill(t: &Tensor, value: Scalar) {
    // Row by row over ne[0] x nrows, each row at nb[1] strides, as ggml_set_f32 does.
    let row_len = t.ne[0];
    for row in 0..t.nrows() {
        let base = row as usize * t.nb[1];
        for i in 0..row_len {
            write(t, base + i as usize * t.type_.type_size(), value);
        }
    }
}

pub fn set_all_f32(t: &Tensor, v: f32) {
    fill(t, Scalar::Float(v));
}

pub fn set_all_i32(t: &Tensor, v: i32) {
    fill(t, Scalar::Int(v));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::context::{Context, InitParams};

    fn ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 16, mem_buffer: std::ptr::null_mut(), no_alloc: false })
    }

    #[test]
    fn set_and_get_across_types() {
        let mut c = ctx();
        for ty in [Type::I8, Type::I16, Type::I32, Type::F16, Type::BF16, Type::F32] {
            let t = c.new_tensor(ty, &[3, 2]);
            set_all_f32(&t, 2.0);
            set_f32_1d(&t, 4, 7.0);
            assert_eq!(get_f32_1d(&t, 0), 2.0);
            assert_eq!(get_i32_1d(&t, 4), 7);
            assert_eq!(get_f32_nd(&t, [1, 1, 0, 0]), 7.0);
        }
    }

    #[test]
    fn flat_indices_follow_logical_order_in_views() {
        let mut c = ctx();
        let t = c.new_tensor(Type::F32, &[2, 3]);
        for i in 0..6 {
            set_f32_1d(&t, i, i as f32);
        }
        // A transposed view: ne = [3, 2], nb = [8, 4].
        let v = c.new_tensor_impl(Type::F32, &[3, 2], Some(t), 0);
        v.get_mut().nb = [8, 4, 24, 24];
        assert_eq!(get_f32_1d(&v, 1), 2.0);
        assert_eq!(get_f32_1d(&v, 3), 1.0);
    }
}
