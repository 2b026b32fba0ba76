#!/bin/bash
# One-way latency per eager size (64 B .. 32 KiB, the rendezvous
# threshold) for single-rail, split without offload, split with offload
# (model + measured guard, and forced), on two TCP loopback rails, in one
# run, then a table of each row against single rail.
# Both ranks are pinned to CPU 0 (taskset) and wait with test+yield, so
# CPU 1 is left idle for an offload worker (this machine has 2 cores).
# Usage: bench/offload.sh BUILD_DIR [iters]
set -eu
b=${1:?usage: offload.sh BUILD_DIR [iters]}
iters=${2:-2000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # file title env...
	local f=$out/$1
	echo "## $2"
	shift 2
	env "$@" taskset -c 0 "$b/launcher/mrail-run" -n 2 \
		"$b/bench/mrail-offload-lat" 64 32768 "$iters" | tee "$f"
}
run single "single rail" MRAIL_TCP_LOOPBACK_RAILS=1 MRAIL_OFFLOAD_CORES=none
run split "split, no offload" MRAIL_TCP_LOOPBACK_RAILS=2 MRAIL_STRATEGY=split \
	MRAIL_OFFLOAD_CORES=none
run offload "split + offload (equation (1) + measured guard)" \
	MRAIL_TCP_LOOPBACK_RAILS=2 MRAIL_STRATEGY=split MRAIL_OFFLOAD_CORES=0,1
run forced "split + offload forced (every size)" MRAIL_TCP_LOOPBACK_RAILS=2 \
	MRAIL_STRATEGY=split MRAIL_OFFLOAD_CORES=0,1 MRAIL_OFFLOAD_FORCE=1
echo "## median one-way time / single rail (the goal: offload <= 1.03)"
awk '$1 ~ /^[0-9]+$/ { t[FILENAME, $1] = $2; if (FILENAME ~ /single$/) order[n++] = $1 }
END {
	printf "%10s %8s %8s %8s\n", "size", "split", "offload", "forced"
	for (i = 0; i < n; i++) {
		z = order[i]; base = t[d "/single", z]
		if (base <= 0) continue
		printf "%10s %8.3f %8.3f %8.3f\n", z, t[d "/split", z] / base,
		       t[d "/offload", z] / base, t[d "/forced", z] / base
	}
}' d="$out" "$out/single" "$out/split" "$out/offload" "$out/forced"
