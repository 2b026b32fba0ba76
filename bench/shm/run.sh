#!/bin/bash
# bench/shm/run.sh: processes of one host, in one run (docs/driver-shm.md):
#   mrail-shm  pml cm, mtl mrail with its defaults (same-host peers: shm)
#   mrail-tcp  pml cm, mtl mrail with MRAIL_DRIVERS=tcp (TCP loopback)
#   ob1-vader  pml ob1, btl self,vader (single copy by CMA)
# ping-pong latency and streaming bandwidth (osu_bw style: WINDOW sends in
# flight, default 64, then an ack) on 2 processes, 8 B .. MAX, and
# allreduce and alltoall on 4; ROUNDS rounds, configurations interleaved
# inside each round; the tables give medians over the rounds (each
# round's figure is itself mpi-bench's median over its iterations).
# usage (from the build dir): bench/shm/run.sh [--rounds N] [--max BYTES]
#        [--window N] [--bind2 core|none] [--tests LIST] [--no-plot] [OUTDIR]
# writes OUTDIR/shm-bench.csv (every round), OUTDIR/medians.csv,
# OUTDIR/summary.txt (the issue's figures, ratios to ob1-vader, load
# average) and OUTDIR/shm-bench.png (gnuplot; installed with apt-get if
# missing and we are root, else skipped).
# --bind2: mpirun --bind-to for the 2-process tests (default core). Free
# to migrate, the two ranks share a core whenever other jobs load the
# other one, and every hand-off then waits a scheduler tick (4 ms at
# HZ=250): the figures measure the scheduler (docs/driver-shm.md).
# --tests: a comma-separated subset of pingpong,stream,allreduce,alltoall
# (default all four): the 4-process collectives, which time slicing makes
# the noisiest, need more rounds than the rest.
# Four polling processes on two cores measure time slicing as much as the
# transports: the 4-process figures are for comparing, not absolute.
set -u
B=$(cd "$(dirname "$0")/../.." && pwd) # build dir
ROUNDS=5 MAX=$((16 << 20)) BIND2=core WINDOW=64 PLOT=1
TESTS=pingpong,stream,allreduce,alltoall
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--max) MAX=$2; shift 2 ;;
	--window) WINDOW=$2; shift 2 ;;
	--no-plot) PLOT=0; shift ;;
	--tests)
		for t in ${2//,/ }; do
			case $t in pingpong | stream | allreduce | alltoall) ;;
			*) echo "run.sh: --tests: unknown test '$t' (pingpong," \
				"stream, allreduce, alltoall)" >&2
			   exit 2 ;;
			esac
		done
		TESTS=$2; shift 2 ;;
	--bind2)
		case $2 in core | none) BIND2=$2 ;;
		*) echo "run.sh: --bind2 takes core or none, not '$2'" >&2
		   exit 2 ;;
		esac
		shift 2 ;;
	-h | --help) sed -n '2,25p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
OUT=${1:-$B/bench/shm/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SYS=@SYS_MCA_DIR@
export OMPI_MCA_mca_base_component_path=$B/mpi-binding/ompi:$SYS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
BENCH=$B/bench/mpi/mpi-bench
[ -x "$BENCH" ] || { echo "no $BENCH (Open MPI development files?)"; exit 77; }
CSV=$OUT/shm-bench.csv
: >"$OUT/err.log"
echo "round,label,test,np,bytes,usec,MBps" >"$CSV"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
LOAD_START=$(loadavg) T_START=$(date -u +%FT%TZ)
# Collectives up to 1 MiB (the issue's sizes: 8 B and 1 MiB).
COLL_MAX=$((MAX < (1 << 20) ? MAX : (1 << 20)))
run() { # ROUND LABEL NP TEST MCA...
	local round=$1 label=$2 np=$3 test=$4 max=$MAX bind=$BIND2
	shift 4
	# Four processes on two cores cannot each have a core.
	[ "$np" = 4 ] && max=$COLL_MAX bind=none
	timeout -k 5 600 mpirun --oversubscribe --bind-to "$bind" -n "$np" "$@" \
		"$BENCH" "$test" "$max" "$label" "$WINDOW" 2>>"$OUT/err.log" |
		grep -v '^label' | sed "s/^/$round,/" ||
		echo "run $label $test failed (see $OUT/err.log)" >&2
}
for r in $(seq 1 "$ROUNDS"); do
	echo "round $r of $ROUNDS: load average $(loadavg)" >&2
	for cfg in mrail-shm mrail-tcp ob1-vader; do
		case $cfg in
		mrail-shm) M=(--mca pml cm --mca mtl mrail) ;;
		mrail-tcp) M=(--mca pml cm --mca mtl mrail -x MRAIL_DRIVERS=tcp) ;;
		ob1-vader) M=(--mca pml ob1 --mca btl self,vader
			      --mca btl_vader_single_copy_mechanism cma) ;;
		esac
		echo "== round $r $cfg" >>"$OUT/err.log"
		for t in ${TESTS//,/ }; do
			case $t in pingpong | stream) np=2 ;; *) np=4 ;; esac
			run "$r" $cfg $np "$t" "${M[@]}" >>"$CSV"
		done
	done
done
LOAD_END=$(loadavg)
python3 "$B/bench/shm/summary.py" "$CSV" "$OUT" "$WINDOW" \
	"$T_START, $ROUNDS round(s), 2-process tests bound: $BIND2; load average at start $LOAD_START, at end $LOAD_END" ||
	exit 1
cat "$OUT/summary.txt"
[ "$PLOT" = 1 ] || exit 0
# The figure's four panels need all four tests.
for t in pingpong stream allreduce alltoall; do
	case ,$TESTS, in
	*,$t,*) ;;
	*) echo "no plot: --tests left out $t" >&2; exit 0 ;;
	esac
done
if ! command -v gnuplot >/dev/null && [ "$(id -u)" = 0 ]; then
	echo "installing gnuplot-nox for the plot" >&2
	apt-get install -y -qq gnuplot-nox >/dev/null 2>&1
fi
if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$OUT'; window=$WINDOW" "$B/bench/shm/plot.gp" &&
		echo "plot: $OUT/shm-bench.png"
else
	echo "no gnuplot: no plot (apt-get install gnuplot-nox)" >&2
fi
