#!/usr/bin/env python3
"""Median over rounds of mpi-msgrate's CSV, each mrail stack next to ob1
(msgrate.sh): msgs/s and the ratio to ob1 per size, MB/s, 8 B latency,
and whether the issue-25 targets hold for `mrail` (tcp loopback)."""
import statistics
import sys
from collections import defaultdict

vals = defaultdict(list)
for line in open(sys.argv[1]):
    f = line.strip().split(',')
    if len(f) != 5:
        continue
    vals[(f[1], int(f[2]), f[0])].append(float(f[3]))

def med(test, n, stack):
    v = vals.get((test, n, stack))
    return statistics.median(v) if v else float('nan')

order = ['mrail', 'mrail-shm', 'mrail-base']
stacks = [s for s in order if any(k[2] == s for k in vals)]
rounds = max((len(v) for v in vals.values()), default=0)
print(f"medians over {rounds} interleaved rounds; ratios to ob1 (btl tcp)")
head = "| bytes | ob1 msgs/s |" + "".join(
    f" {s} msgs/s | {s}/ob1 |" for s in stacks) + " ob1 MB/s |" + "".join(
    f" {s} MB/s |" for s in stacks)
print(head)
print("|" + "---|" * (head.count("|") - 1))
worst = {}
for n in sorted({k[1] for k in vals if k[0] == 'rate'}):
    o = med('rate', n, 'ob1')
    row = f"| {n} | {o:.0f} |"
    for s in stacks:
        m = med('rate', n, s)
        ratio = m / o if o else float('nan')
        if s not in worst or ratio < worst[s]:
            worst[s] = ratio
        row += f" {m:.0f} | {ratio:.3f} |"
    row += f" {med('bw', n, 'ob1'):.2f} |"
    row += "".join(f" {med('bw', n, s):.2f} |" for s in stacks)
    print(row)
lo = med('latency', 8, 'ob1')
print(f"\n8 B one-way latency: ob1 {lo:.2f} us" + "".join(
    f", {s} {med('latency', 8, s):.2f} us ({med('latency', 8, s) / lo:.3f})"
    for s in stacks))
if 'mrail' in worst:
    lm = med('latency', 8, 'mrail')
    print(f"lowest rate ratio mrail/ob1: {worst['mrail']:.3f} "
          f"(target >= 1.0: {'met' if worst['mrail'] >= 1.0 else 'NOT met'}); "
          f"latency target mrail <= ob1: {'met' if lm <= lo else 'NOT met'}")
