#!/usr/bin/env bash
# In one run: libfabric's own fi_pingpong (the raw provider, libfabric-bin)
# against mrail over the same provider through the ofi driver, on loopback
# and on one netlab rail: 8 B latency and 16 MiB bandwidth, with the
# ratios against the targets (latency within 2 us, bandwidth >= 90 % of
# raw). docs/driver-ofi.md, "Performance".
#
#   bench/ofi/ofi-vs-raw.sh BUILD_DIR [PROVIDER] [WHERE...]
#     PROVIDER  default "tcp;ofi_rxm"
#     WHERE     loopback and/or netlab (default: both; netlab needs root
#               and builds its own one-rail lab, 1000mbit, removed on exit)
#
# Both sides measure the same thing: ping-pong, one-way time = half the
# round trip (fi_pingpong's usec/xfer and MB/sec are per one-way transfer;
# mrail-bench --mode lat likewise), bandwidth = 16 MiB / one-way time. The
# streaming figure (mrail-bench --mode bw, a window of 16) is printed too,
# for information. Medians; fi_pingpong reports a mean.
# Exit 77 when fi_pingpong or the provider is missing.
set -u -o pipefail
BUILD=$(cd "${1:?usage: ofi-vs-raw.sh BUILD_DIR [PROVIDER] [loopback|netlab]...}" && pwd)
PROV=${2:-tcp;ofi_rxm}
shift $(($# >= 2 ? 2 : 1))
WHERE=("$@")
[ ${#WHERE[@]} -gt 0 ] || WHERE=(loopback netlab)
HERE=$(cd "$(dirname "$0")" && pwd)
NETLAB="$HERE/../netlab/netlab"
MRUN="$BUILD/launcher/mrail-run"
BENCH="$BUILD/bench/mrail-bench"
LAT_ITERS=${OFI_BENCH_LAT_ITERS:-2000}
BW_ITERS=${OFI_BENCH_BW_ITERS:-20}
command -v fi_pingpong >/dev/null || { echo "fi_pingpong missing (libfabric-bin)"; exit 77; }
fi_info -p "$PROV" -t FI_EP_RDM >/dev/null 2>&1 || { echo "provider $PROV missing"; exit 77; }
tmp=$(mktemp -d)
lab=""
cleanup() {
	[ -n "$lab" ] && bash "$NETLAB" down --prefix "$lab" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

# raw SIZE ITERS -> "MB/s usec" from fi_pingpong (server in run_a, client
# in run_b). A fresh out-of-band port each try: the last one may linger.
raw() {
	local try port out
	for try in 1 2 3; do
		port=$((40000 + RANDOM % 20000))
		"${run_a[@]}" fi_pingpong -p "$PROV" -e rdm -d "$domain" -S "$1" -I "$2" \
			-B "$port" >"$tmp/srv" 2>&1 &
		local srv=$!
		sleep 1
		out=$("${run_b[@]}" fi_pingpong -p "$PROV" -e rdm -d "$domain" -S "$1" \
			-I "$2" -P "$port" "$addr" 2>&1 |
			awk '$1 ~ /^[0-9]/ && NF >= 7 {print $6, $7}' | tail -1)
		wait $srv 2>/dev/null
		[ -n "$out" ] && { echo "$out"; return 0; }
		sleep 1
	done
	echo "- -"
}

# mrail SIZE MODE ITERS -> the CSV row of mrail-bench over the ofi driver.
mrail() {
	local params="ofi:provider=${PROV//;/+},domains=$domain,shm=no,wait=${WAIT:-fd}"
	local hosts=()
	[ -n "$lab" ] && hosts=(--hosts "$lab-h0,$lab-h1" --wrap 'ip netns exec {host}'
		--bind "$root_mgmt")
	"$MRUN" -n 2 "${hosts[@]}" -x MRAIL_DRIVERS=ofi -x MRAIL_DRIVER_PARAMS="$params" \
		-x MRAIL_RAILS="ofi:$domain" "$BENCH" --no-raw --min-size "$1" \
		--max-size "$1" --mode "$2" --iters "$3" --reps 3 --csv "$tmp/csv" \
		>"$tmp/bench.out" 2>&1 || { tail -5 "$tmp/bench.out" >&2; echo ""; return; }
	grep -q "machine was busy" "$tmp/bench.out" && busy=1
	tail -1 "$tmp/csv"
}

col() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i } NR == 2 { print $k }' <<<"$1"; }
csvrow() { printf 'size,lat_iters,raw_lat_min_us,raw_lat_med_us,eng_lat_min_us,eng_lat_med_us,delta_min_us,delta_med_us,bw_msgs,raw_bw_med_MBps,raw_bw_max_MBps,eng_bw_med_MBps,eng_bw_max_MBps,bw_ratio_med\n%s\n' "$1"; }

for where in "${WHERE[@]}"; do
	run_a=() run_b=() addr=127.0.0.1 domain=lo lab="" busy=0
	if [ "$where" = netlab ]; then
		[ "$(id -u)" = 0 ] || { echo "# netlab: skipped (needs root)"; continue; }
		lab="ob$$"
		NETLAB_TEST=1 bash "$NETLAB" up --hosts 2 --rails 1000mbit --prefix "$lab" \
			--base auto >"$tmp/up" 2>&1 || { cat "$tmp/up"; echo "# netlab: lab failed"; lab=""; continue; }
		run_a=(ip netns exec "$lab-h0") run_b=(ip netns exec "$lab-h1")
		addr=$(bash "$NETLAB" addr --prefix "$lab" h0 r0) domain=r0
		h0_mgmt=$(bash "$NETLAB" addr --prefix "$lab" h0 mgmt)
		root_mgmt="${h0_mgmt%.*}.254"
	fi
	read -r _ raw_lat < <(raw 8 "$LAT_ITERS")
	read -r raw_bw _ < <(raw 16777216 "$BW_ITERS")
	# fi_pingpong busy-polls completion queues opened without a wait
	# object: the same as the driver's wait=poll. The default (wait=fd,
	# idle processes sleep) is printed beside it.
	row8=$(WAIT=poll mrail 8 lat "$LAT_ITERS")
	row8fd=$(mrail 8 lat "$LAT_ITERS")
	row16=$(mrail 16M all "$BW_ITERS")
	eng_lat=$(col "$(csvrow "$row8")" eng_lat_med_us)
	eng_lat_min=$(col "$(csvrow "$row8")" eng_lat_min_us)
	eng_lat_fd=$(col "$(csvrow "$row8fd")" eng_lat_med_us)
	eng_lat_fd_min=$(col "$(csvrow "$row8fd")" eng_lat_min_us)
	eng16=$(col "$(csvrow "$row16")" eng_lat_med_us)
	eng_stream=$(col "$(csvrow "$row16")" eng_bw_med_MBps)
	echo "# $PROV, $where (domain $domain), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
	awk -v rl="$raw_lat" -v el="$eng_lat" -v elm="$eng_lat_min" -v rb="$raw_bw" \
	    -v elf="$eng_lat_fd" -v elfm="$eng_lat_fd_min" \
	    -v e16="$eng16" -v es="$eng_stream" 'BEGIN {
		ok = (rl != "-" && el != "");
		printf "  8 B latency   fi_pingpong %10s us   mrail %10s us (min %s)   delta %s us  (target <= 2; ofi:wait=poll, as fi_pingpong)\n",
			rl, el, elm, ok ? sprintf("%.2f", el - rl) : "-";
		printf "  8 B latency   mrail, ofi:wait=fd (default: idle processes sleep) %s us (min %s)\n", elf, elfm;
		eb = e16 != "" && e16 > 0 ? 16777216 / e16 : 0;
		ok = (rb != "-" && rb > 0 && eb > 0);
		printf "  16 MiB bw     fi_pingpong %10s MB/s mrail %10.1f MB/s          ratio %s  (target >= 0.90)\n",
			rb, eb, ok ? sprintf("%.3f", eb / rb) : "-";
		printf "  16 MiB stream mrail (window 16) %s MB/s\n", es == "" ? "-" : es;
	}'
	[ "$busy" = 1 ] && echo "  (mrail-bench: the machine was busy during the run; figures disturbed)"
	if [ -n "$lab" ]; then bash "$NETLAB" down --prefix "$lab" >/dev/null 2>&1; lab=""; fi
done
