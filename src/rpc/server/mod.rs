//! The RPC server (`ggml_backend_rpc_start_server`): serves the local devices to one client
//! at a time, with the answers of ggml 0.25.1's server.
//!
//! Unlike that server, it never dies on what a client sends: every length, count, handle,
//! address, shape, op and index is checked before it is used, and a request that fails a
//! check is logged and ends its connection (the protocol has no error replies), after which
//! the next client is served. A client still controls what it computes on its own buffers;
//! the server must not be exposed to an untrusted network any more than the reference.
//!
//! - `session`: one connection, command by command;
//! - `tensor`: the checks of a tensor description, and the tensor made from it;
//! - `graph`: GRAPH_COMPUTE's graph, rebuilt without recursion and checked;
//! - `ops`: what each op a graph may compute needs of its shapes and parameters;
//! - `cache`: the file cache of uploaded weights.

mod cache;
mod graph;
mod ops;
mod session;
mod tensor;
#[cfg(test)]
mod tests;

use std::ffi::{c_int, c_void};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use super::transport::{Listener, Stream};
use super::wire::{VERSION, parse_endpoint};
use crate::backend::backend::BackendPtr;
use crate::backend::device::{DevicePtr, lossy};
use crate::backend::interface::SetNThreadsFn;
use crate::backend::reg::RegPtr;
use session::Session;

/// A backend per served device, and what the server shares between connections.
pub struct Server {
    backends: Vec<BackendPtr>,
    cache_dir: Option<PathBuf>,
    live_buffers: Arc<AtomicUsize>,
}

impl Server {
    /// A server of `devices` (device `i` is the client's device `i`), each backend with
    /// `n_threads` threads where its registry can set them; uploads flagged for caching are
    /// stored in `cache_dir`. Fails, naming the device, when a device makes no backend.
    pub fn new(devices: &[DevicePtr], n_threads: usize, cache_dir: Option<&Path>) -> Result<Server, String> {
        let mut server =
            Server { backends: Vec::new(), cache_dir: cache_dir.map(Path::to_path_buf), live_buffers: Arc::default() };
        for &dev in devices {
            let Some(backend) = dev.init_backend(None) else {
                return Err(format!("Failed to create backend for device {}", dev.name_lossy()));
            };
            server.backends.push(backend);
            set_n_threads(dev, backend, n_threads);
        }
        Ok(server)
    }

    /// The number of buffers clients hold now (all freed when their connection ends).
    pub fn live_buffers(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.live_buffers)
    }

    /// Serves one client on `stream` until it leaves or sends something refused.
    pub fn serve_connection<S: Read + Write>(&self, stream: Stream<S>) {
        Session::new(&self.backends, self.cache_dir.as_deref(), &self.live_buffers).serve(stream);
    }

    /// Accepts clients on `listener` and serves them one at a time, until `stop` says so
    /// (asked before each client; a connection wakes a waiting server). A failed accept is
    /// reported and the server goes on: a client that resets its connection before it is
    /// accepted must not stop it.
    pub fn serve(&self, listener: &Listener, stop: impl Fn() -> bool) {
        while !stop() {
            let stream = match listener.accept() {
                Ok(stream) => stream,
                Err(e) => {
                    eprintln!("Failed to accept client connection: {e}");
                    // out of descriptors, say: give the system a moment
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    continue;
                }
            };
            println!("Accepted client connection");
            self.serve_connection(stream);
            println!("Client connection closed");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for backend in self.backends.drain(..) {
            backend.free();
        }
    }
}

/// Sets the threads of `backend` through its registry's `ggml_backend_set_n_threads`, if
/// it has one.
fn set_n_threads(dev: DevicePtr, backend: BackendPtr, n_threads: usize) {
    // SAFETY: a device's registry outlives it.
    let Some(reg) = (unsafe { RegPtr::from_raw(dev.reg()) }) else { return };
    let f: *mut c_void = reg.proc_address(c"ggml_backend_set_n_threads");
    if f.is_null() {
        return;
    }
    // SAFETY: registries export this name with ggml's `ggml_backend_set_n_threads_t`.
    let f = unsafe { std::mem::transmute::<*mut c_void, SetNThreadsFn>(f) };
    // SAFETY: `backend` was made by this registry's device and is live.
    unsafe { f(backend.as_ptr(), c_int::try_from(n_threads).unwrap_or(c_int::MAX)) };
}

/// `ggml_backend_rpc_start_server`: serves `devices` on `endpoint` (`host:port`, an IPv4
/// address), one client at a time, forever; prints the reference's banner, and warns when the
/// server is reachable from elsewhere than this machine. Returns only when it cannot start.
pub fn start_server(endpoint: &str, cache_dir: Option<&Path>, n_threads: usize, devices: &[DevicePtr]) {
    if devices.is_empty() {
        eprintln!("Invalid arguments to ggml_backend_rpc_start_server");
        return;
    }
    if let Some((host, _)) = parse_endpoint(endpoint)
        && host != "127.0.0.1"
    {
        eprintln!();
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        eprintln!("WARNING: Host ('{host}') is != '127.0.0.1'");
        eprintln!("         Never expose the RPC server to an open network!");
        eprintln!("         This is an experimental feature and is not secure!");
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        eprintln!();
    }
    let (major, minor, patch) = VERSION;
    println!("Starting RPC server v{major}.{minor}.{patch}");
    println!("  endpoint       : {endpoint}");
    println!("  local cache    : {}", cache_dir.map_or("n/a".into(), |d| d.display().to_string()));
    println!("Devices:");
    for &dev in devices {
        let (free, total) = dev.memory();
        println!(
            "  {}: {} ({} MiB, {} MiB free)",
            dev.name_lossy(),
            lossy(dev.description()),
            total / 1024 / 1024,
            free / 1024 / 1024
        );
    }
    let server = match Server::new(devices, n_threads, cache_dir) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    println!("  transport      : TCP");
    let listener = match Listener::bind(endpoint) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("Failed to create server socket: {e}");
            return;
        }
    };
    server.serve(&listener, || false);
}
