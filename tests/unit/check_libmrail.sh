#!/bin/bash
# Checks on the layout of libmrail/ (docs/architecture.md):
#   doc   every .c and .h file of libmrail/ is named in docs/architecture.md
#   lock  only api*.c, threads.c (which defines it), progress.c (the
#         progress thread loop), request.c (callback running) and
#         offload/worker.c (offload workers) call
#         engine_lock()/engine_unlock()
# Usage: check_libmrail.sh doc|lock SOURCE_ROOT
set -u
mode=${1:?usage: check_libmrail.sh doc|lock SOURCE_ROOT}
root=${2:?usage: check_libmrail.sh doc|lock SOURCE_ROOT}
doc="$root/docs/architecture.md"
fail=0

case $mode in
doc)
	if [ ! -r "$doc" ]; then
		echo "cannot read $doc"
		exit 1
	fi
	n=0
	for f in "$root"/libmrail/*.c "$root"/libmrail/*.h; do
		[ -e "$f" ] || continue
		name=${f##*/}
		n=$((n + 1))
		# The name as a word: "rail.c" must not be found inside "api_rail.c".
		if ! grep -qE "(^|[^A-Za-z0-9_.])${name//./\\.}([^A-Za-z0-9_]|$)" "$doc"; then
			echo "libmrail/$name is not named in docs/architecture.md"
			fail=1
		fi
	done
	if [ "$n" -eq 0 ]; then
		echo "no source files found in $root/libmrail"
		exit 1
	fi
	[ $fail -eq 0 ] && echo "all $n files of libmrail/ are in docs/architecture.md"
	;;
lock)
	for f in "$root"/libmrail/*.c "$root"/libmrail/offload/*.c; do
		name=${f#"$root"/libmrail/}
		case $name in
		api*.c | threads.c | progress.c | request.c | offload/worker.c) continue ;;
		esac
		if grep -nE '\bengine_(un)?lock\(' "$f"; then
			echo "libmrail/$name takes the engine lock: only api*.c may" \
			     "(docs/architecture.md, \"Locking rule\")"
			fail=1
		fi
	done
	[ $fail -eq 0 ] && echo "only api*.c, progress.c and request.c take the engine lock"
	;;
*)
	echo "unknown check '$mode' (doc or lock)"
	exit 2
	;;
esac
exit $fail
