#!/usr/bin/env bash
# The test drivers (fake, the verbs test double) are not in the installed
# library and are in the build's test copy (libmrail-testdrivers); a
# program on the installed library that asks for the fake driver gets an
# error that says why.
# Args: libmrail.so libmrail.a libmrail-testdrivers.so with_verbs(0|1)
#       mrail-run app-linked-to-libmrail.so
set -euo pipefail
shared=$1 archive=$2 testlib=$3 verbs=$4 mrun=$5 app=$6
status=0
# Strings only the test drivers' code holds (log messages).
marks=("fake: socket send buffer is")
[ "$verbs" = 1 ] && marks+=("verbs double: malformed configuration")
for m in "${marks[@]}"; do
  for f in "$shared" "$archive"; do
    if grep -aqF "$m" "$f"; then
      echo "$f holds test driver code ('$m')"; status=1
    fi
  done
  grep -aqF "$m" "$testlib" || { echo "$testlib lacks '$m'"; status=1; }
done
err=$(mktemp)
trap 'rm -f "$err"' EXIT
if MRAIL_DRIVERS=fake "$mrun" -n 2 "$app" 2>"$err" >/dev/null; then
  echo "MRAIL_DRIVERS=fake worked with the installed library"; status=1
elif ! grep -q "driver 'fake' is not built into this libmrail: it is a test driver" "$err"; then
  echo "no clear error for MRAIL_DRIVERS=fake:"; cat "$err"; status=1
fi
[ $status = 0 ] && echo "installed library: no test drivers; test copy: has them"
exit $status
