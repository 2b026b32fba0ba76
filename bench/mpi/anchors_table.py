#!/usr/bin/env python3
"""The anchor table of bench/mpi/netlab-anchors.sh (docs/anchors.md).

usage: anchors_table.py ANCHORS_CSV [RAILS_TXT]
Medians over rounds of mpi-bench's per-run medians: bw and bibw (MB/s) per
size, 8 B ping-pong one-way latency (us); ratios mrail/ob1-hand and
mrail/ucx-r0 and the issue-24 targets. RAILS_TXT (bytes per rail of each
run) gives the share of the fast rail per configuration.
"""
import csv
import re
import statistics
import sys

CFGS = ["mrail", "ob1-hand", "ucx-r0"]


def load(path):
    runs = {}
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) < 6 or row[0] == "label":
                continue
            try:
                key = (row[0], row[1], int(row[3]))
                runs.setdefault(key, []).append((float(row[4]), float(row[5])))
            except ValueError:
                continue
    return runs


def med(runs, cfg, test, size, col):
    v = [r[col] for r in runs.get((cfg, test, size), [])]
    return (statistics.median(v), len(v)) if v else (float("nan"), 0)


def ratio(a, b):
    return a / b if b and b == b and a == a else float("nan")


def bw_target(test, size):
    """The issue-24 floor for mrail/ob1-hand (None: no target)."""
    if test == "bw":
        return 1.25 if size <= 256 << 10 else 1.0
    return 1.8 if size >= 64 << 10 else None


def size_name(n):
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10)


def main():
    runs = load(sys.argv[1])
    missing = False
    for test, title in (("bw", "Unidirectional bandwidth (osu_bw style, window 64), MB/s"),
                        ("bibw", "Bidirectional bandwidth (osu_bibw style, both directions summed), MB/s")):
        sizes = sorted({k[2] for k in runs if k[1] == test})
        print("\n%s, median over rounds (n = runs)\n" % title)
        print("| bytes | mrail | ob1-hand | ucx-r0 | mrail/ob1-hand | mrail/ucx-r0 | target vs ob1-hand | met |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for s in sizes:
            m = {c: med(runs, c, test, s, 1) for c in CFGS}
            ro = ratio(m["mrail"][0], m["ob1-hand"][0])
            ru = ratio(m["mrail"][0], m["ucx-r0"][0])
            t = bw_target(test, s)
            met = "-" if t is None else ("yes" if ro >= t else "NOT met")
            if any(m[c][1] == 0 for c in CFGS):
                missing = True
            print("| %s | %s | %s | %s | %.3f | %.3f | %s | %s |" % (
                size_name(s),
                *("%.1f (%d)" % m[c] for c in CFGS), ro, ru,
                "-" if t is None else ">= %.2f" % t, met))
    print("\n8 B one-way latency (ping-pong), median over runs, us\n")
    print("| mrail | ob1-hand | ucx-r0 | mrail/ob1-hand | mrail/ucx-r0 | target | met |")
    print("|---:|---:|---:|---:|---:|---|---|")
    lat = {c: med(runs, c, "pingpong", 8, 0) for c in CFGS}
    ru = ratio(lat["mrail"][0], lat["ucx-r0"][0])
    print("| %s | %s | %s | %.3f | %.3f | mrail <= ucx-r0 | %s |" % (
        *("%.2f (%d)" % lat[c] for c in CFGS), ratio(lat["mrail"][0], lat["ob1-hand"][0]),
        ru, "yes" if ru <= 1.0 else "NOT met"))
    if len(sys.argv) > 2:
        share = {}
        for line in open(sys.argv[2]):
            g = re.match(r"round \d+ (\S+) (\S+): h0 moved (\d+) B on r0, (\d+) B on r1", line)
            if g:
                a = share.setdefault((g[1], g[2]), [0, 0])
                a[0] += int(g[3])
                a[1] += int(g[4])
        print("\nShare of the bytes on r0 (the fast rail), all rounds of the bw/bibw runs:")
        for (c, t), (b0, b1) in sorted(share.items()):
            print("  %-8s %-4s r0 %.3f (r0 %.0f MB, r1 %.0f MB)" % (
                c, t, ratio(b0, b0 + b1), b0 / 1e6, b1 / 1e6))
    if missing:
        print("\nSome configuration has no figure for a size: a run failed (err.log).")


if __name__ == "__main__":
    main()
