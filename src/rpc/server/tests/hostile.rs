//! Malformed and malicious requests of every command (graphs are in `graphs`). Each must end
//! its connection, and leave the server serving with nothing allocated.

use super::*;
use crate::rpc::wire::fnv1a;

fn msg(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::default();
    f(&mut w);
    w.into_bytes()
}

fn header(cmd: u8, len: u64) -> Vec<u8> {
    let mut m = vec![cmd];
    m.extend_from_slice(&len.to_le_bytes());
    m
}

const T: usize = WireTensor::SIZE;

#[test]
fn the_handshake_and_framing_are_checked() {
    let srv = TestServer::start(None);
    for size in [0usize, 23, 25] {
        let mut c = srv.connect();
        let _ = c.send(Command::Hello as u8, &vec![0; size]);
        assert!(c.closed(), "a HELLO of {size} bytes");
        drop(c);
        srv.check_alive("HELLO size");
    }
    let mut c = srv.connect();
    let _ = c.send(Command::DeviceCount as u8, &[]);
    assert!(c.closed(), "a command before HELLO");
    drop(c);
    srv.check_alive("a command before HELLO");

    srv.refuses("a second HELLO", |c| _ = c.send(Command::Hello as u8, &[0; 24]));
    for byte in [18u8, 19, 255] {
        srv.refuses(&format!("command {byte}"), |c| _ = c.send(byte, &[]));
    }

    // lengths that are not the command's
    let sized: [(Command, usize); 13] = [
        (Command::DeviceCount, 0),
        (Command::AllocBuffer, 12),
        (Command::GetAlignment, 4),
        (Command::GetMaxSize, 4),
        (Command::GetDeviceMemory, 4),
        (Command::BufferGetBase, 8),
        (Command::FreeBuffer, 8),
        (Command::BufferClear, 9),
        (Command::GetTensor, T + 16),
        (Command::SetTensorHash, T + 16),
        (Command::CopyTensor, 2 * T),
        (Command::MemsetTensor, T + 17),
        (Command::GetAllocSize, 4 + 11 * T),
    ];
    for (cmd, size) in sized {
        for wrong in [size + 1, size.wrapping_sub(1)] {
            if wrong > size + 1 {
                continue;
            }
            srv.refuses(&format!("{cmd:?} of {wrong} bytes"), |c| _ = c.send(cmd as u8, &vec![0; wrong]));
        }
        // 2^63 bytes announced: refused from the header, nothing allocated
        srv.refuses(&format!("{cmd:?} of 2^63 bytes"), |c| _ = c.send_bytes(&header(cmd as u8, 1 << 63)));
    }
    for cmd in [Command::InitTensor, Command::GraphRecompute] {
        srv.refuses(&format!("{cmd:?} of 2^63 bytes"), |c| _ = c.send_bytes(&header(cmd as u8, 1 << 63)));
    }
    srv.refuses("a graph of 2^63 bytes", |c| _ = c.send_bytes(&header(Command::GraphCompute as u8, 1 << 63)));
    srv.refuses("a graph of 2^40 bytes", |c| _ = c.send_bytes(&header(Command::GraphCompute as u8, 1 << 40)));
    srv.refuses("SET_TENSOR shorter than its header", |c| _ = c.send(Command::SetTensor as u8, &[0; 304]));
    srv.refuses("SET_TENSOR of 2^63 bytes", |c| {
        let r = c.alloc(64);
        let mut m = header(Command::SetTensor as u8, 1 << 63);
        m.extend(set_payload(&r.tensor(Type::F32, [16, 1, 1, 1], 0), 0, 0, &[]));
        let _ = c.send_bytes(&m);
    });

    // frames that stop in the middle
    let mut truncated = header(Command::AllocBuffer as u8, 12);
    truncated.extend_from_slice(&[0, 0, 0, 0, 1]);
    srv.refuses("a truncated payload", |c| c.send_last(&truncated));
    srv.refuses("a truncated length", |c| c.send_last(&[Command::AllocBuffer as u8, 12, 0]));
    srv.refuses("a truncated upload", |c| {
        let r = c.alloc(64);
        let mut m = header(Command::SetTensor as u8, (T + 9 + 64) as u64);
        m.extend(set_payload(&r.tensor(Type::F32, [16, 1, 1, 1], 0), 0, 0, &[1; 10]));
        c.send_last(&m);
    });
    srv.refuses("a truncated graph", |c| {
        let _ = c.alloc(64);
        let mut m = header(Command::GraphCompute as u8, 1000);
        m.extend_from_slice(&[0; 100]);
        c.send_last(&m);
    });
}

#[test]
fn devices_and_buffer_handles_are_checked() {
    let srv = TestServer::start(None);
    for cmd in [Command::GetAlignment, Command::GetMaxSize, Command::GetDeviceMemory, Command::GraphRecompute] {
        for dev in [1u32, u32::MAX] {
            srv.refuses(&format!("{cmd:?} of device {dev}"), |c| _ = c.send(cmd as u8, &dev.to_le_bytes()));
        }
    }
    srv.refuses("an allocation on device 1", |c| _ = c.send(0, &msg(|w| _ = w.u32(1).u64(64))));
    srv.refuses("an alloc size on device 1", |c| {
        _ = c.send(Command::GetAllocSize as u8, &msg(|w| _ = w.u32(1).bytes(&[0; 11 * T])));
    });
    for cmd in [Command::BufferGetBase, Command::FreeBuffer] {
        srv.refuses(&format!("{cmd:?} of an unknown handle"), |c| _ = c.send(cmd as u8, &0x1234u64.to_le_bytes()));
        srv.refuses(&format!("{cmd:?} of handle 0"), |c| _ = c.send(cmd as u8, &0u64.to_le_bytes()));
    }
    srv.refuses("clearing an unknown handle", |c| _ = c.send(5, &msg(|w| _ = w.u64(0x1234).u8(0))));
    srv.refuses("freeing twice", |c| {
        let r = c.alloc(64);
        c.request(Command::FreeBuffer, &r.handle.to_le_bytes());
        let _ = c.send(Command::FreeBuffer as u8, &r.handle.to_le_bytes());
    });
    // a handle of an earlier connection: freed with it
    let handle = srv.client().alloc(64).handle;
    srv.check_alive("a connection that left a buffer");
    srv.refuses("a handle of an earlier connection", |c| {
        _ = c.send(Command::BufferGetBase as u8, &handle.to_le_bytes());
    });
}

/// A bad tensor description, made in a given buffer.
type BadTensor = fn(&Remote) -> WireTensor;

/// Each bad tensor description in turn, given to every command that takes one.
#[test]
fn tensor_descriptions_are_checked() {
    let srv = TestServer::start(None);
    let cases: Vec<(&str, BadTensor)> = vec![
        ("an unknown buffer", |r| WireTensor { buffer: r.handle ^ 0x10, ..r.tensor(Type::F32, [4, 1, 1, 1], 0) }),
        ("data without a buffer", |r| WireTensor { buffer: 0, ..r.tensor(Type::F32, [4, 1, 1, 1], 0) }),
        ("a buffer without data", |r| WireTensor { data: 0, ..r.tensor(Type::F32, [4, 1, 1, 1], 0) }),
        ("data before the buffer", |r| r.tensor(Type::F32, [4, 1, 1, 1], 0u64.wrapping_sub(4))),
        ("data running past the buffer", |r| r.tensor(Type::F32, [4, 1, 1, 1], r.size - 8)),
        ("data one past the buffer", |r| r.tensor(Type::F32, [1, 1, 1, 1], r.size)),
        ("data at the end of the address space", |r| WireTensor {
            data: u64::MAX - 3,
            ..r.tensor(Type::F32, [1; 4], 0)
        }),
        ("extents and strides of 2^32 - 1", |r| WireTensor {
            ne: [u32::MAX; 4],
            nb: [u32::MAX; 4],
            ..r.tensor(Type::F32, [1; 4], 0)
        }),
        ("2^41 elements of stride 0", |r| WireTensor {
            ne: [1 << 21, 1 << 20, 1, 1],
            nb: [0; 4],
            ..r.tensor(Type::F32, [1; 4], 0)
        }),
        ("a stride that leaves the buffer", |r| WireTensor {
            nb: [4, 1 << 20, 16, 16],
            ..r.tensor(Type::F32, [2, 2, 1, 1], 0)
        }),
        ("retired type 4", |r| WireTensor { type_: 4, ..r.tensor(Type::F32, [4, 1, 1, 1], 0) }),
        ("type 43", |r| WireTensor { type_: 43, ..r.tensor(Type::F32, [4, 1, 1, 1], 0) }),
        ("type 2^32 - 1", |r| WireTensor { type_: u32::MAX, ..r.tensor(Type::F32, [4, 1, 1, 1], 0) }),
        ("a row of half a block", |r| WireTensor { ne: [16, 1, 1, 1], ..r.tensor(Type::Q4_0, [32, 1, 1, 1], 0) }),
        ("op 101", |r| WireTensor { op: 101, ..r.tensor(Type::F32, [4, 1, 1, 1], 0) }),
    ];
    for (what, bad) in cases {
        srv.refuses(&format!("SET_TENSOR of {what}"), |c| {
            let r = c.alloc(64);
            let _ = c.send(Command::SetTensor as u8, &set_payload(&bad(&r), 0, 0, &[0; 4]));
        });
        srv.refuses(&format!("GET_TENSOR of {what}"), |c| {
            let r = c.alloc(64);
            let _ = c.send(Command::GetTensor as u8, &msg(|w| _ = w.tensor(&bad(&r)).u64(0).u64(4)));
        });
        srv.refuses(&format!("MEMSET_TENSOR of {what}"), |c| {
            let r = c.alloc(64);
            let _ = c.send(Command::MemsetTensor as u8, &msg(|w| _ = w.tensor(&bad(&r)).u64(0).u64(4).u8(1)));
        });
        srv.refuses(&format!("SET_TENSOR_HASH of {what}"), |c| {
            let r = c.alloc(64);
            let _ = c.send(Command::SetTensorHash as u8, &msg(|w| _ = w.tensor(&bad(&r)).u64(0).u64(7)));
        });
        srv.refuses(&format!("COPY_TENSOR from {what}"), |c| {
            let r = c.alloc(64);
            let good = r.tensor(Type::F32, [1, 1, 1, 1], 32);
            let _ = c.send(Command::CopyTensor as u8, &msg(|w| _ = w.tensor(&bad(&r)).tensor(&good)));
        });
        srv.refuses(&format!("COPY_TENSOR to {what}"), |c| {
            let r = c.alloc(64);
            let good = r.tensor(Type::F32, [1, 1, 1, 1], 32);
            let _ = c.send(Command::CopyTensor as u8, &msg(|w| _ = w.tensor(&good).tensor(&bad(&r))));
        });
        srv.refuses(&format!("INIT_TENSOR of {what}"), |c| {
            let r = c.alloc(64);
            let _ = c.send(Command::InitTensor as u8, &bytes_of(&bad(&r)));
        });
        srv.refuses(&format!("GET_ALLOC_SIZE of {what}"), |c| {
            let r = c.alloc(64);
            let _ = c.send(Command::GetAllocSize as u8, &msg(|w| _ = w.u32(0).tensor(&bad(&r)).bytes(&[0; 10 * T])));
        });
        srv.refuses(&format!("GET_ALLOC_SIZE with a source of {what}"), |c| {
            let r = c.alloc(64);
            let good = r.tensor(Type::F32, [1, 1, 1, 1], 32);
            let mut src = bad(&r);
            src.id = 77;
            let _ = c.send(
                Command::GetAllocSize as u8,
                &msg(|w| _ = w.u32(0).tensor(&good).tensor(&src).bytes(&[0; 9 * T])),
            );
        });
    }
}

#[test]
fn data_ranges_stay_inside_their_tensors() {
    let srv = TestServer::start(None);
    let mut c = srv.client();
    let r = c.alloc(64);
    let t = r.tensor(Type::F32, [4, 1, 1, 1], 0);
    // the last byte of the tensor, and nothing
    c.set(&t, 15, &[1]);
    c.set(&t, 16, &[]);
    assert_eq!(c.get(&t, 15, 1), [1]);
    c.request(Command::MemsetTensor, &msg(|w| _ = w.tensor(&t).u64(12).u64(4).u8(2)));
    assert_eq!(c.get(&t, 12, 4), [2; 4]);
    drop(c);

    for (offset, size) in [(16u64, 1u64), (17, 1), (15, 2), (0, 17), (u64::MAX, 1), (1, u64::MAX), (8, u64::MAX - 4)] {
        let what = format!("bytes [{offset}, +{size}) of 16");
        srv.refuses(&format!("GET_TENSOR of {what}"), |c| {
            let r = c.alloc(64);
            let _ = c.send(
                Command::GetTensor as u8,
                &msg(|w| _ = w.tensor(&r.tensor(Type::F32, [4, 1, 1, 1], 0)).u64(offset).u64(size)),
            );
        });
        srv.refuses(&format!("MEMSET_TENSOR of {what}"), |c| {
            let r = c.alloc(64);
            let t = r.tensor(Type::F32, [4, 1, 1, 1], 0);
            let _ = c.send(Command::MemsetTensor as u8, &msg(|w| _ = w.tensor(&t).u64(offset).u64(size).u8(3)));
        });
        if size < 64 {
            srv.refuses(&format!("SET_TENSOR of {what}"), |c| {
                let r = c.alloc(64);
                let t = r.tensor(Type::F32, [4, 1, 1, 1], 0);
                let _ = c.send(Command::SetTensor as u8, &set_payload(&t, 0, offset, &vec![5; size as usize]));
            });
        }
    }
    srv.refuses("a copy running past the destination buffer", |c| {
        let r = c.alloc(96);
        let (src, dst) = (r.tensor(Type::F32, [16, 1, 1, 1], 0), r.tensor(Type::F32, [4, 1, 1, 1], 80));
        let _ = c.send(Command::CopyTensor as u8, &msg(|w| _ = w.tensor(&src).tensor(&dst)));
    });
    srv.refuses("a copy between overlapping tensors", |c| {
        let r = c.alloc(64);
        let (src, dst) = (r.tensor(Type::F32, [8, 1, 1, 1], 0), r.tensor(Type::F32, [8, 1, 1, 1], 16));
        let _ = c.send(Command::CopyTensor as u8, &msg(|w| _ = w.tensor(&src).tensor(&dst)));
    });
    srv.refuses("GRAPH_RECOMPUTE without a graph", |c| _ = c.send(Command::GraphRecompute as u8, &0u32.to_le_bytes()));
}

#[test]
fn the_cache_is_checked() {
    let dir = std::env::temp_dir().join(format!("ggml-rs-rpc-hostile-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let srv = TestServer::start(Some(&dir));
    // a cached file larger than the tensor it is offered for
    let big = vec![7u8; 1024];
    let hash = fnv1a(&big);
    std::fs::write(dir.join(format!("{hash:016x}")), &big).unwrap();
    srv.refuses("a cached file larger than its tensor", |c| {
        let r = c.alloc(64);
        let t = r.tensor(Type::F32, [16, 1, 1, 1], 0);
        let _ = c.send(Command::SetTensorHash as u8, &msg(|w| _ = w.tensor(&t).u64(0).u64(hash)));
    });
    srv.refuses("a cached file at an offset past its tensor", |c| {
        let r = c.alloc(4096);
        let t = r.tensor(Type::F32, [256, 1, 1, 1], 0);
        let _ = c.send(Command::SetTensorHash as u8, &msg(|w| _ = w.tensor(&t).u64(1).u64(hash)));
    });
    // a refused upload leaves no file behind
    srv.refuses("a cached upload past its tensor", |c| {
        let r = c.alloc(64);
        let t = r.tensor(Type::F32, [4, 1, 1, 1], 0);
        let _ = c.send(Command::SetTensor as u8, &set_payload(&t, 1, 0, &[9; 32]));
    });
    srv.refuses("a cached upload cut short", |c| {
        let r = c.alloc(64);
        let mut m = header(Command::SetTensor as u8, (T + 9 + 32) as u64);
        m.extend(set_payload(&r.tensor(Type::F32, [8, 1, 1, 1], 0), 1, 0, &[9; 16]));
        c.send_last(&m);
    });
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, [format!("{hash:016x}")]);
    drop(srv);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn clients_that_reset_before_they_are_served_stop_nothing() {
    use std::os::fd::AsRawFd;
    let srv = TestServer::start(None);
    // while the server serves this client, the others wait to be accepted
    let busy = srv.client();
    for _ in 0..4 {
        let tcp = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        // SAFETY: a valid socket and option value of the size given; a zero linger makes the
        // close below reset the connection.
        let rc = unsafe {
            libc::setsockopt(
                tcp.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
        drop(tcp);
    }
    drop(busy);
    srv.check_alive("after clients that reset");
}
