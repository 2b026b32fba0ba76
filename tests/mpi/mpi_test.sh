#!/bin/bash
# Run one MPI test program under mpirun with one transport stack.
# usage: mpi_test.sh STACK NP MPIRUN MCA_DIR SYS_MCA_DIR PROG [ARGS...]
#   STACK: mrail (pml cm + mtl mrail) | mrail-ofi (the same on libmrail's
#   ofi driver, rail statistics printed: finalize must report no error,
#   and what the ranks sent must be what they received) | ob1 (pml ob1 +
#   btl self,tcp: proves the test itself) | ofi-mrail (pml cm + mtl ofi
#   over the libfabric provider mrail, tests/provider) | mpich-ofi-mrail
#   and mpich-ofi (MPICH ch4:ofi from scripts/build-mpich-ofi.sh over the
#   provider mrail, and over MPICH's own default provider:
#   tests/provider/mpich_test.sh,
#   PROG is then the program's source); PROG "abort:PATH"
#   expects the job to be aborted;
#   "recovery:PATH" runs it with --enable-recovery (a rank may die without
#   mpirun killing the others); "trace:PATH" runs it with MRAIL_TRACE set
#   and checks that every rank's chunk trace names world ranks
#   (docs/trace.md) and that bench/trace/mrail-trace.py reads the job's
#   traces.
# Exits 77 (skipped) without Open MPI's mpirun.
set -u
STACK=$1 NP=$2 MPIRUN=$3 MCA_DIR=$4 SYS_MCA_DIR=$5 PROG=$6
shift 6
case $STACK in
mpich-ofi*) exec bash "$(dirname "$0")/../provider/mpich_test.sh" "$STACK" "$NP" "$PROG" "$@" ;;
esac
[ -x "$MPIRUN" ] && "$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI' ||
	{ echo "no Open MPI mpirun: skipped"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-mpi-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
# Own session directory: concurrent mpiruns race on /tmp/ompi.HOST.UID.
export TMPDIR=$T
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$MCA_DIR:$SYS_MCA_DIR"
case $STACK in
mrail) MCA=(--mca pml cm --mca mtl mrail) ;;
mrail-ofi) MCA=(--mca pml cm --mca mtl mrail --mca mtl_mrail_drivers ofi
	--mca mtl_mrail_verbose 1) ;;
ob1) MCA=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo) ;;
# Open MPI's own ofi MTL over the libfabric provider mrail (tests/provider;
# FI_PROVIDER_PATH comes from the environment).
ofi-mrail) MCA=(--mca pml cm --mca mtl ofi -x FI_PROVIDER=mrail -x FI_PROVIDER_PATH) ;;
*) echo "unknown stack $STACK"; exit 2 ;;
esac
ABORT=0 TRACE=
case $PROG in
abort:*) ABORT=1 PROG=${PROG#abort:} ;;
recovery:*) MCA+=(--enable-recovery) PROG=${PROG#recovery:} ;;
trace:*) PROG=${PROG#trace:} TRACE=$T/trace/t
	mkdir -p "$T/trace"; MCA+=(-x MRAIL_TRACE="$TRACE") ;;
esac

timeout -k 5 120 "$MPIRUN" --oversubscribe --bind-to none -n "$NP" \
	"${MCA[@]}" "$PROG" "$@" >"$T/out" 2>"$T/err" </dev/null
RC=$?
cat "$T/out"
show_err() { echo "--- stderr:"; cat "$T/err"; }
if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then
	echo "FAIL: the job hung (killed after 120 s)"; show_err; exit 1
fi
if [ $ABORT = 1 ]; then
	[ $RC -ne 0 ] || { echo "FAIL: aborted job exited 0"; show_err; exit 1; }
	# mpirun's notice names the rank; Debian's ORTE 4.1.4 sometimes
	# loses its aggregated help text ("Data unpack would read past end of
	# buffer" in show_help.c) in either stack: then its error log line and
	# the non-zero exit are the report.
	grep -Eq "MPI_ABORT was invoked on rank $((NP - 1))|MPI_ERRORS_ARE_FATAL|ORTE_ERROR_LOG: .*show_help\.c" \
		"$T/err" ||
		{ echo "FAIL: mpirun did not report the abort"; show_err; exit 1; }
	echo "abort reported by mpirun (exit $RC)"
	exit 0
fi
[ $RC -eq 0 ] || { echo "FAIL: exit status $RC"; show_err; exit 1; }
grep -q "processes OK" "$T/out" || { echo "FAIL: no OK line"; show_err; exit 1; }
if [ "$STACK" = mrail-ofi ]; then
	if grep -E "mrail\[[0-9]+\] error:" "$T/out" "$T/err"; then
		echo "FAIL: an error reported"; show_err; exit 1
	fi
	# "...; sent X B in N msgs..., received Y B": the job's sums agree.
	cat "$T/out" "$T/err" | awk '/mtl mrail: peer .* sent [0-9]+ B/ {
		for (i = 1; i < NF; i++) {
			if ($i == "sent") tx += $(i + 1)
			if ($i == "received") rx += $(i + 1)
		}
		n++
	}
	END {
		printf "rail statistics: %d lines, sent %.0f B, received %.0f B\n", n, tx, rx
		exit !(n > 0 && tx == rx && tx > 0)
	}' || { echo "FAIL: rail statistics disagree"; show_err; exit 1; }
fi
[ -z "$TRACE" ] && exit 0
# Under the MTL each process's engine is a standalone one (Open MPI wires
# it up): its trace must still say which world rank wrote it and name its
# peers by world rank, or the files of one job cannot be lined up.
python3 - "$TRACE" "$NP" <<'PY' || { show_err; exit 1; }
import glob, re, sys
prefix, np_ = sys.argv[1], int(sys.argv[2])
kv = re.compile(r"(\w+)=(\S+)")
files = sorted(glob.glob(prefix + ".*"))
ranks, plans, bad = [], 0, []
for f in files:
    head = None
    for line in open(f):
        d = dict(kv.findall(line))
        if line.startswith("# mrail chunk trace"):
            head = d
            ranks.append(int(d["rank"]))
            if int(d["size"]) != np_:
                bad.append(f"{f}: size={d['size']}, the job has {np_}")
            continue
        if line.startswith("#") or not line.strip():
            continue
        if head is None:
            bad.append(f"{f}: an event before the header")
            break
        if line.split()[1] == "plan":
            plans += 1
        if d.get("rank") != head["rank"]:
            bad.append(f"{f}: event of rank {d.get('rank')} in rank {head['rank']}'s trace")
        p = int(d.get("peer", -1))
        if not 0 <= p < np_ or p == int(head["rank"]):
            bad.append(f"{f}: peer={p} is not another world rank")
if sorted(ranks) != list(range(np_)):
    bad.append(f"trace headers name ranks {sorted(ranks)}, the job is 0..{np_ - 1}")
if plans == 0:
    bad.append("no rendezvous plan traced")
for b in bad[:10]:
    print("FAIL:", b)
print(f"traces: {len(files)} files, ranks {sorted(ranks)}, {plans} plans")
sys.exit(1 if bad else 0)
PY
TOOL=$(dirname "$0")/../../bench/trace/mrail-trace.py
python3 "$TOOL" "$TRACE" >"$T/tool" 2>&1 ||
	{ echo "FAIL: mrail-trace.py on the job's traces:"; cat "$T/tool"; exit 1; }
echo "mrail-trace.py: $(wc -l <"$T/tool") lines"
