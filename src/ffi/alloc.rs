//! The graph allocator (`ggml_gallocr_*`) and `ggml_op_can_inplace`.

use std::ffi::c_int;

use crate::alloc::{Gallocr, op_can_inplace};
use crate::backend::buffer::BufferTypePtr;
use crate::backend::interface::BufferType;
use crate::core::graph::Graph;
use crate::core::op::Op;
use crate::ffi::handle::{arg, handle, this_export};

/// One buffer id per tensor (`count` of them), or none for a NULL list.
fn buffer_ids<'a>(ids: *const c_int, count: i32) -> Option<&'a [i32]> {
    if ids.is_null() {
        return None;
    }
    let n = usize::try_from(count).unwrap_or(0);
    if n == 0 {
        return Some(&[]);
    }
    // SAFETY: the API requires a non-null id list to hold one id per node (or leaf) of the
    // graph it comes with, and `count` is that graph's count.
    Some(unsafe { std::slice::from_raw_parts(ids, n) })
}

/// The `n` buffer types of a C array, for the export named by `export` (see [`this_export!`]).
///
/// # Safety
/// `bufts` holds `n` live buffer types (the C caller's contract).
unsafe fn buft_list(bufts: *const *mut BufferType, n: c_int, export: &'static str) -> Vec<BufferTypePtr> {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 {
        return Vec::new();
    }
    crate::ggml_assert!(!bufts.is_null(), "NULL list of {} buffer types", n);
    // SAFETY: the caller passes an array of n_bufs buffer type pointers.
    let list = unsafe { std::slice::from_raw_parts(bufts, n) };
    // SAFETY: passed on from the caller.
    list.iter().map(|&b| unsafe { handle(b, export) }).collect()
}

/// Copies `values` into a C array the caller sized for them.
fn write_sizes(out: *mut usize, values: &[usize]) {
    if values.is_empty() {
        return;
    }
    crate::ggml_assert!(!out.is_null(), "NULL sizes array");
    // SAFETY: the API requires `sizes` to hold one entry per buffer of the allocator, which
    // is values.len().
    unsafe { std::slice::from_raw_parts_mut(out, values.len()) }.copy_from_slice(values);
}

/// Frees an allocator made by `ggml_gallocr_new*` (nothing for NULL).
fn release(ptr: *mut Gallocr) {
    if !ptr.is_null() {
        // SAFETY: made by Box::into_raw in ggml_gallocr_new*, freed once (ggml's contract).
        drop(unsafe { Box::from_raw(ptr) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_op_can_inplace(op: Op) -> bool {
    op_can_inplace(op)
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_new(buffer_type: *mut BufferType) -> *mut Gallocr {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { Box::into_raw(Box::new(Gallocr::new(&[arg!(buffer_type)]))) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_new_n(bufts: *mut *mut BufferType, n_bufs: c_int) -> *mut Gallocr {
    // SAFETY: the C caller's contract: `n_bufs` live buffer types.
    let list = unsafe { buft_list(bufts, n_bufs, this_export!()) };
    Box::into_raw(Box::new(Gallocr::new(&list)))
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_free(galloc: *mut Gallocr) {
    release(galloc);
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_reserve(galloc: *mut Gallocr, cgraph: *mut Graph) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(galloc).reserve(arg!(cgraph)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_reserve_n_size(
    galloc: *mut Gallocr,
    cgraph: *mut Graph,
    node_buffer_ids: *const c_int,
    leaf_buffer_ids: *const c_int,
    sizes: *mut usize,
) {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let g = unsafe { arg!(cgraph) };
    let (node_ids, leaf_ids) = (buffer_ids(node_buffer_ids, g.n_nodes), buffer_ids(leaf_buffer_ids, g.n_leafs));
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let galloc = unsafe { arg!(galloc) };
    write_sizes(sizes, &galloc.reserve_n_size(g, node_ids, leaf_ids));
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_reserve_n(
    galloc: *mut Gallocr,
    cgraph: *mut Graph,
    node_buffer_ids: *const c_int,
    leaf_buffer_ids: *const c_int,
) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let g = unsafe { arg!(cgraph) };
    let (node_ids, leaf_ids) = (buffer_ids(node_buffer_ids, g.n_nodes), buffer_ids(leaf_buffer_ids, g.n_leafs));
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(galloc).reserve_n(g, node_ids, leaf_ids) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_alloc_graph(galloc: *mut Gallocr, cgraph: *mut Graph) -> bool {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    unsafe { arg!(galloc).alloc_graph(arg!(cgraph)) }
}

#[unsafe(no_mangle)]
pub extern "C" fn ggml_gallocr_get_buffer_size(galloc: *mut Gallocr, buffer_id: c_int) -> usize {
    // SAFETY: the C caller's contract: handles passed to the API are live.
    let galloc = unsafe { arg!(galloc) };
    crate::ggml_assert!(
        buffer_id >= 0 && (buffer_id as usize) < galloc.n_buffers(),
        "buffer id {} out of range ({} buffers)",
        buffer_id,
        galloc.n_buffers()
    );
    galloc.buffer_size(buffer_id as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::buffer::tensor_set;
    use crate::backend::host_buffer::cpu_buffer_type;
    use crate::core::context::{Context, InitParams};
    use crate::core::graph::cgraph;
    use crate::core::ops::elementwise;
    use crate::core::tensor::flag;
    use crate::core::types::Type;

    #[test]
    fn c_api_allocates_a_graph_in_cpu_memory() {
        let mut c = Context::new(InitParams { mem_size: 1 << 20, mem_buffer: std::ptr::null_mut(), no_alloc: true });
        let a = c.new_tensor(Type::F32, &[64]);
        let b = c.new_tensor(Type::F32, &[64]);
        a.get_mut().flags |= flag::INPUT;
        b.get_mut().flags |= flag::INPUT;
        let sum = elementwise::add(&mut c, a, b);
        let out = elementwise::scale(&mut c, sum, 0.5);
        out.get_mut().flags |= flag::OUTPUT;
        let g = cgraph::new_graph(&mut c);
        g.get_mut().build_forward_expand(out);

        let cpu = cpu_buffer_type().as_ptr();
        let mut bufts = [cpu, cpu];
        let galloc = ggml_gallocr_new_n(bufts.as_mut_ptr(), 2);
        let node_ids = [1, 1];
        let leaf_ids = [0, 1];
        let mut sizes = [0usize; 2];
        ggml_gallocr_reserve_n_size(galloc, g.as_ptr(), node_ids.as_ptr(), leaf_ids.as_ptr(), sizes.as_mut_ptr());
        // a and b; the sum takes over a's memory in place and the scale the sum's.
        assert_eq!(sizes, [512, 512]);
        assert_eq!(ggml_gallocr_get_buffer_size(galloc, 0), 0);
        assert!(ggml_gallocr_reserve_n(galloc, g.as_ptr(), node_ids.as_ptr(), leaf_ids.as_ptr()));
        assert!(ggml_gallocr_alloc_graph(galloc, g.as_ptr()));
        assert_eq!((ggml_gallocr_get_buffer_size(galloc, 0), ggml_gallocr_get_buffer_size(galloc, 1)), (512, 0));
        assert_eq!(out.data, sum.data);
        assert!(!a.data.is_null() && sum.data == a.data && a.data != b.data);
        // The memory is real: the inputs can be written.
        tensor_set(a, &[1u8; 256], 0);
        ggml_gallocr_free(galloc);

        // A single buffer type: reserve is optional.
        let galloc = ggml_gallocr_new(cpu);
        for t in [a, b, sum, out] {
            let t = t.get_mut();
            t.data = std::ptr::null_mut();
            t.buffer = std::ptr::null_mut();
        }
        assert!(ggml_gallocr_alloc_graph(galloc, g.as_ptr()));
        assert_eq!(ggml_gallocr_get_buffer_size(galloc, 0), 512);
        assert!(ggml_gallocr_reserve(galloc, g.as_ptr()));
        ggml_gallocr_free(galloc);
        ggml_gallocr_free(std::ptr::null_mut());
        assert!(ggml_op_can_inplace(crate::core::op::Op::SCALE));
    }
}
