#!/bin/bash
# coll/sdn on one machine (no root): the patterns a real Open MPI job
# announces to mrail-sdnd (--dry-run), with their exact pairs, and the
# job's behaviour when the controller is missing or refuses it.
# usage: sdn_coll_test.sh CASE MPIRUN MCA_DIR COLL_DIR SYS_MCA_DIR LISTING1 SRCDIR
#   CASE: np4 | np3 | unreachable | refused | late-hello (rank 2's HELLO
#   reaches the controller after the component's reply timeout: that rank
#   alone says so, once, and the job runs)
# Exits 77 without Open MPI's mpirun or python3.
set -u
CASE=$1 MPIRUN=$2 MCA_DIR=$3 COLL_DIR=$4 SYS_MCA_DIR=$5 PROG=$6 SRC=$7
[ -x "$MPIRUN" ] && "$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI' ||
	{ echo "no Open MPI mpirun: skipped"; exit 77; }
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-sdn-coll.XXXXXX")
CTL_PID=
trap '[ -n "$CTL_PID" ] && kill $CTL_PID 2>/dev/null
	[ -n "${PROXY_PID:-}" ] && kill $PROXY_PID 2>/dev/null; rm -rf "$T"' EXIT
export TMPDIR=$T OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$MCA_DIR:$COLL_DIR:$SYS_MCA_DIR"
fail() {
	echo "FAIL [$CASE]: $*"
	for f in ctl.err out err; do
		[ -s "$T/$f" ] && { echo "--- $f"; tail -30 "$T/$f"; }
	done
	exit 1
}

# Every local interface is a host of a one-leaf topology (or, for
# "refused", none is).
{
	echo "version 1"
	echo "switch l1 leaf unix:$T/none.mgmt"
	port=1
	if [ "$CASE" != refused ]; then
		for a in /sys/class/net/*/address; do
			mac=$(cat "$a")
			[ "$mac" = 00:00:00:00:00:00 ] && continue
			echo "host if$port $mac l1:$port"
			port=$((port + 1))
		done
	fi
} >"$T/topo"
python3 "$SRC/mpi-binding/sdn/controller/mrail-sdnd" --dry-run \
	--listen 127.0.0.1:0 --ready-file "$T/port" --topology "$T/topo" \
	>"$T/flows" 2>"$T/ctl.err" &
CTL_PID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || fail "controller did not start"
ADDR=127.0.0.1:$(cat "$T/port")
[ "$CASE" = unreachable ] && ADDR=127.0.0.1:1
PROXY_PID=
if [ "$CASE" = late-hello ]; then
	# A proxy in front of the controller that holds rank 2's HELLO for
	# 6 s, past coll sdn's default reply timeout (5 s).
	python3 - "$ADDR" "$T/pport" <<'PY' 2>"$T/proxy.err" &
import socket, sys, threading, time
up_host, up_port = sys.argv[1].rsplit(":", 1)
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
open(sys.argv[2], "w").write(str(ls.getsockname()[1]))
def pump(src, dst, hold):
    buf = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if not hold:
                dst.sendall(data)
                continue
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if b" HELLO " in line and b" rank=2 " in line:
                    time.sleep(6)
                dst.sendall(line + b"\n")
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
while True:
    c, _ = ls.accept()
    u = socket.create_connection((up_host, int(up_port)))
    threading.Thread(target=pump, args=(c, u, True), daemon=True).start()
    threading.Thread(target=pump, args=(u, c, False), daemon=True).start()
PY
	PROXY_PID=$!
	for _ in $(seq 100); do [ -s "$T/pport" ] && break; sleep 0.1; done
	[ -s "$T/pport" ] || fail "proxy did not start"
	ADDR=127.0.0.1:$(cat "$T/pport")
fi

NP=4
[ "$CASE" = np3 ] && NP=3
timeout -k 5 100 "$MPIRUN" --oversubscribe --bind-to none -n $NP \
	--mca pml cm --mca mtl mrail -x MRAIL_SDN_CONTROLLER=$ADDR \
	-x MRAIL_SDN_SYNC=1 "$PROG" 3 4096 >"$T/out" 2>"$T/err" </dev/null
RC=$?
[ $RC -eq 0 ] || fail "mpirun exit status $RC"
grep -q "sdn_listing1: $NP processes OK" "$T/out" || fail "no OK line"

pairs() { # PRIM -> the pairs the controller logged for it
	local key
	key=$(grep -oE "pattern [0-9a-f]{16} $1 comm 0:" "$T/ctl.err" | awk '{print $2}')
	[ -n "$key" ] || return
	grep -oE "pattern $key pairs .*" "$T/ctl.err" | awk '{print $4}'
}
expect_pairs() {
	local got
	got=$(pairs "$1")
	[ "$got" = "$2" ] || fail "$1 pairs '$got', expected '$2'"
	echo "$1: $got"
}
case $CASE in
np4)
	# Open MPI's binomial tree, linear reduce, recursive doubling.
	expect_pairs bcast 0-1,0-2,1-3
	expect_pairs reduce 1-0,2-0,3-0
	expect_pairs allreduce 0-1,1-0,2-3,3-2,0-2,1-3,2-0,3-1
	grep -q "coll sdn" "$T/err" && fail "coll sdn warned"
	;;
np3)
	# Not a power of two: rank 0 folds into 1, 1 and 2 exchange, 1 unfolds.
	expect_pairs bcast 0-1,0-2
	expect_pairs reduce 1-0,2-0
	expect_pairs allreduce 0-1,1-2,2-1,1-0
	;;
unreachable)
	n=$(grep -c "coll sdn: SDN controller 127.0.0.1:1: connect: Connection refused; patterns are no longer announced" "$T/err")
	[ "$n" = $NP ] || fail "$n ranks said the controller is unreachable, not $NP"
	echo "unreachable controller: one line per rank, job OK"
	;;
refused)
	n=$(grep -c "coll sdn: SDN controller refused request 1: rank [0-9]: none of its rails' MACs is a host of the topology" "$T/err")
	[ "$n" = $NP ] || fail "$n ranks reported the refused HELLO, not $NP"
	echo "refused HELLO: one line per rank naming the cause, job OK"
	;;
late-hello)
	grep "coll sdn" "$T/err" | sed 's/^/  /'
	n=$(grep -c "coll sdn: .*patterns are no longer announced" "$T/err")
	[ "$n" = 1 ] || fail "$n ranks turned announcing off, not 1 (rank 2)"
	grep -q "coll sdn: SDN controller did not answer request 1 within 5000 ms" "$T/err" ||
		fail "the late rank's line does not name the timeout"
	echo "late HELLO: one line, from the late rank; job OK"
	;;
*) fail "unknown case" ;;
esac
exit 0
