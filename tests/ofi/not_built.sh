#!/usr/bin/env bash
# A libmrail built without the ofi driver (-Dofi=disabled, or no
# libfabric-dev): asking for it fails engine creation with a message that
# says it is not built in and why.
#   not_built.sh MRAIL_RUN PROGRAM
set -u -o pipefail
out=$(MRAIL_DRIVERS=ofi timeout 60 "$1" -n 2 "$2" 2>&1)
rc=$?
echo "$out" | head -5
[ $rc -ne 0 ] || { echo "FAIL: MRAIL_DRIVERS=ofi worked in a build without it"; exit 1; }
grep -q "driver 'ofi' is not built into this libmrail: .*libfabric" <<<"$out" ||
	{ echo "FAIL: no 'not built into this libmrail' message"; exit 1; }
echo "ok: MRAIL_DRIVERS=ofi refused, saying the driver is not built in"
