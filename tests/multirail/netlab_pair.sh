#!/usr/bin/env bash
# An engine test with one rank on each of HOSTS netlab hosts (default 2),
# with the defaults only: ranks on different hosts talk over tcp on every
# net the hosts share, the unshaped management net included (this script
# sets no MRAIL_* variable; a test that wants only the shaped rails sets
# MRAIL_RAILS in its environment, which mrail-run passes on). Builds the test bed,
# runs the program (with ARGS) under mrail-run, removes the bed. Needs
# root (network namespaces): exits 77 without it.
#   netlab_pair.sh NETLAB MRAIL_RUN PROGRAM RATES [HOSTS [ARGS...]]
set -uo pipefail
netlab=$1 mrail_run=$2 prog=$3 rates=$4 hosts=${5:-2}
shift $(($# < 5 ? $# : 5))
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 77; }
prefix="np$$"
NETLAB_TEST=1 "$netlab" up --hosts "$hosts" --rails "$rates" --prefix "$prefix" \
  --base auto >/tmp/$prefix.up 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat /tmp/$prefix.up; rm -f /tmp/$prefix.up; exit $rc; fi
trap '"$netlab" down --prefix "$prefix" >/dev/null 2>&1; rm -f /tmp/$prefix.up' EXIT
# The root namespace's address on the management net hosts the KVS.
h0_mgmt=$("$netlab" addr --prefix "$prefix" h0 mgmt)
"$mrail_run" -n "$hosts" --hosts "$(seq -s, -f "$prefix-h%g" 0 $((hosts - 1)))" \
  --wrap 'ip netns exec {host}' --bind "${h0_mgmt%.*}.254" --timeout 240 \
  "$prog" "$@"
