#!/usr/bin/env python3
"""Writes the committed seed corpora, fuzz/seeds/TARGET/ for every fuzz target (run from
anywhere; rerun after a format change). Layouts follow src/gguf/reader.rs, src/rpc/wire.rs and
src/rpc/server/graph.rs; the files are kept tiny so that libFuzzer mutates them quickly.
The crash-* files are not written here: they are inputs fuzzing found crashing (see the
regression tests they name in their commits), kept so that every run tries them again."""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    os.makedirs(os.path.join(HERE, target), exist_ok=True)
    with open(os.path.join(HERE, target, name), "wb") as f:
        f.write(data)


# --- GGUF v3: header, key-value pairs, tensor infos, padding to 32, data ---
def gstr(s):
    return struct.pack("<Q", len(s)) + s


def kv(key, ty, payload):
    return gstr(key) + struct.pack("<I", ty) + payload


def tensor(name, ne, ty, offset):
    return gstr(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}q", *ne) + struct.pack("<IQ", ty, offset)


def gguf(kvs, tensors, data):
    meta = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)
    return meta + b"\0" * (-len(meta) % 32) + data


KVS = [
    kv(b"general.architecture", 8, gstr(b"llama")),
    kv(b"u8", 0, b"\x07"),
    kv(b"i32", 5, struct.pack("<i", -3)),
    kv(b"f32", 6, struct.pack("<f", 0.5)),
    kv(b"bool", 7, b"\x01"),
    kv(b"u64", 10, struct.pack("<Q", 1 << 40)),
    kv(b"arr.i16", 9, struct.pack("<IQ3h", 3, 3, 1, -2, 3)),
    kv(b"arr.str", 9, struct.pack("<IQ", 8, 2) + gstr(b"a") + gstr(b"bc")),
]
TENSORS = [tensor(b"w", [2, 2], 0, 0), tensor(b"b", [2], 1, 32)]
valid = gguf(KVS, TENSORS, struct.pack("<4f", 1, 2, 3, 4) + b"\0" * 16 + struct.pack("<2e", 1, -1) + b"\0" * 28)
put("gguf", "valid.gguf", valid)
put("gguf", "empty.gguf", gguf([], [], b""))
put("gguf", "truncated.gguf", valid[:100])
put("gguf", "huge-string.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 62) + b"key")
put("gguf", "misaligned-offset.gguf", gguf([], [tensor(b"t", [4], 0, 3)], b"\0" * 32))
put("gguf", "version-2.gguf", b"GGUF" + struct.pack("<IQQ", 2, 0, 0))

# --- RPC: a session as a client sends it. The first byte is the harness's: 0 says the
# session brings its own HELLO. Buffer handles and addresses are the harness's placeholders
# (fuzz/src/connection.rs): 0xB0FF<<48 for buffer 0's handle, 0xDA7A<<48 for its base. ---
HANDLE, BASE = 0xB0FF << 48, 0xDA7A << 48


def req(cmd, payload):
    return struct.pack("<BQ", cmd, len(payload)) + payload


def rpc_tensor(ne, nb, buffer, data, tid=1, op=0, src=()):
    return (
        struct.pack("<QIQ", tid, 0, buffer)  # id, type F32, buffer
        + struct.pack("<4I", *ne)
        + struct.pack("<4I", *nb)
        + struct.pack("<I", op)
        + b"\0" * 64  # op_params
        + struct.pack("<i", 0)  # flags
        + struct.pack("<10Q", *src, *[0] * (10 - len(src)))
        + struct.pack("<QQQ", 0, 0, data)  # view_src, view_offs, data
        + b"t".ljust(64, b"\0")  # name
        + struct.pack("<i", 0)  # use_count
    )


t = rpc_tensor([4, 1, 1, 1], [4, 16, 16, 16], HANDLE, BASE)
put(
    "rpc",
    "session",
    b"\0"
    + req(14, b"\0" * 24)  # HELLO
    + req(0, struct.pack("<IQ", 0, 64))  # ALLOC_BUFFER device 0, 64 bytes
    + req(6, t + struct.pack("<Q", 0) + struct.pack("<4f", 1, 2, 3, 4))  # SET_TENSOR
    + req(8, t + struct.pack("<QQ", 0, 16))  # GET_TENSOR
    + req(4, struct.pack("<Q", HANDLE)),  # FREE_BUFFER
)
put("rpc", "device-count", b"\1" + req(15, b""))

# --- GRAPH_COMPUTE payload (the harness sends it after HELLO and a 64 KiB ALLOC_BUFFER):
# device u32 | n_nodes u32 | node ids u64[] | n_tensors u32 | tensors; c = a + b, 4 floats each.
SHAPE = ([4, 1, 1, 1], [4, 16, 16, 16])
a = rpc_tensor(*SHAPE, HANDLE, BASE + 0, tid=1)
b = rpc_tensor(*SHAPE, HANDLE, BASE + 16, tid=2)
c = rpc_tensor(*SHAPE, HANDLE, BASE + 32, tid=3, op=2, src=(1, 2))  # ADD
put("graph", "add", struct.pack("<IIQI", 0, 1, 3, 3) + a + b + c)

# --- validate: the type byte, then the data ---
put("validate", "f32-nan", b"\0" + struct.pack("<2f", 1.0, float("nan")))
put("validate", "q4_0", b"\2" + b"\0" * 18)  # one Q4_0 block
put("validate", "q8_0-inf", b"\x08" + struct.pack("<e", float("inf")) + b"\0" * 32)  # one Q8_0 block
put("validate", "bf16", b"\x1e" + b"\x80\x7f\0\0")  # BF16 inf, 0

# --- quantize: type index, blocks, rows, mode, then values ---
ramp = b"".join(struct.pack("<h", v) for v in range(-640, 640, 10))
put("quantize", "q4_0-bounded", bytes([2, 1, 2, 0]) + ramp)
put("quantize", "k-quant-imatrix", bytes([12, 0, 0x81, 1]) + ramp)
put("quantize", "raw-nan-inf", bytes([8, 0, 1, 2]) + struct.pack("<4f", float("nan"), float("inf"), -1e30, 3.0))
