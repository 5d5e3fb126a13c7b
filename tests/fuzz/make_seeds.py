#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the seed corpus of fuzz_proto.c into tests/fuzz/corpus/ (run once; the files are kept
in the repository with every crash input found since).  Record: selector, length (2 bytes LE),
message; see fuzz_proto.c for the selector's bits.  Headers follow prov/ddtx/src/proto/hdr.h."""
import os
import struct

V = 7  # DDTX_PROTO_VERSION (the fuzzer sets it anyway, unless a selector has bit 6)
PACK, SGL, UMR = 1, 2, 3
TAGGED, CQ_DATA, LAST, ACK_REQ, CACHED, WARM = 1, 2, 4, 8, 16, 32
RMA_EVENT, READ, MORE, IPC, PULL, PULLED, SPLIT = 64, 128, 256, 512, 1024, 2048, 4096
ATOMIC_WRITE, ATOMIC_FETCH, ATOMIC_COMPARE = 0, 1, 2   # engine/atomic_exec.h
FI_MIN, FI_SUM, FI_BOR, FI_ATOMIC_READ, FI_CSWAP, FI_CSWAP_LE, FI_MSWAP = 0, 2, 6, 10, 12, 14, 18
FI_INT8, FI_UINT64, FI_DOUBLE, FI_LONG_DOUBLE_COMPLEX, FI_UINT128 = 0, 7, 9, 13, 15


def base(t, flags=0):
    return struct.pack("<BBHI", t, V, flags, 0)


def rec(sel, msg):
    return bytes([sel]) + struct.pack("<H", len(msg)) + msg


def live(t, which=1):   # selector: header kept valid, id of the which-th live operation
    return ((t - 1) % 8) | (which << 4) | (0x80 if t > 8 else 0)


def atomic(kind, op, dt, size, segs, operand=b"", compare=b"", tx_id=3):
    count = sum(c for _, c, _ in segs)
    m = base(9) + struct.pack("<IBBBBQII", tx_id, kind, op, dt, 0, count, len(segs), 0)
    m += b"".join(struct.pack("<QQQ", a, c, k) for a, c, k in segs)
    return m + operand + compare


def atomic_resp(status, old=b"", tx_id=0):
    return base(10) + struct.pack("<IiQ", tx_id, status, len(old)) + old


def cts(acc, off, scheme, flags=0, chunk=0, wset=0, descs=()):
    m = base(3, flags) + struct.pack("<IIQQIIQQ", 0, 1, acc, off, scheme, len(descs), chunk, wset)
    return m + b"".join(struct.pack("<QQ", k, n) for k, n in descs)


def rts(total, scheme, nblocks, minb, avgb, tx_id=5, flags=0, pull_key=0, pull_addr=0):
    return base(2, flags) + struct.pack("<QQQIIQQQQQ", 0, 0, total, tx_id, scheme, nblocks, minb,
                                        avgb, pull_key, pull_addr)


def ipc_offer(total, runs, nalloc=1, size=1 << 20):
    """An RTS with IPC: nalloc allocations of `size` bytes, then runs (alloc, flags, count, len,
    offset, stride[, offsets]) as proto/ipc_runs.c writes them."""
    m = rts(total, PACK, 1, total, total, tx_id=9, flags=IPC)
    m += struct.pack("<II", nalloc, len(runs))
    for k in range(nalloc):
        m += bytes([0xab] * 64) + struct.pack("<QQQ", 0x7f0000000000 + k * size, size, 99 + k)
    for r in runs:
        alloc, flags, count, ln, off, stride = r[:6]
        m += struct.pack("<HHIQQQ", alloc, flags, count, ln, off, stride)
        m += b"".join(struct.pack("<Q", o) for o in (r[6] if len(r) > 6 else ()))
    return m


def eager(payload, tag=0, flags=0, tx_id=0):
    return base(1, flags) + struct.pack("<QQQII", tag, 0, len(payload), tx_id, 0) + payload


seeds = {
    "cts_pack": rec(live(3), cts(65536, 0, PACK, LAST)),
    "cts_zero": rec(live(3), cts(0, 0, PACK, LAST)),
    "cts_sgl_batches": rec(live(3), cts(65536, 0, SGL, 0, descs=[(0x77, 4096), (0x78, 4096)]))
    + rec(live(3), cts(65536, 8192, SGL, LAST, descs=[(0x79, 57344)])),
    "cts_umr_list": rec(live(3), cts(65536, 0, UMR, LAST, 1024, 7, [(0x80 + i, 1024) for i in range(64)])),
    "cts_umr_cached": rec(live(3), cts(65536, 0, UMR, LAST | CACHED, 1024, 7)),
    # the two crashes of the hardening issue
    "crash_two_cts": rec(live(3), cts(65536, 0, SGL, 0, descs=[(0xdead0001, 4096)]))
    + rec(live(3), cts(65536, 65636, SGL, 0, descs=[(0xdead0002, 4096)])),
    "crash_umr_chunk_zero": rec(live(3), cts(65536, 0, UMR, LAST | CACHED, 1, 7))
    + rec(live(3), cts(65536, 0, UMR, LAST, 0, 8, [(1, 1)])),
    "ack": rec(live(7), base(7) + struct.pack("<Ii", 0, 0)),
    "ack_int_min": rec(live(7), base(7) + struct.pack("<Ii", 0, -2**31)),
    "rts_data": rec(1, rts(65536, PACK, 1, 65536, 65536))
    + rec(live(4), base(4) + struct.pack("<IIQQ", 0, 0, 0, 16) + b"d" * 16),
    "rts_done": rec(1, rts(65536, SGL, 16, 4096, 4096, flags=WARM))
    + rec(live(5), base(5) + struct.pack("<IiQ", 0, -5, 0)),
    # pull (protocol 6): an RTS offering a key the victim reads (a bogus one: its read fails
    # and it asks for writes), and a PULLED CTS for a send that offered no pull
    "rts_pull": rec(1, rts(65536, SGL, 1, 65536, 65536, flags=PULL, pull_key=0xdead0003)),
    "cts_pulled": rec(live(3), cts(65536, 0, SGL, LAST | PULLED)),
    # split pull (protocol 7): a SPLIT CTS for the tail, then the PULLED for the head; an RTS
    # whose pull address wraps
    "cts_split": rec(live(3), cts(65536, 40960, SGL, LAST | SPLIT, descs=[(0x7a, 24576)]))
    + rec(live(3), cts(65536, 0, SGL, LAST | PULLED)),
    "rts_pull_wraps": rec(1, rts(65536, SGL, 1, 65536, 65536, flags=PULL, pull_key=0xdead0004,
                                 pull_addr=2**64 - 4096)),
    "list_req": rec(live(8), base(8) + struct.pack("<II", 0, 0)),
    "rma_data": rec(live(6), base(6, CQ_DATA) + struct.pack("<QQQQQ", 42, 4096, 0, 0, 4096)),
    "eager": rec(0, eager(b"hello", 0)) + rec(0, eager(b"tagged", 7, TAGGED, 3)),
    "eager_ack_req": rec(0, eager(b"x" * 100, 0, ACK_REQ, 9)),
    "raw": rec(0x40, bytes(range(64))),
    # atomics: requests on the registered key (fixed up: key and address of segment 0)
    "atomic_sum": rec(live(9), atomic(ATOMIC_WRITE, FI_SUM, FI_UINT64, 8, [(0, 4, 0)],
                                      struct.pack("<4Q", 1, 2, 3, 4))),
    "atomic_fetch_min_int8": rec(live(9, 2), atomic(ATOMIC_FETCH, FI_MIN, FI_INT8, 1, [(0, 16, 0)],
                                                     bytes(range(16)))),
    "atomic_read": rec(live(9), atomic(ATOMIC_FETCH, FI_ATOMIC_READ, FI_DOUBLE, 8, [(0, 2, 0)])),
    "atomic_cswap_ldc": rec(live(9), atomic(ATOMIC_COMPARE, FI_CSWAP, FI_LONG_DOUBLE_COMPLEX, 32,
                                            [(0, 1, 0)], b"a" * 32, b"\0" * 32)),
    "atomic_mswap_u128": rec(live(9, 3), atomic(ATOMIC_COMPARE, FI_MSWAP, FI_UINT128, 16,
                                                 [(0, 2, 0)], b"m" * 32, b"k" * 32)),
    "atomic_two_segs": rec(live(9), atomic(ATOMIC_WRITE, FI_BOR, FI_UINT64, 8,
                                           [(0, 1, 0), (0x1000, 1, 0x77)], b"o" * 16)),
    "atomic_bad_count": rec(live(9), atomic(ATOMIC_WRITE, FI_SUM, FI_UINT64, 8,
                                            [(0, 2**63, 0)], b"x" * 8)),
    "atomic_bad_op": rec(live(9), atomic(ATOMIC_WRITE, FI_CSWAP_LE, FI_LONG_DOUBLE_COMPLEX, 32,
                                         [(0, 1, 0)], b"y" * 32)),
    "atomic_resp": rec(live(10), atomic_resp(0, struct.pack("<Q", 5)))
    + rec(live(10, 2), atomic_resp(0, struct.pack("<2Q", 6, 7))),
    "atomic_resp_error": rec(live(10), atomic_resp(-13)) + rec(live(10, 2), atomic_resp(-2**31)),
    "atomic_resp_long": rec(live(10), atomic_resp(0, b"z" * 64)),
    "rma_event": rec(live(6), base(6, RMA_EVENT) + struct.pack("<QQQQQ", 0, 4096, 0, 0, 4096))
    + rec(live(6, 2), base(6, RMA_EVENT | MORE) + struct.pack("<QQQQQ", 0, 4096, 0, 0, 1024))
    + rec(live(6), base(6, RMA_EVENT | READ) + struct.pack("<QQQQQ", 0, 64, 0, 0, 64)),
    # CUDA IPC offers (protocol 9): a vector and a list, valid; the receiver has no driver
    # and declines them after peer_check's walk of the runs
    "rts_ipc_runs": rec(1, ipc_offer(64 * 8 + 3 * 16, [(0, 0, 64, 8, 0, 1040),
                                                      (0, 1, 3, 16, 0, 0, (4096, 64, 100000))])),
    "rts_ipc_two_allocs": rec(1, ipc_offer(8192, [(1, 0, 2, 4096, 0, 8192)], nalloc=2)),
}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(data)
print("%d seeds in %s" % (len(seeds), out))
