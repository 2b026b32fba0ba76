#!/usr/bin/env bash
# Only mrail_-prefixed symbols are visible to a program that links libmrail:
# the global symbols defined by the installed-style archive and the dynamic
# symbols defined by the shared library. Lists every other one and fails.
# Args: nm, libmrail.a, libmrail.so
set -euo pipefail
nm=$1 archive=$2 shared=$3
status=0
check() { # what, nm arguments...
  local what=$1; shift
  local all bad
  all=$("$nm" "$@" | awk 'NF >= 3 {print $3}')
  [ -n "$all" ] || { echo "$what: no symbols at all (wrong file?)"; status=1; return; }
  bad=$(grep -v '^mrail_' <<<"$all" || true)
  if [ -n "$bad" ]; then
    echo "$what: $(wc -l <<<"$bad") symbols without the mrail_ prefix:"
    sed 's/^/  /' <<<"$bad"
    status=1
  else
    echo "$what: $(wc -l <<<"$all") symbols, all mrail_"
  fi
}
check "$archive" -g --defined-only "$archive"
check "$shared" -D --defined-only "$shared"
exit $status
