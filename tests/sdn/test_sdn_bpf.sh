#!/usr/bin/env bash
# tests/sdn: the bpf tagger end to end (docs/sdn.md "bpf backend").
#   test_sdn_bpf.sh NETLAB NETLAB_STREAM MRAIL_RUN TAGGER RUN_PROG CAPTURE
# Two netlab hosts on one unshaped rail (a bridge between them, as an
# ordinary switch that does not restore MACs). mrail-sdn-tagger loaded on
# both rails; a 2-rank job with MRAIL_SDN=bpf sends Bcast, Reduce,
# point-to-point and nonblocking-collective messages, then Bcast/Reduce
# alternating; an AF_PACKET capture on the receiver's rail (before tc
# ingress: the frames as they travelled) must show each class's bytes
# under its own tag (sent <= captured <= sent + 1% + 8 KiB: a mislabeled
# chunk is 64 KiB or more), the tags naming ranks 0 -> 1, and a plain TCP
# stream of 1 MB between the same hosts untagged. Root only (77 otherwise).
set -u -o pipefail

NETLAB=$1 STREAM=$2 MRUN=$3 TAGGER=$4 PROG=$5 CAPTURE=$6
export NETLAB_STREAM=$STREAM NETLAB_TEST=1

[ "$(id -u)" = 0 ] || { echo "skip: needs root (network namespaces, tc BPF)"; exit 77; }
{ command -v ip >/dev/null && ip netns list >/dev/null 2>&1; } ||
	{ echo "skip: ip netns is not available"; exit 77; }
[ "$TAGGER" != none ] && [ -x "$TAGGER" ] ||
	{ echo "skip: mrail-sdn-tagger not built (clang, bpftool, libbpf)"; exit 77; }

P=sdnb$$
T=$(mktemp -d /tmp/sdn-bpf.XXXXXX)
B=$T/bpffs
CP=
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
nl() { bash "$NETLAB" --prefix "$P" "$@"; }
cleanup() {
	[ -n "$CP" ] && kill "$CP" 2>/dev/null
	nl down >/dev/null 2>&1
	umount "$B" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$B"
mount -t bpf bpf "$B" 2>/dev/null || { echo "skip: cannot mount a bpf file system"; exit 77; }
out=$(nl up --hosts 2 --rails none --base auto 2>&1)
rc=$?
echo "$out" | tail -2
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "netlab up: exit $rc"
read -r _ _ mg0 _ < <(nl hosts | awk '$1 == "h0"')
bind=${mg0%.*}.254
addr1=$(nl addr h1 r0)

# Errors name their cause.
err=$(nl exec h0 "$TAGGER" load --dir "$B/x" nosuchif 2>&1) && fail "load nosuchif worked"
grep -q "no interface nosuchif" <<<"$err" || fail "load nosuchif said: $err"
err=$(nl exec h0 "$TAGGER" load --dir "$T/notbpf/x" r0 2>&1) && fail "load outside bpffs worked"
grep -q "not a bpf file system" <<<"$err" || fail "load outside bpffs said: $err"
ok "loader errors: $(head -1 <<<"$err")"

for h in h0 h1; do
	nl exec $h "$TAGGER" load --dir "$B/$P-$h" --group nogroup r0 || fail "load on $h"
	nl exec $h "$TAGGER" status --dir "$B/$P-$h" r0 >/dev/null || fail "$h: not attached"
done
perm=$(stat -c '%A %G' "$B/$P-h0/tags")
[ "$perm" = "-rw-rw---- nogroup" ] || fail "tag map is '$perm', not group-writable by nogroup"
perm=$(stat -c '%A %G' "$B/$P-h0")
[ "$perm" = "drwxr-x--- nogroup" ] || fail "pin directory is '$perm'"
[ "$(stat -c %A "$B/$P-h0/egress")" = "-rw-------" ] || fail "programs not root-only"
ok "loaded on both rails; tag map rw for group nogroup, programs root-only"

# Segments h0 sent again (lost under load): the capture sees them twice.
retrans() { ip netns exec "$P-h0" nstat -saz TcpRetransSegs | awk '/^TcpRetransSegs/ { print $2 }'; }
re0=$(retrans)
ip netns exec "$P-h1" "$CAPTURE" r0 >"$T/cap" &
CP=$!
for _ in $(seq 50); do grep -q capturing "$T/cap" && break; sleep 0.1; done
# The fence's default 2 ms bound is a latency safety valve: on a loaded
# CI machine the kernel may take longer to drain a socket, and bytes past
# the bound leave under the next tag (counted as fence_timeouts). The test
# checks the attribution the fence gives, so it lifts the bound.
timeout 50 "$MRUN" -n 2 --hosts "$P-h0,$P-h1" \
	--wrap "ip netns exec {host} env MRAIL_SDN_BPF_DIR=$B/{host}" --bind "$bind" \
	-x MRAIL_RAILS=r0 -x MRAIL_SDN=bpf -x MRAIL_INBAND_SAMPLING=0 \
	-x MRAIL_SDN_FENCE_US=2000000 "$PROG" >"$T/run" 2>&1 ||
	{ cat "$T/run"; fail "the job failed"; }
cat "$T/run"
ip netns exec "$P-h1" "$STREAM" recv -p 5999 >/dev/null &
sleep 0.3
nl exec h0 "$STREAM" send -a "$addr1" -p 5999 -n 1000000 >/dev/null || fail "plain stream"
wait $!
sleep 0.3
kill "$CP"
wait "$CP"
CP=
cat "$T/cap"

grep -q "^dropped 0$" "$T/cap" || fail "the capture dropped frames: inconclusive"
# At most one MTU of payload per retransmitted segment (veth MTU 1500).
slack=$(( ($(retrans) - re0) * 1500 ))
[ "$slack" = 0 ] || echo "h0 retransmitted $((slack / 1500)) segment(s): up to $slack bytes counted twice"
tagged=0
while read -r _ prim cid sent; do
	line=$(grep "^tcp tag $prim $cid 0 1 " "$T/cap") || fail "no $prim bytes tagged (comm $cid, 0 -> 1)"
	got=$(awk '{ print $10 }' <<<"$line")
	max=$((sent + sent / 100 + 8192 + slack))
	[ "$got" -ge "$sent" ] && [ "$got" -le "$max" ] ||
		fail "$prim: $got bytes under its tag, $sent sent (mislabeled bytes?)"
	tagged=$((tagged + got))
	ok "$prim (comm $cid, 0 -> 1): $got bytes on the wire under its tag, $sent sent"
done < <(grep "^sent " "$T/run")
n=$(grep -c "^tcp tag " "$T/cap")
[ "$n" = 4 ] || fail "$n tag classes captured, 4 expected"
plain=$(awk '/^tcp plain/ { print $6 }' "$T/cap")
[ "$plain" -ge 1000000 ] || fail "the plain stream is not untagged ($plain plain bytes)"
[ $(( (plain - 1000000 - slack) * 100 )) -le "$tagged" ] ||
	fail "$((plain - 1000000)) MPI bytes untagged (>= 1% of $tagged)"
ok "MPI bytes tagged: $tagged; untagged beyond the 1 MB plain stream: $((plain - 1000000))"

st0=$(nl exec h0 "$TAGGER" status --dir "$B/$P-h0" r0)
st1=$(nl exec h1 "$TAGGER" status --dir "$B/$P-h1" r0)
[ "$(awk '/^tagged_bytes/ { print $2 }' <<<"$st0")" -ge "$tagged" ] || fail "h0 counters: $st0"
[ "$(awk '/^restored_packets/ { print $2 }' <<<"$st1")" -gt 0 ] || fail "h1 restored nothing: $st1"
ok "tagger counters: h0 tagged, h1 restored"

for h in h0 h1; do
	nl exec $h "$TAGGER" unload --dir "$B/$P-$h" r0 || fail "unload on $h"
	[ ! -e "$B/$P-$h" ] || fail "$h: pins left after unload"
	[ -z "$(nl exec $h tc filter show dev r0 egress)" ] || fail "$h: egress filter left"
done
ok "unloaded: filters and pins gone"
