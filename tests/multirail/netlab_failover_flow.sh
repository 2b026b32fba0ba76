#!/usr/bin/env bash
# Failover with the default settings on netlab (docs/failover.md, "Tests"):
# 2 hosts, one rank each, one rail per RATE; the ranks stream
# LEN-byte messages (test_failover_flow) one way or both, and AT seconds
# into the stream, inside host HOST (the rank TEST_FAIL_RANK):
#   linkdown  `ip link set r1 down`, up again MRAIL_RAIL_TIMEOUT + 3 s later
#   flap      r1 down 1 s, up 1 s, five times
#   kill      `ss -K` on the host's rail-1 connection
# SIDE: what HOST's rank does: send (only it sends), recv (only its peer
# sends), both. Pass: every message intact, no wait for a completion
# longer than MRAIL_RAIL_TIMEOUT + 2 s (the documented bound), rail 1
# counts its failure (linkdown, kill) and no other rail fails, rail 1 is
# up again afterwards and carries payload. Nothing is tuned: the job's
# environment has neither MRAIL_RAIL_TIMEOUT nor MRAIL_DRIVER_PARAMS.
# Needs root (network namespaces): exits 77 without.
#   netlab_failover_flow.sh NETLAB MRAIL_RUN TEST_FLOW EVENT HOST SIDE LEN AT [RATES]
set -uo pipefail
netlab=$1 mrail_run=$2 prog=$3 event=$4 host=$5 side=$6 len=$7 at=$8
rates=${9:-400mbit,200mbit}
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 77; }
command -v ss >/dev/null || { echo "no ss: skipped"; exit 77; }
unset MRAIL_RAIL_TIMEOUT MRAIL_DRIVER_PARAMS MRAIL_TCP_SOCKBUF
name="$event host $host side $side len $len at $at s rails $rates"
fail() { echo "FAIL ($name): $*"; exit 1; }
timeout_s=5 # MRAIL_RAIL_TIMEOUT's default (util/rail_timeout.h)
max_gap=$((timeout_s + 2))
expect=1
case $event in
linkdown | kill) ;;
flap) expect="" ;;
*) fail "unknown event" ;;
esac
case $side in send | recv | both) ;; *) fail "unknown side" ;; esac
nrails=$(awk -F, '{print NF}' <<<"$rates")
prefix="ff$$"
other=$((1 - host))

NETLAB_TEST=1 "$netlab" up --hosts 2 --rails "$rates" --prefix "$prefix" \
  --base auto >/tmp/$prefix.up 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat /tmp/$prefix.up; rm -f /tmp/$prefix.up; exit $rc; fi
tmp=$(mktemp -d)
job=""
trap '[ -n "$job" ] && kill $job 2>/dev/null; "$netlab" down --prefix "$prefix" >/dev/null 2>&1; rm -rf /tmp/$prefix.up "$tmp"' EXIT
h0_mgmt=$("$netlab" addr --prefix "$prefix" h0 mgmt)
root_mgmt="${h0_mgmt%.*}.254"
rail_list=$(seq -s, -f "r%g" 0 $((nrails - 1)))
in_h() { ip netns exec "$prefix-h$host" "$@"; }

: >"$tmp/out"
"$mrail_run" -n 2 --hosts "$prefix-h0,$prefix-h1" --wrap 'ip netns exec {host}' \
  --bind "$root_mgmt" --timeout 150 \
  -x MRAIL_RAILS="$rail_list" -x TEST_FAIL_RANK="$host" -x TEST_FAIL_RAIL=1 \
  -x TEST_FAIL_IF=r1 -x TEST_FLOW_SIDE="$side" -x TEST_FLOW_LEN="$len" \
  -x TEST_FLOW_SECONDS=14 -x TEST_FLOW_MAX_GAP=$max_gap \
  ${expect:+-x TEST_EXPECT_FAILOVER=1} \
  ${TEST_FLOW_TIMELINE:+-x TEST_FLOW_TIMELINE=1} \
  ${MRAIL_LOG_LEVEL:+-x MRAIL_LOG_LEVEL="$MRAIL_LOG_LEVEL"} \
  "$prog" >"$tmp/out" 2>&1 &
job=$!
for _ in $(seq 600); do
  [ "$(grep -c streaming "$tmp/out")" = 2 ] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.1
done
[ "$(grep -c streaming "$tmp/out")" = 2 ] || { cat "$tmp/out"; fail "the job did not start"; }
sleep "$at"
case $event in
linkdown)
  in_h ip link set r1 down || fail "ip link set r1 down"
  echo "r1 down in h$host at $(date +%s.%N)"
  sleep $((timeout_s + 3))
  in_h ip link set r1 up || fail "ip link set r1 up"
  echo "r1 up in h$host at $(date +%s.%N)" ;;
flap)
  for _ in 1 2 3 4 5; do
    in_h ip link set r1 down || fail "ip link set r1 down"
    sleep 1
    in_h ip link set r1 up || fail "ip link set r1 up"
    sleep 1
  done
  echo "r1 flapped 5 x 1 s in h$host" ;;
kill)
  a=$("$netlab" addr --prefix "$prefix" "h$host" r1)
  b=$("$netlab" addr --prefix "$prefix" "h$other" r1)
  in_h ss -K src "$a" dst "$b" >"$tmp/ss" 2>&1 || { cat "$tmp/ss"; echo "ss -K refused: skipped"; exit 77; }
  cat "$tmp/ss"
  grep -qF "$b:" "$tmp/ss" ||
    { echo "ss -K killed no connection to $b (no INET_DIAG_DESTROY?): skipped"; exit 77; }
  echo "rail-1 connection killed in h$host at $(date +%s.%N)" ;;
esac
wait $job
rc=$?
job=""
grep -E "rank|warn|error|FAIL|check|mrail-run" "$tmp/out" | cut -c1-220 | head -40
# The engine's state, when the test printed it (a wait past the bound, a
# rail that came back and took next to nothing): whole.
if grep -qE "engine state:|the engine before:" "$tmp/out"; then
  echo "--- the job's whole output:"
  cat "$tmp/out"
fi
[ $rc -eq 0 ] || fail "job exit $rc"
[ "$(grep -c 'flow ok' "$tmp/out")" = 2 ] || fail "not both ranks ok"
gaps=$(sed -n 's/.*longest wait for a completion \([0-9.]*\) s.*/\1/p' "$tmp/out" | tr '\n' ' ')
echo "ok: $name: intact, longest waits ${gaps}s (bound $max_gap s)"
