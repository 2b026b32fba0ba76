#!/usr/bin/env bash
# mrail-sample end to end.
#   sample_test.sh loopback MRAIL_RUN MRAIL_SAMPLE MRAIL_BENCH MRAIL_PREDICT
#       two loopback rails: one profile per rail, readable by --show, then
#       loaded by the engine (mrail-bench shows each rail's model source);
#       corrupt profiles are reported and replaced by the fallback model.
#   sample_test.sh netlab MRAIL_RUN MRAIL_SAMPLE NETLAB
#       two rails shaped to 1000 and 400 Mbit/s between two namespaced
#       hosts (root only, else 77): each rail's asymptotic bandwidth is
#       not above its shaped rate and within 10 % of it (below: three
#       tries, then at least half), and the two profiles differ as the
#       rates do.
set -uo pipefail
mode=$1 mrun=$2 sample=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

if [ "$mode" = loopback ]; then
  bench=$4 predict=$5
  MRAIL_TCP_LOOPBACK_RAILS=2 "$mrun" -n 2 "$sample" --out "$tmp/p" \
    --max-size 1M --seconds 0.02 >"$tmp/out" 2>&1 || fail "mrail-sample failed"
  n=$(ls "$tmp/p"/*.profile | wc -l)
  [ "$n" -eq 2 ] || fail "$n profiles written, expected 2"
  for f in "$tmp/p"/*.profile; do
    "$sample" --show "$f" >"$tmp/show" || fail "--show $f"
    grep -q "^ *1048576 " "$tmp/show" || fail "--show lacks the 1 MiB row"
  done
  grep -q "threshold" "$tmp/out" || fail "no summary table"
  if command -v gnuplot >/dev/null; then # optional: gnuplot-nox
    "$sample" --show "$f" --plot "$tmp/plot.png" >/dev/null || fail "--plot"
    head -c 4 "$tmp/plot.png" | grep -q PNG || fail "--plot wrote no PNG"
  fi
  # The engine finds them again: its rails' models come from the profiles.
  MRAIL_PROFILE_DIR="$tmp/p" MRAIL_TCP_LOOPBACK_RAILS=2 "$mrun" -n 2 \
    "$bench" --mode lat --max-size 8 --iters 10 --warmup 2 --no-raw \
    >"$tmp/out" 2>&1 || fail "mrail-bench with the profiles failed"
  n=$(grep -c "model profile" "$tmp/out")
  [ "$n" -eq 2 ] || fail "$n rails use their profile, expected 2"
  # The accuracy benchmark runs on them (its verdict is timing: not
  # asserted here, only that it measured and compared every rail).
  MRAIL_PROFILE_DIR="$tmp/p" MRAIL_TCP_LOOPBACK_RAILS=2 "$mrun" -n 2 \
    "$predict" --sizes 4 --min-size 1024 --max-size 65536 --seconds 0.01 \
    >"$tmp/out" 2>&1
  rc=$?
  # 1 is the verdict "targets not met"; 2 and 3 are errors.
  [ $rc -le 1 ] || fail "mrail-predict exited $rc"
  n=$(grep -c "median |error|" "$tmp/out")
  [ "$n" -eq 2 ] || fail "mrail-predict compared $n rails, expected 2"
  # A corrupt profile is reported and the rail falls back, no crash.
  for f in "$tmp/p"/*.profile; do echo "garbage" >"$f"; done
  MRAIL_PROFILE_DIR="$tmp/p" MRAIL_TCP_LOOPBACK_RAILS=2 "$mrun" -n 2 \
    "$bench" --mode lat --max-size 8 --iters 10 --warmup 2 --no-raw \
    >"$tmp/out" 2>&1 || fail "mrail-bench with corrupt profiles failed"
  grep -q "profile not used" "$tmp/out" || fail "corrupt profile not reported"
  grep -q "model in-band\|model default\|model nominal" "$tmp/out" ||
    fail "no fallback model"
  echo "loopback: 2 profiles written, read back and used by the engine"
  exit 0
fi

netlab=$4
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 77; }
prefix="st$$"
NETLAB_TEST=1 "$netlab" up --hosts 2 --rails 1000mbit,400mbit --prefix "$prefix" \
  --base auto >"$tmp/up" 2>&1 || { rc=$?; cat "$tmp/up"; exit $rc; }
trap '"$netlab" down --prefix "$prefix" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
mgmt=$("$netlab" addr --prefix "$prefix" h0 mgmt)
sample_once() {
  t0=$SECONDS
  "$mrun" -n 2 --hosts "$prefix-h0,$prefix-h1" --wrap 'ip netns exec {host}' \
    --bind "${mgmt%.*}.254" -x MRAIL_RAILS=r0,r1 "$sample" --out "$tmp/p" \
    --max-size 16M --seconds 0.05 >"$tmp/out" 2>&1 || fail "mrail-sample failed"
  echo "sampled 2 rails in $((SECONDS - t0)) s"
  cat "$tmp/out"
  # Summary rows: rail driver local lat bw threshold
  bw0=$(awk '$1 == "0" && $3 ~ /^r0(@|$)/ {print $5}' "$tmp/out")
  bw1=$(awk '$1 == "1" && $3 ~ /^r1(@|$)/ {print $5}' "$tmp/out")
  [ -n "$bw0" ] && [ -n "$bw1" ] || fail "no summary rows for r0 and r1"
}
# Shaped rates in MB/s of payload: 1000 and 400 Mbit/s. Above the rate
# is a wrong measurement whatever the load; below it is what a busy
# machine does (CI runs this beside other tests on 2 CPUs), so up to
# three samplings, then only an order of magnitude is called wrong.
within() { awk -v b="$1" -v r="$2" 'BEGIN { exit !(b > 0.9 * r && b < 1.1 * r) }'; }
above() { awk -v b="$1" -v r="$2" 'BEGIN { exit !(b >= 1.1 * r) }'; }
for try in 1 2 3; do
  sample_once
  above "$bw0" 125 && fail "r0 bandwidth $bw0 MB/s above its shaped 125 MB/s"
  above "$bw1" 50 && fail "r1 bandwidth $bw1 MB/s above its shaped 50 MB/s"
  within "$bw0" 125 && within "$bw1" 50 && break
  echo "out of tolerance (r0 $bw0, r1 $bw1 MB/s, try $try): sampling again"
done
awk -v b="$bw0" 'BEGIN { exit !(b > 0.5 * 125) }' ||
  fail "r0 bandwidth $bw0 MB/s below half of 125 MB/s in 3 tries"
awk -v b="$bw1" 'BEGIN { exit !(b > 0.5 * 50) }' ||
  fail "r1 bandwidth $bw1 MB/s below half of 50 MB/s in 3 tries"
awk -v a="$bw0" -v b="$bw1" 'BEGIN { exit !(a > 1.5 * b) }' ||
  fail "r0/r1 bandwidth $bw0/$bw1: the 1000 Mbit/s rail is not clearly faster"
echo "netlab: r0 $bw0 MB/s (shaped 125), r1 $bw1 MB/s (shaped 50)"
