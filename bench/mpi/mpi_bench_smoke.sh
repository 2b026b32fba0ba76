#!/bin/bash
# mpi-bench's bw, bibw and latency tests on one host (2 processes, small
# sizes), barrier on 4 and an unknown test refused, then anchors_table.py
# on what they printed: every size has a positive figure, the table has a
# row per size and the latency row.
# usage: mpi_bench_smoke.sh STACK MPIRUN MCA_DIR SYS_MCA_DIR MPI_BENCH TABLE_PY
#   STACK mrail (pml cm + mtl mrail) | ob1 (pml ob1 + btl self,tcp)
# Exits 77 without Open MPI's mpirun.
set -u -o pipefail
STACK=$1 MPIRUN=$2 MCA_DIR=$3 SYS_MCA_DIR=$4 BENCH=$5 TABLE=$6
[ -x "$MPIRUN" ] && "$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI' ||
	{ echo "no Open MPI mpirun: skipped"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-mpi-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
export TMPDIR=$T
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$MCA_DIR:$SYS_MCA_DIR"
case $STACK in
mrail) MCA=(--mca pml cm --mca mtl mrail) ;;
ob1) MCA=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo) ;;
*) echo "unknown stack $STACK"; exit 2 ;;
esac
fail() { echo "FAIL: $*"; cat "$T/csv" "$T/err" 2>/dev/null | tail -30; exit 1; }
echo "label,test,np,bytes,usec,MBps" >"$T/csv"
for t in bw bibw; do
	timeout -k 5 120 "$MPIRUN" --oversubscribe --bind-to none -n 2 "${MCA[@]}" \
		"$BENCH" $t 65536 mrail 2>>"$T/err" | grep -v '^label' >>"$T/csv" ||
		fail "$STACK: mpi-bench $t failed"
done
MPI_BENCH_ITERS=200 timeout -k 5 120 "$MPIRUN" --oversubscribe --bind-to none -n 2 \
	"${MCA[@]}" -x MPI_BENCH_ITERS "$BENCH" latency 8 mrail 2>>"$T/err" |
	grep -v '^label' >>"$T/csv" || fail "$STACK: mpi-bench latency failed"
# barrier on 4 processes: one row, 0 bytes. Kept out of the table's CSV.
timeout -k 5 120 "$MPIRUN" --oversubscribe --bind-to none -n 4 "${MCA[@]}" \
	"$BENCH" barrier 0 mrail 2>>"$T/err" | grep -v '^label' >"$T/barrier" ||
	fail "$STACK: mpi-bench barrier failed"
awk -F, '$2 == "barrier" && $3 == 4 && $4 == 0 && $5 > 0 {n++} END {exit n != 1}' \
	"$T/barrier" || fail "$STACK: not one barrier row: $(cat "$T/barrier")"
# A test name it does not know is an error that names it, not empty rows.
if timeout -k 5 60 "$MPIRUN" --oversubscribe --bind-to none -n 2 "${MCA[@]}" \
	"$BENCH" no-such-test 8 mrail >"$T/bogus" 2>&1; then
	fail "$STACK: mpi-bench ran an unknown test"
fi
grep -q "unknown test 'no-such-test'" "$T/bogus" ||
	fail "$STACK: unknown test not named: $(head -3 "$T/bogus")"
cat "$T/csv"
for t in bw bibw; do
	for n in 16384 32768 65536; do
		awk -F, -v t=$t -v n=$n '$2 == t && $4 == n && $6 > 0 {ok = 1} END {exit !ok}' \
			"$T/csv" || fail "$STACK: no positive $t figure for $n bytes"
	done
done
awk -F, '$2 == "latency" && $4 == 8 && $5 > 0 {ok = 1} END {exit !ok}' "$T/csv" ||
	fail "$STACK: no 8 B latency"
# The table over one configuration: the others' columns are empty (nan)
# and it says so, the sizes and the latency row (from ping-pong rows, so
# the latency row stands in for them) are there.
sed -i 's/,latency,/,pingpong,/' "$T/csv"
/usr/bin/python3 "$TABLE" "$T/csv" >"$T/table" 2>&1 || fail "anchors_table.py failed"
cat "$T/table"
[ "$(grep -c '^| 16 KiB |' "$T/table")" = 2 ] || fail "table: no 16 KiB rows for bw and bibw"
grep -q '^| [0-9.]* (1) | nan (0) | nan (0) |' "$T/table" || fail "table: no latency row"
grep -q 'a run failed' "$T/table" || fail "table: missing configurations not reported"
echo "mpi-bench smoke $STACK: OK"
