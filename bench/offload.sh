#!/bin/bash
# One-way latency per eager size (64 B .. 32 KiB, the rendezvous
# threshold) for single-rail, split without offload, split with offload
# (model + measured guard, and forced), on two TCP loopback rails, in one
# run, interleaved over ROUNDS rounds (default 5), then a table of each
# row against single rail (medians over rounds).
# Both ranks are pinned to CPU 0 (taskset) and wait with test+yield, so
# CPU 1 is left idle for an offload worker (this machine has 2 cores).
# With NETLAB=1 (root): the same rows between two netlab hosts over rails
# of 1000 and 400 Mbit/s (one rank per host), instead of loopback rails.
# Usage: [NETLAB=1] [ROUNDS=5] bench/offload.sh BUILD_DIR [iters]
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
	local f=$out/$1.$round
	echo "## $2 (round $round)"
	shift 2
	env "$@" taskset -c 0 "${launch[@]}" \
		"$b/bench/mrail-offload-lat" 64 32768 "$iters" | tee "$f"
}
# ROUNDS rounds, the four rows interleaved in each: single runs of one
# row swing by 2x on a VM, so the table compares medians over rounds.
for ((round = 1; round <= ${ROUNDS:-5}; round++)); do
	run single "single rail" "${one[@]}" MRAIL_OFFLOAD_CORES=none
	run split "split, no offload" "${two[@]}" MRAIL_STRATEGY=split \
		MRAIL_OFFLOAD_CORES=none
	run offload "split + offload (split's eager_offload + measured guard)" \
		"${two[@]}" MRAIL_STRATEGY=split MRAIL_OFFLOAD_CORES=0,1
	run forced "split + offload forced (every size)" "${two[@]}" \
		MRAIL_STRATEGY=split MRAIL_OFFLOAD_CORES=0,1 MRAIL_OFFLOAD_FORCE=1
done
echo "## one-way time / single rail: per size, median over ${ROUNDS:-5} rounds of each row's median (the goal: offload <= 1.03)"
awk '$1 ~ /^[0-9]+$/ {
	split(FILENAME, p, "/"); f = p[length(p)]; sub(/\.[0-9]+$/, "", f)
	v[f, $1] = v[f, $1] " " $2
	if (f == "single" && !seen[$1]++) order[n++] = $1
}
function median(s,   a, k, i, j, t) {
	k = split(s, a, " ")
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
		if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return a[int((k + 1) / 2)]
}
END {
	printf "%10s %10s %8s %8s %8s\n", "size", "single_us", "split", "offload", "forced"
	for (i = 0; i < n; i++) {
		z = order[i]; base = median(v["single", z])
		if (base <= 0) continue
		printf "%10s %10.2f %8.3f %8.3f %8.3f\n", z, base, median(v["split", z]) / base,
		       median(v["offload", z]) / base, median(v["forced", z]) / base
	}
}' "$out"/single.* "$out"/split.* "$out"/offload.* "$out"/forced.*
grep -h "^# offload:" "$out"/offload.* | tail -1 | sed 's/^# offload:/# last offload row:/'
