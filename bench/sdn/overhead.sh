#!/bin/bash
# bench/sdn/overhead.sh: what the bpf tagger costs (docs/sdn.md "Overhead").
# Two netlab hosts on one unshaped rail; sdn-pingpong (8 B latency, 4 MiB
# ping-pong bandwidth) alternately with SDN off (no programs attached,
# MRAIL_SDN=none) and with the tagger attached on both hosts and
# MRAIL_SDN=bpf, ROUNDS times each, interleaved so drift hits both alike;
# prints every run, the medians and the ratios.
# usage (root, from the build dir): bench/sdn/overhead.sh [ROUNDS] [ITERS]
set -u
B=$(cd "$(dirname "$0")/../.." && pwd)          # build dir
ROUNDS=${1:-5} ITERS=${2:-2000}
[ "$(id -u)" = 0 ] || { echo "needs root (netlab, tc BPF)"; exit 77; }
TAGGER=$B/mpi-binding/sdn/tagger/mrail-sdn-tagger
[ -x "$TAGGER" ] || { echo "mrail-sdn-tagger not built (clang, bpftool, libbpf)"; exit 77; }
P=sdno$$
NL() { bash "$B/bench/netlab/netlab" --prefix "$P" "$@"; }
T=$(mktemp -d)
trap 'NL down >/dev/null 2>&1; umount "$T/bpffs" 2>/dev/null; rm -rf "$T"' EXIT
mkdir "$T/bpffs" && mount -t bpf bpf "$T/bpffs" || exit 1
NL up --hosts 2 --rails none --base auto >"$T/netlab.log" 2>&1 || { cat "$T/netlab.log"; exit 1; }
read -r _ _ mg0 _ < <(NL hosts | awk '$1 == "h0"')
bind=${mg0%.*}.254

run() { # MODE
	timeout 120 "$B/launcher/mrail-run" -n 2 --hosts "$P-h0,$P-h1" \
		--wrap "ip netns exec {host} env MRAIL_SDN_BPF_DIR=$T/bpffs/{host}" \
		--bind "$bind" -x MRAIL_RAILS=r0 -x MRAIL_SDN="$1" \
		"$B/bench/sdn/sdn-pingpong" "$ITERS"
}
tagger() { # load|unload
	local h
	for h in h0 h1; do NL exec $h "$TAGGER" "$1" --dir "$T/bpffs/$P-$h" r0 >/dev/null || exit 1; done
}
echo "mode,round,lat_us,bw_MBps,retags"
for ((r = 1; r <= ROUNDS; r++)); do
	echo "off,$r,$(run none | awk '{ print $2 "," $4 "," $6 }')"
	tagger load
	echo "bpf,$r,$(run bpf | awk '{ print $2 "," $4 "," $6 }')"
	tagger unload
done | tee "$T/csv"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for m in off bpf; do
	l=$(awk -F, -v m=$m '$1 == m { print $3 }' "$T/csv" | median)
	b=$(awk -F, -v m=$m '$1 == m { print $4 }' "$T/csv" | median)
	eval "lat_$m=$l bw_$m=$b"
	echo "median $m: latency $l us, bandwidth $b MB/s"
done
ratio() { # WHAT LAT_OFF LAT_BPF BW_OFF BW_BPF
	awk -v w="$1" -v lo="$2" -v lb="$3" -v bo="$4" -v bb="$5" 'BEGIN {
	printf "tagger (%s): latency %+.3f us (%.3fx), bandwidth %+.2f%% (targets: <= +0.5 us, >= -1%%)\n",
		w, lb - lo, lb / lo, (bb / bo - 1) * 100 }'
}
ratio medians "$lat_off" "$lat_bpf" "$bw_off" "$bw_bpf"
# Best runs: what the machine gives when nothing else gets in the way.
best() { awk -F, -v m=$1 -v c=$2 -v hi=$3 '$1 == m && (n++ == 0 || (hi ? $c > v : $c < v)) { v = $c } END { print v }' "$T/csv"; }
echo "best off: latency $(best off 3 0) us, bandwidth $(best off 4 1) MB/s; best bpf: latency $(best bpf 3 0) us, bandwidth $(best bpf 4 1) MB/s"
ratio "best runs" "$(best off 3 0)" "$(best bpf 3 0)" "$(best off 4 1)" "$(best bpf 4 1)"
echo "(noisy shared machine: compare medians over rounds, not single runs)"
