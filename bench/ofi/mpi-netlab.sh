#!/usr/bin/env bash
# In one run on a 2-host netlab with rails of 1000 + 400 Mbit/s: Open MPI's
# ofi MTL over the provider mrail (both rails, default settings otherwise)
# against the mrail MTL (both rails), the sum of the single rails (ob1 on
# r0 alone + ob1 on r1 alone), and, for 8 B latency, the ofi MTL over
# libfabric's 'tcp;ofi_rxm' on the fast rail. Streaming bandwidth (window
# of 16, bench/mpi/mpi-bench) at 4 and 8 MiB and 8 B ping-pong, ROUNDS
# interleaved rounds, medians. docs/provider.md "Performance".
#
#   sudo bench/ofi/mpi-netlab.sh BUILD_DIR [ROUNDS]     (root: netlab)
#
# Wrap it in flock /tmp/mrail-netlab.lock when others use netlab.
set -u -o pipefail
B=$(cd "${1:?usage: mpi-netlab.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "needs root (netlab)"; exit 77; }
NL=$B/bench/netlab/netlab
AGENT=$SRC/tests/pmix/netns_rsh_agent.sh
SYS=$(pkg-config --variable=libdir ompi)/openmpi3
P=pmb$$
export NETLAB_PREFIX=$P
export OMPI_MCA_mca_base_component_path=$B/mpi-binding/ompi:$SYS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FI_PROVIDER_PATH=$B/mpi-binding/libfabric
T=$(mktemp -d); export TMPDIR=$T
trap '"$NL" down >/dev/null 2>&1; rm -rf "$T"' EXIT
"$NL" up --hosts 2 --rails 1000mbit,400mbit --base auto --cc cubic >"$T/up" 2>&1 ||
	{ cat "$T/up"; exit 1; }
MGMT=$("$NL" addr h0 mgmt | sed -E 's/\.[0-9]+(\/[0-9]+)?$/.0\/24/')
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"

run() { # LABEL TEST MAX MCA...
	local label=$1 test=$2 max=$3
	shift 3
	timeout -k 5 600 mpirun --oversubscribe --bind-to none \
		--mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include "$MGMT" \
		--host "$P-h0:1,$P-h1:1" -n 2 --map-by node "$@" \
		"$B/bench/mpi/mpi-bench" "$test" "$max" "$label" 2>>"$T/err" |
		grep -v '^label' || echo "run $label $test failed" >&2
}
cfg() { # NAME -> MCA args in M
	case $1 in
	ob1-r0) M=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include r0) ;;
	ob1-r1) M=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include r1) ;;
	mtl-mrail) M=(--mca pml cm --mca mtl mrail --mca mtl_mrail_rails r0,r1) ;;
	ofi-mrail) M=(--mca pml cm --mca mtl ofi -x FI_PROVIDER=mrail
		      -x FI_PROVIDER_PATH -x MRAIL_RAILS=r0,r1) ;;
	ofi-rxm-r0) M=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_exclude shm
		       -x "FI_PROVIDER=tcp;ofi_rxm" -x FI_TCP_IFACE=r0) ;;
	esac
}
CSV=$T/all.csv
for ((r = 1; r <= ROUNDS; r++)); do
	for c in ob1-r0 ob1-r1 mtl-mrail ofi-mrail; do
		cfg $c
		run $c stream $((8 << 20)) "${M[@]}" >>"$CSV"
	done
	for c in ob1-r0 mtl-mrail ofi-mrail ofi-rxm-r0; do
		cfg $c
		run $c pingpong 8 "${M[@]}" >>"$CSV"
	done
done
cp "$CSV" "${MPI_NETLAB_CSV:-/tmp/mpi-netlab-$$.csv}"
python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
def med(label, test, size, col):
    v = [float(r[col]) for r in rows if len(r) >= 6 and r[0] == label and r[1] == test and int(r[3]) == size]
    return statistics.median(v) if v else float('nan')
print("%-12s %14s %14s %12s" % ("config", "4 MiB MB/s", "8 MiB MB/s", "8 B us"))
for c in ["ob1-r0", "ob1-r1", "mtl-mrail", "ofi-mrail", "ofi-rxm-r0"]:
    print("%-12s %14.1f %14.1f %12.1f" % (c, med(c, "stream", 4 << 20, 5), med(c, "stream", 8 << 20, 5), med(c, "pingpong", 8, 4)))
for s in (4 << 20, 8 << 20):
    tot = med("ob1-r0", "stream", s, 5) + med("ob1-r1", "stream", s, 5)
    o = med("ofi-mrail", "stream", s, 5); m = med("mtl-mrail", "stream", s, 5)
    print("%d MiB: ofi-mrail / sum of rails %.3f (target >= 0.95), ofi-mrail / mtl-mrail %.3f (target >= 0.95)" % (s >> 20, o / tot, o / m))
print("8 B: ofi-mrail / ofi-rxm-r0 latency %.3f (target <= 1.10)" % (med("ofi-mrail", "pingpong", 8, 4) / med("ofi-rxm-r0", "pingpong", 8, 4)))
PY
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
