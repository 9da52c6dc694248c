//! Graphs: construction, copies, lookups, printing, and the hash set and fusion helpers that
//! backends use.

use std::ffi::c_char;

use super::{c_str, context, tensor};
use crate::core::context::Context;
use crate::core::graph::{Graph, HashSet, OwnedHashSet, cgraph, hash};
use crate::core::op::Op;
use crate::core::tensor::{Tensor, TensorPtr};

/// The graph behind a pointer the API requires to be non-null.
#[track_caller]
fn graph<'a>(ptr: *const Graph) -> &'a mut Graph {
    // SAFETY: C callers pass graphs made by ggml_new_graph* (or views of them) that are still
    // alive, and do not use them from two threads at once (ggml's contract).
    match unsafe { ptr.cast_mut().as_mut() } {
        Some(g) => g,
        None => {
            let loc = std::panic::Location::caller();
            crate::core::log::abort(loc.file(), loc.line(), "NULL graph passed to the ggml API")
        }
    }
}

/// A graph argument that may be NULL.
fn opt_graph<'a>(ptr: *const Graph) -> Option<&'a Graph> {
    // SAFETY: as `graph`.
    unsafe { ptr.as_ref() }
}

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

/// A hash set argument: one from ggml_hash_set_new or inside a live graph.
#[track_caller]
fn hash_set<'a>(ptr: *mut HashSet) -> &'a mut HashSet {
    // SAFETY: C passes sets made by ggml_hash_set_new or embedded in a live graph.
    match unsafe { ptr.as_mut() } {
        Some(set) => set,
        None => crate::ggml_abort!("NULL hash set passed to the ggml API"),
    }
}

fn out(t: Option<TensorPtr>) -> *mut Tensor {
    t.map_or(std::ptr::null_mut(), TensorPtr::as_ptr)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_graph(ctx: *mut Context) -> *mut Graph {
    cgraph::new_graph(context(ctx)).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_new_graph_custom(ctx: *mut Context, size: usize, grads: bool) -> *mut Graph {
    cgraph::new_graph_custom(context(ctx), size, grads).as_ptr()
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
    graph(cgraph).build_forward_expand(tensor(t));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_build_forward_order(cgraph: *mut Graph, t: *mut Tensor) {
    graph(cgraph).build_forward_order(tensor(t));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_build_forward_select(
    cgraph: *mut Graph,
    tensors: *mut *mut Tensor,
    n_tensors: i32,
    idx: i32,
) -> *mut Tensor {
    crate::ggml_assert!(idx >= 0 && idx < n_tensors, "selected index {} out of {} tensors", idx, n_tensors);
    let list: Vec<TensorPtr> = array(tensors.cast_const(), n_tensors).iter().map(|&t| tensor(t)).collect();
    graph(cgraph).build_forward_select(&list, idx as usize).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_build_backward_expand(ctx: *mut Context, cgraph: *mut Graph, grad_accs: *mut *mut Tensor) {
    let g = graph(cgraph);
    // A non-null grad_accs has one entry per node of the forward graph; a null entry reads as
    // None (Option<TensorPtr> has the pointer's layout).
    let accs = (!grad_accs.is_null()).then(|| array(grad_accs.cast_const().cast::<Option<TensorPtr>>(), g.n_nodes));
    g.build_backward_expand(context(ctx), accs);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_view(cgraph: *mut Graph, i0: i32, i1: i32) -> Graph {
    graph(cgraph).view(i0, i1)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_cpy(src: *mut Graph, dst: *mut Graph) {
    if std::ptr::eq(src, dst) {
        // Copying a graph onto itself keeps everything but its gradients, as in ggml.
        graph(dst).clear_grads();
        return;
    }
    graph(src).copy_to(graph(dst));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_dup(ctx: *mut Context, cgraph: *mut Graph, force_grads: bool) -> *mut Graph {
    cgraph::dup(context(ctx), graph(cgraph), force_grads).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_reset(cgraph: *mut Graph) {
    if !cgraph.is_null() {
        graph(cgraph).reset();
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_clear(cgraph: *mut Graph) {
    graph(cgraph).clear();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_size(cgraph: *mut Graph) -> i32 {
    graph(cgraph).size
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_node(cgraph: *mut Graph, i: i32) -> *mut Tensor {
    graph(cgraph).node_at(i).as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_nodes(cgraph: *mut Graph) -> *mut *mut Tensor {
    graph(cgraph).nodes.cast()
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_n_nodes(cgraph: *mut Graph) -> i32 {
    graph(cgraph).n_nodes
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_add_node(cgraph: *mut Graph, t: *mut Tensor) {
    graph(cgraph).add_node(tensor(t));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_get_tensor(cgraph: *const Graph, name: *const c_char) -> *mut Tensor {
    out(graph(cgraph).tensor_named(c_str(name)))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_get_grad(cgraph: *const Graph, node: *const Tensor) -> *mut Tensor {
    out(graph(cgraph).grad(node))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_get_grad_acc(cgraph: *const Graph, node: *const Tensor) -> *mut Tensor {
    out(graph(cgraph).grad_acc(node))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_print(cgraph: *const Graph) {
    graph(cgraph).print();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_graph_dump_dot(gb: *const Graph, cgraph: *const Graph, filename: *const c_char) {
    let forward = opt_graph(cgraph);
    let name = String::from_utf8_lossy(c_str(filename)).into_owned();
    graph(gb).dump_dot(forward, &name);
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
    graph(cgraph).can_fuse_subgraph(array(node_idxs, count), array(ops, count), array(outputs, num_outputs))
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
    hash_set(set).reset();
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_hash_set_free(set: *mut HashSet) {
    let raw = *hash_set(set);
    // SAFETY: C frees, once, a set that came from ggml_hash_set_new (OwnedHashSet::into_raw).
    drop(unsafe { OwnedHashSet::from_raw(raw) });
}
