#!/usr/bin/env python3
"""plot.py CSV PNG: one panel per test of mpi-bench.csv (bench/mpi/run.sh)."""
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

rows = list(csv.DictReader(open(sys.argv[1])))
panels = [("pingpong", 2, "usec", "ping-pong one-way latency (us)"),
          ("pingpong", 2, "MBps", "ping-pong bandwidth (MB/s)"),
          ("stream", 2, "MBps", "streaming bandwidth, window 16 (MB/s)"),
          ("allreduce", 4, "usec", "allreduce, 4 processes (us)")]
fig, axes = plt.subplots(2, 2, figsize=(12, 8))
for ax, (test, np_, col, title) in zip(axes.flat, panels):
    for label in sorted({r["label"] for r in rows}):
        pts = [(int(r["bytes"]), float(r[col])) for r in rows
               if r["label"] == label and r["test"] == test
               and int(r["np"]) == np_]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes")
    ax.set_title(title)
    ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
