#!/bin/bash
# bench/mpi/latency-budget.sh: where an 8 B message's time goes, counted
# rather than timed (so it holds on a loaded machine): user-space
# instructions per message under callgrind, mrail (tcp over lo) against
# UCX (tcp over lo), both ranks on this host; docs/anchors.md "The 8 B
# latency budget".
# usage (from the build dir; a release build gives the figures users see):
#   build-rel/bench/mpi/latency-budget.sh [OUTDIR]
# Two runs per stack (1000 and 3000 round trips of mpi-bench latency 8);
# the difference over 2000 round trips removes MPI_Init and finalize.
set -u -o pipefail
B=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$B/bench/mpi/latency-budget}
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	{ echo "needs valgrind (callgrind)"; exit 77; }
command -v mpirun >/dev/null || { echo "no mpirun (Open MPI)"; exit 77; }
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export TMPDIR=$T OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path=$B/mpi-binding/ompi:@SYS_MCA_DIR@
cat >"$T/cg.sh" <<'W'
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file="$CG_OUT.$OMPI_COMM_WORLD_RANK" "$@"
W
chmod +x "$T/cg.sh"
for stack in mrail ucx; do
	case $stack in
	mrail) M=(--mca pml cm --mca mtl mrail -x MRAIL_DRIVERS=tcp
		  -x MRAIL_TCP_LOOPBACK_RAILS=1) ;;
	ucx) M=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
		--mca osc ^ucx -x UCX_NET_DEVICES=lo -x UCX_TLS=tcp,self) ;;
	esac
	for it in 1000 3000; do
		timeout -k 5 1200 mpirun -n 2 --bind-to none "${M[@]}" \
			-x MPI_BENCH_ITERS=$it -x CG_OUT="$OUT/$stack.$it" "$T/cg.sh" \
			"$B/bench/mpi/mpi-bench" latency 8 $stack >"$OUT/$stack.$it.log" 2>&1 ||
			{ echo "$stack run failed (see $OUT/$stack.$it.log)"; exit 1; }
		callgrind_annotate --threshold=100 --inclusive=yes --tree=calling "$OUT/$stack.$it.0" \
			>"$OUT/$stack.$it.tree" 2>/dev/null
	done
done
echo "# latency-budget.sh $(date -u '+%Y-%m-%d %H:%M UTC'), build $B"
/usr/bin/python3 - "$OUT" <<'PY'
import re, sys
out = sys.argv[1]

def load(path):
    """function -> (inclusive Ir, calls from its callers) from a --tree=calling file."""
    incl, calls = {}, {}
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\*\s+\S*:(\S+) \[", line)
        if m:
            incl[m[2]] = int(m[1].replace(",", ""))
            continue
        m = re.match(r"\s*[\d,]+ \([^)]*\)\s+>\s+\S*:(\S+) \(([\d,]+)x\)", line)
        if m:
            calls[m[1]] = calls.get(m[1], 0) + int(m[2].replace(",", ""))
    return incl, calls

def per(stack, fn, by_calls=False):
    a, ac = load("%s/%s.1000.tree" % (out, stack))
    b, bc = load("%s/%s.3000.tree" % (out, stack))
    d = b.get(fn, 0) - a.get(fn, 0)
    if by_calls:
        n = bc.get(fn, 0) - ac.get(fn, 0)
        return d / n if n > 0 else float("nan")
    return d / 2000.0

rows = [
    ("MPI_Send of 8 B, inclusive, per message", "PMPI_Send", "PMPI_Send", False),
    ("one progress pass of the transport, per call", "mtl_mrail_progress", "ucp_worker_progress", True),
    ("mrail: engine send (mrail_isend_x), per message", "mrail_isend_x", None, False),
    ("mrail: tcp receive of a frame (tcp_rx_process), per call", "tcp_rx_process", None, True),
    ("mrail: engine frame upcall (up_recv_frame), per call", "up_recv_frame", None, True),
]
print("instructions (user space, rank 0), per message or call:")
print("| what | mrail | ucx |")
print("|---|---:|---:|")
for label, fm, fu, bc in rows:
    vm = per("mrail", fm, bc)
    vu = per("ucx", fu, bc) if fu else float("nan")
    print("| %s | %.0f | %s |" % (label, vm, "-" if vu != vu else "%.0f" % vu))
PY
