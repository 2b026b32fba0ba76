#!/bin/bash
# SDN end to end (docs/sdn-controller.md "Test bed"): a fat-tree of Open
# vSwitch userspace bridges (2 spines, 2 leaves, datapath_type=netdev,
# userspace TSO on, no kernel module), 4 network-namespace hosts, mrail-sdnd attached. An MPI
# job (pml cm, mtl mrail, coll sdn) runs Bcast, Reduce, Allreduce phases;
# the patterns it announces must be installed on the policy's spines
# (bcast: s1, reduce: s2, allreduce: both), and tagged frames of each
# pattern must cross only their spine and arrive with the real MAC back.
# With the bpf tagger (mrail-sdn-tagger) loaded on the hosts' eth0, the
# job's own packets carry their tags: per-tag flow counters on the spines
# show each collective on its spine, port counters sampled over time show
# each phase on its spine, and captures of what the hosts send show every
# collective's bytes under its tag, only between announced pairs, and a
# plain TCP stream untagged.
# usage: sdn_e2e.sh MPIRUN MCA_DIR COLL_DIR SYS_MCA_DIR LISTING1 SRCDIR
#                   TAGGER|none CAPTURE
# Exits 77 without root, ip netns, Open vSwitch or Open MPI.
set -u
MPIRUN=$1 MCA_DIR=$2 COLL_DIR=$3 SYS_MCA_DIR=$4 PROG=$5 SRC=$6 TAGGER=$7 CAPTURE=$8
ITERS=16 BYTES=131072
CTLD=$SRC/mpi-binding/sdn/controller
FRAMES="python3 $SRC/tests/sdn/sdn_frames.py"
skip() { echo "skip: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (namespaces, Open vSwitch)"
for p in ovs-vswitchd ovsdb-server ovsdb-tool ovs-vsctl ovs-ofctl python3 ip; do
	command -v $p >/dev/null || skip "$p not installed"
done
ip netns list >/dev/null 2>&1 || skip "ip netns is not available"
[ -x "$MPIRUN" ] || skip "no mpirun"

T=$(mktemp -d "${TMPDIR:-/tmp}/mrail-sdn-e2e.XXXXXX")
P=sd$(($$ % 10000)) NET=10.202.$(($$ % 250 + 1))
export OVS_RUNDIR=$T OVS_DBDIR=$T OVS_LOGDIR=$T OVS_SYSCONFDIR=$T
VSCTL="ovs-vsctl --db=unix:$T/db.sock --timeout=10"
OF="ovs-ofctl -O OpenFlow13"
HOSTS=(0 1 2 3)
BGPIDS=()
cleanup() {
	for p in "${BGPIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${CTL_PID:-}" ] && kill "$CTL_PID" 2>/dev/null
	for f in vswitchd.pid ovsdb.pid; do
		[ -s "$T/$f" ] && kill "$(cat "$T/$f")" 2>/dev/null
	done
	for i in "${HOSTS[@]}"; do ip netns del "$P-h$i" 2>/dev/null; done
	for l in l1s1 l1s2 l2s1 l2s2 mg; do ip link del "$P$l" 2>/dev/null; done
	sleep 0.2
	umount "$T/bpffs" 2>/dev/null
	[ -n "${SDN_E2E_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	# The first lines name what went wrong first (CI keeps only the end
	# of a long log): head and tail of each.
	for f in ctl.err mpi.out mpi.err; do
		[ -s "$T/$f" ] || continue
		echo "--- $f ($(wc -l <"$T/$f") lines)"
		if [ "$(wc -l <"$T/$f")" -le 40 ]; then
			cat "$T/$f"
		else
			head -20 "$T/$f"; echo "[...]"; tail -20 "$T/$f"
		fi
	done
	exit 1
}

# Open vSwitch of our own in $T: no system daemon, no kernel datapath.
ovsdb-tool create "$T/conf.db" /usr/share/openvswitch/vswitch.ovsschema ||
	skip "cannot create an OVS database"
ovsdb-server --remote="punix:$T/db.sock" --pidfile="$T/ovsdb.pid" --detach \
	--log-file="$T/ovsdb.log" "$T/conf.db" || skip "ovsdb-server does not start"
$VSCTL --no-wait init
# Userspace TSO: veth offloads stay on, the metadata travels with the
# packets (read once, at ovs-vswitchd's start).
$VSCTL --no-wait set Open_vSwitch . other_config:userspace-tso-enable=true
ovs-vswitchd "unix:$T/db.sock" --pidfile="$T/vswitchd.pid" --detach \
	--log-file="$T/vswitchd.log" || skip "ovs-vswitchd does not start"
for b in s1 s2 l1 l2; do
	$VSCTL add-br "$P$b" -- set bridge "$P$b" datapath_type=netdev \
		fail-mode=secure protocols=OpenFlow13 ||
		fail "bridge $b"
done
# port numbers: leaf 1 -> s1, 2 -> s2, 3.. hosts; spine 1 -> l1, 2 -> l2
link() { # NAME BR1 PORT1 BR2 PORT2
	ip link add "$P$1" type veth peer name "$P$1x" &&
		ip link set "$P$1" up && ip link set "$P$1x" up &&
		$VSCTL add-port "$P$2" "$P$1" -- set interface "$P$1" ofport_request=$3 &&
		$VSCTL add-port "$P$4" "$P$1x" -- set interface "$P$1x" ofport_request=$5 ||
		fail "link $1"
}
link l1s1 l1 1 s1 1
link l1s2 l1 2 s2 1
link l2s1 l2 1 s1 2
link l2s2 l2 2 s2 2
topo="$T/topo"
{
	echo "version 1"
	for b in s1 s2; do echo "switch $b spine unix:$T/$P$b.mgmt"; done
	for b in l1 l2; do echo "switch $b leaf unix:$T/$P$b.mgmt"; done
	echo "link l1:1 s1:1"; echo "link l1:2 s2:1"
	echo "link l2:1 s1:2"; echo "link l2:2 s2:2"
} >"$topo"
for i in "${HOSTS[@]}"; do
	leaf=l$((i / 2 + 1)) port=$((i % 2 + 3)) mac=02:00:00:5d:0$((i / 2)):0$i
	ip netns add "$P-h$i" &&
		ip link add "$P-e$i" type veth peer name eth0 netns "$P-h$i" &&
		ip -n "$P-h$i" link set eth0 address $mac &&
		ip -n "$P-h$i" addr add "$NET.$((i + 1))/24" dev eth0 &&
		ip -n "$P-h$i" link set eth0 up && ip -n "$P-h$i" link set lo up &&
		ip link set "$P-e$i" up &&
		$VSCTL add-port "$P$leaf" "$P-e$i" -- set interface "$P-e$i" ofport_request=$port ||
		fail "host $i"
	echo "host h$i $mac $leaf:$port" >>"$topo"
done
# This namespace joins the fabric too (mpirun, the controller) on l2:5.
ip link add "${P}mg" type veth peer name "${P}mgx" &&
	ip link set "${P}mgx" address 02:00:00:5d:ff:fe &&
	ip addr add "$NET.254/24" dev "${P}mgx" && ip link set "${P}mgx" up &&
	ip link set "${P}mg" up &&
	$VSCTL add-port "${P}l2" "${P}mg" -- set interface "${P}mg" ofport_request=5 ||
	fail "management port"
echo "host root 02:00:00:5d:ff:fe l2:5" >>"$topo"
printf 'version 1\nbcast spine s1\nreduce spine s2\nallreduce balanced\n' >"$T/policy"

python3 "$CTLD/mrail-sdnd" --listen "$NET.254:0" --ready-file "$T/port" \
	--topology "$topo" --policy "$T/policy" 2>"$T/ctl.err" &
CTL_PID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || fail "controller did not start"
CTL="$NET.254:$(cat "$T/port")"
# Plain (non-MPI) traffic over the base flows: every host reaches the
# controller, and h0 reaches h3 through a spine.
for i in "${HOSTS[@]}"; do
	ip netns exec "$P-h$i" python3 -c "import socket
socket.create_connection(('$NET.254', $(cat "$T/port")), timeout=5).close()" ||
		{ [ -n "${SDN_E2E_HOLD:-}" ] && sleep "$SDN_E2E_HOLD"; fail "h$i cannot reach the controller"; }
done
[ -n "${SDN_E2E_HOLD:-}" ] && { echo "holding: $T $P"; sleep "$SDN_E2E_HOLD"; }

# The bpf tagger on every host's eth0 (pins in a bpffs of our own, one
# directory per host: interface indexes repeat across namespaces).
TAG=0 MPI_SDN=()
if [ "$TAGGER" != none ] && [ -x "$TAGGER" ] && mkdir -p "$T/bpffs" &&
	mount -t bpf bpf "$T/bpffs" 2>/dev/null; then
	for i in "${HOSTS[@]}"; do
		ip netns exec "$P-h$i" "$TAGGER" load --dir "$T/bpffs/h$i" eth0 >/dev/null ||
			fail "mrail-sdn-tagger load on h$i"
	done
	TAG=1 MPI_SDN=(-x MRAIL_SDN=bpf)
	echo "bpf tagger loaded on h0..h3"
else
	echo "bpf tagger not available: the job's own packets stay untagged, tag checks skipped"
fi
# The launcher agent: netns_rsh_agent.sh with the host's pin directory.
cat >"$T/agent.sh" <<AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do
	case \$1 in
	-x | -t | -T | -tt | -n | -q) shift ;;
	-o | -p | -l | -i) shift 2 ;;
	*) break ;;
	esac
done
h=\${1#$P-}
MRAIL_SDN_BPF_DIR=$T/bpffs/\$h exec $SRC/tests/pmix/netns_rsh_agent.sh "\$@"
AGENT
chmod +x "$T/agent.sh"

# What the hosts send, as it leaves them (the switch side of each veth).
if [ $TAG = 1 ]; then
	for i in "${HOSTS[@]}"; do
		"$CAPTURE" "$P-e$i" >"$T/cap$i" &
		BGPIDS+=($!)
	done
	for i in "${HOSTS[@]}"; do
		for _ in $(seq 50); do grep -q capturing "$T/cap$i" && break; sleep 0.1; done
	done
fi
# The spines' received bytes over time (the paper's measurement module).
spine_bytes() { # SPINE -> rx bytes summed over its ports
	$OF dump-ports "unix:$T/$P$1.mgmt" | grep -o 'rx pkts=[0-9]*, bytes=[0-9]*' |
		sed 's/.*bytes=//' | awk '{s += $1} END {print s + 0}'
}
( while :; do
	echo "$(date +%s.%N) $(spine_bytes s1) $(spine_bytes s2)"
	sleep 0.2
done ) >"$T/samples" &
SAMPLER=$!
BGPIDS+=($SAMPLER)

# The job: one rank per host, its rail eth0, patterns announced in sync.
export TMPDIR=$T OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$MCA_DIR:$COLL_DIR:$SYS_MCA_DIR"
timeout -k 5 60 "$MPIRUN" --bind-to none -n 4 --mca plm_rsh_agent "$T/agent.sh" \
	--host "$P-h0,$P-h1,$P-h2,$P-h3" --mca pml cm --mca mtl mrail \
	--mca oob_tcp_if_include "$NET.0/24" "${MPI_SDN[@]}" \
	-x MRAIL_RAILS=eth0 -x MRAIL_SDN_CONTROLLER="$CTL" -x MRAIL_SDN_SYNC=1 \
	"$PROG" $ITERS $BYTES 700 >"$T/mpi.out" 2>"$T/mpi.err" </dev/null
RC=$?
# The last phase ends just before the job does: samples of the quiet
# second after it bound that phase when a loaded machine sampled too
# slowly to put two inside (sdn_e2e_check.py).
sleep 1
kill $SAMPLER
[ $RC -eq 0 ] || fail "mpirun exit status $RC"
grep -q "sdn_listing1: 4 processes OK" "$T/mpi.out" || fail "no OK line"
grep -q "coll sdn:" "$T/mpi.err" && fail "coll sdn warned"
for r in 0 1 2 3; do
	grep -Eq "rank $r on h$r\$" "$T/ctl.err" || fail "rank $r not on h$r"
done
grep -Eq "pattern .* bcast comm 0: 3 pairs, 3 routed, spines s1$" "$T/ctl.err" ||
	fail "bcast pattern not routed via s1 alone"
grep -Eq "pattern .* reduce comm 0: 3 pairs, 3 routed, spines s2$" "$T/ctl.err" ||
	fail "reduce pattern not routed via s2 alone"
grep -Eq "pattern .* allreduce comm 0: 8 pairs, 8 routed, spines s1,s2$" "$T/ctl.err" ||
	fail "allreduce pattern not spread over both spines"
echo "patterns announced and routed: bcast s1, reduce s2, allreduce s1+s2"

# Per-tag flows on the spines, decoded: which primitive sits where.
prims_on() { # SPINE -> sorted primitive numbers of its tag flows
	$OF dump-flows "unix:$T/$P$1.mgmt" | grep -o 'priority=100,dl_dst=[0-9a-f:]*' |
		sed 's/.*dl_dst=//' | python3 -c "
import sys; sys.path.insert(0, '$CTLD'); import sdntag
print(' '.join(sorted({sdntag.PRIMS[sdntag.decode(sdntag.mac_bytes(l.strip()))[0]] for l in sys.stdin})))"
}
S1=$(prims_on s1) S2=$(prims_on s2)
echo "tag flows: s1: $S1; s2: $S2"
[ "$S1" = "allreduce bcast" ] || fail "s1 carries '$S1'"
[ "$S2" = "allreduce reduce" ] || fail "s2 carries '$S2'"

# The job's own tagged traffic: flows, phases, captures (sdn_e2e_check.py).
if [ $TAG = 1 ]; then
	# Non-MPI traffic between the same hosts: 1 MB of plain TCP h0 -> h3.
	ip netns exec "$P-h3" python3 -c "
import socket; s = socket.create_server(('$NET.4', 5999)); c, _ = s.accept()
while c.recv(65536): pass" &
	SRV=$!
	sleep 0.5
	ip netns exec "$P-h0" python3 -c "
import socket; s = socket.create_connection(('$NET.4', 5999), timeout=10)
s.sendall(bytes(1000000)); s.close()" || fail "plain TCP stream h0 -> h3"
	wait $SRV
	sleep 0.3
	for i in "${HOSTS[@]}"; do kill "${BGPIDS[$i]}"; wait "${BGPIDS[$i]}"; done
	for b in s1 s2; do $OF dump-flows "unix:$T/$P$b.mgmt" >"$T/$b.flows"; done
	python3 "$SRC/tests/sdn/sdn_e2e_check.py" "$T" $ITERS $BYTES "$CTLD" ||
		fail "tagged traffic checks"
	for i in "${HOSTS[@]}"; do
		ip netns exec "$P-h$i" "$TAGGER" unload --dir "$T/bpffs/h$i" eth0 >/dev/null ||
			fail "mrail-sdn-tagger unload on h$i"
	done
fi

# Counters: tagged frames of each phase's cross-leaf pairs (rank i on
# h$i), sent from the sender's namespace; the receiver must get them with
# its own MAC restored; only the policy's spine may count them.
tag() { python3 -c "import sys; sys.path.insert(0, '$CTLD'); import sdntag
print(sdntag.mac_str(sdntag.encode(sdntag.PRIM_OF_NAME['$1'], 0, $2, $3)))"; }
N=600
phase() { # PRIM SRC DST
	local b1 b2 got
	b1=$(spine_bytes s1) b2=$(spine_bytes s2)
	ip netns exec "$P-h$3" $FRAMES recv eth0 $N 10 >"$T/recv" &
	local rp=$!
	sleep 0.3
	ip netns exec "$P-h$2" $FRAMES send eth0 "$(tag "$1" "$2" "$3")" $N
	wait $rp
	got=$(cat "$T/recv")
	D1=$(($(spine_bytes s1) - b1)) D2=$(($(spine_bytes s2) - b2))
	echo "$1 $2->$3: received $got/$N with MAC restored; spine rx bytes s1 +$D1, s2 +$D2"
	# Lost frames (userspace switch on a loaded machine) are allowed;
	# misrouted ones are not.
	[ "$got" -ge $((N / 2)) ] || fail "$1: only $got of $N frames arrived"
}
phase bcast 0 2
[ $D1 -ge $((N * 1000 / 2)) ] && [ $D2 -lt $((N * 1000 / 20)) ] ||
	fail "bcast frames not on s1 alone"
phase reduce 2 0
[ $D2 -ge $((N * 1000 / 2)) ] && [ $D1 -lt $((N * 1000 / 20)) ] ||
	fail "reduce frames not on s2 alone"
grep "^timing" "$T/mpi.out"
echo "sdn e2e: OK"
exit 0
