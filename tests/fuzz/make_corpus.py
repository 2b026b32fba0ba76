#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<name>/).

Small valid inputs of every format, built from the layouts in docs/wire.md,
docs/bootstrap.md, docs/driver-tcp.md and docs/profile-format.md, plus a
few invalid ones. Reproducers of bugs the fuzzers found are kept by hand
in the same folders (files named repro-*); this script leaves them alone.

    python3 tests/fuzz/make_corpus.py [OUTDIR]   (default: tests/fuzz/corpus)
"""
import os
import struct
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def pad8(b):
    return b + b"\0" * (-len(b) % 8)


# ---- engine wire (libmrail/wire.h, version 8) ------------------------------
PKT = struct.pack("<II", 0x50524d00 | 8, 1)


def rec(t, length=0, flags=0):
    return struct.pack("<BBHI", t, flags, 0, length)


def eager(seq, tag, payload, t=1):
    return pad8(rec(t, len(payload)) + struct.pack("<QQ", seq, tag) + payload)


wire = {
    "eager": eager(1, 7, b"hello"),
    "eager_empty": eager(2, 0, b""),
    "eager_sync": pad8(rec(9, 3) + struct.pack("<QQQ", 3, 9, 77) + b"abc"),
    "sync_ack": rec(10) + struct.pack("<Q", 77),
    "eager_part": pad8(rec(11, 5) + struct.pack("<QQQQ", 3, 9, 10, 5) +
                       b"world"),
    "rts": rec(2) + struct.pack("<QQQQ", 4, 1, 1 << 20, 5),
    "rtr": rec(3) + struct.pack("<QQQQQ", 5, 6, 0, 65536, 1 << 20),
    "rtr_put": rec(3, flags=1) + struct.pack("<QQQQQ", 5, 6, 0, 4096, 4096),
    "data": rec(4) + struct.pack("<QQQ", 6, 0, 4096),
    "hello": rec(5) + struct.pack("<HHHHQQ", 3, 0, 2, 0, 11, 22) +
             bytes(range(16)) + bytes(16),
    "hello_ack": rec(6) + struct.pack("<Q", 22) + bytes(16),
    "bye": rec(7),
    "busy": pad8(rec(8, 3) + struct.pack("<III", 10, 20, 30)),
    "rkey": pad8(rec(16, 12) + struct.pack("<QQQ", 5, 3, 0x7f0000001000) +
                 b"key-bytes-12"),
    "get_fin": rec(17) + struct.pack("<QQQ", 5, 1 << 20, 1 << 20),
    "put_fin": rec(18) + struct.pack("<QQQ", 6, 0, 4096),
    "ack": rec(12) + struct.pack("<Q", 3),
    "rail_down": rec(13) + struct.pack("<IIQ", 1, 0, 2),
    "rdv_done": rec(14) + struct.pack("<QQ", 5, 1 << 20),
    "credit": rec(19) + struct.pack("<Q", 4 << 20),
}
for name, r in wire.items():
    write("wire", name, bytes([4]) + PKT + r)  # eager limit 4096
write("wire", "all_records", bytes([6]) + PKT + b"".join(wire.values()))
# The small-message packet the receive path takes without the general loop.
write("wire", "lone_eager_ack", bytes([4]) + PKT + wire["eager"] + wire["ack"])
write("wire", "lone_credit_eager_ack",
      bytes([4]) + PKT + wire["credit"] + wire["eager"] + wire["ack"])
write("wire", "bad_magic", bytes([4]) + b"XXXX" + PKT[4:] + wire["bye"])
write("wire", "bad_version", bytes([4]) + struct.pack("<II", 0x50524d04, 0))
write("wire", "truncated", bytes([4]) + PKT + wire["rts"][:20])
write("wire", "unknown_type", bytes([4]) + PKT + rec(31))
write("wire", "eager_too_long", bytes([1]) + PKT + eager(1, 1, b"x" * 16))
write("wire", "busy_too_many", bytes([4]) + PKT + rec(8, 65) + bytes(264))
write("wire", "rkey_empty", bytes([4]) + PKT + rec(16, 0) + bytes(24))

# ---- address blob (libmrail/address.c, version 3) ---------------------------
TCP4 = b"TCP\x01" + bytes([4, 0]) + struct.pack(">H", 4242) + bytes(4) + \
    bytes([127, 0, 0, 1])
TCP6 = b"TCP\x01" + bytes([6, 0]) + struct.pack(">H", 4243) + bytes(4) + \
    bytes(15) + b"\x01"
FAKE = b"MRFA\x01\x00" + bytes([len(b"mrail-fake.1.0.0")]) + b"mrail-fake.1.0.0"


def endpoint(driver, blob):
    return bytes([len(driver)]) + driver + struct.pack("<H", len(blob)) + blob


def netif(name, addrs, eps):
    b = struct.pack("<16sIIQiHH", name, 0x3, 1500, 10000, 0, len(addrs), 0)
    for fam, plen, a in addrs:
        b += bytes([fam, plen]) + a.ljust(16, b"\0")
    for e in eps:
        b += bytes([len(e)]) + b"".join(e)
    return b


def sstr(s):
    return bytes([len(s)]) + s


def listed(driver, blob, scope, name, fabric, ifname):
    return endpoint(driver, blob) + bytes([scope]) + sstr(name) + \
        sstr(fabric) + sstr(ifname)


def address(netifs, rails, magic=0x41524d00 | 3):
    return struct.pack("<IHHQQ", magic, len(netifs), len(rails), 0x1234,
                       0x5678) + b"".join(netifs) + b"".join(rails)


lo = netif(b"lo", [(4, 8, bytes([127, 0, 0, 1]))], [[endpoint(b"tcp", TCP4)]])
eth = netif(b"eth0", [(4, 24, bytes([10, 0, 0, 1])),
                      (6, 64, bytes([0x20, 1, 0xd, 0xb8]) + bytes(11) + b"\1")],
            [[endpoint(b"tcp", TCP4)], [endpoint(b"tcp", TCP6)]])
fake = listed(b"fake", FAKE, 1, b"fake0", b"fake", b"")
write("address", "lo_tcp", address([lo], []))
write("address", "two_netifs", address([lo, eth], []))
write("address", "listed_fake", address([], [fake]))
write("address", "mixed", address([eth], [fake, fake]))
write("address", "empty", address([], []))
write("address", "bad_magic", address([lo], [], magic=0x12345603))
write("address", "bad_version", address([lo], [], magic=0x41524d02))
write("address", "truncated", address([eth], [fake])[:-5])
write("address", "trailing", address([lo], []) + b"\0")

# ---- KVS protocol (bootstrap/kvs, version 2) --------------------------------


def kvs_frame(t, payload=b"", version=None):
    v = version if version is not None else (2 if t in (0x13, 0x24) else 1)
    return b"MK" + bytes([v, t]) + struct.pack(">I", len(payload)) + payload


def put(key, val):
    return struct.pack(">H", len(key)) + key + val


def get_many(keys):
    return struct.pack(">H", len(keys)) + b"".join(
        bytes([len(k)]) + k for k in keys)


def values(entries):
    return struct.pack(">H", len(entries)) + b"".join(
        bytes([1 if v is not None else 0]) +
        struct.pack(">I", len(v or b"")) + (v or b"") for v in entries)


keys = [b"mrail.addr.%d" % i for i in range(4)]
for name, sel, data in [
        ("hdr_put", 0, kvs_frame(0x10, b"x" * 3)[:8]),
        ("hdr_get_many", 0, kvs_frame(0x13, b"x" * 4)[:8]),
        ("hdr_values_v1", 0, kvs_frame(0x24, b"x" * 7, version=1)[:8]),
        ("put", 1, put(b"mrail.addr.0", b"blob")),
        ("put_empty_value", 1, put(b"k", b"")),
        ("auth", 2, struct.pack(">I", 3) + bytes(range(32))),
        ("addr_v4", 3, b"127.0.0.1:4000"),
        ("addr_v6", 3, b"[::1]:65535"),
        ("get_many", 4, get_many(keys)),
        ("get_many_bad", 4, get_many(keys)[:-1]),
        ("values", 5, values([b"blob0", None, b"", b"x" * 40])),
        ("values_bad", 5, values([b"abc"])[:-1])]:
    write("kvs_proto", name, bytes([sel]) + data)

# kvs_server: flags (bit 0: stream 0 authenticates as rank 0, bit 1: stream
# 1 as rank 1 [bit 2: as rank 0], bit 3: stream 0 closes early), split.
session = (kvs_frame(0x10, put(b"mrail.addr.0", b"blob-0")) +
           kvs_frame(0x11) + kvs_frame(0x12, b"mrail.addr.0") +
           kvs_frame(0x12, b"mrail.kvs.protocol") +
           kvs_frame(0x13, get_many(keys + [b"missing"])))
session1 = (kvs_frame(0x10, put(b"mrail.addr.1", b"blob-1")) +
            kvs_frame(0x11) + kvs_frame(0x13, get_many(keys)))
write("kvs_server", "two_ranks", bytes([3, 255 * len(session) //
                                        (len(session) + len(session1))]) +
      session + session1)
write("kvs_server", "one_rank", bytes([1, 255]) + session)
write("kvs_server", "unauthenticated", bytes([0, 128]) + session + session1)
write("kvs_server", "dup_rank", bytes([7, 128]) + session + session)
write("kvs_server", "bad_auth", bytes([0, 255]) +
      kvs_frame(0x02, struct.pack(">I", 0) + bytes(32)))
write("kvs_server", "early_close", bytes([11, 100]) + session + session1)
write("kvs_server", "reply_type", bytes([1, 255]) + kvs_frame(0x24, values([b"x"])))

# ---- profiles (docs/profile-format.md) --------------------------------------
PROFILE = """mrail-profile 1
driver: tcp
local: eth0@10.0.0.1
link-speed-mbps: 10000
peer: node2/eth1
date: 2024-05-01T12:34:56Z
tool: mrail-sample 0.1.0
statistic: median of 50, warm-up excluded
eager-threshold: 32768
# size eager_seconds rdv_seconds
1 1.2e-05 -
2 1.21e-05 -
4096 1.9e-05 3.1e-05
32768 4.4e-05 4.2e-05
65536 - 7.3e-05
67108864 - 0.0571
end 6
"""
write("profile", "valid", PROFILE)
write("profile", "no_end", PROFILE.rsplit("end", 1)[0])
write("profile", "bad_count", PROFILE.replace("end 6", "end 5"))
write("profile", "version2", PROFILE.replace("mrail-profile 1",
                                             "mrail-profile 2"))
write("profile", "unordered", PROFILE.replace("4096 1.9e-05", "1 1.9e-05"))
write("profile", "crlf", PROFILE.replace("\n", "\r\n"))

# ---- hosts, hostfiles, wrap templates (launcher/hosts.c) --------------------
write("hosts", "list", b"\x00node1,node2,node3")
write("hosts", "list_dup", b"\x03a,b,a,user@[::1]")
write("hosts", "list_bad", b"\x00a,,-b")
write("hosts", "hostfile", b"\x01# hosts\nnode1 slots=2\nnode2 max_slots=4\n"
      b"\nnode3 slots=1024 # comment\n")
write("hosts", "hostfile_bad", b"\x04node1 slots=0\nnode2 color=red\n")
write("hosts", "wrap_ssh", b"\x02ssh -x {host} {env} cd /tmp &&")
write("hosts", "wrap_netns", b"\x05ip netns exec {host} env R={rank} {{x}}")
write("hosts", "wrap_bad", b"\x02{env} x {nope} }")

# ---- MRAIL_* environment ----------------------------------------------------
VARS = ["MRAIL_DRIVERS", "MRAIL_RAILS", "MRAIL_RAILS_EXCLUDE",
        "MRAIL_TCP_LOOPBACK_RAILS", "MRAIL_DRIVER_PARAMS", "MRAIL_FAKE_PARAMS",
        "MRAIL_RDV", "MRAIL_REGCACHE", "MRAIL_REGCACHE_MAX_ENTRIES",
        "MRAIL_REGCACHE_MAX_BYTES", "MRAIL_STRATEGY", "MRAIL_STRATEGY_PATH",
        "MRAIL_LOG_LEVEL", "MRAIL_PROFILE_DIR", "MRAIL_EAGER_MAX",
        "MRAIL_PROGRESS_THREAD", "MRAIL_BOOTSTRAP", "MRAIL_CONNECT_TIMEOUT",
        "MRAIL_FINALIZE_TIMEOUT", "MRAIL_JOB_KEY", "MRAIL_TCP_SOCKBUF",
        "MRAIL_INBAND_SAMPLING", "MRAIL_THREAD_LEVEL", "MRAIL_TYPO"]


def env(pairs):
    return b"\n".join(bytes([VARS.index(k)]) + v.encode() for k, v in pairs)


write("env", "defaults", b"")
write("env", "all_valid", env([
    ("MRAIL_DRIVERS", "tcp,fake"), ("MRAIL_RAILS", "eth0,10.0.1.1"),
    ("MRAIL_RAILS_EXCLUDE", "lo"),
    ("MRAIL_DRIVER_PARAMS", "tcp:loopback_rails=3,sockbuf=4m;fake:rails=2"),
    ("MRAIL_FAKE_PARAMS", "rails=2,lat=1us:5us,bw=1g:400m,drop_after=5"),
    ("MRAIL_RDV", "get"), ("MRAIL_STRATEGY", "split:min_chunk=64k"),
    ("MRAIL_LOG_LEVEL", "debug"), ("MRAIL_EAGER_MAX", "16k"),
    ("MRAIL_PROGRESS_THREAD", "1"), ("MRAIL_BOOTSTRAP", "0"),
    ("MRAIL_CONNECT_TIMEOUT", "2.5"), ("MRAIL_FINALIZE_TIMEOUT", "0"),
    ("MRAIL_JOB_KEY", "00112233445566778899aabbccddeeff"),
    ("MRAIL_THREAD_LEVEL", "serialized")]))
for s in ["single", "iso", "pin:rail=1", "bw", "greedy", "aggreg:max=8",
          "split:min_chunk=4k,max_chunks=8", "nosuch:x=1", "split:bogus"]:
    write("env", "strategy_" + s.split(":")[0] + str(len(s)),
          env([("MRAIL_STRATEGY", s)]))
write("env", "bad_values", env([
    ("MRAIL_EAGER_MAX", "2g"), ("MRAIL_RDV", "rdma"),
    ("MRAIL_CONNECT_TIMEOUT", "-1"), ("MRAIL_TYPO", "1")]))
write("env", "bad_key", env([("MRAIL_JOB_KEY", "xyz")]))
write("env", "rails_missing", env([("MRAIL_RAILS", "eth9,10.9.9.9/24")]))

# ---- tcp driver frames (docs/driver-tcp.md, version 1) ----------------------


def tcp_frame(head, body=b""):
    return struct.pack("<IIQ", 0x0154524d, len(head), len(body)) + head + body


def tcp_rec(head, body=b""):
    return bytes([len(head)]) + struct.pack("<H", len(body)) + head + body


write("tcp_frame", "raw_frames", b"\x01" + tcp_frame(b"head") +
      tcp_frame(b"h2", b"body" * 100) + tcp_frame(b""))
write("tcp_frame", "raw_bad_magic", b"\x01" + b"XXXX" + bytes(12))
write("tcp_frame", "raw_bad_version", b"\x01" + struct.pack(
    "<IIQ", 0x0254524d, 0, 0))
write("tcp_frame", "raw_huge_head", b"\x01" + struct.pack(
    "<IIQ", 0x0154524d, 0xffffffff, 0))
write("tcp_frame", "raw_huge_body", b"\x01" + struct.pack(
    "<IIQ", 0x0154524d, 4, 1 << 60) + b"head")
write("tcp_frame", "raw_partial", b"\x41" + tcp_frame(b"head", b"b" * 50)[:40])
write("tcp_frame", "framed", b"\x80" + tcp_rec(b"h1") +
      tcp_rec(b"h2", b"x" * 1000) + tcp_rec(b"", b"y" * 3))
write("tcp_frame", "framed_flip", b"\x22" + tcp_rec(b"h1", b"z" * 10))

# ---- fake driver messages and address blobs (docs/driver-fake.md) -----------


def msg(b):
    return struct.pack("<H", len(b)) + b


def fake_frame(head, body=b""):
    return struct.pack("<IIQ", 0x0146524d, len(head), len(body)) + head + body


def fake_rec(head, body=b""):
    return bytes([len(head)]) + struct.pack("<H", len(body)) + head + body


write("fake_frame", "raw_frames", b"\x01" + msg(fake_frame(b"head")) +
      msg(fake_frame(b"h2", b"body" * 100)) + msg(fake_frame(b"")))
write("fake_frame", "raw_short", b"\x01" + msg(b"MRF\x01"))
write("fake_frame", "raw_bad_version", b"\x01" + msg(struct.pack(
    "<IIQ", 0x0246524d, 0, 0)))
write("fake_frame", "raw_len_mismatch", b"\x01" + msg(struct.pack(
    "<IIQ", 0x0146524d, 8, 0) + b"abc"))
write("fake_frame", "framed", b"\x40" + msg(fake_rec(b"h1")) +
      msg(fake_rec(b"h2", b"x" * 1000)) + msg(fake_rec(b"", b"y" * 3)))
write("fake_frame", "framed_flip", b"\x24" + msg(fake_rec(b"h1", b"z" * 10)))
write("fake_frame", "blob", b"\x02" + FAKE)
write("fake_frame", "blob_bad_len", b"\x02" + FAKE[:-1])
print("corpus written to", OUT)

# ---- engine receive path (fuzz_engine): flags, then "head_len u16 (bit 15:
# rail), body_len u16, bytes" records; packet headers are added by the
# harness unless flag bit 3 is set.


def erec(head, body=b""):
    return struct.pack("<HH", len(head), len(body)) + head + body


for name, flags, recs in [
        ("eager_seq0", 1, [wire["eager"].replace(struct.pack("<Q", 1),
                                                 struct.pack("<Q", 0), 1)]),
        ("eager_seq1", 1, [wire["eager"]]),
        ("eagers_out_of_order", 1, [eager(1, 0, b"b"), eager(0, 0, b"a")]),
        ("eager_sync", 1, [pad8(rec(9, 3) + struct.pack("<QQQ", 0, 0, 7) +
                                b"abc")]),
        ("rts_matched", 1, [rec(2) + struct.pack("<QQQQ", 0, 0, 65536, 1)]),
        ("rts_unexpected", 0, [rec(2) + struct.pack("<QQQQ", 0, 3, 1 << 30, 1)]),
        ("rtr_for_send", 2, [rec(3) + struct.pack("<QQQQQ", 1, 9, 0, 65536,
                                                  262144)]),
        ("rtr_put_no_key", 2, [rec(3, flags=1) + struct.pack(
            "<QQQQQ", 1, 9, 0, 4096, 4096)]),
        ("data_stray", 1, [rec(4) + struct.pack("<QQQ", 1, 0, 16)]),
        ("sync_ack", 4, [wire["sync_ack"]]),
        ("busy", 0, [wire["busy"]]),
        ("bye", 7, [wire["bye"]]),
        ("rkey_getfin", 2, [wire["rkey"], wire["get_fin"], wire["put_fin"]]),
        ("hello_again", 0, [wire["hello"]]),
        ("hello_ack", 0, [wire["hello_ack"]]),
        ("bad_mac", 16, [wire["eager"]]),
        ("keep_open", 33, [wire["eager"]]),
        ("raw_bad_header", 8, [b"\0" * 16]),
        ("ack_beyond", 0, [wire["ack"]]),
        ("rail_down_other", 1, [wire["rail_down"]]),
        ("rdv_done_unknown", 2, [wire["rdv_done"]])]:
    out = bytes([flags])
    for r in recs:
        out += erec(r, b"D" * 16 if r[0] == 4 else b"")
    write("engine", name, out)
print("engine corpus written")
