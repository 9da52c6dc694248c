//! One connection per server endpoint, shared by every device, buffer and backend of that
//! server, as the reference shares its dispatcher. Buffers and backends hold it; when the last
//! of them is gone the connection closes, and the server frees what was allocated on it.
//!
//! Calls are synchronous: a request is written, and its reply (if the command has one) read,
//! under the connection's lock. Commands without a reply return once written, so a graph
//! computes on the server while the client goes on; the next call that reads waits for it.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use crate::rpc::transport::Stream;
use crate::rpc::wire::{CAPS_SIZE, Command, HELLO_REPLY_SIZE, VERSION};

pub struct Connection {
    endpoint: String,
    stream: Mutex<Stream>,
}

static OPEN: LazyLock<Mutex<HashMap<String, Weak<Connection>>>> = LazyLock::new(Mutex::default);

impl Connection {
    /// The open connection to `endpoint`, or a new one after a successful HELLO.
    pub fn open(endpoint: &str) -> io::Result<Arc<Connection>> {
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(conn) = open.get(endpoint).and_then(Weak::upgrade) {
            return Ok(conn);
        }
        let mut stream = Stream::connect(endpoint)?;
        hello(&mut stream)?;
        let conn = Arc::new(Connection { endpoint: endpoint.to_owned(), stream: Mutex::new(stream) });
        open.retain(|_, weak| weak.strong_count() > 0);
        open.insert(endpoint.to_owned(), Arc::downgrade(&conn));
        Ok(conn)
    }

    /// [`Connection::open`] for the calls that have no way to report failure: a server that
    /// cannot be reached ends the process with the reason, as the reference's client does.
    #[track_caller]
    pub fn open_or_abort(endpoint: &str) -> Arc<Connection> {
        Connection::open(endpoint)
            .unwrap_or_else(|e| crate::ggml_abort!("cannot connect to the RPC server at {}: {}", endpoint, e))
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Sends a request that has no reply.
    #[track_caller]
    pub fn send(&self, command: Command, payload: &[u8]) {
        self.send_parts(command, &[payload]);
    }

    /// Sends a request, without a reply, whose payload is the concatenation of `parts`.
    #[track_caller]
    pub fn send_parts(&self, command: Command, parts: &[&[u8]]) {
        let result = self.lock().send_request_parts(command, parts);
        self.check(command, result);
    }

    /// Sends a request and reads its reply, which must be exactly `reply.len()` bytes.
    #[track_caller]
    pub fn call(&self, command: Command, payload: &[u8], reply: &mut [u8]) {
        let mut stream = self.lock();
        let result = stream.send_request(command, payload).and_then(|()| stream.recv_reply(reply));
        drop(stream);
        self.check(command, result);
    }

    /// [`Connection::call`] for a fixed-size reply.
    #[track_caller]
    pub fn call_for<const N: usize>(&self, command: Command, payload: &[u8]) -> [u8; N] {
        let mut reply = [0u8; N];
        self.call(command, payload, &mut reply);
        reply
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stream> {
        self.stream.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A failed exchange leaves the connection out of step with the server, and the backend
    /// interface has no way to report it: abort with the reason, as the reference does.
    #[track_caller]
    fn check(&self, command: Command, result: io::Result<()>) {
        if let Err(e) = result {
            crate::ggml_abort!("RPC server {} failed or sent a malformed reply to {:?}: {}", self.endpoint, command, e);
        }
    }
}

/// The handshake: plain TCP capabilities out, a protocol version this client speaks back.
fn hello(stream: &mut Stream) -> io::Result<()> {
    stream.send_request(Command::Hello, &[0u8; CAPS_SIZE])?;
    let mut reply = [0u8; HELLO_REPLY_SIZE];
    stream.recv_reply(&mut reply)?;
    let (major, minor, patch) = (reply[0], reply[1], reply[2]);
    if major != VERSION.0 || minor > VERSION.1 {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "RPC server version mismatch: {major}.{minor}.{patch} (this client speaks {}.{}.x)",
                VERSION.0, VERSION.1
            ),
        ));
    }
    Ok(())
}

/// Whether two handles name the same connection.
pub fn same(a: &Arc<Connection>, b: &Arc<Connection>) -> bool {
    Arc::ptr_eq(a, b)
}
