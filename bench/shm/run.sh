#!/bin/bash
# bench/shm/run.sh: processes of one host, in one run (docs/driver-shm.md):
#   mrail-shm  pml cm, mtl mrail with its defaults (same-host peers: shm)
#   mrail-tcp  pml cm, mtl mrail with MRAIL_DRIVERS=tcp (TCP loopback)
#   ob1-vader  pml ob1, btl self,vader (single copy by CMA)
# ping-pong latency and streaming bandwidth on 2 processes, 8 B .. MAX,
# and allreduce and alltoall on 4; ROUNDS rounds, configurations interleaved inside
# each round; the table gives medians over the rounds (each round's
# figure is itself mpi-bench's median over its iterations).
# usage (from the build dir): bench/shm/run.sh [--rounds N] [--max BYTES]
#        [--bind2 core|none] [OUTDIR]
#        writes OUTDIR/shm-bench.csv and OUTDIR/medians.txt
# --bind2: mpirun --bind-to for the 2-process tests (default core). Free
# to migrate, the two ranks share a core whenever other jobs load the
# other one, and every hand-off then waits a scheduler tick (4 ms at
# HZ=250): the figures measure the scheduler (docs/driver-shm.md).
# Four polling processes on two cores measure time slicing as much as the
# transports: the 4-process figures are for comparing, not absolute.
set -u
B=$(cd "$(dirname "$0")/../.." && pwd) # build dir
ROUNDS=5 MAX=$((16 << 20)) BIND2=core
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--max) MAX=$2; shift 2 ;;
	--bind2)
		case $2 in core | none) BIND2=$2 ;;
		*) echo "run.sh: --bind2 takes core or none, not '$2'" >&2
		   exit 2 ;;
		esac
		shift 2 ;;
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
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
# Collectives up to 1 MiB (the issue's sizes: 8 B and 1 MiB).
COLL_MAX=$((MAX < (1 << 20) ? MAX : (1 << 20)))
run() { # ROUND LABEL NP TEST MCA...
	local round=$1 label=$2 np=$3 test=$4 max=$MAX bind=$BIND2
	shift 4
	# Four processes on two cores cannot each have a core.
	[ "$np" = 4 ] && max=$COLL_MAX bind=none
	timeout -k 5 600 mpirun --oversubscribe --bind-to "$bind" -n "$np" "$@" \
		"$BENCH" "$test" "$max" "$label" 2>>"$OUT/err.log" |
		grep -v '^label' | sed "s/^/$round,/" ||
		echo "run $label $test failed (see $OUT/err.log)" >&2
}
for r in $(seq 1 "$ROUNDS"); do
	for cfg in mrail-shm mrail-tcp ob1-vader; do
		case $cfg in
		mrail-shm) M=(--mca pml cm --mca mtl mrail) ;;
		mrail-tcp) M=(--mca pml cm --mca mtl mrail -x MRAIL_DRIVERS=tcp) ;;
		ob1-vader) M=(--mca pml ob1 --mca btl self,vader
			      --mca btl_vader_single_copy_mechanism cma) ;;
		esac
		echo "== round $r $cfg" >>"$OUT/err.log"
		run "$r" $cfg 2 pingpong "${M[@]}" >>"$CSV"
		run "$r" $cfg 2 stream "${M[@]}" >>"$CSV"
		run "$r" $cfg 4 allreduce "${M[@]}" >>"$CSV"
		run "$r" $cfg 4 alltoall "${M[@]}" >>"$CSV"
	done
done
# Medians over rounds, side by side, and the ratio to ob1-vader.
python3 - "$CSV" >"$OUT/medians.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda r: (r['test'], int(r['np']), int(r['bytes']))
cfgs = ['mrail-shm', 'mrail-tcp', 'ob1-vader']
med = {}
for k in sorted({key(r) for r in rows}):
    for c in cfgs:
        v = [float(r['usec']) for r in rows if key(r) == k and r['label'] == c]
        med[k, c] = statistics.median(v) if v else float('nan')
print('test,np,bytes,' + ','.join(c + '_usec' for c in cfgs) +
      ',shm/vader,tcp/vader')
for k in sorted({key(r) for r in rows}):
    v = [med[k, c] for c in cfgs]
    print('%s,%d,%d,%s,%.2f,%.2f' % (k + (','.join('%.2f' % x for x in v),
          v[0] / v[2], v[1] / v[2])))
PY
cat "$OUT/medians.txt"
