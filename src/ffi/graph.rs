//! Graphs: construction, copies, lookups, printing, and the hash set and fusion helpers that
//! backends use.

use std::ffi::c_char;

use crate::core::context::Context;
use crate::core::graph::{Graph, HashSet, OwnedHashSet, cgraph, hash};
use crate::core::op::Op;
use crate::core::tensor::{Tensor, TensorPtr};
use crate::ffi::handle::{arg, opt_arg};

/// An array argument of `count` elements (none for a non-positive count).
fn array<'a, T>(ptr: *const T, count: i32) -> &'a [T] {
    let n = usize::try_from(count).unwrap_or(0);
    if n == 0 {
        return &[];
    }
    crate::ggml_assert!(!ptr.is_null(), "NULL array of {} elements", n);
    // SAFETY: C callers pass arrays holding the count they pass with them (ggml's contract).
    unsafe { std::slice::from_raw_parts(ptr, n) }
}

fn out(t: Option<TensorPtr>) -> *mut Tensor {
    t.map_or(std::ptr::null_mut(), TensorPtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_graph(ctx: *mut Context) -> *mut Graph {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { cgraph::new_graph(arg!(ctx)).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_graph_custom(ctx: *mut Context, size: usize, grads: bool) -> *mut Graph {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { cgraph::new_graph_custom(arg!(ctx), size, grads).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_overhead() -> usize {
    cgraph::overhead()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_overhead_custom(size: usize, grads: bool) -> usize {
    cgraph::overhead_custom(size, grads)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_next_uid() -> u64 {
    cgraph::next_uid()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_build_forward_expand(cgraph: *mut Graph, t: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).build_forward_expand(arg!(t)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_build_forward_order(cgraph: *mut Graph, t: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).build_forward_order(arg!(t)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_build_forward_select(
    cgraph: *mut Graph,
    tensors: *mut *mut Tensor,
    n_tensors: i32,
    idx: i32,
) -> *mut Tensor {
    crate::ggml_assert!(idx >= 0 && idx < n_tensors, "selected index {} out of {} tensors", idx, n_tensors);
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let list: Vec<TensorPtr> = unsafe { array(tensors.cast_const(), n_tensors).iter().map(|&t| arg!(t)).collect() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).build_forward_select(&list, idx as usize).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_build_backward_expand(ctx: *mut Context, cgraph: *mut Graph, grad_accs: *mut *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let g = unsafe { arg!(cgraph) };
    // A non-null grad_accs has one entry per node of the forward graph; a null entry reads as
    // None (Option<TensorPtr> has the pointer's layout).
    let accs = (!grad_accs.is_null()).then(|| array(grad_accs.cast_const().cast::<Option<TensorPtr>>(), g.n_nodes));
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { g.build_backward_expand(arg!(ctx), accs) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_view(cgraph: *mut Graph, i0: i32, i1: i32) -> Graph {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).view(i0, i1) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_cpy(src: *mut Graph, dst: *mut Graph) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        if std::ptr::eq(src, dst) {
            // Copying a graph onto itself keeps everything but its gradients, as in ggml.
            arg!(dst).clear_grads();
            return;
        }
    }
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(src).copy_to(arg!(dst)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_dup(ctx: *mut Context, cgraph: *mut Graph, force_grads: bool) -> *mut Graph {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { cgraph::dup(arg!(ctx), arg!(cgraph), force_grads).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_reset(cgraph: *mut Graph) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe {
        if !cgraph.is_null() {
            arg!(cgraph).reset();
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_clear(cgraph: *mut Graph) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).clear() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_size(cgraph: *mut Graph) -> i32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).size }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_node(cgraph: *mut Graph, i: i32) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).node_at(i).as_ptr() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_nodes(cgraph: *mut Graph) -> *mut *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).nodes.cast() }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_n_nodes(cgraph: *mut Graph) -> i32 {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).n_nodes }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_add_node(cgraph: *mut Graph, t: *mut Tensor) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).add_node(arg!(t)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_get_tensor(cgraph: *const Graph, name: *const c_char) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { out(arg!(cgraph).tensor_named(arg!(name))) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_get_grad(cgraph: *const Graph, node: *const Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { out(arg!(cgraph).grad(node)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_get_grad_acc(cgraph: *const Graph, node: *const Tensor) -> *mut Tensor {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { out(arg!(cgraph).grad_acc(node)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_print(cgraph: *const Graph) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).print() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_dump_dot(gb: *const Graph, cgraph: *const Graph, filename: *const c_char) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let forward = unsafe { opt_arg!(cgraph) };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let name = unsafe { String::from_utf8_lossy(arg!(filename)).into_owned() };
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(gb).dump_dot(forward.as_deref(), &name) };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_can_fuse_subgraph_ext(
    cgraph: *const Graph,
    node_idxs: *const i32,
    count: i32,
    ops: *const Op,
    outputs: *const i32,
    num_outputs: i32,
) -> bool {
    crate::ggml_assert!(!outputs.is_null() && num_outputs > 0, "a fused subgraph needs at least one output");
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(cgraph).can_fuse_subgraph(array(node_idxs, count), array(ops, count), array(outputs, num_outputs)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_hash_size(min_sz: usize) -> usize {
    hash::table_size(min_sz)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_hash_set_new(size: usize) -> HashSet {
    OwnedHashSet::new(size).into_raw()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_hash_set_reset(set: *mut HashSet) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(set).reset() };
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_hash_set_free(set: *mut HashSet) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let raw = unsafe { *arg!(set) };
    // SAFETY: C frees, once, a set that came from ggml_hash_set_new (OwnedHashSet::into_raw).
    drop(unsafe { OwnedHashSet::from_raw(raw) });
}
