//! The client side: a device backend whose memory and compute are on a server.
//!
//! - `registry`: the base "RPC" registry and one registry per server;
//! - `device`: a server's device as the client sees it;
//! - `buffer_type`, `buffer`: allocation on the server and the data operations;
//! - `backend`: graphs sent to the server;
//! - `connection`: the one connection per server that all of them share.

pub mod backend;
pub mod buffer;
pub mod buffer_type;
pub mod connection;
pub mod device;
pub mod registry;
