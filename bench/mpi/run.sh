#!/bin/bash
# bench/mpi/run.sh: mpi-bench on netlab's two heterogeneous rails, in one
# run (docs/mpi-ompi.md "Benchmark"):
#   ob1-both   pml ob1, btl tcp over both rails
#   ob1-r0     pml ob1, btl tcp over the faster rail alone (the best rail)
#   ob1-r1     pml ob1, btl tcp over the slower rail alone (stream only:
#              with ob1-r0 it gives the sum of the single rails)
#   mrail      pml cm, mtl mrail over both rails (split), models from the
#              MTL's in-band sampling at MPI_Init (what a user gets)
#   mrail-prof the same with rail profiles from mrail-sample (taken first,
#              as bench/fig8.sh does); --no-sample leaves it out
# usage (root, from the build dir): bench/mpi/run.sh [--no-sample]
#        [--rates 1000mbit,400mbit] [--max BYTES] [--lat-rounds N] [OUTDIR]
# (--lat-rounds: extra interleaved 8 B ping-pong runs per configuration,
# default 5; the latency compared is the median of all of them)
# Writes OUTDIR/mpi-bench.csv, prints the ratio table (ratios.py, also in
# OUTDIR/ratios.txt) and, with python3-matplotlib, OUTDIR/mpi-bench.png.
# Figures on a shared machine are noisy: rerun it idle.
set -u
B=$(cd "$(dirname "$0")/../.." && pwd)          # build dir
SAMPLE=1 RATES=1000mbit,400mbit MAX=$((8 << 20)) LAT_ROUNDS=5
while [ $# -gt 0 ]; do
	case $1 in
	--no-sample) SAMPLE=0; shift ;;
	--rates) RATES=$2; shift 2 ;;
	--max) MAX=$2; shift 2 ;;
	--lat-rounds) LAT_ROUNDS=$2; shift 2 ;;
	-h | --help) sed -n '2,21p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
OUT=${1:-$B/bench/mpi/out}
[ "$(id -u)" = 0 ] || { echo "needs root (netlab)"; exit 77; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
NL=$B/bench/netlab/netlab
P=mpb$$
export NETLAB_PREFIX=$P
AGENT=@AGENT@
SYS=@SYS_MCA_DIR@
export OMPI_MCA_mca_base_component_path=$B/mpi-binding/ompi:$SYS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d); export TMPDIR=$T
trap '"$NL" down >/dev/null 2>&1; rm -rf "$T"' EXIT
# cubic: with bbr (this VM's default) streams overran the rails' tbf queues
# (thousands of drops, RTO stalls; docs/peers.md).
"$NL" up --hosts 2 --rails "$RATES" --base auto --cc cubic >"$OUT/netlab.log" 2>&1 ||
	{ cat "$OUT/netlab.log"; exit 1; }
# The management subnet (daemons' out-of-band traffic): "mgmt" in the
# hosts, "$P-mgmt" in the root namespace, so name it by address.
MGMT_ADDR=$("$NL" addr h0 mgmt)
MGMT=$(echo "$MGMT_ADDR" | sed -E 's/\.[0-9]+(\/[0-9]+)?$/.0\/24/')
: >"$OUT/err.log"
{
	echo "# run.sh $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -r) $(nproc) CPUs, rails $RATES"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/ratios.txt"

# Profiles for mrail-prof (empty dir for mrail: in-band models only).
PROF=$OUT/profiles NOPROF=$T/no-profiles
mkdir -p "$PROF" "$NOPROF"
if [ $SAMPLE = 1 ]; then
	"$B/launcher/mrail-run" -n 2 --hosts "$P-h0,$P-h1" \
		--wrap 'ip netns exec {host}' --bind "${MGMT_ADDR%.*}.254" \
		-x MRAIL_RAILS=r0,r1 -x MRAIL_PROFILE_DIR="$PROF" --timeout 900 \
		"$B/sampler/tool/mrail-sample" --max-size 64M --seconds 0.05 \
		>"$OUT/sample.txt" 2>&1 ||
		{ echo "mrail-sample failed (see $OUT/sample.txt)" >&2; SAMPLE=0; }
fi

run() { # LABEL NPERHOST TEST MCA...
	local label=$1 per=$2 test=$3
	shift 3
	timeout -k 5 900 mpirun --oversubscribe --bind-to none \
		--mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include "$MGMT" \
		--host "$P-h0:$per,$P-h1:$per" -n $((2 * per)) --map-by node \
		"$@" \
		"$B/bench/mpi/mpi-bench" "$test" "$MAX" "$label" 2>>"$OUT/err.log" |
		grep -v '^label' || echo "run $label $test failed (see $OUT/err.log)" >&2
}
CSV=$OUT/mpi-bench.csv
echo "label,test,np,bytes,usec,MBps" >"$CSV"
# No vader: it crashes in netlab namespaces (Open MPI 4.1.4); tcp for all.
OB1=(--mca pml ob1 --mca btl self,tcp)
CM=(--mca pml cm --mca mtl mrail --mca mtl_mrail_rails r0,r1
    --mca mtl_mrail_verbose 1)
CFGS="ob1-both ob1-r0 ob1-r1 mrail"
[ $SAMPLE = 1 ] && CFGS="$CFGS mrail-prof"
for cfg in $CFGS; do
	case $cfg in
	ob1-both) M=("${OB1[@]}" --mca btl_tcp_if_include r0,r1) ;;
	ob1-r0) M=("${OB1[@]}" --mca btl_tcp_if_include r0) ;;
	ob1-r1) M=("${OB1[@]}" --mca btl_tcp_if_include r1) ;;
	mrail) M=("${CM[@]}" -x MRAIL_PROFILE_DIR="$NOPROF") ;;
	mrail-prof) M=("${CM[@]}" -x MRAIL_PROFILE_DIR="$PROF") ;;
	esac
	echo "== $cfg" >>"$OUT/err.log"
	run $cfg 1 stream "${M[@]}" >>"$CSV"
	[ $cfg = ob1-r1 ] && continue
	run $cfg 1 pingpong "${M[@]}" >>"$CSV"
	run $cfg 2 allreduce "${M[@]}" >>"$CSV"
done
# 8 B latency again, LAT_ROUNDS times interleaved (ob1 and mrail alike):
# single runs of it swing by 2x on a VM; ratios.py takes the median of
# every 8 B ping-pong of a label.
for ((r = 1; r <= LAT_ROUNDS; r++)); do
	for cfg in $CFGS; do
		[ $cfg = ob1-r1 ] && continue
		case $cfg in
		ob1-both) M=("${OB1[@]}" --mca btl_tcp_if_include r0,r1) ;;
		ob1-r0) M=("${OB1[@]}" --mca btl_tcp_if_include r0) ;;
		mrail) M=("${CM[@]}" -x MRAIL_PROFILE_DIR="$NOPROF") ;;
		mrail-prof) M=("${CM[@]}" -x MRAIL_PROFILE_DIR="$PROF") ;;
		esac
		MAX=8 run $cfg 1 pingpong "${M[@]}" >>"$CSV"
	done
done
# Drops at the shapers (losses stall TCP; a noisy run shows them here).
for h in h0 h1; do for r in r0 r1; do
	echo "$h $r: $("$NL" exec $h tc -s qdisc show dev $r | grep -o 'dropped [0-9]*')"
done; done >"$OUT/drops.txt"
"$NL" rates --runs 1 >"$OUT/rates.txt" 2>&1
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/ratios.txt"
/usr/bin/python3 "$(dirname "$0")/ratios.py" "$CSV" | tee -a "$OUT/ratios.txt"
# Which rail carried what under the MTL (mtl_mrail_verbose=1 at finalize).
grep -E '^== |mtl mrail: peer .* rail' "$OUT/err.log" >"$OUT/rails.txt"
/usr/bin/python3 "$(dirname "$0")/plot.py" "$CSV" "$OUT/mpi-bench.png" ||
	echo "no plot (apt-get install python3-matplotlib)"
echo "results: $OUT/ratios.txt $OUT/mpi-bench.csv $OUT/rails.txt $OUT/rates.txt $OUT/drops.txt"
