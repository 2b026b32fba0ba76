#!/bin/sh
# fig8.sh: the paper's Fig. 8 on netlab (docs/fig8.md). As root:
#   bench/fig8.sh [--build DIR] [--rails 1000mbit,400mbit[;R,R,R...]]
#                 [--runs N] [--out DIR] [--prefix NAME] [--no-sample]
#                 [--summary-only] [-- mrail-fig8 options...]
# For each bed of --rails (';' between beds) and each of --runs runs:
# builds a 2-host lab, profiles its rails with mrail-sample (into
# OUT/<bed>/runK/profiles, used by the split strategy), runs mrail-fig8
# across the hosts, plots when gnuplot is there, always tears the lab
# down; then prints one summary table (issue 24's figures: split, oracle,
# sum, split/oracle, spread over rounds and over runs) per bed
# (--summary-only: only that table, from the runs already in OUT).
# The issue's figures in one command:
#   bench/fig8.sh --rails '1000mbit,400mbit;1000mbit,600mbit,200mbit' \
#       --runs 4 -- --min-size 16K --max-size 16M
set -eu

BUILD=build BEDS=1000mbit,400mbit OUT= PREFIX=fig8 SAMPLE=1 RUNS=1 ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--rails) BEDS=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--prefix) PREFIX=$2; shift 2 ;;
	--no-sample) SAMPLE=0; shift ;;
	--summary-only) ONLY=1; shift ;;
	--) shift; break ;;
	-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "fig8.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
case $RUNS in ''|*[!0-9]*|0) echo "fig8.sh: bad --runs '$RUNS'" >&2; exit 2 ;; esac
[ -n "$OUT" ] || OUT=fig8-$(echo "$BEDS" | tr ',;' '-_')
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BEDLIST=$(echo "$BEDS" | tr ';' ' ')
# Per size over the runs of one bed: medians of split, oracle and sum,
# split/oracle and split/sum of those medians, the largest spread over
# rounds within a run, and the spread of split over runs ((max-min)/median).
summary() {
	awk -F, -v bed="$1" -v runs="$RUNS" '
	function med(a, n,   i, j, t, b) {
		for (i = 1; i <= n; i++) b[i] = a[i]
		for (i = 2; i <= n; i++) for (j = i; j > 1 && b[j-1] > b[j]; j--) {
			t = b[j]; b[j] = b[j-1]; b[j-1] = t }
		return n % 2 ? b[(n+1)/2] : (b[n/2] + b[n/2+1]) / 2 }
	FNR == 1 { f++; for (i = 1; i <= NF; i++) col[$i] = i; next }
	{
		s = $1; if (!(s in seen)) { seen[s] = 1; order[++ns] = s }
		k = ++cnt[s]
		sp[s, k] = $col["split"]; or[s, k] = $col["oracle"]; su[s, k] = $col["sum"]
		if ($col["split_spread"] > rmax[s]) rmax[s] = $col["split_spread"]
	}
	END {
		printf "\n== %s: %d run(s), medians over runs ==\n", bed, runs
		printf "%8s %8s %8s %8s %7s %7s %9s %9s %s\n", "size", "split", "oracle", "sum",
			"spl/orc", "spl/sum", "rnd-spr", "run-spr", "split per run"
		for (o = 1; o <= ns; o++) {
			s = order[o]; n = cnt[s]; lo = hi = sp[s, 1]; l = ""
			for (k = 1; k <= n; k++) {
				a[k] = sp[s, k]; b[k] = or[s, k]; c[k] = su[s, k]
				if (a[k] < lo) lo = a[k]; if (a[k] > hi) hi = a[k]
				l = l sprintf(" %.1f", a[k])
			}
			ms = med(a, n); mo = med(b, n); mu = med(c, n)
			sz = s >= 1048576 ? (s / 1048576) "M" : (s / 1024) "K"
			printf "%8s %8.1f %8.1f %8.1f %7.3f %7.3f %8.1f%% %8.1f%%%s\n", sz, ms, mo, mu,
				ms / mo, ms / mu, 100 * rmax[s], 100 * (hi - lo) / ms, l
		}
	}' "$2"/run*/fig8.csv
}

if [ "$ONLY" = 1 ]; then
	for RAILS in $BEDLIST; do
		summary "$RAILS" "$OUT/$(echo "$RAILS" | tr ',' '-')"
	done
	exit 0
fi
B=$(cd "$BUILD" && pwd)
NETLAB=$B/bench/netlab/netlab
RUN=$B/launcher/mrail-run
for f in "$NETLAB" "$RUN" "$B/bench/mrail-fig8" "$B/sampler/tool/mrail-sample"; do
	[ -x "$f" ] || { echo "fig8.sh: $f missing (ninja -C $BUILD)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "fig8.sh: needs root (netlab)" >&2; exit 1; }

cleanup() { "$NETLAB" --prefix "$PREFIX" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# One bed ($1: rates), run $2, into $3.
bed_run() {
	RAILS=$1 D=$3 K=$2
	shift 3
	NR=$(echo "$RAILS" | tr ',' '\n' | wc -l)
	LIST=$(i=0; while [ $i -lt "$NR" ]; do printf 'r%d,' $i; i=$((i+1)); done)
	LIST=${LIST%,}
	mkdir -p "$D/profiles"
	rm -f "$D"/profiles/*
	MGMT=$("$NETLAB" --prefix "$PREFIX" addr h0 mgmt)
	BIND=${MGMT%.*}.254
	export MRAIL_PROFILE_DIR="$D/profiles"
	{
		echo "# fig8.sh $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -r) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "# rails $RAILS ($LIST), lab $PREFIX, management $BIND, run $K"
	} | tee "$D/fig8.txt"
	if [ "$SAMPLE" = 1 ]; then
		run "$B/sampler/tool/mrail-sample" --max-size 64M --seconds 0.05 \
			2>&1 | tee "$D/sample.txt"
	fi
	run "$B/bench/mrail-fig8" --csv "$D/fig8.csv" "$@" 2>&1 | tee -a "$D/fig8.txt"
	echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$D/fig8.txt"
}

run() {
	"$RUN" -n 2 --hosts "$PREFIX-h0,$PREFIX-h1" \
		--wrap 'ip netns exec {host}' --bind "$BIND" \
		-x MRAIL_RAILS="$LIST" -x MRAIL_PROFILE_DIR="$MRAIL_PROFILE_DIR" \
		--timeout 3600 "$@"
}

plot() {
	D=$1 RAILS=$2
	command -v gnuplot >/dev/null 2>&1 || return 0
	NC=$(head -1 "$D/fig8.csv" | tr ',' '\n' | grep -vc 'oracle_frac\|split_spread')
	gnuplot <<GP && echo "plot: $D/fig8.png"
set terminal png size 1000,650
set output '$D/fig8.png'
set datafile separator ','
set key autotitle columnhead left top
set logscale x 2
set format x '%.0b%BB'
set xlabel 'message size'
set ylabel 'MB/s (10^6 B/s)'
set title 'mrail-fig8 on netlab: rails $RAILS'
set grid
plot for [i=2:$NC] '$D/fig8.csv' using 1:i with linespoints
GP
}

for RAILS in $BEDLIST; do
	BD=$OUT/$(echo "$RAILS" | tr ',' '-')
	"$NETLAB" --prefix "$PREFIX" up --hosts 2 --rails "$RAILS" --base auto
	k=1
	while [ $k -le "$RUNS" ]; do
		bed_run "$RAILS" "$k" "$BD/run$k" "$@"
		plot "$BD/run$k" "$RAILS"
		k=$((k+1))
	done
	cleanup
done
for RAILS in $BEDLIST; do
	summary "$RAILS" "$OUT/$(echo "$RAILS" | tr ',' '-')"
done | tee "$OUT/summary.txt"
echo "results: $OUT/summary.txt, $OUT/<bed>/run<k>/fig8.txt and fig8.csv"
