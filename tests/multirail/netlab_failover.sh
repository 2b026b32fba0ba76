#!/usr/bin/env bash
# Rail failover across real (namespaced) hosts (docs/failover.md): HOSTS
# hosts (2), one rank each, one rail per RATE (1000mbit,400mbit); every
# rank streams MIB MiB (1024) each way with every other rank in 16 MiB
# messages, every one checked (test_failover stream). In the middle,
# inside host 1:
#   linkdown  `ip link set r1 down`, up again MRAIL_RAIL_TIMEOUT + 3 s later
#   kill      `ss -K` on host 1's rail-1 connections (one per peer)
#   alldown   every rail of host 1 down (test_failover stream-alldown;
#             2 hosts, the stream runs until it fails)
# linkdown, kill: every stream must complete intact; on every pair with
# host 1, both ranks count the failure and the reconnect of rail 1 (and
# no other rail fails, on any pair); rail 1 carries payload again with
# every peer of host 1 within 5 s of the link coming back (of the kill).
# alldown: both ranks' pending requests fail (MRAIL_ERR_PEER) within
# MRAIL_RAIL_TIMEOUT + 1.5 s of their last rail going down, and within
# 2 x MRAIL_RAIL_TIMEOUT + 6 s of the links going down (finding a dead rail
# takes up to the timeout + 1 s, then the gate waits the timeout for one
# to come back); new requests fail at once; both exit 0.
# Runs with the defaults: MRAIL_RAIL_TIMEOUT (5 s) and the TCP driver's
# parameters (user timeout = MRAIL_RAIL_TIMEOUT, keepalive 1 s) untouched.
# FAILOVER_DRIVER_PARAMS, FAILOVER_RAIL_TIMEOUT: knob variants only. Needs root (network namespaces): exits
# 77 without.
#   netlab_failover.sh NETLAB MRAIL_RUN TEST_FAILOVER CASE [MIB [HOSTS [RATES]]]
set -uo pipefail
netlab=$1 mrail_run=$2 prog=$3 case=$4 mib=${5:-1024} hosts=${6:-2}
rates=${7:-1000mbit,400mbit}
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 77; }
command -v ss >/dev/null || { echo "no ss: skipped"; exit 77; }
nrails=$(awk -F, '{print NF}' <<<"$rates")
fail() { echo "FAIL ($case, $hosts hosts): $*"; exit 1; }
case $case in
linkdown | kill) mode=stream ;;
alldown) mode=stream-alldown
  [ "$hosts" -eq 2 ] || fail "alldown takes 2 hosts" ;;
*) fail "unknown case" ;;
esac
[ "$hosts" -ge 2 ] && [ "$nrails" -ge 2 ] || fail "needs 2 hosts and 2 rails at least"
# The defaults (docs/failover.md): nothing tuned unless the caller sets
# FAILOVER_DRIVER_PARAMS / FAILOVER_RAIL_TIMEOUT (knob variants).
timeout_s=${FAILOVER_RAIL_TIMEOUT:-5} # util/rail_timeout.h's default
params=${FAILOVER_DRIVER_PARAMS:-}
unset MRAIL_RAIL_TIMEOUT MRAIL_DRIVER_PARAMS
prefix="fo$$"
start=$(date +%s.%N)

NETLAB_TEST=1 "$netlab" up --hosts "$hosts" --rails "$rates" --prefix "$prefix" \
  --base auto >/tmp/$prefix.up 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat /tmp/$prefix.up; rm -f /tmp/$prefix.up; exit $rc; fi
tmp=$(mktemp -d)
job=""
trap '[ -n "$job" ] && kill $job 2>/dev/null; "$netlab" down --prefix "$prefix" >/dev/null 2>&1; rm -rf /tmp/$prefix.up "$tmp"' EXIT
h0_mgmt=$("$netlab" addr --prefix "$prefix" h0 mgmt)
root_mgmt="${h0_mgmt%.*}.254"
host_list=$(seq -s, -f "$prefix-h%g" 0 $((hosts - 1)))
rail_list=$(seq -s, -f "r%g" 0 $((nrails - 1)))
in_h1() { ip netns exec "$prefix-h1" "$@"; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

"$mrail_run" -n "$hosts" --hosts "$host_list" --wrap 'ip netns exec {host}' \
  --bind "$root_mgmt" --timeout $([ $mode = stream ] && echo 280 || echo 150) \
  -x MRAIL_RAILS="$rail_list" \
  ${FAILOVER_RAIL_TIMEOUT:+-x MRAIL_RAIL_TIMEOUT=$timeout_s} \
  ${params:+-x MRAIL_DRIVER_PARAMS="$params"} \
  -x TEST_STREAM_MIB="$mib" -x TEST_FAIL_RANK=1 -x TEST_FAIL_RAIL=1 \
  -x TEST_FAIL_IF=r1 -x TEST_EXPECT_FAILOVER=1 \
  "$prog" $mode >"$tmp/out" 2>&1 &
job=$!
for _ in $(seq 600); do
  [ "$(grep -c streaming "$tmp/out")" = "$hosts" ] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.1
done
[ "$(grep -c streaming "$tmp/out")" = "$hosts" ] || { cat "$tmp/out"; fail "the job did not start"; }
sleep 2
case $case in
linkdown)
  in_h1 ip link set r1 down || fail "ip link set r1 down"
  echo "r1 down in h1 at $(date +%s.%N)"
  sleep $((${timeout_s%.*} + 3)) # found dead within the timeout + 2 s
  in_h1 ip link set r1 up || fail "ip link set r1 up"
  t_up=$(date +%s.%N)
  echo "r1 up in h1 at $t_up" ;;
kill)
  h1_r1=$("$netlab" addr --prefix "$prefix" h1 r1)
  in_h1 ss -K src "$h1_r1" >"$tmp/ss" 2>&1 || { cat "$tmp/ss"; echo "ss -K refused: skipped"; exit 77; }
  t_up=$(date +%s.%N)
  cat "$tmp/ss"
  for h in $(seq 0 $((hosts - 1))); do
    [ "$h" = 1 ] && continue
    a=$("$netlab" addr --prefix "$prefix" "h$h" r1)
    grep -qF "$a:" "$tmp/ss" ||
      { echo "ss -K killed no connection to $a (no INET_DIAG_DESTROY?): skipped"; exit 77; }
  done
  echo "rail-1 connections killed in h1 at $t_up" ;;
alldown)
  for r in $(seq 0 $((nrails - 1))); do
    in_h1 ip link set "r$r" down || fail "ip link set r$r down"
  done
  t_down=$(date +%s.%N)
  echo "every rail down in h1 at $t_down" ;;
esac
wait $job
rc=$?
job=""
grep -E "rank|warn|error|FAIL|check|mrail-run" "$tmp/out" | cut -c1-200 | head -60
[ $rc -eq 0 ] || fail "job exit $rc"
if [ $mode = stream ]; then
  [ "$(grep -c 'checksums ok' "$tmp/out")" = "$hosts" ] || fail "streams not intact on every rank"
  # Both ranks of each of host 1's pairs.
  pairs=$((2 * (hosts - 1)))
  [ "$(grep -c 'carries payload again' "$tmp/out")" = $pairs ] ||
    fail "rail 1 not used again on all $pairs sides of host 1's pairs"
  for t in $(sed -n 's/.*payload at \([0-9.]*\).*/\1/p' "$tmp/out"); do
    awk -v a="$t" -v b="$t_up" 'BEGIN { exit !(a - b <= 5) }' ||
      fail "rail 1 carried payload again $(since "$t" "$t_up") s after the link came back"
  done
  echo "ok: $case, $hosts hosts, $nrails rails: streams intact, failover counted," \
       "rail 1 back with payload within 5 s; $(since "$(date +%s.%N)" "$start") s"
else
  [ "$(grep -c 'alldown ok' "$tmp/out")" = "$hosts" ] || fail "not every rank saw its requests fail"
  for t in $(sed -n 's/.*alldown ok: failed at \([0-9.]*\).*/\1/p' "$tmp/out"); do
    awk -v a="$t" -v b="$t_down" -v m=$((2 * timeout_s + 6)) 'BEGIN { exit !(a - b <= m) }' ||
      fail "requests failed $(since "$t" "$t_down") s after the links went down"
    echo "requests failed $(since "$t" "$t_down") s after the links went down"
  done
  echo "ok: alldown, $hosts hosts, $nrails rails: requests failed in time, clean exit;" \
       "$(since "$(date +%s.%N)" "$start") s"
fi
