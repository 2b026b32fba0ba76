#!/bin/bash
# The "pmix" bootstrap under Open MPI's mpirun; one meson test per case.
# usage: pmix_test.sh CASE MPIRUN TEST_ALLTOALL PMIX_RANK PMIX_FAIL MRAIL_RUN
# Exits 77 (skipped) when MPIRUN is "none" or not Open MPI's.
set -u
CASE=$1 MPIRUN=$2 A2A=$3 PRANK=$4 PFAIL=$5 MRUN=$6
[ "$MPIRUN" != none ] && [ -x "$MPIRUN" ] || { echo "no mpirun: skipped"; exit 77; }
"$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI' ||
	{ echo "mpirun is not Open MPI's: skipped"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-pmix-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
# Session directories of our own: concurrent mpiruns racing to create
# /tmp/ompi.HOST.UID fail ("File exists").
export TMPDIR=$T
# Root in containers and CI; more ranks than cores; no pinning to cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI_OPTS=(--oversubscribe --bind-to none)

fail() {
	echo "FAIL [$CASE]: $*" >&2
	for f in out err; do
		[ -s "$T/$f" ] && { echo "--- $f:" >&2; cat "$T/$f" >&2; }
	done
	exit 1
}

# mpi N ARGS...: mpirun with a safety net; sets RC and SECS.
mpi() {
	local n=$1 t0=$SECONDS
	shift
	timeout -k 5 50 "$MPIRUN" "${MPI_OPTS[@]}" -n "$n" "$@" \
		>"$T/out" 2>"$T/err" </dev/null
	RC=$?
	SECS=$((SECONDS - t0))
}

expect_rc() { [ "$RC" -eq "$1" ] || fail "exit status $RC, expected $1"; }
expect_err() { grep -Eq -- "$1" "$T/err" || fail "stderr lacks /$1/"; }
expect_out() { grep -Eq -- "$1" "$T/out" || fail "stdout lacks /$1/"; }
expect_count() { # FILE PATTERN N
	local c
	c=$(grep -Ec -- "$2" "$T/$1")
	[ "$c" -eq "$3" ] || fail "$1: $c lines match /$2/, expected $3"
}

# Every rank of an N-rank job logged that it bootstrapped through PMIx.
expect_pmix_ranks() {
	local n=$1 r
	for ((r = 0; r < n; r++)); do
		expect_err "info: bootstrap: pmix: rank $r of $n \(local $r of $n\)"
	done
}

alive() {
	local st
	st=$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

case $CASE in
alltoall-np2)
	MRAIL_LOG_LEVEL=info mpi 2 "$A2A"
	expect_rc 0
	expect_out '^test_alltoall: 2 ranks, all messages verified'
	expect_pmix_ranks 2
	;;
alltoall-np4-3rails)
	MRAIL_LOG_LEVEL=info MRAIL_TCP_LOOPBACK_RAILS=3 \
		MRAIL_STRATEGY=iso:chunks=2 mpi 4 "$A2A"
	expect_rc 0
	expect_out '^test_alltoall: 4 ranks, all messages verified'
	expect_pmix_ranks 4
	expect_count err 'info: connected to 4 ranks' 4
	expect_count err 'info: rank [0-3]: 3 rail\(s\) up' 12
	;;
alltoall-np4-lazy)
	# Lazy connection under PMIx (docs/scale.md): rails connect at the
	# first message, both sides at once.
	MRAIL_CONNECT=lazy MRAIL_LOG_LEVEL=info MRAIL_TCP_LOOPBACK_RAILS=2 \
		mpi 4 "$A2A"
	expect_rc 0
	expect_out '^test_alltoall: 4 ranks, all messages verified'
	expect_count err 'info: connected to 4 ranks' 4
	expect_count err 'info: rank [0-3]: 2 rail\(s\) up' 12
	;;
semantics)
	# A stale MRAIL_KVS_ADDR must not take precedence over PMIx.
	MRAIL_KVS_ADDR=127.0.0.1:1 mpi 3 "$PRANK" semantics
	expect_rc 0
	expect_count out ': ok$' 3
	;;
fence-timeout)
	MRAIL_BOOTSTRAP_TIMEOUT=1 mpi 3 "$PRANK" fence-timeout
	expect_rc 0
	expect_count out 'fence timed out after' 2
	expect_err 'pmix bootstrap: rank [12]: PMIx_Fence failed: .*within 1 s'
	;;
failing-rank)
	# Rank 1 exits 3 after wire-up; mpirun must end the sleepers.
	PMIX_FAIL_DIR=$T mpi 3 "$PFAIL"
	[ "$RC" -ne 0 ] || fail "mpirun exited 0"
	[ "$RC" -ne 124 ] || fail "mpirun hung (killed by the test's timeout)"
	expect_rc 3
	[ "$SECS" -le 20 ] || fail "took ${SECS}s to end the job"
	expect_count out 'pmix_fail: rank [0-9] of 3 up' 3
	expect_err 'Exit code: +3'
	for f in "$T"/0.pid "$T"/2.pid; do
		[ -s "$f" ] || fail "no $f"
		pid=$(cat "$f")
		for i in $(seq 30); do alive "$pid" || break; sleep 0.1; done
		alive "$pid" && fail "rank pid $pid ($f) still running"
	done
	;;
nested-mrail-run)
	# mrail-run inside an mpirun job: its ranks must not take mpirun's
	# PMIx identity (mrail-run removes it) and bootstrap through its KVS.
	MRAIL_LOG_LEVEL=info mpi 1 "$MRUN" -n 2 "$A2A"
	expect_rc 0
	expect_out '^test_alltoall: 2 ranks, all messages verified'
	grep -q 'bootstrap: pmix' "$T/err" && fail "a rank of mrail-run used PMIx"
	true
	;;
init-error)
	# A PMIx environment whose server is gone: a clear error, no hang.
	t0=$SECONDS
	env PMIX_NAMESPACE=mrail-test PMIX_RANK=0 \
		PMIX_SERVER_URI41='1.0;tcp4://127.0.0.1:1' \
		PMIX_SERVER_URI4='1.0;tcp4://127.0.0.1:1' \
		MRAIL_BOOTSTRAP=1 timeout -k 5 40 "$PFAIL" >"$T/out" 2>"$T/err"
	RC=$? SECS=$((SECONDS - t0))
	[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] || fail "exit status $RC"
	expect_err 'pmix bootstrap: PMIx_Init failed'
	expect_err 'pmix_fail: engine: '
	;;
netns)
	# Two "hosts" that are network namespaces joined by a bridge: mpirun
	# reaches them through netns_rsh_agent.sh, mrail-run through --wrap.
	[ "$(id -u)" = 0 ] || { echo "skip: needs root (network namespaces)"; exit 77; }
	{ command -v ip >/dev/null && ip netns list >/dev/null 2>&1; } ||
		{ echo "skip: ip netns is not available"; exit 77; }
	P=mpx$$ NET=10.201.$(($$ % 250 + 1))
	cleanup() {
		ip netns del "$P-h0" 2>/dev/null
		ip netns del "$P-h1" 2>/dev/null
		ip link del "${P}br" 2>/dev/null
		rm -rf "$T"
	}
	trap cleanup EXIT
	{ ip link add "${P}br" type bridge && ip addr add "$NET.254/24" dev "${P}br" &&
		ip link set "${P}br" up; } || { echo "skip: cannot make a bridge"; exit 77; }
	for i in 0 1; do
		ip netns add "$P-h$i" &&
			ip link add "${P}v$i" type veth peer name eth0 netns "$P-h$i" &&
			ip link set "${P}v$i" master "${P}br" up &&
			ip -n "$P-h$i" addr add "$NET.$((i + 1))/24" dev eth0 &&
			ip -n "$P-h$i" link set eth0 up &&
			ip -n "$P-h$i" link set lo up || fail "namespace set-up"
	done
	AGENT=$(cd "$(dirname "$0")" && pwd)/netns_rsh_agent.sh
	mpi 4 --mca plm_rsh_agent "$AGENT" --host "$P-h0:2,$P-h1:2" \
		-x MRAIL_RAILS=eth0 -x MRAIL_LOG_LEVEL=info "$A2A"
	expect_rc 0
	expect_out '^test_alltoall: 4 ranks, all messages verified'
	expect_err 'bootstrap: pmix: rank 3 of 4 \(local 1 of 2\)'
	# The same job with mrail-run: its KVS listens on the bridge.
	timeout -k 5 50 "$MRUN" -n 4 --hosts "$P-h0,$P-h1" --bind "$NET.254" \
		--wrap 'ip netns exec {host}' -x MRAIL_RAILS=eth0 "$A2A" \
		>"$T/out" 2>"$T/err"
	RC=$?
	expect_rc 0
	expect_out '^test_alltoall: 4 ranks, all messages verified'
	;;
*)
	fail "unknown case"
	;;
esac
exit 0
