#!/bin/sh
# Open MPI "rsh agent" for hosts that are network namespaces of this
# machine: mpirun --mca plm_rsh_agent THIS --host ns0,ns1 ... runs its
# daemons with "ip netns exec NS" instead of ssh.
#   THIS [ssh options] HOST COMMAND...  ->  ip netns exec HOST sh -c 'COMMAND...'
# The command is written for a remote shell, so it is handed to one. Each
# namespace gets a TMPDIR of its own: all daemons see the same host name and
# /tmp and would otherwise share session directories, including the PMIx
# shared-memory store in them (ranks then miss each other's data, or the
# daemon crashes writing its topology).
while [ $# -gt 0 ]; do
	case $1 in
	-x | -t | -T | -tt | -n | -q) shift ;;
	-o | -p | -l | -i) shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: $0 [ssh options] NAMESPACE COMMAND..." >&2; exit 255; }
host=$1
shift
dir=${TMPDIR:-/tmp}/netns-$host
mkdir -p "$dir" || exit 255
exec ip netns exec "$host" env TMPDIR="$dir" /bin/sh -c "$*"
