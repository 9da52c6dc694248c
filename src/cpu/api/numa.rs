//! NUMA discovery (`ggml_numa_init`, `ggml_is_numa`): the nodes and the CPUs of each.

use std::ffi::c_void;
use std::path::Path;
use std::sync::Mutex;

/// `enum ggml_numa_strategy`.
pub mod numa_strategy {
    pub const DISABLED: i32 = 0;
    pub const DISTRIBUTE: i32 = 1;
    pub const ISOLATE: i32 = 2;
    pub const NUMACTL: i32 = 3;
    pub const MIRROR: i32 = 4;
}

/// `GGML_NUMA_MAX_NODES` and `GGML_NUMA_MAX_CPUS`: how far discovery looks.
const NUMA_MAX_NODES: usize = 8;
const NUMA_MAX_CPUS: usize = 512;

/// What `ggml_numa_init` found.
#[derive(Clone, Debug, Default)]
pub struct NumaTopology {
    pub strategy: i32,
    /// The CPUs of each node, by node number.
    pub nodes: Vec<Vec<usize>>,
    pub total_cpus: usize,
    /// The node the initialising thread ran on.
    pub current_node: usize,
}

static NUMA: Mutex<Option<NumaTopology>> = Mutex::new(None);

/// Counts the directories `prefix0`, `prefix1`, ... (at most `max`) that exist.
fn count_numbered(prefix: &str, max: usize) -> usize {
    (0..max).take_while(|i| Path::new(&format!("{prefix}{i}")).exists()).count()
}

/// The CPU and NUMA node the calling thread runs on.
#[cfg(target_os = "linux")]
fn current_cpu_and_node() -> Option<(usize, usize)> {
    let (mut cpu, mut node) = (0u32, 0u32);
    // SAFETY: getcpu writes two unsigned ints through the pointers given; the third argument
    // (a cache, unused since Linux 2.6.24) may be null.
    let rc = unsafe {
        libc::syscall(libc::SYS_getcpu, &mut cpu as *mut u32, &mut node as *mut u32, std::ptr::null_mut::<c_void>())
    };
    (rc == 0).then_some((cpu as usize, node as usize))
}

#[cfg(not(target_os = "linux"))]
fn current_cpu_and_node() -> Option<(usize, usize)> {
    None
}

/// Reads the machine's NUMA layout from sysfs; None where it cannot be read.
fn discover_numa(strategy: i32) -> Option<NumaTopology> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let n_nodes = count_numbered("/sys/devices/system/node/node", NUMA_MAX_NODES);
    let total_cpus = count_numbered("/sys/devices/system/cpu/cpu", NUMA_MAX_CPUS);
    let (_cpu, current_node) = current_cpu_and_node()?;
    if n_nodes < 1 || total_cpus < 1 {
        return None;
    }
    let nodes = (0..n_nodes)
        .map(|n| {
            (0..total_cpus)
                .filter(|c| Path::new(&format!("/sys/devices/system/node/node{n}/cpu{c}")).exists())
                .collect()
        })
        .collect();
    Some(NumaTopology { strategy, nodes, total_cpus, current_node })
}

/// `ggml_numa_init`: discovers the NUMA nodes and their CPUs once. A second call (after a
/// successful first) only says so; a failed discovery leaves the system seen as one node.
pub fn numa_init(strategy: i32) {
    let mut numa = NUMA.lock().unwrap_or_else(|e| e.into_inner());
    if numa.as_ref().is_some_and(|t| !t.nodes.is_empty()) {
        crate::log_warn!("ggml_numa_init: NUMA already initialized\n");
        return;
    }
    *numa = discover_numa(strategy);
    let multi_node = numa.as_ref().is_some_and(|t| t.nodes.len() > 1);
    drop(numa);
    if multi_node {
        let balancing = std::fs::read_to_string("/proc/sys/kernel/numa_balancing").unwrap_or_else(|_| "0\n".into());
        if balancing != "0\n" {
            crate::log_warn!(
                "/proc/sys/kernel/numa_balancing is enabled, this has been observed to impair performance\n"
            );
        }
    }
}

/// `ggml_is_numa`: true when `ggml_numa_init` found more than one node.
pub fn is_numa() -> bool {
    NUMA.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|t| t.nodes.len() > 1)
}

/// The layout `ggml_numa_init` found, if it ran and succeeded.
pub fn numa_topology() -> Option<NumaTopology> {
    NUMA.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_queries_are_consistent() {
        numa_init(numa_strategy::DISTRIBUTE);
        let topology = numa_topology();
        assert_eq!(is_numa(), topology.as_ref().is_some_and(|t| t.nodes.len() > 1));
        // a second call changes nothing
        numa_init(numa_strategy::ISOLATE);
        assert_eq!(numa_topology().map(|t| t.nodes.len()), topology.map(|t| t.nodes.len()));
    }
}
