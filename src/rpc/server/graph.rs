//! GRAPH_COMPUTE: a graph rebuilt from its wire form, checked, and kept for GRAPH_RECOMPUTE.
//!
//! The message is `device u32 | n_nodes u32 | node ids u64[n_nodes] | n_tensors u32 |
//! tensors[n_tensors]`; every tensor a node reaches through its sources and view sources comes
//! once, and links name tensors by id. The rebuild never recurses: tensors are made in message
//! order and linked afterwards, and one iterative walk refuses cycles, so a chain of any
//! length costs no stack.
//!
//! Nodes that index rows with data (GET_ROWS, SET_ROWS, MUL_MAT_ID, ...) have their indices
//! read and checked right before they can run, on every compute: the computation is cut into
//! segments, each checking at its start the indices of its nodes, and a node starts a new
//! segment when an earlier node of its segment may write its indices. Graphs whose indices
//! come from the client (llama.cpp's token ids and cache slots) run as one segment.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::ops;
use super::tensor::{self, Buffers, Checked, Placement};
use crate::backend::backend::BackendPtr;
use crate::backend::buffer;
use crate::core::context::{Context, InitParams, MEM_ALIGN, OBJECT_SIZE, TENSOR_SIZE};
use crate::core::graph::GraphPtr;
use crate::core::graph::cgraph::{new_graph_custom, overhead_custom};
use crate::core::status::Status;
use crate::core::tensor::{MAX_DIMS, MAX_SRC, TensorPtr};
use crate::core::types::Type;
use crate::rpc::wire::{Reader, WireTensor};

/// The most nodes and tensors of one graph, far above the largest llama.cpp builds.
const MAX_NODES: usize = 1 << 20;
const MAX_TENSORS: usize = 1 << 20;
/// The longest GRAPH_COMPUTE message those counts allow.
pub(super) const MAX_MESSAGE: u64 = 12 + 8 * MAX_NODES as u64 + (WireTensor::SIZE * MAX_TENSORS) as u64;

/// A tensor's links: its sources, then its view source, as positions in the tensor list.
const LINKS: usize = MAX_SRC + 1;
const VIEW: usize = MAX_SRC;
const NO_LINK: u32 = u32::MAX;
type Links = [u32; LINKS];

fn try_vec<T>(n: usize) -> Result<Vec<T>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| format!("cannot allocate room for {n} items"))?;
    Ok(v)
}

/// Context memory, 16-byte aligned as contexts need, allocated without aborting on failure.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u8; MEM_ALIGN]);

/// A rebuilt graph, ready to compute again.
pub(super) struct StoredGraph {
    graph: GraphPtr,
    segments: Vec<Segment>,
    /// Holds the tensors and the graph, in `_memory`.
    _ctx: Box<Context>,
    _memory: Vec<Chunk>,
}

/// Nodes `start..end`, computed after the indices of `checks` are found in range.
struct Segment {
    start: usize,
    end: usize,
    checks: Vec<IndexCheck>,
}

/// An index source of a node: `reader` covers its bytes (an I8 tensor over them, through
/// which the buffer hands them out), `index` says where each value is.
struct IndexCheck {
    node: TensorPtr,
    index: TensorPtr,
    reader: TensorPtr,
    bound: i64,
}

struct Parsed<'a> {
    device: u32,
    node_ids: &'a [u8],
    tensors: Vec<WireTensor>,
}

fn parse(payload: &[u8]) -> Result<Parsed<'_>, String> {
    let mut r = Reader::new(payload);
    let device = r.u32().ok_or("a graph without a device")?;
    let n_nodes = r.u32().ok_or("a graph without a node count")? as usize;
    if n_nodes > MAX_NODES {
        return Err(format!("{n_nodes} nodes, more than {MAX_NODES}"));
    }
    let node_ids = r.bytes(8 * n_nodes).ok_or_else(|| format!("{n_nodes} nodes announced, fewer sent"))?;
    let n_tensors = r.u32().ok_or("a graph without a tensor count")? as usize;
    if n_tensors > MAX_TENSORS {
        return Err(format!("{n_tensors} tensors, more than {MAX_TENSORS}"));
    }
    let rest = r.rest();
    if rest.len() != n_tensors * WireTensor::SIZE {
        return Err(format!("{n_tensors} tensors announced, {} bytes of them sent", rest.len()));
    }
    let mut tensors = try_vec(n_tensors)?;
    let mut r = Reader::new(rest);
    while let Some(t) = r.tensor() {
        tensors.push(t);
    }
    Ok(Parsed { device, node_ids, tensors })
}

fn describe(w: &WireTensor) -> String {
    let name = &w.name[..w.name.iter().position(|&b| b == 0).unwrap_or(w.name.len())];
    format!("tensor {:#x} '{}'", w.id, String::from_utf8_lossy(name))
}

/// The alignment kernels may assume of a type's data: the largest power of two dividing its
/// size, up to 8 (4 for F32, 2 for F16 and most block formats).
fn alignment(type_: Type) -> u64 {
    (1u64 << (type_.type_size() as u64).trailing_zeros()).min(8)
}

/// What a graph needs of each of its tensors beyond the common checks: no custom op, and
/// data aligned for its type, with strides that keep every element so.
fn check_for_graph(c: &Checked) -> Result<(), String> {
    let w = &c.wire;
    if ops::is_custom(crate::core::op::Op(w.op as i32)) {
        return Err("custom ops are not served".into());
    }
    if let Some(p) = c.placement {
        let align = alignment(c.type_);
        let strides_ok = (0..MAX_DIMS).all(|d| w.ne[d] <= 1 || u64::from(w.nb[d]) % align == 0);
        if p.start % align != 0 || !strides_ok {
            return Err(format!("data {:#x} or strides {:?} not aligned to {align} bytes", p.start, w.nb));
        }
    }
    Ok(())
}

/// Resolves every source and view source id to a position in the tensor list.
fn link(checked: &[Checked], by_id: &HashMap<u64, u32>) -> Result<Vec<Links>, String> {
    let mut links = try_vec(checked.len())?;
    for (i, c) in checked.iter().enumerate() {
        let w = &c.wire;
        let mut l = [NO_LINK; LINKS];
        for (slot, &id) in w.src.iter().chain([&w.view_src]).enumerate() {
            if id != 0 {
                l[slot] = *by_id.get(&id).ok_or_else(|| format!("{}: unknown source {id:#x}", describe(w)))?;
            }
        }
        if l[VIEW] == i as u32 {
            return Err(format!("{} is a view of itself", describe(w)));
        }
        links.push(l);
    }
    Ok(links)
}

/// Refuses a cycle through sources and view sources, with one depth-first walk on a heap
/// stack. A tensor naming itself as a source is no cycle: `ggml_cast` does that.
fn refuse_cycles(links: &[Links], checked: &[Checked]) -> Result<(), String> {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let mut state = try_vec(links.len())?;
    state.resize(links.len(), NEW);
    let mut stack: Vec<(u32, usize)> = try_vec(links.len())?;
    for root in 0..links.len() as u32 {
        if state[root as usize] != NEW {
            continue;
        }
        state[root as usize] = OPEN;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (t, slot) = *top;
            if slot == LINKS {
                state[t as usize] = DONE;
                stack.pop();
                continue;
            }
            top.1 += 1;
            let s = links[t as usize][slot];
            if s == NO_LINK || s == t {
                continue;
            }
            match state[s as usize] {
                NEW => {
                    state[s as usize] = OPEN;
                    stack.push((s, 0));
                }
                OPEN => return Err(format!("{} is in a cycle", describe(&checked[s as usize].wire))),
                _ => {}
            }
        }
    }
    Ok(())
}

/// A view and its source live in one buffer, the view at its offset into the source (as
/// `ggml_backend_view_init` places it), or neither lives here.
fn check_views(checked: &[Checked], links: &[Links]) -> Result<(), String> {
    for (c, l) in checked.iter().zip(links) {
        if l[VIEW] == NO_LINK {
            continue;
        }
        let source = &checked[l[VIEW] as usize];
        let placed = match (c.placement, source.placement) {
            (None, None) => true,
            (Some(v), Some(s)) => v.buffer == s.buffer && s.start.checked_add(c.wire.view_offs) == Some(v.start),
            _ => false,
        };
        if !placed {
            return Err(format!("{} is not at offset {} of its view source", describe(&c.wire), c.wire.view_offs));
        }
    }
    Ok(())
}

/// Address ranges written so far in a segment, as a union of disjoint intervals.
#[derive(Default)]
struct Written(BTreeMap<u64, u64>);

impl Written {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        // the intervals are disjoint, so the last one starting before `end` ends last
        start < end && self.0.range(..end).next_back().is_some_and(|(_, &e)| e > start)
    }

    fn add(&mut self, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        if let Some((&s, &e)) = self.0.range(..=start).next_back()
            && e >= start
        {
            self.0.remove(&s);
            start = s;
            end = end.max(e);
        }
        while let Some((&s, &e)) = self.0.range(start..=end).next() {
            self.0.remove(&s);
            end = end.max(e);
        }
        self.0.insert(start, end);
    }
}

/// Cuts the nodes into segments as the index checks require.
struct Planner {
    done: Vec<Segment>,
    current: Segment,
    written: Written,
    /// The checks of the current segment, by index tensor and bound, to read each once.
    seen: HashSet<(TensorPtr, i64)>,
}

impl Planner {
    fn new() -> Planner {
        Planner {
            done: Vec::new(),
            current: Segment { start: 0, end: 0, checks: Vec::new() },
            written: Written::default(),
            seen: HashSet::new(),
        }
    }

    /// Node `pos` (writing `dst`) reads indices `index` at `at`, which must stay below
    /// `bound`.
    #[allow(clippy::too_many_arguments)]
    fn index(
        &mut self,
        ctx: &mut Context,
        pos: usize,
        node: TensorPtr,
        dst: Placement,
        index: TensorPtr,
        at: Placement,
        bound: i64,
    ) -> Result<(), String> {
        if dst.start < at.end() && at.start < dst.end() {
            return Err(format!("{} node '{}' writes over its own indices", node.op.name(), node.name()));
        }
        if at.buffer.iface.get_tensor.is_none() {
            return Err(format!("{} node '{}': its indices cannot be read", node.op.name(), node.name()));
        }
        if self.written.overlaps(at.start, at.end()) {
            let next = Segment { start: pos, end: pos, checks: Vec::new() };
            let mut done = std::mem::replace(&mut self.current, next);
            done.end = pos;
            self.done.push(done);
            self.written = Written::default();
            self.seen.clear();
        }
        if at.span == 0 || !self.seen.insert((index, bound)) {
            return Ok(());
        }
        let reader = ctx.new_tensor(Type::I8, &[at.span as i64]);
        let r = reader.get_mut();
        r.buffer = at.buffer.as_ptr().cast();
        r.data = at.start as *mut std::ffi::c_void;
        self.current.checks.push(IndexCheck { node, index, reader, bound });
        Ok(())
    }

    fn wrote(&mut self, dst: Placement) {
        self.written.add(dst.start, dst.end());
    }

    fn finish(mut self, n_nodes: usize) -> Vec<Segment> {
        self.current.end = n_nodes;
        self.done.push(self.current);
        self.done
    }
}

impl IndexCheck {
    fn verify(&self) -> Result<(), String> {
        let len = self.reader.ne[0] as usize;
        let mut bytes = try_vec(len)?;
        bytes.resize(len, 0u8);
        buffer::tensor_get(self.reader, &mut bytes, 0);
        let t = self.index;
        let width = t.type_.type_size();
        let ne = t.ne.map(|n| n as usize);
        for i3 in 0..ne[3] {
            for i2 in 0..ne[2] {
                for i1 in 0..ne[1] {
                    for i0 in 0..ne[0] {
                        let at = i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
                        // the reader spans every element (the tensor checks)
                        let Some(b) = bytes.get(at..at + width) else {
                            return Err(format!("index element at {at} outside the bytes read"));
                        };
                        let v = match *b {
                            [a, b, c, d] => i64::from(i32::from_ne_bytes([a, b, c, d])),
                            _ => i64::from_ne_bytes(b.try_into().map_err(|_| "index width")?),
                        };
                        if !(0..self.bound).contains(&v) {
                            return Err(format!(
                                "{} node '{}': index {v} outside 0..{}",
                                self.node.op.name(),
                                self.node.name(),
                                self.bound
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl StoredGraph {
    /// Rebuilds and checks the graph of a GRAPH_COMPUTE message; returns it with its device.
    pub fn build(payload: &[u8], backends: &[BackendPtr], buffers: &Buffers) -> Result<(usize, StoredGraph), String> {
        let parsed = parse(payload)?;
        let device = parsed.device as usize;
        let backend = *backends.get(device).ok_or_else(|| format!("no device {}", parsed.device))?;
        let n_nodes = parsed.node_ids.len() / 8;
        let n = parsed.tensors.len();

        let mut by_id = HashMap::new();
        by_id.try_reserve(n).map_err(|_| format!("cannot index {n} tensors"))?;
        let mut checked = try_vec(n)?;
        for (i, w) in parsed.tensors.iter().enumerate() {
            if w.id == 0 {
                return Err(format!("{}: id 0", describe(w)));
            }
            if by_id.insert(w.id, i as u32).is_some() {
                return Err(format!("{} sent twice", describe(w)));
            }
            let c = tensor::check(w, buffers).map_err(|e| format!("{}: {e}", describe(w)))?;
            check_for_graph(&c).map_err(|e| format!("{}: {e}", describe(w)))?;
            checked.push(c);
        }
        let links = link(&checked, &by_id)?;
        refuse_cycles(&links, &checked)?;
        check_views(&checked, &links)?;

        // every tensor, a reader per node at most, and the graph
        let bytes = (OBJECT_SIZE + TENSOR_SIZE) * (n + n_nodes) + overhead_custom(n_nodes, false);
        let mut memory = try_vec(bytes / MEM_ALIGN + 1)?;
        memory.resize(bytes / MEM_ALIGN + 1, Chunk([0; MEM_ALIGN]));
        let mut ctx = Context::new(InitParams {
            mem_size: memory.len() * MEM_ALIGN,
            mem_buffer: memory.as_mut_ptr().cast(),
            no_alloc: true,
        });
        let mut tensors = try_vec(n)?;
        tensors.extend(checked.iter().map(|c| tensor::build(&mut ctx, c)));
        for ((t, l), c) in tensors.iter().zip(&links).zip(&checked) {
            let t = t.get_mut();
            for (slot, &s) in l.iter().enumerate() {
                if s == NO_LINK {
                    continue;
                }
                let s = tensors[s as usize].as_ptr();
                if slot == VIEW {
                    t.view_src = s;
                } else {
                    t.src[slot] = s;
                }
            }
            t.view_offs = c.wire.view_offs as usize;
        }

        let graph = new_graph_custom(&mut ctx, n_nodes, false);
        let mut is_node = try_vec(n)?;
        is_node.resize(n, false);
        let mut planner = Planner::new();
        for (pos, id) in parsed.node_ids.chunks_exact(8).enumerate() {
            let id = u64::from_le_bytes(id.try_into().map_err(|_| "a node id")?);
            let i = *by_id.get(&id).ok_or_else(|| format!("node {pos}: unknown tensor {id:#x}"))? as usize;
            if std::mem::replace(&mut is_node[i], true) {
                return Err(format!("node {pos}: {} is a node twice", describe(&checked[i].wire)));
            }
            let node = tensors[i];
            let g = graph.get_mut();
            g.add_node(node);
            if let Some(slot) = g.visited_hash_set.insert(node) {
                g.use_counts_mut()[slot] = checked[i].wire.use_count;
            }
            if node.op.is_empty() {
                continue;
            }
            let what = || format!("node {pos} ({} {})", node.op.name(), describe(&checked[i].wire));
            let dst = checked[i].placement.ok_or_else(|| format!("{}: no data to compute into", what()))?;
            if !checked[i].distinct {
                return Err(format!("{}: result elements overlap (strides {:?})", what(), checked[i].wire.nb));
            }
            for source in links[i][..MAX_SRC].iter().filter(|&&s| s != NO_LINK).map(|&s| &checked[s as usize]) {
                if source.placement.is_none() {
                    return Err(format!("{}: a source without data", what()));
                }
                // a source whose elements overlap names more values than its bytes hold: a 64
                // KiB buffer could feed a product whose scratch is gigabytes (the graph fuzzer)
                if !source.distinct {
                    return Err(format!("{}: a source whose elements overlap", what()));
                }
            }
            let index = ops::check(node).map_err(|e| format!("{}: {e}", what()))?;
            if !backend.supports_op(node) {
                return Err(format!("{}: not supported by the device", what()));
            }
            if let Some(use_) = index {
                let s = links[i][use_.slot] as usize;
                let at = checked[s].placement.ok_or_else(|| format!("{}: indices without data", what()))?;
                planner.index(&mut ctx, pos, node, dst, tensors[s], at, use_.bound)?;
            }
            planner.wrote(dst);
        }
        let segments = planner.finish(n_nodes);
        Ok((device, StoredGraph { graph, segments, _ctx: ctx, _memory: memory }))
    }

    /// Computes the graph on `backend`, each segment after its index checks.
    pub fn compute(&self, backend: BackendPtr) -> Result<(), String> {
        for segment in &self.segments {
            for check in &segment.checks {
                check.verify()?;
            }
            if segment.start == segment.end {
                continue;
            }
            let mut view = self.graph.view(segment.start as i32, segment.end as i32);
            let status = backend.graph_compute(&mut view);
            if status != Status::SUCCESS {
                return Err(format!("the device failed to compute the graph (status {})", status.0));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_ranges_merge_and_answer_overlaps() {
        let mut w = Written::default();
        w.add(10, 20);
        w.add(30, 40);
        assert!(!w.overlaps(20, 30) && !w.overlaps(0, 10) && !w.overlaps(40, 50));
        assert!(w.overlaps(19, 21) && w.overlaps(35, 36) && w.overlaps(0, 100));
        assert!(!w.overlaps(15, 15));
        w.add(20, 30);
        assert_eq!(w.0.len(), 1);
        assert!(w.overlaps(25, 26));
        w.add(5, 45);
        assert_eq!(w.0.iter().collect::<Vec<_>>(), [(&5, &45)]);
    }
}
