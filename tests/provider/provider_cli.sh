#!/bin/bash
# The provider seen through Debian's libfabric-bin tools, with default
# settings: fi_info lists it, fi_pingpong runs between two processes.
# usage: provider_cli.sh PROVIDER_DIR info|pingpong-tagged|pingpong-msg
set -u
DIR=$1 WHAT=$2
export FI_PROVIDER_PATH=$DIR
command -v fi_info >/dev/null && command -v fi_pingpong >/dev/null ||
	{ echo "libfabric-bin not installed: skipped"; exit 77; }
case $WHAT in
info)
	out=$(fi_info -p mrail -v 2>&1) || { echo "$out"; echo "FAIL: fi_info -p mrail"; exit 1; }
	for w in "prov_name: mrail" "type: FI_EP_RDM" FI_TAGGED FI_MSG \
		 "threading: FI_THREAD_SAFE" "data_progress: FI_PROGRESS_MANUAL"; do
		grep -q "$w" <<<"$out" || { echo "$out"; echo "FAIL: no '$w'"; exit 1; }
	done
	# Honest attributes: nothing RMA; 8 bytes of remote CQ data.
	! grep -q "FI_RMA" <<<"$out" || { echo "FAIL: FI_RMA advertised"; exit 1; }
	grep -q "cq_data_size: 8" <<<"$out" || { echo "FAIL: cq_data_size"; exit 1; }
	echo "fi_info lists mrail"
	;;
pingpong-*)
	mode=${WHAT#pingpong-}
	# A port of our own (other engineers' pingpongs use the default),
	# below the kernel's ephemeral range: a port in it can be any
	# connection's local end, and the server's bind then fails
	# (EADDRINUSE, seen once in CI with 20000-39999). Still taken by
	# some listener: another port, a few times.
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[ "${lo:-0}" -gt 12000 ] 2>/dev/null || lo=32768
	T=$(mktemp -d); srv=""
	trap 'rm -rf "$T"; [ -n "$srv" ] && kill $srv 2>/dev/null' EXIT
	for try in 1 2 3 4 5; do
		port=$((10000 + RANDOM % (lo - 10000)))
		timeout 60 fi_pingpong -p mrail -e rdm -m "$mode" -B $port -I 10 \
			-S all -c >"$T/srv" 2>&1 & srv=$!
		sleep 0.5
		timeout 60 fi_pingpong -p mrail -e rdm -m "$mode" -P $port -I 10 \
			-S all -c 127.0.0.1 >"$T/cli" 2>&1; rc=$?
		wait $srv; src=$?
		grep -q "Address already in use" "$T/srv" || break
		echo "port $port in use (try $try): another"
	done
	cat "$T/cli"
	[ $rc -eq 0 ] && [ $src -eq 0 ] || { echo "--- server:"; cat "$T/srv"; echo "FAIL: client $rc server $src"; exit 1; }
	# All sizes up to 4 MiB, data checked (-c).
	grep -q "^4m " "$T/cli" || { echo "FAIL: no 4m line"; exit 1; }
	echo "fi_pingpong $mode OK"
	;;
*) echo "unknown $WHAT"; exit 2 ;;
esac
