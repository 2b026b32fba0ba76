#!/bin/bash
# bench/mpi/run.sh: mpi-bench on netlab's two heterogeneous rails under
#   ob1-both : pml ob1, btl tcp over both rails
#   ob1-best : pml ob1, btl tcp over the faster rail alone
#   mrail    : pml cm, mtl mrail over both rails (split strategy)
# usage (root, from the build dir): bench/mpi/run.sh [OUTDIR] [RATES]
# Writes OUTDIR/mpi-bench.csv and, with python3-matplotlib, mpi-bench.png.
set -u
B=$(cd "$(dirname "$0")/../.." && pwd)          # build dir
OUT=${1:-$B/bench/mpi/out}
RATES=${2:-1000mbit,400mbit}
[ "$(id -u)" = 0 ] || { echo "needs root (netlab)"; exit 77; }
mkdir -p "$OUT"
NL=$B/bench/netlab/netlab
P=mpb$$
export NETLAB_PREFIX=$P
AGENT=@AGENT@
SYS=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path=$B/mpi-binding/ompi:$SYS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d); export TMPDIR=$T
trap '"$NL" down >/dev/null 2>&1; rm -rf "$T"' EXIT
"$NL" up --hosts 2 --rails "$RATES" --base auto >"$OUT/netlab.log" 2>&1 ||
	{ cat "$OUT/netlab.log"; exit 1; }
# The management subnet (daemons' out-of-band traffic): "mgmt" in the
# hosts, "$P-mgmt" in the root namespace, so name it by address.
MGMT=$("$NL" addr h0 mgmt | sed -E 's/\.[0-9]+(\/[0-9]+)?$/.0\/24/')

run() { # LABEL NPERHOST TEST MAX MCA...
	local label=$1 per=$2 test=$3 max=$4
	shift 4
	timeout -k 5 600 mpirun --oversubscribe --bind-to none \
		--mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include "$MGMT" \
		--host "$P-h0:$per,$P-h1:$per" -n $((2 * per)) --map-by node "$@" \
		"$B/bench/mpi/mpi-bench" "$test" "$max" "$label" 2>>"$OUT/err.log" |
		grep -v '^label' || echo "run $label $test failed (see $OUT/err.log)" >&2
}
CSV=$OUT/mpi-bench.csv
echo "label,test,np,bytes,usec,MBps" >"$CSV"
# No vader: it crashes in netlab namespaces (Open MPI 4.1.4); tcp for all.
OB1=(--mca pml ob1 --mca btl self,tcp)
for cfg in ob1-both ob1-best mrail; do
	case $cfg in
	ob1-both) M=("${OB1[@]}" --mca btl_tcp_if_include r0,r1) ;;
	ob1-best) M=("${OB1[@]}" --mca btl_tcp_if_include r0) ;;
	mrail) M=(--mca pml cm --mca mtl mrail --mca mtl_mrail_rails r0,r1) ;;
	esac
	run $cfg 1 pingpong $((8 << 20)) "${M[@]}" >>"$CSV"
	run $cfg 1 stream $((8 << 20)) "${M[@]}" >>"$CSV"
	run $cfg 1 allreduce $((8 << 20)) "${M[@]}" >>"$CSV"
	run $cfg 2 allreduce $((8 << 20)) "${M[@]}" >>"$CSV"
done
"$NL" rates --runs 1 >"$OUT/rates.txt" 2>&1
cat "$CSV"
/usr/bin/python3 "$(dirname "$0")/plot.py" "$CSV" "$OUT/mpi-bench.png" ||
	echo "no plot (apt-get install python3-matplotlib)"
