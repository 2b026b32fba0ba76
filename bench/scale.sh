#!/bin/sh
# scale.sh: wire-up time and idle memory per peer (docs/scale.md).
#   bench/scale.sh [--build DIR] [--rails N] [--mode ring|alltoall]
#                  [--runs K] [N...]           (default N: 64 256 1024)
# For each job size N, runs `mrail-run -n N tests/scale/test_scale MODE
# --report` (create an engine, exchange with both ring neighbours, check,
# destroy) K times (default 1) and prints, per run:
#   total      mrail-run start to exit (process start-up included)
#   spawn      first rank's main() to last rank's main() (the launcher
#              starting N processes)
#   wireup     last rank's main() to the last mrail_engine_create() return
#   create     mrail_engine_create() in one rank: mean and max
#   cpu        CPU seconds of the whole job (ranks and mrail-run), per rank
#   heap/peer  malloc'd bytes in use after creation, (mean(N) - mean(40)) /
#              (N - 40): what one more idle (never messaged) peer costs
#              (40: above 32 ranks, as the sizes measured: lazy connection,
#              no interface discovery; N must be above 40)
#   rss/peer   the same with VmRSS (page granular: noisy below ~64 ranks)
#   used/peer  heap per peer after the exchange (its buffers freed): with
#              --mode alltoall, what one more connected, now idle, peer costs
# Figures on a shared machine are noisy: cpu is the least load-dependent.
set -eu

BUILD=build RAILS=1 MODE=ring RUNS=1
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--rails) RAILS=$2; shift 2 ;;
	--mode) MODE=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
	-*) echo "scale.sh: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
case $MODE in ring|alltoall) ;; *) echo "scale.sh: --mode ring or alltoall" >&2; exit 2 ;; esac
case $RAILS$RUNS in *[!0-9]*|"") echo "scale.sh: --rails and --runs take numbers" >&2; exit 2 ;; esac
[ $# -gt 0 ] || set -- 64 256 1024
B=$(cd "$BUILD" && pwd)
RUN=$B/launcher/mrail-run APP=$B/tests/scale/test_scale
for f in "$RUN" "$APP"; do
	[ -x "$f" ] || { echo "scale.sh: $f missing (ninja -C $BUILD)" >&2; exit 1; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export MRAIL_TCP_LOOPBACK_RAILS=$RAILS

# One job: its report lines in $TMP/out, "total cpu" seconds on stdout.
job() {
	/usr/bin/time -f '%e %U %S' -o "$TMP/time" \
		"$RUN" -n "$1" "$APP" "$MODE" --report >"$TMP/out" 2>"$TMP/err" ||
		{ echo "scale.sh: n=$1 failed:" >&2; tail -5 "$TMP/err" >&2; return 1; }
	awk '{printf "%s %.2f\n", $1, $2 + $3}' "$TMP/time"
}

# Mean heap and RSS of the ranks of the last job; mean heap after use.
means() {
	awk '/^scale-report/ { for (i = 2; i <= NF; i++) { split($i, kv, "=");
		v[kv[1]] = kv[2] } h += v["heap_bytes"]; r += v["rss_kib"];
		u += v["heap_used"]; c++ }
		END { printf "%.0f %.0f %.0f\n", h / c, r / c, u / c }' "$TMP/out"
}

BASE=40
job $BASE >/dev/null
read -r H2 R2 U2 <<EOF
$(means)
EOF
printf '%6s %8s %7s %7s %14s %9s %10s %9s %10s\n' ranks total spawn wireup create cpu/rank heap/peer rss/peer used/peer
for n in "$@"; do
	[ "$n" -gt 40 ] 2>/dev/null || { echo "scale.sh: sizes must be numbers above 40" >&2; exit 2; }
	k=0
	while [ $k -lt "$RUNS" ]; do
		k=$((k + 1))
		read -r TOTAL CPU <<EOF
$(job "$n")
EOF
		read -r H R U <<EOF
$(means)
EOF
		awk -v n="$n" -v total="$TOTAL" -v cpu="$CPU" -v h="$H" -v r="$R" \
		    -v h2="$H2" -v r2="$R2" -v b="$BASE" -v u="$U" -v u2="$U2" '
		/^scale-report/ { for (i = 2; i <= NF; i++) { split($i, kv, "=");
			v[kv[1]] = kv[2] }
			if (!c || v["start"] < s0) s0 = v["start"]
			if (!c || v["start"] > s1) s1 = v["start"]
			if (!c || v["created"] > c1) c1 = v["created"]
			cs += v["create_s"]; if (v["create_s"] > cm) cm = v["create_s"]
			c++ }
		END { printf "%6d %7.2fs %6.2fs %6.2fs %6.2f/%5.2fs %8.1fms %9.0fB %7.1fKiB %9.0fB\n",
			n, total, s1 - s0, c1 - s1, cs / c, cm, 1000 * cpu / n,
			(h - h2) / (n - b), (r - r2) / (n - b),
			(u - u2) / (n - b) }' "$TMP/out"
	done
done
