#!/usr/bin/env bash
# Compare, in one run, libfabric's own fi_pingpong (the raw provider) and
# mrail over the same provider through the ofi driver: 8 B ping-pong
# latency and 16 MiB bandwidth (docs/driver-ofi.md, "Performance").
#
#   bench/ofi/ofi-vs-raw.sh BUILD_DIR [PROVIDER] [where]
#     PROVIDER  default "tcp;ofi_rxm"
#     where     "loopback" (default) or "netlab": one netlab rail between
#               two namespaced hosts (root; bench/netlab/netlab up first)
# Exit 77 when fi_pingpong or the provider is missing.
set -u -o pipefail
BUILD=${1:?usage: ofi-vs-raw.sh BUILD_DIR [PROVIDER] [loopback|netlab]}
PROV=${2:-tcp;ofi_rxm}
WHERE=${3:-loopback}
HERE=$(cd "$(dirname "$0")" && pwd)
NETLAB="$HERE/../netlab/netlab"
command -v fi_pingpong >/dev/null || { echo "fi_pingpong missing (libfabric-bin)"; exit 77; }
fi_info -p "$PROV" -t FI_EP_RDM >/dev/null 2>&1 || { echo "provider $PROV missing"; exit 77; }

run_a=() run_b=() addr=127.0.0.1 domain=lo
if [ "$WHERE" = netlab ]; then
	[ "$(id -u)" = 0 ] || { echo "netlab needs root"; exit 77; }
	h0=$("$NETLAB" hosts | sed -n 1p); h1=$("$NETLAB" hosts | sed -n 2p)
	[ -n "$h1" ] || { echo "no netlab up (bench/netlab/netlab up --hosts 2 --rails 1000mbit)"; exit 77; }
	run_a=(ip netns exec "$h0") run_b=(ip netns exec "$h1")
	addr=$("$NETLAB" addr "$h0" 0) domain=r0
fi

# fi_pingpong: server then client; reports "bytes #sent #ack total time
# MB/sec usec/xfer Mxfers/sec" rows (usec/xfer: one-way).
raw() { # size iters
	# Own out-of-band port: the default one lingers in TIME_WAIT.
	local port=$((40000 + RANDOM % 20000))
	"${run_a[@]}" fi_pingpong -p "$PROV" -e rdm -S "$1" -I "$2" -B "$port" \
		>/tmp/ofi-pp-srv.$$ 2>&1 &
	local srv=$!
	sleep 1
	"${run_b[@]}" fi_pingpong -p "$PROV" -e rdm -S "$1" -I "$2" -P "$port" "$addr" 2>&1 |
		awk '$1 ~ /^[0-9]/ && NF >= 7 {print $6, $7}' | tail -1
	wait $srv 2>/dev/null
	rm -f /tmp/ofi-pp-srv.$$
}

echo "# provider $PROV, $WHERE (domain $domain)"
read -r raw_bw raw_lat < <(raw 8 2000)
echo "fi_pingpong 8 B: ${raw_lat} us per transfer (one-way)"
read -r raw_bw16 raw_lat16 < <(raw 16777216 20)
echo "fi_pingpong 16 MiB: ${raw_bw16} MB/s (ping-pong)"

export MRAIL_DRIVERS=ofi
export MRAIL_DRIVER_PARAMS="ofi:provider=${PROV//;/+},domains=$domain"
if [ "$WHERE" = netlab ]; then
	echo "(mrail over netlab: run mrail-run with one rank per host, see docs/netlab.md)"
fi
"$BUILD/launcher/mrail-run" -n 2 "$BUILD/bench/mrail-bench" --no-raw \
	--min-size 8 --max-size 8 --mode lat --iters 20000
"$BUILD/launcher/mrail-run" -n 2 "$BUILD/bench/mrail-bench" --no-raw \
	--min-size 16M --max-size 16M --mode bw
