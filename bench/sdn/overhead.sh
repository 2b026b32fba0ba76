#!/bin/bash
# bench/sdn/overhead.sh: what the bpf tagger costs (docs/sdn.md "Overhead").
# Two netlab hosts on one unshaped rail; sdn-pingpong (8 B latency, 4 MiB
# ping-pong bandwidth) alternately with SDN off (no programs attached,
# MRAIL_SDN=none), with the tagger attached on both hosts and
# MRAIL_SDN=bpf, and with the tagger plus the reference controller
# (mrail-sdnd --dry-run: flows printed, not installed) to which both ranks
# say HELLO and whose sync wait for the pair's pattern precedes the
# measurement (not counted), ROUNDS times each, interleaved so drift hits
# all alike; prints every run, the medians and the ratios.
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
CTL_PID=
trap '[ -n "$CTL_PID" ] && kill $CTL_PID 2>/dev/null; NL down >/dev/null 2>&1; umount "$T/bpffs" 2>/dev/null; rm -rf "$T"' EXIT
mkdir "$T/bpffs" && mount -t bpf bpf "$T/bpffs" || exit 1
NL up --hosts 2 --rails none --base auto >"$T/netlab.log" 2>&1 || { cat "$T/netlab.log"; exit 1; }
read -r _ _ mg0 _ < <(NL hosts | awk '$1 == "h0"')
bind=${mg0%.*}.254

# The controller: every interface of both hosts is a host port of a
# one-leaf topology (it refuses HELLOs from MACs it does not know).
{
	echo "version 1"
	echo "switch l1 leaf unix:$T/none.mgmt"
	port=1
	for h in h0 h1; do
		for mac in $(NL exec $h sh -c 'cat /sys/class/net/*/address'); do
			[ "$mac" = 00:00:00:00:00:00 ] && continue
			echo "host $h-$port $mac l1:$port"
			port=$((port + 1))
		done
	done
} >"$T/topo"
python3 "@SDND@" --dry-run \
	--listen "$bind:0" --ready-file "$T/port" --topology "$T/topo" \
	>"$T/flows" 2>"$T/ctl.err" &
CTL_PID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || { echo "controller did not start:"; cat "$T/ctl.err"; exit 1; }
CTL=$bind:$(cat "$T/port")

run() { # MODE [CONTROLLER [VAR=VALUE...]]
	local mode=$1 ctl=${2:-} x=()
	shift $(($# >= 2 ? 2 : 1))
	for v in "$@" ${SDN_PINGPONG:+SDN_PINGPONG=$SDN_PINGPONG}; do x+=(-x "$v"); done
	timeout 120 "$B/launcher/mrail-run" -n 2 --hosts "$P-h0,$P-h1" \
		--wrap "ip netns exec {host} env MRAIL_SDN_BPF_DIR=$T/bpffs/{host}" \
		--bind "$bind" -x MRAIL_RAILS=r0 -x MRAIL_SDN="$mode" \
		-x MRAIL_SDN_CONTROLLER="$ctl" "${x[@]}" \
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
	echo "bpf+sync,$r,$(run bpf "$CTL" | awk '{ print $2 "," $4 "," $6 }')"
	tagger unload
done | tee "$T/csv"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for m in off bpf bpf+sync; do
	l=$(awk -F, -v m=$m '$1 == m { print $3 }' "$T/csv" | median)
	b=$(awk -F, -v m=$m '$1 == m { print $4 }' "$T/csv" | median)
	eval "lat_${m/+/_}=$l bw_${m/+/_}=$b"
	echo "median $m: latency $l us, bandwidth $b MB/s"
done
grep -q "pattern .* bcast" "$T/ctl.err" ||
	{ echo "the controller saw no pattern:"; tail -5 "$T/ctl.err"; exit 1; }
ratio() { # WHAT LAT_OFF LAT_BPF BW_OFF BW_BPF
	awk -v w="$1" -v lo="$2" -v lb="$3" -v bo="$4" -v bb="$5" 'BEGIN {
	printf "%s: latency %+.3f us (%.3fx), bandwidth %+.2f%% (targets: <= +0.5 us, >= -1%%)\n",
		w, lb - lo, lb / lo, (bb / bo - 1) * 100 }'
}
ratio "tagger, medians" "$lat_off" "$lat_bpf" "$bw_off" "$bw_bpf"
ratio "tagger + controller sync, medians" "$lat_off" "$lat_bpf_sync" "$bw_off" "$bw_bpf_sync"
# Best runs: what the machine gives when nothing else gets in the way.
best() { awk -F, -v m=$1 -v c=$2 -v hi=$3 '$1 == m && (n++ == 0 || (hi ? $c > v : $c < v)) { v = $c } END { print v }' "$T/csv"; }
echo "best off: latency $(best off 3 0) us, bandwidth $(best off 4 1) MB/s; best bpf: latency $(best bpf 3 0) us, bandwidth $(best bpf 4 1) MB/s"
ratio "tagger, best runs" "$(best off 3 0)" "$(best bpf 3 0)" "$(best off 4 1)" "$(best bpf 4 1)"
echo "(noisy shared machine: compare medians over rounds, not single runs)"

# What the tagger itself costs, free of the machine's noise: runs with the
# kernel's BPF run-time statistics on (kernel.bpf_stats_enabled: each
# program's run_time_ns and run_cnt), one with the 8-byte half only and
# one with the 4 MiB half only (SDN_PINGPONG=lat|bw), in-band sampling
# off. Every run of both programs in the window is charged to the
# messages: pure ACKs, connection set-up and teardown included. The
# latency cost is program time per 8-byte one-way message; the bandwidth
# cost is program time per 4 MiB transfer over the transfer's time (an
# upper bound: it counts the sender's and the receiver's runs as if they
# were serial on the critical path). The statistics' own cost (two clock
# reads per run, ~0.1 us here: an empty program measured 104-111 ns) is
# included: the figures are upper bounds.
prog_stats() { # -> "egress_ns egress_runs ingress_ns ingress_runs"
	bpftool -j prog show | python3 -c 'import json, sys
t = {"egress": [0, 0], "ingress": [0, 0]}
for p in json.load(sys.stdin):
	n = p.get("name", "")
	for k in t:  # names are cut to 15 characters without BTF
		if n.startswith("mrail_sdn_" + k[:5]):
			t[k][0] += p.get("run_time_ns", 0)
			t[k][1] += p.get("run_cnt", 0)
e, i = t["egress"], t["ingress"]
print(e[0], e[1], i[0], i[1])'
}
stats_run() { # lat|bw -> "egress_ns egress_runs ingress_ns ingress_runs <sdn-pingpong line>"
	local e0 en0 i0 in0 e1 en1 i1 in1 res
	read -r e0 en0 i0 in0 < <(prog_stats)
	res=$(SDN_PINGPONG=$1 run bpf "" MRAIL_INBAND_SAMPLING=0)
	read -r e1 en1 i1 in1 < <(prog_stats)
	echo $((e1 - e0)) $((en1 - en0)) $((i1 - i0)) $((in1 - in0)) $res
}
old_stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
if command -v bpftool >/dev/null && sysctl -qw kernel.bpf_stats_enabled=1; then
	tagger load
	read -r le len li lin _ _ _ _ _ _ _ lmsgs _ _ < <(stats_run lat)
	read -r be ben bi bin _ _ _ bw _ _ _ _ _ bmsgs < <(stats_run bw)
	tagger unload
	sysctl -qw kernel.bpf_stats_enabled="${old_stats:-0}"
	awk -v le="$le" -v len="$len" -v li="$li" -v lin="$lin" -v lm="$lmsgs" \
	    -v be="$be" -v ben="$ben" -v bi="$bi" -v bin="$bin" -v bm="$bmsgs" -v bw="$bw" 'BEGIN {
	if (!len || !lin || !ben || !bin || !lm || !bm || bw <= 0) { print "in-kernel cost: the programs did not run"; exit 1 }
	printf "in-kernel cost (bpf stats), 8-byte half: %d one-way messages, egress %d runs x %.0f ns, ingress %d runs x %.0f ns\n", lm, len, le / len, lin, li / lin
	printf "in-kernel cost (bpf stats), 4 MiB half: %d transfers, egress %d runs x %.0f ns, ingress %d runs x %.0f ns\n", bm, ben, be / ben, bin, bi / bin
	per_msg = (le + li) / lm / 1000
	per_xfer = (be + bi) / bm / 1000; xfer = 4194304 / bw
	printf "tagger, in-kernel bound: latency +%.3f us per one-way message (target <= 0.5), bandwidth -%.3f%% (%.1f us of a %.0f us transfer at %.0f MB/s; target <= 1%%)\n",
		per_msg, per_xfer / xfer * 100, per_xfer, xfer, bw }'
else
	echo "in-kernel cost: needs bpftool and kernel.bpf_stats_enabled"
fi
