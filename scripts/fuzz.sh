#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, clang, ASan+UBSan) in their
# own build dir and runs each for SECONDS (default 60) on a copy of its seed
# corpus, leaks detected. Ends with one line per harness:
#   fuzz <name>: <execs> execs in <s> s (<c> s CPU), <n> crash(es)
# and exits non-zero if any harness crashed, leaked or did not build.
# Crash inputs are left in $FUZZ_DIR/artifacts/<name>/ (add a reproducer
# to tests/fuzz/corpus/<name>/ once the bug is fixed).
#   FUZZ_BUILD  build dir (default build-fuzz)
#   FUZZ_DIR    work dir for corpora, logs, artifacts (default $FUZZ_BUILD/run)
#   FUZZ_JOBS   harnesses run at once (default 1)
#   FUZZ_ONLY   space-separated harness names (default all)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${FUZZ_BUILD:-build-fuzz}
work=${FUZZ_DIR:-$build/run}
jobs=${FUZZ_JOBS:-1}
all="wire address kvs_proto kvs_server profile hosts env tcp_frame fake_frame engine sdn"
names=${FUZZ_ONLY:-$all}

if ! command -v clang >/dev/null; then
  echo "fuzz.sh: clang not found (apt-get install -y clang libclang-rt-14-dev)" >&2
  for n in $names; do echo "fuzz $n: not built, 1 crash(es)"; done
  exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" -Dfuzz=true -Db_lundef=false -Dwerror=true \
    --buildtype=debugoptimized >"$build.setup.log" 2>&1 ||
    { cat "$build.setup.log"; exit 1; }
fi
targets=()
for n in $names; do targets+=("tests/fuzz/fuzz_$n"); done
ninja -C "$build" "${targets[@]}" || {
  for n in $names; do echo "fuzz $n: not built, 1 crash(es)"; done
  exit 1
}

run_one() { # name
  local n=$1 dir=$work/$1
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp tests/fuzz/corpus/"$n"/* "$dir/corpus/" 2>/dev/null
  # CPU seconds (user + system), when GNU time is there.
  local timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -o "$dir/cpu" -f %U+%S)
  # -close_fd_mask=3: the code's own log lines would drown the output;
  # sanitizer reports still reach the log.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "${timer[@]}" "$build/tests/fuzz/fuzz_$n" -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=2048 -max_len=65536 -detect_leaks=1 -close_fd_mask=3 \
      -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
      "$dir/corpus" >"$dir/log" 2>&1
  echo $? >"$dir/rc"
}

running=0
for n in $names; do
  run_one "$n" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0
for n in $names; do
  dir=$work/$n
  rc=$(cat "$dir/rc" 2>/dev/null || echo 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log" | tail -1)
  crashes=$(find "$dir/artifacts" -type f | wc -l)
  if [ "$rc" != 0 ] && [ "$crashes" = 0 ]; then crashes=1; fi
  [ "$crashes" != 0 ] && { failed=1; grep -m5 -E "ERROR|SUMMARY|runtime error|invariant" "$dir/log"; }
  cpu=$(python3 -c "print(round($(cat "$dir/cpu" 2>/dev/null || echo 0)))" 2>/dev/null)
  echo "fuzz $n: ${execs:-0} execs in ${secs:-?} s (${cpu:-?} s CPU), $crashes crash(es)"
done
exit $failed
