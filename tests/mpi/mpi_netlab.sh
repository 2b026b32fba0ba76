#!/bin/bash
# The MPI suite across hosts: a 2-host netlab (network namespaces) with two
# shaped rails (1000 + 400 Mbit/s); mpirun starts its daemons in the hosts
# through tests/pmix/netns_rsh_agent.sh. Each program runs once with
# pml cm + mtl mrail and once with pml ob1 + btl tcp (which proves the
# test), and the hosts' interface counters must show that both rails
# carried the job's traffic under each stack.
# usage: mpi_netlab.sh NETLAB MPIRUN MCA_DIR SYS_MCA_DIR AGENT P2P COLL
# Needs root (exits 77 without it, or without namespaces or Open MPI).
set -uo pipefail
NETLAB=$1 MPIRUN=$2 MCA_DIR=$3 SYS_MCA_DIR=$4 AGENT=$5 P2P=$6 COLL=$7
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces): skipped"; exit 77; }
[ -x "$MPIRUN" ] && "$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI' ||
	{ echo "no Open MPI mpirun: skipped"; exit 77; }

P=mn$$
T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-mpi-netlab.XXXXXX")
export NETLAB_PREFIX=$P
NETLAB_TEST=1 "$NETLAB" up --hosts 2 --rails 1000mbit,400mbit --base auto --cc cubic \
	>"$T/up" 2>&1
RC=$?
[ $RC -eq 0 ] || { cat "$T/up"; rm -rf "$T"; exit $RC; }
trap '"$NETLAB" down >/dev/null 2>&1; rm -rf "$T"' EXIT
# Own session directories (the agent gives each namespace one below it).
export TMPDIR=$T
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$MCA_DIR:$SYS_MCA_DIR"
MGMT=$("$NETLAB" addr h0 mgmt | sed -E 's/\.[0-9]+(\/[0-9]+)?$/.0\/24/')

fail() { echo "FAIL: $*"; for f in out err; do [ -s "$T/$f" ] &&
	{ echo "--- $f:"; tail -40 "$T/$f"; }; done; exit 1; }

bytes() { # HOST IFACE: tx + rx bytes
	"$NETLAB" exec "$1" cat /sys/class/net/$2/statistics/tx_bytes \
		/sys/class/net/$2/statistics/rx_bytes | awk '{s += $1} END {print s}'
}

run() { # STACK NP PROG [ARGS]
	local stack=$1 np=$2 prog=$3 per=$(( ($2 + 1) / 2 )) m
	shift 3
	case $stack in
	mrail) m=(--mca pml cm --mca mtl mrail --mca mtl_mrail_rails r0,r1) ;;
	# No vader: it fails in netlab's namespaces (Open MPI 4.1.4).
	ob1) m=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include r0,r1) ;;
	esac
	timeout -k 5 80 "$MPIRUN" --oversubscribe --bind-to none \
		--mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include "$MGMT" \
		--host "$P-h0:$per,$P-h1:$per" -n "$np" --map-by node \
		-x LD_LIBRARY_PATH "${m[@]}" "$prog" "$@" \
		>"$T/out" 2>"$T/err" </dev/null
	local rc=$?
	[ $rc -ne 124 ] && [ $rc -ne 137 ] ||
		fail "$stack $(basename "$prog") -n $np hung (killed after 80 s)"
	[ $rc -eq 0 ] || fail "$stack $(basename "$prog") -n $np: exit $rc"
	grep -q "processes OK" "$T/out" ||
		fail "$stack $(basename "$prog") -n $np: no OK line"
	echo "$stack: $(grep 'processes OK' "$T/out")"
}

for stack in mrail ob1; do
	b0=$(bytes h0 r0) b1=$(bytes h0 r1)
	run $stack 4 "$P2P"
	run $stack 3 "$COLL"
	d0=$(( $(bytes h0 r0) - b0 )) d1=$(( $(bytes h0 r1) - b1 ))
	echo "$stack: host h0 moved $d0 B on r0, $d1 B on r1"
	# The suite moves hundreds of MB; a rail with < 1 MB took no share.
	[ $d0 -gt 1000000 ] && [ $d1 -gt 1000000 ] ||
		fail "$stack: a rail carried no share of the traffic"
done
echo "mpi netlab: both stacks passed on 2 hosts x 2 rails"
