#!/bin/sh
# peers.sh: the concurrent-traffic scenario on netlab (docs/peers.md). As root:
#   bench/peers.sh [--build DIR] [--rails 1000mbit,400mbit] [--out DIR]
#                  [--prefix NAME] [--no-sample] [--quiet PCT] [--cc NAME]
#                  [-- mrail-peers options...]
# Builds a 3-host lab, profiles the rails h0-h1 and h0-h2 with mrail-sample
# (into OUT/profiles, used by the split strategy), runs mrail-peers across
# the hosts (rank 0 on h0 sends to h1 and h2) with --csv OUT/peers.csv,
# plots OUT/peers.png when gnuplot is there, and always tears the lab down.
# --quiet PCT: before profiling and before the run, wait (up to 10 min)
# until the machine is at most PCT % busy over 1 s. --cc: the lab's TCP
# congestion control (netlab up --cc; default cubic: with bbr, two
# streams sharing a shaped rail overrun its queue and stall for ~200 ms,
# docs/peers.md; --cc '' keeps the kernel's).
set -eu

# MRAIL_TRACE (docs/trace.md) is for the benchmark's engines only, not
# the profiling runs (mrail-run passes MRAIL_* variables on): one prefix
# then holds one run.
TRACE=${MRAIL_TRACE:-}
unset MRAIL_TRACE
BUILD=build RAILS=1000mbit,400mbit OUT= PREFIX=peers SAMPLE=1 QUIET= CC=cubic
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--rails) RAILS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--prefix) PREFIX=$2; shift 2 ;;
	--no-sample) SAMPLE=0; shift ;;
	--cc) CC=$2; shift 2 ;;
	--quiet) QUIET=$2; shift 2
		case $QUIET in ""|*[!0-9]*) echo "peers.sh: bad --quiet '$QUIET' (a busy percentage)" >&2; exit 2 ;; esac ;;
	--) shift; break ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "peers.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$OUT" ] || OUT=peers-$(echo "$RAILS" | tr ',' '-')
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
B=$(cd "$BUILD" && pwd)
NETLAB=$B/bench/netlab/netlab
RUN=$B/launcher/mrail-run
for f in "$NETLAB" "$RUN" "$B/bench/mrail-peers" "$B/sampler/tool/mrail-sample"; do
	[ -x "$f" ] || { echo "peers.sh: $f missing (ninja -C $BUILD)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "peers.sh: needs root (netlab)" >&2; exit 1; }

NR=$(echo "$RAILS" | tr ',' '\n' | wc -l)
LIST=$(i=0; while [ $i -lt "$NR" ]; do printf 'r%d,' $i; i=$((i+1)); done)
LIST=${LIST%,}

# Busy percentage of the whole machine over 1 s (from /proc/stat).
busy() {
	a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
	sleep 1
	b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
	echo "$a $b" | awk '{ db = $3 - $1; di = $4 - $2
		printf "%.0f\n", (db + di > 0) ? 100 * db / (db + di) : 0 }'
}
# Other jobs on the machine take the CPU the ranks and the shaping need.
wait_quiet() {
	[ -n "$QUIET" ] || return 0
	t0=$(date +%s)
	while [ "$(busy)" -gt "$QUIET" ]; do
		if [ $(($(date +%s) - t0)) -ge 600 ]; then
			echo "# peers.sh: the machine stayed busier than $QUIET %; measuring anyway"
			return 0
		fi
		sleep 2
	done
}

cleanup() { "$NETLAB" --prefix "$PREFIX" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

"$NETLAB" --prefix "$PREFIX" up --hosts 3 --rails "$RAILS" --base auto \
	${CC:+--cc "$CC"}
MGMT=$("$NETLAB" --prefix "$PREFIX" addr h0 mgmt)
BIND=${MGMT%.*}.254
export MRAIL_PROFILE_DIR="$OUT/profiles"
mkdir -p "$MRAIL_PROFILE_DIR"

# run N HOSTS PROGRAM ARGS...: rank r on host r % N of the comma list.
run() {
	n=$1 hosts=$2
	shift 2
	"$RUN" -n "$n" --hosts "$hosts" \
		--wrap 'ip netns exec {host}' --bind "$BIND" \
		-x MRAIL_RAILS="$LIST" -x MRAIL_PROFILE_DIR="$MRAIL_PROFILE_DIR" \
		${MRAIL_PACE:+-x MRAIL_PACE="$MRAIL_PACE"} \
		--timeout 3600 "$@"
}

{
	echo "# peers.sh $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -r) $(nproc) CPUs"
	echo "# rails $RAILS ($LIST), lab $PREFIX (3 hosts), management $BIND, TCP $(ip netns exec "$PREFIX-h0" sysctl -n net.ipv4.tcp_congestion_control)"
	echo "# load before: $(cat /proc/loadavg) (other jobs on the machine disturb the times)"
} | tee "$OUT/peers.txt"
if [ "$SAMPLE" = 1 ]; then
	wait_quiet | tee -a "$OUT/peers.txt"
	# mrail-sample profiles the rails between exactly 2 ranks (r and
	# r^1): one run per pair that carries data. Profiles are filed under
	# the local interface and the peer's interface and address, so h0's
	# profiles towards h1 and towards h2 are distinct files in one
	# directory. (h1-h2 carries no data here: its rails keep the engine's
	# in-band or nominal model.)
	for h in h1 h2; do
		run 2 "$PREFIX-h0,$PREFIX-$h" "$B/sampler/tool/mrail-sample" \
			--max-size 16M --seconds 0.05 2>&1 | tee -a "$OUT/sample.txt"
	done
fi
# Counters around the run: drops in the sender's (h0) tbf queues, and TCP
# retransmissions, timeouts (at least 200 ms each) and loss probes in every
# host, to tell network outliers from the engine's.
counters() {
	for i in $(echo "$LIST" | tr ',' ' '); do
		printf '# %s h0 %s: ' "$1" "$i"
		ip netns exec "$PREFIX-h0" tc -s qdisc show dev "$i" |
			sed -n 's/^ *\(Sent .*\)/\1/p'
	done
	for h in h0 h1 h2; do
		printf '# %s %s TCP: ' "$1" "$h"
		ip netns exec "$PREFIX-$h" nstat -asz TcpRetransSegs \
			TcpExtTCPTimeouts TcpExtTCPLossProbes 2>/dev/null |
			awk 'NR > 1 { printf "%s %s  ", $1, $2 } END { print "" }'
	done
}
wait_quiet | tee -a "$OUT/peers.txt"
echo "# machine busy before the run: $(busy) % over 1 s" | tee -a "$OUT/peers.txt"
counters before | tee -a "$OUT/peers.txt"
run 3 "$PREFIX-h0,$PREFIX-h1,$PREFIX-h2" ${TRACE:+-x MRAIL_TRACE="$TRACE"} "$B/bench/mrail-peers" \
	--csv "$OUT/peers.csv" "$@" 2>&1 | tee -a "$OUT/peers.txt"
counters after | tee -a "$OUT/peers.txt"
echo "# load after: $(cat /proc/loadavg)" | tee -a "$OUT/peers.txt"

if command -v gnuplot >/dev/null 2>&1; then
	CONFS=$(tail -n +2 "$OUT/peers.csv" | cut -d, -f5 | awk '!s[$0]++' | tr '\n' ' ')
	gnuplot <<GP && echo "plot: $OUT/peers.png"
set terminal png size 1200,900
set output '$OUT/peers.png'
set datafile separator ','
set logscale x 2
set format x '%.0b%BB'
set xlabel 'size of the first message'
set grid
set key left top
set multiplot layout 2,2 title 'mrail-peers on netlab: rank 0 -> ranks 1 and 2 at once, rails $RAILS'
do for [m in "equal skew"] {
  set title m.': aggregate MB/s (10^6 B/s)'
  set ylabel 'MB/s'
  plot for [c in "$CONFS"] '$OUT/peers.csv' using 2:((strcol(1) eq m && strcol(5) eq c) ? \$10 : 1/0) with points title c
  set title m.': first completion, ms from the post'
  set ylabel 'ms'
  set logscale y
  plot for [c in "$CONFS"] '$OUT/peers.csv' using 2:((strcol(1) eq m && strcol(5) eq c) ? \$6 : 1/0) with points title c
  unset logscale y
}
unset multiplot
GP
else
	echo "gnuplot not found: no plot (apt-get install gnuplot-nox)"
fi
echo "results: $OUT/peers.txt $OUT/peers.csv"
