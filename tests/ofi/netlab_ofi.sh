#!/usr/bin/env bash
# The ofi driver across two namespaced hosts (bench/netlab, docs/netlab.md):
#   two-ofi  two ofi rails (tcp;ofi_rxm, one endpoint bound per interface)
#   tcp+ofi  one TCP rail (r0) and one ofi rail (r1) to the same peer
# Both run the rendezvous test (tests/engine/test_rma.c: 0 B..64 MiB both
# ways, contiguous and scattered, every byte checked) and then require,
# from the kernel's interface byte counters in each namespace, that both
# rails carried traffic. Needs root and the tcp;ofi_rxm provider: exits 77
# without them.
#   netlab_ofi.sh CASE NETLAB MRAIL_RUN TEST_RMA
set -uo pipefail
case=$1 netlab=$2 mrail_run=$3 test_rma=$4
[ "$(id -u)" -eq 0 ] || { echo "skip: netlab needs root (network namespaces)"; exit 77; }
command -v fi_info >/dev/null && fi_info -p 'tcp;ofi_rxm' -t FI_EP_RDM >/dev/null 2>&1 ||
	{ echo "skip: no tcp;ofi_rxm provider (libfabric)"; exit 77; }
prefix="of$$"
fail() { echo "FAIL ($case): $*"; exit 1; }

NETLAB_TEST=1 "$netlab" up --hosts 2 --rails 1000mbit,400mbit --prefix "$prefix" \
	--base auto >/tmp/$prefix.up 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat /tmp/$prefix.up; rm -f /tmp/$prefix.up; exit $rc; fi
tmp=$(mktemp -d)
trap '"$netlab" down --prefix "$prefix" >/dev/null 2>&1; rm -rf /tmp/$prefix.up "$tmp"' EXIT
h0_mgmt=$("$netlab" addr --prefix "$prefix" h0 mgmt)
root_mgmt="${h0_mgmt%.*}.254"

bytes() { # HOST IFACE: rx + tx bytes inside the host's namespace
	ip netns exec "$prefix-h$1" cat /sys/class/net/$2/statistics/rx_bytes \
		/sys/class/net/$2/statistics/tx_bytes | awk '{s += $1} END {print s}'
}

case $case in
two-ofi)
	env=(-x MRAIL_DRIVERS=ofi
	     -x MRAIL_DRIVER_PARAMS=ofi:provider=tcp+ofi_rxm,domains=r0+r1
	     -x MRAIL_RAILS=ofi:r0,ofi:r1 -x TEST_RMA_MIXED=0) ;;
tcp+ofi)
	env=(-x MRAIL_DRIVERS=tcp,ofi
	     -x MRAIL_DRIVER_PARAMS=ofi:provider=tcp+ofi_rxm,domains=r1
	     -x MRAIL_RAILS=tcp:r0,ofi:r1 -x TEST_RMA_MIXED=1) ;;
*) fail "unknown case" ;;
esac

declare -A before
for h in 0 1; do for r in r0 r1; do before[$h$r]=$(bytes $h $r); done; done
"$mrail_run" -n 2 --hosts "$prefix-h0,$prefix-h1" --wrap 'ip netns exec {host}' \
	--bind "$root_mgmt" --timeout 120 "${env[@]}" \
	-x MRAIL_STRATEGY=iso:chunks=4 -x MRAIL_LOG_LEVEL=info "$test_rma" >"$tmp/out" 2>&1
rc=$?
grep -E "test_rma|rail [0-9]|error|FAIL" "$tmp/out" | sort | uniq | head -40
[ $rc -eq 0 ] || { tail -20 "$tmp/out"; fail "test_rma exited $rc"; }
[ "$(grep -c 'test_rma: rank [01] ok' "$tmp/out")" -eq 2 ] || fail "not every rank finished"
for h in 0 1; do
	for r in r0 r1; do
		d=$(($(bytes $h $r) - ${before[$h$r]}))
		echo "host h$h $r: $d bytes"
		# 2 x 2 x ~81 MiB leave each host; both rails take a good part.
		[ "$d" -gt $((16 << 20)) ] || fail "$r of h$h carried only $d bytes"
	done
done
echo "ofi over netlab ($case): both rails carried traffic, every byte checked"
