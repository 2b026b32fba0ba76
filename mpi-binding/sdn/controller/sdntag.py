"""SDN tag codec, format version 1: a port of mpi-binding/sdn/sdn_tag.c
(docs/sdn.md). tests/sdn/tag_vectors.txt holds vectors both sides check."""

VERSION = 1
MAX_COMM = 4096
MAX_RANK = 16384
PRIMS = {0: "p2p", 1: "barrier", 2: "bcast", 3: "reduce", 4: "allreduce",
         5: "allgather", 6: "alltoall", 7: "gather", 8: "scatter",
         9: "reduce_scatter", 10: "scan", 13: "coll_other", 14: "nbc"}
PRIM_OF_NAME = {v: k for k, v in PRIMS.items()}


def encode(prim, comm, src, dst):
    """The tag as 6 bytes; ValueError naming the field out of range."""
    if prim not in PRIMS:
        raise ValueError("primitive %r is not defined in version 1" % prim)
    for name, val, lim in (("comm", comm, MAX_COMM), ("src", src, MAX_RANK),
                           ("dst", dst, MAX_RANK)):
        if not 0 <= val < lim:
            raise ValueError("%s %d out of range (limit %d)" % (name, val, lim))
    low = (comm << 28) | (src << 14) | dst
    return bytes([(VERSION << 6) | (prim << 2) | 2]) + low.to_bytes(5, "big")


def decode(mac):
    """(prim, comm, src, dst), or None when mac is not a version-1 tag."""
    if len(mac) != 6 or mac[0] & 1 or not mac[0] & 2 or mac[0] >> 6 != VERSION:
        return None
    prim = (mac[0] >> 2) & 0xF
    if prim not in PRIMS:
        return None
    low = int.from_bytes(mac[1:], "big")
    return prim, (low >> 28) & 0xFFF, (low >> 14) & 0x3FFF, low & 0x3FFF


def mac_str(mac):
    return ":".join("%02x" % b for b in mac)


def mac_bytes(s):
    parts = s.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError("bad MAC %r" % s)
    return bytes(int(p, 16) for p in parts)


def dst_match(dst):
    """(value, mask) matching every version-1 tag to rank dst: the
    fallback route for tags no announced pattern covers (p2p, nbc)."""
    value = bytes([(VERSION << 6) | 2]) + dst.to_bytes(5, "big")
    mask = bytes([0xC3, 0, 0, 0, 0x3F, 0xFF])
    return mac_str(value), mac_str(mask)
