#!/bin/bash
# bench/mpi/netlab-anchors.sh: libmrail against the strongest anchors on a
# 2-host netlab (rails r0 1000 + r1 400 Mbit/s), one MPI process per host,
# in one run (docs/anchors.md):
#   mrail     pml cm, mtl mrail over r0,r1 (default settings; in-band rail
#             models only, no stored profiles)
#   ob1-hand  pml ob1, btl tcp over r0,r1 with the rails' rates set by hand
#             (btl_tcp_bandwidth_r0 1000, btl_tcp_bandwidth_r1 400: ob1
#             splits large messages by them)
#   ucx-r0    pml ucx over the fast rail alone (UCX_NET_DEVICES=r0,
#             UCX_TLS=tcp,self): UCX's best on this bed (over both rails it
#             splits 50/50 and pairs lanes at random, issue 24)
# Tests (bench/mpi/mpi-bench): bw (osu_bw style, window 64) and bibw
# (osu_bibw style) every power of two 16 KiB-16 MiB, 8 B ping-pong latency;
# ROUNDS interleaved rounds (bw, bibw and latency of each configuration in
# turn), medians over the rounds. Prints the table with mrail/ob1-hand and
# mrail/ucx-r0 and the issue-24 targets, and which rail carried what.
# usage (root, from the build dir; wrap it in flock /tmp/mrail-netlab.lock):
#   build/bench/mpi/netlab-anchors.sh [--rounds N] [--max BYTES]
#       [--prefix NAME] [--rates R0,R1] [OUTDIR]
# (--rates changes the lab only: ob1-hand's weights stay 1000 and 400
# unless OB1_BW0/OB1_BW1 say otherwise.)
set -u -o pipefail
B=$(cd "$(dirname "$0")/../.." && pwd)          # build dir
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=3 MAX=$((16 << 20)) P=anc$$ RATES=1000mbit,400mbit
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--max) MAX=$2; shift 2 ;;
	--prefix) P=$2; shift 2 ;;
	--rates) RATES=$2; shift 2 ;;
	-h | --help) sed -n '2,24p' "$0"; exit 0 ;;
	-*) echo "netlab-anchors.sh: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
OUT=${1:-$B/bench/mpi/anchors}
[ "$(id -u)" = 0 ] || { echo "needs root (netlab)"; exit 77; }
command -v mpirun >/dev/null || { echo "no mpirun (Open MPI)"; exit 77; }
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
AGENT=@AGENT@
SYS=@SYS_MCA_DIR@
. "$HERE/netlab_mpi.sh"
nlmpi_up "$RATES" "$OUT/netlab.log" || exit 1
ERR=$OUT/err.log CSV=$OUT/anchors.csv
: >"$ERR"
echo "label,test,np,bytes,usec,MBps" >"$CSV"
{
	echo "# netlab-anchors.sh $(date -u "+%Y-%m-%d %H:%M UTC") $(uname -r), $(nproc) CPUs, rails $RATES, $ROUNDS rounds, build $B"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/table.txt"

cfg() { # NAME -> MCA options in M
	case $1 in
	mrail) M=(--mca pml cm --mca mtl mrail --mca mtl_mrail_rails r0,r1
		  -x MRAIL_PROFILE_DIR="$NLMPI_TMP/no-profiles") ;;
	ob1-hand) M=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include r0,r1
		     --mca btl_tcp_bandwidth_r0 "${OB1_BW0:-1000}"
		     --mca btl_tcp_bandwidth_r1 "${OB1_BW1:-400}") ;;
	# Open MPI's UCX PML takes only Mellanox devices unless told "any".
	ucx-r0) M=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
		   --mca osc ^ucx -x UCX_NET_DEVICES=r0 -x UCX_TLS=tcp,self) ;;
	esac
}
mkdir -p "$NLMPI_TMP/no-profiles"
CFGS="mrail ob1-hand ucx-r0"
: >"$OUT/rails.txt"
for ((r = 1; r <= ROUNDS; r++)); do
	for c in $CFGS; do
		cfg $c
		for t in bw bibw; do
			b0=$(nlmpi_bytes h0 r0) b1=$(nlmpi_bytes h0 r1)
			echo "== round $r $c $t" >>"$ERR"
			nlmpi_run 1 "$ERR" "${M[@]}" "$B/bench/mpi/mpi-bench" $t "$MAX" $c |
				grep -v '^label' >>"$CSV" ||
				echo "round $r: $c $t failed (see $ERR)" >&2
			echo "round $r $c $t: h0 moved $(( $(nlmpi_bytes h0 r0) - b0 )) B on r0, $(( $(nlmpi_bytes h0 r1) - b1 )) B on r1" >>"$OUT/rails.txt"
		done
		# 8 B latency twice a round: single runs of it swing most.
		for k in 1 2; do
			echo "== round $r $c pingpong $k" >>"$ERR"
			nlmpi_run 1 "$ERR" "${M[@]}" "$B/bench/mpi/mpi-bench" pingpong 8 $c |
				grep -v '^label' >>"$CSV" ||
				echo "round $r: $c pingpong failed (see $ERR)" >&2
		done
	done
done
for h in h0 h1; do for r in r0 r1; do
	echo "$h $r: $("$NL" exec $h tc -s qdisc show dev $r | grep -o 'dropped [0-9]*')"
done; done >"$OUT/drops.txt"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/table.txt"
/usr/bin/python3 "$HERE/anchors_table.py" "$CSV" "$OUT/rails.txt" | tee -a "$OUT/table.txt"
echo "results: $OUT/table.txt $CSV $OUT/rails.txt $OUT/drops.txt $ERR"
