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
# --netlab (root): the same between the two hosts of a netlab (rails r0
# 1000 + r1 400 Mbit/s, one process per host): ob1 over btl tcp on r0,r1,
# mrail over r0,r1 with its defaults, mrail-base; no mrail-shm.
# usage: msgrate.sh [--rounds N] [--scale S] [--mca-dir DIR]
#                   [--base-mca-dir DIR] [--netlab] [OUTDIR]
#   run it from a release build: build-rel/bench/mpi/msgrate.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=5 SCALE=1 MCA_DIR=$HERE/../../mpi-binding/ompi OUT= BASE_DIR= NETLAB=0
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--scale) SCALE=$2; shift 2 ;;
	--mca-dir) MCA_DIR=$2; shift 2 ;;
	--base-mca-dir) BASE_DIR=$2; shift 2 ;;
	--netlab) NETLAB=1; shift ;;
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
launch() { timeout -k 5 300 mpirun --oversubscribe --bind-to none -n 2 "$@"; }
if [ "$NETLAB" = 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "msgrate.sh: --netlab needs root" >&2; exit 77; }
	B=$(cd "$HERE/../.." && pwd) AGENT=@AGENT@ SYS=$SYS_DIR P=mr$$
	. "$HERE/netlab_mpi.sh"
	nlmpi_up 1000mbit,400mbit "$OUT/netlab.log" || exit 1
	trap '"$NL" down >/dev/null 2>&1; rm -rf "$NLMPI_TMP" "$SESSION"' EXIT
	STACKS="ob1 mrail${BASE_DIR:+ mrail-base}"
	launch() { nlmpi_run 1 "$OUT/err.log" "$@"; }
fi
CSV=$OUT/msgrate.csv
: >"$CSV"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"
for r in $(seq "$ROUNDS"); do
	for stack in $STACKS; do
		DIR=$MCA_DIR
		case $NETLAB$stack in
		1mrail | 1mrail-base) MCA=(--mca pml cm --mca mtl mrail
			--mca mtl_mrail_rails r0,r1) ;;
		1ob1) MCA=(--mca pml ob1 --mca btl self,tcp
			--mca btl_tcp_if_include r0,r1) ;;
		0mrail) MCA=(--mca pml cm --mca mtl mrail -x MRAIL_DRIVERS=tcp) ;;
		0mrail-shm) MCA=(--mca pml cm --mca mtl mrail) ;;
		0mrail-base) MCA=(--mca pml cm --mca mtl mrail -x MRAIL_DRIVERS=tcp) ;;
		0ob1) MCA=(--mca pml ob1 --mca btl self,tcp
			--mca btl_tcp_if_include lo) ;;
		esac
		[ "$stack" = mrail-base ] && DIR=$BASE_DIR
		OMPI_MCA_mca_base_component_path="$DIR:$SYS_DIR" \
		launch "${MCA[@]}" "$BENCH" "$SCALE" "$stack" </dev/null |
			grep -v '^label' >>"$CSV" ||
			echo "msgrate.sh: round $r $stack failed" >&2
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
python3 "$HERE/msgrate_table.py" "$CSV" | tee "$OUT/table.md"
