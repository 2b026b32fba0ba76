#!/bin/bash
# Small-message rate, streaming bandwidth (1 B..16 KiB, window 64) and 8 B
# latency under mtl mrail vs ob1 over tcp, one loopback rail, in ROUNDS
# interleaved rounds; prints the medians over rounds side by side with
# the ratio (docs/mpi-ompi.md "Small messages"). Stacks:
#   ob1        pml ob1, btl self,tcp on lo
#   mrail      pml cm, mtl mrail, MRAIL_DRIVERS=tcp (one loopback rail)
#   mrail-shm  pml cm, mtl mrail with its defaults (one host: shm)
#   mrail-base as mrail, with the component of --base-mca-dir (an older
#              build: before/after in one run)
# usage: msgrate.sh [--rounds N] [--scale S] [--mca-dir DIR]
#                   [--base-mca-dir DIR] [OUTDIR]
#   run it from a release build: build-rel/bench/mpi/msgrate.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=5 SCALE=1 MCA_DIR=$HERE/../../mpi-binding/ompi OUT= BASE_DIR=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--scale) SCALE=$2; shift 2 ;;
	--mca-dir) MCA_DIR=$2; shift 2 ;;
	--base-mca-dir) BASE_DIR=$2; shift 2 ;;
	-*) echo "msgrate.sh: unknown option $1" >&2; exit 2 ;;
	*) OUT=$1; shift ;;
	esac
done
BENCH=$HERE/mpi-msgrate
[ -x "$BENCH" ] || { echo "msgrate.sh: $BENCH not built" >&2; exit 2; }
[ -e "$MCA_DIR/mca_mtl_mrail.so" ] ||
	{ echo "msgrate.sh: no mca_mtl_mrail.so in $MCA_DIR" >&2; exit 2; }
[ -z "$BASE_DIR" ] || [ -e "$BASE_DIR/mca_mtl_mrail.so" ] ||
	{ echo "msgrate.sh: no mca_mtl_mrail.so in $BASE_DIR" >&2; exit 2; }
STACKS="ob1 mrail mrail-shm${BASE_DIR:+ mrail-base}"
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mrail-msgrate.XXXXXX")}
mkdir -p "$OUT"
SESSION=$(mktemp -d "${TMPDIR:-/tmp}/mrail-msgrate-s.XXXXXX")
trap 'rm -rf "$SESSION"' EXIT
export TMPDIR=$SESSION
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SYS_DIR="@SYS_MCA_DIR@"
CSV=$OUT/msgrate.csv
: >"$CSV"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"
for r in $(seq "$ROUNDS"); do
	for stack in $STACKS; do
		DIR=$MCA_DIR
		case $stack in
		mrail) MCA=(--mca pml cm --mca mtl mrail -x MRAIL_DRIVERS=tcp) ;;
		mrail-shm) MCA=(--mca pml cm --mca mtl mrail) ;;
		mrail-base) DIR=$BASE_DIR
			MCA=(--mca pml cm --mca mtl mrail -x MRAIL_DRIVERS=tcp) ;;
		ob1) MCA=(--mca pml ob1 --mca btl self,tcp
			--mca btl_tcp_if_include lo) ;;
		esac
		OMPI_MCA_mca_base_component_path="$DIR:$SYS_DIR" \
		timeout -k 5 300 mpirun --oversubscribe --bind-to none -n 2 \
			"${MCA[@]}" "$BENCH" "$SCALE" "$stack" </dev/null |
			grep -v '^label' >>"$CSV" ||
			echo "msgrate.sh: round $r $stack failed" >&2
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
python3 "$HERE/msgrate_table.py" "$CSV" | tee "$OUT/table.md"
