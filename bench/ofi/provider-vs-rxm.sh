#!/usr/bin/env bash
# In one run, interleaved rounds: Debian's fi_pingpong over the provider
# mrail (mpi-binding/libfabric, one loopback rail, default settings)
# against fi_pingpong over libfabric's own 'tcp;ofi_rxm', on loopback:
# 8 B latency and 4 MiB bandwidth, medians over the rounds and the ratios
# against the targets (latency within 2 us, bandwidth >= 90 %).
# docs/provider.md, "Performance".
#
#   bench/ofi/provider-vs-rxm.sh BUILD_DIR [ROUNDS]
#
# fi_pingpong's usec/xfer and MB/sec are per one-way transfer (half a
# round trip). Both sides spin on their CQ: on a loaded 2-core machine the
# absolute figures depend on the load, the ratios less so.
# Exit 77 when fi_pingpong is missing.
set -u -o pipefail
BUILD=$(cd "${1:?usage: provider-vs-rxm.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-5}
command -v fi_pingpong >/dev/null || { echo "no fi_pingpong (libfabric-bin)"; exit 77; }
export FI_PROVIDER_PATH=$BUILD/mpi-binding/libfabric
[ -f "$FI_PROVIDER_PATH/libmrail-fi.so" ] || { echo "provider not built"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

# one PROVIDER SIZE ITERS -> "usec MB/s" of the client's line
one() {
	local port=$((20000 + RANDOM % 20000))
	timeout 120 fi_pingpong -p "$1" -e rdm -m tagged -B $port -I "$3" -S "$2" \
		>"$T/s" 2>&1 &
	local srv=$!
	sleep 0.3
	timeout 120 fi_pingpong -p "$1" -e rdm -m tagged -P $port -I "$3" -S "$2" \
		127.0.0.1 >"$T/c" 2>&1
	wait $srv
	awk 'NR == 2 { print $7, $6 }' "$T/c"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

for r in $(seq "$ROUNDS"); do
	for p in mrail 'tcp;ofi_rxm'; do
		read -r lat _ < <(one "$p" 8 20000)
		read -r _ bw < <(one "$p" 4194304 100)
		echo "$p $lat $bw" >>"$T/all"
		echo "round $r $p: 8 B ${lat} us, 4 MiB ${bw} MB/s"
	done
done
ml=$(awk '$1 == "mrail" { print $2 }' "$T/all" | median)
mb=$(awk '$1 == "mrail" { print $3 }' "$T/all" | median)
rl=$(awk '$1 != "mrail" { print $2 }' "$T/all" | median)
rb=$(awk '$1 != "mrail" { print $3 }' "$T/all" | median)
echo
printf "%-14s %12s %14s\n" provider "8 B lat us" "4 MiB MB/s"
printf "%-14s %12s %14s\n" mrail "$ml" "$mb"
printf "%-14s %12s %14s\n" "tcp;ofi_rxm" "$rl" "$rb"
awk -v ml="$ml" -v rl="$rl" -v mb="$mb" -v rb="$rb" 'BEGIN {
	printf "latency difference %+.2f us (target <= +2), bandwidth ratio %.3f (target >= 0.90), medians of %d rounds\n", ml - rl, mb / rb, '"$ROUNDS"' }'
