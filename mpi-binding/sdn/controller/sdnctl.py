"""The reference SDN controller's pieces (docs/sdn-controller.md): protocol
version 1 parsing, topology and policy files, the route modules and the
flows they become. mrail-sdnd wires them to sockets and ovs-ofctl."""

import heapq
import re

import sdntag

PROTO = "MRSDN/1"
MAX_LINE = 1 << 20
TOKEN = re.compile(r"^[!-~]+$")


class ProtocolError(Exception):
    pass


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _int(fields, k, lim=None):
    v = fields.get(k)
    if v is None or not v.isdigit() or len(v) > 19:
        raise ProtocolError("%s: missing or not a number" % k)
    n = int(v)
    if lim is not None and n >= lim:
        raise ProtocolError("%s %d out of range (limit %d)" % (k, n, lim))
    return n


def parse_request(line):
    """One request line (bytes, no newline) -> dict with 'verb', 'seq' and
    the verb's fields; ProtocolError naming what is wrong."""
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        raise ProtocolError("not ASCII")
    parts = text.split(" ")
    if len(parts) < 3 or parts[0] != PROTO:
        raise ProtocolError("not protocol %s: %.40r" % (PROTO, text))
    verb = parts[1]
    fields = {}
    for p in parts[2:]:
        k, eq, v = p.partition("=")
        if not eq or not k or not v or not TOKEN.match(v):
            raise ProtocolError("bad field %.40r" % p)
        if k in fields:
            raise ProtocolError("field %s twice" % k)
        fields[k] = v
    req = {"verb": verb, "seq": _int(fields, "seq")}
    if "job" not in fields:
        raise ProtocolError("job: missing")
    req["job"] = fields["job"]
    if verb == "HELLO":
        req["size"] = _int(fields, "size", sdntag.MAX_RANK + 1)
        req["rank"] = _int(fields, "rank", req["size"])
        req["host"] = fields.get("host") or ""
        rails = []
        for r in fields.get("rails", "").split(","):
            f = r.split("/")
            if len(f) != 3:
                raise ProtocolError("rail %.40r is not ifname/ip/mac" % r)
            try:
                rails.append((f[0], f[1], sdntag.mac_bytes(f[2])))
            except ValueError as e:
                raise ProtocolError(str(e))
        req["rails"] = rails
    elif verb == "PATTERN":
        req["root"] = _int(fields, "root", sdntag.MAX_RANK)
        req["comm"] = _int(fields, "comm", sdntag.MAX_COMM)
        prim = fields.get("prim")
        if prim not in sdntag.PRIM_OF_NAME:
            raise ProtocolError("prim %r unknown" % prim)
        req["prim"] = sdntag.PRIM_OF_NAME[prim]
        pairs = []
        for p in fields.get("pairs", "").split(","):
            s, dash, d = p.partition("-")
            if not dash or not s.isdigit() or not d.isdigit() or \
                    len(s) > 5 or len(d) > 5:
                raise ProtocolError("pair %.20r is not src-dst" % p)
            s, d = int(s), int(d)
            if s >= sdntag.MAX_RANK or d >= sdntag.MAX_RANK:
                raise ProtocolError("pair %d-%d: rank out of range" % (s, d))
            pairs.append((s, d))
        req["pairs"] = pairs
        text_at = text.index(" comm=") + 1
        key = fnv1a64(text[text_at:].encode())
        if fields.get("key") != "%016x" % key:
            raise ProtocolError("key %s does not match the pattern (%016x)"
                                % (fields.get("key"), key))
        # The key hashes the fields in this order: refuse any other order.
        if not text[text_at:].startswith("comm=%d prim=%s pairs=" %
                                         (req["comm"], prim)):
            raise ProtocolError("pattern fields out of order")
        req["key"] = key
    elif verb == "WAIT":
        k = fields.get("key", "")
        if not re.match(r"^[0-9a-f]{16}$", k):
            raise ProtocolError("key %.20r is not 16 hex digits" % k)
        req["key"] = int(k, 16)
    else:
        raise ProtocolError("unknown request %.20r" % verb)
    return req


def ack(seq):
    return ("%s ACK seq=%d\n" % (PROTO, seq)).encode()


def nack(seq, reason):
    reason = re.sub(r"[^ -~]", "?", reason)[:200]
    return ("%s NACK seq=%d reason=%s\n" % (PROTO, seq, reason)).encode()


class Topology:
    """Switches, links and hosts from a topology file (format version 1):
        version 1
        switch NAME leaf|spine TARGET      (ovs-ofctl target)
        link SW:PORT SW:PORT
        host NAME MAC SW:PORT
    """

    def __init__(self):
        self.switches = {}   # name -> (role, target)
        self.links = {}      # (sw, peer_sw) -> port on sw towards peer
        self.hosts = {}      # name -> (mac bytes, sw, port)
        self.host_of_mac = {}

    @classmethod
    def parse(cls, text, name="topology"):
        t = cls()
        version = None
        for no, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].split()
            if not line:
                continue
            where = "%s:%d" % (name, no)

            def swport(s):
                sw, colon, port = s.partition(":")
                if not colon or sw not in t.switches or not port.isdigit():
                    raise ValueError("%s: %r is not SWITCH:PORT of a "
                                     "declared switch" % (where, s))
                return sw, int(port)
            if line[0] == "version":
                if line[1:] != ["1"]:
                    raise ValueError("%s: topology version %s, this "
                                     "controller reads 1" % (where, line[1:]))
                version = 1
            elif version is None:
                raise ValueError("%s: 'version 1' must come first" % where)
            elif line[0] == "switch" and len(line) == 4 and \
                    line[2] in ("leaf", "spine"):
                t.switches[line[1]] = (line[2], line[3])
            elif line[0] == "link" and len(line) == 3:
                (a, pa), (b, pb) = swport(line[1]), swport(line[2])
                t.links[(a, b)] = pa
                t.links[(b, a)] = pb
            elif line[0] == "host" and len(line) == 4:
                mac = sdntag.mac_bytes(line[2])
                sw, port = swport(line[3])
                t.hosts[line[1]] = (mac, sw, port)
                t.host_of_mac[mac] = line[1]
            else:
                raise ValueError("%s: cannot parse %r" % (where, raw))
        if version is None:
            raise ValueError("%s: empty" % name)
        return t

    def spines(self):
        return sorted(s for s, (r, _) in self.switches.items() if r == "spine")

    def neighbours(self, sw):
        return sorted(b for (a, b) in self.links if a == sw)

    def path(self, src, dst, weight=None, via=None):
        """Switches from src to dst (Dijkstra; weight(a, b) per directed
        link, default 1), through `via` when given (never between hosts
        of one switch)."""
        if src == dst:
            return [src]
        if via is not None and via not in (src, dst):
            return self.path(src, via, weight)[:-1] + self.path(via, dst,
                                                                 weight)
        weight = weight or (lambda a, b: 1)
        dist, prev, heap = {src: 0}, {}, [(0, src)]
        while heap:
            d, a = heapq.heappop(heap)
            if a == dst:
                break
            if d > dist[a]:
                continue
            for b in self.neighbours(a):
                nd = d + weight(a, b)
                if nd < dist.get(b, float("inf")):
                    dist[b], prev[b] = nd, a
                    heapq.heappush(heap, (nd, b))
        if dst not in dist:
            raise ValueError("no path from %s to %s" % (src, dst))
        p = [dst]
        while p[-1] != src:
            p.append(prev[p[-1]])
        return p[::-1]


class Policy:
    """primitive -> route module (policy file format version 1):
        version 1
        bcast spine s1        every pair of the primitive through s1
        reduce spine s2
        allreduce balanced    seed-001: Dijkstra, weight 1 + routes on link
        default balanced      primitives not listed
    """

    def __init__(self):
        self.rules = {"default": ("balanced", None)}

    @classmethod
    def parse(cls, text, topo, name="policy"):
        p = cls()
        version = None
        for no, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].split()
            if not line:
                continue
            where = "%s:%d" % (name, no)
            if line[0] == "version":
                if line[1:] != ["1"]:
                    raise ValueError("%s: policy version %s, this "
                                     "controller reads 1" % (where, line[1:]))
                version = 1
                continue
            if version is None:
                raise ValueError("%s: 'version 1' must come first" % where)
            if line[0] != "default" and line[0] not in sdntag.PRIM_OF_NAME:
                raise ValueError("%s: unknown primitive %r" % (where, line[0]))
            if line[1:2] == ["balanced"] and len(line) == 2:
                p.rules[line[0]] = ("balanced", None)
            elif line[1:2] == ["spine"] and len(line) == 3:
                if topo.switches.get(line[2], ("",))[0] != "spine":
                    raise ValueError("%s: %r is not a spine of the topology"
                                     % (where, line[2]))
                p.rules[line[0]] = ("spine", line[2])
            else:
                raise ValueError("%s: cannot parse %r" % (where, raw))
        return p

    def rule(self, prim):
        return self.rules.get(sdntag.PRIMS[prim], self.rules["default"])


def route_pattern(topo, policy, prim, pairs, host_of_rank):
    """[(src, dst, [switches])] for the pattern's pairs between different
    hosts. Balanced: the seed-001 router, link weight = 1 + routes already
    placed on the (directed) link by this pattern."""
    module, spine = policy.rule(prim)
    load = {}
    out = []
    for s, d in pairs:
        hs, hd = host_of_rank[s], host_of_rank[d]
        if hs == hd:
            continue
        a, b = topo.hosts[hs][1], topo.hosts[hd][1]
        if module == "spine":
            path = topo.path(a, b, via=spine)
        else:
            path = topo.path(a, b, lambda x, y: 1 + load.get((x, y), 0))
        for x, y in zip(path, path[1:]):
            load[(x, y)] = load.get((x, y), 0) + 1
        out.append((s, d, path))
    return out


def tag_flows(topo, prim, comm, routes, host_of_rank, priority=100):
    """{switch: [ovs-ofctl flow]} for the routes: match the tag, forward;
    the last switch restores the destination's real MAC."""
    flows = {}
    for s, d, path in routes:
        tag = sdntag.mac_str(sdntag.encode(prim, comm, s, d))
        mac, _, hport = topo.hosts[host_of_rank[d]]
        for i, sw in enumerate(path):
            if i + 1 < len(path):
                act = "output:%d" % topo.links[(sw, path[i + 1])]
            else:
                act = "mod_dl_dst:%s,output:%d" % (sdntag.mac_str(mac), hport)
            flows.setdefault(sw, []).append(
                "priority=%d,dl_dst=%s,actions=%s" % (priority, tag, act))
    return flows


def base_flows(topo):
    """Non-MPI traffic: shortest paths by real MAC (static spine per
    destination host), broadcast along the tree through the first spine,
    everything else dropped (a fat-tree has loops)."""
    spines = topo.spines()
    flows = {sw: ["priority=0,actions=drop"] for sw in topo.switches}
    hosts = sorted(topo.hosts)
    for i, h in enumerate(hosts):
        mac, leaf, port = topo.hosts[h]
        m = sdntag.mac_str(mac)
        for sw, (role, _) in topo.switches.items():
            if sw == leaf:
                act = "output:%d" % port
            else:
                via = spines[i % len(spines)] \
                    if role == "leaf" and spines else None
                p = topo.path(sw, leaf, via=via)
                act = "output:%d" % topo.links[(sw, p[1])]
            flows[sw].append("priority=10,dl_dst=%s,actions=%s" % (m, act))
    tree = spines[0] if spines else None   # one leaf: no spine at all
    bc = "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00"
    for sw, (role, _) in topo.switches.items():
        if sw == tree:
            flows[sw].append("priority=5,%s,actions=ALL" % bc)
            continue
        if role == "spine":
            continue  # drop: only the tree spine floods
        hports = sorted(p for (m, l, p) in topo.hosts.values() if l == sw)
        up = topo.links.get((sw, tree))
        ports = hports + ([up] if up else [])
        for inp in ports:
            outs = [p for p in ports if p != inp]
            if outs:
                flows[sw].append("priority=5,in_port=%d,%s,actions=%s" % (
                    inp, bc, ",".join("output:%d" % p for p in outs)))
    return flows


def fallback_flows(topo, rank, host):
    """Any version-1 tag to `rank` (patterns not announced: p2p, nbc,
    other collectives) on the static path to its host, MAC restored."""
    value, mask = sdntag.dst_match(rank)
    mac, leaf, port = topo.hosts[host]
    spines = topo.spines()
    via = spines[sorted(topo.hosts).index(host) % len(spines)] \
        if spines else None
    flows = {}
    for sw, (role, _) in topo.switches.items():
        if sw == leaf:
            act = "mod_dl_dst:%s,output:%d" % (sdntag.mac_str(mac), port)
        else:
            p = topo.path(sw, leaf, via=via if role == "leaf" else None)
            act = "output:%d" % topo.links[(sw, p[1])]
        flows.setdefault(sw, []).append(
            "priority=50,dl_dst=%s/%s,actions=%s" % (value, mask, act))
    return flows
