#!/usr/bin/env bash
# Repeats netlab failover cases (tests/multirail/netlab_failover_flow.sh)
# ROUNDS times each, interleaved (round 1 of every case, then round 2...),
# optionally with HOGS busy loops competing for the CPUs, and prints per
# case: passes/runs and the longest wait for a completion seen (median and
# max over the runs). Each run holds /tmp/mrail-netlab.lock (shared test
# bed); the hogs only run while it is held, not while waiting for it (they
# would slow whoever holds it). Root only. Cases are "EVENT HOST SIDE LEN AT RATES" lines on stdin.
#   bench/failover-repeat.sh BUILD ROUNDS HOGS < cases
#   e.g. echo "linkdown 1 recv 16777216 2.5 400mbit,200mbit" |
#        bench/failover-repeat.sh build 20 3
set -uo pipefail
build=${1:?build dir} rounds=${2:-5} hogs=${3:-0}
src=$(cd "$(dirname "$0")/.." && pwd)
script=$src/tests/multirail/netlab_failover_flow.sh
mapfile -t cases
[ ${#cases[@]} -gt 0 ] || { echo "no cases on stdin"; exit 2; }
log=$(mktemp -d /tmp/fo-repeat.XXXXXX)
hog_pids=()
start_hogs() {
  for _ in $(seq "$hogs"); do
    (exec 9>&-; while :; do :; done) &
    hog_pids+=($!)
  done
}
stop_hogs() {
  for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null; done
  hog_pids=()
}
trap stop_hogs EXIT
exec 9>>/tmp/mrail-netlab.lock
echo "logs in $log; $hogs hog(s); ${#cases[@]} case(s) x $rounds round(s)"
for r in $(seq "$rounds"); do
  for i in "${!cases[@]}"; do
    # shellcheck disable=SC2086
    set -- ${cases[$i]}
    out="$log/c$i.r$r"
    flock 9
    start_hogs
    bash "$script" "$src/bench/netlab/netlab" \
      "$build/launcher/mrail-run" "$build/tests/engine/test_failover_flow" \
      "$@" >"$out" 2>&1 9>&-
    rc=$?
    stop_hogs
    flock -u 9
    echo "$rc" >"$out.rc"
    echo "round $r case $i (${cases[$i]}): rc $rc $(grep -o 'longest waits.*' "$out")"
  done
done
echo
printf '%-52s %7s %9s %9s\n' "case" "pass" "gap med" "gap max"
for i in "${!cases[@]}"; do
  pass=0 runs=0 skip=0
  gaps=()
  for r in $(seq "$rounds"); do
    rc=$(cat "$log/c$i.r$r.rc")
    if [ "$rc" = 77 ]; then skip=$((skip + 1)); continue; fi
    runs=$((runs + 1))
    [ "$rc" = 0 ] && pass=$((pass + 1))
    g=$(sed -n 's/.*longest waits \([0-9. ]*\) s.*/\1/p' "$log/c$i.r$r")
    for x in $g; do gaps+=("$x"); done
  done
  read -r med max < <(printf '%s\n' "${gaps[@]:-0}" | sort -g |
    awk '{a[NR]=$1} END {print a[int((NR+1)/2)], a[NR]}')
  printf '%-52s %3d/%-3d %9s %9s%s\n' "${cases[$i]}" "$pass" "$runs" "$med" \
    "$max" "$([ $skip -gt 0 ] && echo " ($skip skipped)")"
done
