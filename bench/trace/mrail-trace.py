#!/usr/bin/env python3
"""mrail-trace: per-rail timeline of a chunk trace (MRAIL_TRACE, docs/trace.md).

    bench/trace/mrail-trace.py PREFIX [--rounds N] [--len BYTES] [--engine K]

Reads every PREFIX.<pid>.<k> file (one per engine; engines created in the
same order in every rank share k), and for each engine k and each round
of rendezvous messages planned together (a message joins a round if it was
planned before the round's last byte arrived) prints, per message and
rail: the plan (bytes, predicted start and end in ms from the round's
first plan) and what happened (sender: first chunk queued by pacing,
handed to the driver, completed by it; receiver: last byte arrived).
Then per engine and message size: medians over rounds of the predicted
and real completion of the message planned first and of the round, and
how often the message planned first completed first.
"""
import argparse
import glob
import re
import statistics
import sys
from collections import defaultdict

KV = re.compile(r"(\w+)=(\S+)")


def parse(path):
    head, events = {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("# mrail chunk trace"):
                head = dict(KV.findall(line))
                if not line.split()[4] == "v1":
                    sys.exit(f"{path}: trace format {line.split()[4]}, "
                             "this tool reads v1")
                continue
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            try:
                ev = {"t": float(parts[0]) / 1e3, "ev": parts[1]}  # ms
                for k, v in KV.findall(line):
                    ev[k] = float(v) / 1e3 if k in ("pstart", "pend", "busy") \
                        else float(v) if k == "scale" else int(v)
            except (ValueError, IndexError):
                sys.exit(f"{path}: malformed line: {line.strip()}")
            events.append(ev)
    if not head:
        sys.exit(f"{path}: not an mrail chunk trace (no header)")
    return head, events


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds to print in full per engine and size")
    ap.add_argument("--len", type=int, default=0,
                    help="only messages of this many bytes")
    ap.add_argument("--engine", type=int, default=-1,
                    help="only engine number K")
    ap.add_argument("--min-len", type=int, default=4096,
                    help="ignore smaller messages (the benchmarks' "
                    "handshakes)")
    a = ap.parse_args()
    files = sorted(glob.glob(a.prefix + ".*"))
    if not files:
        sys.exit(f"mrail-trace: no files {a.prefix}.*")
    engines = defaultdict(list)  # k -> [(head, events)]
    for p in files:
        k = int(p.rsplit(".", 1)[1])
        if a.engine >= 0 and k != a.engine:
            continue
        engines[k].append(parse(p))
    for k in sorted(engines):
        ranks = [int(h["rank"]) for h, _ in engines[k]]
        if len(set(ranks)) != len(ranks):
            sys.exit(f"mrail-trace: several runs under {a.prefix} (rank "
                     "repeated for one engine number): one prefix per run")
        report(k, engines[k], a)


def report(k, ranks, a):
    msgs = {}  # (receiver, id) -> message
    arrivals = defaultdict(list)  # (receiver, rail) -> arrive events
    sender = defaultdict(list)  # (receiver, id) -> sender events
    name = ranks[0][0].get("strategy", "?") + \
        ("" if ranks[0][0].get("pace", "1") == "1" else "+nopace")
    for head, events in ranks:
        rank = int(head["rank"])
        for ev in events:
            if ev["ev"] == "plan":
                msgs[(rank, ev["id"])] = {
                    "recv": rank, "from": ev["peer"], "id": ev["id"],
                    "len": ev["len"], "plan": ev["t"], "chunks": []}
            elif ev["ev"] == "chunk":
                m = msgs.get((rank, ev["id"]))
                if m:
                    m["chunks"].append(ev)
            elif ev["ev"] == "arrive":
                arrivals[(rank, ev["rail"])].append(ev)
            elif ev["ev"] in ("queue", "post", "sent"):
                sender[(ev["peer"], ev["id"])].append(ev)
    # Chunks arrive on a rail in the order they were requested.
    per_rail = defaultdict(list)
    for m in sorted(msgs.values(), key=lambda m: m["plan"]):
        for c in m["chunks"]:
            per_rail[(m["recv"], c["rail"])].append(c)
    for key, chunks in per_rail.items():
        for c, ev in zip(chunks, arrivals.get(key, [])):
            c["arrive"] = ev["t"]
    for m in msgs.values():
        m["end"] = max((c.get("arrive", 0) for c in m["chunks"]), default=0)
        m["pend"] = max((c["pend"] for c in m["chunks"]), default=0)
        # The sender's events are keyed by receiver rank and its id
        # (handles repeat: take those inside this message's life).
        m["tx"] = [e for e in sender.get((m["recv"], m["id"]), [])
                   if m["plan"] - 1 <= e["t"] <= m["end"] + 1e-3]
    ordered = sorted((m for m in msgs.values()
                      if m["end"] and m["len"] >= a.min_len and
                      (not a.len or m["len"] == a.len)),
                     key=lambda m: m["plan"])
    rounds, cur = [], []
    for m in ordered:
        if cur and m["plan"] > max(x["end"] for x in cur):
            rounds.append(cur)
            cur = []
        cur.append(m)
    if cur:
        rounds.append(cur)
    rounds = [r for r in rounds if len(r) >= 2]
    by_size = defaultdict(list)
    for r in rounds:
        by_size[tuple(sorted(m["len"] for m in r))].append(r)
    print(f"== engine {k}: {name}, {len(rounds)} rounds of 2+ messages")
    for size, rs in sorted(by_size.items()):
        for r in rs[:a.rounds]:
            print_round(r)
        summary(size, rs)


def print_round(r):
    t0 = min(m["plan"] for m in r)
    rel = lambda t: f"{t - t0:8.3f}" if t else "       -"
    print(f"  round at {t0:.3f} ms (ms below from the first plan)")
    print("    to  rail     bytes   p.start    p.end   queued   posted"
          "     sent  arrived")
    for m in r:
        for c in sorted(m["chunks"], key=lambda c: c["rail"]):
            tx = [e for e in m["tx"] if e["rail"] == c["rail"]]
            first = lambda kind: min((e["t"] for e in tx if e["ev"] == kind),
                                     default=0)
            last_sent = max((e["t"] for e in tx if e["ev"] == "sent"),
                            default=0)
            print(f"    {m['recv']:2d}  {c['rail']:4d} {c['len']:9d} "
                  f"{rel(c['pstart'])} {rel(c['pend'])} {rel(first('queue'))}"
                  f" {rel(first('post'))} {rel(last_sent)} "
                  f"{rel(c.get('arrive', 0))}")
        print(f"    {m['recv']:2d}  all  {m['len']:9d}          "
              f"{rel(m['pend'])}                            {rel(m['end'])}")


def summary(size, rs):
    first_pred, first_real, last_pred, last_real, in_order = [], [], [], [], 0
    for r in rs:
        t0 = min(m["plan"] for m in r)
        f = min(r, key=lambda m: m["plan"])
        first_pred.append(f["pend"] - t0)
        first_real.append(f["end"] - t0)
        last_pred.append(max(m["pend"] for m in r) - t0)
        last_real.append(max(m["end"] for m in r) - t0)
        in_order += f["end"] <= min(m["end"] for m in r)
    med = statistics.median
    print(f"  sizes {'+'.join(str(s) for s in size)}: {len(rs)} rounds; "
          f"medians, ms from the first plan: planned-first message "
          f"predicted {med(first_pred):.3f} real {med(first_real):.3f}; "
          f"round predicted {med(last_pred):.3f} real {med(last_real):.3f}; "
          f"planned-first completed first in {in_order}/{len(rs)}")


if __name__ == "__main__":
    main()
