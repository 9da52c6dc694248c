//! The CUDA backend on the emulated device, through the same tables a C program uses: the
//! registry and device, buffers and their data operations, and a graph computed by a CUDA
//! backend against the CPU.

#![cfg(feature = "cuda-emulator")]

use std::ffi::CStr;

use crate::backend::backend::BackendPtr;
use crate::backend::buffer::{BufferTypePtr, tensor_get, tensor_memset, tensor_set};
use crate::backend::device::DevicePtr;
use crate::backend::interface::DevType;
use crate::backend::tallocr::alloc_ctx_tensors;
use crate::core::context::{Context, InitParams};
use crate::core::graph::cgraph::new_graph_custom;
use crate::core::op::{GluOp, UnaryOp};
use crate::core::ops;
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;
use crate::cpu::kernels::testing::{Rng, ctx, nmse, random, values};
use crate::cuda::{buffer, registry};

fn device() -> DevicePtr {
    let reg = registry::listed().expect("the emulated GPU is listed");
    assert_eq!(reg.dev_count(), 1);
    // SAFETY: the registry's devices live for the process.
    reg.dev_get(0)
}

#[test]
fn the_emulated_gpu_is_cuda0() {
    let dev = device();
    assert_eq!(registry::reg().name_lossy(), "CUDA");
    assert_eq!(dev.name_lossy(), "CUDA0");
    // SAFETY: descriptions are C strings of the device.
    let description = unsafe { CStr::from_ptr(dev.description()) }.to_string_lossy().into_owned();
    assert!(description.contains("emulator"), "{description}");
    let props = dev.props();
    assert_eq!(props.type_, DevType::GPU);
    // SAFETY: as above.
    assert_eq!(unsafe { CStr::from_ptr(props.device_id) }, c"0000:00:00.0");
    assert!(props.caps.async_ && props.caps.events && props.caps.host_buffer);
    assert!(props.memory_total > 0 && props.memory_free <= props.memory_total);

    let buft = dev.buffer_type();
    assert_eq!(buft.name_lossy(), "CUDA0");
    assert_eq!(buft.alignment(), 128);
    assert!(!buft.is_host());
    let host = dev.host_buffer_type().expect("a host buffer type");
    assert_eq!(host.name_lossy(), "CUDA_Host");
    assert!(host.is_host());
}

#[test]
fn quantized_rows_are_padded_to_512_values() {
    let mut c = ctx();
    let q = c.new_tensor(Type::Q4_0, &[96, 3]);
    assert_eq!(buffer::alloc_size(&q), q.nbytes() + Type::Q4_0.row_size(512 - 96));
    let f = c.new_tensor(Type::F16, &[96, 3]);
    assert_eq!(buffer::alloc_size(&f), f.nbytes());
}

#[test]
fn buffers_hold_what_is_written_and_pad_with_zeros() {
    let buft: BufferTypePtr = device().buffer_type();
    let mut c = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
    let a = c.new_tensor(Type::F32, &[100]);
    let b = c.new_tensor(Type::F32, &[100]);
    let q = c.new_tensor(Type::Q8_0, &[64, 2]);
    let buf = alloc_ctx_tensors(&c, buft).expect("a buffer");
    let bytes: Vec<u8> = (0..400).map(|i| i as u8).collect();
    tensor_set(a, &bytes, 0);
    let mut back = vec![0u8; 400];
    tensor_get(a, &mut back, 0);
    assert_eq!(back, bytes);
    tensor_memset(a, 9, 100, 50);
    tensor_get(a, &mut back, 0);
    assert!(back[100..150].iter().all(|&x| x == 9) && back[150] == 150);
    // a copy between two tensors of device memory stays on the device
    crate::backend::buffer::tensor_copy(a, b);
    let mut copied = vec![0u8; 400];
    tensor_get(b, &mut copied, 0);
    assert_eq!(copied, back);
    // the padding after the quantized rows was zeroed when the tensor was placed
    let padded = buffer::alloc_size(&q);
    // SAFETY: emulated device memory is host memory; the tensor was given `padded` bytes.
    let tail = unsafe { std::slice::from_raw_parts(q.data.cast::<u8>().add(q.nbytes()), padded - q.nbytes()) };
    assert!(tail.iter().all(|&x| x == 0));
    buf.free();
}

/// The tensors of a small transformer block: inputs, weights and the graph's result.
struct Block {
    x: TensorPtr,
    g: TensorPtr,
    w: TensorPtr,
    pos: TensorPtr,
    roped: TensorPtr,
    out: TensorPtr,
}

const EMBD: i64 = 128;
const TOKENS: i64 = 9;
const HEADS: i64 = 4;

/// rms_norm, a Q8_0 product, SwiGLU, a residual, NeoX RoPE, soft_max, SiLU and row sums.
fn block(c: &mut Context) -> Block {
    let x = c.new_tensor(Type::F32, &[EMBD, TOKENS]);
    let g = c.new_tensor(Type::F32, &[EMBD]);
    let w = c.new_tensor(Type::Q8_0, &[EMBD, 2 * EMBD]);
    let pos = c.new_tensor(Type::I32, &[TOKENS]);
    let n = ops::norm::rms_norm(c, x, 1e-5);
    let n = ops::elementwise::mul(c, n, g);
    let h = ops::matmul::mul_mat(c, w, n);
    let a = ops::glu::glu(c, h, GluOp::SWIGLU, false);
    let a = ops::elementwise::add(c, a, x);
    let r = ops::shape::reshape_3d(c, a, EMBD / HEADS, HEADS, TOKENS);
    let mut p = ops::rope::RopeParams::new((EMBD / HEADS) as i32, ops::rope::rope_type::NEOX);
    (p.n_ctx_orig, p.freq_base, p.freq_scale) = (4096, 10000.0, 1.0);
    let roped = ops::rope::rope_ext(c, r, pos, None, &p);
    let s = ops::softmax::soft_max_ext(c, roped, None, 0.125, 0.0);
    let s = ops::unary::unary(c, s, UnaryOp::SILU);
    let out = ops::reduce::sum_rows(c, s);
    Block { x, g, w, pos, roped, out }
}

/// The bytes of a tensor in host memory.
fn bytes(t: TensorPtr) -> Vec<u8> {
    // SAFETY: a tensor of a context with memory, `nbytes` from its data.
    unsafe { std::slice::from_raw_parts(t.data.cast::<u8>(), t.nbytes()) }.to_vec()
}

/// The values of an F32 tensor in device memory.
fn device_values(t: TensorPtr) -> Vec<f64> {
    let mut raw = vec![0u8; t.nbytes()];
    tensor_get(t, &mut raw, 0);
    raw.chunks_exact(4).map(|c| f64::from(f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))).collect()
}

/// Quantizes `plain` into `w` and computes `out` on the CPU.
fn compute_on_cpu(c: &mut Context, plain: TensorPtr, w: TensorPtr, out: TensorPtr) {
    let graph = new_graph_custom(c, 16, false);
    graph.get_mut().build_forward_expand(ops::shape::cpy(c, plain, w));
    graph.get_mut().build_forward_expand(out);
    assert_eq!(crate::cpu::api::graph_compute_with_ctx(c, &graph, 2), Status::SUCCESS);
}

/// Computes `out`, whose graph lies in device memory, on the CUDA backend and reads it back.
fn compute_on_device(cuda: BackendPtr, d: &mut Context, out: TensorPtr) -> Vec<f64> {
    let graph = new_graph_custom(d, 16, false);
    graph.get_mut().build_forward_expand(out);
    assert_eq!(cuda.graph_compute(graph.get_mut()), Status::SUCCESS);
    device_values(out)
}

#[test]
fn a_transformer_block_computes_as_on_the_cpu() {
    // on the CPU, from random inputs and weights quantized there
    let mut c = ctx();
    let mut rng = Rng::new(1);
    let cpu = block(&mut c);
    random(cpu.x, &mut rng, -1.0, 1.0);
    random(cpu.g, &mut rng, 0.5, 1.5);
    let plain = c.new_tensor(Type::F32, &[EMBD, 2 * EMBD]);
    random(plain, &mut rng, -0.2, 0.2);
    let positions: Vec<u8> = (0..TOKENS as i32).flat_map(|i| (3 * i).to_ne_bytes()).collect();
    // SAFETY: pos holds TOKENS I32 values in host memory.
    unsafe { std::ptr::copy_nonoverlapping(positions.as_ptr(), cpu.pos.data.cast::<u8>(), positions.len()) };
    let graph = new_graph_custom(&mut c, 64, false);
    graph.get_mut().build_forward_expand(ops::shape::cpy(&mut c, plain, cpu.w));
    graph.get_mut().build_forward_expand(cpu.out);
    assert_eq!(crate::cpu::api::graph_compute_with_ctx(&mut c, &graph, 2), Status::SUCCESS);

    // the same block in device memory, computed by a CUDA backend
    let mut d = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
    let dev = block(&mut d);
    let buf = alloc_ctx_tensors(&d, device().buffer_type()).expect("a device buffer");
    for (from, to) in [(cpu.x, dev.x), (cpu.g, dev.g), (cpu.w, dev.w), (cpu.pos, dev.pos)] {
        tensor_set(to, &bytes(from), 0);
    }
    let graph = new_graph_custom(&mut d, 64, false);
    graph.get_mut().build_forward_expand(dev.out);
    // SAFETY: the device's backend is live until freed below.
    let cuda = device().init_backend(None).expect("a CUDA backend");
    assert!(crate::cuda::backend::is_cuda(cuda));
    assert_eq!(cuda.graph_compute(graph.get_mut()), Status::SUCCESS);
    // both round the product's activations to Q8_0
    for (want, got, limit) in [(cpu.roped, dev.roped, 1e-10), (cpu.out, dev.out, 1e-10)] {
        let err = nmse(&device_values(got), &values(want));
        assert!(err < limit, "{}: nmse {err:e}", want.op.name());
    }
    cuda.free();
    buf.free();
}

/// A product's weights (made F32 and converted to their type on the CPU), its activations and
/// its result; the activations are a permuted view of `stored` where `permuted`, as
/// attention's are.
struct Product {
    plain: TensorPtr,
    w: TensorPtr,
    stored: TensorPtr,
    out: TensorPtr,
}

fn product(c: &mut Context, w_type: Type, ne_w: [i64; 4], ne_x: [i64; 4], permuted: bool) -> Product {
    let plain = c.new_tensor(Type::F32, &ne_w);
    let w = c.new_tensor(w_type, &ne_w);
    let (stored, x) = if permuted {
        let stored = c.new_tensor(Type::F32, &[ne_x[0], ne_x[2], ne_x[1], ne_x[3]]);
        (stored, ops::shape::permute(c, stored, 0, 2, 1, 3))
    } else {
        let x = c.new_tensor(Type::F32, &ne_x);
        (x, x)
    };
    let out = ops::matmul::mul_mat(c, w, x);
    Product { plain, w, stored, out }
}

/// A [`product`] of random weights and activations (seeded by `seed`), computed on the CPU.
fn product_on_cpu(c: &mut Context, w_type: Type, ne_w: [i64; 4], ne_x: [i64; 4], permuted: bool, seed: u64) -> Product {
    let mut rng = Rng::new(seed);
    let cpu = product(c, w_type, ne_w, ne_x, permuted);
    random(cpu.plain, &mut rng, -0.5, 0.5);
    random(cpu.stored, &mut rng, -1.0, 1.0);
    compute_on_cpu(c, cpu.plain, cpu.w, cpu.out);
    cpu
}

#[test]
fn products_match_the_cpu_in_the_vector_kernel_and_the_gemm() {
    // (weights, their shape, the activations' shape, permuted activations): up to 8 columns
    // take the vector kernel, more the GEMM; the two after Q4_K share each weight matrix
    // between two activation matrices along dimension 2 and along dimension 3, as
    // grouped-query attention does. Each
    // term is the CPU's exactly (activations converted, or rounded to 8 bits, as the CPU does
    // it), so only the order of the sums differs.
    let cases = [
        (Type::F32, [64, 40, 1, 1], [64, 33, 1, 1], false),
        (Type::F16, [64, 40, 1, 1], [64, 9, 1, 1], false),
        (Type::BF16, [64, 40, 1, 1], [64, 33, 1, 1], false),
        (Type::Q4_0, [64, 40, 1, 1], [64, 33, 1, 1], false),
        (Type::Q4_K, [256, 24, 1, 1], [256, 17, 1, 1], false),
        (Type::F16, [64, 20, 2, 1], [64, 12, 4, 2], true),
        (Type::F32, [64, 20, 2, 1], [64, 12, 2, 3], false),
        // float rows of any length (head sizes such as 80): the vector kernel's last group
        // and the GEMM's converted activations end where the row does
        (Type::F32, [80, 40, 1, 1], [80, 3, 1, 1], false),
        (Type::F16, [129, 40, 1, 1], [129, 1, 1, 1], false),
        (Type::BF16, [67, 20, 1, 1], [67, 5, 1, 1], false),
        (Type::F16, [80, 40, 1, 1], [80, 17, 1, 1], false),
        (Type::BF16, [129, 20, 1, 1], [129, 12, 1, 1], false),
    ];
    // SAFETY: the device's backend is live until freed below.
    let cuda = device().init_backend(None).expect("a CUDA backend");
    for (w_type, ne_w, ne_x, permuted) in cases {
        let mut c = ctx();
        let cpu = product_on_cpu(&mut c, w_type, ne_w, ne_x, permuted, 7);

        let mut d = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let dev = product(&mut d, w_type, ne_w, ne_x, permuted);
        let buf = alloc_ctx_tensors(&d, device().buffer_type()).expect("a device buffer");
        tensor_set(dev.w, &bytes(cpu.w), 0);
        tensor_set(dev.stored, &bytes(cpu.stored), 0);
        let err = nmse(&compute_on_device(cuda, &mut d, dev.out), &values(cpu.out));
        assert!(err < 1e-10, "{w_type:?} {ne_w:?} x {ne_x:?}: nmse {err:e}");
        buf.free();
    }
    cuda.free();
}

/// A MUL_MAT_ID's expert weights (made F32 and converted on the CPU), its activations, its
/// ids and its result.
struct ExpertProduct {
    plain: TensorPtr,
    w: TensorPtr,
    x: TensorPtr,
    ids: TensorPtr,
    out: TensorPtr,
}

fn expert_product(c: &mut Context, w_type: Type, ne_w: [i64; 3], ne_x: [i64; 3], slots: i64) -> ExpertProduct {
    let plain = c.new_tensor(Type::F32, &ne_w);
    let w = c.new_tensor(w_type, &ne_w);
    let x = c.new_tensor(Type::F32, &ne_x);
    let ids = c.new_tensor(Type::I32, &[slots, ne_x[2]]);
    let out = ops::matmul::mul_mat_id(c, w, x, ids);
    ExpertProduct { plain, w, x, ids, out }
}

#[test]
fn expert_products_match_the_cpu_in_tiles_and_the_vector_kernel() {
    // (weights, experts' shape, activations' shape, slots a token): more tokens than the
    // vector kernel takes (but in the last case), so the columns are grouped by expert and
    // multiplied in tiles of 64 rows by 32 columns. 70 and 130 rows leave a partial tile of rows; 200 tokens give some
    // experts several tiles of columns; activations of one row serve every slot.
    let cases = [
        (Type::F32, [64, 70, 4], [64, 2, 40], 2),
        (Type::F16, [64, 70, 6], [64, 1, 33], 3),
        (Type::Q4_0, [96, 130, 8], [96, 4, 200], 4),
        (Type::Q4_K, [256, 40, 5], [256, 2, 24], 2),
        (Type::MXFP4, [64, 64, 3], [64, 1, 17], 1),
        // float rows of any length, in the tiles and in the vector kernel (4 tokens)
        (Type::F16, [72, 40, 4], [72, 2, 30], 2),
        (Type::BF16, [80, 33, 4], [80, 1, 4], 2),
    ];
    // SAFETY: the device's backend is live until freed below.
    let cuda = device().init_backend(None).expect("a CUDA backend");
    for (w_type, ne_w, ne_x, slots) in cases {
        let mut c = ctx();
        let mut rng = Rng::new(5);
        let cpu = expert_product(&mut c, w_type, ne_w, ne_x, slots);
        random(cpu.plain, &mut rng, -0.5, 0.5);
        random(cpu.x, &mut rng, -1.0, 1.0);
        // each token's slots name distinct experts, as a router's top-k does; the last
        // expert is never chosen
        let chosen = ne_w[2] - 1;
        let ids: Vec<u8> = (0..ne_x[2])
            .flat_map(|_| {
                let first = rng.uniform(0.0, chosen as f32) as i64;
                (0..slots).map(move |s| ((first + s) % chosen) as i32)
            })
            .flat_map(i32::to_ne_bytes)
            .collect();
        // SAFETY: ids holds slots x tokens I32 values in host memory.
        unsafe { std::ptr::copy_nonoverlapping(ids.as_ptr(), cpu.ids.data.cast::<u8>(), ids.len()) };
        compute_on_cpu(&mut c, cpu.plain, cpu.w, cpu.out);

        let mut d = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let dev = expert_product(&mut d, w_type, ne_w, ne_x, slots);
        let buf = alloc_ctx_tensors(&d, device().buffer_type()).expect("a device buffer");
        for (from, to) in [(cpu.w, dev.w), (cpu.x, dev.x), (cpu.ids, dev.ids)] {
            tensor_set(to, &bytes(from), 0);
        }
        assert!(cuda.supports_op(dev.out), "{w_type:?} {ne_w:?} x {ne_x:?}");
        let err = nmse(&compute_on_device(cuda, &mut d, dev.out), &values(cpu.out));
        assert!(err < 1e-10, "{w_type:?} {ne_w:?} x {ne_x:?}, {slots} slots: nmse {err:e}");
        buf.free();
    }
    cuda.free();
}

#[test]
fn without_cublas_batches_take_the_tiles() {
    // An emulated GPU without cuBLAS. Its device memory is host memory, so the product's
    // tensors can live in a CPU context and the op be queued directly.
    let gpu = crate::cuda::emulator::gpu::Emulated::without_gemm();
    let scratch = crate::cuda::scratch::Scratch::default();
    let queue = crate::cuda::ops::Queue { gpu: &gpu, stream: crate::cuda::gpu::Stream::DEFAULT, scratch: &scratch };
    // a partial tile of rows and of columns, broadcast weights, F16 activations' rounding,
    // 8-bit rounding of blocks of 32 and of 256
    let cases = [
        (Type::F32, [80, 70, 1, 1], [80, 33, 1, 1]),
        (Type::F16, [64, 40, 2, 1], [64, 12, 4, 2]),
        (Type::Q4_0, [64, 130, 1, 1], [64, 40, 1, 1]),
        (Type::Q4_K, [256, 24, 1, 1], [256, 17, 1, 1]),
    ];
    for (w_type, ne_w, ne_x) in cases {
        let mut c = ctx();
        let cpu = product_on_cpu(&mut c, w_type, ne_w, ne_x, false, 3);
        let tiled = ops::matmul::mul_mat(&mut c, cpu.w, cpu.stored);
        crate::cuda::ops::compute(&queue, &tiled).expect("the tiles need no cuBLAS");
        let err = nmse(&values(tiled), &values(cpu.out));
        assert!(err < 1e-10, "{w_type:?} {ne_w:?} x {ne_x:?}: nmse {err:e}");
    }
    // SAFETY: the emulated device has finished every queued launch.
    unsafe { scratch.free(&gpu) };
}
