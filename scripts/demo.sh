#!/usr/bin/env bash
# The main job: install dependencies, build, and run the two-rail demo.
# As root it builds the netlab test bed (2 hosts = network namespaces, 2
# rails shaped to 1000 and 400 Mbit/s) and runs one rank on each host;
# without root it falls back to two loopback rails on this host and says
# so. Prints per-rail interfaces, bytes, messages and bandwidth.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
export MRAIL_STRATEGY="${MRAIL_STRATEGY:-split}"

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "mrail-demo: not root, so no netlab test bed: 2 loopback rails on this host"
  export MRAIL_TCP_LOOPBACK_RAILS="${MRAIL_TCP_LOOPBACK_RAILS:-2}"
  exec build/launcher/mrail-run -n 2 build/bench/mrail-demo "$@"
fi

lab="demo$$"
netlab=bench/netlab/netlab
trap '"$netlab" down --prefix "$lab" >/dev/null 2>&1 || true' EXIT
"$netlab" up --hosts 2 --rails 1000mbit,400mbit --prefix "$lab" --base auto
mgmt=$("$netlab" addr --prefix "$lab" h0 mgmt)
echo "mrail-demo: rank 0 on $lab-h0, rank 1 on $lab-h1, rails r0 (1000 Mbit/s) and r1 (400 Mbit/s), strategy $MRAIL_STRATEGY"
build/launcher/mrail-run -n 2 --hosts "$lab-h0,$lab-h1" \
  --wrap 'ip netns exec {host}' --bind "${mgmt%.*}.254" \
  -x MRAIL_RAILS=r0,r1 build/bench/mrail-demo "$@"
"$netlab" status --prefix "$lab" | sed -n '/rail/,$p'
