#!/bin/bash
# One tests/mpi program under MPICH built with ch4:ofi
# (scripts/build-mpich-ofi.sh; Debian's MPICH is ch4:ucx and cannot load a
# libfabric provider), compiled here with that MPICH's mpicc.
# usage: mpich_test.sh STACK NP SOURCE [ARGS...]
#   STACK: mpich-ofi-mrail (FI_PROVIDER=mrail, FI_PROVIDER_PATH from the
#   environment) | mpich-ofi (MPICH's own choice of provider: proves the
#   program under this MPICH). SOURCE "abort:PATH.c" expects the job to be
#   aborted. Exits 77 (skipped) when the MPICH (MPICH_OFI_PREFIX, default
#   /opt/mpich-ofi) is not installed.
set -u
STACK=$1 NP=$2 SRC=$3
shift 3
M=${MPICH_OFI_PREFIX:-/opt/mpich-ofi}
[ -x "$M/bin/mpiexec" ] && [ -x "$M/bin/mpicc" ] ||
	{ echo "no MPICH ch4:ofi in $M (scripts/build-mpich-ofi.sh): skipped"; exit 77; }
ABORT=0
case $SRC in abort:*) ABORT=1 SRC=${SRC#abort:} ;; esac
# MPICH 4.0.x writes MPI_SUCCESS into MPI_ERROR in MPI_Sendrecv_replace
# (the standard leaves it alone): tests/mpi/mpi_status.c tolerates exactly
# that under this variable, on these stacks only (not MRAIL_*: libmrail
# warns about MRAIL_ variables it does not know).
export MPITEST_MPICH_SENDRECV_REPLACE=1
# Both stacks keep every rank on the netmod (libfabric): by default MPICH
# carries traffic between ranks of one host over its own posix shared
# memory, and the provider under test would move nothing but MPI_Init.
export MPIR_CVAR_NOLOCAL=1
case $STACK in
mpich-ofi-mrail) ENV=(FI_PROVIDER=mrail "FI_PROVIDER_PATH=${FI_PROVIDER_PATH:?}") ;;
mpich-ofi) ENV=() ;;
*) echo "unknown stack $STACK"; exit 2 ;;
esac
T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-mpich-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
show_err() { echo "--- stderr:"; tail -60 "$T/err"; }
"$M/bin/mpicc" -O1 -pthread -I"$(dirname "$SRC")" "$SRC" -o "$T/prog" 2>"$T/err" ||
	{ echo "FAIL: $M/bin/mpicc could not build $SRC"; show_err; exit 1; }
env "${ENV[@]}" timeout -k 5 120 "$M/bin/mpiexec" -n "$NP" "$T/prog" "$@" \
	>"$T/out" 2>"$T/err" </dev/null
RC=$?
cat "$T/out"
if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then
	echo "FAIL: the job hung (killed after 120 s)"; show_err; exit 1
fi
if [ $ABORT = 1 ]; then
	[ $RC -ne 0 ] || { echo "FAIL: aborted job exited 0"; show_err; exit 1; }
	echo "abort reported by mpiexec (exit $RC)"
	exit 0
fi
[ $RC -eq 0 ] || { echo "FAIL: exit status $RC"; show_err; exit 1; }
grep -q "processes OK" "$T/out" || { echo "FAIL: no OK line"; show_err; exit 1; }
