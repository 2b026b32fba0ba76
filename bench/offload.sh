#!/bin/bash
# One-way latency per eager size (64 B .. 32 KiB, the rendezvous
# threshold) for single-rail, split without offload, split with offload
# (model + measured guard, and forced), on two TCP loopback rails, in one
# run, then a table of each row against single rail.
# Both ranks are pinned to CPU 0 (taskset) and wait with test+yield, so
# CPU 1 is left idle for an offload worker (this machine has 2 cores).
# With NETLAB=1 (root): the same rows between two netlab hosts over rails
# of 1000 and 400 Mbit/s (one rank per host), instead of loopback rails.
# Usage: [NETLAB=1] bench/offload.sh BUILD_DIR [iters]
set -eu
b=${1:?usage: [NETLAB=1] offload.sh BUILD_DIR [iters]}
iters=${2:-2000}
out=$(mktemp -d)
lab=$(dirname "$0")/netlab/netlab
prefix=off$$
cleanup() {
	rm -rf "$out"
	[ "${NETLAB:-0}" = 1 ] && "$lab" down --prefix "$prefix" >/dev/null 2>&1
	return 0
}
trap cleanup EXIT
if [ "${NETLAB:-0}" = 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "NETLAB=1 needs root" >&2; exit 77; }
	"$lab" up --prefix "$prefix" --hosts 2 --rails 1000mbit,400mbit \
		--base auto >"$out/lab.log" 2>&1 || { cat "$out/lab.log"; exit 1; }
	mgmt=$(ip -4 -o addr show dev "$prefix-mgmt" | awk '{sub("/.*", "", $4); print $4}')
	one=(MRAIL_RAILS=r0)
	two=(MRAIL_RAILS=r0,r1)
	launch=("$b/launcher/mrail-run" -n 2 --hosts "$prefix-h0,$prefix-h1"
		--wrap 'ip netns exec {host}' --bind "$mgmt")
else
	one=(MRAIL_TCP_LOOPBACK_RAILS=1)
	two=(MRAIL_TCP_LOOPBACK_RAILS=2)
	launch=("$b/launcher/mrail-run" -n 2)
fi
run() { # file title env...
	local f=$out/$1
	echo "## $2"
	shift 2
	env "$@" taskset -c 0 "${launch[@]}" \
		"$b/bench/mrail-offload-lat" 64 32768 "$iters" | tee "$f"
}
run single "single rail" "${one[@]}" MRAIL_OFFLOAD_CORES=none
run split "split, no offload" "${two[@]}" MRAIL_STRATEGY=split \
	MRAIL_OFFLOAD_CORES=none
run offload "split + offload (equation (1) + measured guard)" \
	"${two[@]}" MRAIL_STRATEGY=split MRAIL_OFFLOAD_CORES=0,1
run forced "split + offload forced (every size)" "${two[@]}" \
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
