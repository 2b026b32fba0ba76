#!/usr/bin/env bash
# Multirail across real (namespaced) hosts: builds a netlab test bed, runs
# the all-to-all checksum test with ranks on different hosts, and checks
# with the kernel's interface byte counters that every selected rail
# carried traffic and that a rail left out by MRAIL_RAILS carried none.
# Needs root (network namespaces): exits 77 without it.
# The job is launched by mrail-run (--hosts/--wrap) or, with LAUNCHER
# "mpirun:MPIRUN:AGENT", by Open MPI's mpirun through PMIx, its daemons
# started in the namespaces by the rsh agent script. With FAILPROG, a job
# whose rank 1 exits 3 must make the launcher exit 3 too.
#   netlab_alltoall.sh NETLAB LAUNCHER TEST_ALLTOALL HOSTS RATES NP [FAILPROG]
set -uo pipefail
netlab=$1 launcher=$2 alltoall=$3 hosts=$4 rates=$5 np=$6 failprog=${7:-}
[ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; exit 77; }
case $launcher in
mpirun:*)
  IFS=: read -r _ mpirun agent <<<"$launcher"
  [ -x "$mpirun" ] || { echo "no mpirun: skipped"; exit 77; } ;;
*) mrail_run=$launcher mpirun="" ;;
esac
prefix="mt$$"
nrails=$(awk -F, '{print NF}' <<<"$rates")
fail() { echo "FAIL: $*"; exit 1; }

NETLAB_TEST=1 "$netlab" up --hosts "$hosts" --rails "$rates" --prefix "$prefix" \
  --base auto >/tmp/$prefix.up 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat /tmp/$prefix.up; rm -f /tmp/$prefix.up; exit $rc; fi
tmp=$(mktemp -d)
trap '"$netlab" down --prefix "$prefix" >/dev/null 2>&1; rm -rf /tmp/$prefix.up "$tmp"' EXIT
cat /tmp/$prefix.up

# The root namespace's address on the management net hosts the KVS.
h0_mgmt=$("$netlab" addr --prefix "$prefix" h0 mgmt)
root_mgmt="${h0_mgmt%.*}.254"
host_list=$(seq -s, -f "$prefix-h%g" 0 $((hosts - 1)))

# bytes HOST IFACE: rx + tx bytes of an interface inside a host.
bytes() {
  ip netns exec "$prefix-h$1" cat /sys/class/net/$2/statistics/rx_bytes \
     /sys/class/net/$2/statistics/tx_bytes | awk '{s += $1} END {print s}'
}
snapshot() { # -> "h:r=bytes ..."
  local out=""
  for h in $(seq 0 $((hosts - 1))); do
    for r in $(seq 0 $((nrails - 1))); do out+="$h:$r=$(bytes "$h" "r$r") "; done
  done
  echo "$out"
}
delta() { # before after h r
  local b a
  b=$(tr ' ' '\n' <<<"$1" | sed -n "s/^$3:$4=//p")
  a=$(tr ' ' '\n' <<<"$2" | sed -n "s/^$3:$4=//p")
  echo $((a - b))
}

launch() { # rails-list program
  if [ -n "$mpirun" ]; then
    local slots=$(((np + hosts - 1) / hosts)) hl
    hl=$(seq -s, -f "$prefix-h%g:$slots" 0 $((hosts - 1)))
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    TMPDIR=$tmp timeout -k 5 240 "$mpirun" --oversubscribe --bind-to none \
      -n "$np" --host "$hl" --mca plm_rsh_agent "$agent" \
      --mca oob_tcp_if_include "${root_mgmt%.*}.0/24" \
      -x MRAIL_RAILS="$1" -x MRAIL_STRATEGY=iso -x MRAIL_LOG_LEVEL=info \
      -x PMIX_FAIL_DIR="$tmp" "$2" </dev/null
  else
    "$mrail_run" -n "$np" --hosts "$host_list" --wrap 'ip netns exec {host}' \
      --bind "$root_mgmt" --timeout 240 \
      -x MRAIL_RAILS="$1" -x MRAIL_STRATEGY=iso -x MRAIL_LOG_LEVEL=info "$2"
  fi
}

run_job() { # rails-list
  launch "$1" "$alltoall" >"$tmp/out" 2>&1
  local rc=$?
  grep -E "test_alltoall|bootstrap|rail [0-9]+:|error" "$tmp/out" | sort | uniq | head -40
  return $rc
}

all_rails=$(seq -s, -f "r%g" 0 $((nrails - 1)))
before=$(snapshot)
run_job "$all_rails" || fail "all-to-all over $all_rails failed"
after=$(snapshot)
for h in $(seq 0 $((hosts - 1))); do
  for r in $(seq 0 $((nrails - 1))); do
    d=$(delta "$before" "$after" "$h" "$r")
    echo "host $h rail r$r: $d bytes"
    [ "$d" -gt $((1 << 20)) ] || fail "rail r$r of host $h carried only $d bytes"
  done
done

# Leave the last rail out: it must stay silent (a few hundred bytes of
# ARP/neighbour traffic at most).
last=$((nrails - 1))
some_rails=$(seq -s, -f "r%g" 0 $((nrails - 2)))
before=$(snapshot)
run_job "$some_rails" || fail "all-to-all over $some_rails failed"
after=$(snapshot)
for h in $(seq 0 $((hosts - 1))); do
  d=$(delta "$before" "$after" "$h" "$last")
  echo "host $h excluded rail r$last: $d bytes"
  [ "$d" -lt 4096 ] || fail "excluded rail r$last of host $h carried $d bytes"
  d=$(delta "$before" "$after" "$h" 0)
  [ "$d" -gt $((1 << 20)) ] || fail "rail r0 of host $h carried only $d bytes"
done
if [ -n "$failprog" ]; then
  launch "$all_rails" "$failprog" >"$tmp/out" 2>&1
  rc=$?
  [ $rc -eq 3 ] || { cat "$tmp/out"; fail "a rank exited 3, the launcher exited $rc"; }
  echo "failing rank across hosts: launcher exited 3"
fi
echo "multirail across $hosts hosts on $nrails rails: OK"
