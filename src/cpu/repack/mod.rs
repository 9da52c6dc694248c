//! Weights repacked at load time: the CPU device's extra buffer type "CPU_REPACK", as ggml's
//! CPU backend has one. llama.cpp asks the device for its extra buffer types
//! (`ggml_backend_dev_get_extra_bufts`) and puts each weight whose product the device accepts
//! from them there; `set_tensor` then stores it in the interleaved [`layout`], which the
//! matrix product reads in one stream (`kernels::matmul::repack`).
//!
//! Only what the product computes is offered: MUL_MAT of 2-D weights of whole 16-row groups by
//! F32 activations, of the formats this processor runs packed ([`packs`]): every format of the
//! layout (F32, F16, BF16, the 32-value blocks, the K-quants, IQ4_XS, TQ2_0) with the AVX-512
//! VNNI kernels, the [`AVX2_TYPES`] on AVX2 processors. A tensor of another format is kept in
//! the buffer as written, and computed as any host tensor.

mod buffer;
pub mod layout;

use crate::backend::buffer::BufferTypePtr;
use crate::backend::interface::Buffer;
use crate::core::tensor::Tensor;
use crate::core::types::Type;
use crate::cpu::features::features;

/// The formats whose repacked product has an AVX2 tile: the ones an AVX2 processor without
/// AVX-512 stores packed.
pub const AVX2_TYPES: [Type; 6] = [Type::Q4_0, Type::Q4_1, Type::Q8_0, Type::IQ4_NL, Type::Q4_K, Type::Q6_K];

/// Whether this processor runs the repacked product of `ty` weights, so that CPU_REPACK
/// stores them packed: every format of the layout with AVX-512 (F, BW, VL, DQ, VNNI), the
/// [`AVX2_TYPES`] with AVX2, FMA and F16C, none without.
pub fn packs(ty: Type) -> bool {
    let f = features();
    layout::parts(ty).is_some() && (f.has_avx512() || (f.has_avx2_fma() && AVX2_TYPES.contains(&ty)))
}

/// The "CPU_REPACK" buffer type.
pub fn buffer_type() -> BufferTypePtr {
    buffer::REPACK_BUFFER_TYPE.handle()
}

/// Whether `t` lies in a CPU_REPACK buffer (or a placeholder buffer of that type, as llama.cpp
/// makes to ask what the device supports).
pub fn in_repack_buffer(t: &Tensor) -> bool {
    // SAFETY: a tensor's buffer is null or a live buffer.
    unsafe { t.buffer.cast::<Buffer>().as_ref() }.is_some_and(|b| b.buft == buffer_type().as_ptr())
}

/// Whether `t` holds weights in the interleaved layout.
pub fn is_repacked(t: &Tensor) -> bool {
    in_repack_buffer(t) && buffer::stored_packed(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::buffer::{tensor_get, tensor_memset, tensor_set};
    use crate::backend::tallocr::alloc_ctx_tensors;
    use crate::core::context::{Context, InitParams};
    use crate::core::types::Type;

    fn no_alloc_ctx() -> Box<Context> {
        Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
    }

    fn bytes(n: usize, seed: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + seed + i / 97) as u8).collect()
    }

    #[test]
    fn tensors_read_back_what_was_written_whatever_the_range() {
        let mut c = no_alloc_ctx();
        // (Q4_0: packed wherever anything is, with AVX2 or AVX-512)
        if !packs(Type::Q4_0) {
            eprintln!("skipped: this processor stores nothing packed");
            return;
        }
        let w = c.new_tensor(Type::Q4_0, &[64, 48, 1, 1]);
        let other = c.new_tensor(Type::IQ2_XS, &[256, 48, 1, 1]);
        let buffer = alloc_ctx_tensors(&c, buffer_type()).expect("a CPU_REPACK buffer");
        assert_eq!(buffer.buft().name_lossy(), "CPU_REPACK");
        assert!(!buffer.is_host());
        assert!(is_repacked(&w) && in_repack_buffer(&other) && !is_repacked(&other));

        let size = w.nbytes();
        let data = bytes(size, 1);
        tensor_set(w, &data, 0);
        // SAFETY: the tensor's bytes in the buffer's host memory.
        let stored = unsafe { std::slice::from_raw_parts(w.data.cast::<u8>(), size) };
        assert_ne!(stored, &data[..], "the weights are stored interleaved");
        let mut back = vec![0u8; size];
        tensor_get(w, &mut back, 0);
        assert_eq!(back, data);

        // ranges that cut groups, blocks and scales
        let patch = bytes(1000, 7);
        tensor_set(w, &patch, 333);
        let mut want = data.clone();
        want[333..1333].copy_from_slice(&patch);
        tensor_memset(w, 0xA5, 1500, 77);
        want[1500..1577].fill(0xA5);
        let mut part = vec![0u8; 500];
        tensor_get(w, &mut part, 1200);
        assert_eq!(part, want[1200..1700]);
        tensor_get(w, &mut back, 0);
        assert_eq!(back, want);

        // a tensor the layout does not take is stored as written
        let plain = bytes(other.nbytes(), 3);
        tensor_set(other, &plain, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { std::slice::from_raw_parts(other.data.cast::<u8>(), plain.len()) }, &plain[..]);
        buffer.free();
    }
}
