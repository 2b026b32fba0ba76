#!/bin/sh
# fig8.sh: the paper's Fig. 8 on netlab (docs/fig8.md). As root:
#   bench/fig8.sh [--build DIR] [--rails 1000mbit,400mbit] [--out DIR]
#                 [--prefix NAME] [--no-sample] [-- mrail-fig8 options...]
# Builds a 2-host lab, profiles its rails with mrail-sample (into
# OUT/profiles, used by the split strategy), runs mrail-fig8 across the
# hosts with --csv OUT/fig8.csv, plots OUT/fig8.png when gnuplot is there,
# and always tears the lab down.
set -eu

BUILD=build RAILS=1000mbit,400mbit OUT= PREFIX=fig8 SAMPLE=1
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--rails) RAILS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--prefix) PREFIX=$2; shift 2 ;;
	--no-sample) SAMPLE=0; shift ;;
	--) shift; break ;;
	-h|--help) sed -n '2,8p' "$0"; exit 0 ;;
	*) echo "fig8.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$OUT" ] || OUT=fig8-$(echo "$RAILS" | tr ',' '-')
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B=$(cd "$BUILD" && pwd)
NETLAB=$B/bench/netlab/netlab
RUN=$B/launcher/mrail-run
for f in "$NETLAB" "$RUN" "$B/bench/mrail-fig8" "$B/sampler/tool/mrail-sample"; do
	[ -x "$f" ] || { echo "fig8.sh: $f missing (ninja -C $BUILD)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "fig8.sh: needs root (netlab)" >&2; exit 1; }

NR=$(echo "$RAILS" | tr ',' '\n' | wc -l)
LIST=$(i=0; while [ $i -lt "$NR" ]; do printf 'r%d,' $i; i=$((i+1)); done)
LIST=${LIST%,}

cleanup() { "$NETLAB" --prefix "$PREFIX" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

"$NETLAB" --prefix "$PREFIX" up --hosts 2 --rails "$RAILS" --base auto
MGMT=$("$NETLAB" --prefix "$PREFIX" addr h0 mgmt)
BIND=${MGMT%.*}.254
export MRAIL_PROFILE_DIR="$OUT/profiles"
mkdir -p "$MRAIL_PROFILE_DIR"

run() {
	"$RUN" -n 2 --hosts "$PREFIX-h0,$PREFIX-h1" \
		--wrap 'ip netns exec {host}' --bind "$BIND" \
		-x MRAIL_RAILS="$LIST" -x MRAIL_PROFILE_DIR="$MRAIL_PROFILE_DIR" \
		--timeout 3600 "$@"
}

{
	echo "# fig8.sh $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -r) $(nproc) CPUs"
	echo "# rails $RAILS ($LIST), lab $PREFIX, management $BIND"
} | tee "$OUT/fig8.txt"
if [ "$SAMPLE" = 1 ]; then
	run "$B/sampler/tool/mrail-sample" --max-size 64M --seconds 0.05 \
		2>&1 | tee "$OUT/sample.txt"
fi
run "$B/bench/mrail-fig8" --csv "$OUT/fig8.csv" "$@" 2>&1 | tee -a "$OUT/fig8.txt"

if command -v gnuplot >/dev/null 2>&1; then
	NC=$(head -1 "$OUT/fig8.csv" | tr ',' '\n' | grep -vc oracle_frac)
	gnuplot <<GP && echo "plot: $OUT/fig8.png"
set terminal png size 1000,650
set output '$OUT/fig8.png'
set datafile separator ','
set key autotitle columnhead left top
set logscale x 2
set format x '%.0b%BB'
set xlabel 'message size'
set ylabel 'MB/s (10^6 B/s)'
set title 'mrail-fig8 on netlab: rails $RAILS'
set grid
plot for [i=2:$NC] '$OUT/fig8.csv' using 1:i with linespoints
GP
else
	echo "gnuplot not found: no plot (apt-get install gnuplot-nox)"
fi
echo "results: $OUT/fig8.txt $OUT/fig8.csv"
