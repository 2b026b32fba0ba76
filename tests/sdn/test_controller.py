#!/usr/bin/env python3
"""The reference controller: codec port on the shared vectors, request
parsing, topology/policy files, the route modules, and mrail-sdnd itself
(--dry-run) over a real socket.
usage: test_controller.py CONTROLLER_DIR VECTORS"""

import os
import socket
import subprocess
import sys
import tempfile
import time

CDIR, VECTORS = sys.argv[1], sys.argv[2]
sys.path.insert(0, CDIR)
import sdnctl  # noqa: E402
import sdntag  # noqa: E402

TOPO = """version 1
switch s1 spine unix:/nonexistent/s1.mgmt
switch s2 spine unix:/nonexistent/s2.mgmt
switch l1 leaf unix:/nonexistent/l1.mgmt
switch l2 leaf unix:/nonexistent/l2.mgmt
link l1:1 s1:1
link l1:2 s2:1
link l2:1 s1:2
link l2:2 s2:2
host h0 02:00:00:00:01:00 l1:3
host h1 02:00:00:00:01:01 l1:4
host h2 02:00:00:00:01:02 l2:3
host h3 02:00:00:00:01:03 l2:4
"""
POLICY = "version 1\nbcast spine s1\nreduce spine s2\nallreduce balanced\n"


def expect_error(fn, text):
    try:
        fn()
    except (ValueError, sdnctl.ProtocolError) as e:
        assert text in str(e), "%r lacks %r" % (str(e), text)
        return
    raise AssertionError("no error (wanted %r)" % text)


def test_vectors():
    n = 0
    for line in open(VECTORS):
        if line.startswith("#") or not line.strip():
            continue
        p, c, s, d, mac = line.split()
        p, c, s, d = int(p), int(c), int(s), int(d)
        assert sdntag.mac_str(sdntag.encode(p, c, s, d)) == mac, line
        assert sdntag.decode(sdntag.mac_bytes(mac)) == (p, c, s, d), line
        n += 1
    assert n >= 10
    assert sdntag.decode(bytes.fromhex("020000000001")) is None  # version 0
    assert sdntag.decode(bytes.fromhex("4b0000000001")) is None  # multicast
    assert sdntag.decode(bytes.fromhex("6e0000000001")) is None  # prim 11
    expect_error(lambda: sdntag.encode(2, 4096, 0, 0), "comm 4096")
    expect_error(lambda: sdntag.encode(2, 0, 16384, 0), "src 16384")
    # The fallback match selects exactly the destination rank's bits.
    v, m = sdntag.dst_match(5)
    vb, mb = sdntag.mac_bytes(v), sdntag.mac_bytes(m)
    for p, c, s, d in ((2, 7, 3, 5), (0, 4095, 16383, 5), (3, 1, 1, 6)):
        t = sdntag.encode(p, c, s, d)
        hit = all(t[i] & mb[i] == vb[i] for i in range(6))
        assert hit == (d == 5), (p, c, s, d)


def test_parse():
    # The exact line the C client's test sends (same key).
    r = sdnctl.parse_request(b"MRSDN/1 PATTERN seq=2 job=job7 root=0 "
                             b"key=21b1ddcb17947673 comm=0 prim=bcast "
                             b"pairs=0-2,0-1,2-3")
    assert r["pairs"] == [(0, 2), (0, 1), (2, 3)] and r["prim"] == 2
    bad = [(b"MRSDN/2 HELLO seq=1 job=j", "not protocol"),
           (b"MRSDN/1 HELLO seq=x job=j", "seq"),
           (b"MRSDN/1 FOO seq=1 job=j", "unknown request"),
           (b"MRSDN/1 HELLO seq=1 job=j rank=4 size=4 host=h rails=a/b/c",
            "rank 4 out of range"),
           (b"MRSDN/1 HELLO seq=1 job=j rank=0 size=4 host=h rails=eth0",
            "ifname/ip/mac"),
           (b"MRSDN/1 PATTERN seq=2 job=j root=0 key=21b1ddcb17947673 "
            b"comm=0 prim=bcast pairs=0-2,0-1,2-4", "does not match"),
           (b"MRSDN/1 PATTERN seq=2 job=j root=0 key=0 comm=0 prim=warp "
            b"pairs=0-1", "prim"),
           (b"MRSDN/1 PATTERN seq=2 job=j root=0 key=0 comm=0 prim=bcast "
            b"pairs=0-99999", "out of range"),
           (b"MRSDN/1 WAIT seq=1 job=j key=12", "16 hex"),
           (b"MRSDN/1 WAIT seq=1 seq=2 job=j key=12", "twice"),
           (b"\xff\xfe", "ASCII")]
    for line, text in bad:
        expect_error(lambda: sdnctl.parse_request(line), text)


def test_routes():
    topo = sdnctl.Topology.parse(TOPO)
    pol = sdnctl.Policy.parse(POLICY, topo)
    hosts = {0: "h0", 1: "h1", 2: "h2", 3: "h3"}
    # Binomial bcast from 0 (Open MPI's tree), binomial reduce to 0.
    bc = sdnctl.route_pattern(topo, pol, 2, [(0, 2), (0, 1), (2, 3)], hosts)
    assert [p for _, _, p in bc] == [["l1", "s1", "l2"], ["l1"], ["l2"]]
    rd = sdnctl.route_pattern(topo, pol, 3, [(1, 0), (3, 2), (2, 0)], hosts)
    assert [p for _, _, p in rd] == [["l1"], ["l2"], ["l2", "s2", "l1"]]
    # Recursive doubling on 4 ranks: the cross-leaf pairs on both spines.
    rdbl = [(0, 1), (1, 0), (2, 3), (3, 2), (0, 2), (2, 0), (1, 3), (3, 1)]
    ar = sdnctl.route_pattern(topo, pol, 4, rdbl, hosts)
    spines = [p[1] for _, _, p in ar if len(p) == 3]
    assert sorted(set(spines)) == ["s1", "s2"], spines
    fl = sdnctl.tag_flows(topo, 2, 0, bc, hosts)
    tag = sdntag.mac_str(sdntag.encode(2, 0, 0, 2))
    assert fl["l1"][0] == "priority=100,dl_dst=%s,actions=output:1" % tag
    assert fl["l2"][0] == ("priority=100,dl_dst=%s,actions=mod_dl_dst:"
                           "02:00:00:00:01:02,output:3" % tag)
    # One leaf, no spine: base and fallback flows stay on the leaf; a
    # host behind a leaf with no way up is a clear error.
    one = sdnctl.Topology.parse("version 1\nswitch l1 leaf x\n"
                                "host a 02:00:00:00:00:01 l1:1\n"
                                "host b 02:00:00:00:00:02 l1:2\n")
    assert set(sdnctl.base_flows(one)) == {"l1"}
    assert len(sdnctl.fallback_flows(one, 0, "a")["l1"]) == 1
    two = sdnctl.Topology.parse("version 1\nswitch l1 leaf x\n"
                                "switch l2 leaf y\n"
                                "host a 02:00:00:00:00:01 l1:1\n"
                                "host b 02:00:00:00:00:02 l2:1\n")
    expect_error(lambda: sdnctl.base_flows(two), "no path")
    expect_error(lambda: sdnctl.Policy.parse("version 1\nbcast spine l1\n",
                                             topo), "not a spine")
    expect_error(lambda: sdnctl.Policy.parse("bcast spine s1\n", topo),
                 "must come first")
    expect_error(lambda: sdnctl.Topology.parse("version 1\nlink a:1 b:1\n"),
                 "SWITCH:PORT")
    expect_error(lambda: sdnctl.Topology.parse("version 2\n"), "version")


def test_daemon():
    d = tempfile.mkdtemp()
    for n, t in (("topo", TOPO), ("policy", POLICY)):
        with open(os.path.join(d, n), "w") as f:
            f.write(t)
    ready = os.path.join(d, "port")
    p = subprocess.Popen([sys.executable, os.path.join(CDIR, "mrail-sdnd"),
                          "--dry-run", "--listen", "127.0.0.1:0",
                          "--ready-file", ready, "--wait-timeout", "1",
                          "--topology", os.path.join(d, "topo"),
                          "--policy", os.path.join(d, "policy")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        for _ in range(100):
            if os.path.exists(ready):
                break
            time.sleep(0.05)
        port = int(open(ready).read())
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        f = s.makefile("rb")

        def req(line):
            s.sendall(line + b"\n")

        def reply():
            return f.readline().strip()
        # A WAIT before the pattern parks until the pattern is in.
        req(b"MRSDN/1 WAIT seq=1 job=j key=21b1ddcb17947673")
        for r in range(4):
            req(b"MRSDN/1 HELLO seq=%d job=j rank=%d size=4 host=x "
                b"rails=eth0/10.0.0.%d/02:00:00:00:01:0%d" % (
                    r + 2, r, r, r))
        req(b"MRSDN/1 PATTERN seq=6 job=j root=0 key=21b1ddcb17947673 "
            b"comm=0 prim=bcast pairs=0-2,0-1,2-3")
        got = [reply() for _ in range(6)]
        assert got == [b"MRSDN/1 ACK seq=%d" % i for i in (2, 3, 4, 5, 1, 6)]\
            or sorted(got) == sorted(b"MRSDN/1 ACK seq=%d" % i
                                     for i in range(1, 7)), got
        # A rank on no host of the topology is refused by name.
        req(b"MRSDN/1 HELLO seq=7 job=j rank=0 size=4 host=x "
            b"rails=eth0/10.0.0.9/02:00:00:00:09:09")
        r = reply()
        assert r.startswith(b"MRSDN/1 NACK seq=7 reason=rank 0:"), r
        # A WAIT for a pattern nobody announces: NACK after the timeout.
        req(b"MRSDN/1 WAIT seq=8 job=j key=0000000000000001")
        r = reply()
        assert r.startswith(b"MRSDN/1 NACK seq=8 reason=not installed"), r
        # Garbage: the connection is closed (no seq to answer).
        req(b"GET / HTTP/1.0")
        assert reply() == b""
        s.close()
    finally:
        p.terminate()
        out, err = p.communicate(timeout=5)
    tag = sdntag.mac_str(sdntag.encode(2, 0, 0, 2))
    assert "s1 priority=100,dl_dst=%s,actions=output:2" % tag in out, out
    assert "protocol error" in err, err


for t in (test_vectors, test_parse, test_routes, test_daemon):
    t()
    print("%s: ok" % t.__name__)
