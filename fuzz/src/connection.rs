//! An in-memory RPC connection for the server: reads return a client's bytes and then end,
//! writes are kept or dropped.
//!
//! The server names buffers by their address and tensors' data by addresses inside them, which
//! no input can know in advance. So the client's bytes may carry placeholders, 8-byte
//! little-endian words patched as the server reads them, from the buffers it has handed out on
//! this connection so far:
//! - `0xB0FF_kk..`: the handle of buffer `kk` (modulo those allocated);
//! - `0xDA7A_kk.._oooooooo`: the base address of buffer `kk` plus the offset `oooooooo`.
//!
//! A placeholder with no buffer yet, or a word that only looks like one, is left alone: the
//! server must cope with any bytes anyway.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::rc::Rc;

use ggml_rs::backend::interface::Buffer;
use ggml_rs::ffi::backend_buffer::ggml_backend_buffer_get_base;
use ggml_rs::rpc::wire::Command;

pub const HANDLE: u64 = 0xB0FF;
pub const BASE: u64 = 0xDA7A;

/// A client that sends `input` and then closes.
pub struct Connection {
    input: Vec<u8>,
    pos: usize,
    /// The command byte last read (the server reads command bytes one at a time, and nothing
    /// else), to tell which reply carries a new buffer.
    command: Option<u8>,
    /// (handle, base) of every buffer allocated on this connection.
    buffers: Vec<(u64, u64)>,
    written: Option<Rc<Cell<Vec<u8>>>>,
}

impl Connection {
    /// `written` keeps the server's replies; without it they are dropped (a fuzzed client
    /// may ask for gigabytes back).
    pub fn new(input: Vec<u8>, written: Option<Rc<Cell<Vec<u8>>>>) -> Connection {
        Connection { input, pos: 0, command: None, buffers: Vec::new(), written }
    }

    /// Replaces the placeholders that start in `start..end`.
    fn patch(&mut self, start: usize, end: usize) {
        if self.buffers.is_empty() {
            return;
        }
        for at in start..end.min(self.input.len().saturating_sub(7)) {
            let word = u64::from_le_bytes(self.input[at..at + 8].try_into().expect("8 bytes"));
            let (handle, base) = self.buffers[(word >> 40 & 0xff) as usize % self.buffers.len()];
            let value = match word >> 48 {
                HANDLE => handle,
                BASE => base.wrapping_add(word & 0xffff_ffff),
                _ => continue,
            };
            self.input[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
    }
}

impl Read for Connection {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(self.input.len() - self.pos);
        self.patch(self.pos, self.pos + n);
        out[..n].copy_from_slice(&self.input[self.pos..self.pos + n]);
        if out.len() == 1 && n == 1 {
            self.command = Some(out[0]);
        }
        self.pos += n;
        Ok(n)
    }
}

impl Write for Connection {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // ALLOC_BUFFER's reply, in one write: length 16, handle, size
        if self.command == Some(Command::AllocBuffer as u8) && bytes.len() == 24 {
            let handle = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
            if handle != 0 {
                // the handle is the live buffer's address, in this process
                let base = ggml_backend_buffer_get_base(handle as *mut Buffer) as u64;
                self.buffers.push((handle, base));
            }
        }
        if let Some(written) = &self.written {
            let mut all = written.take();
            all.extend_from_slice(bytes);
            written.set(all);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
