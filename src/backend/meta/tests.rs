//! Meta devices over two simple devices: the tables, how tensor data is cut into slices and
//! put back together, and graphs whose partial sums must be all-reduced.

use std::ffi::{CStr, c_void};

use super::buffer::{self, META_BASE, simple_tensor};
use super::{SplitAxis, SplitState, alloc_ctx_tensors, buft_is_meta, device_is_meta, meta_device};
use crate::backend::backend::BackendPtr;
use crate::backend::buffer::{
    self as bufops, BufferPtr, BufferTypePtr, tensor_alloc, tensor_get, tensor_memset, tensor_set,
};
use crate::backend::device::DevicePtr;
use crate::backend::interface::{BufferUsage, DevType};
use crate::backend::test_backend::{DeviceSpec, new_reg};
use crate::core::context::{Context, InitParams};
use crate::core::graph::cgraph;
use crate::core::ops::{elementwise, matmul, shape};
use crate::core::status::Status;
use crate::core::tensor::TensorPtr;
use crate::core::types::Type;
use crate::ffi::test_callbacks::split_by_name;

fn test_devices(n: usize) -> Vec<DevicePtr> {
    const NAMES: [&str; 4] = ["A", "B", "C", "D"];
    let specs: Vec<DeviceSpec> = NAMES[..n]
        .iter()
        .map(|&name| DeviceSpec { name, dev_type: DevType::GPU, async_: false, events: false })
        .collect();
    let reg = new_reg("meta-test", &specs);
    // SAFETY: test registries are leaked.
    (0..n).map(|i| reg.dev_get(i)).collect()
}

fn meta_over(devs: &[DevicePtr]) -> (DevicePtr, BufferTypePtr) {
    let dev = meta_device(devs, Some(split_by_name), std::ptr::null_mut());
    (dev, dev.buffer_type())
}

fn no_alloc_ctx() -> Box<Context> {
    Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true })
}

fn named(ctx: &mut Context, name: &str, ne: &[i64]) -> TensorPtr {
    let t = ctx.new_tensor(Type::F32, ne);
    t.get_mut().set_name(name);
    t
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn read(t: TensorPtr) -> Vec<f32> {
    let mut out = vec![0u8; t.nbytes()];
    tensor_get(t, &mut out, 0);
    floats(&out)
}

fn slice(t: TensorPtr, j: usize) -> TensorPtr {
    simple_tensor(&t, j).expect("slice")
}

#[test]
fn axis_names_and_layout() {
    assert_eq!(SplitAxis::AXIS_2.name(), Some(c"2"));
    assert_eq!(SplitAxis::PARTIAL.name(), Some(c"PARTIAL"));
    assert_eq!(SplitAxis::UNKNOWN.name(), Some(c"UNKNOWN"));
    assert_eq!(SplitAxis(5).name(), None);
    assert_eq!(std::mem::size_of::<SplitState>(), 2128);
    let mut s = SplitState::new(SplitAxis::AXIS_1);
    s.ne[..2].copy_from_slice(&[2, 4]);
    assert_eq!((s.device_extent(0, 2), s.device_extent(1, 2), s.total_extent(2)), (2, 4, 6));
}

#[test]
fn device_and_buffer_type_tables() {
    let devs = test_devices(2);
    let (dev, buft) = meta_over(&devs);
    assert!(device_is_meta(dev) && !device_is_meta(devs[0]));
    assert_eq!(meta_device(&devs, Some(split_by_name), std::ptr::null_mut()), dev, "made once");
    // SAFETY: device names are C strings.
    assert_eq!(unsafe { CStr::from_ptr(dev.name()) }, c"Meta(A,B)");
    assert_eq!(dev.dev_type(), DevType::META);
    let props = dev.props();
    assert_eq!((props.memory_free, props.memory_total), (2 << 20, 4 << 20));
    assert!(!props.caps.async_ && !props.caps.events);
    assert!(buft_is_meta(buft));
    assert_eq!(buft.name_lossy(), "Meta(CPU,CPU)");
    assert_eq!(dev.buffer_type(), buft, "one buffer type per device");
    assert!(buft.is_host());
    assert!(dev.supports_buft(buft));
    assert!(!devs[0].supports_buft(buft));
    assert!(dev.host_buffer_type().is_none());
}

/// Weights with every kind of split, written and read back through the meta buffer.
#[test]
fn set_and_get_split_tensors() {
    let (_, buft) = meta_over(&test_devices(2));
    let mut ctx = no_alloc_ctx();
    let rows = named(&mut ctx, "a0_2_4", &[6, 3]);
    let cols = named(&mut ctx, "a1_1_2", &[4, 3]);
    let mirrored = named(&mut ctx, "m", &[5]);
    let part = named(&mut ctx, "part", &[4]);
    let seg = named(&mut ctx, "seg", &[6, 2]);
    let buf = alloc_ctx_tensors(&ctx, buft);
    assert!(buffer::buffer_is_meta(buf));
    assert!(buf.size() > 0);

    let v: Vec<f32> = (0..18).map(|i| i as f32).collect();
    tensor_set(rows, &bytes(&v), 0);
    assert_eq!(read(slice(rows, 0)), [0., 1., 6., 7., 12., 13.]);
    assert_eq!(read(slice(rows, 1)), [2., 3., 4., 5., 8., 9., 10., 11., 14., 15., 16., 17.]);
    assert_eq!(read(rows), v);

    let v: Vec<f32> = (0..12).map(|i| i as f32).collect();
    tensor_set(cols, &bytes(&v), 0);
    assert_eq!(read(slice(cols, 0)), [0., 1., 2., 3.]);
    assert_eq!(read(slice(cols, 1)), [4., 5., 6., 7., 8., 9., 10., 11.]);
    assert_eq!(read(cols), v);

    tensor_set(mirrored, &bytes(&[1., 2., 3., 4., 5.]), 0);
    assert_eq!(read(slice(mirrored, 1)), [1., 2., 3., 4., 5.]);
    assert_eq!(read(mirrored), [1., 2., 3., 4., 5.]);

    tensor_set(part, &bytes(&[2., 4., 6., 8.]), 0);
    assert_eq!(read(slice(part, 0)), [1., 2., 3., 4.]);
    assert_eq!(read(slice(part, 1)), [1., 2., 3., 4.]);

    // Two segments: [1 | 1] then [1 | 3] per row.
    let v: Vec<f32> = (0..12).map(|i| i as f32).collect();
    tensor_set(seg, &bytes(&v), 0);
    assert_eq!(read(slice(seg, 0)), [0., 2., 6., 8.]);
    assert_eq!(read(slice(seg, 1)), [1., 3., 4., 5., 7., 9., 10., 11.]);
    assert_eq!(read(seg), v);

    tensor_memset(rows, 0, 24, 24);
    assert_eq!(read(rows)[6..12], [0.; 6]);
    assert_eq!(read(rows)[..6], [0., 1., 2., 3., 4., 5.]);
    buf.free();
}

/// Places graph tensors in a compute meta buffer, sources first, as the graph allocator does.
fn place(buf: BufferPtr, tensors: &[TensorPtr]) {
    let mut offset = 0;
    for &t in tensors {
        assert_eq!(tensor_alloc(buf, t, (META_BASE + offset) as *mut c_void), Status::SUCCESS);
        offset += t.nbytes().next_multiple_of(64);
    }
}

fn init_meta_backend(dev: DevicePtr) -> BackendPtr {
    // SAFETY: the device returns a live backend.
    dev.init_backend(None).expect("meta backend")
}

/// Weight rows split, activation mirrored: each device computes its rows of the output.
/// Contraction dimension split on both: every device holds a partial sum.
#[test]
fn split_states_of_matrix_products() {
    let (_, buft) = meta_over(&test_devices(2));
    let mut wctx = no_alloc_ctx();
    let w_rows = named(&mut wctx, "a1_2_4", &[4, 6]);
    let w_k = named(&mut wctx, "a0_2_2", &[4, 6]);
    let x = named(&mut wctx, "x", &[4, 1]);
    let x_k = named(&mut wctx, "a0_2_2", &[4, 1]);
    let wbuf = alloc_ctx_tensors(&wctx, buft);
    wbuf.set_usage(BufferUsage::WEIGHTS);

    let mut gctx = no_alloc_ctx();
    let y_rows = matmul::mul_mat(&mut gctx, w_rows, x);
    let y_t = shape::transpose(&mut gctx, y_rows);
    let y_partial = matmul::mul_mat(&mut gctx, w_k, x_k);
    let cbuf = buft.alloc_buffer(4096).expect("compute buffer");
    cbuf.set_usage(BufferUsage::COMPUTE);
    place(cbuf, &[y_rows, y_partial]);
    assert_eq!(bufops::view_init(y_t), Status::SUCCESS);

    let s = buffer::split_state(y_rows, false);
    assert_eq!(s.axis, SplitAxis::AXIS_0);
    assert_eq!((s.ne[0], s.ne[1]), (2, 4));
    assert_eq!((slice(y_rows, 0).ne, slice(y_rows, 1).ne), ([2, 1, 1, 1], [4, 1, 1, 1]));
    assert_eq!(buffer::split_state(y_t, false).axis, SplitAxis::AXIS_1);
    assert_eq!(slice(y_t, 1).ne, [1, 4, 1, 1]);
    assert_eq!(buffer::split_state(y_partial, false).axis, SplitAxis::PARTIAL);
    assert_eq!(buffer::split_state(y_partial, true).axis, SplitAxis::MIRRORED);
    assert_eq!(slice(y_partial, 0).ne, [6, 1, 1, 1]);
    cbuf.free();
    wbuf.free();
}

/// Element-wise ops on tensors split along rows run on the slices, and the result reads back
/// whole.
#[test]
fn graph_of_split_tensors() {
    let (dev, buft) = meta_over(&test_devices(2));
    let mut wctx = no_alloc_ctx();
    let a = named(&mut wctx, "a0_2_4", &[6, 3]);
    let b = named(&mut wctx, "a0_2_4", &[6, 3]);
    let wbuf = alloc_ctx_tensors(&wctx, buft);
    let av: Vec<f32> = (0..18).map(|i| i as f32).collect();
    let bv: Vec<f32> = (0..18).map(|i| 1.0 - i as f32 * 0.5).collect();
    tensor_set(a, &bytes(&av), 0);
    tensor_set(b, &bytes(&bv), 0);

    let mut gctx = no_alloc_ctx();
    let c = elementwise::add(&mut gctx, a, b);
    let d = elementwise::mul(&mut gctx, c, a);
    let graph = cgraph::new_graph(&mut gctx);
    graph.get_mut().build_forward_expand(d);
    let cbuf = buft.alloc_buffer(4096).expect("compute buffer");
    cbuf.set_usage(BufferUsage::COMPUTE);
    place(cbuf, &[c, d]);
    assert_eq!(buffer::split_state(d, false).axis, SplitAxis::AXIS_0);

    let backend = init_meta_backend(dev);
    assert!(super::backend_is_meta(backend));
    assert_eq!(super::meta_n_backends(backend), 2);
    assert_eq!(backend.graph_compute(graph.get_mut()), Status::SUCCESS);
    let want: Vec<f32> = av.iter().zip(&bv).map(|(a, b)| (a + b) * a).collect();
    assert_eq!(read(d), want);
    // Again, with the subgraphs reused.
    graph.get_mut().uid = 7;
    assert_eq!(backend.graph_compute(graph.get_mut()), Status::SUCCESS);
    assert_eq!(backend.graph_compute(graph.get_mut()), Status::SUCCESS);
    assert_eq!(read(d), want);
    backend.free();
    cbuf.free();
    wbuf.free();
}

/// A partial sum in the middle of a graph is all-reduced before the next subgraph runs: after
/// the run every device holds the full sum.
fn partial_sums_over(n: usize) {
    let (dev, buft) = meta_over(&test_devices(n));
    let mut wctx = no_alloc_ctx();
    let p1 = named(&mut wctx, "part", &[4]);
    let p2 = named(&mut wctx, "part", &[4]);
    let p3 = named(&mut wctx, "part", &[4]);
    let wbuf = alloc_ctx_tensors(&wctx, buft);
    let scale = n as f32;
    tensor_set(p1, &bytes(&[1.0 * scale, 2.0 * scale, 3.0 * scale, 4.0 * scale]), 0);
    tensor_set(p2, &bytes(&[10.0 * scale; 4]), 0);
    tensor_set(p3, &bytes(&[0.5 * scale; 4]), 0);

    let mut gctx = no_alloc_ctx();
    let z = elementwise::add(&mut gctx, p1, p2);
    let u = elementwise::add(&mut gctx, z, p3);
    let graph = cgraph::new_graph(&mut gctx);
    graph.get_mut().build_forward_expand(u);
    let cbuf = buft.alloc_buffer(4096).expect("compute buffer");
    cbuf.set_usage(BufferUsage::COMPUTE);
    place(cbuf, &[z, u]);
    assert_eq!(buffer::split_state(z, false).axis, SplitAxis::PARTIAL);

    let backend = init_meta_backend(dev);
    assert_eq!(backend.graph_compute(graph.get_mut()), Status::SUCCESS);
    let sum = [11.0 * scale, 12.0 * scale, 13.0 * scale, 14.0 * scale];
    for j in 0..n {
        assert_eq!(read(slice(z, j)), sum, "device {j} of {n}");
        let with_p3: Vec<f32> = sum.iter().map(|s| s + 0.5).collect();
        assert_eq!(read(slice(u, j)), with_p3, "device {j} of {n}");
    }
    backend.free();
    cbuf.free();
    wbuf.free();
}

#[test]
fn partial_sums_are_all_reduced_over_two_devices() {
    partial_sums_over(2);
}

#[test]
fn partial_sums_are_all_reduced_over_three_devices() {
    partial_sums_over(3);
}

#[test]
fn partial_sums_are_all_reduced_over_four_devices() {
    partial_sums_over(4);
}

/// A view of a split weight (rows 1 and 2) gets views of the weight's slices, at offsets
/// scaled to the slices' rows.
#[test]
fn graph_over_a_view_of_a_split_weight() {
    let (dev, buft) = meta_over(&test_devices(2));
    let mut wctx = no_alloc_ctx();
    let a = named(&mut wctx, "a0_2_4", &[6, 3]);
    let b = named(&mut wctx, "a0_2_4", &[6, 2]);
    let wbuf = alloc_ctx_tensors(&wctx, buft);
    let av: Vec<f32> = (0..18).map(|i| i as f32).collect();
    let bv: Vec<f32> = (0..12).map(|i| 100.0 * i as f32).collect();
    tensor_set(a, &bytes(&av), 0);
    tensor_set(b, &bytes(&bv), 0);

    let mut gctx = no_alloc_ctx();
    let v = shape::view_2d(&mut gctx, a, 6, 2, a.nb[1], a.nb[1]);
    let e = elementwise::add(&mut gctx, v, b);
    let graph = cgraph::new_graph(&mut gctx);
    graph.get_mut().build_forward_expand(e);
    assert_eq!(bufops::view_init(v), Status::SUCCESS);
    let cbuf = buft.alloc_buffer(4096).expect("compute buffer");
    cbuf.set_usage(BufferUsage::COMPUTE);
    place(cbuf, &[e]);
    assert_eq!(buffer::split_state(v, false).axis, SplitAxis::AXIS_0);
    assert_eq!((slice(v, 0).view_offs, slice(v, 1).view_offs), (8, 16));
    assert_eq!(read(slice(v, 0)), [6., 7., 12., 13.]);

    let backend = init_meta_backend(dev);
    assert_eq!(backend.graph_compute(graph.get_mut()), Status::SUCCESS);
    let want: Vec<f32> = av[6..].iter().zip(&bv).map(|(a, b)| a + b).collect();
    assert_eq!(read(e), want);
    backend.free();
    cbuf.free();
    wbuf.free();
}

/// The backend's asynchronous writes and reads split and gather as the buffer's do.
#[test]
fn async_set_and_get_through_the_backend() {
    let (dev, buft) = meta_over(&test_devices(2));
    let mut wctx = no_alloc_ctx();
    let a = named(&mut wctx, "a1_1_2", &[4, 3]);
    let m = named(&mut wctx, "m", &[3]);
    let wbuf = alloc_ctx_tensors(&wctx, buft);
    let backend = init_meta_backend(dev);
    assert_eq!(super::meta_simple_backend(backend, 1).device(), test_devices_of(dev)[1]);

    let av: Vec<f32> = (0..12).map(|i| i as f32 * 2.0).collect();
    backend.tensor_set_async(a, &bytes(&av), 0);
    backend.tensor_set_async(m, &bytes(&[7., 8., 9.]), 0);
    backend.synchronize();
    assert_eq!(read(slice(a, 1)), av[4..]);
    assert_eq!(read(slice(m, 1)), [7., 8., 9.]);
    let mut out = vec![0u8; 48];
    backend.tensor_get_async(a, &mut out, 0);
    backend.synchronize();
    assert_eq!(floats(&out), av);
    backend.free();
    wbuf.free();
}

fn test_devices_of(meta: DevicePtr) -> Vec<DevicePtr> {
    meta.downcast::<super::device::MetaDevice>().expect("a meta device").simple.clone()
}
