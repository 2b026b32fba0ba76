#!/bin/bash
# One-way latency per eager size (64 B .. 32 KiB, the rendezvous
# threshold) for single-rail, split without offload, split with offload
# (model-driven and forced), on two TCP loopback rails, in one run.
# Both ranks are pinned to CPU 0 (taskset) and wait with test+yield, so
# CPU 1 is left idle for an offload worker (this machine has 2 cores).
# Usage: bench/offload.sh BUILD_DIR [iters]
set -eu
b=${1:?usage: offload.sh BUILD_DIR [iters]}
iters=${2:-2000}
run() {
	echo "## $1"
	shift
	env "$@" taskset -c 0 "$b/launcher/mrail-run" -n 2 \
		"$b/bench/mrail-offload-lat" 64 32768 "$iters"
}
run "single rail" MRAIL_TCP_LOOPBACK_RAILS=1 MRAIL_OFFLOAD_CORES=none
run "split, no offload" MRAIL_TCP_LOOPBACK_RAILS=2 MRAIL_STRATEGY=split \
	MRAIL_OFFLOAD_CORES=none
run "split + offload (equation (1))" MRAIL_TCP_LOOPBACK_RAILS=2 \
	MRAIL_STRATEGY=split MRAIL_OFFLOAD_CORES=0,1
run "split + offload forced (every size)" MRAIL_TCP_LOOPBACK_RAILS=2 \
	MRAIL_STRATEGY=split MRAIL_OFFLOAD_CORES=0,1 MRAIL_OFFLOAD_FORCE=1
