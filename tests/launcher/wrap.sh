#!/bin/bash
# A stand-in for the commands mrail-run --wrap is meant for, in tests.
# usage: wrap.sh MODE HOST RANK CMD [ARGS...]
#   exec   exec CMD (like ip netns exec: same pid, environment kept)
#   fork   run CMD as a child, exit with its status (pid changes)
#   clean  exec CMD with nothing of our environment but PATH (so the
#          rank's variables must come on the command line, via {env})
#   shell  like ssh: join CMD ARGS with spaces and have a shell with a
#          clean environment parse the result (words need quoting)
# First logs "wrap host=HOST rank=RANK pid=PID argv: CMD ARGS" (one
# argument per line after the first) to $WRAP_LOG, or stderr. CMD sees
# WRAP_HOST and WRAP_RANK (exec, fork).
set -u
mode=$1 host=$2 rank=$3
shift 3
{
	echo "wrap host=$host rank=$rank pid=$$ argc=$#"
	for a in "$@"; do printf '  arg: %s\n' "$a"; done
} >>"${WRAP_LOG:-/dev/stderr}"
export WRAP_HOST=$host WRAP_RANK=$rank
case $mode in
exec) exec "$@" ;;
fork) "$@"; exit $? ;;
clean) exec env -i PATH="$PATH" "$@" ;;
shell) exec env -i PATH="$PATH" /bin/sh -c "$*" ;;
*) echo "wrap.sh: unknown mode $mode" >&2; exit 99 ;;
esac
