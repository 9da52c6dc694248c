//! TCP framing of the RPC protocol: requests (`command u8 | length u64 | payload`) and replies
//! (`length u64 | payload`) over a blocking stream with Nagle's algorithm off, as the
//! reference's transport has it. IPv4 only, as the reference.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, ToSocketAddrs};

use super::wire::{Command, parse_endpoint};

/// Messages up to this size go out in one write (one segment with `TCP_NODELAY`); larger
/// parts are written as they are, without copying them.
const COALESCE_LIMIT: usize = 64 * 1024;

/// One end of a connection: TCP in use, any byte stream in tests and fuzzing.
pub struct Stream<S = TcpStream>(S);

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

/// The IPv4 address of `host:port`, resolving names as `gethostbyname` would.
fn resolve(endpoint: &str) -> io::Result<SocketAddrV4> {
    let (host, port) = parse_endpoint(endpoint).ok_or_else(|| invalid(format!("invalid endpoint '{endpoint}'")))?;
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(SocketAddrV4::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()?
        .find_map(|a| match a {
            SocketAddr::V4(v4) => Some(v4),
            SocketAddr::V6(_) => None,
        })
        .ok_or_else(|| invalid(format!("cannot resolve host '{host}'")))
}

impl Stream {
    pub fn connect(endpoint: &str) -> io::Result<Stream> {
        let stream = TcpStream::connect(resolve(endpoint)?)?;
        stream.set_nodelay(true)?;
        Ok(Stream(stream))
    }
}

impl<S: Read + Write> Stream<S> {
    pub fn new(inner: S) -> Stream<S> {
        Stream(inner)
    }

    pub fn send_request(&mut self, command: Command, payload: &[u8]) -> io::Result<()> {
        self.send_request_parts(command, &[payload])
    }

    /// Sends a request whose payload is the concatenation of `parts` (a header and the bytes
    /// it describes, without copying the bytes).
    pub fn send_request_parts(&mut self, command: Command, parts: &[&[u8]]) -> io::Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut message = Vec::with_capacity(9 + len.min(COALESCE_LIMIT));
        message.push(command as u8);
        message.extend_from_slice(&(len as u64).to_le_bytes());
        for part in parts {
            if message.len() + part.len() <= COALESCE_LIMIT {
                message.extend_from_slice(part);
            } else {
                self.0.write_all(&message)?;
                message.clear();
                self.0.write_all(part)?;
            }
        }
        self.0.write_all(&message)
    }

    /// Reads a reply into `out`, which must be exactly the size the reply announces.
    pub fn recv_reply(&mut self, out: &mut [u8]) -> io::Result<()> {
        let len = self.recv_u64()?;
        if len != out.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a reply of {len} bytes where {} were expected", out.len()),
            ));
        }
        self.0.read_exact(out)
    }

    pub fn send_reply(&mut self, payload: &[u8]) -> io::Result<()> {
        let mut message = Vec::with_capacity(8 + payload.len().min(COALESCE_LIMIT));
        message.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        if payload.len() <= COALESCE_LIMIT {
            message.extend_from_slice(payload);
            self.0.write_all(&message)
        } else {
            self.0.write_all(&message)?;
            self.0.write_all(payload)
        }
    }

    /// The next request's command byte; `None` when the peer closed the connection cleanly.
    pub fn recv_command(&mut self) -> io::Result<Option<u8>> {
        let mut byte = [0u8];
        match self.0.read(&mut byte)? {
            0 => Ok(None),
            _ => Ok(Some(byte[0])),
        }
    }

    pub fn recv_u64(&mut self) -> io::Result<u64> {
        let mut bytes = [0u8; 8];
        self.0.read_exact(&mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    pub fn recv_exact(&mut self, out: &mut [u8]) -> io::Result<()> {
        self.0.read_exact(out)
    }
}

/// A listening socket on an IPv4 address.
pub struct Listener(TcpListener);

impl Listener {
    /// Listens on `host:port`; `host` must be a dotted IPv4 address, as the reference
    /// requires. (std sets `SO_REUSEADDR`, so a restarted server can bind at once.)
    pub fn bind(endpoint: &str) -> io::Result<Listener> {
        let (host, port) = parse_endpoint(endpoint).ok_or_else(|| invalid(format!("invalid endpoint '{endpoint}'")))?;
        let ip: Ipv4Addr = host.parse().map_err(|_| invalid(format!("invalid host address: {host}")))?;
        Ok(Listener(TcpListener::bind(SocketAddrV4::new(ip, port))?))
    }

    pub fn accept(&self) -> io::Result<Stream> {
        let (stream, _) = self.0.accept()?;
        stream.set_nodelay(true)?;
        Ok(Stream(stream))
    }

    pub fn local_port(&self) -> io::Result<u16> {
        Ok(self.0.local_addr()?.port())
    }
}
