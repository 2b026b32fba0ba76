#!/usr/bin/env python3
"""Median over rounds of mpi-msgrate's CSV, mrail next to ob1 (msgrate.sh)."""
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

rounds = max((len(v) for v in vals.values()), default=0)
print(f"medians over {rounds} interleaved rounds")
print("| bytes | ob1 msgs/s | mrail msgs/s | ob1 MB/s | mrail MB/s | mrail/ob1 |")
print("|---|---|---|---|---|---|")
worst = None
for n in sorted({k[1] for k in vals if k[0] == 'rate'}):
    o, m = med('rate', n, 'ob1'), med('rate', n, 'mrail')
    ob, mb = med('bw', n, 'ob1'), med('bw', n, 'mrail')
    ratio = m / o if o else float('nan')
    worst = ratio if worst is None or ratio < worst else worst
    print(f"| {n} | {o:.0f} | {m:.0f} | {ob:.2f} | {mb:.2f} | {ratio:.3f} |")
lo, lm = med('latency', 8, 'ob1'), med('latency', 8, 'mrail')
print(f"\n8 B one-way latency: ob1 {lo:.2f} us, mrail {lm:.2f} us "
      f"(mrail/ob1 {lm / lo:.3f})")
if worst is not None:
    print(f"lowest rate ratio mrail/ob1: {worst:.3f} "
          f"(target >= 1.0: {'met' if worst >= 1.0 else 'NOT met'}); "
          f"latency target <= ob1: {'met' if lm <= lo else 'NOT met'}")
