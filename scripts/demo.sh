#!/usr/bin/env bash
# The main job: install dependencies, build, and run the two-rail demo
# (two processes exchanging large messages split over two TCP rails on
# loopback; the namespaced multi-NIC test bed comes with the real-rails
# work). Prints per-rail bytes and bandwidth.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
export MRAIL_TCP_LOOPBACK_RAILS="${MRAIL_TCP_LOOPBACK_RAILS:-2}"
export MRAIL_STRATEGY="${MRAIL_STRATEGY:-iso}"
echo "mrail-demo: ${MRAIL_TCP_LOOPBACK_RAILS} loopback rails, strategy ${MRAIL_STRATEGY}"
exec build/launcher/mrail-run -n 2 build/bench/mrail-demo "$@"
