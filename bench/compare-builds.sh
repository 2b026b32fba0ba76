#!/usr/bin/env bash
# Regression check between two revisions of libmrail, in one run:
#   bash bench/compare-builds.sh [OLD_REV] [NEW_REV] [ROUNDS]
# builds both (release-like, debugoptimized) in /tmp, then alternates
# `mrail-run -n 2 mrail-bench --pin` of old and new ROUNDS times (default 5)
# on one loopback rail, 8 B latency and 16 MiB bandwidth, and prints each
# round and the medians with the new/old ratio. NEW_REV defaults to the
# working tree, OLD_REV to HEAD~1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
old=${1:-HEAD~1}
new=${2:-WORKTREE}
rounds=${3:-5}
work=$(mktemp -d /tmp/mrail-compare.XXXXXX)
trap 'git -C "$top" worktree remove --force "$work/old-src" >/dev/null 2>&1 || true;
      [ "$new" = WORKTREE ] || git -C "$top" worktree remove --force "$work/new-src" >/dev/null 2>&1 || true;
      rm -rf "$work"' EXIT

build() { # src builddir
  meson setup "$2" "$1" --buildtype=debugoptimized -Dtest_drivers=false \
    >/dev/null 2>&1 || meson setup "$2" "$1" --buildtype=debugoptimized >/dev/null
  ninja -C "$2" launcher/mrail-run bench/mrail-bench >/dev/null
}

git -C "$top" worktree add -q --detach "$work/old-src" "$old"
build "$work/old-src" "$work/old"
if [ "$new" = WORKTREE ]; then
  build "$top" "$work/new"
else
  git -C "$top" worktree add -q --detach "$work/new-src" "$new"
  build "$work/new-src" "$work/new"
fi

# One figure from a CSV row: mode,size,...; the bench writes medians.
run() { # builddir mode size -> prints the engine median
  local csv="$work/out.csv"
  rm -f "$csv"
  "$1/launcher/mrail-run" -n 2 "$1/bench/mrail-bench" --pin --no-raw \
    --mode "$2" --min-size "$3" --max-size "$3" --reps 3 --csv "$csv" \
    >/dev/null 2>&1
  python3 - "$csv" "$2" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
key = "eng_lat_med_us" if sys.argv[2] == "lat" else "eng_bw_med_MBps"
for r in rows:
    if r.get(key):
        print(r[key]); break
PY
}

printf "%-6s %12s %12s %12s %12s\n" round "old 8B us" "new 8B us" "old 16M MB/s" "new 16M MB/s"
declare -a ol nl ob nb
for i in $(seq 1 "$rounds"); do
  ol+=("$(run "$work/old" lat 8)"); nl+=("$(run "$work/new" lat 8)")
  ob+=("$(run "$work/old" bw 16M)"); nb+=("$(run "$work/new" bw 16M)")
  printf "%-6s %12s %12s %12s %12s\n" "$i" "${ol[-1]}" "${nl[-1]}" "${ob[-1]}" "${nb[-1]}"
done
python3 - "${ol[*]}" "${nl[*]}" "${ob[*]}" "${nb[*]}" <<'PY'
import statistics as s, sys
ol, nl, ob, nb = ([float(x) for x in a.split()] for a in sys.argv[1:5])
print(f"median 8 B latency: old {s.median(ol):.2f} us, new {s.median(nl):.2f} us, new/old {s.median(nl)/s.median(ol):.3f}")
print(f"median 16 MiB bandwidth: old {s.median(ob):.0f} MB/s, new {s.median(nb):.0f} MB/s, new/old {s.median(nb)/s.median(ob):.3f}")
PY
