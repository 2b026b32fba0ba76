#!/usr/bin/env bash
# Rail failover across real (namespaced) hosts (docs/failover.md): 2 hosts,
# 2 rails (1000 + 400 Mbit/s), a two-way stream of 16 MiB messages, every
# one checked (test_failover stream). In the middle, inside host 1:
#   linkdown  `ip link set r1 down`, up again 4 s later
#   kill      `ss -K` on the rail-1 connection
# The stream must complete intact on rail 0, both ranks' counters must
# show the failure, and rail 1 must carry payload again, within 5 s of the
# link coming back. Needs root (network namespaces): exits 77 without.
#   netlab_failover.sh NETLAB MRAIL_RUN TEST_FAILOVER CASE [MIB]
set -uo pipefail
netlab=$1 mrail_run=$2 prog=$3 case=$4 mib=${5:-1024}
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 77; }
command -v ss >/dev/null || { echo "no ss: skipped"; exit 77; }
prefix="fo$$"
fail() { echo "FAIL ($case): $*"; exit 1; }

NETLAB_TEST=1 "$netlab" up --hosts 2 --rails 1000mbit,400mbit --prefix "$prefix" \
  --base auto >/tmp/$prefix.up 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat /tmp/$prefix.up; rm -f /tmp/$prefix.up; exit $rc; fi
tmp=$(mktemp -d)
trap 'kill $job 2>/dev/null; "$netlab" down --prefix "$prefix" >/dev/null 2>&1; rm -rf /tmp/$prefix.up "$tmp"' EXIT
h0_mgmt=$("$netlab" addr --prefix "$prefix" h0 mgmt)
h0_r1=$("$netlab" addr --prefix "$prefix" h0 r1)
root_mgmt="${h0_mgmt%.*}.254"
in_h1() { ip netns exec "$prefix-h1" "$@"; }

"$mrail_run" -n 2 --hosts "$prefix-h0,$prefix-h1" --wrap 'ip netns exec {host}' \
  --bind "$root_mgmt" --timeout 300 \
  -x MRAIL_RAILS=r0,r1 -x MRAIL_RAIL_TIMEOUT=2 \
  -x MRAIL_DRIVER_PARAMS=tcp:user_timeout_ms=2000 \
  -x TEST_STREAM_MIB="$mib" -x TEST_FAIL_RAIL=1 -x TEST_EXPECT_FAILOVER=1 \
  "$prog" stream >"$tmp/out" 2>&1 &
job=$!
for _ in $(seq 600); do
  grep -q streaming "$tmp/out" && break
  kill -0 $job 2>/dev/null || break
  sleep 0.1
done
grep -q streaming "$tmp/out" || { cat "$tmp/out"; fail "the job did not start"; }
sleep 2
case $case in
linkdown)
  in_h1 ip link set r1 down || fail "ip link set r1 down"
  echo "r1 down in h1 at $(date +%s.%N)"
  sleep 4
  in_h1 ip link set r1 up || fail "ip link set r1 up"
  t_up=$(date +%s.%N)
  echo "r1 up in h1 at $t_up" ;;
kill)
  in_h1 ss -K dst "$h0_r1" >"$tmp/ss" 2>&1 || { cat "$tmp/ss"; echo "ss -K refused: skipped"; exit 77; }
  grep -q "$h0_r1" "$tmp/ss" || { cat "$tmp/ss"; echo "ss -K killed nothing (no INET_DIAG_DESTROY?): skipped"; exit 77; }
  t_up=$(date +%s.%N)
  echo "rail-1 connection killed in h1 at $t_up" ;;
*) fail "unknown case" ;;
esac
wait $job
rc=$?
grep -E "rank|warn|error|FAIL|check" "$tmp/out" | cut -c1-200 | head -40
[ $rc -eq 0 ] || fail "job exit $rc"
[ "$(grep -c 'checksums ok' "$tmp/out")" = 2 ] || fail "stream not intact on both ranks"
[ "$(grep -c 'carries payload again' "$tmp/out")" = 2 ] || fail "rail 1 not used again"
for t in $(sed -n 's/.*rail 1 up at \([0-9.]*\).*/\1/p' "$tmp/out"); do
  awk -v a="$t" -v b="$t_up" 'BEGIN { exit !(a - b <= 5) }' ||
    fail "rail 1 came back $(awk -v a="$t" -v b="$t_up" 'BEGIN { print a - b }') s after the link"
done
echo "ok: $case: stream intact, failover counted, rail 1 back within 5 s"
