#!/usr/bin/env bash
# accuracy.sh: the measurement behind the accuracy table of docs/netlab.md.
#   bench/netlab/accuracy.sh [--runs N] [--seconds S] [--quiet PCT]
# As root. For each group of rates it makes a 2-host lab (prefix nlacc, a
# free --base), runs `netlab rates` (one TCP stream h0 -> h1 per rail, the
# rails one after the other and interleaved over the runs; then the default
# rail sets all at once) and removes the lab. About 4 minutes with the
# defaults. NETLAB_STREAM may name a built netlab-stream (else netlab
# builds one with cc).
set -u -o pipefail
NETLAB=$(dirname "$(readlink -f "$0")")/netlab
runs=5 secs=2 quiet=10
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--seconds) secs=$2; shift ;;
	--quiet) quiet=$2; shift ;;
	*) echo "usage: accuracy.sh [--runs N] [--seconds S] [--quiet PCT]" >&2; exit 2 ;;
	esac
	shift
done
P=nlacc
trap 'bash "$NETLAB" down --prefix $P >/dev/null 2>&1' EXIT
group() { # RATES [rates options]
	local rates=$1
	shift
	echo "== rails $rates $*"
	bash "$NETLAB" up --prefix $P --hosts 2 --rails "$rates" --base auto --no-check >/dev/null || exit 1
	bash "$NETLAB" rates --prefix $P --runs "$runs" --seconds "$secs" --quiet "$quiet" "$@" || exit 1
	bash "$NETLAB" down --prefix $P >/dev/null || exit 1
	echo
}
echo "$(uname -r), $(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo
group 100mbit,200mbit,400mbit,600mbit,1000mbit,2000mbit,4000mbit,none
group 6000mbit,8000mbit,10000mbit,12000mbit,15000mbit
group 1000mbit,400mbit --together
group 1000mbit,600mbit,200mbit --together
